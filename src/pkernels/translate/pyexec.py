"""The ``Debug`` space: a workunit run as plain Python, one call per index.

Python cannot pass a float by reference, so for reduce and scan the accumulator is
rewritten to a one-element list (``acc`` -> ``acc[0]``) in a copy of the function,
compiled with the original file name and line numbers (tracebacks and pdb point at
the user's source). A math function the kernel calls bare, without an import
(``sqrt(x)``, as PyKokkos lets kernels write), is read as the compiled kernel reads it
(``pk.sqrt``) in such a copy too.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import copy
import types
from collections.abc import Callable
from typing import Any

from ..api import kernel_builtins
from ..api.decorators import marker_of
from .source import KernelSource, resolve
from .typing_rules import BARE_MATH


class AccumulatorToCell(ast.NodeTransformer):
    """``name`` -> ``name[0]`` where ``name`` means the accumulator: not inside nested
    functions that bind a local of the same name (a team kernel's nested bodies)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id != self.name:
            return node
        cell = ast.Subscript(
            value=ast.Name(id=self.name, ctx=ast.Load()), slice=ast.Constant(0), ctx=node.ctx
        )
        return ast.copy_location(cell, node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        # Decorators, defaults and annotations are evaluated in the enclosing scope.
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.args = self.visit(node.args)
        if node.returns is not None:
            node.returns = self.visit(node.returns)
        if not _binds(node, self.name):
            node.body = [self.visit(stmt) for stmt in node.body]
        return node

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_arguments(self, node: ast.arguments) -> ast.AST:
        node.defaults = [self.visit(d) for d in node.defaults]
        node.kw_defaults = [d if d is None else self.visit(d) for d in node.kw_defaults]
        for arg in [*node.posonlyargs, *node.args, *node.kwonlyargs, node.vararg, node.kwarg]:
            if arg is not None and arg.annotation is not None:
                arg.annotation = self.visit(arg.annotation)
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        node.args = self.visit(node.args)
        if self.name not in _parameters(node.args):
            node.body = self.visit(node.body)
        return node


def _parameters(args: ast.arguments) -> set[str]:
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return {arg.arg for arg in every if arg is not None}


def _binds(func: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """Whether ``name`` is a local of ``func`` (a parameter, or assigned there without a
    ``nonlocal`` declaration)."""
    if name in _parameters(func.args):
        return True
    stack: list[ast.AST] = list(func.body)
    assigned = False
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Nonlocal) and name in node.names:
            return False
        if isinstance(node, ast.Global) and name in node.names:
            return True
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            assigned = True
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == name:
                assigned = True
            continue  # their bodies are other scopes
        if isinstance(node, ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return assigned


def accumulator_form(func: Callable[..., Any], position: int = 1) -> Callable[..., Any]:
    """``func`` with its accumulator (the parameter at ``position``: the second, or the
    one after an MDRangePolicy's indices) taken as a 1-element list."""
    source = KernelSource.of(func)
    # A copy: the tree is the one the compiled spaces translate (cached per lambda and
    # workload method), which must keep its accumulator and annotations.
    tree = copy.deepcopy(source.tree)
    acc_name = tree.args.args[position].arg
    bare = BareMathNames(bare_math_names(func))
    new_tree = ast.FunctionDef(
        name=tree.name,
        args=tree.args,
        body=[bare.visit(AccumulatorToCell(acc_name).visit(stmt)) for stmt in tree.body],
        decorator_list=[],
        returns=None,
        type_params=[],
    )
    ast.copy_location(new_tree, tree)
    for arg in tree.args.args:
        arg.annotation = None  # pk.Acc[...] etc. mean nothing to plain Python
    # Compiled with the workunit's free variables and bound to its closure cells: a
    # workunit defined in a function reads what it captured, as the original does.
    return bind_like(compile_like(new_tree, source.filename, func.__code__), func)


_FUTURE_FLAGS = __future__.annotations.compiler_flag


def compile_like(tree: ast.FunctionDef, filename: str, original: types.CodeType) -> types.CodeType:
    """Compile the def ``tree`` (with the file name and line numbers it has) into a code
    object whose free variables are named as ``original``'s: a nested def is compiled
    inside a generated function that has them as parameters. Nothing is run (no ``def``
    executes, so a debugger's breakpoint on the def line does not stop)."""
    freevars = original.co_freevars
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


def bind_like(code: types.CodeType, like: Callable[..., Any]) -> Callable[..., Any]:
    """A function of ``code`` with ``like``'s globals, defaults and closure cells
    (matched by name)."""
    cells = dict(zip(like.__code__.co_freevars, like.__closure__ or (), strict=True))
    closure = tuple(cells[name] if name in cells else types.CellType() for name in code.co_freevars)
    func = types.FunctionType(
        code, like.__globals__, like.__name__, like.__defaults__, closure or None
    )
    func.__kwdefaults__ = copy.copy(like.__kwdefaults__)
    func.__qualname__ = like.__qualname__
    return func


class BareMathNames(ast.NodeTransformer):
    """``sqrt`` -> ``pk.sqrt`` (``math.degrees`` for the names pk lacks) for the math
    functions ``names`` a kernel calls bare: what the translator reads them as."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id not in self.names or not isinstance(node.ctx, ast.Load):
            return node
        module = "pkernels" if hasattr(kernel_builtins, node.id) else "math"
        load = ast.Name(id="__import__", ctx=ast.Load())  # pkernels under any name
        owner = ast.Call(func=load, args=[ast.Constant(module)], keywords=[])
        attribute = ast.Attribute(value=ast.copy_location(owner, node), attr=node.id, ctx=node.ctx)
        return ast.copy_location(attribute, node)


def bare_math_names(func: Callable[..., Any]) -> set[str]:
    """The math functions ``func`` (or a def in it) calls bare that its module and
    enclosing function leave undefined, or define as a workunit (PyKokkos' ``sin``
    workunit calling ``sin``)."""
    code = func.__code__
    used: set[str] = set()
    stack = [code]
    while stack:
        current = stack.pop()
        used.update(name for name in current.co_names if name in BARE_MATH)
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    if not used:
        return set()
    found = set()
    for name in used:
        target = resolve(func, name)
        if target is None and hasattr(builtins, name):
            continue  # Python's own (pow, abs, round)
        marker = marker_of(target)
        if target is None or (marker is not None and marker.kind == "workunit"):
            found.add(name)
    return found


def python_form(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` as the Debug space calls it: itself, or a copy reading the math functions
    it calls bare as the compiled kernel does (see :class:`BareMathNames`)."""
    names = bare_math_names(func)
    if not names:
        return func
    source = KernelSource.of(func)
    tree = copy.deepcopy(source.tree)
    tree.decorator_list = []
    for arg in [*tree.args.posonlyargs, *tree.args.args, *tree.args.kwonlyargs]:
        arg.annotation = None
    tree.returns = None
    tree.body = [BareMathNames(names).visit(stmt) for stmt in tree.body]
    form = bind_like(compile_like(tree, source.filename, func.__code__), func)
    form.__annotations__ = dict(func.__annotations__)
    return form
