"""How a Cuda launch's wait ends: pkernels' wait against a spinning stream
synchronisation and a sleeping blocking-sync event, side by side.

    python bench/bench_cuda_wait.py [--repeats 30]

The same kernel (axpy over 2^27 doubles, about 1 ms; and a one-element kernel, a few
microseconds) is launched through CuPy's RawKernel and waited for three ways, the
variants interleaved round by round:

* ``stream sync``: ``stream.synchronize()`` (spins a core for the whole kernel);
* ``blocking event``: a blocking-sync event's ``synchronize()`` (sleeps; the driver
  wakes the thread when the kernel is done);
* ``pkernels wait``: :func:`pkernels.runtime.cuda_wait.wait_for_stream` (polls, naps
  between polls, and sleeps on the event only for a long kernel).

The ratio column is each wait's median over the stream synchronisation's, round by
round. Needs CuPy and a GPU.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import _timing as tm

AXPY = r"""
extern "C" __global__ void axpy(long long n, double a, const double* x, double* y) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=30, help="timed rounds (default 30)")
    options = parser.parse_args(argv)
    try:
        import cupy as cp
        import numpy as np

        cp.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - no CuPy, no driver, no GPU: say so
        print(f"bench_cuda_wait needs CuPy and a GPU: {exc}")
        return 0
    from pkernels.runtime.cuda_wait import wait_for_stream

    kernel = cp.RawKernel(AXPY, "axpy")
    stream = cp.cuda.get_current_stream()
    event = cp.cuda.Event(block=True, disable_timing=True)
    rows = []
    for label, n in (("axpy 2^27 (about 1 ms)", 1 << 27), ("one element", 1)):
        x, y = cp.ones(n), cp.ones(n)
        grid, args = (max(1, (n + 255) // 256),), (np.int64(n), 2.0, x, y)

        def launch(grid: Any = grid, args: Any = args) -> None:
            kernel(grid, (256,), args)

        def stream_sync(launch: Any = launch) -> None:
            launch()
            stream.synchronize()

        def blocking_event(launch: Any = launch) -> None:
            launch()
            event.record()
            event.synchronize()

        def pkernels_wait(launch: Any = launch) -> None:
            launch()
            wait_for_stream(cp)

        variants = {"stream sync": stream_sync, "blocking event": blocking_event,
                    "pkernels wait": pkernels_wait}  # fmt: skip
        samples = tm.interleaved(variants, options.repeats, warmup=3)
        reference = samples["stream sync"]
        for name, times in samples.items():
            ratio = tm.median([t / r for t, r in zip(times, reference, strict=True)])
            rows.append([label, name, tm.fmt_seconds(tm.median(times)),
                         tm.fmt_seconds(min(times)), f"{ratio:.3f}x"])  # fmt: skip
    tm.print_table(
        f"Waiting for a launch ({options.repeats} rounds, median and best; ratio: per-round "
        "median over the stream synchronisation)",
        ["kernel", "wait", "median", "best", "vs stream sync"],
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
