"""``pk.*`` functions kernels call: math, atomics and printf.

Inside compiled kernels these names are translated to C++; these Python definitions
are what the ``Debug`` space (and any host code) runs.
"""

from __future__ import annotations

import bisect
import builtins
import ctypes
import ctypes.util
import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ..translate.builtin_table import COMPLEX_MATH as _COMPLEX_MATH
from ..translate.builtin_table import KERNEL_FUNCTIONS as _KERNEL_FUNCTIONS
from .host_arrays import elementwise as _elementwise
from .host_arrays import special
from .random_pools import rand_bits as _rand_bits

pi = math.pi
e = math.e


def _exp2(x: float) -> float:
    """2 ** x."""
    return 2.0**x


# The C library, as compiled kernels call it: j0/j1, and the float functions (sqrtf ...)
# that a pk.* function of float32 arguments computes with (Kokkos keeps single precision).
_libm = ctypes.CDLL(ctypes.util.find_library("m"))
_libm.j0.restype = _libm.j1.restype = ctypes.c_double
_libm.j0.argtypes = _libm.j1.argtypes = [ctypes.c_double]


def _c_float(name: str, arity: int = 1) -> Callable[..., float] | None:
    function = getattr(_libm, name, None)
    if function is not None:
        function.restype = ctypes.c_float
        function.argtypes = [ctypes.c_float] * arity
    return function


def _each(scalar: Callable[..., Any], name: str) -> Any:
    """The pk.* math function ``name`` (see host_arrays.elementwise): ``scalar`` on
    numbers; over arrays, the function the builtin table names for the Debug space; on
    float32 numbers, the ``f`` variant of its C function (as Kokkos keeps single
    precision)."""
    function = _KERNEL_FUNCTIONS[name]
    ufunc = special(function.special, scalar) if function.special else function.array_function
    single = _c_float(f"{function.c_function}f", function.arity)
    return _elementwise(scalar, ufunc, single, _COMPLEX_MATH.get(name))


# Each takes a number (kernels, the Debug space) or, from host code, an array: then it
# runs element-wise over it (PyKokkos' ufuncs), see host_arrays.
sqrt, exp, log = _each(math.sqrt, "sqrt"), _each(math.exp, "exp"), _each(math.log, "log")
log2, log10, log1p = (
    _each(math.log2, "log2"),
    _each(math.log10, "log10"),
    _each(math.log1p, "log1p"),
)
expm1, exp2 = _each(math.expm1, "expm1"), _each(_exp2, "exp2")
sin, cos, tan = _each(math.sin, "sin"), _each(math.cos, "cos"), _each(math.tan, "tan")
asin, acos, atan = (
    _each(math.asin, "asin"),
    _each(math.acos, "acos"),
    _each(math.atan, "atan"),
)
atan2, hypot = _each(math.atan2, "atan2"), _each(math.hypot, "hypot")
sinh, cosh, tanh = _each(math.sinh, "sinh"), _each(math.cosh, "cosh"), _each(math.tanh, "tanh")
asinh, acosh = _each(math.asinh, "asinh"), _each(math.acosh, "acosh")
atanh = _each(math.atanh, "atanh")
pow, fabs, fmod = (
    _each(math.pow, "pow"),
    _each(math.fabs, "fabs"),
    _each(math.fmod, "fmod"),
)
copysign, cbrt = _each(math.copysign, "copysign"), _each(math.cbrt, "cbrt")
erf = _each(math.erf, "erf")
erfc = _each(math.erfc, "erfc")
tgamma = _each(math.gamma, "tgamma")
lgamma = _each(math.lgamma, "lgamma")


def cyl_bessel_j0(x: float) -> float:
    """J0(x), the Bessel function of the first kind of order 0 (C's j0, as kernels)."""
    return _libm.j0(x)


def cyl_bessel_j1(x: float) -> float:
    """J1(x), the Bessel function of the first kind of order 1 (C's j1, as kernels)."""
    return _libm.j1(x)


cyl_bessel_j0 = _each(cyl_bessel_j0, "cyl_bessel_j0")
cyl_bessel_j1 = _each(cyl_bessel_j1, "cyl_bessel_j1")
# Predicates: a bool in every precision (no float variant to call).
isnan, isinf = _elementwise(math.isnan, "isnan"), _elementwise(math.isinf, "isinf")
isfinite = _elementwise(math.isfinite, "isfinite")
# Kernels may spell these pk.abs / pk.min / pk.max; they are Python's own.
abs, min, max = builtins.abs, builtins.min, builtins.max  # noqa: A001


def trunc(x: float) -> float:
    """``x`` rounded toward zero, as a float (Kokkos semantics; math.trunc gives an int)."""
    return float(math.trunc(x))


trunc = _each(trunc, "trunc")


def floor(x: float) -> float:
    """Largest integral value not above ``x``, as a float (Kokkos semantics)."""
    return float(math.floor(x))


floor = _each(floor, "floor")


def ceil(x: float) -> float:
    """Smallest integral value not below ``x``, as a float (Kokkos semantics)."""
    return float(math.ceil(x))


ceil = _each(ceil, "ceil")


def fmin(a: float, b: float) -> float:
    """The smaller of two floats, ignoring a NaN operand (C ``fmin``)."""
    return float(np.fmin(a, b))


fmin = _each(fmin, "fmin")


def fmax(a: float, b: float) -> float:
    """The larger of two floats, ignoring a NaN operand (C ``fmax``)."""
    return float(np.fmax(a, b))


fmax = _each(fmax, "fmax")


def rand(seed: Any, counter: int | None = None) -> float:
    """A uniform float in [0, 1) for (seed, counter): counter-based (splitmix64), so each
    index gets its own reproducible number in every space, whatever the thread count.
    Use the index as the counter: ``x = pk.rand(seed, i)``.

    ``pk.rand(T)`` (one argument, a type such as ``pk.double``) draws from the random pool
    of the workunit it is in (see :mod:`pkernels.api.random_pools`); the Debug space runs
    those draws through the pool's stream, so it is no call of this function."""
    if counter is None:
        raise TypeError(
            f"pk.rand({getattr(seed, '__name__', seed)}) draws from the random pool of a "
            "workunit (a pk.Random_XorShift64_Pool field or argument), so it is for kernels; "
            "elsewhere draw counter-based numbers with pk.rand(seed, counter)"
        )
    return (_rand_bits(seed, counter) >> 11) * 2.0**-53


def rand_int(seed: int, counter: int, n: int) -> int:
    """A uniform integer in [0, n) for (seed, counter) (0 when n <= 0); see :func:`rand`."""
    return _rand_bits(seed, counter) % int(n) if n > 0 else 0


def lower_bound(view: Any, count: int, value: Any) -> int:
    """Kokkos' ``lower_bound``: the first index ``k < count`` of the sorted rank-1 view
    with ``view[k] >= value``, else ``count``."""
    return bisect.bisect_left(view, value, 0, int(count))


def upper_bound(view: Any, count: int, value: Any) -> int:
    """Kokkos' ``upper_bound``: the first index ``k < count`` of the sorted rank-1 view
    with ``view[k] > value``, else ``count``."""
    return bisect.bisect_right(view, value, 0, int(count))


def printf(fmt: str, *args: Any) -> None:
    """C-style formatted print from a kernel: ``pk.printf("%d %f\\n", i, x)``."""
    sys.stdout.write(fmt % args)


def _index(indices: Any) -> tuple[int, ...]:
    return tuple(int(i) for i in indices)


def _update(view: Any, indices: Any, fn: Any) -> Any:
    idx = _index(indices)
    old = view[idx]
    view[idx] = fn(old)
    return old


def _new(view: Any, indices: Any, fn: Any) -> Any:
    """Like :func:`_update`, returning the new value (as the element type stores it)."""
    _update(view, indices, fn)
    return view[_index(indices)]


def atomic_add(view: Any, indices: Any, value: Any) -> None:
    """``view[indices] += value`` atomically."""
    _update(view, indices, lambda a: a + value)


def atomic_sub(view: Any, indices: Any, value: Any) -> None:
    """``view[indices] -= value`` atomically."""
    _update(view, indices, lambda a: a - value)


def atomic_mul(view: Any, indices: Any, value: Any) -> None:
    """``view[indices] *= value`` atomically."""
    _update(view, indices, lambda a: a * value)


def _divide(a: Any, value: Any) -> Any:
    """An atomic division as the compiled kernels make it: C's truncating ``/`` for
    integers (exact, not through a float), true division otherwise."""
    if isinstance(a, int | np.integer) and isinstance(value, int | np.integer):
        if value == 0:
            raise ZeroDivisionError("atomic_div of an integer by zero")
        quotient = abs(int(a)) // abs(int(value))
        return -quotient if (a < 0) != (value < 0) else quotient
    return a / value


def atomic_div(view: Any, indices: Any, value: Any) -> None:
    """``view[indices] /= value`` atomically."""
    _update(view, indices, lambda a: _divide(a, value))


def atomic_max(view: Any, indices: Any, value: Any) -> None:
    """``view[indices] = max(view[indices], value)`` atomically."""
    _update(view, indices, lambda a: max(a, value))


def atomic_min(view: Any, indices: Any, value: Any) -> None:
    """``view[indices] = min(view[indices], value)`` atomically."""
    _update(view, indices, lambda a: min(a, value))


def atomic_fetch_add(view: Any, indices: Any, value: Any) -> Any:
    """Add atomically; return the old value."""
    return _update(view, indices, lambda a: a + value)


def atomic_fetch_sub(view: Any, indices: Any, value: Any) -> Any:
    """Subtract atomically; return the old value."""
    return _update(view, indices, lambda a: a - value)


def atomic_fetch_mul(view: Any, indices: Any, value: Any) -> Any:
    """Multiply atomically; return the old value."""
    return _update(view, indices, lambda a: a * value)


def atomic_fetch_div(view: Any, indices: Any, value: Any) -> Any:
    """Divide atomically; return the old value."""
    return _update(view, indices, lambda a: _divide(a, value))


def atomic_fetch_max(view: Any, indices: Any, value: Any) -> Any:
    """Store the maximum atomically; return the old value."""
    return _update(view, indices, lambda a: max(a, value))


def atomic_fetch_min(view: Any, indices: Any, value: Any) -> Any:
    """Store the minimum atomically; return the old value."""
    return _update(view, indices, lambda a: min(a, value))


def atomic_fetch_and(view: Any, indices: Any, value: Any) -> Any:
    """Bitwise-and atomically; return the old value."""
    return _update(view, indices, lambda a: a & value)


def atomic_fetch_or(view: Any, indices: Any, value: Any) -> Any:
    """Bitwise-or atomically; return the old value."""
    return _update(view, indices, lambda a: a | value)


def atomic_fetch_xor(view: Any, indices: Any, value: Any) -> Any:
    """Bitwise-xor atomically; return the old value."""
    return _update(view, indices, lambda a: a ^ value)


def atomic_and(view: Any, indices: Any, value: Any) -> None:
    """Bitwise-and atomically."""
    _update(view, indices, lambda a: a & value)


def atomic_or(view: Any, indices: Any, value: Any) -> None:
    """Bitwise-or atomically."""
    _update(view, indices, lambda a: a | value)


def atomic_xor(view: Any, indices: Any, value: Any) -> None:
    """Bitwise-xor atomically."""
    _update(view, indices, lambda a: a ^ value)


def atomic_add_fetch(view: Any, indices: Any, value: Any) -> Any:
    """Add atomically; return the new value."""
    return _update(view, indices, lambda a: a + value) + value


def atomic_sub_fetch(view: Any, indices: Any, value: Any) -> Any:
    """Subtract atomically; return the new value."""
    return _update(view, indices, lambda a: a - value) - value


def atomic_mul_fetch(view: Any, indices: Any, value: Any) -> Any:
    """Multiply atomically; return the new value."""
    return _new(view, indices, lambda a: a * value)


def atomic_div_fetch(view: Any, indices: Any, value: Any) -> Any:
    """Divide atomically; return the new value."""
    return _new(view, indices, lambda a: _divide(a, value))


def atomic_max_fetch(view: Any, indices: Any, value: Any) -> Any:
    """Store the larger of the element and ``value`` atomically; return the new value."""
    return _new(view, indices, lambda a: value if a < value else a)


def atomic_min_fetch(view: Any, indices: Any, value: Any) -> Any:
    """Store the smaller of the element and ``value`` atomically; return the new value."""
    return _new(view, indices, lambda a: value if value < a else a)


def atomic_and_fetch(view: Any, indices: Any, value: Any) -> Any:
    """Bitwise-and atomically; return the new value."""
    return _new(view, indices, lambda a: a & value)


def atomic_or_fetch(view: Any, indices: Any, value: Any) -> Any:
    """Bitwise-or atomically; return the new value."""
    return _new(view, indices, lambda a: a | value)


def atomic_xor_fetch(view: Any, indices: Any, value: Any) -> Any:
    """Bitwise-xor atomically; return the new value."""
    return _new(view, indices, lambda a: a ^ value)


def atomic_mod(view: Any, indices: Any, value: Any) -> None:
    """``view[indices] %= value`` atomically (Python's modulo, integer views)."""
    _update(view, indices, lambda a: a % value)


def atomic_fetch_mod(view: Any, indices: Any, value: Any) -> Any:
    """Modulo atomically; return the old value."""
    return _update(view, indices, lambda a: a % value)


def atomic_mod_fetch(view: Any, indices: Any, value: Any) -> Any:
    """Modulo atomically; return the new value."""
    return _new(view, indices, lambda a: a % value)


def atomic_lshift(view: Any, indices: Any, value: Any) -> None:
    """``view[indices] <<= value`` atomically (integer views)."""
    _update(view, indices, lambda a: a << value)


def atomic_fetch_lshift(view: Any, indices: Any, value: Any) -> Any:
    """Shift left atomically; return the old value."""
    return _update(view, indices, lambda a: a << value)


def atomic_lshift_fetch(view: Any, indices: Any, value: Any) -> Any:
    """Shift left atomically; return the new value."""
    return _new(view, indices, lambda a: a << value)


def atomic_rshift(view: Any, indices: Any, value: Any) -> None:
    """``view[indices] >>= value`` atomically (integer views)."""
    _update(view, indices, lambda a: a >> value)


def atomic_fetch_rshift(view: Any, indices: Any, value: Any) -> Any:
    """Shift right atomically; return the old value."""
    return _update(view, indices, lambda a: a >> value)


def atomic_rshift_fetch(view: Any, indices: Any, value: Any) -> Any:
    """Shift right atomically; return the new value."""
    return _new(view, indices, lambda a: a >> value)


def atomic_load(view: Any, indices: Any) -> Any:
    """The element, read atomically."""
    return view[_index(indices)]


def atomic_store(view: Any, indices: Any, value: Any) -> None:
    """Store ``value`` atomically."""
    _update(view, indices, lambda a: value)


def atomic_increment(view: Any, indices: Any) -> None:
    """Add one atomically."""
    _update(view, indices, lambda a: a + 1)


def atomic_decrement(view: Any, indices: Any) -> None:
    """Subtract one atomically."""
    _update(view, indices, lambda a: a - 1)


def atomic_exchange(view: Any, indices: Any, value: Any) -> Any:
    """Store ``value`` atomically; return the old value."""
    return _update(view, indices, lambda a: value)


def atomic_compare_exchange(view: Any, indices: Any, expected: Any, desired: Any) -> Any:
    """Store ``desired`` if the element equals ``expected``; return the old value."""
    return _update(view, indices, lambda a: desired if a == expected else a)


__all__ = sorted(
    name
    for name, value in list(globals().items())
    if not name.startswith("_")
    and name
    not in ("annotations", "bisect", "builtins", "ctypes", "math", "np", "sys", "Any", "special")
)
