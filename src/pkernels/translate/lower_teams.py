"""Lowering of TeamPolicy workunits: the team member, nested parallel bodies, scratch views.

A feature lowerer of :class:`~pkernels.translate.lower.FunctionLowerer` (see
:mod:`~pkernels.translate.lower_context`). A nested ``def`` is not
translated where it is defined but where a ``pk.parallel_*`` over a team range or a
``pk.single`` uses it, inlined into a block of its own: its parameters and the names it
assigns are that block's locals (shadowing the workunit's, as Python's scoping does),
everything else it reads is the workunit's, and its ``return`` ends one iteration. One
frame for the whole team body keeps every variable visible to a debugger.

Barriers (``team_barrier()``, and the nested reductions and scans over team-split ranges,
which synchronise the team) must be reached by every thread of the team. A barrier in a
branch or loop whose condition depends on ``team_rank()`` is refused here; the rest is
caught at run time (see ``TEAM_PRELUDE``).
"""

from __future__ import annotations

import ast
from typing import Any, cast

from ..api import types as t
from ..api.teams import ScratchAnnotation, TeamMember
from ..api.types import AccAnnotation, DataType
from . import ir
from .ir import Expr
from .lower_context import Lowerer

TEAM_QUERIES = ("league_rank", "league_size", "team_rank", "team_size")
NESTED_RANGES = {
    "TeamThreadRange": "team_thread",
    "TeamVectorRange": "team_vector",
    "ThreadVectorRange": "thread_vector",
    "TeamThreadMDRange": "team_thread_md",
}
# Ranges whose indices are split among the team's threads: their reductions and scans
# combine the threads' partials, a collective every thread must reach.
_TEAM_SPLIT = ("team_thread", "team_vector", "team_thread_md")
_NESTED_HINT = (
    "Inside a team workunit, define the body as a nested def and pass its name: "
    "`pk.parallel_for(pk.TeamThreadRange(team_member, n), body)`."
)


class TeamLowerer(Lowerer):
    """The team-kernel lowerer (see the module docstring)."""

    # ------------------------------------------------------------ the team member

    def _is_team(self, node: ast.expr) -> bool:
        return (
            self.cx.team_name is not None
            and isinstance(node, ast.Name)
            and node.id == self.cx.team_name
        )

    def team_method(self, node: ast.Call) -> Expr | None:
        """``team_member.league_rank()`` & co. as an expression, or None if ``node`` is no
        call on the team member."""
        func = node.func
        if not (isinstance(func, ast.Attribute) and self._is_team(func.value)):
            return None
        assert self.cx.team_name is not None
        if func.attr in TEAM_QUERIES:
            if node.args:
                self.src.error(node, f"{func.attr}() takes no arguments")
            return ir.TeamQuery(t.int64, self.cx.team_name, func.attr)
        if func.attr == "team_barrier":
            self.src.error(node, "team_barrier() is a statement; call it on its own line")
        if func.attr in ("team_scratch", "thread_scratch"):
            self.src.error(
                node,
                f"{func.attr}() is only the first argument of a scratch view",
                hint=f"Write `s: pk.ScratchView1D[pk.double] = "
                f"pk.ScratchView1D({self.cx.team_name}.{func.attr}(0), n)`.",
            )
        self.src.error(
            node,
            f"the team member has no method {func.attr!r}",
            hint="It has league_rank(), league_size(), team_rank(), team_size(), "
            "team_barrier(), team_scratch(level) and thread_scratch(level).",
        )

    def team_statement(self, call: ast.Call) -> ir.Stmt | None:
        """A call statement about teams (a barrier, a nested parallel_*, pk.single), or
        None for any other call."""
        func = call.func
        if isinstance(func, ast.Attribute) and self._is_team(func.value):
            if func.attr == "team_barrier":
                if call.args:
                    self.src.error(call, "team_barrier() takes no arguments")
                self._check_collective(call, "team_barrier()")
                assert self.cx.team_name is not None
                return ir.TeamBarrier(call.lineno, self.cx.team_name)
            return None
        for op in ("for", "reduce", "scan"):
            if self.cx.exprs.is_pk_attr(func, f"parallel_{op}"):  # type: ignore[attr-defined]
                return self.nested_parallel(call, op, None)
        if self.cx.exprs.is_pk_attr(func, "single"):  # type: ignore[attr-defined]
            return self._single(call)
        return None

    def _check_collective(self, node: ast.AST, what: str, rank_conditions: bool = True) -> None:
        """Refuse a collective (every thread of the team must reach it) where some threads
        may not: in a nested body, or (``rank_conditions``) under a condition on
        ``team_rank()``. A nested reduce under such a condition is left to the run-time
        check, as PyKokkos runs it: with teams of one thread (pk.AUTO on the CPU) every
        thread reaches it; with more, the threads that skip it make the launch raise
        KernelTeamError, naming where each waits."""
        if self.cx.nested_kinds:
            inner = self.cx.nested_kinds[-1]
            where = "pk.single body" if inner == "single" else "nested parallel body"
            self.src.error(
                node,
                f"{what} inside a {where}: not every thread of the team runs it, so the "
                "team would wait forever",
                hint="Call it in the workunit itself, after the nested parallel_* or pk.single.",
            )
        for cond in self.cx.conditions if rank_conditions else ():
            if self._rank_dependent(cond):
                self.src.error(
                    node,
                    f"{what} under a condition on team_rank(): the threads that skip it "
                    "leave the others waiting forever",
                    hint="Move it out of the branch (every thread of the team must reach "
                    "each barrier), e.g. right after the `if`.",
                )

    def _rank_dependent(self, e: Expr) -> bool:
        return any(
            (isinstance(sub, ir.TeamQuery) and sub.what == "team_rank")
            or (isinstance(sub, ir.Var) and sub.name in self.cx.rank_dependent)
            for sub in ir.subexpressions(e)
        )

    def note_assignment(self, name: str, value: Expr) -> None:
        if self.cx.team_name is not None and self._rank_dependent(value):
            self.cx.rank_dependent.add(name)

    # ------------------------------------------------------------ scratch views

    def scratch_alloc(
        self, node: ast.stmt, target: ast.expr, value: ast.expr, ann: ScratchAnnotation | None
    ) -> ir.Stmt:
        if not isinstance(target, ast.Name):
            self.src.error(target, "assign a scratch view to a local name")
        if not (isinstance(value, ast.Call) and self.scratch_ctor_rank(value)):
            self.src.error(
                value,
                "a ScratchView local needs a scratch view as its value",
                hint="Write `s: pk.ScratchView1D[pk.double] = "
                "pk.ScratchView1D(team_member.team_scratch(0), n)`.",
            )
        assert isinstance(value, ast.Call)
        rank = self.scratch_ctor_rank(value)
        if ann is not None and ann.rank != rank:
            self.src.error(
                value, f"annotated ScratchView{ann.rank}D but built as ScratchView{rank}D"
            )
        if self.cx.outer_scopes:
            self.src.error(
                node,
                "scratch views are allocated by the workunit itself, not in a nested body",
                hint="Allocate it before the nested parallel_* and use it inside.",
            )
        if value.keywords or len(value.args) not in (1, 1 + rank):
            self.src.error(
                value, f"ScratchView{rank}D takes (team_member.team_scratch(level), {rank} extents)"
            )
        where = value.args[0]
        if not (
            isinstance(where, ast.Call)
            and isinstance(where.func, ast.Attribute)
            and self._is_team(where.func.value)
            and where.func.attr in ("team_scratch", "thread_scratch")
            and len(where.args) == 1
            and isinstance(where.args[0], ast.Constant)
            and where.args[0].value in (0, 1)
        ):
            self.src.error(
                where,
                "the first argument must be team_member.team_scratch(level) or "
                "team_member.thread_scratch(level), with level 0 or 1",
            )
        extents = [self.cx.exprs.expr(a) for a in value.args[1:]]  # type: ignore[attr-defined]
        for extent, arg in zip(extents, value.args[1:], strict=True):
            if not extent.type.is_integer:
                self.src.error(arg, f"a scratch extent must be an integer, this is {extent.type}")
        if not extents:  # PyKokkos' ScratchView1D(team_member.team_scratch(0)): extent 0
            extents = [ir.Const(t.int64, 0)] * rank
        name = target.id
        if name in self.cx.params or name in self.cx.locals:
            self.src.error(target, f"{name!r} is already a variable; a scratch view needs a name")
        dtype = ann.dtype if ann is not None else t.float64
        view = ir.ViewType(dtype, rank, ir.ViewLayout.LAST_UNIT)
        known = self.cx.views.get(name)
        if known is not None and known != view:
            self.src.error(target, f"{name!r} is already a scratch view of another type")
        self.cx.views[name] = view
        assert self.cx.function is not None and self.cx.team_name is not None
        self.cx.function.scratch_views[name] = view
        return ir.ScratchAlloc(
            node.lineno,
            name,
            view,
            self.cx.team_name,
            cast(int, where.args[0].value),
            where.func.attr == "thread_scratch",
            extents,
        )

    def scratch_ctor_rank(self, call: ast.Call) -> int:
        for rank in range(1, 9):
            if self.cx.exprs.is_pk_attr(call.func, f"ScratchView{rank}D"):  # type: ignore[attr-defined]
                return rank
        return 0

    # ------------------------------------------------------------ nested bodies

    def _nested_reducer(self, node: ast.expr) -> Any:
        """The reducer a nested ``pk.parallel_reduce(..., reducer=pk.Max)`` names (a
        module-level name for one works too); one to several values is refused."""
        from ..api.reducers import REDUCERS, Reducer

        value: Any = None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            module = self.src.lookup(node.value.id)
            value = getattr(module, node.attr, None) if module is not None else None
        elif isinstance(node, ast.Name):
            value = self.src.lookup(node.id)
        scalar = [r for r in REDUCERS if not r.parts]
        names = ", ".join(repr(r) for r in scalar)
        if not isinstance(value, Reducer):
            self.src.error(node, f"reducer= of a nested parallel_reduce takes one of {names}")
        if value.parts:
            self.src.error(
                node,
                f"{value!r} reduces several values: it is for a whole dispatch, not a nested range",
                hint=f"A nested reduce takes one of {names}; reduce the locations over the "
                f"TeamPolicy itself (`pk.parallel_reduce(policy, workunit, reducer={value!r})`).",
            )
        return value

    def nested_parallel(
        self,
        call: ast.Call,
        operation: str,
        result: tuple[ast.Name | ast.Subscript, DataType | None] | None,
    ) -> ir.Stmt:
        """``pk.parallel_<operation>(pk.<Range>(team_member, ...), body)``, its total (for
        reduce and scan) assigned to ``result`` (the target name and its declared type)."""
        if self.cx.team_name is None:
            self.src.error(
                call,
                f"pk.parallel_{operation} inside a kernel needs a team range",
                hint="Nested parallelism is for TeamPolicy workunits "
                "(`def k(team_member: pk.TeamMember, ...)`).",
            )
        args = list(call.args)
        if args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
            args = args[1:]  # a label
        keywords = list(call.keywords)
        reducer_node = next((k.value for k in keywords if k.arg == "reducer"), None)
        reducer = None
        if reducer_node is not None and operation == "reduce":
            keywords = [k for k in keywords if k.arg != "reducer"]
            reducer = self._nested_reducer(reducer_node)
        if keywords or len(args) != 2:
            self.src.error(
                call,
                f"a nested pk.parallel_{operation} takes (range, body)",
                hint=_NESTED_HINT,
            )
        range_node, body_node = args
        kind, begins, ends = self._nested_range(range_node, operation)
        if kind in _TEAM_SPLIT:
            for k in self.cx.nested_kinds:
                if k in _TEAM_SPLIT:
                    self.src.error(
                        range_node,
                        "a team-split range inside another one: each thread already runs "
                        "its own share of the outer range",
                        hint="Nest a pk.ThreadVectorRange inside a TeamThreadRange body.",
                    )
            if operation != "for":
                what = f"pk.parallel_{operation} over a {kind} range"
                self._check_collective(call, what, rank_conditions=False)
        fn = self._nested_def(body_node)
        rank = len(begins)
        wanted = rank + {"for": 0, "reduce": 1, "scan": 2}[operation]
        names = [a.arg for a in fn.args.args]
        if (
            len(names) != wanted
            or fn.args.vararg
            or fn.args.kwarg
            or fn.args.kwonlyargs
            or fn.args.defaults
        ):
            shape = ", ".join(["i", "j", "k"][:rank] + ["acc", "last_pass"][: wanted - rank])
            self.src.error(
                fn,
                f"{fn.name}() is the body of a nested parallel_{operation} over a "
                f"{kind} range: it takes ({shape})",
            )
        self.cx.counter += 1
        label = f"pk_next{self.cx.counter}"
        scope = self._enter_nested(kind, label)
        indices = []
        for arg in fn.args.args[:rank]:
            ann = self.cx.signature.annotation(arg.annotation) if arg.annotation else t.int64  # type: ignore[attr-defined]
            if not isinstance(ann, DataType) or not ann.is_integer:
                self.src.error(arg, "the index of a nested body must be an integer")
            indices.append(self._nested_param(arg.arg, ann))
        acc = last_pass = None
        if operation != "for":
            acc_arg = fn.args.args[rank]
            acc_type: Any = t.float64
            if acc_arg.annotation is not None:
                acc_type = self.cx.signature.annotation(acc_arg.annotation)  # type: ignore[attr-defined]
                if isinstance(acc_type, AccAnnotation):
                    acc_type = acc_type.dtype
                if not isinstance(acc_type, DataType):
                    self.src.error(acc_arg, "the accumulator must be annotated pk.Acc[T]")
            if reducer is not None:
                try:
                    reducer.check(acc_type)
                except TypeError as exc:
                    self.src.error(acc_arg, str(exc))
            acc = self._nested_param(acc_arg.arg, acc_type)
            self.cx.accumulators.add(acc_arg.arg)
        if operation == "scan":
            last_pass = self._nested_param(fn.args.args[rank + 1].arg, t.bool_)
        body = self.cx.stmts.block(fn.body)  # type: ignore[attr-defined]
        inner_locals = self._leave_nested(scope)
        for var in [*indices, acc, last_pass]:
            if var is not None:
                inner_locals.pop(var.name, None)
        stmt = ir.NestedParallel(
            call.lineno,
            kind,
            operation,
            self.cx.team_name,
            begins,
            ends,
            indices,
            acc,
            last_pass,
            inner_locals,
            body,
            label,
            fn.lineno,
            fn.end_lineno or fn.lineno,
            reducer=reducer,
        )
        if result is not None:
            assert acc is not None
            target, declared = result
            if isinstance(target, ast.Subscript):
                if declared is not None:
                    self.src.error(target, "a view element cannot be annotated")
                access = self.cx.exprs.subscript(target)  # type: ignore[attr-defined]
                self.cx.stmts.written(access)  # type: ignore[attr-defined]
                stmt.result = access
            else:
                stmt.result = self.cx.stmts.bind(target, ir.Var(acc.type, "_"), declared)  # type: ignore[attr-defined]
        return stmt

    def _nested_range(self, node: ast.expr, operation: str) -> tuple[str, list[Expr], list[Expr]]:
        kind = None
        if isinstance(node, ast.Call):
            for name, k in NESTED_RANGES.items():
                if self.cx.exprs.is_pk_attr(node.func, name):  # type: ignore[attr-defined]
                    kind = k
        if kind is None:
            self.src.error(
                node,
                "a nested parallel_* runs over pk.TeamThreadRange, pk.ThreadVectorRange, "
                "pk.TeamVectorRange or pk.TeamThreadMDRange",
                hint=_NESTED_HINT,
            )
        assert isinstance(node, ast.Call)
        if node.keywords or not node.args or not self._is_team(node.args[0]):
            self.src.error(
                node, f"the range needs the team member first: ({self.cx.team_name}, ...)"
            )
        bounds = [self.cx.exprs.expr(a) for a in node.args[1:]]  # type: ignore[attr-defined]
        for bound, arg in zip(bounds, node.args[1:], strict=True):
            if not (bound.type.is_integer or bound.type == t.bool_):
                self.src.error(arg, f"range bounds must be integers, this is {bound.type}")
        zero = ir.Const(t.int64, 0)
        if kind == "team_thread_md":
            if not 2 <= len(bounds) <= 3:
                self.src.error(node, "pk.TeamThreadMDRange takes (team_member, n0, n1[, n2])")
            if operation == "scan":
                self.src.error(node, "parallel_scan over a TeamThreadMDRange is not supported")
            return kind, [zero] * len(bounds), bounds
        if len(bounds) == 1:
            return kind, [zero], bounds
        if len(bounds) == 2:
            return kind, [bounds[0]], [bounds[1]]
        self.src.error(node, "the range takes (team_member, count) or (team_member, begin, end)")

    def _nested_def(self, node: ast.expr) -> ast.FunctionDef:
        if isinstance(node, ast.Lambda):
            self.src.error(node, "the body must be a nested def, not a lambda", hint=_NESTED_HINT)
        if not isinstance(node, ast.Name) or node.id not in self.cx.nested_defs:
            self.src.error(
                node,
                "the body must be a def nested in this workunit, defined above this call",
                hint=_NESTED_HINT,
            )
        return self.cx.nested_defs[node.id]

    def _single(self, call: ast.Call) -> ir.Stmt:
        if self.cx.team_name is None:
            self.src.error(call, "pk.single is for TeamPolicy workunits")
        if call.keywords or len(call.args) != 2:
            self.src.error(call, "pk.single takes (pk.PerTeam(team_member), body)")
        scope_node, body_node = call.args
        per_team = None
        if isinstance(scope_node, ast.Call) and len(scope_node.args) == 1:
            if self.cx.exprs.is_pk_attr(scope_node.func, "PerTeam"):  # type: ignore[attr-defined]
                per_team = True
            elif self.cx.exprs.is_pk_attr(scope_node.func, "PerThread"):  # type: ignore[attr-defined]
                per_team = False
        if per_team is None or not self._is_team(scope_node.args[0]):  # type: ignore[attr-defined]
            self.src.error(
                scope_node, f"pk.single takes pk.PerTeam({self.cx.team_name}) or "
                f"pk.PerThread({self.cx.team_name}) first"
            )  # fmt: skip
        fn = self._nested_def(body_node)
        if fn.args.args or fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs:
            self.src.error(fn, f"{fn.name}() is the body of pk.single: it takes no parameters")
        self.cx.counter += 1
        label = f"pk_next{self.cx.counter}"
        scope = self._enter_nested("single", label)
        body = self.cx.stmts.block(fn.body)  # type: ignore[attr-defined]
        inner_locals = self._leave_nested(scope)
        assert self.cx.team_name is not None
        return ir.Single(
            call.lineno,
            self.cx.team_name,
            bool(per_team),
            inner_locals,
            body,
            label,
            fn.end_lineno or fn.lineno,
        )

    def _enter_nested(self, kind: str, label: str) -> tuple[Any, ...]:
        saved = (
            self.cx.locals,
            self.cx.declared,
            self.cx.first_assign_line,
            self.cx.loop_depth,
            self.cx.nonlocal_names,
            dict(self.cx.subviews),  # a subview made in the body is the body's
            set(self.cx.accumulators),
        )
        self.cx.outer_scopes.append(self.cx.locals)
        self.cx.outer_declared.append(self.cx.declared)
        self.cx.locals, self.cx.declared, self.cx.first_assign_line = {}, set(), {}
        self.cx.nonlocal_names = set()
        self.cx.loop_depth = 0  # `break` in the body needs a loop of the body
        self.cx.nested_kinds.append(kind)
        self.cx.return_labels.append(label)
        return saved

    def _leave_nested(self, saved: tuple[Any, ...]) -> dict[str, DataType]:
        inner = self.cx.locals
        (
            self.cx.locals,
            self.cx.declared,
            self.cx.first_assign_line,
            self.cx.loop_depth,
            self.cx.nonlocal_names,
            self.cx.subviews,
            self.cx.accumulators,
        ) = saved
        self.cx.outer_scopes.pop()
        self.cx.outer_declared.pop()
        self.cx.nested_kinds.pop()
        self.cx.return_labels.pop()
        return inner

    def _nested_param(self, name: str, dtype: DataType) -> ir.Var:
        if name in self.cx.views:
            self.src.error(self.src.tree, f"{name!r} names a view; pick another parameter name")
        self.cx.locals[name] = dtype
        self.cx.declared.add(name)
        return ir.Var(dtype, name)

    def nonlocal_statement(self, node: ast.Nonlocal) -> None:
        """``nonlocal x`` in a nested body: its assignments to ``x`` then write the
        enclosing function's ``x`` (the body is inlined in the same C++ frame)."""
        if not self.cx.outer_scopes:
            self.src.error(
                node,
                "nonlocal in a kernel names a variable of the workunit, from a nested def",
                hint="Pass the value as a keyword argument of the dispatch.",
            )
        for name in node.names:
            if name in self.cx.views:
                self.src.error(node, f"{name!r} is a view: write its elements, `{name}[i] = ...`")
            if name == self.cx.team_name:
                self.src.error(node, f"cannot rebind the team member {name!r}")
            if self.outer_name(name) is None and name not in self.cx.params:
                # Python found it in a function around the workunit: not kernel data.
                self.src.error(
                    node,
                    f"nonlocal {name!r} names a variable outside the workunit",
                    hint="Pass the value as a keyword argument of the dispatch.",
                )
            self.cx.nonlocal_names.add(name)

    def is_outer_declared(self, name: str) -> bool:
        """Whether the enclosing variable ``name`` was declared with a type annotation."""
        for scope, declared in zip(
            reversed(self.cx.outer_scopes), reversed(self.cx.outer_declared), strict=True
        ):
            if name in scope:
                return name in declared
        return name in self.cx.params

    def outer_name(self, name: str) -> DataType | None:
        """The type of ``name`` in an enclosing function's locals, when in a nested body."""
        for scope in reversed(self.cx.outer_scopes):
            if name in scope:
                return scope[name]
        return None


def is_team_annotation(value: object) -> bool:
    return value is TeamMember
