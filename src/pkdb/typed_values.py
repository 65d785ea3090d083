"""Kernel variables at a stop as Python values of their kinds.

gdb prints the double 0.0 as ``0`` and a C++ bool as ``true``: the text alone does not
say what a variable is. pkernels does: a launch message's ``variable_kinds``
(pkernels.translate.emit_launch.debugger_names) give each scalar's kind, a struct's
fields by dotted name (``p.q``, ``p.pos.a``). Both front ends (CPU and GPU) read a
kernel variable through :func:`from_gdb`, so a value is the same Python value either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import complex_values, float32
from .gdbexpr import parse_gdb_value
from .structs import encode as encode_struct
from .structs import parse_struct


def from_gdb(name: str, text: str, kinds: Mapping[str, str]) -> Any:
    """The JSON-able value of the kernel variable ``name`` that gdb printed as ``text``:
    a number of its kind (float32 and complex as their stand-ins), a ``@pk.classtype``
    struct's stand-in with its fields typed likewise; None for anything else."""
    fields = parse_struct(text)
    if fields is not None:
        number = complex_values.from_fields(fields, kinds.get(name, ""))
        return encode_struct(typed_fields(name, fields, kinds)) if number is None else number
    value = parse_gdb_value(text)
    if isinstance(value, int | float | bool):
        return typed(value, kinds.get(name))
    return None


def typed(value: int | float | bool, kind: str | None) -> Any:
    """A number gdb printed as the Python value of ``kind`` (as is when unknown)."""
    if kind == "float":
        return float(value)
    if kind == "float32":  # computes in single precision, as the kernel does
        return float32.encode(value)
    if kind == "bool":
        return bool(value)
    return value


def typed_fields(name: str, fields: dict[str, Any], kinds: Mapping[str, str]) -> dict[str, Any]:
    """The fields of the struct ``name`` (as :func:`~pkdb.structs.parse_struct` read
    them) with each number of its field's kind; nested structs likewise, a complex field
    as its stand-in."""
    result: dict[str, Any] = {}
    for field, value in fields.items():
        path = f"{name}.{field}"
        if isinstance(value, dict):
            number = complex_values.from_fields(value, kinds.get(path, ""))
            result[field] = typed_fields(path, value, kinds) if number is None else number
        elif isinstance(value, int | float | bool):
            result[field] = typed(value, kinds.get(path))
        else:
            result[field] = value
    return result
