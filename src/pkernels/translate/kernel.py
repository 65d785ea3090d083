"""Translate one workunit specialisation: the front door of the translator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..api import types as t
from . import ir
from .emit_cpp import KernelEntry, emit_module
from .lower import FunctionLowerer, HelperRegistry
from .source import KernelSource

ROLES = {"for": ["index"], "reduce": ["index", "acc"], "scan": ["index", "acc", "last_pass"]}


def lower_workunit(
    func: Callable[..., Any], operation: str, arg_types: dict[str, ir.Type]
) -> tuple[ir.Function, list[ir.Function]]:
    """The checked IR of ``func`` (and of the helpers it calls) for these argument types."""
    source = KernelSource.of(func)
    helpers = HelperRegistry()
    lowerer = FunctionLowerer(source, helpers, cpp_name=source.name)
    kernel = lowerer.lower_workunit(ROLES[operation], arg_types)
    return kernel, helpers.order


def translate_workunit(
    func: Callable[..., Any], operation: str, arg_types: dict[str, ir.Type]
) -> KernelEntry:
    """C++ for ``func`` dispatched as ``operation`` with arguments of ``arg_types``."""
    kernel, helpers = lower_workunit(func, operation, arg_types)
    index = kernel.params[0].type
    assert isinstance(index, t.DataType)
    return emit_module(kernel, helpers, operation, index)
