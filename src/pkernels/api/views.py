"""``pk.View``: an array allocated for kernels, usable from Python like a NumPy array."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .types import DataType, float64, to_datatype


class View(np.ndarray):
    """``pk.View(shape, dtype=pk.double)``: a zero-filled, C-ordered host array.

    It *is* a NumPy array (a subclass), so it slices, prints and computes like one and
    can be passed to any kernel. Kernels accept plain NumPy arrays just as well.
    """

    def __new__(
        cls, shape: int | Sequence[int], dtype: DataType | type | np.dtype = float64, **_: object
    ) -> View:
        shape_tuple = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
        np_dtype = to_datatype(dtype).np_dtype
        return np.zeros(shape_tuple, dtype=np_dtype).view(cls)

    def extent(self, axis: int) -> int:
        """Length of ``axis`` (the Kokkos spelling of ``shape[axis]``)."""
        return int(self.shape[axis])

    @property
    def rank(self) -> int:
        return self.ndim
