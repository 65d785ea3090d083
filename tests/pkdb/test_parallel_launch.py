"""End-to-end ``parallel_launch``: real pkdb sessions on a PTY, kernels on live data."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from pkdb_harness import PtySession, row, write

KERNEL_PROMPT = r"\(pkdb-openmp\) "

PROGRAM = """
import numpy as np
import pkernels as pk


@pk.workunit
def square(i, out, x):
    out[i] = x[i] * x[i]


@pk.workunit
def square_approx(i, out, x):
    out[i] = x[i] * x[i] + 0.5


@pk.workunit
def total(i, acc, x):
    acc += x[i]


@pk.workunit
def twice_total(i, s: pk.Acc[pk.double], x):
    s += 2.0 * x[i]


@pk.workunit
def prefix(i, acc, last_pass, x, out):
    acc += x[i]
    if last_pass:
        out[i] = acc


@pk.workunit
def broken(i, out, x):
    out[i] = undefined_name


def run():
    n = 16
    x = np.arange(n, dtype=np.float64)
    out = np.zeros(n)
    pk.parallel_for(n, square, out=out, x=x)
    print("after square", out[3])
    print("end", out[3], x[3], out.sum(), pk.parallel_reduce(n, total, x=x))


@pk.workunit
def square_past_the_end(i, out, x):
    out[i * 1000] = x[i] * x[i]


@pk.workunit
def next_value(i, out, x):
    out[i] = x[i + 1]


run()
"""
LINE_PAST_THE_END = 48  # out[i * 1000] = ...

LINE_SQUARE_BODY = 7  # out[i] = x[i] * x[i]
LINE_STOP = 41  # pk.parallel_for(n, square, ...): `out` is still zeros there


@pytest.fixture
def session(tmp_path: Path, kernel_pty):
    program = write(tmp_path, "prog.py", PROGRAM)
    lines = program.read_text().splitlines()
    assert (
        "square, out=out" in lines[LINE_STOP - 1] and "x[i] * x[i]" in lines[LINE_SQUARE_BODY - 1]
    )
    assert "out[i * 1000]" in lines[LINE_PAST_THE_END - 1]
    return lambda: kernel_pty(program)


def at_stop(start) -> PtySession:
    s = start()
    s.cmd(f"break {LINE_STOP}")
    assert f"prog.py({LINE_STOP})run()" in s.cmd("continue")
    return s


def test_two_variants_on_two_spaces_side_by_side(session) -> None:
    s = at_stop(session)
    table = s.cmd(
        "parallel_launch square pk.OpenMP n out=out x=x ; square_approx pk.Serial n out=out x=x"
    )
    assert row(table, "") == ["[1] square", "[2] square_approx"]
    assert row(table, "operation") == ["for OpenMP 0..16", "for Serial 0..16"]
    assert row(table, "status") == ["ok", "ok"]
    assert row(table, "returned") == ["None", "None"]
    assert row(table, "out") == ["copy, written", "copy, written"]
    assert row(table, "  shape dtype") == ["(16,) float64", "(16,) float64"]
    assert row(table, "  sum") == ["1240.0", "1248.0"]
    assert row(table, "  min / max") == ["0.0 / 225.0", "0.5 / 225.5"]
    assert row(table, "  first") == ["[0.0, 1.0, 4.0, 9.0, ...]", "[0.5, 1.5, 4.5, 9.5, ...]"]
    assert row(table, "  max|diff| vs [1]") == ["(reference)", "0.5"]
    assert len(row(table, "time")) == 2
    assert "2 of 2 clauses launched concurrently" in table and "Arrays no clause wrote: x." in table
    # the operation is inferred from the kernel: acc -> reduce (by name or pk.Acc), scan
    table = s.cmd(
        "parallel_launch total pk.Serial n x=x ; twice_total pk.Debug n x=x ; "
        "prefix n x=x out=out ; reduce total pk.RangePolicy(0, n // 2) x=x"
    )
    assert row(table, "operation") == [
        "reduce Serial 0..16", "reduce Debug 0..16", "scan OpenMP 0..16", "reduce OpenMP 0..8"
    ]  # fmt: skip
    assert row(table, "returned") == ["120.0", "240.0", "120.0", "28.0"]
    assert row(table, "|diff| vs [1]") == ["(reference)", "120", "0", "92"]
    assert row(table, "out") == ["-", "-", "copy, written", "-"]
    # isolation: the program's arrays are untouched by all of this
    assert s.cmd("p out.sum(), x.sum()").strip() == "(np.float64(0.0), np.float64(120.0))"
    out = s.cmd("continue")
    assert "after square 9.0" in out and "end 9.0 3.0 1240.0 120.0" in out
    s.quit()


def test_a_failing_clause_is_reported_and_the_others_finish(session) -> None:
    s = at_stop(session)
    table = s.cmd(
        "parallel_launch broken pk.Serial n out=out x=x ; square_approx pk.Serial n out=out x=x ;"
        " square n out=out y=x ; square n out=nothing x=x ; total n // 2 x=x[::2]"
    )
    assert row(table, "status") == ["FAILED", "ok", "FAILED", "FAILED", "ok"]
    assert row(table, "returned") == ["-", "None", "-", "-", "56.0"]
    assert row(table, "  sum") == ["-", "1248.0", "-", "-", "-"]
    assert "4 of 5 clauses launched concurrently" in table and "3 failed." in table
    assert "[1] broken failed: TranslationError: " in table
    assert "name 'undefined_name' is not defined in the kernel" in table
    assert re.search(r"\[3\] square failed: DispatchError: .*missing x; unexpected y", table)
    assert "[4] square failed: NameError: name 'nothing' is not defined" in table
    # mistakes in the command itself
    assert s.cmd("parallel_launch").startswith("*** usage: parallel_launch")
    assert "needs a kernel and a policy" in s.cmd("parallel_launch square out=out")
    assert "too many words" in s.cmd("parallel_launch square pk.Serial n 3 out=out x=x")
    assert "is not a @pk.workunit" in s.cmd("parallel_launch np.sum n x=x")
    assert "continue" not in s.cmd("p 1")  # the session is fine
    s.quit()


def test_a_clause_indexing_past_an_array_fails_alone(session) -> None:
    # Clauses run checked release builds: in a release build these stores would land
    # ~100 kB past `out`, corrupting the program or ending it with the other clauses.
    s = at_stop(session)
    table = s.cmd(
        "parallel_launch square_past_the_end n out=out x=x ; square pk.Serial n out=out x=x ;"
        " square_past_the_end pk.Serial n mut:out x=x"
    )
    assert row(table, "status") == ["FAILED", "ok", "FAILED"]
    assert row(table, "  sum") == ["-", "1240.0", "-"]
    for clause, space_thread in (("1", r"\(OpenMP thread \d+\)"), ("3", r"\(OpenMP thread 0\)")):
        assert re.search(
            rf"\[{clause}\] square_past_the_end failed: KernelIndexError: \S*prog\.py:"
            rf"{LINE_PAST_THE_END}: index \d+000 is out of range for axis 0 of view 'out' "
            rf"with extent 16 {space_thread}",
            table,
        ), table
    # The program's own array took the one store in range (out[0] = 0.0) and nothing else.
    assert s.cmd("p out.sum()").strip() == "np.float64(0.0)"
    # Unchecked release builds, on request: reading x[16] (8 bytes past the array, in
    # memory the allocator owns) goes unnoticed there.
    assert "index 16 is out of range" in s.cmd("parallel_launch next_value n out=out x=x")
    s.cmd("set parallel_launch_checks off")
    assert row(s.cmd("parallel_launch next_value n out=out x=x"), "status") == ["ok"]
    s.cmd("set parallel_launch_checks on")
    out = s.cmd("continue")
    assert "after square 9.0" in out and "end 9.0 3.0 1240.0 120.0" in out
    s.quit()


def test_mut_arguments_share_the_programs_array(session) -> None:
    s = at_stop(session)
    # clause 1 squares the program's x in place; clause 2 sums its own copy of x, taken
    # before any clause ran
    table = s.cmd("parallel_launch square pk.Serial n mut:out=x mut:x ; total pk.Serial n x=x")
    assert row(table, "x") == ["shared (mut:)", "copy, unchanged"]
    assert row(table, "out") == ["shared (mut:)", "-"]
    assert row(table, "returned") == ["None", "120.0"]
    assert s.cmd("p x[3]").strip() == "np.float64(9.0)"
    out = s.cmd("continue")  # the program goes on with the squared x
    assert "after square 81.0" in out and "end 81.0 9.0 " in out and " 1240.0\n" in out
    s.quit()


@pytest.mark.skipif(
    shutil.which("gdb") is None or shutil.which("g++") is None, reason="needs gdb and g++"
)
def test_parallel_launch_at_a_kernel_stop(session) -> None:
    s = session()
    s.cmd(f"break {LINE_SQUARE_BODY} if i == 5")
    assert "i=5" in s.cmd("continue", KERNEL_PROMPT)
    # from the agent's reader thread, while the program's kernel is held by gdb; the
    # call site's names and the kernel's locals (i) are available
    table = s.cmd(
        "parallel_launch square_approx pk.Serial n out=out x=x ; total pk.OpenMP i x=x ; "
        "square pk.Serial n mut:out=out x=x",
        KERNEL_PROMPT,
    )
    assert row(table, "status") == ["ok", "ok", "ok"], table
    assert row(table, "returned") == ["None", "10.0", "None"]
    assert row(table, "  sum")[0] == "1248.0"
    assert s.cmd("p out[15]", KERNEL_PROMPT).strip() == "np.float64(225.0)"  # mut: wrote it
    s.cmd("clear 1", KERNEL_PROMPT)
    assert "end 9.0 3.0 1240.0" in s.cmd("continue")
    s.quit()


TEAM_AND_BOX = """
import numpy as np
import pkernels as pk


@pk.workunit
def rows(team_member: pk.TeamMember, x):
    x[team_member.league_rank()] += 1.0


@pk.workunit
def box(i, j, acc, A):
    acc += A[i, j]


@pk.workunit
def box_max(i, j, acc: pk.Acc[pk.double], A):
    if A[i, j] > acc:
        acc = A[i, j]


def run():
    x = np.zeros(4)
    A = np.arange(12.0).reshape(3, 4)
    print("x", x.tolist())
    print("end", pk.parallel_reduce(pk.MDRangePolicy([0, 0], [3, 4]), box, A=A))


run()
"""


def test_team_and_box_clauses_are_launched_and_reported(tmp_path: Path, kernel_pty) -> None:
    # TeamPolicy and MDRangePolicy clauses: run, and shown by their extent (the report
    # failed on them, and at the host prompt the failure went into the program).
    s = kernel_pty(write(tmp_path, "tb.py", TEAM_AND_BOX))
    s.cmd("break 24")  # print("x", ...): x and A exist
    s.cmd("continue")
    table = s.cmd(
        "parallel_launch rows pk.TeamPolicy(4, 1) mut:x ; reduce box "
        "pk.MDRangePolicy([0, 0], [3, 4]) A=A"
    )
    assert row(table, "operation") == [
        "for OpenMP league 4 x team 1",
        "reduce OpenMP [0, 0]..[3, 4]",
    ]
    assert row(table, "status") == ["ok", "ok"]
    assert row(table, "returned")[1] == "66.0"
    assert s.cmd("p x.tolist()").strip() == "[1.0, 1.0, 1.0, 1.0]"
    assert "x [1.0, 1.0, 1.0, 1.0]" in s.cmd("continue")
