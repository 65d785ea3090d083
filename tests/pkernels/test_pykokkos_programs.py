"""What real PyKokkos programs rely on (issue 22): PyKokkos' pk.View, running a program
that imports ``pykokkos``, kernel fusion, PyKokkos' spellings in kernels, and results
equal to Python's bit for bit where g++ used to round differently."""

from __future__ import annotations

import math
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pkernels as pk

SRC = Path(pk.__file__).resolve().parents[1]

# ------------------------------------------------------------------ pk.View


@pk.workload
class _Grower:
    """ExaMiniMD's shape: the object holds the view, a functor holds the same object."""

    def __init__(self, view: pk.View) -> None:
        self.x: pk.View1D[pk.double] = view
        self.n: int = view.extent(0)
        self.total: float = 0.0

    @pk.main
    def run(self) -> None:
        self.total = pk.parallel_reduce(self.n, self.add)

    @pk.workunit
    def add(self, i: int, acc: pk.Acc[pk.double]) -> None:
        acc += self.x[i]


def test_a_workload_holding_a_view_sees_its_resize(space):
    view = pk.View([3], pk.double)
    view.data[:] = 1.0
    work = _Grower(view)
    pk.execute(space, work)
    assert work.total == 3.0
    view.resize(0, 5)  # the object's field is the same view, now of 5 elements
    view.data[3:] = 2.0
    work.n = view.extent(0)
    pk.execute(space, work)
    assert work.total == 7.0 and work.x.shape == (5,)


def test_view_dtype_is_pykokkos_data_type():
    view = pk.View([2], pk.double)
    assert view.dtype is pk.double and view.dtype.value == pk.double.value
    assert str(view.dtype).split(".")[-1][:-2] == "float64"  # PyKokkos' test idiom
    assert pk.floor(view).dtype.value == pk.double.value
    assert pk.View([2], pk.float).dtype is pk.float32
    assert np.zeros(2, view.dtype).dtype == np.float64


def test_asarray_of_a_constant_is_a_float64_view():
    for constant in (math.e, math.pi, math.inf):
        view = pk.asarray(constant)
        assert view.shape == (1,) and view.dtype is pk.float64 and view[0] == constant
    assert math.isnan(pk.asarray(math.nan)[0])


def test_set_default_precision_is_the_element_type_of_views_made_without_one():
    try:
        pk.set_default_precision(pk.float32)
        assert pk.View([2]).dtype is pk.float32 and pk.get_default_precision() is pk.float32
    finally:
        pk.set_default_precision(pk.double)
    assert pk.View([2]).dtype is pk.float64


# ------------------------------------------------------------------ running programs


PROGRAM = """
import sys
import pykokkos as pk
from pykokkos.linalg.l3_blas import dgemm

@pk.workunit
def count(i, hits):
    pk.atomic_add(hits, [i % 2], 1)

hits = pk.View([2], pk.int32)
pk.parallel_for(10, count, hits=hits)
print(sys.argv[1:], hits.data.tolist(), pk is sys.modules["pkernels"], dgemm.__module__)
"""


def test_python_m_pkernels_runs_a_pykokkos_program_unchanged(tmp_path):
    program = tmp_path / "prog.py"
    program.write_text(PROGRAM)
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}
    run = subprocess.run(
        [sys.executable, "-m", "pkernels", str(program), "a", "b"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "['a', 'b'] [5, 5] True pkernels.linalg.l3_blas"
    plain = subprocess.run(
        [sys.executable, str(program)], capture_output=True, text=True, env=env, check=False
    )
    assert "No module named 'pykokkos'" in plain.stderr  # only through the alias


def test_kernels_recognise_pk_through_a_module_re_exporting_pkernels(make_module, tmp_path, space):
    (tmp_path / "mypk.py").write_text("from pkernels import *\n")
    sys.path.insert(0, str(tmp_path))
    try:
        module = make_module(
            """
import mypk as pk

@pk.workunit
def k(i, hits, x):
    pk.atomic_add(hits, [0], 1)
    x[i] = pk.sqrt(x[i]) + pk.fabs(-1.0)
"""
        )
        hits, x = np.zeros(1, np.int64), np.array([4.0, 9.0])
        pk.parallel_for(pk.RangePolicy(space, 0, 2), module.k, hits=hits, x=x)
        assert hits.tolist() == [2] and x.tolist() == [3.0, 4.0]
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("mypk", None)


# ------------------------------------------------------------------ kernel fusion


@pk.workunit
def _fill(i, view, value):
    view[i] = value


@pk.workunit
def _add_into(i: int, out: pk.View1D[pk.double], a: pk.View1D[pk.double]):
    out[i] += a[i]


def test_kernel_fusion_runs_each_workunit_with_its_arguments(space):
    a, b = np.zeros(4), np.zeros(4, np.int32)
    pk.parallel_for(
        pk.RangePolicy(space, 0, 4),
        [_fill, _fill, _add_into],
        args_0={"view": a, "value": 1.5},
        args_1={"view": b, "value": 7},
        args_2={"out": a, "a": np.arange(4.0)},
    )
    assert a.tolist() == [1.5, 2.5, 3.5, 4.5] and b.tolist() == [7] * 4
    with pytest.raises(pk.DispatchError, match=r"args_0=\{...\}, args_1=\{...\}"):
        pk.parallel_for(4, [_fill, _fill], args_0={"view": a, "value": 1.0})
    with pytest.raises(pk.DispatchError, match="kernel fusion"):
        pk.parallel_reduce(4, [_fill], args_0={})


# ------------------------------------------------------------------ PyKokkos' spellings


@pk.workunit
def _squares(i: float, acc: pk.Acc[pk.double]):
    acc += i * i


def test_an_index_annotated_float_is_a_float(space):
    n = 90000  # i * i past 2**53 / ... computed in double, as PyKokkos' `double i`
    total = pk.parallel_reduce(pk.RangePolicy(space, 0, n), _squares)
    assert total == float(np.sum(np.arange(n, dtype=np.float64) ** 2))


@pk.workload
class _BareFields:
    def __init__(self, n: int) -> None:
        self.n: int = n
        self.A: pk.View1D[pk.double] = pk.View([n], pk.double)
        self.scale: float = 2.5
        self.total: float = 0.0

    @pk.main
    def run(self) -> None:
        pk.parallel_for(self.n, self.fill)
        self.total = pk.parallel_reduce(self.n, self.sum)

    @pk.workunit
    def fill(self, j: int) -> None:
        A[j] = j * scale  # noqa: F821 - the object's fields, as PyKokkos' C++ reads them

    @pk.workunit
    def sum(self, j: int, acc: pk.Acc[pk.double]) -> None:
        acc += A[j]  # noqa: F821


def test_workload_workunits_read_fields_by_bare_name(space):
    work = _BareFields(4)
    pk.execute(space, work)
    assert work.A.data.tolist() == [0.0, 2.5, 5.0, 7.5] and work.total == 15.0


def test_a_lambda_dispatched_for_what_it_does(space, capfd):
    hits = np.zeros(3)
    pk.parallel_for(pk.RangePolicy(space, 0, 3), lambda i: pk.atomic_add(hits, [i], 2.0))
    assert hits.tolist() == [2.0, 2.0, 2.0]
    pk.parallel_for(pk.RangePolicy(space, 0, 1), lambda i: pk.printf("lambda %d\n", i))
    assert "lambda 0" in capfd.readouterr().out


@pk.workunit
def _scratch_names(team_member: pk.TeamMember, out: pk.View1D[pk.int64]):
    empty: pk.ScratchView1D[double] = pk.ScratchView1D(team_member.team_scratch(0))  # noqa: F821
    box: pk.ScratchView4D[int64_t] = pk.ScratchView4D(team_member.team_scratch(0), 1, 2, 1, 2)  # noqa: F821
    box[0][1][0][1] = 5
    out[team_member.league_rank()] = empty.extent(0) + box[0][1][0][1] + box.extent(3)


def test_bare_c_type_names_scratch_views_without_extent_and_of_rank_4(space):
    policy = pk.TeamPolicy(space, 2, 1)
    policy.set_scratch_size(0, pk.PerTeam(64))
    out = np.zeros(2, np.int64)
    pk.parallel_for(policy, _scratch_names, out=out)
    assert out.tolist() == [7, 7]


@pk.workunit
def _rank_zero_reduces(team_member: pk.TeamMember, out: pk.View1D[pk.int32], m: int):
    def body(i: int, acc: pk.Acc[pk.double]):
        acc += 3

    if team_member.team_rank() == 0:
        total: float = pk.parallel_reduce(pk.TeamThreadRange(team_member, m), body)
        out[team_member.league_rank()] = int(total)


def test_a_team_reduce_under_a_team_rank_condition_runs_as_pykokkos_runs_it(space):
    out = np.zeros(3, np.int32)
    pk.parallel_for(pk.TeamPolicy(space, 3, pk.AUTO), _rank_zero_reduces, out=out, m=5)
    assert out.tolist() == [15, 15, 15]  # teams of one: every thread reaches the reduce
    if space is not pk.Serial:  # with two threads a team, the other never reaches it
        with pytest.raises(pk.KernelTeamError, match="at the end of the workunit"):
            pk.parallel_for(pk.TeamPolicy(space, 3, 2), _rank_zero_reduces, out=out, m=5)


@pk.workunit
def _element_math(i: int, x: pk.View1D[pk.double], out: pk.View2D[pk.double]):
    out[i][0] = pk.sign(x[i])
    out[i][1] = pk.square(x[i])
    out[i][2] = pk.reciprocal(x[i])
    out[i][3] = pk.rint(x[i])
    out[i][4] = pk.conj(x[i])


def test_kokkos_element_math_in_kernels_gives_numpy_values(space):
    x = np.array([-2.5, -0.0, 0.5, 1.5, 2.5, math.nan, -7.0])
    out = np.zeros((len(x), 5))
    with np.errstate(divide="ignore"):
        pk.parallel_for(pk.RangePolicy(space, 0, len(x)), _element_math, x=x, out=out)
        expected = np.stack([np.sign(x), np.square(x), np.reciprocal(x), np.rint(x), x], 1)
    np.testing.assert_array_equal(out, expected)
    assert np.signbit(out[1, 3])  # rint(-0.0) keeps its sign


def test_host_functions_col_index_astype_broadcast_view_and_matmul_errors():
    view = pk.View([3, 2], pk.double)
    view[:] = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    assert pk.col(view, 1).data.tolist() == [2.0, 4.0, 6.0]
    order = pk.array(np.array([2, 0], np.int32))
    assert pk.index(pk.col(view, 0), order).data.tolist() == [5.0, 1.0]
    truncated = pk.astype(view, pk.int32)
    assert truncated.dtype is pk.int32 and truncated.data.tolist() == [[1, 2], [3, 4], [5, 6]]
    assert pk.broadcast_view(2.0, view).data.tolist() == [[2.0, 2.0]] * 3
    with pytest.raises(RuntimeError, match=r"^Input operand 1 has a mismatch in its core "
                       r"dimension \(Size 11 is different from 10\)$"):  # fmt: skip
        pk.matmul(pk.View([11]), pk.View([10, 1]))
    with pytest.raises(RuntimeError, match=r"not compatible for multiplication: \(4,\) and"):
        pk.np_matmul(pk.View([4]), pk.View([3, 3]))
    assert pk.matmul(pk.View([3]), pk.View([3, 2])).shape == (2,)


def test_run_time_settings_pykokkos_programs_call():
    pk.initialize()
    pk.enable_uvm()
    assert pk.is_uvm_enabled()
    pk.disable_uvm()
    assert not pk.is_uvm_enabled()
    pk.set_device_id(0)
    assert pk.get_device_id() == 0
    instance = pk.ExecutionSpaceInstance(pk.Serial)
    out = np.zeros(3, np.int64)
    pk.parallel_for(pk.RangePolicy(instance, 0, 3), _fill, view=out, value=4)
    assert out.tolist() == [4, 4, 4]
    assert pk.TeamPolicy(instance, 2, 1).space is pk.Serial
    pk.finalize()


# ------------------------------------------------------------------ bit for bit


@pk.workunit
def _powers(i: int, x: pk.View1D[pk.double], out: pk.View2D[pk.double]):
    out[i][0] = x[i] ** 2
    out[i][1] = math.pow(x[i], 2.0)
    out[i][2] = pk.pow(x[i], 2.0)


def test_float_power_is_pythons_pow(space):
    # g++ folded pow(x, 2.0) into x * x, whose last bit differs for ~0.08% of inputs.
    rng = random.Random(1)
    values = [rng.uniform(-1e3, 1e3) for _ in range(20000)]
    out = np.zeros((len(values), 3))
    pk.parallel_for(pk.RangePolicy(space, 0, len(values)), _powers, x=np.array(values), out=out)
    expected = [[v**2, math.pow(v, 2.0), math.pow(v, 2.0)] for v in values]
    assert out.tolist() == expected


@pk.workunit
def _complex_multiply_add(
    i: int, out: pk.View2D[pk.double], a: pk.View2D[pk.double], b: pk.View2D[pk.double]
):
    ar: float = a[i][0]
    ai: float = a[i][1]
    br: float = b[i][0]
    bi: float = b[i][1]
    out[i][0] += ar * br - ai * bi
    out[i][1] += ar * bi + ai * br


def test_no_fused_multiply_add_in_a_complex_product(native_space):
    # g++ 12 vectorised the two lanes into vfmaddsub despite -ffp-contract=off.
    rng = np.random.default_rng(7)
    n = 4096
    a, b, start = (rng.standard_normal((n, 2)) for _ in range(3))
    out = start.copy()
    pk.parallel_for(pk.RangePolicy(native_space, 0, n), _complex_multiply_add, out=out, a=a, b=b)
    expected = []
    for (ar, ai), (br, bi), (re, im) in zip(a.tolist(), b.tolist(), start.tolist(), strict=True):
        expected.append([re + (ar * br - ai * bi), im + (ar * bi + ai * br)])
    assert out.tolist() == expected


def test_the_guard_keeps_add_multiply_kernels_as_they_were():
    from pkernels.translate import fma_guard
    from pkernels.translate.ir import ViewLayout, ViewType
    from pkernels.translate.kernel import lower_workunit

    arrays = {name: ViewType(pk.float64, 2, ViewLayout.LAST_UNIT) for name in ("out", "a", "b")}
    kernel, helpers = lower_workunit(_complex_multiply_add, "for", arrays)
    assert fma_guard.may_fuse([*helpers, kernel])
    kernel, helpers = lower_workunit(
        _add_into, "for", {n: ViewType(pk.float64, 1, ViewLayout.LAST_UNIT) for n in ("out", "a")}
    )
    assert not fma_guard.may_fuse([*helpers, kernel])


def test_a_fused_kernel_compiles_without_fusing_instructions(tmp_path):
    source = textwrap.dedent(
        """
        extern "C" void k(double* __restrict o, const double* __restrict a,
                          const double* __restrict b, long n) {
            for (long i = 0; i < n; ++i) {
                double ar = a[2*i], ai = a[2*i+1], br = b[2*i], bi = b[2*i+1];
                o[2*i] += ar * br - ai * bi;
                o[2*i+1] += ar * bi + ai * br;
            }
        }
        """
    )
    from pkernels.build.toolchain import RELEASE_FLAGS, host_toolchain
    from pkernels.translate.fma_guard import GUARD

    cpp = tmp_path / "k.cpp"
    cpp.write_text(GUARD + "\n" + source)
    flags = [f for f in RELEASE_FLAGS if f != "-g1"]
    asm = subprocess.run(
        [host_toolchain().path, *flags, "-S", "-o", "-", str(cpp)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "vfm" not in asm and "vfnm" not in asm


# ------------------------------------------------------------------ PyTorch tensors


@pk.workunit
def _scale_into(i: int, out: pk.View1D[pk.float32], x: pk.View1D[pk.float32], k: float):
    out[i] = x[i] * k


def test_cpu_torch_tensors_are_views(space):
    torch = pytest.importorskip("torch")
    x = torch.arange(5, dtype=torch.float32)
    out = torch.zeros(5, dtype=torch.float32)
    pk.parallel_for(pk.RangePolicy(space, 0, 5), _scale_into, out=out, x=x, k=2.0)
    assert out.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]  # written in the tensor's memory
    view = pk.array(out)
    view[0] = 9.0
    assert out[0].item() == 9.0
    grad = torch.ones(5, dtype=torch.float32, requires_grad=True)
    pk.parallel_for(pk.RangePolicy(space, 0, 5), _scale_into, out=out, x=grad, k=1.0)
    assert out.tolist() == [1.0] * 5


def test_random_pools_are_made_and_a_draw_without_one_says_what_to_write(make_module):
    pool = pk.Random_XorShift64_Pool(12345, 8)
    assert isinstance(pool, pk.RandomPool) and pool.seed == 12345
    assert pk.Random_XorShift1024_Pool(1, 2).num_states == 2
    module = make_module(
        """
import pkernels as pk

@pk.workunit
def k(i, out):
    out[i] = pk.rand(pk.double)
"""
    )
    with pytest.raises(pk.TranslationError, match=r"random pool") as info:
        pk.parallel_for(2, module.k, out=np.zeros(2))
    assert "pk.rand(seed, i)" in str(info.value) and info.value.lineno == 6
