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
python3 -m pip install -q -e '.[test]'
