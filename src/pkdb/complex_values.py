"""Complex kernel variables on their way to the agent's Python.

A ``pk.complex128`` (or ``pk.complex64``) local is NumPy's complex scalar to the
expressions evaluated at a stop, so ``p z * w`` computes as the kernel does. gdb shows
the runtime's struct (``{re = 1, im = -2}``) and JSON carries no complex: the front end
sends ``{"__pk_complex__": [re, im, "complex128"]}`` and the agent makes it a NumPy
complex again.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_MARKER = "__pk_complex__"
KINDS = ("complex64", "complex128")  # the debugger kinds of complex variables


def from_fields(fields: dict[str, Any], kind: str) -> dict[str, Any] | None:
    """The stand-in for a complex variable of ``kind`` whose struct gdb showed as
    ``fields`` (its ``re`` and ``im``); None when they are not two numbers."""
    re, im = fields.get("re"), fields.get("im")
    if kind not in KINDS or set(fields) != {"re", "im"}:
        return None
    if not all(isinstance(part, int | float) for part in (re, im)):
        return None
    return {_MARKER: [float(re), float(im), kind]}  # type: ignore[arg-type]


def is_encoded(value: object) -> bool:
    return isinstance(value, dict) and set(value) == {_MARKER}


def decode(value: Any) -> Any:
    """The NumPy complex for an encoded value; anything else as is."""
    if not is_encoded(value):
        return value
    re, im, kind = value[_MARKER]
    part = np.float32 if kind == "complex64" else np.float64
    number = np.zeros(1, kind)
    number.real, number.imag = part(re), part(im)  # signed zeros and NaN kept
    return number[0]
