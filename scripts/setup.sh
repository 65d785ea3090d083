#!/usr/bin/env bash
# Installs everything pkernels and pkdb need on a fresh Debian machine:
# the system toolchain (g++ with OpenMP, gdb, Python's headers) and the Python packages
# (editable; this builds pkernels.runtime._launch, the one C extension).
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v g++ >/dev/null || missing+=(g++)
command -v gdb >/dev/null || missing+=(gdb)
# Python's headers, for pkernels' one C extension (Debian's python3 keeps them apart).
python3 -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
    || missing+=(python3-dev)
if ((${#missing[@]})); then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
# A Python that its distribution manages (Debian's, Ubuntu's: PEP 668) takes packages from
# a virtual environment only: say how to make one rather than let pip fail.
if python3 -c 'import os, sys, sysconfig
sys.exit(not (sys.prefix == sys.base_prefix and os.path.exists(
    os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))))'; then
    echo "setup.sh: this Python takes packages from a virtual environment only; run" >&2
    echo "  python3 -m venv .venv && . .venv/bin/activate" >&2
    echo "then this script again (Debian and Ubuntu: sudo apt install python3-venv first)." >&2
    exit 1
fi
python3 -m pip install -q -e '.[test]'
