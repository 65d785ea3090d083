"""What the two bit-exactness fixes of issue 22 cost, each timed against the code it
replaced in alternating rounds of one process (the per-round ratio cancels what other
processes do to the machine):

* the FMA guard (``pkernels.translate.fma_guard``): bench_kernels' LJ kernel, which
  subtracts and multiplies, compiled with the guard (no FMA or AVX-512 instructions)
  and without it;
* Python's ``x ** 2``: the C library's ``pow`` (``pk_rt::pow_py``, what kernels run now)
  against ``x * x`` (what g++ made of ``pow(x, 2.0)`` before), over 4M doubles.

    python bench/bench_exact_math.py [--rounds N] [--threads T]

Ratio > 1: the fixed code is slower by that factor.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def paired(first: Callable[[], object], second: Callable[[], object], rounds: int) -> str:
    """Median and quartiles of time(first) / time(second), alternating which runs first."""
    for _ in range(10):
        first(), second()
    ratios, a_times, b_times = [], [], []
    for r in range(rounds):
        times = {}
        for name, fn in (("a", first), ("b", second)) if r % 2 else (("b", second), ("a", first)):
            start = time.perf_counter()
            fn()
            times[name] = time.perf_counter() - start
        ratios.append(times["a"] / times["b"])
        a_times.append(times["a"])
        b_times.append(times["b"])
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    return (
        f"{statistics.median(ratios):.3f} (quartiles {q1:.3f}-{q3:.3f}; medians "
        f"{statistics.median(a_times) * 1e3:.3f} ms / {statistics.median(b_times) * 1e3:.3f} ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)

    import _workloads as w
    import numpy as np
    from _exact_math_kernels import power, product

    import pkernels as pk
    from pkernels.translate import fma_guard

    # The LJ kernel with and without the guard: a second workunit of the same code,
    # translated while the guard is switched off.
    lj = w.LennardJones(32768)
    guarded = w.lj_force
    plain = pk.workunit(types.FunctionType(guarded.__code__, guarded.__globals__, "lj_plain"))
    out_a, out_b = np.zeros((lj.n, 3)), np.zeros((lj.n, 3))
    kw_a, kw_b = lj.dispatch_kwargs(out_a), lj.dispatch_kwargs(out_b)
    policy = pk.RangePolicy(pk.OpenMP, 0, lj.n)
    pk.parallel_for(policy, guarded, **kw_a)
    may_fuse = fma_guard.may_fuse
    fma_guard.may_fuse = lambda functions: False
    try:
        pk.parallel_for(policy, plain, **kw_b)
    finally:
        fma_guard.may_fuse = may_fuse
    assert np.array_equal(out_a, out_b), "the guard changed the LJ forces"
    print(
        "LJ with the FMA guard / without:",
        paired(
            lambda: pk.parallel_for(policy, guarded, **kw_a),
            lambda: pk.parallel_for(policy, plain, **kw_b),
            args.rounds,
        ),
    )

    # x ** 2 through pow against x * x.
    x = np.random.default_rng(1).uniform(-1e3, 1e3, 1 << 22)
    y = np.zeros_like(x)
    n = len(x)
    square_policy = pk.RangePolicy(pk.OpenMP, 0, n)
    print(
        "x ** 2 (pow) / x * x:",
        paired(
            lambda: pk.parallel_for(square_policy, power, x=x, y=y),
            lambda: pk.parallel_for(square_policy, product, x=x, y=y),
            args.rounds,
        ),
    )


if __name__ == "__main__":
    main()
