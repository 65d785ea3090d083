"""``pk.Timer``: wall-clock timing of host code, as PyKokkos (and ``Kokkos::Timer``) has it."""

from __future__ import annotations

import time


class Timer:
    """Starts when created. ``seconds()``: the seconds since then (or since ``reset()``).

    Every dispatch has finished when it returns (GPU launches synchronise their stream),
    so ``timer.seconds()`` after a ``parallel_for`` includes the whole kernel.
    """

    def __init__(self) -> None:
        self._start = time.perf_counter()

    def seconds(self) -> float:
        """The seconds elapsed since the timer was created or last reset."""
        return time.perf_counter() - self._start

    def reset(self) -> None:
        """Start counting again from now."""
        self._start = time.perf_counter()
