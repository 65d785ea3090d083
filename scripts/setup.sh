#!/usr/bin/env bash
# Installs everything pkernels and pkdb need on a fresh Debian machine:
# the system toolchain (g++ with OpenMP, gdb) and the Python packages (editable).
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v g++ >/dev/null || missing+=(g++)
command -v gdb >/dev/null || missing+=(gdb)
if ((${#missing[@]})); then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
python3 -m pip install -q -e '.[test]'
