"""``@pk.main`` reading the workload's fields without ``self.``, as PyKokkos allows.

PyKokkos compiles a ``@pk.main`` method to C++, where the object's fields are in scope:
``t: int = tile_size`` reads ``self.tile_size``. pkernels runs the method as Python, so
such a name would be a NameError. Only those names are changed: a name the method reads
that is none of its own (parameters, assignments, imports, ...), no global of its module
and no builtin, but a field of the object, is read as ``self.<name>`` in a copy of the
method compiled with its file name and line numbers. So is a bare call of C's ``printf``,
which PyKokkos' C++ has in scope: it calls ``pk.printf``. Everything Python resolves
itself (locals, globals, builtins, ``global`` writes) is untouched.
"""

from __future__ import annotations

import ast
import builtins
import copy
import types
from typing import Any

from ..errors import TranslationError
from .pycode import module_attribute, nested_code
from .source import KernelSource

# C functions a PyKokkos main calls bare (its C++ has them in scope; gups.py's
# `printf("...\n")`): the pkernels function of the same meaning.
C_FUNCTIONS = {"printf": "printf"}

_copies: dict[tuple[types.FunctionType, frozenset[str], frozenset[str]], types.FunctionType] = {}
# The lambdas of those copies: id(code) -> (code, the method's self name, names read as
# fields). A lambda dispatch reads its source again (see translate.lambdas) and needs them.
_lambda_fields: dict[int, tuple[types.CodeType, str, frozenset[str]]] = {}


def fields_read_bare(code: types.CodeType) -> tuple[str, frozenset[str]] | None:
    """For a lambda of a ``@pk.main`` copy: its method's self name and the names it reads
    as that object's fields; None for any other code."""
    found = _lambda_fields.get(id(code))
    return (found[1], found[2]) if found is not None and found[0] is code else None


def with_bare_fields(func: types.FunctionType, obj: Any) -> types.FunctionType:
    """``func`` (a ``@pk.main`` method's function), or a copy of it that reads the names
    Python could not resolve but ``obj`` has as fields through its ``self``."""
    fields = getattr(obj, "__dict__", None)
    if not fields or func.__code__.co_freevars:
        return func
    try:
        source = KernelSource.of(func)
    except TranslationError:
        return func  # no source to read: it runs as it is
    tree = source.tree
    if not tree.args.args:
        return func
    bound = _bound_names(tree)
    missing = {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name)
        and isinstance(node.ctx, ast.Load)
        and node.id not in bound
        and node.id not in func.__globals__
        and not hasattr(builtins, node.id)
        and (node.id in fields or node.id in C_FUNCTIONS)
    }
    if not missing:
        return func
    fields_read = {name for name in missing if name in fields}
    key = (func, frozenset(missing), frozenset(fields_read))
    found = _copies.get(key)
    if found is None:
        found = _copies[key] = _compile(func, source, missing, fields_read)
    return found


def _compile(
    func: types.FunctionType, source: KernelSource, missing: set[str], fields_read: set[str]
) -> types.FunctionType:
    """A copy of ``func`` reading the ``missing`` names: those in ``fields_read`` as
    fields of its ``self``, the others as the pkernels functions ``C_FUNCTIONS`` names."""
    tree = copy.deepcopy(source.tree)
    me = tree.args.args[0].arg

    class ToField(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id not in missing or not isinstance(node.ctx, ast.Load):
                return node
            if node.id not in fields_read:
                return module_attribute("pkernels", [C_FUNCTIONS[node.id]], node)
            owner = ast.copy_location(ast.Name(id=me, ctx=ast.Load()), node)
            return ast.copy_location(ast.Attribute(value=owner, attr=node.id, ctx=node.ctx), node)

    tree = ToField().visit(tree)
    module = ast.fix_missing_locations(ast.Module(body=[tree], type_ignores=[]))
    compiled = compile(module, source.filename, "exec")
    # The function is made from its code object: the module's `def` never runs (a
    # debugger's breakpoint on that line must not stop there).
    code = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    for inner in nested_code(code):
        if inner.co_name == "<lambda>":
            _lambda_fields[id(inner)] = (inner, me, frozenset(fields_read))
    copied = types.FunctionType(code, func.__globals__, func.__name__, func.__defaults__)
    copied.__kwdefaults__ = func.__kwdefaults__
    copied.__qualname__ = func.__qualname__
    return copied


def _bound_names(tree: ast.FunctionDef) -> set[str]:
    """Every name the method (or a function, lambda or comprehension in it) binds: none of
    them is read as a field."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound
