"""The Debug space checks a dispatch's arguments as the compiled spaces do.

Plain Python would run a kernel on a list, a float16 array or a float for an ``int``
parameter, and a program checked on Debug would then fail on OpenMP: the same
arguments are refused here, with the compiled spaces' errors (``DispatchError`` for what
no kernel takes, ``ArgumentTypeError`` at the parameter for a value its annotation
refuses). What only translation sees (a view indexed with the wrong rank) is not.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ..api.types import AccAnnotation, DataType, ViewAnnotation, to_datatype
from ..errors import ArgumentTypeError, DispatchError
from ..translate.ir import ViewType
from ..translate.source import KernelSource
from .marshal import argument_type


def check_python_arguments(workunit: Callable[..., Any], kwargs: dict[str, Any]) -> None:
    """Raise what a compiled space would raise for these keyword arguments."""
    annotations = _annotations(workunit)
    for name, value in kwargs.items():
        actual = argument_type(name, value)
        wanted = annotations.get(name)
        if wanted is not None:
            _check(workunit, name, wanted, actual)
        if isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_):
            # The integer type the kernel holds it in: its annotation's, else its own.
            held = wanted if isinstance(wanted, DataType) else actual
            if held.is_integer and int(value) not in _range(held):
                raise DispatchError(f"{name}: {int(value)} does not fit in {held.name}")


def _range(dtype: DataType) -> range:
    if dtype.kind == "uint":
        return range(0, 2**dtype.bits)
    return range(-(2 ** (dtype.bits - 1)), 2 ** (dtype.bits - 1))


@functools.lru_cache(maxsize=256)
def _annotations(workunit: Callable[..., Any]) -> dict[str, Any]:
    """The parameters' annotations that are types (what the translator reads)."""
    try:
        raw = inspect.get_annotations(workunit, eval_str=True)
    except Exception:  # noqa: BLE001 - an annotation Python cannot evaluate: none
        return {}
    found: dict[str, Any] = {}
    for name, ann in raw.items():
        if isinstance(ann, ViewAnnotation):
            found[name] = ann
        elif not isinstance(ann, AccAnnotation):
            try:
                found[name] = to_datatype(ann)
            except TypeError:
                pass
    return found


def _check(workunit: Callable[..., Any], name: str, wanted: Any, actual: Any) -> None:
    if isinstance(actual, ViewType):
        if not isinstance(wanted, ViewAnnotation):
            _refuse(workunit, name, f"{name!r} is annotated {wanted!r} but receives an array")
        elif wanted.rank != actual.rank or not wanted.accepts(actual.dtype):
            _refuse(
                workunit,
                name,
                f"{name!r} is annotated {wanted.name} but the array passed is {actual}",
            )
    elif isinstance(wanted, ViewAnnotation):
        _refuse(workunit, name, f"{name!r} is annotated as a view but receives a scalar")
    elif isinstance(wanted, DataType) and actual.is_float and not wanted.is_float:
        _refuse(
            workunit,
            name,
            f"{name!r} is annotated {wanted.name} but receives a float ({actual.name})",
        )


def _refuse(workunit: Callable[..., Any], name: str, message: str) -> None:
    source = KernelSource.of(workunit)
    arg = next((a for a in source.tree.args.args if a.arg == name), None)
    source.error(arg, message, kind=ArgumentTypeError)
