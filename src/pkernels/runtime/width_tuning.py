"""Choosing between a kernel's 256-bit and 512-bit release loops by timing both.

A release build of a parallel_for that stores into views inside its loops holds its
launch loops twice on AVX-512 machines: as g++ tunes them (256-bit vectors) and compiled
to prefer 512-bit vectors (``emit_launch.has_wide_variant``). Which is faster depends on the
arrays' sizes against the caches, so the first launches on the OpenMP space alternate
between the two and time them, and the kernel keeps the faster from then on. Both give
the same bits; only the time differs.

``$PKERNELS_VECTOR_WIDTH`` overrides the choice: ``256`` always runs the plain loops,
``512`` the wide ones, ``auto`` (the default) times them.
"""

from __future__ import annotations

import os
import statistics

#: Timed blocks before choosing: each launches the two variants twice, in the order
#: plain, wide, wide, plain, so that each goes first as often (a launch that follows other
#: work finds colder caches than one that follows a launch).
BLOCKS = 5
#: The wide loops are kept only when they take at least this much less time per block
#: (median over the blocks) and win at least ``BLOCKS - 1`` of them: a launch's time moves
#: by a few per cent from one to the next, and a wrong choice of the wide loops costs
#: more (up to 30 % on a reduction-like loop) than a missed one gains.
MIN_GAIN = 1.03
#: Launches shorter than this keep the plain loops after one block: a difference of a
#: few per cent there is below the timer's and the dispatch's noise.
SHORT_LAUNCH = 50e-6
_ORDER = (0, 1, 1, 0)  # PLAIN, WIDE, WIDE, PLAIN

PLAIN, WIDE = 0, 1
_CHOICES = {"256": PLAIN, "512": WIDE}


def forced_width() -> int | None:
    """PLAIN or WIDE when ``$PKERNELS_VECTOR_WIDTH`` fixes the choice, None to time them."""
    value = os.environ.get("PKERNELS_VECTOR_WIDTH", "auto").strip().lower()
    if value in ("", "auto"):
        return None
    if value not in _CHOICES:
        raise ValueError(f"PKERNELS_VECTOR_WIDTH must be 256, 512 or auto, not {value!r}")
    return _CHOICES[value]


class WidthTuner:
    """The timing of one kernel's first launches: :meth:`next_variant` says which loops
    to run, :meth:`record` takes how long they took and, once it can, the choice."""

    def __init__(self) -> None:
        self._launches = 0
        self._times: tuple[list[float], list[float]] = ([], [])

    def next_variant(self) -> int:
        """PLAIN or WIDE, in blocks of plain, wide, wide, plain (after one untimed launch
        of each, which touches the arrays' pages and warms the caches)."""
        n = self._launches
        return n if n < 2 else _ORDER[(n - 2) % 4]

    def record(self, variant: int, seconds: float) -> int | None:
        """Note that ``variant`` took ``seconds``; return the choice once made."""
        self._launches += 1
        if self._launches <= 2:
            return None
        self._times[variant].append(seconds)
        if (self._launches - 2) % 4:
            return None
        plain, wide = self._times
        if statistics.median(plain) < SHORT_LAUNCH:
            return PLAIN
        ratios = [
            (plain[k] + plain[k + 1]) / (wide[k] + wide[k + 1]) for k in range(0, len(plain), 2)
        ]
        if len(ratios) < BLOCKS:
            return None
        wins = sum(r > 1.0 for r in ratios)
        if statistics.median(ratios) >= MIN_GAIN and wins >= BLOCKS - 1:
            return WIDE
        return PLAIN
