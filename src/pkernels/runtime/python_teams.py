"""The ``Debug`` space's TeamPolicy: team kernels run as Python, a team as Python threads.

Each league rank in turn runs one team: with one member (``pk.AUTO``) the workunit is
called in the calling thread, with more each member is a Python thread, and the team
finishes before the next one starts. The members of a team share its scratch memory and
synchronise with ``team_member.team_barrier()``; each barrier arrival is recorded with
its source line (a member whose workunit returned arrives at "the end of the workunit"),
so members reaching different barriers raise :class:`KernelTeamError` instead of hanging.

Nested ranges (``pk.parallel_for(pk.TeamThreadRange(team_member, n), body)`` & co.)
split their indices among the members exactly as the compiled spaces do: contiguous
chunks of ``ceil(n / team_size)`` indices, sums combined in member order, so reductions
and scans give the same bits.

Python cannot pass a float by reference, so the workunit and the nested reduce/scan
bodies run as rewritten copies (each store into ``acc`` also kept in a one-element list,
``pyexec.mirror_accumulator``; a nested body keeps its closure
over the workunit's locals), compiled with the kernel's file name and line numbers:
tracebacks and pdb breakpoints point at the user's lines.
"""

from __future__ import annotations

import ast
import copy
import math
import operator
import os
import re
import sys
import threading
import types
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..api.teams import SCRATCH_ALIGNMENT, NestedRange, TeamMember, TeamPolicy
from ..api.types import C_TYPE_NAMES, float64, to_datatype
from ..errors import DispatchError, KernelTeamError
from ..translate.kernel import TEAM
from ..translate.pycode import bind_like, compile_like
from ..translate.pyexec import (
    BareMathNames,
    bare_math_names,
    debug_rewrite,
    mirror_accumulator,
    prepare_helpers,
)
from ..translate.pytyped import LocalTypes
from ..translate.source import KernelSource

# -- running a TeamPolicy ---------------------------------------------------------------


def run_team_in_python(
    workunit: Any, operation: str, policy: Any, kwargs: dict[str, Any], reducer: Any = None
) -> Any:
    """Run ``workunit(team_member, [acc,] **kwargs)`` for every member of every team of
    ``policy``; for ``operation == "reduce"`` return the members' accumulators added in
    order (league 0 rank 0, league 0 rank 1, ..., from 0), or combined with ``reducer``
    (each member starting from its identity)."""
    from ..api.reducers import Sum
    from .python_arguments import check_argument_values
    from .python_forms import checked_form
    from .python_values import as_python_argument, debug_cell, start_and_type

    reducer = reducer or Sum

    assert operation in ("for", "reduce"), operation
    assert isinstance(policy, TeamPolicy)
    form = checked_form(
        workunit,
        operation,
        kwargs,
        TEAM,
        reducer,
        lambda local_types: _team_form(workunit, operation, local_types),
    )
    check_argument_values(workunit, kwargs)
    kwargs = {name: as_python_argument(value) for name, value in kwargs.items()}
    team_size = policy.resolved_team_size()
    # One scratch buffer per level for the whole dispatch: each team gets it in turn
    # (not zeroed between teams, as scratch memory is not on a device).
    buffers = [np.zeros(policy.scratch_bytes(level, team_size), np.uint8) for level in (0, 1)]
    total, kind = start_and_type(reducer, workunit, 1) if operation == "reduce" else (None, None)
    start = total
    for league_rank in range(policy.league_size):
        team = _Team(league_rank, team_size, policy, buffers)
        members = [
            TeamMember(league_rank, policy.league_size, rank, team_size, team)
            for rank in range(team_size)
        ]
        accs = [debug_cell(reducer, start) for _ in members] if kind is not None else None
        calls = [
            _member_call(form, member, accs[member.team_rank()] if accs else None, kwargs)
            for member in members
        ]
        if team_size == 1:
            calls[0]()  # in the calling thread: nothing to synchronise with
        else:
            team.run(calls)
        if accs is not None:
            for acc in accs:
                total = reducer.combine(total, reducer.value_of(acc[0], kind))
    return total if kind is None else reducer.value_of(total, kind)


def _member_call(
    form: Callable[..., Any], member: TeamMember, acc: list[Any] | None, kwargs: dict[str, Any]
) -> Callable[[], Any]:
    if acc is None:
        return lambda: form(member, **kwargs)
    return lambda: form(member, acc[0], __pk_acc=acc, **kwargs)


class _TeamAborted(BaseException):
    """Raised in the members waiting at a barrier when another member failed (never
    leaves the member's thread)."""


_END = "end"  # the barrier every member reaches when its workunit returns


class _Team:
    """The shared state of one team of the Debug space: its barrier and scratch memory."""

    def __init__(
        self, league_rank: int, size: int, policy: TeamPolicy, buffers: list[np.ndarray]
    ) -> None:
        self.league_rank = league_rank
        self.size = size
        self._cond = threading.Condition()
        self._sites: list[Any] = [None] * size
        self._arrived = 0
        self._generation = 0
        self._aborted = False
        self.error: BaseException | None = None
        self._slots: list[Any] = [None] * size
        self._policy = policy
        self._buffers = buffers
        # Per level and member: the next free offset of the level's pool (PerTeam +
        # size x PerThread bytes, one pool as in Kokkos); every member allocating in the
        # same order gets the same pieces.
        self._next = [[0] * size for _ in (0, 1)]

    # -- threads ---------------------------------------------------------------------

    def run(self, calls: list[Callable[[], Any]]) -> None:
        """Run ``calls[r]`` as member ``r``, one thread each; return when all returned;
        raise the first exception one of them raised."""
        threads = [
            threading.Thread(
                target=self._member,
                args=(rank, call),
                name=f"pkernels-team-{self.league_rank}.{rank}",
                daemon=True,
            )
            for rank, call in enumerate(calls)
        ]
        started: list[threading.Thread] = []
        try:
            for thread in threads:
                thread.start()
                started.append(thread)
            for thread in started:
                thread.join()
        except BaseException as exc:  # a thread that cannot start, Ctrl-C while joining
            self.fail(exc)
            if not isinstance(exc, KeyboardInterrupt):
                for thread in started:
                    thread.join()
            raise
        error = self.error
        if error is not None:
            self.error = None
            try:
                raise error
            finally:
                del error

    def _member(self, rank: int, call: Callable[[], Any]) -> None:
        try:
            call()
            self.barrier_at(rank, _END)
        except _TeamAborted:
            pass
        except BaseException as exc:  # noqa: BLE001 - re-raised by run() in the caller
            self.fail(exc)

    def fail(self, exc: BaseException) -> None:
        """Record the team's first exception and release every member at a barrier."""
        with self._cond:
            if self.error is None and not isinstance(exc, _TeamAborted):
                self.error = exc
            self._aborted = True
            self._cond.notify_all()

    # -- barrier ---------------------------------------------------------------------

    def barrier(self, member: TeamMember) -> None:
        """``team_member.team_barrier()``: recorded with the line that called it."""
        self.barrier_at(member.team_rank(), _user_site())

    def barrier_at(self, rank: int, site: Any) -> None:
        """Member ``rank`` arrives at a barrier at ``site`` (a (file, line) pair or
        ``_END``); when every member arrived at its k-th barrier, they must all be at
        the same site."""
        if self.size == 1:
            return
        with self._cond:
            if self._aborted:
                raise _TeamAborted
            self._sites[rank] = site
            self._arrived += 1
            if self._arrived == self.size:
                first = self._sites[0]
                for other, where in enumerate(self._sites):
                    if where != first:
                        self._aborted = True
                        self._cond.notify_all()
                        raise KernelTeamError(
                            f"team_barrier() mismatch in league {self.league_rank}: "
                            f"team_rank 0 {_describe(first)}, team_rank {other} {_describe(where)}"
                        )
                self._arrived = 0
                self._generation += 1
                self._cond.notify_all()
                return
            generation = self._generation
            while generation == self._generation and not self._aborted:
                self._cond.wait()
            if generation == self._generation:
                raise _TeamAborted

    def exchange(self, rank: int, value: Any, site: Any) -> list[Any]:
        """Every member's ``value``, in rank order (two barriers at ``site``)."""
        if self.size == 1:
            return [value]
        self._slots[rank] = value
        self.barrier_at(rank, site)
        values = list(self._slots)
        self.barrier_at(rank, site)  # nobody overwrites a slot before all have read
        return values

    # -- scratch ---------------------------------------------------------------------

    def scratch(self, member: TeamMember, level: int, per_thread: bool) -> _ScratchMemory:
        """``team_member.team_scratch(level)`` / ``thread_scratch(level)``."""
        if level not in (0, 1):
            kind = "thread_scratch" if per_thread else "team_scratch"
            raise ValueError(f"team_member.{kind}(level): level must be 0 or 1, got {level!r}")
        return _ScratchMemory(self, member.team_rank(), level, per_thread)

    def allocate(
        self,
        rank: int,
        level: int,
        per_thread: bool,
        view_rank: int,
        extents: tuple[Any, ...],
        dtype: object,
    ) -> Any:
        from .python_values import as_python_argument

        what = f"ScratchView{view_rank}D"
        if not extents:  # PyKokkos' ScratchView1D(team_member.team_scratch(0)): extent 0
            extents = (0,) * view_rank
        if len(extents) != view_rank:
            raise TypeError(
                f"{what} takes the scratch memory and {view_rank} extents, got {len(extents)}"
            )
        shape = tuple(max(0, operator.index(n)) for n in extents)  # as compiled: <0 is 0
        np_dtype = (float64 if dtype is None else to_datatype(dtype)).np_dtype
        nbytes = _align(np_dtype.itemsize * math.prod(shape))  # as shmem_size counts it
        pool = self._policy.scratch_bytes(level, self.size)  # PerTeam + size x PerThread
        copies = self.size if per_thread else 1  # a thread piece for each member, side by side
        used = self._next[level]
        start = used[rank]  # a multiple of 8: every piece takes a multiple of 8 bytes
        if start + nbytes * copies > pool:
            left = max(0, pool - start) // copies // SCRATCH_ALIGNMENT * SCRATCH_ALIGNMENT
            kind, per = ("thread", "PerThread") if per_thread else ("team", "PerTeam")
            raise KernelTeamError(
                f"{what} needs {nbytes} bytes of level-{level} {kind} scratch but only "
                f"{left} are left: reserve more with policy.set_scratch_size({level}, "
                f"pk.{per}(...))"
            )
        used[rank] = start + nbytes * copies
        if nbytes == 0:
            return as_python_argument(np.zeros(shape, np_dtype))  # nothing to share
        offset = start + (rank * nbytes if per_thread else 0)
        array = np.ndarray(shape, np_dtype, buffer=self._buffers[level], offset=offset)
        return as_python_argument(array)


class _ScratchMemory:
    """What ``team_scratch(level)`` / ``thread_scratch(level)`` return: the memory a
    ``pk.ScratchView1D(...)`` is carved from."""

    def __init__(self, team: _Team, rank: int, level: int, per_thread: bool) -> None:
        self._team = team
        self._rank = rank
        self._level = level
        self._per_thread = per_thread

    def view_of(self, rank: int, extents: tuple[Any, ...], dtype: object) -> Any:
        """The next ``rank``-dimensional view of ``extents`` and ``dtype`` (float64 when
        None) in this memory."""
        return self._team.allocate(self._rank, self._level, self._per_thread, rank, extents, dtype)

    def __repr__(self) -> str:
        kind = "thread" if self._per_thread else "team"
        return f"<level-{self._level} {kind} scratch of team_rank {self._rank}>"


def _align(offset: int) -> int:
    return -(-offset // SCRATCH_ALIGNMENT) * SCRATCH_ALIGNMENT


def _describe(site: Any) -> str:
    if site == _END:
        return "at the end of the workunit"
    filename, line = site
    return f"waits at {filename}:{line}"


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _user_site() -> tuple[str, int]:
    """(file, line) of the innermost caller outside pkernels: the kernel line that
    called team_barrier() or a nested parallel_reduce / parallel_scan."""
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    return frame.f_code.co_filename, frame.f_lineno


# -- nested ranges --------------------------------------------------------------------


def run_nested_in_python(
    operation: str, nested: Any, body: Any, kwargs: dict[str, Any], reducer: Any = None
) -> Any:
    """``pk.parallel_for/reduce/scan(nested_range, body)`` inside a team workunit of the
    Debug space, run by the calling member over its share of the indices; a reduce's
    members start from ``reducer``'s identity and their results combine with it."""
    from ..api.reducers import Sum
    from .python_values import debug_cell, start_value

    reducer = reducer or Sum
    assert isinstance(nested, NestedRange)
    what = f"parallel_{operation} over a {_RANGE_NAMES.get(nested.kind, nested.kind)}"
    if reducer.parts:
        raise DispatchError(
            f"{what}: reducer={reducer!r} (several values) is for a whole dispatch; a nested "
            "reduce takes pk.Sum, pk.Prod, pk.Min, pk.Max, pk.LAnd, pk.LOr, pk.BAnd or pk.BOr"
        )
    if kwargs:
        raise DispatchError(
            f"{what} takes no keyword arguments (got {', '.join(kwargs)}): the body reads "
            "the workunit's variables directly"
        )
    if not callable(body):
        raise DispatchError(f"{what} needs a function as its body, got {body!r}")
    member = nested.member
    team: _Team = member._team
    team_size, rank = member.team_size(), member.team_rank()
    split = nested.kind != "thread_vector"
    if nested.kind == "team_thread_md":
        if operation == "scan":
            raise DispatchError(
                f"{what} is not supported: a scan needs one order of its indices; scan "
                "over a TeamThreadRange of the flattened index"
            )
        points: Iterable[tuple[int, ...]] = _box_share(nested, team_size, rank)
        arity = len(nested.ends)
    else:
        begin, end = nested.begins[0], nested.ends[0]
        indices = _share(begin, end, team_size, rank) if split else range(begin, end)
        points = ((i,) for i in indices)
        arity = 1
    if operation == "for":
        for point in points:
            body(*point)
        return None
    form, to_python = _nested_acc_form(body, arity, what)
    start = start_value(reducer, body, arity)
    acc = debug_cell(reducer, start)
    if operation == "reduce":
        for point in points:
            form(*point, acc[0], __pk_acc=acc)
        if not split:
            return to_python(acc[0])
        total = start
        for partial in team.exchange(rank, acc[0], _user_site()):
            total = reducer.combine(total, partial)
        return to_python(total)
    assert operation == "scan", operation
    if not split:
        for point in points:
            form(*point, acc[0], True, __pk_acc=acc)
        return to_python(acc[0])
    points = list(points)
    for point in points:
        form(*point, acc[0], False, __pk_acc=acc)
    partials = team.exchange(rank, acc[0], _user_site())
    prefix = to_python(0)
    for partial in partials[:rank]:
        prefix = prefix + partial
    total = prefix
    for partial in partials[rank:]:
        total = total + partial
    acc = debug_cell(reducer, start)
    acc[0] = prefix
    for point in points:
        form(*point, acc[0], True, __pk_acc=acc)
    return to_python(total)


_RANGE_NAMES = {
    "team_thread": "TeamThreadRange",
    "thread_vector": "ThreadVectorRange",
    "team_vector": "TeamVectorRange",
    "team_thread_md": "TeamThreadMDRange",
}


def _share(begin: int, end: int, team_size: int, rank: int) -> range:
    """Member ``rank``'s contiguous chunk of ``begin..end-1``: ``ceil(n / team_size)``
    indices each, the last members' chunks shorter or empty."""
    n = end - begin
    chunk = -(-n // team_size) if n > 0 else 0
    lo = begin + rank * chunk
    return range(lo, min(end, lo + chunk))


def _box_share(nested: NestedRange, team_size: int, rank: int) -> Iterable[tuple[int, ...]]:
    """Member ``rank``'s index tuples of a TeamThreadMDRange box: the box flattened in
    row-major order, split as :func:`_share` splits a range."""
    extents = [max(0, e - b) for b, e in zip(nested.begins, nested.ends, strict=True)]
    for flat in _share(0, math.prod(extents), team_size, rank):
        point = []
        for extent in reversed(extents):
            flat, index = divmod(flat, extent)
            point.append(index)
        yield tuple(b + i for b, i in zip(nested.begins, reversed(point), strict=True))


# -- Python forms of kernels ----------------------------------------------------------

# Nested defs of compiled forms, by their code object: a nested body's rewrite starts
# from the form's syntax tree (a workload method's form reads `self_a`, not `self.a`).
_nested_defs: dict[types.CodeType, ast.FunctionDef] = {}
_nested_forms: dict[tuple[types.CodeType, int], tuple[types.CodeType, type]] = {}


def _team_form(
    workunit: Callable[..., Any], operation: str, local_types: LocalTypes | None = None
) -> Callable[..., Any]:
    """The workunit as the Debug space runs it: ``s: pk.ScratchView1D[T] =
    pk.ScratchView1D(...)`` passes ``dtype=T`` to the constructor, stores into locals
    convert to ``local_types`` and, for reduce, the accumulator's stores also go to its cell
    (``pyexec.mirror_accumulator``)."""
    source = KernelSource.of(workunit)
    tree = copy.deepcopy(source.tree)
    _strip_annotations(tree)
    tree.body = [_ScratchElementType().visit(stmt) for stmt in tree.body]
    prepare_helpers(workunit)
    tree.body, cells = debug_rewrite(workunit, tree.body, local_types)
    if operation == "reduce":
        mirror_accumulator(tree, tree.args.args[1].arg)
    code = _compile_def(tree, source.filename, workunit.__code__, tuple(cells))
    return bind_like(code, workunit, cells)


def _nested_acc_form(
    body: Callable[..., Any], position: int, what: str
) -> tuple[Callable[..., Any], type]:
    """A nested reduce/scan body with its accumulator (the parameter after the
    ``position`` indices) also stored in its cell (``pyexec.mirror_accumulator``), bound
    to the body's closure; and
    the Python type of the accumulator."""
    code = getattr(body, "__code__", None)
    if code is None:
        raise DispatchError(f"{what} needs a Python function as its body, got {body!r}")
    key = (code, position)
    cached = _nested_forms.get(key)
    if cached is None:
        from .python_values import python_type

        node = _nested_defs.get(code)
        filename = code.co_filename
        if node is None:  # not defined in a team workunit: read its own source
            source = KernelSource.of(body)
            node, filename = source.tree, source.filename
            node = BareMathNames(bare_math_names(body)).visit(copy.deepcopy(node))
            prepare_helpers(body)
        if len(node.args.args) <= position:
            wanted = ", ".join([*"ijk"[:position], "acc"])
            raise DispatchError(
                f"{what}: the body {code.co_name} needs the accumulator after its "
                f"{'index' if position == 1 else 'indices'}, e.g. ({wanted}, ...)"
            )
        tree = copy.deepcopy(node)
        tree.decorator_list = []
        acc_name = tree.args.args[position].arg
        _strip_annotations(tree)
        mirror_accumulator(tree, acc_name)
        cached = _nested_forms[key] = (
            _compile_def(tree, filename, code),
            python_type(body, position),
        )
    return _bind(cached[0], body), cached[1]


def _strip_annotations(tree: ast.FunctionDef) -> None:
    """Parameter annotations (``pk.Acc[...]``) mean nothing to the rewritten copy."""
    args = tree.args
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if arg is not None:
            arg.annotation = None
    tree.returns = None


def _compile_def(
    tree: ast.FunctionDef, filename: str, original: types.CodeType, extra: tuple[str, ...] = ()
) -> types.CodeType:
    """:func:`compile_like`, remembering the defs nested in ``tree`` by code object."""
    code = compile_like(tree, filename, original, extra)
    _index_nested_defs(tree, code)
    return code


def _index_nested_defs(tree: ast.FunctionDef, code: types.CodeType) -> None:
    """Remember the syntax tree of every def nested in ``tree`` by its code object."""
    nodes = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node is not tree:
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            nodes[(node.name, first)] = node
    if not nodes:
        return
    stack = [code]
    while stack:
        for const in stack.pop().co_consts:
            if isinstance(const, types.CodeType):
                found = nodes.get((const.co_name, const.co_firstlineno))
                if found is not None:
                    _nested_defs[const] = found
                stack.append(const)


_bind = bind_like


_SCRATCH_VIEW = re.compile(r"ScratchView[1-9]D")


def _is_scratch_view(node: ast.AST) -> bool:
    name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
    return isinstance(name, str) and _SCRATCH_VIEW.fullmatch(name) is not None


class _ScratchElementType(ast.NodeTransformer):
    """``s: pk.ScratchView1D[T] = pk.ScratchView1D(...)`` -> ``... = pk.ScratchView1D(...,
    dtype=T)``: Python does not pass a local's annotation to the constructor."""

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        annotation = node.annotation
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = ast.parse(annotation.value.strip(), mode="eval").body
            except SyntaxError:
                return node
            for part in ast.walk(annotation):
                if "lineno" in part._attributes:
                    ast.copy_location(part, node.annotation)
        call = node.value
        if (
            isinstance(annotation, ast.Subscript)
            and _is_scratch_view(annotation.value)
            and isinstance(call, ast.Call)
            and _is_scratch_view(call.func)
            and not any(keyword.arg == "dtype" for keyword in call.keywords)
        ):
            element = copy.deepcopy(annotation.slice)
            if isinstance(element, ast.Name) and element.id in C_TYPE_NAMES:
                # a bare C type name (PyKokkos' `ScratchView1D[double]`): by its name
                element = ast.copy_location(ast.Constant(element.id), element)
            keyword = ast.copy_location(ast.keyword(arg="dtype", value=element), element)
            call.keywords.append(keyword)
        return node
