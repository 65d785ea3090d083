"""PyKokkos' random number pools, ``pk.Random_XorShift64_Pool(seed, num_states)`` and
``pk.Random_XorShift1024_Pool``, and the draws kernels make from them (``pk.rand(T)``).

A workunit with a pool in reach (a workload's field, or a keyword argument) draws with
``pk.rand(pk.double)``. Kokkos hands each thread a generator state from the pool, so which
numbers an index gets depends on which thread ran it. Here the numbers are counter-based
(splitmix64, as ``pk.rand(seed, counter)``) and reproducible: each launch takes a key
from the pool's seed and its launch number (so a second launch draws new numbers, as
Kokkos' states advance), each workunit call a stream from the key and its index (a
team's league and team rank), and each ``pk.rand(T)`` call site its n-th number from that
stream. The same program draws the same numbers in every space (OpenMP at any thread
count, Serial, Cuda, Debug); ``num_states`` changes nothing (no state is shared between
threads), and the bits are not Kokkos' xorshift stream. The C++ twin of this module is
in ``include/pkernels/shared/arithmetic.hpp`` (``rand_stream``, ``pool_<type>``).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

_MASK64 = (1 << 64) - 1


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def rand_bits(seed: int, counter: int) -> int:
    """64 random bits for (seed, counter): ``pk.rand(seed, counter)``'s, and the pools'."""
    return _splitmix64(_splitmix64(int(seed) & _MASK64) ^ (int(counter) & _MASK64))


class RandomPool:
    """A pool of ``num_states`` generator states seeded with ``seed`` (see the module
    docstring: kernels draw reproducible numbers from it, whatever ``num_states``)."""

    def __init__(self, seed: int, num_states: int) -> None:
        self.seed = int(seed)
        self.num_states = int(num_states)
        self.launches = 0  # how many launches have drawn from it
        self._lock = threading.Lock()  # launches from several threads (pkdb's parallel_launch)

    def launch_key(self) -> int:
        """The key of a new launch drawing from this pool (a uint64): each launch gets
        its own, in the order the launches come."""
        with self._lock:
            number = self.launches
            self.launches = number + 1
        return rand_bits(self.seed, number)

    def __getstate__(self) -> dict[str, Any]:  # copies and pickles: no lock in them
        return {name: value for name, value in vars(self).items() if name != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(seed={self.seed}, num_states={self.num_states})"


class Random_XorShift64_Pool(RandomPool):  # noqa: N801 - Kokkos' name
    """Kokkos' pool of 64-bit xorshift generators (here: counter-based draws)."""


class Random_XorShift1024_Pool(RandomPool):  # noqa: N801 - Kokkos' name
    """Kokkos' pool of 1024-bit xorshift generators (here: counter-based draws)."""


# How 64 random bits become a number of each type (as pool_<type> in C++): floats in
# [0, 1), signed integers in [0, the type's max], unsigned integers any value.
_FROM_BITS: dict[str, Any] = {
    "float64": lambda b: (b >> 11) * 2.0**-53,
    "float32": lambda b: (b >> 40) * 2.0**-24,
    **{f"int{n}": (lambda s: lambda b: b >> s)(65 - n) for n in (8, 16, 32, 64)},
    **{f"uint{n}": (lambda s: lambda b: b >> s)(64 - n) for n in (8, 16, 32, 64)},
}
#: The element types ``pk.rand(T)`` draws, by name.
DRAWN_TYPES = tuple(_FROM_BITS)


class PoolDraws:
    """The draws of one workunit call in the Debug space: the stream of the launch key
    ``key`` and the call's indices, and a counter per call site (what the compiled
    kernel keeps in its ``pk_rand_*`` locals)."""

    def __init__(self, key: int, *indices: Any) -> None:
        stream = int(key)
        for index in indices:
            stream = rand_bits(stream, int(index))
        self.stream = stream
        self.counts: dict[int, int] = {}

    def draw(self, site: int, dtype: str) -> Any:
        """The next number of call site ``site``, of the type named ``dtype``."""
        n = self.counts.get(site, 0)
        self.counts[site] = n + 1
        bits = rand_bits((self.stream + site) & _MASK64, n)
        return np.dtype(dtype).type(_FROM_BITS[dtype](bits))
