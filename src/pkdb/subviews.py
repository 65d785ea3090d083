"""Subviews (``row = A[j, :]`` in a kernel) at a kernel stop.

A compiled subview is no C++ object: pkernels keeps, in hidden locals, the index of each
axis it fixes and the first index and length of each axis it keeps, and describes them
(``KernelLaunch.subviews``). The front end reads those locals in the stopped thread and
sends the agent a marked index (:func:`encode`); the agent's evaluation sees the NumPy
view of the caller's own array (:func:`resolve`), so ``p row``, ``p row[1:3]`` and
``eval row[0] = 2.0`` work on the kernel's data.
"""

from __future__ import annotations

from typing import Any

from .gdbexpr import parse_gdb_value
from .kernel_session import cpp_name

_MARKER = "__pkdb_subview__"


def encode(description: dict[str, Any], raw: dict[str, str]) -> dict[str, Any] | None:
    """The subview ``description`` with the values of its hidden locals (gdb's text in
    ``raw``) as ``{marker: {"view": name, "index": [i | [start, stop, step]]}}``; None
    while one is not readable (the thread has not reached the subview's line)."""
    index: list[Any] = []
    for axis in description["axes"]:
        if axis[0] == "index":
            value = _integer(axis[1], raw)
            if value is None:
                return None
            index.append(value)
            continue
        _, start_name, length_name, step = axis
        start, length = _integer(start_name, raw), _integer(length_name, raw)
        if start is None or length is None:
            return None
        index.append([start, start + length * step, step])
    shown = description.get("shown", description["view"])
    return {_MARKER: {"view": description["view"], "shown": shown, "index": index}}


def is_encoded(value: object) -> bool:
    return isinstance(value, dict) and _MARKER in value


def resolve(value: dict[str, Any], arrays: dict[str, Any]) -> Any:
    """The NumPy (or CuPy) view an encoded subview stands for, of ``arrays[view]``."""
    spec = value[_MARKER]
    index = tuple(i if isinstance(i, int) else slice(*i) for i in spec["index"])
    return arrays[spec["view"]][index]


def describe(value: dict[str, Any]) -> str:
    """An encoded subview as the subscript it is now: ``A[1, 1:4]``."""
    spec = value[_MARKER]
    parts = []
    for i in spec["index"]:
        if isinstance(i, int):
            parts.append(str(i))
            continue
        start, stop, step = i
        parts.append(f"{start or ''}:{stop}" + (f":{step}" if step != 1 else ""))
    return f"{spec['shown']}[{', '.join(parts)}]"


def _integer(name: str, raw: dict[str, str]) -> int | None:
    text = raw.get(cpp_name(name))
    value = parse_gdb_value(text) if text is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None
