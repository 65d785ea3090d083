"""pkdb on the GPU: sessions through a real terminal stopping inside pk.Cuda kernels
under cuda-gdb, with the evaluation helper on the live device arrays.

Marked ``gpu``: they skip without CuPy, a GPU and cuda-gdb. Run them on a GPU machine:
``python3 -m pytest -q tests/pkdb/test_gpu_session.py``.
"""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from gpu_harness import GPU_MARKS, HOST_PROMPT, continue_to_the_end, yax_agrees_with_cupy
from gpu_harness import gpu_session as _session
from gpu_harness import run as _run
from pkdb_harness import write

ROOT = Path(__file__).resolve().parents[2]
pytestmark = GPU_MARKS


@pytest.fixture
def yax(tmp_path: Path) -> Path:
    program = tmp_path / "yax_gpu.py"
    program.write_text((ROOT / "examples" / "yax_gpu.py").read_text())
    return program


def test_the_paper_figure_2_session_on_the_gpu(yax):
    """Break at the dispatch, look at a device array, continue into yAx on pk.Cuda,
    inspect, move on, evaluate, switch threads, clear, and the program ends right."""
    session = _session(yax, "256", "64")
    try:
        _run(session, "break 43", HOST_PROMPT)
        out = _run(session, "continue", HOST_PROMPT)
        assert "yax_gpu.py(43)run()" in out
        out = _run(session, "p y[0:3]", HOST_PROMPT)
        assert out.startswith("array([") and out.count(",") == 2
        y = np.random.default_rng(0).random(256)
        assert f"{y[0]:.8f}"[:8] in out
        _run(session, "break 24 if j == 10", HOST_PROMPT)
        out = _run(session, "continue")
        assert re.search(r"^> \S*yax_gpu\.py\(24\)yAx\(\)\nCUDA block 0, thread 10 \(j=10\) "
                         r"hit breakpoint 2$", out, re.M), out  # fmt: skip
        assert "-> temp2 += A_view[j][i] * x_view[i]" in out
        where = _run(session, "where").splitlines()
        assert where[0].startswith("> #0 ") and where[0].endswith("yax_gpu.py:24 (yAx)")
        assert any(line.endswith("(run)") for line in where[1:])
        out = _run(session, "p y_view[0:2]")
        assert out.startswith("array([") and f"{y[1]:.6f}"[:7] in out
        assert _run(session, "p j") == "10"
        lines = _run(session, "parallel_print j * 2 threads 8:11").splitlines()
        assert lines == [f"thread {n:>6} (block 0, thread {n}): {2 * n}" for n in range(8, 12)]
        assert _run(session, "p j") == "10"  # the focus is back
        out = _run(session, "clear 2")
        out = _run(session, "until 26")
        assert re.search(
            r"yax_gpu\.py\(26\)yAx\(\)\nCUDA block 0, thread 10 \(j=10\)$", out, re.M
        ), out
        total = float(_run(session, "eval float(y.sum())"))
        assert math.isclose(total, float(y.sum()), rel_tol=1e-12)
        threads = _run(session, "info cuda threads")
        assert "yax_gpu.py" in threads
        assert "j=77" in _run(session, "thread j=77")
        assert _run(session, "p j") == "77"
        assert "j=10" in _run(session, "thread j=10")
        assert _run(session, "p j") == "10"
        _run(session, "clear 1")
        out = continue_to_the_end(session)
        assert yax_agrees_with_cupy(out), out
        session.quit()
    finally:
        session.close()


TEAM_PROGRAM = """
import cupy as cp
import pkernels as pk


@pk.workunit
def row_sums(team_member: pk.TeamMember, A, out):
    row: int = team_member.league_rank()
    total: float = 0.0
    for j in range(A.extent(1)):
        total += A[row, j]
    out[row] = total


A = cp.arange(24.0).reshape(6, 4)
out = cp.zeros(6)
pk.parallel_for(pk.TeamPolicy(pk.Cuda, 6, 1), row_sums, A=A, out=out)
print("sums", out.get().tolist())
"""


def test_a_team_kernel_stops_in_its_league_rank(tmp_path):
    program = write(tmp_path, "teams_gpu.py", TEAM_PROGRAM)
    session = _session(program)
    try:
        _run(session, "break 11 if team_member.league_rank() == 2", HOST_PROMPT)
        out = _run(session, "continue")
        assert re.search(r"^> \S*teams_gpu\.py\(11\)row_sums\(\)\nCUDA .*league 2, "
                         r"team_rank 0\) hit breakpoint 1$", out, re.M), out  # fmt: skip
        assert _run(session, "p team_member.league_rank()") == "2"
        assert _run(session, "p row") == "2"
        assert _run(session, "p A[row, 0:4].sum()").startswith("array(38.")
        _run(session, "clear 1")
        out = session.cmd("continue", r"The program exited")
        assert "sums [6.0, 22.0, 38.0, 54.0, 70.0, 86.0]" in out
    finally:
        session.close()


CHECK_PROGRAM = """
import cupy as cp
import pkernels as pk


@pk.workunit
def shift(i, out, x):
    out[i] = x[i + 1]


out = cp.zeros(300)
x = cp.arange(300.0)
pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 300), shift, out=out, x=x)
print("done")
"""


def test_an_out_of_range_index_stops_at_its_line_with_block_and_thread(tmp_path):
    program = write(tmp_path, "check_gpu.py", CHECK_PROGRAM)
    session = _session(program, options=("--debug-all-kernels",))
    try:
        out = _run(session, "continue")
        assert re.search(r"^> \S*check_gpu\.py\(7\)shift\(\)\nCUDA block 1, thread 43 "
                         r"\(i=299\) stopped by a failed check: ", out, re.M), out  # fmt: skip
        assert "index 300 is out of range for axis 0 of view 'x' with extent 300" in out
        assert _run(session, "p i") == "299"
        out = session.cmd("continue", HOST_PROMPT)
        assert "KernelIndexError" in out
    finally:
        session.close()


def test_eval_dispatches_a_new_cuda_kernel_on_the_live_arrays(yax):
    session = _session(yax, "256", "64")
    try:
        _run(session, "break 24 if j == 3", HOST_PROMPT)
        _run(session, "continue")
        before = _run(session, "p float(y_view[3])")
        _run(session, "eval pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 256), scale, out=y, a=2.0)")
        after = _run(session, "p float(y_view[3])")
        assert math.isclose(float(after), 2 * float(before))
        _run(session, "clear 1")
        out = session.cmd("continue", r"The program exited")
        assert "yAx = " in out
    finally:
        session.close()


MIXED_PROGRAM = """
import cupy as cp
import numpy as np
import pkernels as pk


@pk.workunit
def double(i, out, x):
    out[i] = 2.0 * x[i]


x = np.arange(8.0)
out = np.zeros(8)
pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 8), double, out=out, x=x)
gx = cp.asarray(out)
gout = cp.zeros(8)
pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 8), double, out=gout, x=gx)
print("mixed", gout.get().tolist())
"""


def test_a_program_mixing_openmp_and_cuda_kernels_stops_in_both(tmp_path):
    program = write(tmp_path, "mixed.py", MIXED_PROGRAM)
    session = _session(program)
    try:
        _run(session, "break 8 if i == 5", HOST_PROMPT)
        out = _run(session, "continue", r"\(pkdb-openmp\) ")
        assert re.search(r"^OpenMP thread \d+ \(i=5\) hit breakpoint 1$", out, re.M), out
        assert _run(session, "p x[i]", r"\(pkdb-openmp\) ") == "np.float64(5.0)"
        out = _run(session, "continue")
        assert re.search(r"^> \S*mixed\.py\(8\)double\(\)\nCUDA block 0, thread 5 \(i=5\) "
                         r"hit breakpoint 1$", out, re.M), out  # fmt: skip
        assert _run(session, "p x[i]") == "array(10.)"
        _run(session, "clear 1")
        out = session.cmd("continue", r"The program exited")
        assert "mixed [0.0, 4.0, 8.0, 12.0, 16.0, 20.0, 24.0, 28.0]" in out
    finally:
        session.close()


def test_finish_runs_the_kernel_to_its_end_and_stops_after_the_dispatch(yax):
    session = _session(yax, "256", "64")
    try:
        _run(session, "break 24 if j == 5", HOST_PROMPT)
        _run(session, "continue")
        out = _run(session, "finish", HOST_PROMPT)
        assert "yax_gpu.py(42)run()" in out, out  # the loop around the dispatch
        assert _run(session, "p float(result) > 0", HOST_PROMPT) == "True"
        _run(session, "clear 1", HOST_PROMPT)
        out = session.cmd("continue", r"The program exited")
        assert "yAx = " in out
    finally:
        session.close()


def test_without_a_breakpoint_the_gpu_kernel_runs_undebugged(yax):
    session = _session(yax, "256", "64")
    try:
        out = session.cmd("continue", r"The program exited")
        assert yax_agrees_with_cupy(out), out
    finally:
        session.close()


def test_cuda_gdb_is_found_for_cpu_kernels_when_gdb_is_missing():
    from pkdb.targets.factory import gdb_path

    if shutil.which("gdb") is None:
        assert "cuda-gdb" in gdb_path()
