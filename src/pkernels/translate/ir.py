"""The typed kernel IR: what the translator checked, independent of any backend.

Every expression carries its type; every statement carries its Python line, which the
backends turn into ``#line`` directives.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from ..api import types as t
from ..api.types import DataType
from .printf import PrintSpec


class ViewLayout(IntEnum):
    """Which axis of a view has stride 1, as far as its kernel is compiled for: the C++
    View's third template argument (the values of the runtime's view_layout.hpp). An
    access skips that axis's multiply by a run-time stride."""

    STRIDED = 0  # none known
    LAST_UNIT = 1  # the last axis: a C-order array, any contiguous rank-1 one
    FIRST_UNIT = 2  # the first axis, rank >= 2: a Fortran-order array (LayoutLeft)


@dataclass(frozen=True)
class ViewType:
    """A view parameter: element type, rank, and which axis (if any) has stride 1."""

    dtype: DataType
    rank: int
    layout: ViewLayout = ViewLayout.STRIDED

    def __str__(self) -> str:
        return f"View{self.rank}D[{self.dtype.name}]"


@dataclass(frozen=True)
class TeamType:
    """The team member parameter of a TeamPolicy workunit (``pk.TeamMember``)."""

    def __str__(self) -> str:
        return "TeamMember"


@dataclass(frozen=True)
class RandomPoolType:
    """A random pool dispatch argument (``pk.Random_XorShift64_Pool``): the kernel takes
    its launch key, a uint64 parameter, and draws with ``pk.rand(T)`` (see
    ``api.random_pools``)."""

    def __str__(self) -> str:
        return "RandomPool"


@dataclass(frozen=True)
class StructType:
    """A ``@pk.classtype`` value: a C++ struct of scalar and struct fields (in the order of
    their annotated assignments in ``__init__``). ``name`` is the Python class name."""

    cls: type
    name: str
    ctype: str  # the C++ struct
    fields: tuple[tuple[str, DataType | StructType], ...] = field(compare=False)
    # Not a classtype but the accumulator of this reducer to several values (pk.MaxLoc):
    # a plain aggregate the launchers name too.
    reducer: Any = field(default=None, compare=False)

    kind = "struct"
    is_float = False
    is_integer = False

    def field_type(self, name: str) -> DataType | StructType | None:
        return dict(self.fields).get(name)

    def __str__(self) -> str:
        return self.name


Type = DataType | ViewType | TeamType | StructType | RandomPoolType


def accumulator_struct(reducer: Any, dtype: DataType) -> StructType:
    """The accumulator of a reducer to several values (``pk.MaxLoc`` ...) reducing
    ``dtype``: its values of that type, its locations int64."""
    fields = tuple(
        (name, t.int64 if reducer.field_is_location(name) else dtype) for name in reducer.fields
    )
    name = f"pk.{reducer.name} accumulator"
    ctype = f"pk_acc_{reducer.name}_{dtype.name}"  # types differ: so do the structs
    return StructType(reducer.result, name, ctype, fields, reducer)


def reduced_type(acc: DataType | StructType) -> DataType:
    """The type a reduce's accumulator reduces: itself, or its values' type."""
    if isinstance(acc, StructType):
        ftype = acc.fields[0][1]
        assert isinstance(ftype, DataType)
        return ftype
    return acc


# ---------------------------------------------------------------- expressions


@dataclass
class Expr:
    type: DataType


@dataclass
class Const(Expr):
    value: int | float | bool

    @property
    def weak(self) -> bool:
        """Literals adapt to the other operand's type, as NumPy's Python scalars do."""
        return not isinstance(self.value, bool)


@dataclass
class Var(Expr):
    name: str


@dataclass
class ViewRef:
    """A view named in an expression (only valid as the base of an access)."""

    name: str
    view: ViewType


@dataclass
class ViewAccess(Expr):
    view: ViewRef
    indices: list[Expr]
    lineno: int = 0


@dataclass
class ViewExtent(Expr):
    view: ViewRef
    axis: int


@dataclass
class SubviewIndex(Expr):
    """An index into axis ``axis`` of the subview (or view) ``name``, of ``length``
    indices: itself, checked against ``length`` in debug builds."""

    index: Expr
    length: Expr
    name: str
    axis: int


@dataclass
class SearchBound(Expr):
    """``pk.lower_bound(view, count, value)`` (``upper``: ``pk.upper_bound``): a binary
    search of the first ``count`` elements of a sorted rank-1 view."""

    view: ViewRef
    count: Expr
    value: Expr
    upper: bool


@dataclass
class ViewArg(Expr):
    """A whole view passed to a ``@pk.function`` helper (``type``: its element type)."""

    ref: ViewRef


@dataclass
class FieldAccess(Expr):
    """``base.field`` of a classtype value (``type``: the field's type)."""

    base: Expr
    field: str


@dataclass
class BinOp(Expr):
    op: str  # + - * / // % ** & | ^ << >>
    left: Expr
    right: Expr


@dataclass
class UnaryOp(Expr):
    op: str  # - + ! ~
    operand: Expr


@dataclass
class Compare(Expr):
    op: str  # < <= > >= == !=
    left: Expr
    right: Expr


@dataclass
class BoolOp(Expr):
    op: str  # && ||
    values: list[Expr]


@dataclass
class Select(Expr):
    cond: Expr
    then: Expr
    other: Expr


@dataclass
class Cast(Expr):
    operand: Expr


@dataclass
class Call(Expr):
    """A call of a math builtin (``func`` is the backend-neutral name) or a helper."""

    func: str
    args: list[Expr]
    user: bool = False  # an @pk.function helper, not a builtin


@dataclass
class RandomDraw(Expr):
    """``pk.rand(T)``: the next number of call site ``site`` from the call's pool stream
    ``stream``, ``count`` the site's counter (a local the draw increments)."""

    stream: Var
    site: int
    count: Var


@dataclass
class AtomicOp(Expr):
    """``pk.atomic_*``: ``op`` is add/sub/mul/div/max/min/and/or/xor/exchange/cas."""

    op: str
    target: ViewAccess
    operands: list[Expr]
    fetch: bool


@dataclass
class TeamQuery(Expr):
    """``team_member.league_rank()`` & co.: ``what`` is league_rank, league_size,
    team_rank or team_size."""

    team: str
    what: str


def subexpressions(e: Expr) -> Iterator[Expr]:
    """``e`` and every expression inside it."""
    yield e
    match e:
        case ViewAccess(indices=children) | BoolOp(values=children) | Call(args=children):
            pass
        case BinOp(left=a, right=b) | Compare(left=a, right=b):
            children = [a, b]
        case UnaryOp(operand=a) | Cast(operand=a) | FieldAccess(base=a):
            children = [a]
        case Select(cond=a, then=b, other=c):
            children = [a, b, c]
        case SubviewIndex(index=a, length=b) | SearchBound(count=a, value=b):
            children = [a, b]
        case AtomicOp(target=target, operands=operands):
            children = [target, *operands]
        case _:
            children = []
    for child in children:
        yield from subexpressions(child)


# ---------------------------------------------------------------- statements


@dataclass
class Stmt:
    lineno: int


@dataclass
class Assign(Stmt):
    target: Var | ViewAccess | FieldAccess
    value: Expr


@dataclass
class AugAssign(Stmt):
    target: Var | ViewAccess | FieldAccess
    op: str
    value: Expr


@dataclass
class ExprStmt(Stmt):
    value: Expr


@dataclass
class If(Stmt):
    cond: Expr
    body: list[Stmt]
    orelse: list[Stmt]


@dataclass
class ForRange(Stmt):
    var: Var
    start: Expr
    stop: Expr
    step: Expr
    body: list[Stmt]
    counter: str  # hidden loop counter: Python ignores writes to the loop variable


@dataclass
class While(Stmt):
    cond: Expr
    body: list[Stmt]


@dataclass
class Break(Stmt):
    pass


@dataclass
class Continue(Stmt):
    pass


@dataclass
class Return(Stmt):
    value: Expr | None


@dataclass
class Print(Stmt):
    """``pk.printf(fmt, *args)``, or ``print(...)`` (``python_style``): ``texts[0]``,
    ``args[0]`` as ``specs[0]`` says (None: as print writes it), ``texts[1]``, ... and the
    last text (sep and end included)."""

    python_style: bool
    fmt: str
    args: list[Expr]
    texts: list[str] = field(default_factory=list)
    specs: list[PrintSpec | None] = field(default_factory=list)


@dataclass
class TeamBarrier(Stmt):
    """``team_member.team_barrier()``."""

    team: str


@dataclass
class ScratchAlloc(Stmt):
    """``s: pk.ScratchView1D[T] = pk.ScratchView1D(team_member.team_scratch(level), n)``:
    the next piece of the team's (or, ``per_thread``, this thread's) scratch memory."""

    name: str
    view: ViewType
    team: str
    level: int
    per_thread: bool
    extents: list[Expr]


@dataclass
class NestedParallel(Stmt):
    """``pk.parallel_for/reduce/scan(pk.TeamThreadRange(team_member, ...), body)`` with
    ``body`` a nested ``def``, inlined: its parameters and locals are declared in a block
    of their own (Python's scoping: they shadow the workunit's names), its ``return``
    ends one iteration.

    ``kind``: team_thread, team_vector, thread_vector or team_thread_md; ``begins`` and
    ``ends`` bound each index; ``result``: where a reduce/scan total goes (or None)."""

    kind: str
    operation: str
    team: str
    begins: list[Expr]
    ends: list[Expr]
    indices: list[Var]
    acc: Var | None
    last_pass: Var | None
    locals: dict[str, DataType]
    body: list[Stmt]
    label: str  # where a `return` in the body jumps: the end of the iteration
    def_lineno: int
    end_lineno: int
    result: Var | ViewAccess | None = None
    reducer: Any = None  # a reduce's reducer (pk.Max ...); None: a sum


@dataclass
class Single(Stmt):
    """``pk.single(pk.PerTeam(team_member), body)`` (``per_team``) or ``pk.PerThread``,
    ``body`` a nested ``def`` inlined as :class:`NestedParallel` bodies are."""

    team: str
    per_team: bool
    locals: dict[str, DataType]
    body: list[Stmt]
    label: str
    end_lineno: int


@dataclass
class JumpTo(Stmt):
    """A ``return`` inside an inlined nested ``def``: go to the end of its body."""

    label: str


def statements(body: list[Stmt]) -> Iterator[Stmt]:
    """Every statement of ``body``, nested ones included."""
    for s in body:
        yield s
        match s:
            case If(body=inner, orelse=orelse):
                yield from statements(inner)
                yield from statements(orelse)
            case (
                ForRange(body=inner)
                | While(body=inner)
                | NestedParallel(body=inner)
                | Single(body=inner)
            ):
                yield from statements(inner)


def read_expressions(s: Stmt) -> list[Expr]:
    """The expressions a statement evaluates (an assignment's target only when it is a view
    element, whose indices are read)."""
    match s:
        case Assign(target=target, value=value):
            return [value] if isinstance(target, Var) else [target, value]
        case AugAssign(target=target, value=value):
            return [target, value]
        case ExprStmt(value=value) | Return(value=Expr() as value):
            return [value]
        case If(cond=cond) | While(cond=cond):
            return [cond]
        case ForRange(start=start, stop=stop, step=step):
            return [start, stop, step]
        case Print(args=args):
            return list(args)
        case NestedParallel(begins=begins, ends=ends):
            return [*begins, *ends]
        case ScratchAlloc(extents=extents):
            return list(extents)
    return []


# ---------------------------------------------------------------- functions


@dataclass
class Param:
    name: str
    type: Type
    role: str = "arg"  # "index", "acc", "last_pass" or "arg"


@dataclass
class Function:
    """A translated workunit or helper, ready for a backend."""

    name: str  # C++ name
    py_name: str
    filename: str
    lineno: int  # of the `def`
    params: list[Param]
    return_type: DataType | None
    locals: dict[str, DataType]
    body: list[Stmt]
    end_lineno: int = 0
    # Views the body stores into (assignments, augmented assignments, atomics).
    written_views: set[str] = field(default_factory=set)
    # Scratch views the body allocates (declared at its top, see ScratchAlloc).
    scratch_views: dict[str, ViewType] = field(default_factory=dict)
    # Local lists (`f: List[float] = [0.0, 0.0, 0.0]`): rank-1 views of an array of the
    # given length declared at the body's top; the statement that makes one fills it.
    local_arrays: dict[str, tuple[ViewType, int]] = field(default_factory=dict)
    # Views passed to helpers: (the helper's C++ name, {its parameter: our view}), so
    # what a helper writes counts as written here too (see HelperRegistry).
    view_passes: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    # Subviews (`row = A[j, :]`) by name, as SubviewLowering describes them to debuggers.
    subviews: dict[str, dict[str, Any]] = field(default_factory=dict)
    # A workunit drawing from a random pool (pk.rand(T)): how, for the Debug space.
    random_draws: RandomDraws | None = None
    # A kernel whose helpers call themselves, directly or through each other: -O3 may
    # turn an endless recursion into an endless loop where the debug build overflows
    # its stack.
    recursive_helpers: bool = False


@dataclass(frozen=True)
class RandomDraws:
    """How a workunit draws from its random pool (see ``translate.lower_random``): the
    pool parameter (its launch key), the Python expressions of the call's stream indices
    (``i``, or ``m.league_rank()`` and ``m.team_rank()``), and each ``pk.rand(T)`` call by
    its position in the source (line, column): its site number and the type drawn."""

    pool: str
    indices: tuple[str, ...]
    sites: dict[tuple[int, int], tuple[int, str]] = field(hash=False)
