"""How a ``Cuda`` range or MDRange launch maps its indices to blocks and threads.

Pure Python (no CuPy): the launcher (:mod:`pkernels.runtime.cuda_launch`) sizes its grids
here, and debuggers (pkdb's ``thread j=77``) find the thread of an index with the same
functions, from the dictionary :meth:`CudaKernel.geometry` returns.

* A range ``[begin, end)``: a 1-D grid of 1-D blocks; index ``i`` runs in global thread
  ``(i - begin) % (blocks * threads)`` (one index per thread when the grid covers the
  range, which it does for a ``parallel_for`` up to 2^31 - 1 blocks; a reduce has fewer
  blocks, a few per multiprocessor, and each thread takes every ``blocks * threads``-th
  index).
* An MDRange box of rank 2 to 4: the innermost (last) index runs along x
  (``threadIdx.x``, then ``blockIdx.x``), the one before it along y, and the outer ones,
  flattened row-major, along z. Along each axis the offset ``o`` from the box's begin
  runs in block ``(o % (grid * block)) // block`` and thread ``o % block`` (grid-stride
  loops, when the grid is smaller than the box, give one thread several offsets). The
  block shape is the policy's ``tiling`` when given (its last entry along x, the one
  before along y, the product of the others along z), else the block's threads spread
  over x (at most 64 wide while the other axes can fill the block: rows that share
  neighbours in a block share their loads), then y, then z, in powers of two no larger
  than the box.

Grids keep to CUDA's limits (2^31 - 1 blocks along x, 65535 along y and z). A launch
computes its offsets from the begins in 32-bit arithmetic (``LaunchShape.index32``) when
every offset and stride step fits in an int32, the indices themselves in 64 bits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MAX_GRID_X = 2**31 - 1
MAX_GRID_YZ = 65535
MAX_BLOCK_Z = 64
TILE_X = 64  # a box's block width when its other axes can fill the block (box_block)
INT32_MAX = 2**31 - 1

Dim3 = tuple[int, int, int]


@dataclass(frozen=True)
class LaunchShape:
    """The grid and block of a launch, whether its indices fit 32-bit arithmetic, and
    whether its grid covers the range or box (one index per thread: no stride loop)."""

    grid: Dim3
    block: Dim3
    index32: bool
    covers: bool = False

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads(self) -> int:
        """Threads per block."""
        return self.block[0] * self.block[1] * self.block[2]

    def as_geometry(self) -> dict[str, Any]:
        """The entries :meth:`CudaKernel.geometry` reports for this shape."""
        return {"blocks": self.blocks, "threads": self.threads, "grid": list(self.grid),
                "block": list(self.block)}  # fmt: skip


def range_shape(begin: int, end: int, threads: int, max_blocks: int | None = None) -> LaunchShape:
    """The shape of a launch over ``[begin, end)`` with ``threads`` per block: one index
    per thread, at most ``max_blocks`` blocks (a reduce's budget) and CUDA's limit."""
    count = max(0, end - begin)
    limit = MAX_GRID_X if max_blocks is None else max(1, min(max_blocks, MAX_GRID_X))
    blocks = max(1, min(-(-count // threads), limit))
    span = blocks * threads
    return LaunchShape(
        (blocks, 1, 1), (threads, 1, 1), _offsets32(count, span, max_blocks), span >= count
    )


def _offsets32(count: int, span: int, max_blocks: int | None) -> bool:
    """Whether a launch's offsets along an axis of ``count`` indices, a grid ``span``
    threads wide, fit an int32: the threads' first offsets (below ``span``) and, where
    they loop (a reduce's budgeted grid, ``max_blocks``, or a grid short of the count),
    every stride step (below ``count + span``)."""
    loops = max_blocks is not None or span < count
    return (count + span if loops else span) <= INT32_MAX


def spread_threads(count: int, threads: int, multiprocessors: int, least: int = 64) -> int:
    """Threads per block for a range of ``count`` indices: ``threads``, halved (down to
    ``least``) while the launch would leave multiprocessors without a block, so that a
    short range (a row per thread over 8192 rows) runs on the whole GPU."""
    while threads > least and -(-count // threads) < multiprocessors:
        threads //= 2
    return threads


def box_block(counts: Sequence[int], threads: int, tiling: Sequence[int] | None) -> Dim3:
    """The block shape of a box with ``counts`` indices per dimension: ``tiling`` (see the
    module docstring), else ``threads`` spread over x, y, z."""
    if tiling is not None:
        return (tiling[-1], tiling[-2], math.prod(tiling[:-2]))
    inner, after = counts[-1], counts[-2]
    outer = math.prod(counts[:-2])
    x = min(threads, _power_of_two_at_least(inner))
    # A block several rows tall shares its rows' neighbours in L1 (a stencil's j +- 1),
    # where one a whole row wide reads them from L2: at most TILE_X wide while the other
    # axes have the rows to fill it, as hand-written stencils tile.
    x = max(min(x, TILE_X), threads // _power_of_two_at_least(after * outer))
    y = min(threads // x, _power_of_two_at_least(after))
    z = min(threads // (x * y), _power_of_two_at_least(outer), MAX_BLOCK_Z)
    return (x, y, z if len(counts) > 2 else 1)


def box_shape(
    begins: Sequence[int],
    ends: Sequence[int],
    threads: int,
    tiling: Sequence[int] | None = None,
    max_blocks: int | None = None,
) -> LaunchShape:
    """The shape of a launch over the box ``begins``..``ends`` (ranks 2 to 4; see the
    module docstring), at most ``max_blocks`` blocks when given (fewer along z first,
    then y, then x)."""
    counts = [max(0, e - b) for b, e in zip(begins, ends, strict=True)]
    block = box_block(counts, threads, tiling)
    extents = _axis_counts(counts)
    grid = [
        min(max(1, -(-n // b)), limit)
        for n, b, limit in zip(extents, block, (MAX_GRID_X, MAX_GRID_YZ, MAX_GRID_YZ), strict=True)
    ]
    if max_blocks is not None:
        budget = max(1, max_blocks)
        for axis in (2, 1, 0):
            others = math.prod(grid) // grid[axis]
            grid[axis] = max(1, min(grid[axis], budget // others))
    index32 = all(
        _offsets32(n, g * b, max_blocks) for n, g, b in zip(extents, grid, block, strict=True)
    )
    covers = all(g * b >= n for n, g, b in zip(extents, grid, block, strict=True))
    return LaunchShape((grid[0], grid[1], grid[2]), block, index32, covers)


def _axis_counts(counts: Sequence[int]) -> Dim3:
    """The offsets a box has along x (its last dimension), y (the one before) and z (the
    outer ones, flattened)."""
    return (counts[-1], counts[-2], math.prod(counts[:-2]))


def _power_of_two_at_least(n: int) -> int:
    size = 1
    while size < n:
        size *= 2
    return size


# ---------------------------------------------------------------- debuggers' side


def _dims(geometry: Mapping[str, Any]) -> tuple[Dim3, Dim3]:
    """(grid, block) of a geometry dictionary (1-D when it does not say)."""
    grid = geometry.get("grid") or [int(geometry.get("blocks", 1)) or 1, 1, 1]
    block = geometry.get("block") or [int(geometry.get("threads", 1)) or 1, 1, 1]
    g = tuple(max(1, int(v)) for v in grid)
    b = tuple(max(1, int(v)) for v in block)
    return (g[0], g[1], g[2]), (b[0], b[1], b[2])


def thread_number(geometry: Mapping[str, Any], block: Sequence[int], thread: Sequence[int]) -> int:
    """The number of a thread across the grid: its block's linear number (x fastest)
    times the threads per block, plus its linear number in the block (x fastest)."""
    grid, shape = _dims(geometry)
    linear_block = block[0] + grid[0] * (block[1] + grid[1] * block[2])
    linear_thread = thread[0] + shape[0] * (thread[1] + shape[1] * thread[2])
    return linear_block * math.prod(shape) + linear_thread


def thread_of_number(geometry: Mapping[str, Any], number: int) -> tuple[Dim3, Dim3]:
    """The (block, thread) of :func:`thread_number` ``number``."""
    grid, shape = _dims(geometry)
    linear_block, linear_thread = divmod(number, math.prod(shape))
    return _unflatten(linear_block, grid), _unflatten(linear_thread, shape)


def _unflatten(n: int, dims: Dim3) -> Dim3:
    x, rest = n % dims[0], n // dims[0]
    return (x, rest % dims[1], rest // dims[1])


def thread_of_box_index(geometry: Mapping[str, Any], index: Sequence[int]) -> tuple[Dim3, Dim3]:
    """The (block, thread) that runs ``index`` of a range (``kind`` "range") or an
    MDRange box (``kind`` "box"); a ValueError when it is outside the launch."""
    begins, ends = geometry.get("begins", [0]), geometry.get("ends", [0])
    if len(index) != len(begins):
        raise ValueError(f"this kernel has {len(begins)} index variable(s)")
    offsets = []
    for value, begin, end in zip(index, begins, ends, strict=True):
        if not begin <= value < end:
            raise ValueError(f"index {value} is outside the launch's range {begin}..{end}")
        offsets.append(value - begin)
    grid, shape = _dims(geometry)
    if geometry.get("kind") == "range" or len(offsets) == 1:
        along: Dim3 = (offsets[0], 0, 0)
    else:
        counts = [end - begin for begin, end in zip(begins, ends, strict=True)]
        outer = 0
        for offset, count in zip(offsets[:-2], counts[:-2], strict=True):
            outer = outer * count + offset  # row-major, as the kernel flattens them
        along = (offsets[-1], offsets[-2], outer)
    blocks, threads = [], []
    for offset, g, b in zip(along, grid, shape, strict=True):
        position = offset % (g * b)
        blocks.append(position // b)
        threads.append(position % b)
    return (blocks[0], blocks[1], blocks[2]), (threads[0], threads[1], threads[2])
