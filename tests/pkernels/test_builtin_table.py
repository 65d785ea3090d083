"""The builtin table: each kernel function defined once, spelled by every backend from it.

One kernel calling a spread of kernel functions (two spelled differently by the CPU and
the GPU) gives the C++ and CUDA calls the table says, and the same numbers in the
compiled OpenMP space and the Debug space; every table entry the Debug space calls over
arrays names a function NumPy has (or a special function it computes per element).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import pkernels as pk
from pkernels.api import kernel_builtins
from pkernels.runtime.marshal import argument_type
from pkernels.translate.builtin_table import KERNEL_FUNCTIONS, MATH_FUNCTIONS, ir_name
from pkernels.translate.emit_cuda import emit_cuda_module
from pkernels.translate.kernel import lower_workunit, translate_workunit


@pk.workunit
def spread(i, out, x, n: int):
    v = x[i]
    out[i, 0] = math.pow(v, 1.5) + v**0.5
    out[i, 1] = pk.sqrt(v) + pk.fmax(v, 0.25) + abs(v - 1.0)
    out[i, 2] = math.ldexp(v, n) + math.gamma(v + 1.0)
    out[i, 3] = pk.cyl_bessel_j0(v) + min(v, 0.5) + max(v, 0.75)
    out[i, 4] = float(math.isnan(v)) + pk.floor(v * 3.0) + float(abs(n - 7))


def _sources(**kwargs: object) -> tuple[str, str]:
    arg_types = {name: argument_type(name, value) for name, value in kwargs.items()}
    cpp = translate_workunit(spread, "for", arg_types).source
    function, helpers = lower_workunit(spread, "for", arg_types)
    cuda = emit_cuda_module(function, helpers, "for", pk.int64).source
    return cpp, cuda


def test_each_backend_spells_the_calls_as_the_table_says():
    cpp, cuda = _sources(out=np.zeros((4, 5)), x=np.zeros(4), n=3)
    # pow: the CPU's Python-exact pow, the GPU runtime's own; both for math.pow and **.
    assert cpp.count("pk_rt::pow_py(") == 2 and "pk_math::pow(" not in cpp
    assert cuda.count("pk_math::pow(") == 2 and "pow_py" not in cuda
    for name in ("sqrt", "fmax", "fabs", "ldexp", "tgamma", "isnan", "floor"):
        assert f"std::{name}(" in cpp, name
        assert f"pk_math::{name}(" in cuda, name
    for spelled in ("pk_rt::cyl_bessel_j0(", "pk_rt::min(", "pk_rt::max(", "pk_rt::iabs("):
        assert spelled in cpp and spelled in cuda, spelled


def test_compiled_and_debug_spaces_agree_on_the_table_functions():
    x = np.array([0.1, 0.5, 1.0, 2.5])
    results = {}
    for space in (pk.OpenMP, pk.Debug):
        out = np.zeros((4, 5))
        pk.parallel_for(pk.RangePolicy(space, 0, 4), spread, out=out, x=x, n=3)
        results[space] = out
    np.testing.assert_allclose(results[pk.OpenMP], results[pk.Debug], rtol=1e-14)
    assert results[pk.OpenMP][1, 0] == pytest.approx(0.5**1.5 + 0.5**0.5)


def test_every_table_entry_is_a_function_kernels_and_the_debug_space_have():
    assert ir_name("gamma") == "tgamma" and MATH_FUNCTIONS["gamma"] == MATH_FUNCTIONS["tgamma"]
    for name, function in KERNEL_FUNCTIONS.items():
        if function.rule == "special":
            continue
        assert name in MATH_FUNCTIONS
        if hasattr(kernel_builtins, name):  # pk.<name>: over arrays, NumPy's or special
            assert function.special or hasattr(np, function.array_function), name
            with np.errstate(invalid="ignore"):  # acosh(0.5): NaN, as NumPy gives it
                values = kernel_builtins.__dict__[name](*[np.array([0.5, 0.25])] * function.arity)
            assert np.shape(values) == (2,), name
