"""Draws from a random pool: ``pk.rand(T)`` in a workunit with a pool in reach.

A pool reaches a workunit as a keyword argument (a workload's field ``self.pool`` is
one: see ``translate.methods``); the kernel takes its launch key, a uint64 parameter
(``api.random_pools``). The workunit call's stream is computed once, at its start, from
the key and the call's indices (a team's league and team rank) into the hidden local
``pk_rand_stream``; each ``pk.rand(T)`` call site draws its n-th number from it, n kept
in a hidden local of its own (``pk_rand_n<site>``). So the numbers depend on what is
computed, never on the thread that computes it, or on the order C++ evaluates the
operands of one expression in.
"""

from __future__ import annotations

import ast
from typing import Any, TypeVar

from ..api import types as t
from ..api.random_pools import DRAWN_TYPES, PoolDraws
from ..api.types import DataType
from . import ir
from .lambdas import FORM_NAME as LAMBDA_FORM_NAME
from .lower_context import Lowerer

STREAM = "pk_rand_stream"
_Node = TypeVar("_Node", bound=ast.AST)
_POOL_FIX = (
    "Give the workunit a pool: a workload field `self.pool: pk.Random_XorShift64_Pool = "
    "pk.Random_XorShift64_Pool(seed, num_states)`, or a keyword argument "
    "(`pool=pk.Random_XorShift64_Pool(seed, num_states)` at the dispatch); or draw "
    "counter-based numbers with `pk.rand(seed, i)`."
)


class RandomLowerer(Lowerer):
    """The pool parameters of a workunit and its ``pk.rand(T)`` draws."""

    def pool_param(self, arg: ast.arg) -> ir.Param:
        """The parameter ``arg``, which receives a random pool: its launch key."""
        if arg.annotation is not None:
            ann = self.cx.signature.annotation(arg.annotation)
            if not isinstance(ann, ir.RandomPoolType):
                self.src.error(
                    arg,
                    f"{arg.arg!r} is annotated {ast.unparse(arg.annotation)} but receives a "
                    "random pool",
                    hint="Annotate it pk.Random_XorShift64_Pool (or leave it unannotated).",
                )
        self.cx.pools.append(arg.arg)
        return ir.Param(arg.arg, t.uint64)

    def draw(self, node: ast.Call) -> ir.Expr:
        """``pk.rand(T)``: the next number of type T from the workunit's pool."""
        cx = self.cx
        if len(node.args) != 1 or node.keywords:
            self.src.error(node, "pk.rand(T) takes one type, e.g. pk.rand(pk.double)")
        if cx.is_helper:
            self.src.error(
                node,
                "pk.rand(T) draws from the workunit's random pool, which a @pk.function "
                "does not have",
                hint="Draw in the workunit and pass the number to the function.",
            )
        if cx.nested_kinds:
            self.src.error(
                node,
                "pk.rand(T) in a nested parallel body is not supported: which thread runs "
                "which nested index differs between spaces",
                hint="Draw in the team workunit's own body, or use pk.rand(seed, counter) "
                "with the nested index in the counter.",
            )
        if not cx.pools:
            lam = "A lambda reaches no workload's pool: draw in a @pk.workunit method. "
            hint = (lam if self.src.tree.name == LAMBDA_FORM_NAME else "") + _POOL_FIX
            self.src.error(node, "pk.rand(T) needs a random pool, and none is in reach", hint=hint)
        if len(cx.pools) > 1:
            self.src.error(
                node,
                f"pk.rand(T) draws from the workunit's random pool, but it has "
                f"{len(cx.pools)} ({', '.join(cx.pools)})",
                hint="Pass one pool (as PyKokkos, which allows one per workload).",
            )
        dtype = cx.signature.annotation(node.args[0])
        if not isinstance(dtype, DataType) or dtype.name not in DRAWN_TYPES:
            self.src.error(
                node.args[0],
                f"pk.rand draws numbers of types {', '.join(DRAWN_TYPES)}, not "
                f"{ast.unparse(node.args[0])}",
            )
        position = (node.lineno, node.col_offset)
        site, _ = cx.draw_sites.setdefault(position, (len(cx.draw_sites), dtype.name))
        count = f"pk_rand_n{site}"
        cx.locals[count] = t.uint64  # 0 at the call's start, as every local
        return ir.RandomDraw(dtype, ir.Var(t.uint64, STREAM), site, ir.Var(t.uint64, count))

    def finish(self, fn: ir.Function) -> None:
        """Compute the call's stream at the start of a workunit that draws."""
        cx = self.cx
        if not cx.draw_sites:
            return
        pool = cx.pools[0]
        stream: ir.Expr = ir.Var(t.uint64, pool)
        indices: list[ir.Expr]
        python: tuple[str, ...]
        if cx.team_name is not None:
            team = cx.team_name
            indices = [ir.TeamQuery(t.int64, team, q) for q in ("league_rank", "team_rank")]
            python = (f"{team}.league_rank()", f"{team}.team_rank()")
        else:
            index_params = [p for p in fn.params if p.role == "index"]
            indices = [ir.Var(p.type, p.name) for p in index_params]  # type: ignore[arg-type]
            python = tuple(p.name for p in index_params)
        for index in indices:
            stream = ir.Call(t.uint64, "rand_stream", [stream, index])
        cx.locals[STREAM] = t.uint64
        fn.body.insert(0, ir.Assign(fn.lineno, ir.Var(t.uint64, STREAM), stream))
        fn.random_draws = ir.RandomDraws(pool, python, dict(cx.draw_sites))


# The Debug space's twin: the body's draws through api.random_pools.PoolDraws.
_DRAWS, _MAKER = "__pk_draws", "__pk_pool_draws"


def debug_draws(
    body: list[ast.stmt], draws: ir.RandomDraws
) -> tuple[list[ast.stmt], dict[str, Any]]:
    """``body`` (a copied workunit def's statements) drawing as the compiled kernel does:
    ``__pk_draws = PoolDraws(pool, index ...)`` first, each ``pk.rand(T)`` the translator
    numbered ``__pk_draws.draw(site, "T")``; and what the new statements read by name."""
    if not body:
        return body, {}

    class Draws(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            found = draws.sites.get((node.lineno, node.col_offset))
            if found is None or not isinstance(node.func, ast.Attribute):
                return node
            site, dtype = found
            draw = ast.Attribute(
                value=ast.Name(id=_DRAWS, ctx=ast.Load()), attr="draw", ctx=ast.Load()
            )
            call = ast.Call(func=draw, args=[ast.Constant(site), ast.Constant(dtype)], keywords=[])
            return _located(call, node)

    body = [Draws().visit(stmt) for stmt in body]
    indices = [ast.parse(text, mode="eval").body for text in draws.indices]
    maker = ast.Call(
        func=ast.Name(id=_MAKER, ctx=ast.Load()),
        args=[ast.Name(id=draws.pool, ctx=ast.Load()), *indices],
        keywords=[],
    )
    start = ast.Assign(targets=[ast.Name(id=_DRAWS, ctx=ast.Store())], value=maker)
    return [_located(start, body[0]), *body], {_MAKER: PoolDraws}


def _located(tree: _Node, like: ast.AST) -> _Node:
    for part in ast.walk(tree):
        ast.copy_location(part, like)
    return tree
