#!/usr/bin/env bash
# The tests that need an NVIDIA GPU (CuPy; pkdb's GPU sessions also cuda-gdb), on a machine
# that has one, then with --bench the GPU benchmark (bench/bench_gpu.py). CI has no GPU:
# there these tests skip, so run this wherever GPU code changed. Where CuPy finds no GPU it
# stops with exit status 2 instead of skipping every test and passing. Other arguments go
# to pytest (with pytest-xdist, `-n 8` runs the sessions side by side).
#   bash scripts/gpu-tests.sh [--bench] [PYTEST ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
bench=0
if [ "${1:-}" = "--bench" ]; then
    bench=1
    shift
fi
python3 - <<'PY' || exit 2
import sys

try:
    import cupy

    count = cupy.cuda.runtime.getDeviceCount()
except Exception as exc:  # no CuPy, no driver, no GPU: the reason
    sys.exit(f"gpu-tests.sh: nothing to run on: {exc}")
if count < 1:
    sys.exit("gpu-tests.sh: nothing to run on: CuPy finds no GPU")
PY
if ! command -v cuda-gdb >/dev/null; then
    echo "gpu-tests.sh: cuda-gdb is not on the PATH: pkdb's GPU sessions will skip" >&2
fi
# -rs: each skipped test with its reason (a GPU test that skips here is worth a look).
python3 -m pytest -q -rs -p no:cacheprovider "$@" \
    tests/pkernels/test_cuda*.py tests/pkernels/test_lane_split.py \
    tests/pkernels/test_view_layout.py tests/pkernels/test_host_arrays.py \
    tests/pkernels/test_pykokkos_programs.py tests/examples/test_examples_run.py \
    tests/pkdb/test_gpu_*.py
if [ "$bench" = 1 ]; then
    python3 bench/bench_gpu.py
fi
