"""A Cuda range or box kernel's launch state (its block size by occupancy, its shared
loop's entry), a reduce's scratch, and what the GPU it runs on holds, read once."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ..translate.emit_cuda import BLOCK, ENTRY_SPLIT
from .cuda_arguments import ConstantArguments


class RangeState:
    """A range or box kernel's launch state, made at its first launch: its block size
    (by occupancy), its split entry, and its reduce scratch (:attr:`reduce`)."""

    def __init__(self, cp: Any, function: Any, fixed: bool = False) -> None:
        self.threads_limit = min(BLOCK, int(function.max_threads_per_block))
        # A debug build keeps the largest block, so an index's block and thread are the
        # same whatever registers -G takes (pkdb users read them).
        sizes = [self.threads_limit] if fixed else None
        self.threads, self.blocks_per_multiprocessor = occupancy(
            cp, function, self.threads_limit, sizes
        )
        self.reduce = ReduceScratch()
        self._split: tuple[Any, int] | None = None

    def split_entry(self, module: Any) -> tuple[Any, int]:
        """The module's ENTRY_SPLIT and the most threads its blocks may have (for the
        registers it needs), looked up once."""
        if self._split is None:
            function = module.get_function(ENTRY_SPLIT)
            self._split = (function, int(function.max_threads_per_block))
        return self._split


class ReduceScratch:
    """A range or box reduce's scratch: in device memory the ticket and a slot per
    block, and the result in pinned host memory, allocated once and grown when a launch
    has more blocks. The ticket is zero when allocated and every launch leaves it zero,
    so no launch clears anything. One launch at a time uses it (:attr:`lock`; the C
    launcher has one of its own)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._addresses: ConstantArguments | None = None
        self._buffer: Any = None
        self._pinned: Any = None  # keeps the result's pinned memory allocated
        self._pinned_bytes = 0

    def places(self, cp: Any, blocks: int, itemsize: int) -> tuple[tuple[int, int, int], Any]:
        """The addresses a reduce over ``blocks`` blocks of ``itemsize``-byte partials
        passes its kernel, in the kernel's order (the partials, the ticket, the result),
        and the result's ``itemsize`` bytes of host memory (a NumPy uint8 array)."""
        ticket, partials = self._scratch(cp, blocks, itemsize)
        result = self._result(cp, itemsize)
        return (partials, ticket, int(result.ctypes.data)), result

    def pointers(self, cp: Any, places: tuple[int, int, int]) -> tuple[Any, ...]:
        """``places`` as launch arguments (kept while they stay where they are)."""
        if self._addresses is None or self._addresses.values != places:
            self._addresses = ConstantArguments(cp, places)
        return self._addresses.pointers

    def _scratch(self, cp: Any, blocks: int, itemsize: int) -> tuple[int, int]:
        """Device addresses of the ticket and ``blocks`` partials of ``itemsize`` bytes
        (the ticket first, at a fixed place, so that it stays zero)."""
        slot = round_up(itemsize, 16)
        needed = 16 + blocks * slot
        if self._buffer is None or self._buffer.nbytes < needed:
            size = max(needed, 2 * self._buffer.nbytes if self._buffer is not None else 0)
            self._buffer = cp.zeros(size, dtype=np.uint8)
        base = int(self._buffer.data.ptr)
        return base, base + 16

    def _result(self, cp: Any, itemsize: int) -> np.ndarray:
        """``itemsize`` bytes of pinned host memory for a reduce's total, which the last
        block writes there itself (with unified addressing, which every GPU CUDA 13 runs
        has, a pinned host address is also the device's): the host reads it after the
        wait, with no copy from device memory (a synchronous copy of a few bytes cost
        some 10 us of every reduce)."""
        if self._pinned is None or self._pinned_bytes < itemsize:
            self._pinned_bytes = round_up(itemsize, 16)
            self._pinned = cp.cuda.alloc_pinned_memory(self._pinned_bytes)
        return np.frombuffer(self._pinned, dtype=np.uint8, count=itemsize)


def occupancy(
    cp: Any, function: Any, limit: int, sizes: list[int] | None = None
) -> tuple[int, int]:
    """(threads per block, blocks per multiprocessor) of a range or box kernel: the block
    size of ``sizes`` (256, 128, 64 or 32 threads, at most ``limit``) that keeps the most
    threads resident per multiprocessor (the larger on a tie), by the driver's occupancy
    calculator; the first size, and 2048 threads' worth of blocks, when it cannot
    answer."""
    if sizes is None:
        sizes = [size for size in (256, 128, 64, 32) if size <= limit] or [32]
    try:
        handle = function.kernel.ptr if hasattr(function, "kernel") else function.ptr
        resident = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor
        best = (0, sizes[0], 1)
        for size in sizes:
            blocks = int(resident(handle, size, 0))
            if blocks * size > best[0]:
                best = (blocks * size, size, blocks)
        return best[1], max(1, best[2])
    except Exception:  # noqa: BLE001 - no occupancy calculator: the usual shape
        return sizes[0], 2048 // sizes[0]


def round_up(n: int, step: int) -> int:
    """``n`` rounded up to a multiple of ``step``."""
    return -(-n // step) * step


_device_attributes: dict[tuple[int, str], int] = {}


def device_attribute(cp: Any, name: str) -> int:
    """The current GPU's attribute ``name`` (CUDA's, as CuPy names it), read once."""
    device = cp.cuda.Device()
    value = _device_attributes.get((device.id, name))
    if value is None:
        value = _device_attributes[(device.id, name)] = int(device.attributes[name])
    return value


def multiprocessors(cp: Any) -> int:
    """How many multiprocessors this GPU has."""
    return device_attribute(cp, "MultiProcessorCount")


def resident_threads(cp: Any) -> int:
    """The most threads one multiprocessor of this GPU holds at once."""
    return device_attribute(cp, "MaxThreadsPerMultiProcessor")
