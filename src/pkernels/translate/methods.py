"""Workunits that are methods of a ``@pk.workload`` class, as plain kernels.

``self.a[i]`` in a method kernel reads the object's field ``a``. The method is rewritten
once into a plain function whose ``self`` parameter is gone and whose fields are extra
parameters (``self.a`` -> ``self_a``), compiled with the original file name and line
numbers: the translator, the Debug space and debuggers see an ordinary workunit, and
each dispatch passes the object's current fields as those parameters.

A call ``self.f(x)`` of a ``@pk.function`` method of the class becomes a call of the
plain form of ``f`` in the same way, its fields (those it reads, and those of the
methods it calls in turn) passed as extra arguments: ``f(x, self_a, self_n)``. The
forms of such helpers are bound in the module's globals under reserved names
(``_pkernels_<Class>_<method>``), where both the translator and Python find them.
"""

from __future__ import annotations

import ast
import copy
import difflib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..api.decorators import marker_of
from ..api.random_pools import RandomPool
from .bare_fields import with_self_fields
from .source import KernelSource

_forms: dict[Any, Callable[..., Any]] = {}
_helper_names: dict[Any, str] = {}  # (function, class) -> its form's global name
# workunit method -> the @pk.function methods its first form called (see _build)
_resolutions: dict[Any, tuple[Any, ...]] = {}


@dataclass
class _Method:
    """One method being rewritten: its source, ``self`` name, fields and helper calls."""

    func: Callable[..., Any]
    source: KernelSource
    self_name: str
    tree: ast.FunctionDef  # the def, bare field names read as self.<name>
    fields: list[str] = field(default_factory=list)
    calls: list[Callable[..., Any]] = field(default_factory=list)  # @pk.function methods
    # Where each field is first read (in this method or one it calls), for messages.
    reads: dict[str, tuple[KernelSource, ast.AST]] = field(default_factory=dict)


def _helper_method(cls: type, source: KernelSource, node: ast.Call, name: str) -> Any:
    """The ``@pk.function`` method ``cls.name`` that ``node`` calls (None: not a method,
    so ``self.name`` is a field)."""
    found = inspect.getattr_static(cls, name, None)
    if found is None or isinstance(found, staticmethod | classmethod | property):
        return None
    if not inspect.isfunction(found):
        return None
    marker = marker_of(found)
    if marker is None:
        source.error(
            node,
            f"{cls.__name__}.{name} is not a @pk.function, so kernels cannot call it",
            hint=f"Decorate the method with @pk.function to call it as self.{name}(...).",
        )
    if marker.kind != "function":
        source.error(
            node,
            f"{cls.__name__}.{name} is a workunit; kernels call only @pk.function methods",
            hint="Dispatch workunits from the @pk.main method instead.",
        )
    if node.keywords:
        source.error(node.keywords[0], "keyword arguments are not supported in kernel calls")
    return found


def _is_self_attr(node: ast.expr, self_name: str) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == self_name
    )


class _Scan(ast.NodeVisitor):
    """Collects the fields a method reads and the @pk.function methods it calls."""

    def __init__(self, method: _Method, cls: type) -> None:
        self.method, self.cls = method, cls

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if _is_self_attr(func, self.method.self_name):
            assert isinstance(func, ast.Attribute)
            helper = _helper_method(self.cls, self.method.source, node, func.attr)
            if helper is not None:
                if helper not in self.method.calls:
                    self.method.calls.append(helper)
                for arg in node.args:
                    self.visit(arg)
                return
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        me = self.method.self_name
        if not _is_self_attr(node, me):
            self.generic_visit(node)
            return
        if isinstance(node.ctx, ast.Store | ast.Del):
            self.method.source.error(
                node,
                f"a kernel cannot assign the field {me}.{node.attr}",
                hint="Write into a view field (self.v[i] = ...), or return a total with "
                "parallel_reduce and assign it in the @pk.main method.",
            )
        if node.attr not in self.method.fields:
            self.method.fields.append(node.attr)
            self.method.reads[node.attr] = (self.method.source, node)


class _FieldsToParameters(ast.NodeTransformer):
    """``self.a`` -> ``self_a``; ``self.f(x)`` -> ``<form of f>(x, self_a, ...)``."""

    def __init__(self, method: _Method, cls: type, methods: dict[Any, _Method]) -> None:
        self.method, self.cls, self.methods = method, cls, methods

    def _field(self, name: str, like: ast.AST) -> ast.Name:
        return ast.copy_location(
            ast.Name(id=f"{self.method.self_name}_{name}", ctx=ast.Load()), like
        )

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        if _is_self_attr(func, self.method.self_name):
            assert isinstance(func, ast.Attribute)
            helper = _helper_method(self.cls, self.method.source, node, func.attr)
            if helper is not None:
                callee = self.methods[helper]
                target = ast.copy_location(
                    ast.Name(id=_helper_names[(helper, self.cls)], ctx=ast.Load()), func
                )
                args = [self.visit(arg) for arg in node.args]
                args += [self._field(name, node) for name in callee.fields]
                return ast.copy_location(ast.Call(func=target, args=args, keywords=[]), node)
        return self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if not _is_self_attr(node, self.method.self_name):
            return self.generic_visit(node)
        return self._field(node.attr, node)


def method_form(method: Any) -> tuple[Callable[..., Any], dict[str, Any]]:
    """The plain kernel of a bound workload method, and the field arguments it takes now."""
    func, obj = method.__func__, method.__self__
    key = (func, type(obj))
    form = _forms.get(key)
    if form is None:
        form = _build(func, type(obj), obj)
    fields = {}
    for name in form.__pkernels_fields__:
        try:
            fields[f"{form.__pkernels_self__}_{name}"] = getattr(obj, name)
        except AttributeError:
            _no_such_field(form, obj, name)
    return form, fields


def _no_such_field(form: Any, obj: Any, name: str) -> None:
    """Refuse ``self.<name>`` that ``obj`` lacks (a typo, most often) where the kernel
    reads it, naming the fields it has and the closest one."""
    source, node = form.__pkernels_field_reads__[name]
    known = sorted(
        attr
        for attr in {*vars(obj), *dir(type(obj))}
        if not attr.startswith("_") and not callable(inspect.getattr_static(obj, attr, None))
    )
    close = difflib.get_close_matches(name, known, n=1)
    cls = type(obj).__name__
    source.error(
        node,
        f"{cls} has no field {name!r}" + (f": did you mean {close[0]!r}?" if close else ""),
        hint=f"The fields of this {cls} object: {', '.join(known) or 'none'} (kernels read what "
        "__init__ assigns to self.<name>).",
    )


def _scan(func: Callable[..., Any], cls: type, obj: Any) -> _Method:
    source = KernelSource.of(func)
    if not source.tree.args.args:
        source.error(source.tree, "a workload kernel method needs its `self` parameter")
    self_name = source.tree.args.args[0].arg
    tree = with_self_fields(source.tree, self_name, func.__globals__, obj)
    method = _Method(func, source, self_name, tree)
    scanner = _Scan(method, cls)
    for stmt in tree.body:
        scanner.visit(stmt)
    draw = next((node for node in ast.walk(tree) if _draws_from_pool(node)), None)
    if draw is not None:  # pk.rand(T) draws from the object's pool, named or not (PyKokkos)
        for name, value in getattr(obj, "__dict__", {}).items():
            if isinstance(value, RandomPool) and name not in method.fields:
                method.fields.append(name)
                method.reads[name] = (source, draw)
    return method


def _draws_from_pool(node: ast.AST) -> bool:
    """A ``pk.rand(T)`` call (one argument: a type; ``pk.rand(seed, i)`` takes two)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "rand"
        and len(node.args) == 1
    )


def _build(func: Callable[..., Any], cls: type, obj: Any) -> Callable[..., Any]:
    """The forms of the workunit ``func`` of ``cls`` and of the helper methods it reaches
    (``obj``: the object of the first dispatch, whose fields bare names may be)."""
    root = _scan(func, cls, obj)
    methods: dict[Any, _Method] = {func: root}
    pending = list(root.calls)
    while pending:  # every @pk.function method reachable from the workunit
        helper = pending.pop()
        if helper not in methods:
            methods[helper] = _scan(helper, cls, obj)
            pending += methods[helper].calls
    changed = True
    while changed:  # a method's fields include those of the methods it calls
        changed = False
        for method in methods.values():
            for callee in method.calls:
                for name in methods[callee].fields:
                    if name not in method.fields:
                        method.fields.append(name)
                        method.reads[name] = methods[callee].reads[name]
                        changed = True
    _check_resolution(root, cls, tuple(methods))
    for helper in methods:
        if helper is not func and (helper, cls) not in _helper_names:
            _helper_names[(helper, cls)] = _global_name(cls, helper)
    forms = {helper: _compile(method, cls, methods) for helper, method in methods.items()}
    for helper, form in forms.items():
        if helper is not func:  # found by name wherever a caller's module is
            for caller in methods.values():
                caller.func.__globals__[_helper_names[(helper, cls)]] = form
            _forms[(helper, cls)] = form
    form = forms[func]
    _forms[(func, cls)] = form
    return form


def _check_resolution(root: _Method, cls: type, reached: tuple[Any, ...]) -> None:
    """The compiled builds of a workunit method are memoised on the method itself, so
    every class dispatching it must reach the same @pk.function methods (a subclass
    overriding one of them needs its own workunit method)."""
    first = _resolutions.setdefault(root.func, reached)
    if set(first) == set(reached):
        return
    differs = [f for f in reached if f not in first] or [f for f in first if f not in reached]
    root.source.error(
        root.source.tree,
        f"{cls.__name__} overrides {differs[0].__name__}, which the workunit "
        f"{root.func.__qualname__} calls: one workunit method cannot call different "
        "@pk.function methods for different classes",
        hint=f"Override the workunit in {cls.__name__} too (it may have the same body).",
    )


def _global_name(cls: type, helper: Callable[..., Any]) -> str:
    base = f"_pkernels_{cls.__name__}_{helper.__name__}"
    name, suffix = base, 1
    taken = set(_helper_names.values())
    while name in taken:
        suffix += 1
        name = f"{base}_{suffix}"
    return name


def _compile(method: _Method, cls: type, methods: dict[Any, _Method]) -> Callable[..., Any]:
    source = method.source
    tree = copy.deepcopy(method.tree)
    rewriter = _FieldsToParameters(method, cls, methods)
    tree.body = [rewriter.visit(stmt) for stmt in tree.body]
    tree.args.args = tree.args.args[1:] + [
        ast.copy_location(ast.arg(arg=f"{method.self_name}_{name}"), tree) for name in method.fields
    ]
    tree.decorator_list = []
    module = ast.fix_missing_locations(ast.Module(body=[tree], type_ignores=[]))
    namespace: dict[str, Any] = {}
    func = method.func
    exec(compile(module, source.filename, "exec"), func.__globals__, namespace)
    form = namespace[tree.name]
    form.__qualname__ = func.__qualname__
    form.__pkernels__ = func.__pkernels__  # one memo of builds per method
    form.__pkernels_source__ = KernelSource(form, source.filename, tree, source.indent)
    form.__pkernels_self__ = method.self_name
    form.__pkernels_fields__ = tuple(method.fields)
    form.__pkernels_field_reads__ = dict(method.reads)
    return form
