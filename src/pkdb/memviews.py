"""Views that live only in the kernel (scratch views) at a kernel stop.

A TeamPolicy kernel's ``pk.ScratchView1D(team_member.team_scratch(0), n)`` is memory of
the team, not an array of the caller. The front end reads the view's C++ struct in the
stopped thread (data pointer, extents, strides in elements, and the element type from
its C++ type) and sends the agent a marked description (:func:`encode`); the agent, in
the same process as the kernel, sees a NumPy array over that memory (:func:`resolve`):
``p s``, ``p s[2:4]`` and ``eval s[0] = 1.0`` work on the team's own data while the
kernel is held.
"""

from __future__ import annotations

import ctypes
import re
from typing import Any

_MARKER = "__pkdb_memview__"
_FIELD_DATA = re.compile(r"\bdata = (?:\([^)]*\) )?0x([0-9a-fA-F]+)")
_FIELD_EXTENT = re.compile(r"\bextent = \{([-\d, ]+)\}")
_FIELD_STRIDE = re.compile(r"\bstride = \{([-\d, ]+)\}")
# A view's C++ type, pk_rt:: or not: its element type and rank. The layout after them
# (a number, as gdb prints it: View<double, 2, 2>) is not needed: the strides are read.
_VIEW_TYPE = re.compile(r"\bR?View<\s*([^,]+?)\s*,\s*(\d+)\s*,")
# A view's data pointer as gdb may print it, with its type: "data = (double *) 0x..."
# (cuda-gdb adds memory-space qualifiers: "(@shared double *)").
_DATA_CAST = re.compile(r"\bdata = \(([^)]*?)\s*\*\)")
# The C++ element types of views (as gdb names them) -> NumPy dtypes.
_DTYPES = {
    "double": "float64",
    "float": "float32",
    "long": "int64",
    "long long": "int64",
    "int": "int32",
    "short": "int16",
    "signed char": "int8",
    "char": "int8",
    "unsigned long": "uint64",
    "unsigned long long": "uint64",
    "unsigned int": "uint32",
    "unsigned short": "uint16",
    "unsigned char": "uint8",
    "bool": "bool",
    "pk_rt::complex<double>": "complex128",
    "pk_rt::complex<float>": "complex64",
}


def encode(text: str, ctype: str) -> dict[str, Any] | None:
    """The view whose gdb rendering is ``text`` and C++ type ``ctype`` as a marked
    description; None when it is not a view of known elements, or not set up yet."""
    match = _VIEW_TYPE.search(ctype)
    if match is None or match.group(1) not in _DTYPES:
        return None
    data = _FIELD_DATA.search(text)
    extent = _FIELD_EXTENT.search(text)
    stride = _FIELD_STRIDE.search(text)
    if data is None or extent is None or stride is None:
        return None
    try:
        address = int(data.group(1), 16)
        shape = [int(e) for e in extent.group(1).split(",")]
        strides = [int(s) for s in stride.group(1).split(",")]
    except ValueError:
        return None
    if address == 0 or len(shape) != int(match.group(2)) or len(strides) != len(shape):
        return None
    dtype = _DTYPES[match.group(1)]
    return {_MARKER: {"address": address, "dtype": dtype, "shape": shape, "strides": strides}}


def is_encoded(value: object) -> bool:
    return isinstance(value, dict) and _MARKER in value


def resolve(value: dict[str, Any]) -> Any:
    """The NumPy array over the view's memory (valid while the kernel is held; in the
    agent: the front end, which only encodes, never imports NumPy for it)."""
    import numpy as np

    spec = value[_MARKER]
    dtype = np.dtype(spec["dtype"])
    shape = tuple(spec["shape"])
    strides = tuple(s * dtype.itemsize for s in spec["strides"])
    if not shape or 0 in shape:
        return np.zeros(shape, dtype)
    span = sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) + dtype.itemsize
    memory = (ctypes.c_char * span).from_address(spec["address"])
    return np.ndarray(shape, dtype, buffer=memory, strides=strides)


def describe(value: dict[str, Any]) -> str:
    """How ``locals`` and ``args`` show it (or its copy), as views of the caller's arrays
    are shown: ``view(shape=(8,), dtype=float64)`` (``p`` shows the elements)."""
    spec = value[_MARKER] if _MARKER in value else value[_COPY]
    return f"view(shape={tuple(spec['shape'])}, dtype={spec['dtype']})"


# -- copies: a GPU thread's scratch view --------------------------------------------------
#
# At a GPU stop the whole program is held and Python runs in the evaluation helper, which
# cannot map a block's shared memory: the front end reads the elements through cuda-gdb
# and sends them as a marked copy, which the helper sees as a NumPy array (reads show
# what the team wrote; writes stay in the copy).

_COPY = "__pkdb_memcopy__"


def encode_copy(elements: list[Any], ctype: str, shape: list[int]) -> dict[str, Any] | None:
    """The elements (as gdb printed them, parsed; row-major) of a view of C++ type
    ``ctype`` and ``shape`` as a marked copy; None for a type that is no known view."""
    match = _VIEW_TYPE.search(ctype)
    if match is None or match.group(1) not in _DTYPES or len(shape) != int(match.group(2)):
        return None
    if not all(isinstance(e, int | float) for e in elements):  # complex, structs: not read
        return None
    return {_COPY: {"elements": elements, "dtype": _DTYPES[match.group(1)], "shape": shape}}


def view_ctype_of(text: str, rank: int) -> str:
    """A view's C++ type as far as its gdb rendering ``text`` tells it (the element type
    of a typed data pointer), for :func:`encode_copy` when its declared type is not
    known; "" when the text does not say."""
    cast = _DATA_CAST.search(text)
    if cast is None:
        return ""
    element = " ".join(w for w in cast.group(1).split() if not w.startswith("@") and w != "const")
    return f"View<{element}, {rank}, "


def is_copy(value: object) -> bool:
    return isinstance(value, dict) and _COPY in value


def decode_copy(value: object) -> object:
    """The NumPy array of a marked copy; anything else as is."""
    if not is_copy(value):
        return value
    import numpy as np

    spec = value[_COPY]  # type: ignore[index]
    return np.array(spec["elements"], dtype=spec["dtype"]).reshape(spec["shape"])
