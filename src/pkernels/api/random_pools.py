"""PyKokkos' random number pools, ``pk.Random_XorShift64_Pool(seed, num_states)`` and
``pk.Random_XorShift1024_Pool``: made and kept (a workload's field), for programs that
build them. Kernels do not draw from them (``pk.rand(T)`` is refused at translation,
naming the counter-based ``pk.rand(seed, i)`` to use instead)."""

from __future__ import annotations


class RandomPool:
    """A pool of ``num_states`` generator states seeded with ``seed``."""

    def __init__(self, seed: int, num_states: int) -> None:
        self.seed = int(seed)
        self.num_states = int(num_states)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(seed={self.seed}, num_states={self.num_states})"


class Random_XorShift64_Pool(RandomPool):  # noqa: N801 - Kokkos' name
    """Kokkos' pool of 64-bit xorshift generators."""


class Random_XorShift1024_Pool(RandomPool):  # noqa: N801 - Kokkos' name
    """Kokkos' pool of 1024-bit xorshift generators."""
