"""Translate one workunit specialisation: the front door of the translator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..api import types as t
from ..api.reducers import Reducer, Sum
from . import emit_cpp, ir
from .bounds_proof import launch_proof
from .emit_cpp import KernelEntry
from .emit_hybrid import has_hybrid_launch
from .emit_launch import emit_module
from .lower import FunctionLowerer, HelperRegistry
from .lower_context import AccumulatorTakesComplex
from .source import KernelSource

ROLES = {"for": ["index"], "reduce": ["index", "acc"], "scan": ["index", "acc", "last_pass"]}
# The "rank" of a TeamPolicy dispatch: no index, the team member comes first.
TEAM = emit_cpp.TEAM


def roles(operation: str, rank: int = 1) -> list[str]:
    """The roles of a workunit's leading parameters: ``rank`` indices (an MDRangePolicy
    has 2 to 4; a TeamPolicy, rank ``TEAM``, the team member instead), then the
    accumulator (reduce, scan) and ``last_pass`` (scan)."""
    first = ["team"] if rank == TEAM else ["index"] * rank
    return first + ROLES[operation][1:]


def lower_workunit(
    func: Callable[..., Any],
    operation: str,
    arg_types: dict[str, ir.Type],
    rank: int = 1,
    reducer: Reducer = Sum,
) -> tuple[ir.Function, list[ir.Function]]:
    """The checked IR of ``func`` (and of the helpers it calls) for these argument types;
    a reduce's accumulator has the fields of ``reducer`` if it reduces several values."""
    source = KernelSource.of(func)
    try:
        return _lowered(source, operation, arg_types, rank, reducer, t.float64)
    except AccumulatorTakesComplex:  # an unannotated acc given complex numbers
        return _lowered(source, operation, arg_types, rank, reducer, t.complex128)


def _lowered(
    source: KernelSource,
    operation: str,
    arg_types: dict[str, ir.Type],
    rank: int,
    reducer: Reducer,
    unannotated_acc: t.DataType,
) -> tuple[ir.Function, list[ir.Function]]:
    helpers = HelperRegistry()
    lowerer = FunctionLowerer(source, helpers, cpp_name=source.name)
    lowerer.cx.unannotated_acc = unannotated_acc
    kernel = lowerer.lower_workunit(roles(operation, rank), arg_types, reducer)
    return kernel, helpers.order


def check_reducer(func: Callable[..., Any], kernel: ir.Function, reducer: Reducer) -> None:
    """Refuse, at the accumulator parameter, an accumulator type ``reducer`` does not take."""
    acc = next((p for p in kernel.params if p.role == "acc"), None)
    if reducer is Sum or acc is None or not isinstance(acc.type, t.DataType):
        return
    try:
        reducer.check(acc.type)
    except TypeError as exc:
        source = KernelSource.of(func)
        node = next((a for a in source.tree.args.args if a.arg == acc.name), source.tree)
        source.error(node, str(exc))


def translate_workunit(
    func: Callable[..., Any],
    operation: str,
    arg_types: dict[str, ir.Type],
    rank: int = 1,
    reducer: Reducer = Sum,
) -> KernelEntry:
    """C++ for ``func`` dispatched as ``operation`` with arguments of ``arg_types``, over
    a range (``rank`` 1) or an MDRangePolicy box of ``rank`` dimensions; a reduce
    combines with ``reducer``."""
    kernel, helpers = lower_workunit(func, operation, arg_types, rank, reducer)
    index = kernel.params[0].type
    if isinstance(index, ir.TeamType):
        index = t.int64  # unused: a TeamPolicy module has no index
    assert isinstance(index, t.DataType)
    check_reducer(func, kernel, reducer)
    entry = emit_module(kernel, helpers, operation, index, rank, reducer)
    # When a HYBRID launch runs fast: never where a float becomes an integer (NaN,
    # infinities and floats past the integer type fail the debug build's check there).
    if has_hybrid_launch(operation, rank) and not entry.converts_floats:
        entry.proof = launch_proof(kernel, helpers, operation, rank)
    return entry
