"""The host C++ compiler and the flags of each build."""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass

from ..errors import CompileError

# -ffp-contract=off: no fused multiply-adds, so every operation rounds as Python (and the
# Debug space, and the -O0 debug build) rounds it: a*b + c gives the same bits everywhere.
# -g1: line tables only (no cost at run time, none measurable at compile time), so a
# debugger attached to a crashed release build names the Python line.
# -fwrapv: int64 arithmetic wraps, as NumPy's does and as the -O0 debug build computes it;
# without it g++ takes signed overflow as impossible and folds `x + 1 > x` to true, so a
# release build and the debug build pkdb runs would disagree (no measurable cost here).
# -funroll-loops with at most 4 copies: several vectors per loop iteration, as LLVM
# (Numba) does; g++ alone does one (bench_kernels: the stencil 0.92 -> 0.98x Numba with 2
# copies, 1.00-1.01x with 4; LJ 1.00 -> 1.03x; yAx unchanged); g++'s default 8 gained
# less on the stencil.
RELEASE_FLAGS = (
    "-O3", "-march=native", "-fno-math-errno", "-ffp-contract=off", "-fopenmp", "-g1",
    "-fwrapv", "-funroll-loops", "--param=max-unroll-times=4",
)  # fmt: skip
DEBUG_FLAGS = ("-O0", "-g3", "-fno-omit-frame-pointer", "-fopenmp", "-fwrapv", "-DPK_DEBUG=1")
COMMON_FLAGS = ("-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden", "-w")


@dataclass(frozen=True)
class Toolchain:
    """A C++ compiler: its path and the version text that goes into cache keys."""

    path: str
    version: str

    def flags(self, debug: bool) -> tuple[str, ...]:
        return (DEBUG_FLAGS if debug else RELEASE_FLAGS) + COMMON_FLAGS


@functools.cache
def host_toolchain() -> Toolchain:
    """The compiler named by ``$PKERNELS_CXX`` or ``$CXX``, else ``g++`` on the PATH."""
    name = os.environ.get("PKERNELS_CXX") or os.environ.get("CXX") or "g++"
    path = shutil.which(name)
    if path is None:
        raise CompileError(
            f"C++ compiler {name!r} not found: install g++ (Debian: apt-get install g++) "
            "or set PKERNELS_CXX"
        )
    version = subprocess.run(
        [path, "--version"], capture_output=True, text=True, check=False
    ).stdout.split("\n", 1)[0]
    return Toolchain(path, version)


@functools.cache
def host_cpu() -> str:
    """What ``-march=native`` depends on: the machine, the CPU model and its features."""
    model, features = "", ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and not model:
                    model = value.strip()
                elif key in ("flags", "Features") and not features:
                    features = " ".join(sorted(value.split()))
                if model and features:
                    break
    except OSError:
        pass
    return f"{platform.machine()}|{model}|{features}"
