"""How long the CUDA compiler's front end takes over each kernel pkernels generates.

    python bench/bench_cuda_compile.py [--repeats 3] [--nvrtc]

For bench_gpu.py's kernels (and a kernel that prints, and a team kernel with a barrier),
each in its release, checked and debug (``-G``) build: the generated CUDA source
compiled to PTX by ``nvcc -ptx`` with the options pkernels gives NVRTC (``--fmad=false``
...), best of ``--repeats``; beside it the same compile of an empty kernel that
includes the same runtime headers, and the kernel's own share (the difference). NVRTC
runs the same front end (cicc) in process, without nvcc's driver and its start-up, so
the own share is the figure to hold against issue 21's target of 0.3 s per release
compile; ``--nvrtc`` (CuPy and a GPU: the H200 machine) times NVRTC itself beside it.

Needs nvcc on the PATH; no GPU. It catches what made NVRTC slow before: the runtime's
message and float-printing code inlined at every call (a print of five complex numbers
took 27 s, a team kernel 4.7 s).
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _timing as tm

HERE = Path(__file__).resolve().parent
TARGET_S = 0.3  # issue 21: NVRTC release compile per kernel
_PROGRAMS = itertools.count()  # each NVRTC compile's own name (see nvrtc_seconds)


def sources() -> dict[str, str]:
    """name -> the generated CUDA module of each kernel (one source for every build: the
    builds differ in their compile options)."""
    import numpy as np
    from _gpu_kernels import axpy, dot, lj_force, noop, row_plus_reverse, stencil7_box, yAx

    import pkernels as pk
    from pkernels.runtime.marshal import argument_type
    from pkernels.translate.emit_cuda import emit_cuda_module
    from pkernels.translate.kernel import TEAM, lower_workunit

    @pk.workunit
    def show(i, z, x):
        print(i, x[i], z[i], f"{x[i]:.3e}")

    v, m = np.zeros(8), np.zeros((8, 8))
    cases: dict[str, tuple[Any, str, int, dict[str, Any]]] = {
        "axpy (for)": (axpy, "for", 1, {"y": v, "x": v, "a": 1.0}),
        "dot (reduce)": (dot, "reduce", 1, {"x": v, "y": v}),
        "yAx (reduce, a loop)": (
            yAx,
            "reduce",
            1,
            {"cols": 8, "y_view": v, "x_view": v, "A_view": m},
        ),
        "stencil7 (3D box)": (
            stencil7_box,
            "for",
            3,
            {"c0": 1.0, "c1": 1.0, "u": np.zeros((4, 4, 4)), "out": np.zeros((4, 4, 4))},
        ),
        "Lennard-Jones (for)": (
            lj_force,
            "for",
            1,
            {
                "cutsq": 1.0,
                "x": np.zeros((8, 3)),
                "neigh": np.zeros((8, 4), np.int64),
                "counts": np.zeros(8, np.int64),
                "f": np.zeros((8, 3)),
            },
        ),
        "team with a barrier": (row_plus_reverse, "for", TEAM, {"out": m, "A": m, "m": 8}),
        "1-element (for)": (noop, "for", 1, {"out": v}),
        "print (complex, float)": (show, "for", 1, {"z": v.astype(np.complex128), "x": v}),
    }
    out: dict[str, str] = {}
    for name, (workunit, operation, rank, kwargs) in cases.items():
        types = {k: argument_type(k, a) for k, a in kwargs.items()}
        function, helpers = lower_workunit(workunit, operation, types, rank)
        index = function.params[0].type if rank != TEAM else pk.int64
        out[name] = emit_cuda_module(function, helpers, operation, index, rank).source
    return out


EMPTY = '#include "pkernels/cuda.hpp"\nextern "C" __global__ void pk_empty(int* x) { x[0] = 1; }\n'


def nvcc_seconds(nvcc: str, source: str, build: str, work: Path, repeats: int) -> float:
    """Best time of ``nvcc -ptx`` over ``source`` with pkernels' options for ``build``."""
    from pkernels.build.runtime import include_option
    from pkernels.runtime.cuda_compile import BUILD_OPTIONS, NVCC_OPTIONS

    stand_in = work / "nvrtc_builtins.h"  # NVRTC declares printf itself
    stand_in.write_text("#include <cstdio>\n")
    cu = work / "kernel.cu"
    cu.write_text(source)
    argv = [nvcc, *NVCC_OPTIONS, *BUILD_OPTIONS[build], "-arch=sm_90", include_option(),
            "--pre-include", str(stand_in), "-ptx", "-x", "cu", str(cu),
            "-o", str(work / "kernel.ptx")]  # fmt: skip
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"nvcc failed on a {build} build:\n{done.stderr[-2000:]}")
        best = min(best, elapsed)
    return best


def nvrtc_seconds(source: str, build: str, repeats: int) -> float:
    """Best time of NVRTC compiling ``source``, each time a program of its own: NVRTC 13
    answers a program it compiled before in this process from a cache (25-35 ms against
    345-360 for yAx's on the H100 machine), a comment added to the source included, so
    each compile declares a variable of another name."""
    from cupy.cuda import nvrtc

    from pkernels.build.runtime import include_option
    from pkernels.runtime.cuda_compile import BUILD_OPTIONS, OPTIONS

    options = [*OPTIONS, *BUILD_OPTIONS[build], include_option(), "--gpu-architecture=sm_90"]
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        unique = f"__device__ int pk_bench_compile_{next(_PROGRAMS)};"
        program = nvrtc.createProgram(f"{source}\n{unique}\n", "kernel.cu", [], [])
        try:
            nvrtc.compileProgram(program, options)
        finally:
            nvrtc.destroyProgram(program)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="compiles of each (best)")
    parser.add_argument("--nvrtc", action="store_true", help="also time NVRTC (CuPy, a GPU)")
    options = parser.parse_args()
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        print("nvcc is not on the PATH: nothing to measure", file=sys.stderr)
        return 1
    os.environ.setdefault("PKERNELS_CACHE_DIR", tempfile.mkdtemp(prefix="cuda-compile-"))
    sys.path.insert(0, str(HERE.parent / "src"))
    builds = ("release", "checked", "debug")
    work = Path(tempfile.mkdtemp(prefix="cuda-compile-"))
    baseline = {b: nvcc_seconds(nvcc, EMPTY, b, work, options.repeats) for b in builds}
    header = ["kernel", "build", "nvcc -ptx", "empty kernel", "own", "own / empty"]
    if options.nvrtc:
        header.append("NVRTC")
    rows, misses = [], []
    for name, source in sources().items():
        for build in builds:
            seconds = nvcc_seconds(nvcc, source, build, work, options.repeats)
            own = max(0.0, seconds - baseline[build])
            row = [name, build, f"{seconds:.2f} s", f"{baseline[build]:.2f} s",
                   f"{own:.2f} s", f"{seconds / baseline[build]:.2f}x"]  # fmt: skip
            if options.nvrtc:
                row.append(f"{nvrtc_seconds(source, build, options.repeats):.2f} s")
            rows.append(row)
            if build == "release" and own > TARGET_S:
                misses.append(f"{name}: {own:.2f} s")
    tm.print_table(
        f"CUDA front-end compile, best of {options.repeats} (nvcc -ptx, sm_90, pkernels' options)",
        header,
        rows,
    )
    print("  own: nvcc's time over the kernel minus over an empty kernel with the same headers")
    verdict = "PASS" if not misses else "MISS " + "; ".join(misses)
    print(f"  target: a release build's own share <= {TARGET_S} s (NVRTC: bench_gpu.py): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
