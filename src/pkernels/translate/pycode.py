"""Python functions made from rewritten syntax trees, for the Debug space's forms of
kernels, closure forms and ``@pk.main`` copies: compiled with the original's file name,
line numbers and free variables, never by running a ``def`` (a debugger's breakpoint on
its line must not stop there).
"""

from __future__ import annotations
import __future__

import ast
import copy
import types
from collections.abc import Callable
from typing import Any

_FUTURE_FLAGS = __future__.annotations.compiler_flag


def compile_like(
    tree: ast.FunctionDef,
    filename: str,
    original: types.CodeType,
    extra: tuple[str, ...] = (),
) -> types.CodeType:
    """Compile the def ``tree`` (with the file name and line numbers it has) into a code
    object whose free variables are named as ``original``'s, plus the names ``extra`` the
    rewritten tree reads (cells :func:`bind_like` fills): a nested def is compiled inside
    a generated function that has them as parameters. Nothing is run (no ``def``
    executes, so a debugger's breakpoint on the def line does not stop)."""
    freevars = original.co_freevars + tuple(n for n in extra if n not in original.co_freevars)
    node: ast.stmt = tree
    if freevars:
        outer = ast.FunctionDef(
            name="__pkernels_closure__",
            args=ast.arguments(
                posonlyargs=[],
                args=[ast.arg(arg=name) for name in freevars],
                vararg=None,
                kwonlyargs=[],
                kw_defaults=[],
                kwarg=None,
                defaults=[],
            ),
            body=[tree, ast.Return(value=None)],
            decorator_list=[],
            returns=None,
        )
        node = ast.copy_location(outer, tree)
    module = ast.fix_missing_locations(ast.Module(body=[node], type_ignores=[]))
    flags = original.co_flags & _FUTURE_FLAGS
    module_code = compile(module, filename, "exec", flags=flags, dont_inherit=True)
    code = _code_named(module_code, "__pkernels_closure__") if freevars else module_code
    code = _code_named(code, tree.name)
    return code.replace(co_qualname=original.co_qualname)


def _code_named(code: types.CodeType, name: str) -> types.CodeType:
    for const in code.co_consts:
        if isinstance(const, types.CodeType) and const.co_name == name:
            return const
    raise AssertionError(f"no code object {name!r} in {code!r}")


def bind_like(
    code: types.CodeType, like: Callable[..., Any], extra: dict[str, types.CellType] | None = None
) -> Callable[..., Any]:
    """A function of ``code`` with ``like``'s globals, defaults and closure cells
    (matched by name), and the cells ``extra`` names for what the rewritten code reads
    (see :func:`compile_like`)."""
    cells = dict(zip(like.__code__.co_freevars, like.__closure__ or (), strict=True))
    for name, cell in (extra or {}).items():
        cells.setdefault(name, cell)
    closure = tuple(cells[name] if name in cells else types.CellType() for name in code.co_freevars)
    func = types.FunctionType(
        code, like.__globals__, like.__name__, like.__defaults__, closure or None
    )
    func.__kwdefaults__ = copy.copy(like.__kwdefaults__)
    func.__qualname__ = like.__qualname__
    return func


def nested_code(code: types.CodeType) -> list[types.CodeType]:
    """The code objects of the functions (lambdas, comprehensions) defined in ``code``,
    at any depth."""
    found = []
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found += [const, *nested_code(const)]
    return found


def module_attribute(module: str, attributes: list[str], where: ast.AST) -> ast.expr:
    """``__import__(module).a.b`` at ``where``'s place: the module's function whatever
    name (if any) the rewritten code's module imported it under."""
    load = ast.Name(id="__import__", ctx=ast.Load())
    node: ast.expr = ast.Call(func=load, args=[ast.Constant(module)], keywords=[])
    for attribute in attributes:
        node = ast.Attribute(value=node, attr=attribute, ctx=ast.Load())
    for part in ast.walk(node):
        ast.copy_location(part, where)
    return node
