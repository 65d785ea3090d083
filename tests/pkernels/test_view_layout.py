"""Views' layouts (issue 21): which axis of an array has stride 1 is part of its kernel's
type (``pk_rt::View<T, R, L>``), so an access multiplies only the other axes by their
strides; a Fortran-order (LayoutLeft) array's first axis is indexed with a constant 1.
The type each array gets, the C++ it is written as, the CPU computing the same over C-,
Fortran-order and strided arrays in every build, and (with nvcc) the GPU code of the
Lennard-Jones loop over LayoutLeft arrays, with no multiply by a first-axis stride."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from pkt_support import ForceDebugBuild, observing
from team_kernels import reverse_rows

import pkernels as pk
from pkernels.api import types as t
from pkernels.build.compiler import GENERATED_PATH
from pkernels.build.runtime import INCLUDE_DIR, include_option
from pkernels.runtime.cuda_compile import WIDE_OPTIONS
from pkernels.runtime.hooks import BuildMode
from pkernels.runtime.marshal import argument_type, signature_key
from pkernels.translate.emit_cpp import view_cpp_type
from pkernels.translate.emit_cuda import emit_cuda_module
from pkernels.translate.ir import ViewLayout, ViewType
from pkernels.translate.kernel import lower_workunit, translate_workunit

STRIDED, LAST, FIRST = ViewLayout.STRIDED, ViewLayout.LAST_UNIT, ViewLayout.FIRST_UNIT

# ------------------------------------------------------------------ the type of an array

_z = np.zeros
ARRAYS = {
    "rank 1": (_z(5), LAST),
    "rank 1, every other": (_z(10)[::2], STRIDED),
    "rank 1, reversed": (_z(10)[::-1], STRIDED),
    "C 2-D": (_z((3, 4)), LAST),
    "F 2-D": (_z((3, 4), order="F"), FIRST),
    "C 3-D": (_z((3, 4, 5)), LAST),
    "F 3-D": (_z((3, 4, 5), order="F"), FIRST),
    "F 3-D int32": (_z((3, 4, 5), np.int32, order="F"), FIRST),
    # Both axes of stride 1: the C case, as before.
    "F one row": (_z((1, 4), order="F"), LAST),
    "C one column": (_z((4, 1)), LAST),
    # NumPy calls it C-contiguous too, but its last stride is 4 elements.
    "F one column": (_z((4, 1), order="F"), FIRST),
    "C every other column": (_z((6, 4))[:, ::2], STRIDED),
    "F every other row": (_z((6, 4), order="F")[::2, :], STRIDED),
    "F every other column": (_z((6, 4), order="F")[:, ::2], FIRST),
    "C transposed": (_z((3, 4, 5)).T, FIRST),
    "C last two axes swapped": (_z((3, 4, 5)).transpose(0, 2, 1), STRIDED),
    "column broadcast": (np.broadcast_to(_z((3, 1)), (3, 4)), FIRST),
}


@pytest.mark.parametrize("name", list(ARRAYS))
def test_an_array_gets_the_layout_its_strides_allow(name):
    array, layout = ARRAYS[name]
    view = argument_type("a", array)
    assert view == ViewType(t.from_numpy(array.dtype), array.ndim, layout)
    # The specialisation key says the same: a build is only reused for its layout.
    assert signature_key(array) == (array.dtype, array.ndim, layout)


def test_c_and_fortran_arrays_get_builds_of_their_own_only_where_the_code_differs():
    assert signature_key(_z((3, 4))) != signature_key(_z((3, 4), order="F"))
    assert signature_key(_z(4)) == signature_key(_z(4, order="F"))
    assert signature_key(_z((1, 4))) == signature_key(_z((1, 4), order="F"))
    left = pk.View([3, 4], pk.double, layout=pk.LayoutLeft)
    assert left.data.flags.f_contiguous
    assert signature_key(left) == signature_key(left.data) == (np.dtype("f8"), 2, FIRST)
    assert argument_type("left", left.data).layout == FIRST


def test_the_layout_codes_are_the_runtime_headers():
    header = (INCLUDE_DIR / "pkernels" / "shared" / "view_layout.hpp").read_text()
    codes = dict(re.findall(r"^\s*(\w+) = (\d+),", header, re.M))
    assert {name: int(code) for name, code in codes.items()} == {
        m.name: m.value for m in ViewLayout
    }


# ------------------------------------------------------------------ the C++ written


@pk.function
def column_total(m, c: int) -> float:
    total: float = 0.0
    for r in range(m.extent(0)):
        total += m[r, c]
    return total


@pk.function
def put(m, r: int, c: int, value: float):
    m[r, c] = value


@pk.workunit
def rows(i, a, out):
    # Reads and writes along both axes, and through helpers that take the views.
    n: int = a.extent(1)
    for j in range(n):
        put(out, i, j, 2.0 * a[i, j] + a[i, n - 1 - j] + column_total(a, j))


def test_the_view_types_are_written_with_their_layout():
    assert view_cpp_type(ViewType(pk.double, 2, STRIDED)) == "pk_rt::View<double, 2, 0>"
    assert view_cpp_type(ViewType(pk.double, 1, LAST)) == "pk_rt::View<double, 1, 1>"
    assert view_cpp_type(ViewType(pk.int32, 3, FIRST)) == "pk_rt::View<int32_t, 3, 2>"
    types = {"a": argument_type("a", _z((3, 4), order="F")), "out": argument_type("o", _z((3, 4)))}
    source = translate_workunit(rows, "for", types).source
    assert "PK_VIEW_ARG(double, 2, 2) a, PK_VIEW_ARG(double, 2, 1) out" in source
    assert "const pk_rt::View<double, 2, 2> a{a_data, {a_e0, a_e1}, {a_s0, a_s1}};" in source
    assert "PK_HELPER_VIEW(PK_V0, double, 2, 2) m, int64_t c" in source  # column_total(a)
    assert "PK_HELPER_VIEW(PK_V0, double, 2, 1) m, int64_t r" in source  # put(out)
    function, helpers = lower_workunit(rows, "for", types)
    cuda = emit_cuda_module(function, helpers, "for", function.params[0].type, 1).source
    assert "PK_VIEW_ARG(double, 2, 2) a" in cuda
    assert "const pk_rt::View<double, 2, 2> a{a_data, {a_e0, a_e1}, {a_s0, a_s1}};" in cuda


# ------------------------------------------------------------------ the CPU's results


@pk.function
def at3(v, i: int, j: int, k: int) -> float:
    return v[i, j, k]


@pk.workunit
def smooth(i, j, k, u, out):
    # Shifted indices on every axis: release builds offset them apart (at_shifted).
    near: float = u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k] + 2.0 * u[i, j + 1, k]
    out[i, j, k] = near + (3.0 * u[i, j, k - 1] + u[i, j, k + 1] - 7.0 * at3(u, i, j, k))


@pk.workunit
def weighted(i, acc, a):
    for j in range(a.extent(1)):
        acc += a[i, j] * (j + 1) * (i + 2)


@pk.workunit
def row_and_column(i, a, out, tally):
    row = a[i, :]
    col = a[:, i]
    for j in range(len(row)):
        out[i, j] = row[j] - col[j]
    pk.atomic_add(tally, [i % 2, 1], row[i])


def _with_layout(values: np.ndarray, layout: str) -> np.ndarray:
    """``values`` copied into a C-order, Fortran-order or strided array."""
    if layout == "C":
        return np.ascontiguousarray(values)
    if layout == "F":
        return np.asfortranarray(values)
    wide = np.zeros(tuple(2 * n for n in values.shape), values.dtype, order="F")
    strided = wide[tuple(slice(None, None, 2) for _ in values.shape)]
    strided[...] = values
    return strided


def _build(mode: str):
    return observing(ForceDebugBuild(BuildMode[mode]))


LAYOUTS = ["C", "F", "strided"]
MODES = ["RELEASE", "DEBUG", "CHECKED"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_2d_kernel_with_helpers_computes_alike_in_every_layout(native_space, layout, mode):
    rng = np.random.default_rng(21)
    values = rng.random((5, 7))
    a = _with_layout(values, layout)
    out = _with_layout(np.zeros((5, 7)), "F" if layout == "C" else "C")  # and the other one
    with _build(mode) as seen:
        pk.parallel_for(pk.RangePolicy(native_space, 0, 5), rows, a=a, out=out)
    assert seen.launched
    reversed_ = values[:, ::-1]
    np.testing.assert_allclose(out, 2.0 * values + reversed_ + values.sum(axis=0), rtol=1e-14)
    with _build(mode):
        total = pk.parallel_reduce(pk.RangePolicy(native_space, 0, 5), weighted, a=a)
    expected = sum(values[i, j] * (j + 1) * (i + 2) for i in range(5) for j in range(7))
    assert total == pytest.approx(expected, rel=1e-14)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_3d_stencil_computes_alike_in_every_layout(native_space, layout, mode):
    rng = np.random.default_rng(3)
    values = rng.random((6, 5, 4))
    u = _with_layout(values, layout)
    out = _with_layout(np.zeros(values.shape), layout)
    policy = pk.MDRangePolicy(native_space, [1, 1, 1], [5, 4, 3])
    with _build(mode):
        pk.parallel_for(policy, smooth, u=u, out=out)
    expected = np.zeros(values.shape)
    c = values[1:-1, 1:-1, 1:-1]
    expected[1:-1, 1:-1, 1:-1] = (
        values[:-2, 1:-1, 1:-1] + values[2:, 1:-1, 1:-1] + values[1:-1, :-2, 1:-1]
        + 2.0 * values[1:-1, 2:, 1:-1]
    ) + (3.0 * values[1:-1, 1:-1, :-2] + values[1:-1, 1:-1, 2:] - 7.0 * c)  # fmt: skip
    np.testing.assert_allclose(out, expected, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_subviews_and_atomics_of_fortran_arrays(native_space, layout):
    values = np.arange(16.0).reshape(4, 4) ** 2
    a = _with_layout(values, layout)
    out = _with_layout(np.zeros((4, 4)), layout)
    tally = _with_layout(np.zeros((2, 3)), layout)
    policy = pk.RangePolicy(native_space, 0, 4)
    pk.parallel_for(policy, row_and_column, a=a, out=out, tally=tally)
    np.testing.assert_array_equal(out, values - values.T)
    diagonal = values.diagonal()
    expected = [[0, diagonal[0] + diagonal[2], 0], [0, diagonal[1] + diagonal[3], 0]]
    np.testing.assert_array_equal(tally, expected)


@pytest.mark.parametrize("mode", MODES)
def test_a_team_kernel_over_fortran_arrays_with_its_scratch(mode):
    inp = np.asfortranarray(np.arange(5 * 7.0).reshape(5, 7) ** 1.5)
    out = np.zeros((5, 7), order="F")
    scratch = pk.ScratchView1D[pk.double].shmem_size(7)
    policy = pk.TeamPolicy(pk.OpenMP, 5, 2).set_scratch_size(0, pk.PerTeam(scratch))
    with _build(mode):
        pk.parallel_for(policy, reverse_rows, out=out, inp=inp, m=7)
    np.testing.assert_array_equal(out, inp[:, ::-1])


@pk.workunit
def past_the_columns(i, a, out):
    out[i, 0] = a[i, a.extent(1)]


@pytest.mark.parametrize("mode", ["DEBUG", "CHECKED"])
def test_an_index_past_a_fortran_arrays_axis_names_that_axis(mode):
    a, out = _z((3, 4), order="F"), _z((3, 4), order="F")
    with (
        _build(mode),
        pytest.raises(pk.KernelIndexError, match="index 4 is out of range for axis 1"),
    ):
        pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 3), past_the_columns, a=a, out=out)


def test_one_kernel_run_on_c_then_fortran_arrays_takes_each_layout_its_own_build():
    values = np.arange(12.0).reshape(3, 4)
    expected = 2.0 * values + values[:, ::-1] + values.sum(axis=0)
    for layout in ("C", "F", "C"):
        out = np.zeros((3, 4))
        a = _with_layout(values, layout)
        pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 3), rows, a=a, out=out)
        np.testing.assert_allclose(out, expected, rtol=1e-14)


# ------------------------------------------------------------------ the GPU's code


@pk.workunit
def lj_force(i, cutsq, x, neigh, counts, f):
    # bench/_workloads.py's Lennard-Jones force loop.
    xi: float = x[i, 0]
    yi: float = x[i, 1]
    zi: float = x[i, 2]
    fx: float = 0.0
    fy: float = 0.0
    fz: float = 0.0
    for k in range(counts[i]):
        j = neigh[i, k]
        dx = xi - x[j, 0]
        dy = yi - x[j, 1]
        dz = zi - x[j, 2]
        r2 = dx * dx + dy * dy + dz * dz
        if r2 < cutsq:
            sr2 = 1.0 / r2
            sr6 = sr2 * sr2 * sr2
            fpair = 48.0 * sr6 * (sr6 - 0.5) * sr2
            fx += dx * fpair
            fy += dy * fpair
            fz += dz * fpair
    f[i, 0] = fx
    f[i, 1] = fy
    f[i, 2] = fz


def _lj_ptx(tmp_path: Path, order: str) -> tuple[str, list[str]]:
    """The PTX of lj_force over ``order`` arrays, as pkernels.runtime.cuda_compile builds
    it (no fused multiply-adds; the release build and the 64-bit one, PK_WIDE), and the
    names of its entries' parameters in order."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on the PATH")
    n, maxn = 64, 40
    arrays = {
        "x": _z((n, 3), order=order),
        "neigh": _z((n, maxn), np.int32, order=order),
        "counts": _z(n, np.int32),
        "f": _z((n, 3), order=order),
    }
    types = {"cutsq": argument_type("cutsq", 1.0)}
    types.update({name: argument_type(name, array) for name, array in arrays.items()})
    function, helpers = lower_workunit(lj_force, "for", types)
    source = emit_cuda_module(function, helpers, "for", function.params[0].type, 1).source
    declared = re.search(r"void __launch_bounds__\(\d+\) pk_cuda_entry\((.*?)\) \{", source)
    assert declared is not None
    names = [param.split()[-1] for param in declared[1].split(", ")]
    stand_in = tmp_path / "nvrtc_builtins.h"  # NVRTC declares printf itself
    stand_in.write_text("#include <cstdio>\n")
    cu = tmp_path / f"lj_{order}.cu"
    cu.write_text(source.replace(GENERATED_PATH, str(cu)))
    ptx = []
    for build, options in (("release", []), ("wide", list(WIDE_OPTIONS))):  # each entry
        out = tmp_path / f"lj_{order}_{build}.ptx"
        proc = subprocess.run(
            [nvcc, "-std=c++17", "-arch=sm_90", "--fmad=false", include_option(),
             "--pre-include", str(stand_in), *options, "-x", "cu", "-ptx", str(cu),
             "-o", str(out)],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        ptx.append(out.read_text())
    return "\n".join(ptx), names


def _multiplied(ptx: str, entry: str, names: list[str]) -> list[str]:
    """The parameters that the 64-bit multiplies (mul.lo.s64, mad.lo.s64) of ``entry``
    take as an operand, by name, one per multiply (each takes one loaded parameter)."""
    body = re.search(rf"\.entry {entry}\(.*?\n}}\n", ptx, re.S)
    assert body is not None
    loaded = re.findall(rf"ld\.param\.u64\s+(%rd\d+), \[{entry}_param_(\d+)\]", body[0])
    params = {register: names[int(k)] for register, k in loaded}
    operands = re.findall(r"\b(?:mul|mad)\.lo\.s64\s+%rd\d+, (%rd\d+), (%rd\d+)", body[0])
    found = [[params[r] for r in pair if r in params] for pair in operands]
    assert all(len(f) == 1 for f in found), operands
    return [f[0] for f in found]


def test_lj_on_layout_left_arrays_multiplies_no_first_axis_stride(tmp_path):
    """x[j, c], neigh[i, k] and f[i, c] of Fortran-order arrays multiply no stride of axis
    0, in either entry (int64 and int32 indices): all that is left is k * neigh_s1, as the
    hand-written kernel's k * n (bench/_gpu_kernels.py). Over C-order arrays axis 0 is the
    strided one: there the same search finds its multiplies."""
    left, names = _lj_ptx(tmp_path, "F")
    for entry in ("pk_cuda_entry", "pk_cuda_entry_i32"):
        assert set(_multiplied(left, entry, names)) <= {"neigh_s1"}, entry
    right, names = _lj_ptx(tmp_path, "C")
    assert {"x_s0", "neigh_s0", "f_s0"} <= set(_multiplied(right, "pk_cuda_entry", names))
