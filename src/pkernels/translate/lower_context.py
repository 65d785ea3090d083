"""What the feature lowerers of one function share: the function being lowered, its
scopes and types, and the lowerers themselves.

The lowering of one Python function (a workunit, a ``@pk.function`` helper, a classtype
constructor or method) is split by feature: signatures, statements, ``print``,
expressions, calls, team kernels, classtypes, subviews, unpacking and list locals each
have a lowerer of their own (``lower_*.py``). Each takes this context, which holds the
state they all read and change (the locals and their types, the views, the loop depth,
the nested bodies being lowered ...) and reaches the others through it
(``cx.exprs.expr(node)``). :class:`~pkernels.translate.lower.FunctionLowerer` builds one
context per function and the lowerers around it.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ..api import types as t
from ..api.types import DataType
from . import ir
from .ir import Expr, StructType, ViewType

if TYPE_CHECKING:
    from .lower import HelperRegistry
    from .lower_calls import CallLowerer
    from .lower_classtypes import ClassTypeLowerer
    from .lower_exprs import ExpressionLowerer
    from .lower_lists import ListLowerer
    from .lower_params import SignatureLowerer
    from .lower_print import PrintLowerer
    from .lower_random import RandomLowerer
    from .lower_stmts import StatementLowerer
    from .lower_subviews import Subview, SubviewLowerer
    from .lower_teams import TeamLowerer
    from .lower_unpack import UnpackLowerer
    from .source import KernelSource


class LoweringContext:
    """The state of one function's lowering, and its feature lowerers (set by
    :class:`~pkernels.translate.lower.FunctionLowerer`)."""

    # The feature lowerers, one of each.
    signature: SignatureLowerer
    stmts: StatementLowerer
    prints: PrintLowerer
    exprs: ExpressionLowerer
    calls: CallLowerer
    teams: TeamLowerer
    classtypes: ClassTypeLowerer
    slices: SubviewLowerer
    unpacking: UnpackLowerer
    lists: ListLowerer
    random: RandomLowerer

    def __init__(
        self,
        source: KernelSource,
        helpers: HelperRegistry,
        cpp_name: str,
        call: tuple[KernelSource, ast.Call] | None = None,
    ) -> None:
        self.src = source
        self.helpers = helpers
        self.cpp_name = cpp_name
        self.call = call  # a helper's: the call translating it (its source and node)
        self.def_name = source.name  # as messages name it: f, P.method, P.__init__
        self.function: ir.Function | None = None
        self.is_helper = False
        self.rank = 1  # index parameters of the workunit (an MDRangePolicy's rank)
        self.reducer: Any = None  # a workunit's reducer (pk.MaxLoc gives acc its fields)
        # An unannotated accumulator's type: float64, or complex128 once the body was
        # found to give it a complex number (AccumulatorTakesComplex: lowered again).
        self.unannotated_acc: DataType = t.float64
        self.acc_unannotated = False  # the workunit's accumulator has no annotation

        # Names and their types.
        self.locals: dict[str, DataType] = {}
        self.declared: set[str] = set()  # annotated locals: ints convert, floats are refused
        self.first_assign_line: dict[str, int] = {}
        self.params: dict[str, ir.Param] = {}
        self.views: dict[str, ViewType] = {}
        self.subviews: dict[str, Subview] = {}  # `row = A[j, :]`: see lower_subviews

        # Returns: the type (annotated, or inferred from the returns met so far).
        self.return_type: Any = None
        self.return_inferred = False
        self.bare_returns: list[ast.Return] = []

        self.loop_depth = 0
        self.counter = 0  # numbers the hidden names (loop ends, held values)

        # Team kernels (see lower_teams).
        self.team_name: str | None = None  # the team member parameter, in team workunits
        self.nested_defs: dict[str, ast.FunctionDef] = {}
        # The locals of the enclosing functions while a nested def is lowered (innermost
        # last); the def's own are self.locals.
        self.outer_scopes: list[dict[str, DataType]] = []
        self.outer_declared: list[set[str]] = []  # their declared (annotated) names
        self.nonlocal_names: set[str] = set()  # the nested def's `nonlocal` names
        self.accumulators: set[str] = set()  # a nested body's: stores convert (README)
        self.nested_kinds: list[str] = []  # the ranges (or "single") being lowered
        self.return_labels: list[str] = []
        # Conditions of the branches and loops around the statement being lowered.
        self.conditions: list[Expr] = []
        self.rank_dependent: set[str] = set()  # locals computed from team_rank()

        # Random pools (see lower_random): the parameters receiving one, and each
        # pk.rand(T) call by its (line, column): its site number and the type drawn.
        self.pools: list[str] = []
        self.draw_sites: dict[tuple[int, int], tuple[int, str]] = {}

        # Classtypes (see lower_classtypes).
        # `self` of the classtype __init__ or method being lowered: never rebound.
        self.struct_self: str | None = None
        self.constructing: StructType | None = None  # lowering this classtype's __init__
        self.method_of: StructType | None = None  # lowering a method of this classtype


class AccumulatorTakesComplex(Exception):
    """An unannotated accumulator is given a complex number: the workunit is lowered
    again with a complex128 accumulator (as the Debug space's float64 0 becomes one)."""


class Lowerer:
    """A feature lowerer: works on the shared :class:`LoweringContext` ``cx``, reporting
    errors at the function's source ``src``."""

    def __init__(self, cx: LoweringContext) -> None:
        self.cx = cx
        self.src = cx.src
