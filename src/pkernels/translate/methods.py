"""Workunits that are methods of a ``@pk.workload`` class, as plain kernels.

``self.a[i]`` in a method kernel reads the object's field ``a``. The method is rewritten
once into a plain function whose ``self`` parameter is gone and whose fields are extra
parameters (``self.a`` -> ``self_a``), compiled with the original file name and line
numbers: the translator, the Debug space and debuggers see an ordinary workunit, and
each dispatch passes the object's current fields as those parameters.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from typing import Any

from .source import KernelSource

_forms: dict[Any, Callable[..., Any]] = {}


class _FieldsToParameters(ast.NodeTransformer):
    def __init__(self, source: KernelSource, self_name: str) -> None:
        self.source = source
        self.self_name = self_name
        self.fields: list[str] = []

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if not (isinstance(node.value, ast.Name) and node.value.id == self.self_name):
            return self.generic_visit(node)
        if isinstance(node.ctx, ast.Store | ast.Del):
            self.source.error(
                node,
                f"a kernel cannot assign the field {self.self_name}.{node.attr}",
                hint="Write into a view field (self.v[i] = ...), or return a total with "
                "parallel_reduce and assign it in the @pk.main method.",
            )
        if node.attr not in self.fields:
            self.fields.append(node.attr)
        name = ast.Name(id=f"{self.self_name}_{node.attr}", ctx=node.ctx)
        return ast.copy_location(name, node)


def method_form(method: Any) -> tuple[Callable[..., Any], dict[str, Any]]:
    """The plain kernel of a bound workload method, and the field arguments it takes now."""
    func, obj = method.__func__, method.__self__
    form = _forms.get(func)
    if form is None:
        form = _forms[func] = _build(func)
    fields = {
        f"{form.__pkernels_self__}_{name}": getattr(obj, name) for name in form.__pkernels_fields__
    }
    return form, fields


def _build(func: Callable[..., Any]) -> Callable[..., Any]:
    source = KernelSource.of(func)
    tree = copy.deepcopy(source.tree)
    if not tree.args.args:
        source.error(tree, "a workload kernel method needs its `self` parameter")
    self_name = tree.args.args[0].arg
    rewriter = _FieldsToParameters(source, self_name)
    tree.body = [rewriter.visit(stmt) for stmt in tree.body]
    tree.args.args = tree.args.args[1:] + [
        ast.copy_location(ast.arg(arg=f"{self_name}_{name}"), tree) for name in rewriter.fields
    ]
    tree.decorator_list = []
    module = ast.fix_missing_locations(ast.Module(body=[tree], type_ignores=[]))
    namespace: dict[str, Any] = {}
    exec(compile(module, source.filename, "exec"), func.__globals__, namespace)
    form = namespace[tree.name]
    form.__qualname__ = func.__qualname__
    form.__pkernels__ = func.__pkernels__  # one memo of builds per method
    form.__pkernels_source__ = KernelSource(form, source.filename, tree, source.indent)
    form.__pkernels_self__ = self_name
    form.__pkernels_fields__ = tuple(rewriter.fields)
    return form
