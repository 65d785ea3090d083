"""Kokkos' BinSort for host code: ``pk.BinOp1D``, ``pk.BinOp3D`` and ``pk.BinSort``.

A bin sort groups the indices of keys by bin (cells of a 1D or 3D grid) without moving
the keys: ``create_permute_vector()`` computes how many keys fall in each bin
(``get_bin_count()``), where each bin starts (``get_bin_offsets()``, their exclusive
prefix sum) and the indices in bin order (``get_permute_vector()``); ``sort(values)``
then reorders any array by that permutation along its first axis. Molecular-dynamics
codes (ExaMiniMD) bin atoms into cells this way and read the three arrays in kernels.

The bins are Kokkos' (``Kokkos_BinOpsPublicAPI.hpp``), computed with NumPy (CuPy for
GPU arrays), so host code runs them anywhere, not only in a ``@pk.main``:

* ``BinOp1D(keys, max_bins, min, max)``: ``max_bins + 1`` bins, key ``k`` in bin
  ``int(max_bins / (max - min) * (k - min))`` (``int`` truncates toward zero), so ``max``
  itself is in the last bin; integer keys spanning at most ``max_bins`` values get one
  bin per value.
* ``BinOp3D(keys, [nx, ny, nz], [min x, y, z], [max x, y, z])``: keys of shape (n, 3),
  ``nx * ny * nz`` bins numbered ``(bx * ny + by) * nz + bz`` with ``bx`` computed as in
  1D from column 0 (and ``max`` itself outside the grid, as in Kokkos).

Within a bin, keys keep their index order (one of the orders Kokkos' parallel binning
may give), or with ``sort_within_bins=True`` follow Kokkos' comparison: ascending keys in
1D, descending by (x, y, z) in 3D. A key outside the bins (Kokkos writes past its arrays)
raises a ValueError that names it. The permutation and offsets are int64 (Kokkos uses
the unsigned ``size_t``, which would turn index arithmetic in kernels into floats) and
the counts int32, as in Kokkos.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .host_arrays import array_module, as_view
from .views import unwrap


class BinOp:
    """How keys map to bins; use :class:`BinOp1D` or :class:`BinOp3D`."""

    dimensions = 0

    def __init__(self, keys: Any, max_bins: Any, min_value: Any, max_value: Any) -> None:
        self.keys = keys
        self.max_bins = max_bins
        self.min_value = min_value
        self.max_value = max_value

    def bin_count(self) -> int:
        """The number of bins (Kokkos' ``max_bins()``)."""
        raise NotImplementedError

    def bins(self, keys: Any) -> Any:
        """The bin of each key (row of ``keys``), as int64; a ValueError for a key
        outside the bins."""
        raise NotImplementedError

    def within_bin_order(self, keys: Any) -> list[Any]:
        """Sort keys for ``lexsort`` giving Kokkos' order inside a bin, last one first."""
        raise NotImplementedError


class BinOp1D(BinOp):
    """``pk.BinOp1D(keys, max_bins, min_value, max_value)``: ``max_bins + 1`` equal bins
    over ``[min_value, max_value]`` for a rank-1 view of keys (Kokkos' ``BinOp1D``)."""

    dimensions = 1

    def __init__(self, keys: Any, max_bins: int, min_value: float, max_value: float) -> None:
        super().__init__(keys, max_bins, min_value, max_value)
        self._bins = _positive_int(max_bins, "BinOp1D max_bins")
        integral = np.dtype(keys.dtype).kind in "iub"
        if integral:  # Kokkos takes the bounds as the key type: 0.5 -> 0, as C converts
            min_value, max_value = int(min_value), int(max_value)
        self._min = float(min_value)
        span = float(max_value) - float(min_value)
        # Kokkos: integer keys spanning no more values than bins get one bin per value.
        self._scale = 1.0 if integral and span <= self._bins else _scale(self._bins, span)

    def bin_count(self) -> int:
        return self._bins + 1

    def bins(self, keys: Any) -> Any:
        if keys.ndim != 1:
            raise ValueError(f"BinOp1D bins a rank-1 view of keys; these have shape {keys.shape}")
        bins = _truncated(self._scale * (keys.astype(np.float64) - self._min))
        _check_in_range(bins, self.bin_count(), keys, self)
        return bins

    def within_bin_order(self, keys: Any) -> list[Any]:
        return [_ranks(keys)]  # ascending keys: Kokkos' keys(i1) < keys(i2)

    def __repr__(self) -> str:
        return f"BinOp1D(max_bins={self.max_bins}, min={self.min_value}, max={self.max_value})"


class BinOp3D(BinOp):
    """``pk.BinOp3D(keys, [nx, ny, nz], [xmin, ymin, zmin], [xmax, ymax, zmax])``: a grid
    of ``nx * ny * nz`` bins for keys of shape (n, 3), such as positions (Kokkos'
    ``BinOp3D``)."""

    dimensions = 3

    def __init__(
        self,
        keys: Any,
        max_bins: Sequence[int],
        min_value: Sequence[float],
        max_value: Sequence[float],
    ) -> None:
        super().__init__(keys, max_bins, min_value, max_value)
        self._bins = [_positive_int(n, "BinOp3D max_bins") for n in _three(max_bins, "max_bins")]
        lows = [float(v) for v in _three(min_value, "min_value")]
        highs = [float(v) for v in _three(max_value, "max_value")]
        self._min = lows
        self._scale = [
            _scale(n, hi - lo) for n, lo, hi in zip(self._bins, lows, highs, strict=True)
        ]

    def bin_count(self) -> int:
        nx, ny, nz = self._bins
        return nx * ny * nz

    def bins(self, keys: Any) -> Any:
        if keys.ndim != 2 or keys.shape[1] < 3:
            raise ValueError(f"BinOp3D bins keys of shape (n, 3); these have shape {keys.shape}")
        flat = None
        for axis in range(3):
            column = keys[:, axis].astype(np.float64)
            cell = _truncated(self._scale[axis] * (column - self._min[axis]))
            # Kokkos flattens without checking, so a cell past one axis' grid would land in
            # a neighbouring bin: each axis is checked on its own.
            _check_in_range(cell, self._bins[axis], keys, self, axis)
            flat = cell if flat is None else flat * self._bins[axis] + cell
        return flat

    def within_bin_order(self, keys: Any) -> list[Any]:
        # Kokkos' comparison puts larger (x, then y, then z) first: ranks, negated.
        return [-_ranks(keys[:, axis]) for axis in (2, 1, 0)]

    def __repr__(self) -> str:
        return f"BinOp3D(max_bins={self.max_bins}, min={self.min_value}, max={self.max_value})"


class BinSort:
    """``pk.BinSort(keys, bin_op, sort_within_bins=False)`` (or Kokkos' form
    ``BinSort(keys, range_begin, range_end, bin_op, sort_within_bins=False)``, which bins
    ``keys[range_begin:range_end]``): call ``create_permute_vector()``, then read
    ``get_permute_vector()``, ``get_bin_offsets()``, ``get_bin_count()``, or reorder
    arrays with ``sort(values)``."""

    def __init__(self, keys: Any, *args: Any, sort_within_bins: bool = False) -> None:
        if len(args) in (1, 2) and isinstance(args[0], BinOp):
            bin_op, rest = args[0], args[1:]
            begin, end = 0, len(keys)
        elif len(args) in (3, 4) and isinstance(args[2], BinOp):
            begin, end, bin_op, rest = int(args[0]), int(args[1]), args[2], args[3:]
        else:
            raise TypeError(
                "BinSort takes (keys, bin_op, sort_within_bins=False) or "
                "(keys, range_begin, range_end, bin_op, sort_within_bins=False)"
            )
        if rest:
            sort_within_bins = bool(rest[0])
        if not 0 <= begin <= end <= len(keys):
            raise ValueError(f"BinSort range [{begin}, {end}) is not within the {len(keys)} keys")
        self.keys = keys
        self.bin_op = bin_op
        self.range_begin, self.range_end = begin, end
        self.sort_within_bins = sort_within_bins
        self._permute: Any = None
        self._offsets: Any = None
        self._count: Any = None

    def create_permute_vector(self) -> None:
        """Bin the keys: compute the permutation, the bin offsets and the bin counts
        (call again after the keys change)."""
        xp = array_module(self.keys)
        keys = unwrap(self.keys)[self.range_begin : self.range_end]
        bins = self.bin_op.bins(keys)
        count = xp.bincount(bins, minlength=self.bin_op.bin_count()).astype(np.int32)
        offsets = xp.zeros(count.shape, dtype=np.int64)
        offsets[1:] = xp.cumsum(count[:-1], dtype=np.int64)
        if self.sort_within_bins and len(keys):
            order = xp.lexsort(xp.stack([*self.bin_op.within_bin_order(keys), bins]))
        else:
            order = xp.argsort(bins, kind="stable")
        self._permute = as_view(order.astype(np.int64) + self.range_begin)
        self._offsets, self._count = as_view(offsets), as_view(count)

    def sort(
        self, values: Any, values_range_begin: int = 0, values_range_end: int | None = None
    ) -> None:
        """Reorder ``values`` in place along its first axis by the permutation: row
        ``range_begin + i`` becomes the old row ``values_range_begin - range_begin +
        permute[i]`` (Kokkos' ``sort``; by default the first ``range_end - range_begin``
        rows)."""
        permute = unwrap(self._created("sort"))
        values = unwrap(values)  # a pk.View: its array, reordered in place
        length = self.range_end - self.range_begin
        if values_range_end is None:
            values_range_end = values_range_begin + length
        if values_range_end - values_range_begin != length:
            raise ValueError(
                f"BinSort.sort: the values range [{values_range_begin}, {values_range_end}) "
                f"has {values_range_end - values_range_begin} rows, the keys {length}"
            )
        if len(values) == 0:
            return
        source = permute + (values_range_begin - self.range_begin)
        if length and (int(source.min()) < 0 or int(source.max()) >= len(values)):
            raise ValueError(
                f"BinSort.sort: values has {len(values)} rows, too few for the "
                f"permutation of keys {self.range_begin}..{self.range_end - 1}"
            )
        target = slice(self.range_begin, self.range_begin + length)
        if self.range_begin + length > len(values):
            raise ValueError(
                f"BinSort.sort: values has {len(values)} rows; the sort writes rows "
                f"{target.start}..{target.stop - 1}"
            )
        values[target] = values[source]  # the gather copies before anything is written

    def get_permute_vector(self) -> Any:
        """The key indices in bin order (int64)."""
        return self._created("get_permute_vector")

    def get_bin_offsets(self) -> Any:
        """Where each bin starts in the permutation (int64)."""
        self._created("get_bin_offsets")
        return self._offsets

    def get_bin_count(self) -> Any:
        """How many keys each bin holds (int32)."""
        self._created("get_bin_count")
        return self._count

    def _created(self, method: str) -> Any:
        if self._permute is None:
            raise RuntimeError(f"BinSort.{method}() needs create_permute_vector() first")
        return self._permute


def _positive_int(value: Any, what: str) -> int:
    number = int(value)
    if number != value or number <= 0:
        raise ValueError(f"{what} must be a positive integer, not {value!r}")
    return number


def _three(values: Any, name: str) -> list[Any]:
    items = list(values)
    if len(items) != 3:
        raise ValueError(f"BinOp3D {name} takes three values (x, y, z), not {values!r}")
    return items


def _scale(bins: int, span: float) -> float:
    if not span > 0:
        raise ValueError(f"a BinOp's max must be above its min (they span {span})")
    return bins / span


def _truncated(scaled: Any) -> Any:
    """C's ``(int)x``: toward zero. NaN and values past int64 become int64's minimum,
    which the range check then reports."""
    xp = array_module(scaled)
    with np.errstate(invalid="ignore"):
        return xp.trunc(scaled).astype(np.int64)


def _ranks(keys: Any) -> Any:
    """Each key's rank among the distinct keys (int64), which sorts as the key does."""
    xp = array_module(keys)
    return xp.unique(keys, return_inverse=True)[1].astype(np.int64).reshape(keys.shape)


def _check_in_range(bins: Any, count: int, keys: Any, op: BinOp, axis: int | None = None) -> None:
    xp = array_module(bins)
    outside = (bins < 0) | (bins >= count)
    if not bool(xp.any(outside)):
        return
    index = int(xp.argmax(outside))
    key = keys[index] if axis is None else keys[index, axis]
    where = f"keys[{index}]" if axis is None else f"keys[{index}, {axis}]"
    grid = f"0..{count - 1}" if axis is None else f"0..{count - 1} along axis {axis}"
    raise ValueError(f"BinSort: {where} = {key} falls outside the bins {grid} of {op!r}")
