"""PyKokkos' lambda dispatches, as plain workunits.

PyKokkos lets a ``@pk.main`` method dispatch a lambda: ``pk.parallel_reduce(n, lambda i,
acc: acc + self.x[i])`` (the lambda gives the new value of the accumulator),
``pk.parallel_for(n, lambda i: self.a[i] * 2, self.out)`` (it gives the value of
``out[i]``) and ``pk.parallel_for(n, lambda i: pk.printf("%d\n", i))`` (called for what
it does). Such a lambda becomes a workunit here, written as if by hand::

    def <lambda>(i, acc, self_x):        def <lambda>(i, pk_lambda_view, self_a):
        acc = self_x[i]  (+ acc ...)          pk_lambda_view[i] = self_a[i] * 2

compiled with the lambda's file name and line numbers (errors, the Debug space and
debuggers point at the lambda). What the lambda reads from its enclosing function or
its module becomes parameters, passed at each dispatch: a number or an array as itself,
an object's field ``self.x`` as ``self_x`` (modules, classes and functions are left to
the translator: ``math.sqrt``, ``pk.fmax``, helpers).
"""

from __future__ import annotations

import ast
import linecache
import os
import types
from collections.abc import Callable
from typing import Any

from ..api.decorators import workunit
from ..api.views import is_tensor
from ..errors import TranslationError
from .main_fields import fields_read_bare
from .source import KernelSource

VIEW = "pk_lambda_view"  # the parameter of a parallel_for lambda's target view
FORM_NAME = "pk_lambda"  # the def of a lambda's workunit form

_forms: dict[tuple[Any, ...], tuple[Callable[..., Any], tuple[Any, ...]]] = {}


def is_lambda(value: object) -> bool:
    return isinstance(value, types.FunctionType) and value.__name__ == "<lambda>"


def lambda_form(
    lam: types.FunctionType, operation: str, with_view: bool
) -> tuple[Callable[..., Any], dict[str, Any]]:
    """The workunit of ``lam`` dispatched as ``operation`` (``with_view``: a parallel_for
    that fills a view), and the arguments it takes now (the captured values)."""
    # Equal code objects of different files or modules compare equal: both are in the key.
    code = lam.__code__
    key = (code, code.co_filename, id(lam.__globals__), operation, with_view)
    found = _forms.get(key)
    if found is None:
        found = _forms[key] = _build(lam, operation, with_view)
    form, captures = found
    cells = dict(zip(code.co_freevars, lam.__closure__ or (), strict=True))
    kwargs: dict[str, Any] = {}
    for parameter, name, attribute in captures:
        value = cells[name].cell_contents if name in cells else lam.__globals__[name]
        kwargs[parameter] = value if attribute is None else getattr(value, attribute)
    return form, kwargs


def _build(
    lam: types.FunctionType, operation: str, with_view: bool
) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    code = lam.__code__
    filename = os.path.abspath(code.co_filename)
    node = _find(lam, filename)
    where = KernelSource(lam, filename, _stand_in(node), 0)
    params = [a.arg for a in node.args.args]
    extras = node.args
    if extras.vararg or extras.kwarg or extras.kwonlyargs or extras.posonlyargs or extras.defaults:
        where.error(
            node,
            "a lambda kernel takes plain parameters (no defaults, *args or keyword-only)",
            hint="Write a `@pk.workunit def` and pass its arguments as keywords.",
        )
    usage = {
        "reduce": "pk.parallel_reduce(n, lambda i, acc: <new acc>)",
        "for": "pk.parallel_for(n, lambda i: <value of view[i]>, view) or "
        "pk.parallel_for(n, lambda i: <call>)",
    }.get(operation)
    wanted = {"reduce": 2, "for": 1}.get(operation)
    side_effect = operation == "for" and not with_view
    if (
        usage is None
        or len(params) != wanted
        or (operation != "for" and with_view)
        or (side_effect and not isinstance(node.body, ast.Call))  # a value for no view
    ):
        written = f"is written {usage}" if usage else "is not possible: write a def"
        where.error(
            node,
            f"a lambda dispatched by parallel_{operation} {written}",
            hint="For anything else write a `@pk.workunit def` and pass its arguments as keywords.",
        )
    captures = _Captures(lam, params, where)
    body = captures.visit(node.body)
    view = VIEW  # no capture takes this name (see _Captures.taken)
    statement: ast.stmt
    if operation == "reduce":
        target: ast.expr = ast.Name(id=params[1], ctx=ast.Store())
        statement = ast.Assign(targets=[target], value=body)
    elif with_view:
        index = ast.Name(id=params[0], ctx=ast.Load())
        target = ast.Subscript(
            value=ast.Name(id=view, ctx=ast.Load()), slice=index, ctx=ast.Store()
        )
        statement = ast.Assign(targets=[target], value=body)
    else:  # called for what it does (pk.printf, an atomic)
        statement = ast.Expr(value=body)
    for part in ast.walk(statement):  # the new nodes are at the lambda's body
        if not hasattr(part, "lineno"):
            ast.copy_location(part, node.body)
    arguments = [*params, *([view] if with_view else []), *captures.parameters]
    tree = ast.FunctionDef(
        name=FORM_NAME,
        args=ast.arguments(
            posonlyargs=[],
            args=[ast.copy_location(ast.arg(arg=name), node) for name in arguments],
            kwonlyargs=[],
            kw_defaults=[],
            defaults=[],
        ),
        body=[statement],
        decorator_list=[],
        returns=None,
        type_params=[],
    )
    ast.copy_location(tree, node)
    module = ast.fix_missing_locations(ast.Module(body=[tree], type_ignores=[]))
    # The function is made from its code object, not by running the module's `def`: a
    # debugger's breakpoint on the lambda's line must not stop in that module code.
    compiled = compile(module, filename, "exec")
    body_code = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    form = workunit(types.FunctionType(body_code, lam.__globals__, "pk_lambda"))
    form.__qualname__ = lam.__qualname__
    form.__pkernels_source__ = KernelSource(form, filename, tree, 0)
    return form, tuple(captures.found)


class _Captures(ast.NodeTransformer):
    """Names the lambda reads from its enclosing function or module become parameters:
    a number or an array as itself, an object's ``obj.x`` as ``obj_x`` (a name no other
    parameter has)."""

    def __init__(self, lam: types.FunctionType, params: list[str], where: KernelSource) -> None:
        cells = dict(zip(lam.__code__.co_freevars, lam.__closure__ or (), strict=True))
        self.values = {name: cell.cell_contents for name, cell in cells.items()}
        for name in lam.__code__.co_names:  # module globals: numbers, arrays and objects
            value = lam.__globals__.get(name, _MISSING)
            if name not in self.values and value is not _MISSING:
                self.values[name] = value
        self.globals = lam.__globals__
        self.free = set(self.values) - set(params)
        # In a @pk.main copy, names the method reads bare are its object's fields.
        bare = fields_read_bare(lam.__code__)
        self.owner, self.bare = bare if bare is not None else ("", frozenset())
        self.where = where
        self.taken = {*params, VIEW}
        self.found: list[tuple[str, str, str | None]] = []  # (parameter, name, attribute)
        self.parameters: list[str] = []

    def _capture(self, name: str, attribute: str | None) -> str:
        for parameter, known, known_attribute in self.found:
            if (known, known_attribute) == (name, attribute):
                return parameter
        parameter = name if attribute is None else f"{name}_{attribute}"
        base, suffix = parameter, 1
        while parameter in self.taken:
            suffix += 1
            parameter = f"{base}_{suffix}"
        self.taken.add(parameter)
        self.found.append((parameter, name, attribute))
        self.parameters.append(parameter)
        return parameter

    def _code(self, node: ast.Name) -> bool:
        """A module, class or function the translator resolves by name: in the module's
        globals, as itself (one made in the enclosing function cannot be found there)."""
        value = self.values[node.id]
        if not _is_code(value):
            return False
        if self.globals.get(node.id) is not value:
            self.where.error(
                node,
                f"the lambda uses {node.id!r}, made in its enclosing function; a kernel "
                "finds modules and functions among its module's globals",
                hint=f"Import or define {node.id!r} at the module's top level.",
            )
        return True

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        base = node.value
        if isinstance(base, ast.Name) and base.id in self.free and not self._code(base):
            if not is_plain_value(self.values[base.id]):  # an object: its field is the argument
                return ast.copy_location(
                    ast.Name(id=self._capture(base.id, node.attr), ctx=node.ctx), node
                )
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.bare and node.id not in self.taken and self.owner in self.values:
            return ast.copy_location(
                ast.Name(id=self._capture(self.owner, node.id), ctx=node.ctx), node
            )
        if node.id in self.free and not self._code(node):
            if not is_plain_value(self.values[node.id]):
                self.where.error(
                    node,
                    f"the lambda uses {node.id!r} itself; a kernel reads numbers, arrays "
                    f"and their fields ({node.id}.x)",
                )
            return ast.copy_location(ast.Name(id=self._capture(node.id, None), ctx=node.ctx), node)
        return node


_MISSING = object()


def _is_code(value: object) -> bool:
    """A module, class or function: what the translator itself resolves by name."""
    return isinstance(value, types.ModuleType | type) or callable(value)


def is_plain_value(value: object) -> bool:
    """A value a kernel takes as an argument itself (a number, bool or array)."""
    return (
        isinstance(value, int | float | bool)
        or hasattr(value, "__array_interface__")
        or is_tensor(value)
        or (hasattr(value, "__cuda_array_interface__"))
    )


def _find(lam: types.FunctionType, filename: str) -> ast.Lambda:
    """The ``lambda`` expression of ``lam`` in its file (one per line: its parameters and
    line tell it apart)."""
    code = lam.__code__
    params = list(code.co_varnames[: code.co_argcount])
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except SyntaxError:
        tree = None
    found = [
        node
        for node in (ast.walk(tree) if tree is not None else ())
        if isinstance(node, ast.Lambda)
        and node.lineno == code.co_firstlineno
        and [a.arg for a in node.args.args] == params
    ]
    if len(found) != 1:
        raise TranslationError(
            "cannot tell which lambda of this line is dispatched"
            if found
            else f"cannot read the source of the lambda dispatched ({lam!r})",
            filename,
            code.co_firstlineno,
            0,
            hint="Write the kernel as a `@pk.workunit def` in a .py file.",
        )
    return found[0]


def _stand_in(node: ast.Lambda) -> ast.FunctionDef:
    """A def at the lambda's place, for errors reported before the workunit is built."""
    stand_in = ast.FunctionDef(
        name="<lambda>", args=node.args, body=[ast.Pass()], decorator_list=[], returns=None
    )
    return ast.copy_location(stand_in, node)
