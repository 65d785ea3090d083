"""The Debug space checks a dispatch's arguments as the compiled spaces do.

Plain Python would run a kernel on a list, a float16 array or a float for an ``int``
parameter, and a program checked on Debug would then fail on OpenMP: the same
arguments are refused here, with the compiled spaces' errors (``DispatchError`` for what
no kernel takes, ``ArgumentTypeError`` at the parameter for a value its annotation
refuses). Types are checked once per argument signature (python_forms, before the
translator's own checks), the values of integers at every dispatch.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ..api.types import AccAnnotation, DataType, ViewAnnotation, to_datatype
from ..errors import ArgumentTypeError, DispatchError
from ..translate.source import KernelSource
from ..translate.typing_rules import annotation_mismatch
from .marshal import INT_RANGES, argument_type


def check_argument_types(workunit: Callable[..., Any], kwargs: dict[str, Any]) -> None:
    """Raise what a compiled space would raise for the types of these arguments (once
    per argument signature: see python_forms)."""
    annotations = _annotations(workunit)
    for name, value in kwargs.items():
        actual = argument_type(name, value)
        wanted = annotations.get(name)
        problem = annotation_mismatch(name, wanted, actual) if wanted is not None else None
        if problem is not None:
            source = KernelSource.of(workunit)
            arg = next((a for a in source.tree.args.args if a.arg == name), None)
            source.error(arg, problem, kind=ArgumentTypeError)


def check_argument_values(workunit: Callable[..., Any], kwargs: dict[str, Any]) -> None:
    """Raise what a compiled space would raise for the values of these arguments (at
    every dispatch): an integer the kernel's integer type cannot hold."""
    for name, value in kwargs.items():
        if isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_):
            # The integer type the kernel holds it in: its annotation's, else its own.
            wanted = _annotations(workunit).get(name)
            held = wanted if isinstance(wanted, DataType) else argument_type(name, value)
            if held.is_integer:
                low, high = INT_RANGES[held.name]
                if not low <= int(value) <= high:
                    raise DispatchError(f"{name}: {int(value)} does not fit in {held.name}")


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
