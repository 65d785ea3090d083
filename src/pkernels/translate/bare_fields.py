"""Bare field names in workload and functor workunits: ``A[j]`` for ``self.A[j]``.

PyKokkos compiles a workload's (or functor's) methods into a C++ class whose members are
the object's fields, so a method's body may name a field without ``self.``, as C++
resolves members. Here a name that the method never binds (no parameter, assignment,
loop variable or nested ``def`` of that name), that its module does not define and that
is no builtin is the object's field when the object has that attribute: the method is
read as if it were written ``self.<name>``.
"""

from __future__ import annotations

import ast
import builtins
import copy
from typing import Any


def bound_names(tree: ast.FunctionDef) -> set[str]:
    """Every name ``tree`` binds anywhere (its nested bodies' too)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update(node.names)
    return bound


def bare_fields(tree: ast.FunctionDef, module_globals: dict[str, Any], obj: Any) -> set[str]:
    """The names ``tree`` reads bare that mean a field of ``obj``."""
    bound = bound_names(tree)
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Name) or not isinstance(node.ctx, ast.Load):
            continue
        name = node.id
        if name in bound or name in found or name in module_globals or hasattr(builtins, name):
            continue
        if name in getattr(obj, "__dict__", {}) or hasattr(type(obj), name):
            found.add(name)
    return found


class _ToSelf(ast.NodeTransformer):
    def __init__(self, self_name: str, fields: set[str]) -> None:
        self.self_name, self.fields = self_name, fields

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id not in self.fields or not isinstance(node.ctx, ast.Load):
            return node
        owner = ast.copy_location(ast.Name(id=self.self_name, ctx=ast.Load()), node)
        return ast.copy_location(ast.Attribute(value=owner, attr=node.id, ctx=ast.Load()), node)


def with_self_fields(
    tree: ast.FunctionDef, self_name: str, module_globals: dict[str, Any], obj: Any
) -> ast.FunctionDef:
    """``tree`` (copied when it changes) with each bare field name of ``obj`` read as
    ``<self_name>.<name>``."""
    fields = bare_fields(tree, module_globals, obj) if obj is not None else set()
    if not fields:
        return tree
    tree = copy.deepcopy(tree)
    tree.body = [_ToSelf(self_name, fields).visit(stmt) for stmt in tree.body]
    return tree
