"""pk.Cuda runs the complex arithmetic and the random-pool draws of test_complex.py and
test_random_pools.py on CuPy arrays and gets the CPU's bits (complex: NumPy's scalars; a
pool: the same draws as OpenMP); its complex math functions are within a few ulps of
NumPy's, with NumPy's infinities, zeros and NaNs. Skipped, with the reason, without CuPy and a GPU.
Run on a GPU machine: ``python3 -m pytest -q tests/pkernels/test_cuda_complex_random.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_complex import (
    MATH_COLUMNS,
    _double_inputs,
    _double_outputs,
    _run,
    _same_bits,
    complex_math,
    complex_ops,
)
from test_complex_math import arguments, kind, relative_error
from test_cuda import GPU_MISSING
from test_random_pools import _each_type, draw_a_few, draw_each_type

import pkernels as pk

pytestmark = pytest.mark.skipif(
    GPU_MISSING is not None, reason=f"needs CuPy and an NVIDIA GPU: {GPU_MISSING}"
)

# Columns computed with abs(): CUDA's hypot, which may differ from the C library's in the
# last bit (docs/kernels.md says so); everything else must be the same bits.
HYPOT_COLUMNS = {"out": [13], "mags": [0, 3]}


def _on_gpu(kernel, outputs, **inputs):
    import cupy

    results = {name: cupy.zeros(shape, dtype) for name, (shape, dtype) in outputs.items()}
    n = len(next(iter(inputs.values())))
    pk.parallel_for(
        pk.RangePolicy(pk.Cuda, 0, n),
        kernel,
        **results,
        **{name: cupy.asarray(value) for name, value in inputs.items()},
    )
    return {name: cupy.asnumpy(value) for name, value in results.items()}


def test_complex128_arithmetic_on_the_gpu_is_numpys():
    inputs = _double_inputs()
    outputs = _double_outputs(len(inputs["a"]))
    want = _run(pk.Debug, complex_ops, outputs, **inputs)
    got = _on_gpu(complex_ops, outputs, **inputs)
    for name, expected in want.items():
        exact = np.ones(expected.shape[1], bool)
        exact[HYPOT_COLUMNS.get(name, [])] = False
        same = _same_bits(got[name][:, exact], expected[:, exact])
        bad = np.argwhere(~same)
        assert not len(bad), (name, bad[:5].tolist())
    # abs(a) within an ulp of the C library's hypot; conj(a) - abs(b) within that ulp
    # plus the subtraction's rounding.
    b, a = inputs["b"], inputs["a"]
    with np.errstate(invalid="ignore", over="ignore"):
        _assert_close_or_same(got["mags"][:, 0], want["mags"][:, 0], np.spacing(np.abs(a)))
        column = got["out"][:, 13], want["out"][:, 13]
        assert _same_bits(column[0].imag, column[1].imag).all()
        tolerance = np.spacing(np.abs(b)) + np.spacing(np.abs(column[1].real))
        _assert_close_or_same(column[0].real, column[1].real, tolerance)


def _assert_close_or_same(got, want, tolerance):
    bad = np.flatnonzero(~(_same_bits(got, want) | (np.abs(got - want) <= tolerance)))
    assert not len(bad), [(k, got[k], want[k], tolerance[k]) for k in bad[:4]]


def test_random_pool_draws_on_the_gpu_are_openmps():
    import cupy

    cpu = _each_type(pk.OpenMP, n=2048)
    views = {name: cupy.zeros(len(values), values.dtype) for name, values in cpu.items()}
    pool = pk.Random_XorShift64_Pool(2026, 64)
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 2048), draw_each_type, pool=pool, **views)
    for name, values in cpu.items():
        np.testing.assert_array_equal(cupy.asnumpy(views[name]), values, err_msg=name)
    # A second launch advances the pool on the GPU as on the CPU.
    pools = [pk.Random_XorShift64_Pool(9, 4) for _ in range(2)]
    gpu, host = cupy.full((64, 5), -1.0), np.full((64, 5), -1.0)
    for _ in range(2):
        pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 64), draw_a_few, out=gpu, pool=pools[0])
        pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 64), draw_a_few, out=host, pool=pools[1])
    np.testing.assert_array_equal(cupy.asnumpy(gpu), host)
    assert pools[0].launches == 2


#: |error| / |result| in epsilons: complex_math.hpp is within 4 on the host (with the C
#: library's real functions); CUDA's real functions are within 1-3 ulps themselves.
GPU_COMPLEX_ULPS = {np.complex128: 8, np.complex64: 3}


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_math_functions_on_the_gpu_are_within_a_few_ulps_of_numpys(dtype):
    """pk.exp(z), pk.sqrt(z), ... on pk.Cuda over numbers of every magnitude, near the
    branch points and the unit circle, and with infinite, NaN and signed-zero parts."""
    special = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, np.inf, -np.inf, np.nan, 80.0, -80.0]
    edges = np.array([complex(a, b) for a in special for b in special])
    a = np.concatenate([arguments(np.random.default_rng(7), 100), edges])
    if dtype == np.complex64:
        a = a[(np.abs(a) < 1e30) | ~np.isfinite(a)]
    a = a.astype(dtype)
    got = _on_gpu(complex_math, {"out": ((len(a), len(MATH_COLUMNS)), dtype)}, a=a)["out"]
    with np.errstate(all="ignore"):
        want = np.stack([getattr(np, name)(a) for name in MATH_COLUMNS], axis=1)
    finite_in = np.isfinite(a)
    for column, name in enumerate(MATH_COLUMNS):
        g, w = got[finite_in, column], want[finite_in, column]
        ok = np.isfinite(w)
        error = relative_error(g[ok], w[ok])
        worst = int(np.argmax(error))
        assert error[worst] <= GPU_COMPLEX_ULPS[dtype], (
            name,
            a[finite_in][ok][worst],
            g[ok][worst],
            w[ok][worst],
        )
        assert not np.isfinite(g[~ok]).any(), (name, a[finite_in][~ok], g[~ok])
        wrong = [
            (z, g, w)
            for z, g, w in zip(a, got[:, column], want[:, column], strict=True)
            if not np.isfinite(z) and (kind(g.real), kind(g.imag)) != (kind(w.real), kind(w.imag))
        ]
        assert not wrong, (name, wrong[:4])
