"""Kokkos' built-in reducers: ``pk.parallel_reduce(policy, workunit, reducer=pk.Max)``.

The workunit updates its accumulator as the reducer means it (``acc *= x[i]`` for
``pk.Prod``, ``if x[i] > acc: acc = x[i]`` for ``pk.Max``); each thread starts from the
reducer's identity and the threads' partial results are combined with its operation.
The default, ``pk.Sum``, is what ``parallel_reduce`` always did.

``pk.MaxLoc``, ``pk.MinLoc``, ``pk.MinMax`` and ``pk.MinMaxLoc`` reduce to several values:
the accumulator has fields (``acc.val``, ``acc.loc``; ``acc.min_val`` ...) and
``parallel_reduce`` returns them as a named tuple (:class:`ValLocScalar`,
:class:`MinMaxScalar`, :class:`MinMaxLocScalar`, Kokkos' names and field orders). A
location is the smallest index holding the value (as ``numpy.argmax``) whichever thread
found it, when the workunit keeps the first it sees (``if x[i] > acc.val:``).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, NamedTuple

import numpy as np

from .types import DataType, int64


@dataclass(frozen=True)
class Reducer:
    """A reduction: its name, how two partial results combine (Python and C++ with
    ``omp_out``/``omp_in``), and the element types it takes."""

    name: str
    combine: Callable[[Any, Any], Any]
    cpp_combine: str  # an expression of omp_out and omp_in (OpenMP's names)
    kinds: tuple[str, ...] = ("int", "uint", "float", "bool")
    # A reducer to several values: (value field, "<" or ">", its location field or "")
    # for each value it keeps; the accumulator's fields are the values, then the locations.
    parts: tuple[tuple[str, str, str], ...] = ()
    result: type | None = None  # the named tuple parallel_reduce returns (with parts)

    @property
    def fields(self) -> tuple[str, ...]:
        """The accumulator's fields, in the order of Kokkos' struct (empty: a scalar)."""
        return tuple(v for v, _, _ in self.parts) + tuple(loc for _, _, loc in self.parts if loc)

    def field_is_location(self, name: str) -> bool:
        return any(name == loc for _, _, loc in self.parts)

    def identity(self, dtype: DataType) -> Any:
        """The value each thread starts from: combining it changes nothing. A reducer to
        several values starts from its :attr:`result` tuple of the identities (a location
        starts at the largest int64, as in Kokkos)."""
        if self.parts:
            assert self.result is not None
            start = {}
            for value, better, loc in self.parts:
                start[value] = (Max if better == ">" else Min).identity(dtype)
                if loc:
                    start[loc] = _NO_LOCATION
            return self.result(**start)
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

    def cpp_identity(self, dtype: DataType, infinity: str, struct: str = "") -> str:
        """:meth:`identity` as a C++ expression of the accumulator's type, for the CPU's
        runtime and the GPU's alike (NVRTC has no ``<limits>``): ``infinity`` is the
        runtime's +inf of that type; ``struct``, the accumulator's C++ struct when the
        reducer has several values (of type ``dtype``)."""
        if self.parts:
            values = []
            for name in self.fields:
                if self.field_is_location(name):
                    values.append(_scalar_cpp(int64, _NO_LOCATION, ""))
                else:
                    better = next(b for v, b, _ in self.parts if v == name)
                    minimum = Min if better == "<" else Max
                    values.append(_scalar_cpp(dtype, minimum.identity(dtype), infinity))
            return f"{struct}{{{', '.join(values)}}}"
        return _scalar_cpp(dtype, self.identity(dtype), infinity)

    def cpp_combine_of(self, ctype: str) -> str:
        """:attr:`cpp_combine` for an accumulator of C++ type ``ctype`` (a reducer to several
        values builds its struct: each value and its location from the partial whose value
        wins, the smaller location on a tie)."""
        if not self.parts:
            return self.cpp_combine
        winner = {}
        for value, better, loc in self.parts:
            wins = f"omp_in.{value} {better} omp_out.{value}"
            if loc:
                tie = f"omp_in.{value} == omp_out.{value} && omp_in.{loc} < omp_out.{loc}"
                wins = f"({wins} || ({tie}))"
            winner[value] = wins
            if loc:
                winner[loc] = wins
        picks = [f"{winner[f]} ? omp_in.{f} : omp_out.{f}" for f in self.fields]
        return f"{ctype}{{{', '.join(picks)}}}"

    def usage(self, acc: str = "acc") -> str:
        """How a workunit updates this reducer's accumulator ``acc`` (for messages)."""
        lines = []
        for value, better, loc in self.parts:
            update = f"{acc}.{value} = x[i]" + (f"; {acc}.{loc} = i" if loc else "")
            lines.append(f"`if x[i] {better} {acc}.{value}: {update}`")
        return " and ".join(lines)

    def accumulator(self, start: Any) -> Any:
        """A Python accumulator holding ``start`` (a value :meth:`identity` or
        :meth:`value_of` gives): the value itself, or for a reducer to several values an
        object whose fields the workunit assigns (``acc.val = x[i]``)."""
        return SimpleNamespace(**start._asdict()) if self.parts else start

    def value_of(self, acc: Any, kind: type) -> Any:
        """The reduction's result from an accumulator (Debug's, or a :attr:`result`
        tuple): the values as ``kind`` (int, float, bool or complex), the locations as
        ints. An accumulator that became complex (an unannotated one given complex
        numbers: the translator types it complex128) gives a Python complex."""
        if not self.parts:
            return complex(acc) if isinstance(acc, complex | np.complexfloating) else kind(acc)
        assert self.result is not None
        return self.result(
            **{
                name: (int if self.field_is_location(name) else kind)(getattr(acc, name))
                for name in self.fields
            }
        )

    def check(self, dtype: DataType) -> None:
        """Refuse an accumulator type the reducer does not take (bits of a float, the
        order of bools)."""
        if dtype.kind in self.kinds:
            return
        if dtype.is_complex:
            raise TypeError(
                f"pk.{self.name} does not reduce complex numbers (its accumulator is "
                f"{dtype.name}): a complex accumulator sums (the default) or multiplies "
                "(pk.Prod); reduce the parts or abs(z) in a real accumulator"
            )
        if self.parts:
            raise TypeError(
                f"pk.{self.name} compares numbers (its accumulator is {dtype.name}); "
                "use a number type, e.g. acc: pk.Acc[pk.double]"
            )
        raise TypeError(
            f"pk.{self.name} reduces integers (its accumulator is {dtype.name}); "
            "use an integer accumulator, e.g. acc: pk.Acc[pk.int64]"
        )

    def __repr__(self) -> str:
        return f"pk.{self.name}"


def _scalar_cpp(dtype: DataType, value: Any, infinity: str) -> str:
    """A number of ``dtype`` as a C++ expression (``infinity``: the runtime's +inf)."""
    T = dtype.ctype
    if isinstance(value, float) and math.isinf(value):
        return infinity if value > 0 else f"-{infinity}"
    if dtype.kind == "int" and value == -(2 ** (dtype.bits - 1)):
        return f"({T})(-{2 ** (dtype.bits - 1) - 1}LL - 1)"  # no literal for the minimum
    suffix = "ULL" if dtype.kind == "uint" else "LL"
    if isinstance(value, complex):  # a complex sum's 0 or product's 1 (imaginary part 0)
        value = value.real
    return f"({T})({int(value)}{suffix})"


def _min(a: Any, b: Any) -> Any:
    return b if b < a else a


def _max(a: Any, b: Any) -> Any:
    return b if b > a else a


# Sum and Prod take complex accumulators too (shared/complex.hpp's + and *).
_NUMBERS = ("int", "uint", "float", "bool", "complex")
Sum = Reducer("Sum", operator.add, "omp_out + omp_in", _NUMBERS)
Prod = Reducer("Prod", operator.mul, "omp_out * omp_in", _NUMBERS)
Min = Reducer("Min", _min, "(omp_in < omp_out ? omp_in : omp_out)")
Max = Reducer("Max", _max, "(omp_in > omp_out ? omp_in : omp_out)")
LAnd = Reducer("LAnd", lambda a, b: a and b, "(omp_out && omp_in)")
LOr = Reducer("LOr", lambda a, b: a or b, "(omp_out || omp_in)")
BAnd = Reducer("BAnd", operator.and_, "(omp_out & omp_in)", ("int", "uint", "bool"))
BOr = Reducer("BOr", operator.or_, "(omp_out | omp_in)", ("int", "uint", "bool"))


class ValLocScalar(NamedTuple):
    """What ``parallel_reduce`` returns with ``reducer=pk.MaxLoc`` or ``pk.MinLoc``."""

    val: Any
    loc: int


class MinMaxScalar(NamedTuple):
    """What ``parallel_reduce`` returns with ``reducer=pk.MinMax``."""

    min_val: Any
    max_val: Any


class MinMaxLocScalar(NamedTuple):
    """What ``parallel_reduce`` returns with ``reducer=pk.MinMaxLoc``."""

    min_val: Any
    max_val: Any
    min_loc: int
    max_loc: int


_NO_LOCATION = int(np.iinfo(np.int64).max)  # a location nothing was found at


def _combine_parts(parts: tuple[tuple[str, str, str], ...], result: type) -> Callable:
    """The Python combination of two results of a reducer to several values: each value
    and its location from the partial whose value wins, the smaller location on a tie
    (what the C++ of :meth:`Reducer.cpp_combine_of` does)."""
    beats = {"<": operator.lt, ">": operator.gt}

    def combine(a: Any, b: Any) -> Any:
        picked: dict[str, Any] = {}
        for value, better, loc in parts:
            mine, theirs = getattr(a, value), getattr(b, value)
            wins = beats[better](theirs, mine)
            if loc and not wins:
                wins = theirs == mine and getattr(b, loc) < getattr(a, loc)
            source = b if wins else a
            picked[value] = getattr(source, value)
            if loc:
                picked[loc] = getattr(source, loc)
        return result(**picked)

    return combine


def _several(name: str, parts: tuple[tuple[str, str, str], ...], result: type) -> Reducer:
    return Reducer(name, _combine_parts(parts, result), "", ("int", "uint", "float"), parts, result)


MaxLoc = _several("MaxLoc", (("val", ">", "loc"),), ValLocScalar)
MinLoc = _several("MinLoc", (("val", "<", "loc"),), ValLocScalar)
MinMax = _several("MinMax", (("min_val", "<", ""), ("max_val", ">", "")), MinMaxScalar)
MinMaxLoc = _several(
    "MinMaxLoc", (("min_val", "<", "min_loc"), ("max_val", ">", "max_loc")), MinMaxLocScalar
)

REDUCERS = (Sum, Prod, Min, Max, LAnd, LOr, BAnd, BOr, MaxLoc, MinLoc, MinMax, MinMaxLoc)
