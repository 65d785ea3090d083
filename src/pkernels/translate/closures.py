"""Workunits defined inside a function, reading numbers and arrays they captured.

Python lets a kernel made by a factory read its enclosing function's variables::

    def make_scale(factor, out):
        @pk.workunit
        def scale(i, x):
            out[i] = factor * x[i]
        return scale

A compiled kernel takes every value as an argument, so such a workunit is dispatched as
its *closure form*: the same def with one more parameter per captured number or array
(``def scale(i, x, factor, out)``), compiled with the original file name and line numbers,
and given the captured values at each dispatch (a cell rebound since is read anew).
Captured functions, classes and modules stay in its closure, where the translator finds
them (``KernelSource.lookup``). The Debug space runs the same form, so every space reads
the same values.
"""

from __future__ import annotations

import ast
import copy
import dis
import functools
import types
import weakref
from collections.abc import Callable
from typing import Any

from ..api.decorators import marker_of
from ..api.decorators import workunit as mark_workunit
from .lambdas import is_plain_value
from .pycode import bind_like, compile_like, nested_code
from .source import KernelSource

# (code, captured names) -> (code of the closure form, file name, its def, indent)
_templates: dict[tuple[types.CodeType, tuple[str, ...]], tuple[Any, ...]] = {}
# workunit -> (captured names, its closure form): made once per function object
_forms: weakref.WeakKeyDictionary[Callable[..., Any], tuple[tuple[str, ...], Any]] = (
    weakref.WeakKeyDictionary()
)


def captured_values(func: Callable[..., Any]) -> dict[str, Any]:
    """The numbers and arrays a function defined in another one captured from it."""
    code = getattr(func, "__code__", None)
    closure = getattr(func, "__closure__", None)
    if code is None or not closure:
        return {}
    values = {}
    assigned = _nonlocal_names(code)
    for name, cell in zip(code.co_freevars, closure, strict=True):
        if name in assigned:
            continue  # the kernel assigns it: left for the translator to refuse
        try:
            value = cell.cell_contents
        except ValueError:  # not bound yet in the enclosing function
            continue
        if is_plain_value(value):
            values[name] = value
    return values


def closure_form(func: Callable[..., Any], captured: dict[str, Any]) -> Callable[..., Any]:
    """The workunit to translate and run for ``func``, which captured the numbers and
    arrays ``captured`` (:func:`captured_values`): it takes them as keyword arguments."""
    names = tuple(captured)
    found = _forms.get(func)
    if found is not None and found[0] == names:
        return found[1]
    key = (func.__code__, names)
    template = _templates.get(key)
    if template is None:
        template = _templates[key] = _template(func, names)
    code, filename, tree, indent = template
    form = bind_like(code, func)
    form.__annotations__ = dict(func.__annotations__)  # pk.Acc[...] types the accumulator
    marker = marker_of(func)
    mark_workunit(form, **(marker.options if marker else {}))
    form.__pkernels_source__ = KernelSource(form, filename, tree, indent)
    _forms[func] = (names, form)
    return form


def _template(func: Callable[..., Any], names: tuple[str, ...]) -> tuple[Any, ...]:
    """The def of ``func`` with ``names`` as its last parameters, compiled."""
    source = KernelSource.of(func)
    tree = copy.deepcopy(source.tree)
    args = tree.args
    if args.defaults or args.kwonlyargs or args.vararg or args.kwarg or args.posonlyargs:
        source.error(
            tree,
            f"{tree.name} reads {', '.join(names)} from its enclosing function and has "
            "parameters with defaults, * or **: it cannot take them as arguments",
            hint="Pass them as keyword arguments of the dispatch instead.",
        )
    args.args = [*args.args, *(ast.copy_location(ast.arg(arg=n), tree) for n in names)]
    code = compile_like(tree, source.filename, func.__code__)
    return code, source.filename, tree, source.indent


@functools.cache  # per code object: read at every dispatch of the workunit
def _nonlocal_names(code: types.CodeType) -> frozenset[str]:
    """The variables ``code`` or a function nested in it assigns (``nonlocal``): names of
    variables, never values to pass."""
    return frozenset(
        instruction.argval
        for current in (code, *nested_code(code))
        for instruction in dis.get_instructions(current)
        if instruction.opname in ("STORE_DEREF", "DELETE_DEREF")
    )
