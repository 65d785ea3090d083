"""Kernel struct values (``@pk.classtype`` locals) at a kernel stop.

gdb renders a struct as ``{x = 1, q = 2.5, pos = {a = 0, b = 1}}``. The front end reads
that text (:func:`parse_struct`), carries it to the agent over the JSON channel as a
marked dict (:func:`encode`), and the agent's evaluation sees an object with the fields
as attributes (:class:`StructValue`): ``p q.x``, ``p q.pos.a * 2``.
"""

from __future__ import annotations

import re
from typing import Any

from . import complex_values, float32
from .gdbexpr import parse_gdb_value

_MARKER = "__pkdb_struct__"
_REFERENCE = re.compile(r"^\(.*?\)\s*@0x[0-9a-f]+:\s*|^@0x[0-9a-f]+:\s*")
_FIELD_NAME = re.compile(r"\s*([A-Za-z_]\w*)\s*=\s*")


def parse_struct(text: str) -> dict[str, Any] | None:
    """The fields of gdb's rendering of a struct (nested structs as dicts), or None when
    ``text`` is not one."""
    text = _REFERENCE.sub("", text.strip())
    if not text.startswith("{"):
        return None
    try:
        fields, end = _parse_fields(text, 1)
    except ValueError:
        return None
    return fields if text[end:].strip() == "" else None


def _parse_fields(text: str, i: int) -> tuple[dict[str, Any], int]:
    fields: dict[str, Any] = {}
    while True:
        match = _FIELD_NAME.match(text, i)
        if match is None:
            raise ValueError(f"no field name at {i}")
        name, i = match.group(1), match.end()
        if text.startswith("{", i):
            fields[name], i = _parse_fields(text, i + 1)
        else:
            end = i
            while end < len(text) and text[end] not in ",}":
                end += 1
            fields[name] = parse_gdb_value(text[i:end])
            i = end
        while i < len(text) and text[i] == " ":
            i += 1
        if i >= len(text):
            raise ValueError("unterminated struct")
        if text[i] == "}":
            return fields, i + 1
        i += 1  # the comma


def encode(fields: dict[str, Any]) -> dict[str, Any]:
    """A JSON-able stand-in for a struct value, for the agent's evaluation."""
    return {_MARKER: fields}


def is_encoded(value: object) -> bool:
    return isinstance(value, dict) and set(value) == {_MARKER}


def decode(value: object) -> object:
    """The :class:`StructValue` for an encoded struct; anything else as is."""
    if not is_encoded(value):
        return value
    return StructValue(value[_MARKER])  # type: ignore[index]


class StructValue:
    """A kernel struct at a stop: its fields as read-only attributes."""

    def __init__(self, fields: dict[str, Any]) -> None:
        object.__setattr__(
            self,
            "_fields",
            {name: _field_value(value) for name, value in fields.items()},
        )

    def __getattr__(self, name: str) -> Any:
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError(
                f"the struct has no field {name!r} (it has {', '.join(self._fields)})"
            ) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(
            f"fields of a kernel struct are read-only at a stop; to change one, use "
            f"'send set var <variable>.{name} = ...'"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StructValue) and other._fields == self._fields

    def __hash__(self) -> int:
        return hash(tuple(self._fields.items()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={value!r}" for name, value in self._fields.items())
        return f"struct({inner})"


def _field_value(value: Any) -> Any:
    """A field as the evaluation sees it: a float32 or complex field (sent as their
    stand-ins) as NumPy's scalar, a nested struct as a :class:`StructValue`."""
    if float32.is_encoded(value) or complex_values.is_encoded(value):
        return complex_values.decode(float32.decode(value))
    return StructValue(value) if isinstance(value, dict) else value
