"""Where a pk.Cuda call's time goes on the host, warm and after another library's call.

    python bench/bench_cuda_dispatch.py [--repeats 30] [--quick]

bench_gpu.py's Lennard-Jones case (262144 atoms; ``--quick``: 4096): its pk.Cuda call as
users make it (the C launcher, ``pkernels.runtime.cuda_fast``), the same call the Python
way (the C launchers switched off around it: what pk.Cuda did before them) and the hand
kernel's (CuPy's ``RawKernel``), each timed right after one call of: itself (warm), the
hand kernel (pk's calls) or pk's (the hand call), CuPy's expression of the same forces
(12 ms of einsum and gathers on the full size: the host work of a typical CuPy line),
and a 2 ms sleep. For the Python way the phases: Python before the launch (dispatch,
signature, marshalling), CuPy's launch call, the wait; for all, the whole call; for the
Python way and the hand call, the GPU time between events recorded before and after the
launch (which includes the launch's own latency). Medians of ``--repeats`` samples.

bench_gpu.py interleaves its variants, so half of each variant's calls follow CuPy's: a
host path that is slow with cold caches shows there, not in a warm loop. This table
says how much of a pk.Cuda row's gap is the kernel and how much the host side.

To time the phases it wraps ``pkernels.runtime.cuda_launch._launch_shaped`` (the Python
way's launch call and wait) for the run; nothing else is changed. Needs CuPy and an NVIDIA GPU;
without them it prints one line and exits 0.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import _timing as tm
from bench_gpu import CUPY, HAND, PK, run_on_gpu

PREDECESSORS = ("itself", "the other", "CuPy", "a 2 ms sleep")
PYTHON_WAY = "pk.Cuda, Python way"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="samples per row (median)")
    parser.add_argument("--quick", action="store_true", help="4096 atoms")
    return run_on_gpu("bench_cuda_dispatch.py", run, parser.parse_args())


def run(args: argparse.Namespace) -> int:
    import _gpu_kernels as g
    import cupy as cp
    import numpy as np
    from bench_gpu import lj_case

    import pkernels as pk
    import pkernels.runtime.cuda_fast as cuda_fast
    import pkernels.runtime.cuda_launch as cuda_launch

    sms = int(cp.cuda.Device().attributes["MultiProcessorCount"])
    start, end = cp.cuda.Event(), cp.cuda.Event()
    hand_kernel = cp.RawKernel(g.CUDA_SOURCE, "lj_force", options=g.HAND_OPTIONS)

    def hand_launch(grid: Any, block: Any, kernel_args: tuple) -> None:
        start.record()
        hand_kernel(grid, block, kernel_args)
        end.record()

    phase: dict[str, float] = {}
    shaped = cuda_launch._launch_shaped

    def timed_launch(cp_: Any, function: Any, shape: Any, launch_args: tuple, prints=False):
        phase["launch"] = time.perf_counter()
        start.record()
        function.kernel(shape.grid, shape.block, launch_args)
        end.record()
        phase["launched"] = time.perf_counter()
        cuda_launch.wait_for_stream(cp_, prints)

    case = lj_case(cp, np, pk, g, {"lj_force": hand_launch}, sms, args.quick)
    calls = dict(case.calls)

    def python_way() -> None:
        cuda_fast.set_enabled(False)
        try:
            calls[PK]()
        finally:
            cuda_fast.set_enabled(True)

    calls[PYTHON_WAY] = python_way
    for call in calls.values():  # compile, load, first launches
        call()
        call()
    cuda_launch._launch_shaped = timed_launch
    try:
        rows = [
            measure(variant, before, calls, phase, start, end, args.repeats)
            for variant in (PK, PYTHON_WAY, HAND)
            for before in PREDECESSORS
        ]
    finally:
        cuda_launch._launch_shaped = shaped
    header = ["call", "after", "before launch us", "launch call us", "wait us", "total us",
              "GPU us"]  # fmt: skip
    tm.print_table(
        f"{case.name}: a call's phases (medians of {args.repeats}; GPU: events around the launch)",
        header,
        rows,
    )
    totals = {(row[0], row[1]): float(row[5]) for row in rows}
    ratios = [
        [before, f"{totals[PK, before] / totals[HAND, before]:.2f}x",
         f"{totals[PYTHON_WAY, before] / totals[HAND, before]:.2f}x",
         f"{totals[PYTHON_WAY, before] / totals[PK, before]:.2f}x"]
        for before in PREDECESSORS
    ]  # fmt: skip
    tm.print_table(
        "whole call against the hand call's (lower is better), measured above",
        ["after", "pk.Cuda / hand", "Python way / hand", "Python way / pk.Cuda"],
        ratios,
    )
    return 0


def measure(
    variant: str,
    before: str,
    calls: dict[str, Any],
    phase: dict[str, float],
    start: Any,
    end: Any,
    repeats: int,
) -> list[str]:
    """One row: ``variant``'s call after one call of ``before``'s, ``repeats`` times."""
    import cupy as cp

    other = PK if variant == HAND else HAND
    previous = {"itself": calls[variant], "the other": calls[other], "CuPy": calls[CUPY],
                "a 2 ms sleep": lambda: time.sleep(0.002)}[before]  # fmt: skip
    samples: list[tuple[float, ...]] = []
    nan = float("nan")
    for _ in range(repeats):
        previous()
        phase.clear()
        began = time.perf_counter()
        calls[variant]()
        ended = time.perf_counter()
        if variant == PK:  # the C launcher: no phases, no events around its launch
            samples.append((nan, nan, nan, ended - began, nan))
            continue
        end.synchronize()
        gpu = cp.cuda.get_elapsed_time(start, end) * 1e-3
        if variant == PYTHON_WAY:
            samples.append((phase["launch"] - began, phase["launched"] - phase["launch"],
                            ended - phase["launched"], ended - began, gpu))  # fmt: skip
        else:
            samples.append((nan,) * 3 + (ended - began, gpu))
    medians = [statistics.median(column) * 1e6 for column in zip(*samples, strict=True)]
    cells = ["-" if m != m else f"{m:.1f}" for m in medians]  # NaN: not measured
    return [variant, before, *cells]


if __name__ == "__main__":
    raise SystemExit(main())
