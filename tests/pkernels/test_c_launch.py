"""Release launches through pkernels.runtime._launch (arguments marshalled in C) give what
the ctypes path gives, and every argument it leaves alone still reaches the kernel, or
fails with the same message, through the Python marshaller."""

from __future__ import annotations

import numpy as np
import pytest

import pkernels as pk
from pkernels.runtime import launch as launch_module
from pkernels.runtime.marshal import argument_type
from pkernels.translate.kernel import translate_workunit


@pk.workunit
def every_scalar(i, a8: pk.int8, a16: pk.int16, a32: pk.int32, a64: pk.int64, u8: pk.uint8,
                 u16: pk.uint16, u32: pk.uint32, f32: pk.float32, f64: pk.double, flag: bool,
                 out):  # fmt: skip
    total: float = a8 + a16 + a32 + a64 + u8 + u16 + u32 + f32 + f64
    if flag:
        total = -total
    out[i] = total + i


@pk.workunit
def strided_sum(i, acc, cols, A, w):
    for j in range(cols):
        acc += A[i, j] * w[j]


@pk.workunit
def big_unsigned(i, n: pk.uint64, out):
    out[i] = n % 1000


@pk.workunit
def draw_after_pool(i, pool: pk.Random_XorShift64_Pool, out):
    out[i] = pk.rand(pk.double)


def _release_kernel(workunit):
    return next(k for k in workunit.__pkernels__.specializations.values() if not k.debug)


SCALARS = {
    "a8": -128, "a16": 32767, "a32": -(2**31), "a64": 2**62, "u8": 255, "u16": 65535,
    "u32": 2**32 - 1, "f32": 0.1, "f64": 1e-300, "flag": True,
}  # fmt: skip


def _expected_every_scalar(n: int, values: dict) -> np.ndarray:
    total = sum(int(values[k]) for k in ("a8", "a16", "a32", "a64", "u8", "u16", "u32"))
    total = float(total) + float(np.float32(values["f32"])) + values["f64"]
    if values["flag"]:
        total = -total
    return total + np.arange(n, dtype=np.float64)


needs_c_launch = pytest.mark.skipif(
    launch_module._c_launch is None, reason="pkernels.runtime._launch was not built"
)


def test_the_c_marshaller_is_built_where_the_project_is_installed():
    # scripts/setup.sh installs a compiler and Python's headers: the extension must be
    # there, or every launch would silently take the slower ctypes path.
    assert launch_module._c_launch is not None, (
        "pkernels.runtime._launch is missing or was built from another _launch.c: "
        "run scripts/setup.sh (or pip install -e .)"
    )


@needs_c_launch
@pytest.mark.parametrize("space", [pk.OpenMP, pk.Serial], ids=lambda s: s.name)
def test_scalars_of_every_type_arrive_as_through_ctypes(space):
    out = np.zeros(5)
    pk.parallel_for(pk.RangePolicy(space, 0, 5), every_scalar, **SCALARS, out=out)
    kernel = _release_kernel(every_scalar)
    assert space in kernel._packed  # this launch went through the C marshaller
    np.testing.assert_array_equal(out, _expected_every_scalar(5, SCALARS))
    # NumPy scalars and plain Python numbers are marshalled alike.
    values = {**SCALARS, "a32": np.int32(7), "f64": np.float64(2.5), "flag": np.bool_(False)}
    pk.parallel_for(pk.RangePolicy(space, 0, 5), every_scalar, **values, out=out)
    np.testing.assert_array_equal(out, _expected_every_scalar(5, values))


@needs_c_launch
def test_strided_and_read_only_views_and_reduce_totals():
    base = np.arange(8 * 12, dtype=np.float64).reshape(8, 12)
    A = base[::2, 1::3]  # strided on both axes
    w = np.broadcast_to(np.array([0.5]), (4,))  # read-only, stride 0: read, never written
    total = pk.parallel_reduce(pk.RangePolicy(pk.OpenMP, 0, 4), strided_sum, cols=4, A=A, w=w)
    assert total == pytest.approx(float((A * 0.5).sum()), rel=1e-15)
    assert pk.OpenMP in _release_kernel(strided_sum)._packed


@needs_c_launch
def test_what_the_c_marshaller_refuses_fails_as_before():
    out = np.zeros(3)
    policy = pk.RangePolicy(pk.OpenMP, 0, 3)
    pk.parallel_for(policy, every_scalar, **SCALARS, out=out)
    with pytest.raises(pk.DispatchError, match=r"a8: 128 does not fit in int8"):
        pk.parallel_for(policy, every_scalar, **{**SCALARS, "a8": 128}, out=out)
    with pytest.raises(pk.DispatchError, match=r"u32: -1 does not fit in uint32"):
        pk.parallel_for(policy, every_scalar, **{**SCALARS, "u32": -1}, out=out)
    frozen = np.frombuffer(bytes(24), dtype=np.float64)
    with pytest.raises(pk.DispatchError, match=r"out.*read-only"):
        pk.parallel_for(policy, every_scalar, **SCALARS, out=frozen)
    packed_records = np.zeros(3, dtype=[("x", np.float64), ("tag", np.uint8)])
    with pytest.raises(pk.DispatchError, match=r"out: array strides \(9,\) are not multiples"):
        pk.parallel_for(policy, every_scalar, **SCALARS, out=packed_records["x"])
    assert not packed_records["x"].any()


@needs_c_launch
def test_uint64_arguments_and_random_pools_marshal_in_c():
    out = np.zeros(2)
    policy = pk.RangePolicy(pk.OpenMP, 0, 2)
    pk.parallel_for(policy, big_unsigned, n=2**64 - 1, out=out)
    np.testing.assert_array_equal(out, [float((2**64 - 1) % 1000)] * 2)
    assert pk.OpenMP in _release_kernel(big_unsigned)._packed
    pk.parallel_for(policy, big_unsigned, n=np.uint64(2**63 + 5), out=out)
    np.testing.assert_array_equal(out, [float((2**63 + 5) % 1000)] * 2)
    with pytest.raises(pk.DispatchError, match=r"n: -1 does not fit in uint64"):
        pk.parallel_for(policy, big_unsigned, n=-1, out=out)

    pool = pk.Random_XorShift64_Pool(5, 8)
    first = np.zeros(4)
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 4), draw_after_pool, pool=pool, out=first)
    assert pk.OpenMP in _release_kernel(draw_after_pool)._packed
    # A launch refused for its array (after the pool's parameter) takes no launch of the
    # pool: the next one draws what a pool's second launch draws.
    frozen = np.frombuffer(bytes(32), dtype=np.float64)
    with pytest.raises(pk.DispatchError, match=r"out.*read-only"):
        pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 4), draw_after_pool, pool=pool, out=frozen)
    assert pool.launches == 1
    second, twin = np.zeros(4), pk.Random_XorShift64_Pool(5, 8)
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 4), draw_after_pool, pool=pool, out=second)
    expected = [np.zeros(4), np.zeros(4)]
    for drawn in expected:  # the same launches through the Python marshaller
        pk.parallel_for(pk.RangePolicy(pk.Debug, 0, 4), draw_after_pool, pool=twin, out=drawn)
    np.testing.assert_array_equal(first, expected[0])
    np.testing.assert_array_equal(second, expected[1])
    assert not np.array_equal(first, second)


def test_packed_entries_are_release_only():
    # Under PK_DEBUG the launch symbols are all there is (pkdb steps through those).
    types = {"cols": argument_type("cols", 2), "A": argument_type("A", np.ones((2, 2))),
             "w": argument_type("w", np.ones(2))}  # fmt: skip
    lines = translate_workunit(strided_sum, "reduce", types).source.splitlines()
    for space in ("openmp", "serial"):
        at = next(k for k, line in enumerate(lines) if f"void pk_launch_{space}_packed(" in line)
        opened = next(line for line in reversed(lines[:at]) if line.startswith("#"))
        assert opened == "#if !PK_DEBUG"
