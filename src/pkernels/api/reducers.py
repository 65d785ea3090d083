"""Kokkos' built-in reducers: ``pk.parallel_reduce(policy, workunit, reducer=pk.Max)``.

The workunit updates its accumulator as the reducer means it (``acc *= x[i]`` for
``pk.Prod``, ``if x[i] > acc: acc = x[i]`` for ``pk.Max``); each thread starts from the
reducer's identity and the threads' partial results are combined with its operation.
The default, ``pk.Sum``, is what ``parallel_reduce`` always did.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .types import DataType


@dataclass(frozen=True)
class Reducer:
    """A reduction: its name, how two partial results combine (Python and C++ with
    ``omp_out``/``omp_in``), and the element types it takes."""

    name: str
    combine: Callable[[Any, Any], Any]
    cpp_combine: str  # an expression of omp_out and omp_in (OpenMP's names)
    kinds: tuple[str, ...] = ("int", "uint", "float", "bool")

    def identity(self, dtype: DataType) -> Any:
        """The value each thread starts from: combining it changes nothing."""
        if self.name in ("Min", "Max"):
            if dtype.is_float:
                return math.inf if self.name == "Min" else -math.inf
            info = np.iinfo(dtype.np_dtype) if dtype.is_integer else None
            if info is None:  # bool
                return self.name == "Min"
            return int(info.max if self.name == "Min" else info.min)
        start = {"Sum": 0, "Prod": 1, "LAnd": 1, "LOr": 0, "BOr": 0}.get(self.name)
        if start is not None:
            return dtype.np_dtype.type(start).item() if dtype.kind != "bool" else bool(start)
        assert self.name == "BAnd"
        if dtype.kind == "bool":
            return True
        return int(np.iinfo(dtype.np_dtype).max) if dtype.kind == "uint" else -1

    def cpp_identity(self, dtype: DataType, infinity: str) -> str:
        """:meth:`identity` as a C++ expression of the accumulator's type, for the CPU's
        runtime and the GPU's alike (NVRTC has no ``<limits>``): ``infinity`` is the
        runtime's +inf of that type."""
        T = dtype.ctype
        value = self.identity(dtype)
        if isinstance(value, float) and math.isinf(value):
            return infinity if value > 0 else f"-{infinity}"
        if dtype.kind == "int" and value == -(2 ** (dtype.bits - 1)):
            return f"({T})(-{2 ** (dtype.bits - 1) - 1}LL - 1)"  # no literal for the minimum
        suffix = "ULL" if dtype.kind == "uint" else "LL"
        return f"({T})({int(value)}{suffix})"

    def check(self, dtype: DataType) -> None:
        """Refuse an accumulator type the reducer does not take (bits of a float)."""
        if dtype.kind not in self.kinds:
            raise TypeError(
                f"pk.{self.name} reduces integers (its accumulator is {dtype.name}); "
                "use an integer accumulator, e.g. acc: pk.Acc[pk.int64]"
            )

    def __repr__(self) -> str:
        return f"pk.{self.name}"


def _min(a: Any, b: Any) -> Any:
    return b if b < a else a


def _max(a: Any, b: Any) -> Any:
    return b if b > a else a


Sum = Reducer("Sum", operator.add, "omp_out + omp_in")
Prod = Reducer("Prod", operator.mul, "omp_out * omp_in")
Min = Reducer("Min", _min, "(omp_in < omp_out ? omp_in : omp_out)")
Max = Reducer("Max", _max, "(omp_in > omp_out ? omp_in : omp_out)")
LAnd = Reducer("LAnd", lambda a, b: a and b, "(omp_out && omp_in)")
LOr = Reducer("LOr", lambda a, b: a or b, "(omp_out || omp_in)")
BAnd = Reducer("BAnd", operator.and_, "(omp_out & omp_in)", ("int", "uint", "bool"))
BOr = Reducer("BOr", operator.or_, "(omp_out | omp_in)", ("int", "uint", "bool"))

REDUCERS = (Sum, Prod, Min, Max, LAnd, LOr, BAnd, BOr)
