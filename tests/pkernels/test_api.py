"""The user-facing API: decorators, types, pk.View, views of every rank and dtype, strided
arrays, and specialisation of one kernel per argument signature."""

from __future__ import annotations

import copy
import math
import pickle
import types

import numpy as np
import pytest

import pkernels as pk

# ------------------------------------------------------------------ kernels


@pk.workunit
def scale(i, factor, x, out):
    out[i] = factor * x[i]


@pk.workunit
def copy1(i, src, dst):
    dst[i] = src[i]


@pk.workunit
def copy2_tuple_index(i, src, dst):
    for j in range(src.shape[1]):
        dst[i, j] = src[i, j]


@pk.workunit
def copy2_chained_index(i, src, dst):
    for j in range(src.extent(1)):
        dst[i][j] = src[i][j]


@pk.workunit
def copy3(i, src, dst):
    for j in range(src.shape[1]):
        for k in range(src.shape[2]):
            dst[i, j, k] = src[i][j][k]


@pk.workunit
def copy4(i, src, dst):
    for j in range(src.extent(1)):
        for k in range(src.extent(2)):
            for m in range(src.extent(3)):
                dst[i][j, k][m] = src[i, j, k, m]


@pk.workunit
def extents(i, v, out):
    out[0] = len(v)
    out[1] = v.shape[0]
    out[2] = v.shape[1]
    out[3] = v.shape[2]
    out[4] = v.extent(0)
    out[5] = v.extent(1)
    out[6] = v.extent(2)


@pk.workunit
def annotated(i: int, n: int, x: pk.View1D[pk.double], out: pk.View1D[pk.double]):
    out[i] = x[i] * n


@pk.workunit
def annotated_int32(i: pk.int32, k: pk.int32, out: pk.View1D[pk.int32]):
    out[i] = i * k


@pk.workunit
def increment(i, v):
    v[i] = v[i] + 1


@pk.workunit
def negate_bool(i, b, out):
    out[i] = not b[i]


@pk.workunit
def small_int_arith(i, a, b, out):
    out[i, 0] = a[i] + b[i]
    out[i, 1] = a[i] * b[i]
    out[i, 2] = a[i] - b[i]
    out[i, 3] = -a[i]
    out[i, 4] = a[i] + b[i] < a[i]
    out[i, 5] = a[i] + 100


@pk.workunit
def scalar_kinds(i, f32, i32, flag, u8, out):
    out[i, 0] = f32 * 1.1
    out[i, 1] = i32 // 2
    out[i, 2] = flag
    out[i, 3] = u8 + 250
    out[i, 4] = not flag


@pk.workunit
def transposed_sum(i, acc, a):
    for j in range(a.extent(1)):
        acc += a[i, j] * (j + 1)


# ------------------------------------------------------------------ types


def test_type_objects():
    assert pk.double is pk.float64 and pk.real is pk.float64
    assert pk.float is pk.float32
    assert pk.int32.np_dtype == np.dtype(np.int32)
    assert pk.int8.bits == 8 and pk.uint64.bits == 64
    assert pk.float64.is_float and not pk.int64.is_float
    assert pk.uint16.is_integer and not pk.bool_.is_integer
    # classes, as PyKokkos' element types are (pk.double.value: the Kokkos type)
    assert repr(pk.int16) == "<class 'pkernels.int16'>" and isinstance(pk.int16, type)
    assert pk.double.value == "double" and pk.float.value == pk.float32.value == "float"


def test_acc_and_view_annotations():
    acc = pk.Acc[pk.int64]
    assert acc.dtype is pk.int64
    assert pk.Acc[float].dtype is pk.float64
    assert pk.Acc[int].dtype is pk.int64
    view = pk.View2D[pk.float32]
    assert (view.rank, view.dtype) == (2, pk.float32)
    assert pk.View4D[np.uint8].dtype is pk.uint8


def test_spaces_and_aliases():
    assert pk.OpenMP is pk.ExecutionSpace.OpenMP
    assert pk.Serial is pk.ExecutionSpace.Serial
    assert pk.Debug is pk.ExecutionSpace.Debug
    assert pk.Cuda is pk.ExecutionSpace.Cuda


@pytest.mark.parametrize("item", [str, "text", None, object])
def test_an_accumulator_of_something_not_a_number_says_which_types_it_takes(item):
    with pytest.raises(pk.AnnotationError) as info:
        pk.Acc[item]
    text = str(info.value)
    name = getattr(item, "__name__", repr(item))
    assert text.startswith(f"pk.Acc[{name}]: an accumulator holds a number, e.g. pk.Acc[pk.")
    assert text.endswith("pk.float32, pk.float64, pk.bool, pk.complex64, pk.complex128")
    assert isinstance(info.value, TypeError)  # as any bad subscript
    assert pk.Acc[bool].dtype is pk.bool_ and pk.Acc[np.uint8].dtype is pk.uint8


@pytest.mark.parametrize(
    "item,dtype",
    [(complex, pk.complex128), (np.complex64, pk.complex64), (pk.complex128, pk.complex128)],
)
def test_complex_accumulators_are_annotated_as_numpy_types_are(item, dtype):
    assert pk.Acc[item].dtype is dtype


def test_spaces_pykokkos_or_kokkos_have_and_pkernels_lacks_say_what_to_use():
    for name in ("HIP", "Threads", "SYCL", "HPX", "OpenMPTarget", "OpenACC"):
        for owner in (pk, pk.ExecutionSpace):
            with pytest.raises(pk.UnsupportedSpaceError) as info:
                getattr(owner, name)
            text = str(info.value)
            assert text.startswith(f"pkernels has no {name} execution space: ")
            assert "The spaces are pk.OpenMP (CPU threads), pk.Serial (one CPU thread), " in text
            assert " pk." in text.split(". The spaces")[0]  # what to use instead
    assert "AMD GPUs are not supported" in str(pytest.raises(AttributeError, lambda: pk.HIP).value)
    # An AttributeError too: code that probes for a space goes on.
    assert not hasattr(pk, "HIP") and not hasattr(pk.ExecutionSpace, "Threads")
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        pk.not_a_name  # noqa: B018
    with pytest.raises(AttributeError):
        pk.ExecutionSpace.not_a_name  # noqa: B018


@pytest.mark.parametrize(
    "make",
    [
        lambda space: pk.RangePolicy(space, 0, 4),
        lambda space: pk.MDRangePolicy(space, [0, 0], [2, 2]),
        lambda space: pk.TeamPolicy(space, 2, 2),
    ],
    ids=["RangePolicy", "MDRangePolicy", "TeamPolicy"],
)
def test_a_policy_given_a_space_by_name_says_what_to_write(make):
    # (RangePolicy(3.5, 0, 4) too; the other policies take three numbers without a space.)
    policy = type(make(pk.OpenMP)).__name__
    with pytest.raises(pk.SpaceError) as info:
        make("OpenMP")
    assert str(info.value) == (
        f"{policy}: the space is the string 'OpenMP'; write pk.ExecutionSpace.OpenMP (or pk.OpenMP)"
    )
    with pytest.raises(pk.SpaceError, match="write pk.ExecutionSpace.Serial"):
        make("serial")
    with pytest.raises(pk.UnsupportedSpaceError, match="pkernels has no HIP execution space"):
        make("HIP")
    with pytest.raises(TypeError):  # a SpaceError is one, as any wrong argument
        make("Cuda ")
    assert make(pk.Serial).space is pk.Serial
    with pytest.raises(pk.SpaceError, match="RangePolicy: the space must be one of pk.OpenMP"):
        pk.RangePolicy(3.5, 0, 4)


def test_decorators_keep_plain_python_functions():
    # A workunit is still an ordinary function: callable from Python directly.
    out = np.zeros(3)
    scale(1, 2.0, np.array([0.0, 4.0, 0.0]), out)
    assert out[1] == 8.0
    assert scale.__name__ == "scale"

    @pk.function
    def twice(x: float) -> float:
        return 2 * x

    assert twice(4.0) == 8.0
    with pytest.raises(TypeError):
        pk.workunit(42)


def test_error_hierarchy():
    for cls in (pk.TranslationError, pk.DispatchError, pk.CompileError, pk.KernelError):
        assert issubclass(cls, pk.PkernelsError)
    assert issubclass(pk.KernelIndexError, IndexError)
    assert issubclass(pk.KernelZeroDivisionError, ZeroDivisionError)
    assert not issubclass(pk.TranslationError, SystemExit)


# ------------------------------------------------------------------ pk.View


def test_view_works_as_a_numpy_array():
    v = pk.View([3, 4], pk.int32)
    assert isinstance(v.data, np.ndarray) and np.shares_memory(np.asarray(v), v.data)
    assert v.shape == (3, 4) and v.dtype == np.int32 and v.dtype is pk.int32
    assert not v.any()
    assert v.extent(0) == 3 and v.extent(1) == 4 and v.rank() == 2
    v[1, 2] = 7
    v[2][3] = 9
    assert v.sum() == 16
    assert isinstance(v[0], np.ndarray)
    np.testing.assert_array_equal(v + 1, np.ones((3, 4)) + v)
    assert pk.View(5).shape == (5,) and pk.View(5).dtype == np.float64
    assert pk.View((2,), dtype=pk.uint8).dtype == np.uint8
    assert pk.View([2], float).dtype == np.float64
    assert pk.View([2], pk.float).dtype == np.float32
    assert pk.View([2], np.int16).dtype == np.int16


def test_view_rejects_unknown_dtypes():
    with pytest.raises(TypeError):
        pk.View([2], np.float16)
    assert pk.View([2], np.complex64).dtype == pk.complex64  # complex views are taken


def test_views_in_kernels(space):
    x = pk.View([10], pk.double)
    x[:] = np.arange(10)
    out = pk.View([10], pk.double)
    pk.parallel_for(pk.RangePolicy(space, 0, 10), scale, factor=3.0, x=x, out=out)
    np.testing.assert_array_equal(out, 3.0 * np.arange(10))
    # A View and a plain array of the same signature share a specialisation.
    plain = np.zeros(10)
    pk.parallel_for(pk.RangePolicy(space, 0, 10), scale, factor=1.0, x=x, out=plain)
    np.testing.assert_array_equal(plain, np.arange(10))


# ------------------------------------------------------------------ dtypes and ranks

DTYPES = [np.float64, np.float32, np.int64, np.int32, np.int8, np.uint8, np.bool_]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_copy_every_dtype(space, dtype):
    rng = np.random.default_rng(3)
    src = rng.integers(0, 100, 25).astype(dtype)
    dst = np.zeros(25, dtype=dtype)
    pk.parallel_for(pk.RangePolicy(space, 0, 25), copy1, src=src, dst=dst)
    np.testing.assert_array_equal(dst, src)


@pytest.mark.parametrize(
    "dtype, start, expected_last",
    [(np.uint8, 255, 0), (np.int8, 127, -128), (np.int32, 2**31 - 1, -(2**31))],
    ids=["uint8", "int8", "int32"],
)
def test_small_integer_views_wrap_like_numpy(space, dtype, start, expected_last):
    v = np.array([0, start], dtype=dtype)
    with np.errstate(over="ignore"):
        pk.parallel_for(pk.RangePolicy(space, 0, 2), increment, v=v)
    assert v.tolist() == [1, expected_last]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16])
def test_small_integer_arithmetic_wraps_like_numpy(space, dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(8)
    a = rng.integers(info.min, info.max, 40, endpoint=True).astype(dtype)
    b = rng.integers(info.min, info.max, 40, endpoint=True).astype(dtype)
    out = np.zeros((40, 6), np.int64)
    with np.errstate(over="ignore"):
        pk.parallel_for(pk.RangePolicy(space, 0, 40), small_int_arith, a=a, b=b, out=out)
        expected = np.stack([a + b, a * b, a - b, -a, (a + b) < a, a + 100], axis=1)
    assert expected.dtype == dtype  # NumPy 2: the element type is kept, values wrap
    np.testing.assert_array_equal(out, expected.astype(np.int64))


def test_scalar_argument_types(space):
    out = np.zeros((2, 5))
    args = dict(f32=np.float32(1.5), i32=np.int32(-7), flag=True, u8=np.uint8(10))
    with np.errstate(over="ignore"):
        pk.parallel_for(pk.RangePolicy(space, 0, 2), scalar_kinds, out=out, **args)
        expected = [np.float32(1.5) * 1.1, -7 // 2, 1, np.uint8(10) + 250, 0]
    np.testing.assert_array_equal(out, [expected, expected])
    assert out[0, 3] == 4  # uint8 arithmetic wraps


def test_bool_views(space):
    b = np.array([True, False, True, False])
    out = np.zeros(4, dtype=np.bool_)
    pk.parallel_for(pk.RangePolicy(space, 0, 4), negate_bool, b=b, out=out)
    np.testing.assert_array_equal(out, ~b)


@pytest.mark.parametrize("kernel", [copy2_tuple_index, copy2_chained_index])
def test_rank2_indexing_forms(space, kernel):
    src = np.arange(12.0).reshape(3, 4)
    dst = np.zeros_like(src)
    pk.parallel_for(pk.RangePolicy(space, 0, 3), kernel, src=src, dst=dst)
    np.testing.assert_array_equal(dst, src)


def test_rank3(space):
    src = np.arange(2 * 3 * 4, dtype=np.int32).reshape(2, 3, 4)
    dst = np.zeros_like(src)
    pk.parallel_for(pk.RangePolicy(space, 0, 2), copy3, src=src, dst=dst)
    np.testing.assert_array_equal(dst, src)


def test_rank4(space):
    src = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    dst = np.zeros_like(src)
    pk.parallel_for(pk.RangePolicy(space, 0, 2), copy4, src=src, dst=dst)
    np.testing.assert_array_equal(dst, src)


def test_len_shape_and_extent(space):
    v = np.zeros((4, 5, 6))
    out = np.zeros(7, dtype=np.int64)
    pk.parallel_for(pk.RangePolicy(space, 0, 1), extents, v=v, out=out)
    assert out.tolist() == [4, 4, 5, 6, 4, 5, 6]


def test_annotated_parameters(space):
    x = np.arange(5.0)
    out = np.zeros(5)
    pk.parallel_for(pk.RangePolicy(space, 0, 5), annotated, n=3, x=x, out=out)
    np.testing.assert_array_equal(out, 3 * x)
    out32 = np.zeros(5, dtype=np.int32)
    pk.parallel_for(pk.RangePolicy(space, 0, 5), annotated_int32, k=7, out=out32)
    np.testing.assert_array_equal(out32, 7 * np.arange(5))


def test_annotation_mismatch_is_a_translation_error(native_space):
    with pytest.raises(pk.TranslationError, match="View1D"):
        pk.parallel_for(
            pk.RangePolicy(native_space, 0, 2),
            annotated,
            n=1,
            x=np.zeros(2, dtype=np.float32),
            out=np.zeros(2),
        )
    with pytest.raises(pk.TranslationError, match="float"):
        pk.parallel_for(
            pk.RangePolicy(native_space, 0, 2), annotated, n=1.5, x=np.zeros(2), out=np.zeros(2)
        )


# ------------------------------------------------------------------ specialisation


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_one_kernel_specialised_per_dtype(space, dtype):
    x = np.arange(6).astype(dtype)
    out = np.zeros(6, dtype=dtype)
    factor = 2.5 if np.dtype(dtype).kind == "f" else 2
    pk.parallel_for(pk.RangePolicy(space, 0, 6), scale, factor=factor, x=x, out=out)
    np.testing.assert_array_equal(out, (factor * np.arange(6)).astype(dtype))


def test_specialisations_are_distinct_builds():
    copy_again = _fresh_copy_kernel()
    policy = pk.RangePolicy(pk.OpenMP, 0, 4)
    for dtype in (np.float64, np.float32, np.int32):
        src = np.arange(4).astype(dtype)
        dst = np.zeros(4, dtype=dtype)
        pk.parallel_for(policy, copy_again, src=src, dst=dst)
        np.testing.assert_array_equal(dst, src)
    # Strided source: another specialisation.
    a = np.arange(16.0).reshape(4, 4)
    dst = np.zeros(4)
    pk.parallel_for(policy, copy_again, src=a[:, 1], dst=dst)
    np.testing.assert_array_equal(dst, a[:, 1])
    # Same signature again: no new build.
    pk.parallel_for(policy, copy_again, src=np.ones(4), dst=np.zeros(4))
    kernels = list(copy_again.__pkernels__.specializations.values())
    assert len(kernels) == 4
    assert len({k.library for k in kernels}) == 4


def _fresh_copy_kernel():
    """The same source as copy1, as a distinct function object with its own memo."""
    clone = types.FunctionType(copy1.__code__, copy1.__globals__, copy1.__name__)
    return pk.workunit(clone)


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a[:, 1],
        lambda a: a[::-1, 0],
        lambda a: a[1, ::2],
        lambda a: a[::-1, 2][::2],
        lambda a: a.T[3],
    ],
    ids=["column", "reversed-column", "step2-row", "double-slice", "transposed-row"],
)
def test_strided_rank1_views(space, make):
    a = np.arange(48.0).reshape(6, 8)
    src = make(a)
    dst = np.zeros(len(src))
    pk.parallel_for(pk.RangePolicy(space, 0, len(src)), copy1, src=src, dst=dst)
    np.testing.assert_array_equal(dst, src)
    # And writing through a strided view lands in the parent array.
    parent = np.zeros((6, 8))
    target = make(parent)
    pk.parallel_for(pk.RangePolicy(space, 0, len(src)), copy1, src=src, dst=target)
    np.testing.assert_array_equal(make(parent), src)
    assert parent.sum() == src.sum()


def test_reversed_rank1(space):
    x = np.arange(10.0)
    out = np.zeros(10)
    pk.parallel_for(pk.RangePolicy(space, 0, 10), copy1, src=x[::-1], dst=out)
    np.testing.assert_array_equal(out, np.arange(10.0)[::-1])


def test_transposed_rank2(space):
    a = np.arange(20.0).reshape(4, 5)
    src = a.T  # 5 x 4, Fortran-ordered
    dst = np.zeros((5, 4))
    pk.parallel_for(pk.RangePolicy(space, 0, 5), copy2_tuple_index, src=src, dst=dst)
    np.testing.assert_array_equal(dst, a.T)
    total = pk.parallel_reduce(pk.RangePolicy(space, 0, 5), transposed_sum, a=src)
    assert total == pytest.approx(sum(src[i, j] * (j + 1) for i in range(5) for j in range(4)))


def test_strided_rank3(space):
    big = np.arange(4 * 6 * 8, dtype=np.int64).reshape(4, 6, 8)
    src = big[::2, 1::2, ::-3]
    dst = np.zeros(src.shape, dtype=np.int64)
    pk.parallel_for(pk.RangePolicy(space, 0, src.shape[0]), copy3, src=src, dst=dst)
    np.testing.assert_array_equal(dst, src)


def test_math_constant_precision():
    # pk.pi and pk.e are the exact Python values.
    assert pk.pi == math.pi and pk.e == math.e


STAR_IMPORT_MODULE = """\
from pkernels import *


@workunit
def starred(i, x, out):
    out[i] = abs(x[i]) + min(x[i], 0.0) + max(x[i], 1.0) + sqrt(4.0) + floor(x[i])
"""


def test_star_import_of_pkernels(space, make_module):
    module = make_module(STAR_IMPORT_MODULE)
    x = np.array([-2.5, 0.5, 3.0])
    out = np.zeros(3)
    pk.parallel_for(pk.RangePolicy(space, 0, 3), module.starred, x=x, out=out)
    np.testing.assert_array_equal(
        out, np.abs(x) + np.minimum(x, 0.0) + np.maximum(x, 1.0) + 2.0 + np.floor(x)
    )


def test_builtins_imported_bare_from_pkernels_translate_by_their_pk_name(space, make_module):
    # exp2 and tgamma are Python wrappers of other names (math.gamma); a kernel reads
    # what the user imported, not the wrapper's __name__.
    module = make_module(
        """
import pkernels as pk
from pkernels import erf, exp2, floor, sqrt, tgamma

@pk.workunit
def k(i, out):
    out[i] = exp2(1.0) + tgamma(4.0) + sqrt(4.0) + floor(1.5) + erf(0.0)
"""
    )
    out = np.zeros(2)
    pk.parallel_for(pk.RangePolicy(space, 0, 2), module.k, out=out)
    np.testing.assert_array_equal(out, [11.0, 11.0])


class _Params(pk.View):
    """As PyKokkos programs subclass View (ExaMiniMD's t_fparams, binsort's MyView)."""

    def __init__(self, rows: int = 0, cols: int = 0, data_type=pk.double, fill=None):
        super().__init__([rows, cols], data_type)
        self.note = "mine"
        self.rows = self.shape[0]  # the array exists once super().__init__ returned
        if fill is not None:
            self[:] = fill


def test_a_view_subclass_with_its_own_init_is_a_view():
    p = _Params(3, 4, data_type=pk.int32)
    assert isinstance(p, pk.View) and type(p) is _Params and p.note == "mine"
    assert p.shape == (3, 4) and p.dtype == np.int32 and not p.any()
    assert p.flags["C_CONTIGUOUS"] and p.extent(1) == 4
    p[1, 2] = 7
    assert p.sum() == 7 and type(p[1:]) is _Params
    assert _Params().shape == (0, 0) and _Params().dtype == np.float64
    src, dst = _Params(3, 2), np.zeros((3, 2))
    src[:, 1] = [1.0, 2.0, 3.0]
    pk.parallel_for(3, copy2_tuple_index, src=src, dst=dst)  # kernels take it as an array
    assert dst[:, 1].tolist() == [1.0, 2.0, 3.0]
    filled = _Params(2, 3, fill=1.5)
    assert filled.rows == 2 and filled.sum() == 9.0
    # A view is a handle, as Kokkos' views: copying an object copies its views' handles.
    assert copy.copy(filled) is filled and copy.deepcopy(filled) is filled
    made = pickle.loads(pickle.dumps(filled))
    assert type(made) is _Params and made.note == "mine" and made.sum() == 9.0
    assert filled[1:].note == "mine" and (filled + 1).rows == 2
    left = _ColumnMajor(2)  # made as pk.View(..., layout=pk.LayoutLeft) is
    assert type(left) is _ColumnMajor and left.layout is pk.LayoutLeft
    assert left.flags["F_CONTIGUOUS"] and not left.flags["C_CONTIGUOUS"]
    with pytest.raises(TypeError, match="must call super"):
        _Forgetful()


class _ColumnMajor(pk.View):
    def __init__(self, n: int):
        super().__init__([n, n], pk.double, layout=pk.LayoutLeft)


class _Forgetful(pk.View):
    def __init__(self):
        self.size_wanted = 3


def test_resize_grows_and_shrinks_the_view_every_holder_has():
    # ExaMiniMD's System holds its views; functors and workloads hold the same objects
    # and must see each resize (PyKokkos' View.resize swaps in a new allocation).
    v = pk.View([4, 3], pk.double)
    v[:] = np.arange(12.0).reshape(4, 3)
    holder = types.SimpleNamespace(x=v)
    v.resize(0, 6)
    assert holder.x.shape == (6, 3) and holder.x.extent(0) == 6
    np.testing.assert_array_equal(v.data[:4], np.arange(12.0).reshape(4, 3))
    assert not v.data[4:].any()
    out = np.zeros(6)
    pk.parallel_for(6, row_sum, x=holder.x, out=out)  # a kernel sees the grown view
    np.testing.assert_array_equal(out, [3.0, 12.0, 21.0, 30.0, 0.0, 0.0])
    v.resize(1, 2)  # shrink: keeps what fits
    np.testing.assert_array_equal(v.data[:2], [[0.0, 1.0], [3.0, 4.0]])
    left = pk.View([2, 2], pk.int32, layout=pk.LayoutLeft)
    left.resize(0, 5)
    assert left.layout is pk.LayoutLeft and left.shape == (5, 2) and left.dtype is pk.int32
    with pytest.raises(ValueError, match="Cannot resize dimension 2 since rank = 2"):
        v.resize(2, 5)


@pk.workunit
def row_sum(i: int, x: pk.View2D[pk.double], out: pk.View1D[pk.double]):
    out[i] = x[i][0] + x[i][1] + x[i][2]


def test_view_data_is_the_array_itself():
    v = pk.View([3], pk.double)
    before = v.data
    v.data += 1  # in place
    np.copyto(v.data, v.data * 2)
    assert v.data is before and v.data.tolist() == [2.0, 2.0, 2.0]
    v.data = np.array([1.0, 2.0, 3.0])  # copied in
    assert v.data is before and before.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError):
        v.data = np.zeros(4)
