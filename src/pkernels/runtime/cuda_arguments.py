"""A Cuda kernel's arguments from a dispatch's keyword arguments, as CuPy passes them.

:class:`CudaArgumentPlan` is worked out once per loaded kernel (as the CPU's
:class:`~pkernels.runtime.marshal.ArgumentPlan`): a launch then walks a tuple of small
steps instead of the IR types. CuPy's kernel call (``cupy/cuda/function.pyx``) makes a
``CScalar`` of each value it is given, but passes a ``CPointer`` as it is: so a launch
writes its values into the plan's own host buffer, one 8-byte slot each, with one
``struct.pack_into``, and hands CuPy the ``CPointer`` of each slot, made once (the
driver copies the values when the kernel is launched). :meth:`CudaArgumentPlan.marshal`
gives the values themselves, in the forms CuPy packs cheapest where it must make a
``CScalar``: a Python ``int`` for the 8-byte integers (an int64, or a uint64 from 2**63:
the same bytes), a Python ``float`` for a float64, NumPy scalars for the narrower types.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from typing import Any

from ..api.random_pools import RandomPool
from ..api.types import DataType, real_part_type
from ..api.views import View
from ..errors import DispatchError
from ..translate import ir
from .marshal import INT_RANGES

#: What a step does with its argument (POOL_OR_INT: a uint64 parameter, which a random
#: pool's launch key also fills; COMPLEX: the real and imaginary parts, each a slot;
#: the C launcher of cuda_fast.py numbers them the same).
VIEW, FLOAT64, FLOAT32, BOOL, INT64, INT, POOL_OR_INT, COMPLEX = range(8)
# The struct format of each scalar type (a complex number: its part type's, twice).
_STRUCT_CODES = {
    "int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B", "uint16": "H",
    "uint32": "I", "uint64": "Q", "float32": "f", "float64": "d", "bool": "?",
}  # fmt: skip


class CudaArgumentPlan:
    """How a Cuda kernel's keyword arguments become its flat argument list: a view as its
    data pointer, extents and strides (in elements), a scalar as a value of its
    parameter's type (passed by value)."""

    def __init__(self, params: list[ir.Param]) -> None:
        steps: list[tuple[str, int, Any]] = []
        layout = "<"  # each value's struct format, padded to its 8-byte slot
        for p in params:
            if isinstance(p.type, ir.ViewType):
                steps.append((p.name, VIEW, None))
                layout += "Q" + "q" * (2 * p.type.rank)  # the pointer, extents, strides
                continue
            assert isinstance(p.type, DataType)
            parts = 2 if p.type.is_complex else 1
            value_type = real_part_type(p.type) if p.type.is_complex else p.type
            code = _STRUCT_CODES[value_type.name]
            layout += (code + "x" * (8 - struct.calcsize("<" + code))) * parts
            scalar = p.type.np_dtype.type
            if p.type.is_float:
                if p.type.name == "float64":
                    steps.append((p.name, FLOAT64, None))
                else:
                    steps.append((p.name, FLOAT32, scalar))
            elif p.type.is_complex:
                part = real_part_type(p.type)
                steps.append((p.name, COMPLEX, None if part.name == "float64" else part))
            elif p.type.kind == "bool":
                steps.append((p.name, BOOL, None))
            else:
                low, high = INT_RANGES[p.type.name]
                bounds = (low, high, p.type.name)
                if p.type.name == "uint64":
                    steps.append((p.name, POOL_OR_INT, bounds))
                elif p.type.name == "int64":
                    steps.append((p.name, INT64, bounds))
                else:
                    steps.append((p.name, INT, (*bounds, scalar)))
        self.steps = tuple(steps)
        self._layout = struct.Struct(layout)
        self._slots = (ctypes.c_uint64 * max(1, self._layout.size // 8))()
        self._pointers: tuple[Any, ...] | None = None  # made at the first launch
        #: Held by the launch using the buffer; another launch of the kernel at the same
        #: time (another thread) passes its values to CuPy instead.
        self.buffer_lock = threading.Lock()

    def packed(self, kwargs: dict[str, Any], cp: Any) -> tuple[Any, ...]:
        """The kernel's arguments for ``kwargs`` (as :meth:`marshal` checks them) written
        into this plan's buffer: a CuPy ``CPointer`` to each slot (``cp``: CuPy). The
        caller holds :attr:`buffer_lock` until the kernel is launched."""
        values = self.marshal(kwargs)
        pointers = self._pointers
        if pointers is None:
            base, pointer = ctypes.addressof(self._slots), cp.cuda.function.CPointer
            count = self._layout.size // 8
            pointers = self._pointers = tuple(pointer(base + 8 * k) for k in range(count))
        self._layout.pack_into(self._slots, 0, *values)
        return pointers

    def marshal(self, kwargs: dict[str, Any]) -> list[Any]:
        """The kernel's arguments for ``kwargs`` (a ``pk.View``: its array); DispatchError
        for strides that are not whole elements or an int its type does not hold. A random
        pool's launch key is taken last, once nothing can be refused (taking one advances
        the pool)."""
        out: list[Any] = []
        pools: list[tuple[int, RandomPool]] = []  # (slot, pool): a uint64 parameter's pool
        for name, kind, extra in self.steps:
            value = kwargs[name]
            if kind == VIEW:
                if isinstance(value, View):
                    value = value.data
                itemsize = value.itemsize
                strides = value.strides
                out.append(value.data.ptr)
                out += value.shape
                for stride in strides:
                    if stride % itemsize:
                        raise DispatchError(
                            f"{name}: array strides {strides} are not multiples of its element size"
                        )
                    out.append(stride // itemsize)
            elif kind == FLOAT64:
                out.append(float(value))
            elif kind == FLOAT32:
                out.append(extra(float(value)))
            elif kind == BOOL:
                out.append(bool(value))
            elif kind == COMPLEX:
                number = complex(value)
                if extra is None:
                    out += [number.real, number.imag]
                else:
                    part = extra.np_dtype.type
                    out += [part(number.real), part(number.imag)]
            elif kind == POOL_OR_INT and isinstance(value, RandomPool):
                pools.append((len(out), value))
                out.append(0)
            else:
                number = int(value)
                if not extra[0] <= number <= extra[1]:
                    raise DispatchError(f"{name}: {number} does not fit in {extra[2]}")
                out.append(number if kind != INT else extra[3](number))
        for slot, pool in pools:
            out[slot] = pool.launch_key()
        return out


class ConstantArguments:
    """Launch arguments that stay the same from launch to launch (a range's bounds, a
    team's sizes, a reduce's scratch addresses): 8-byte integers in slots made once, with
    a CuPy ``CPointer`` to each (:attr:`pointers`), which CuPy passes as it is, where it
    makes a ``CScalar`` of a NumPy scalar at every launch. Keep this object while its
    pointers are in use: they do not hold it."""

    __slots__ = ("_slots", "values", "pointers")

    def __init__(self, cp: Any, values: tuple[int, ...]) -> None:
        self.values = values
        self._slots = (ctypes.c_uint64 * max(1, len(values)))(*(int(v) & _UINT64 for v in values))
        base, pointer = ctypes.addressof(self._slots), cp.cuda.function.CPointer
        self.pointers: tuple[Any, ...] = tuple(pointer(base + 8 * k) for k in range(len(values)))


_UINT64 = (1 << 64) - 1  # an int64's bits, as a slot holds them
