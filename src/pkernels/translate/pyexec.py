"""The ``Debug`` space: a workunit run as plain Python, one call per index.

Python cannot pass a float by reference, so for reduce and scan the accumulator is
rewritten to a one-element list (``acc`` -> ``acc[0]``) in a copy of the function,
compiled with the original file name and line numbers (tracebacks and pdb point at
the user's source).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from .source import KernelSource


class _AccumulatorToCell(ast.NodeTransformer):
    def __init__(self, name: str) -> None:
        self.name = name

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id != self.name:
            return node
        cell = ast.Subscript(
            value=ast.Name(id=self.name, ctx=ast.Load()), slice=ast.Constant(0), ctx=node.ctx
        )
        return ast.copy_location(cell, node)


def accumulator_form(func: Callable[..., Any], position: int = 1) -> Callable[..., Any]:
    """``func`` with its accumulator (the parameter at ``position``: the second, or the
    one after an MDRangePolicy's indices) taken as a 1-element list."""
    source = KernelSource.of(func)
    tree = source.tree
    acc_name = tree.args.args[position].arg
    new_tree = ast.FunctionDef(
        name=tree.name,
        args=tree.args,
        body=[_AccumulatorToCell(acc_name).visit(stmt) for stmt in tree.body],
        decorator_list=[],
        returns=None,
        type_params=[],
    )
    ast.copy_location(new_tree, tree)
    for arg in tree.args.args:
        arg.annotation = None  # pk.Acc[...] etc. mean nothing to plain Python
    module = ast.fix_missing_locations(ast.Module(body=[new_tree], type_ignores=[]))
    code = compile(module, source.filename, "exec")
    namespace: dict[str, Any] = {}
    exec(code, func.__globals__, namespace)
    return namespace[tree.name]
