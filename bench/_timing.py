"""Timing helpers for the benchmarks: warm-up, interleaved repeats, medians, tables.

The compiled variants of one kernel are timed in rotation (A, B, C, then B, C, A, ...)
rather than all repeats of A then all of B, so a burst of load from another process on
a small machine lands on every variant alike instead of on one.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any


def time_once(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds one call of ``fn`` takes, and what it returned."""
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def interleaved(
    variants: dict[str, Callable[[], Any]], repeats: int, warmup: int = 1
) -> dict[str, list[float]]:
    """Per-variant call times (seconds): ``warmup`` untimed calls each, then ``repeats``
    timed rounds in which every variant runs once. Round ``r`` starts with variant
    ``r mod k``, so no variant always runs right after the same other one (a thread pool
    still spinning from the previous call slows whoever comes next)."""
    for fn in variants.values():
        for _ in range(warmup):
            fn()
    names = list(variants)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        for k in range(len(names)):
            name = names[(r + k) % len(names)]
            samples[name].append(time_once(variants[name])[0])
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
