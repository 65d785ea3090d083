"""The kernel functions, each defined once for every backend.

A :class:`KernelFunction` is one function an IR call (``ir.Call``, not a helper) may
name: its arity, how the lowering types it (``rule``), how each compiled backend spells
it (the C++/OpenMP text and, where it differs, the CUDA text) and what the Debug space
runs for it over arrays (the NumPy/CuPy function, or the special function NumPy lacks,
and C's single-precision variant for float32 arguments). The lowering reads the names
and rules (``MATH_FUNCTIONS`` ...), the emitters the spellings
(:meth:`KernelFunction.spell`), :mod:`pkernels.api.kernel_builtins` the Debug space's.

The pk.* atomics are one table too (:data:`ATOMIC_FUNCTIONS`): the name a kernel calls,
the operation the IR keeps, whether it gives the old (or new) value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..api import types as t
from ..api.types import DataType

# How a call's arguments are converted before the backend's function gets them: to the
# call's result type, to double (predicates, math.modf's parts), to int64 (an exponent,
# the random functions' seed and counter).
RESULT, DOUBLE, INT64 = "result", "double", "int64"


# An argument passed as it is (a complex number whose part or conjugate the call takes).
KEEP = "keep"

# Functions of one number that return two values: name -> the IR functions of each part
# (the runtimes' pk_rt::modf_frac ...; frexp's exponent is an int, as in Python), which
# lower_unpack assigns to two targets.
TUPLE_MATH = {"modf": ("modf_frac", "modf_whole"), "frexp": ("frexp_mantissa", "frexp_exponent")}


@dataclass(frozen=True)
class KernelFunction:
    """One function of the kernel language (see the module docstring)."""

    name: str  # as the IR calls it (ir.Call.func) and the C library names it
    arity: int
    # How the lowering types a call: "float" (computed in the arguments' float type for
    # pk.*, in double for math.*), "bool" (a predicate), or "special" (a rule of its own
    # in lower_calls: abs, min, max, floor, ceil, the random functions; or made by the
    # lowering only: nearbyint, the parts of math.modf and math.frexp).
    rule: str
    # The C++ call: {math} is the backend's math namespace (std:: on the CPU, pk_math::
    # on the GPU), {0}, {1} ... the converted arguments, {args} all of them.
    cpp: str = "{math}{name}({args})"
    cuda: str | None = None  # the CUDA call where it is not the C++ one
    integer_cpp: str | None = None  # the C++ call for an integer result (abs)
    args: tuple[str, ...] = ()  # each argument's conversion (default: RESULT)
    aliases: tuple[str, ...] = ()  # other names kernels call it by (math.gamma)
    # The Debug space over arrays: the array library's function (default: name), or the
    # scipy.special function NumPy lacks; c_name: C's double function, whose `f` variant
    # computes float32 arguments (default: name).
    ufunc: str | None = None
    special: str | None = None
    c_name: str | None = None

    def conversion(self, k: int) -> str:
        """How argument ``k`` is converted: RESULT, DOUBLE or INT64."""
        return self.args[k] if k < len(self.args) else RESULT

    def spell(self, backend: str, math: str, args: list[str], integer: bool = False) -> str:
        """The call in ``backend`` ("cpp" or "cuda", whose math namespace is ``math``)
        of the converted ``args``; ``integer``: the result is an integer."""
        template = self.cpp
        if integer and self.integer_cpp is not None:
            template = self.integer_cpp
        elif backend == "cuda" and self.cuda is not None:
            template = self.cuda
        return template.format(*args, math=math, name=self.name, args=", ".join(args))

    @property
    def array_function(self) -> str:
        return self.ufunc or self.name

    @property
    def c_function(self) -> str:
        return self.c_name or self.name


def _math(names: str, arity: int) -> list[KernelFunction]:
    """Functions of the math rule that every backend spells as C does."""
    return [KernelFunction(name, arity, "float") for name in names.split()]


_FUNCTIONS: list[KernelFunction] = [
    *_math("sqrt exp exp2 expm1 log log2 log10 log1p sin cos tan", 1),
    KernelFunction("asin", 1, "float", ufunc="arcsin"),
    KernelFunction("acos", 1, "float", ufunc="arccos"),
    KernelFunction("atan", 1, "float", ufunc="arctan"),
    *_math("sinh cosh tanh", 1),
    KernelFunction("asinh", 1, "float", ufunc="arcsinh"),
    KernelFunction("acosh", 1, "float", ufunc="arccosh"),
    KernelFunction("atanh", 1, "float", ufunc="arctanh"),
    *_math("fabs cbrt", 1),
    KernelFunction("erf", 1, "float", special="erf"),
    KernelFunction("erfc", 1, "float", special="erfc"),
    KernelFunction("tgamma", 1, "float", aliases=("gamma",), special="gamma"),
    KernelFunction("lgamma", 1, "float", special="gammaln"),
    # The C library's pow as Python calls it (pk_rt::pow_py: g++ would turn pow(x, 2.0)
    # into x * x); the GPU runtime's own pow.
    KernelFunction(
        "pow", 2, "float", cpp="pk_rt::pow_py({args})", cuda="{math}pow({args})", ufunc="power"
    ),  # fmt: skip
    KernelFunction("atan2", 2, "float", ufunc="arctan2"),
    *_math("fmod fmin fmax hypot copysign remainder", 2),
    # ldexp(x, i): i an integer; an exponent past +-100000 gives inf or 0 as any int would.
    KernelFunction(
        "ldexp",
        2,
        "float",
        cpp="{math}ldexp({0}, pk_rt::max((int)pk_rt::min({1}, (int64_t)100000), -100000))",
        args=(RESULT, INT64),
    ),
    *[KernelFunction(name, 1, "bool", args=(DOUBLE,)) for name in ("isnan", "isinf", "isfinite")],
    # pk.* only (Kokkos' names): the runtimes' own, over C's j0 / j1.
    KernelFunction(
        "cyl_bessel_j0", 1, "float", cpp="pk_rt::{name}({0})", special="j0", c_name="j0"
    ),  # fmt: skip
    KernelFunction(
        "cyl_bessel_j1", 1, "float", cpp="pk_rt::{name}({0})", special="j1", c_name="j1"
    ),  # fmt: skip
    KernelFunction("trunc", 1, "float"),
    # Rules of their own (lower_calls).
    KernelFunction("floor", 1, "special"),  # math.floor gives an int, pk.floor a float
    KernelFunction("ceil", 1, "special"),
    KernelFunction("nearbyint", 1, "special"),  # round(), pk.rint: halves to even
    KernelFunction("abs", 1, "special", cpp="{math}fabs({0})", integer_cpp="pk_rt::iabs({0})"),
    KernelFunction("min", 2, "special", cpp="pk_rt::min({0}, {1})"),
    KernelFunction("max", 2, "special", cpp="pk_rt::max({0}, {1})"),
    # Counter-based random numbers (splitmix64 of seed and counter): the same value for
    # the same (seed, counter) in every space and thread count.
    KernelFunction(
        "rand",
        2,
        "special",
        cpp="pk_rt::rand_uniform((uint64_t){0}, (uint64_t){1})",
        args=(INT64, INT64),
    ),  # fmt: skip
    KernelFunction(
        "rand_int",
        3,
        "special",
        args=(INT64, INT64, INT64),
        cpp="pk_rt::rand_int((uint64_t){0}, (uint64_t){1}, {2})",
    ),  # fmt: skip
    # A workunit call's stream of its random pool's draws: of the launch key and an index
    # (translate.lower_random; the key is a uint64, passed through int64 unchanged).
    KernelFunction(
        "rand_stream",
        2,
        "special",
        args=(INT64, INT64),
        cpp="pk_rt::rand_stream((uint64_t){0}, (uint64_t){1})",
    ),  # fmt: skip
    # One part of math.modf / math.frexp (see TUPLE_MATH), in double.
    *[
        KernelFunction(name, 1, "special", cpp="pk_rt::{name}({0})", args=(DOUBLE,))
        for parts in TUPLE_MATH.values()
        for name in parts
    ],
    # Complex numbers (shared/complex.hpp): z.real, z.imag, pk.conj(z), abs(z) (NumPy's:
    # the C library's hypot of the parts, in their type), and pk.complex128(re, im) /
    # pk.complex64(re, im) of real numbers (each part a double first, as NumPy takes it).
    KernelFunction("creal", 1, "special", cpp="({0}).re", args=(KEEP,), ufunc="real"),
    KernelFunction("cimag", 1, "special", cpp="({0}).im", args=(KEEP,), ufunc="imag"),
    KernelFunction("cconj", 1, "special", cpp="pk_rt::conj({0})", args=(KEEP,), ufunc="conj"),
    KernelFunction(
        "cabs", 1, "special", cpp="pk_rt::cabs({0})", args=(KEEP,), ufunc="abs"
    ),  # fmt: skip
    KernelFunction(
        "complex128",
        2,
        "special",
        cpp="pk_rt::complex<double>({0}, {1})",
        args=(DOUBLE, DOUBLE),
        ufunc="complex128",
    ),
    KernelFunction(
        "complex64",
        2,
        "special",
        cpp="pk_rt::complex<float>((float){0}, (float){1})",
        args=(DOUBLE, DOUBLE),
        ufunc="complex64",
    ),
]

#: pk.* functions of one number that also take a complex number (Kokkos overloads them
#: for Kokkos::complex): pk name -> NumPy's function, what a kernel run as Python calls.
#: On the CPU the C library's (cexp, clog, ...; log10 and log2 as clog times the
#: constant), which is what NumPy calls there: NumPy's results, bit for bit.
COMPLEX_MATH = {
    "sqrt": "sqrt", "exp": "exp", "log": "log", "log10": "log10", "log2": "log2",
    "sin": "sin", "cos": "cos", "tan": "tan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
    "asin": "arcsin", "acos": "arccos", "atan": "arctan",
    "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh",
}  # fmt: skip
_FUNCTIONS += [
    KernelFunction(
        f"complex_{name}", 1, "special", cpp="pk_rt::{name}({0})", args=(KEEP,), ufunc=ufunc
    )  # fmt: skip
    for name, ufunc in COMPLEX_MATH.items()
]
#: Every kernel function by its IR name.
KERNEL_FUNCTIONS: dict[str, KernelFunction] = {f.name: f for f in _FUNCTIONS}

#: The names kernels call with the math rule: name -> (arity, "float" or "bool").
MATH_FUNCTIONS: dict[str, tuple[int, str]] = {
    name: (f.arity, f.rule)
    for f in _FUNCTIONS
    if f.rule != "special"
    for name in (f.name, *f.aliases)
}


def ir_name(name: str) -> str:
    """The IR's (and C's) name of the function kernels call ``name`` (math.gamma:
    tgamma)."""
    for f in _FUNCTIONS:
        if name in f.aliases:
            return f.name
    return name


# Math functions a kernel may call bare, without an import, as PyKokkos translates them
# (its math_functions): the pk.* function where pkernels has one (Kokkos' semantics,
# as PyKokkos' C++ gets), else math's (degrees, radians).
BARE_MATH = frozenset(
    (
        "acos acosh asin asinh atan atan2 atanh ceil copysign cos cosh degrees exp expm1 "
        "fabs floor fmod hypot isfinite isinf isnan log log10 log1p log2 radians remainder "
        "sin sinh sqrt tan tanh trunc cbrt exp2 erf erfc tgamma lgamma fmin fmax"
    ).split()
)

# math.floor / math.ceil return Python ints; pk.floor / pk.ceil return floats (Kokkos).
PY_INT_ROUNDING = {"floor", "ceil", "trunc"}

MATH_CONSTANTS = {"pi": 3.141592653589793, "e": 2.718281828459045, "tau": 6.283185307179586}
MATH_CONSTANTS |= {"inf": float("inf"), "nan": float("nan")}

# The random functions: name -> (arity, result type).
RANDOM_FUNCTIONS: dict[str, tuple[int, DataType]] = {
    "rand": (KERNEL_FUNCTIONS["rand"].arity, t.float64),
    "rand_int": (KERNEL_FUNCTIONS["rand_int"].arity, t.int64),
}

# The pk.* atomics: name -> (the IR's operation, whether the call gives a value).
ATOMIC_FUNCTIONS: dict[str, tuple[str, bool]] = {}
for _op in ("add", "sub", "mul", "div", "max", "min", "and", "or", "xor"):
    ATOMIC_FUNCTIONS[f"atomic_{_op}"] = (_op, False)
    ATOMIC_FUNCTIONS[f"atomic_fetch_{_op}"] = (_op, True)
for _op in ("add", "sub", "mul", "div", "max", "min", "and", "or", "xor", "mod", "lshift",
            "rshift"):  # fmt: skip
    ATOMIC_FUNCTIONS[f"atomic_{_op}_fetch"] = (f"{_op}_new", True)
for _op in ("mod", "lshift", "rshift"):  # integer views only
    ATOMIC_FUNCTIONS[f"atomic_{_op}"] = (_op, False)
    ATOMIC_FUNCTIONS[f"atomic_fetch_{_op}"] = (_op, True)
ATOMIC_FUNCTIONS["atomic_load"] = ("load", True)
ATOMIC_FUNCTIONS["atomic_store"] = ("exchange", False)
ATOMIC_FUNCTIONS["atomic_exchange"] = ("exchange", True)
ATOMIC_FUNCTIONS["atomic_compare_exchange"] = ("cas", True)
ATOMIC_FUNCTIONS["atomic_increment"] = ("inc", False)
ATOMIC_FUNCTIONS["atomic_decrement"] = ("dec", False)
# The arguments an atomic takes (view, [indices], operands ...) by operation; else 3.
ATOMIC_ARITY = {"cas": 4, "inc": 2, "dec": 2, "load": 2}
# Operations on integer views only.
INTEGER_ATOMICS = ("and", "or", "xor", "mod", "lshift", "rshift")

# Functions the lowering writes with the IR's own operations (no call to spell): pk.sign,
# pk.square ... of a number (NumPy's element functions), and math.degrees and
# math.radians (the factors CPython multiplies by).
ELEMENT_MATH = frozenset({"sign", "square", "reciprocal", "rint", "conj"})
ANGLES = {"degrees": 180.0 / math.pi, "radians": math.pi / 180.0}
