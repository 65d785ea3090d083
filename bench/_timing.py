"""Timing helpers for the benchmarks: warm-up, interleaved rounds, medians, paired ratios,
tables.

The compiled variants of one kernel are timed in rounds, every variant once per round,
rather than all repeats of A then all of B, so a burst of load from another process on
a small machine lands on every variant alike instead of on one. The order within a round
changes from round to round (a balanced Latin square): each variant goes first, second,
... equally often and follows each other variant equally often. Because the samples of
one round were taken within a few ms of each other, a comparison of two variants is made
round by round (:func:`paired`): the per-round ratio cancels the slow drift of the
machine's speed that a ratio of two medians keeps.
"""

from __future__ import annotations

import os
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

#: The OpenMP loops of every session in a debugger-overhead comparison. A release build
#: with wide-vector loops times its 256- and 512-bit loops in its first launches and
#: keeps the faster (pkernels.runtime.width_tuning); where the two are close, which one
#: wins changes from session to session, so a pdb session and a pkdb session could run
#: different code and their ratio would measure the choice, not the debugger (seen on a
#: 2-core machine: bench/README.md, "Issue 25's per-dispatch cost: two causes found").
#: $PKERNELS_VECTOR_WIDTH, when set, is used as it is.
SESSION_VECTOR_WIDTH = "256"


def same_loops_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` with the vector width of every session fixed (see SESSION_VECTOR_WIDTH)."""
    env.setdefault("PKERNELS_VECTOR_WIDTH", SESSION_VECTOR_WIDTH)
    return env


def loops_note(env: dict[str, str]) -> str:
    """A line for a table's header: which OpenMP loops the sessions ran."""
    width = env.get("PKERNELS_VECTOR_WIDTH", "auto")
    if width == "auto":
        return "OpenMP loops: each session times and picks its own vector width"
    return f"OpenMP loops: {width}-bit vectors in every session ($PKERNELS_VECTOR_WIDTH={width})"


def time_once(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds one call of ``fn`` takes, and what it returned."""
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def balanced_orders(k: int) -> list[list[int]]:
    """Orders of ``k`` variants for successive rounds (a Williams design): over one cycle
    of the returned orders every variant runs in every position equally often, and right
    after every other variant equally often (``k`` orders for even ``k``, ``2k`` for odd).
    A plain rotation (A B C D, B C D A, ...) would leave each variant almost always right
    after the same other one, whose thread pool may still be spinning."""
    if k <= 1:
        return [list(range(k))]
    first = [0]
    low, high = 1, k - 1
    while len(first) < k:
        first.append(low)
        low += 1
        if len(first) < k:
            first.append(high)
            high -= 1
    orders = [[(v + r) % k for v in first] for r in range(k)]
    if k % 2:
        orders += [order[::-1] for order in orders]
    return orders


def interleaved(
    variants: dict[str, Callable[[], Any]], repeats: int, warmup: int = 1
) -> dict[str, list[float]]:
    """Per-variant call times (seconds): ``warmup`` untimed calls each, then ``repeats``
    timed rounds in which every variant runs once, in the order :func:`balanced_orders`
    gives for that round. ``samples[name][r]`` is the time of round ``r``, so two
    variants' lists can be compared round by round (:func:`paired`)."""
    for fn in variants.values():
        for _ in range(warmup):
            fn()
    names = list(variants)
    orders = balanced_orders(len(names))
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        for k in orders[r % len(orders)]:
            samples[names[k]].append(time_once(variants[names[k]])[0])
    return samples


def settle(seconds: float = 0.3) -> None:
    """Sleep long enough for spinning thread pools (OpenBLAS spins ~0.1 s after a call,
    libgomp a few ms) to park, so they do not steal cores from the next measurement."""
    time.sleep(seconds)


def per_call(fn: Callable[[], Any], calls: int, repeats: int) -> list[float]:
    """Seconds per call of ``fn``: ``repeats`` batches of ``calls`` back-to-back calls
    (after one warm-up batch), each batch's total divided by ``calls``."""
    for _ in range(calls):
        fn()
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - start) / calls)
    return out


def after_sweep(fn: Callable[[], Any], repeats: int, megabytes: int = 64) -> list[float]:
    """Seconds of single calls of ``fn``, each right after copying ``megabytes`` of memory
    (which evicts the caches, as a kernel streaming large arrays does)."""
    import numpy as np

    src = np.ones(megabytes * 2**20 // 8)
    dst = np.empty_like(src)
    fn()
    out = []
    for _ in range(repeats):
        np.copyto(dst, src)
        out.append(time_once(fn)[0])
    return out


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def spread(values: Sequence[float]) -> float:
    """Relative spread of the samples: (max - min) / median."""
    m = statistics.median(values)
    return (max(values) - min(values)) / m if m else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values``, linear between order statistics."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def bootstrap_median_interval(
    values: Sequence[float], level: float = 0.90, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile-bootstrap interval of the median of ``values``: the median of
    ``resamples`` resamples (drawn with replacement, fixed seed: same data, same
    interval), and the central ``level`` share of those medians."""
    rng = random.Random(seed)
    n = len(values)
    medians = sorted(statistics.median(rng.choices(values, k=n)) for _ in range(resamples))
    tail = 100 * (1 - level) / 2
    return percentile(medians, tail), percentile(medians, 100 - tail)


@dataclass
class Paired:
    """How much faster ``timed`` ran than ``reference``, judged round by round."""

    median: float  # median over rounds of reference[r] / timed[r]
    low: float  # 90% bootstrap interval of that median
    high: float
    q25: float  # quartiles of the per-round ratios themselves
    q75: float
    faster: float  # share of rounds in which ``timed`` was faster
    rounds: int


def paired(reference: Sequence[float], timed: Sequence[float]) -> Paired:
    """Speed of ``timed`` relative to ``reference`` (above 1: faster) from per-round
    ratios ``reference[r] / timed[r]`` of samples taken in the same round
    (:func:`interleaved`): their median, a 90% bootstrap interval of that median, their
    quartiles, and the share of rounds ``timed`` won."""
    if len(reference) != len(timed) or not reference:
        raise ValueError("paired samples need the same, non-zero number of rounds")
    ratios = [ref / t for ref, t in zip(reference, timed, strict=True)]
    low, high = bootstrap_median_interval(ratios)
    return Paired(
        statistics.median(ratios),
        low,
        high,
        percentile(ratios, 25),
        percentile(ratios, 75),
        sum(r > 1.0 for r in ratios) / len(ratios),
        len(ratios),
    )


def fmt_seconds(seconds: float) -> str:
    """A duration with a unit that keeps three significant digits readable."""
    if seconds >= 1.0:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.2f} µs"


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A plain-text table: left-aligned first columns, right-aligned numbers."""
    widths = [len(h) for h in header]
    for row in rows:
        for k, cell in enumerate(row):
            widths[k] = max(widths[k], len(cell))

    def line(cells: Sequence[str]) -> str:
        parts = []
        for k, cell in enumerate(cells):
            numeric = cell[:1].isdigit() or cell[:1] in "-+<>~"
            parts.append(cell.rjust(widths[k]) if numeric and k > 1 else cell.ljust(widths[k]))
        return " | ".join(parts).rstrip()

    print()
    print(title)
    print(line(header))
    print("-+-".join("-" * w for w in widths))
    for row in rows:
        print(line(row))


class OutsideLoad:
    """How busy the CPUs were with other processes while a block ran (Linux only).

    Busy time of the whole machine from /proc/stat, minus this process's own CPU time
    (and its children's), divided by wall time x cores: 0.0 = nobody else ran, 1.0 =
    others kept every core busy. ``None`` where /proc/stat is unavailable.
    """

    def __init__(self) -> None:
        self._start = self._sample()

    @staticmethod
    def _sample() -> tuple[float, float, float] | None:
        try:
            with open("/proc/stat") as f:
                fields = [int(v) for v in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        hz = os.sysconf("SC_CLK_TCK")
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        busy = (sum(fields[:8]) - idle) / hz  # up to steal; guest time is inside user
        t = os.times()
        own = t.user + t.system + t.children_user + t.children_system
        return busy, own, time.monotonic()

    def fraction(self) -> float | None:
        end = self._sample()
        if self._start is None or end is None:
            return None
        busy = end[0] - self._start[0]
        own = end[1] - self._start[1]
        wall = end[2] - self._start[2]
        cores = os.cpu_count() or 1
        if wall <= 0:
            return None
        return min(1.0, max(0.0, (busy - own) / (wall * cores)))
