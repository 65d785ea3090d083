"""Single-precision kernel variables on their way to the agent's Python.

A ``pk.float32`` local is a NumPy float32 to the expressions evaluated at a stop, so
that ``p a * 3`` rounds as the kernel rounds. JSON carries no float32: the front end
sends ``{"__pk_float32__": value}`` and the agent turns it back into one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_MARKER = "__pk_float32__"


def encode(value: float) -> dict[str, float]:
    """A JSON-able stand-in for a float32 value (exact: a float32 is a double too)."""
    return {_MARKER: float(np.float32(value))}


def is_encoded(value: object) -> bool:
    return isinstance(value, dict) and set(value) == {_MARKER}


def decode(value: Any) -> Any:
    """The NumPy float32 for an encoded value; anything else as is."""
    return np.float32(value[_MARKER]) if is_encoded(value) else value
