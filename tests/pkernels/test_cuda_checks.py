"""The Cuda space's checked and debug builds: a failed check raises the CPU's errors,
naming the Python line, the block and the thread; the three builds of a kernel live side
by side and give the same results.

The GPU tests skip without CuPy and a GPU (run them on a GPU machine:
``python3 -m pytest -q tests/pkernels/test_cuda_checks.py``); the compile checks run
wherever nvcc is on the PATH.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from test_cuda import _cuda_source, gpu

import pkernels as pk
from pkernels.build.compiler import GENERATED_PATH
from pkernels.build.runtime import include_option
from pkernels.runtime import hooks
from pkernels.runtime.cuda_compile import BUILD_OPTIONS
from pkernels.translate.kernel import TEAM


@pk.workunit
def past_the_end(i, out, shift: int):
    out[i + shift] = 1.0


@pk.workunit
def divide_by(i, out, ints, d: int):
    out[i] = ints[i] // d


@pk.workunit
def to_int(i, out, x):
    out[i] = int(x[i])


@pk.workunit
def power_of(i, out, ints, e: int):
    out[i] = ints[i] ** e


@pk.workunit
def scaled(i, out, x, a: float):
    out[i] = a * x[i]


@pk.workunit
def team_row_sums(team_member: pk.TeamMember, A, out):
    row: int = team_member.league_rank()
    total: float = 0.0
    for j in range(A.extent(1)):
        total += A[row, j]
    out[row + 1] = total


def _line_of(workunit, text: str) -> int:
    first = workunit.__code__.co_firstlineno
    source = open(__file__).read().splitlines()
    return next(n for n in range(first, first + 20) if text in source[n - 1])


class _Build:
    """A dispatch observer choosing one build for every dispatch."""

    def __init__(self, build: hooks.BuildMode) -> None:
        self.build = build

    def dispatch_started(self, dispatch: hooks.Dispatch) -> None:
        dispatch.build = self.build


@pytest.fixture(params=["checked", "debug"])
def checking_build(request):
    build = _Build(hooks.BuildMode.CHECKED if request.param == "checked" else hooks.BuildMode.DEBUG)
    hooks.add_observer(build)
    yield request.param
    hooks.remove_observer(build)


@pytest.fixture
def cp():
    import cupy

    return cupy


@gpu
def test_an_index_out_of_range_names_the_python_line_block_and_thread(cp, checking_build):
    out = cp.zeros(300)
    policy = pk.RangePolicy(pk.Cuda, 0, 300)
    with pytest.raises(pk.KernelIndexError) as info:
        pk.parallel_for(policy, past_the_end, out=out, shift=1)
    line = _line_of(past_the_end, "out[i + shift]")
    # Index 299 + 1 runs in thread 43 of block 1 in the debug build (256 threads a block,
    # whatever the range: pkdb's block/thread numbers) and of block 4 in the checked one
    # (300 indices spread over the GPU in blocks of 64: cuda_geometry.spread_threads).
    block = 1 if checking_build == "debug" else 4
    assert str(info.value) == (
        f"{__file__}:{line}: index 300 is out of range for axis 0 of view 'out' with extent "
        f"300 (block {block}, thread 43)"
    )
    assert isinstance(info.value, IndexError)
    # The kernel ran on: every index in range was written.
    assert out.get()[1:].tolist() == [1.0] * 299
    # The next launch starts with a clean record.
    pk.parallel_for(policy, past_the_end, out=out, shift=0)


@gpu
@pytest.mark.parametrize(
    ("workunit", "arguments", "error", "text"),
    [
        (divide_by, {"ints": np.arange(4), "d": 0}, pk.KernelZeroDivisionError,
         "integer division or modulo by zero"),
        (to_int, {"x": np.array([1.0, np.nan, 2.0, 3.0])}, pk.KernelValueError,
         "cannot convert float NaN to integer"),
        (to_int, {"x": np.array([1.0, 1e300, 2.0, 3.0])}, pk.KernelOverflowError,
         "cannot convert 1.0000000000000001e+300 to a 64-bit signed integer"),
        (power_of, {"ints": np.arange(4), "e": -2}, pk.KernelValueError,
         "an integer ** -2: Python gives a float"),
    ],
)  # fmt: skip
def test_failed_checks_raise_the_cpu_errors(cp, checking_build, workunit, arguments, error, text):
    args = {k: cp.asarray(v) if isinstance(v, np.ndarray) else v for k, v in arguments.items()}
    out = cp.zeros(4, dtype=cp.int64)
    with pytest.raises(error, match=re.escape(text)) as info:
        pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 4), workunit, out=out, **args)
    assert f"{__file__}:" in str(info.value) and "(block 0, thread " in str(info.value)


@gpu
def test_a_team_kernel_index_out_of_range_is_caught(cp, checking_build):
    A = cp.ones((4, 3))
    out = cp.zeros(4)
    with pytest.raises(pk.KernelIndexError, match=r"with extent 4 \(block \d+, thread 0\)"):
        pk.parallel_for(pk.TeamPolicy(pk.Cuda, 4, 1), team_row_sums, A=A, out=out)


@gpu
def test_the_release_build_does_not_check(cp):
    out = cp.zeros(300)
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 256), past_the_end, out=out, shift=1)
    assert float(out.sum()) == 256.0


@gpu
def test_release_checked_and_debug_builds_live_side_by_side(cp, tmp_path, monkeypatch):
    monkeypatch.setenv("PKERNELS_CACHE_DIR", str(tmp_path))
    x = cp.arange(1000, dtype=cp.float64)
    results = []
    for build in ("release", "debug", "checked", "release", "debug"):
        observer = _Build(hooks.BuildMode(build))
        hooks.add_observer(observer)
        try:
            out = cp.zeros(1000)
            pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 1000), scaled, out=out, x=x, a=0.5)
        finally:
            hooks.remove_observer(observer)
        results.append(out.get())
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
    sources = sorted(tmp_path.rglob("kernel.cu"))
    assert len(sources) == 3  # one cache entry per build, each with its source
    # The same text but for the path of the entry, which it names.
    assert len({s.read_text().replace(str(s), "") for s in sources}) == 1


@gpu
def test_pkernels_checks_makes_cuda_dispatches_checked(tmp_path):
    program = tmp_path / "prog.py"
    program.write_text(
        textwrap.dedent(
            """
            import cupy as cp
            import pkernels as pk

            @pk.workunit
            def past(i, out):
                out[i + 1] = 1.0

            try:
                pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 8), past, out=cp.zeros(8))
            except pk.KernelIndexError as exc:
                print("caught:", exc)
            """
        )
    )
    env = {**os.environ, "PKERNELS_CHECKS": "1", "PKERNELS_CACHE_DIR": str(tmp_path / "c")}
    run = subprocess.run([sys.executable, str(program)], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "caught:" in run.stdout and "index 8 is out of range" in run.stdout


def test_no_line_directive_names_line_zero():
    # NVRTC rejects `#line 0`; every #line of a generated module names a line >= 1.
    source = _cuda_source(team_row_sums, "for", TEAM, A=np.zeros((2, 3)), out=np.zeros(2))
    numbers = [int(m) for m in re.findall(r"^#line (\d+) ", source, re.MULTILINE)]
    assert numbers and min(numbers) >= 1


def test_checked_and_debug_builds_compile_with_nvcc(tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on the PATH")
    ints = np.zeros(8, dtype=np.int64)
    sources = {
        "index": _cuda_source(past_the_end, "for", out=np.zeros(8), shift=1),
        "divide": _cuda_source(divide_by, "for", out=ints, ints=ints, d=2),
        "to_int": _cuda_source(to_int, "for", out=ints, x=np.zeros(8, np.float32)),
        "power": _cuda_source(power_of, "for", out=ints, ints=ints, e=2),
        "team": _cuda_source(team_row_sums, "for", TEAM, A=np.zeros((2, 3)), out=np.zeros(2)),
    }
    stand_in = tmp_path / "nvrtc_builtins.h"
    stand_in.write_text("#include <cstdio>\n")
    procs = {}
    for name, source in sources.items():
        cu = tmp_path / f"{name}.cu"
        cu.write_text(source.replace(GENERATED_PATH, str(cu)))
        for build in ("checked", "debug"):
            procs[name, build] = subprocess.Popen(
                [nvcc, "-std=c++17", "-arch=sm_90", "--fmad=false", *BUILD_OPTIONS[build],
                 include_option(), "--pre-include", str(stand_in), "-c", "-x", "cu", str(cu),
                 "-o", str(tmp_path / f"{name}.{build}.o")],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            )  # fmt: skip
    failures = {}
    for key, proc in procs.items():
        output, _ = proc.communicate(timeout=600)
        if proc.returncode != 0:
            failures[key] = output[-3000:]
    assert not failures, failures
