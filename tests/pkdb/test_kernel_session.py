"""End-to-end kernel debugging: real pkdb on a PTY, real gdb, real OpenMP kernels."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pexpect
import pytest
from pkdb_harness import gdb_children, kernel_stop, wait_busy, write

pytestmark = pytest.mark.skipif(
    shutil.which("gdb") is None or shutil.which("g++") is None, reason="needs gdb and g++"
)

KERNEL_PROMPT = r"\(pkdb-openmp\) "

PROGRAM = """
import numpy as np
import pkernels as pk
import kmod


@pk.function
def weight(v: float) -> float:
    w = v * 2.0
    return w


@pk.workunit
def yAx(j, acc, cols, y_view, x_view, A_view):
    temp2: float = 0
    for i in range(cols):
        temp2 += A_view[j][i] * x_view[i]
    acc += weight(y_view[j]) * temp2


def run():
    N, M = 32, 8
    y = np.arange(N, dtype=np.float64) / 4
    x = np.ones(M)
    A = np.ones((N, M))
    policy = pk.RangePolicy(pk.ExecutionSpace.OpenMP, 0, N)
    first = pk.parallel_reduce(policy, yAx, cols=M, y_view=y, x_view=x, A_view=A)
    second = pk.parallel_reduce(policy, yAx, cols=M, y_view=y, x_view=x, A_view=A)
    pk.parallel_for(N, kmod.fill, out=y, value=1.5)
    print("results", first, second, y[0])


run()
"""

MODULE = """
import pkernels as pk


@pk.workunit
def fill(i, out, value):
    out[i] = value + i
"""

# Lines of PROGRAM (1-based, after dedent/lstrip): keep in step with the text above.
LINE_W = 8  # w = v * 2.0
LINE_INNER = 16  # temp2 += ...
LINE_ACC = 17  # acc += weight(...) * temp2
LINE_SECOND = 27  # second = ...
LINE_FILL = 6  # kmod: out[i] = value + i


@pytest.fixture
def kernel_program(tmp_path: Path) -> Path:
    write(tmp_path, "kmod.py", MODULE)
    program = write(tmp_path, "prog.py", PROGRAM)
    assert "temp2 +=" in program.read_text().splitlines()[LINE_INNER - 1]
    return program


@pytest.fixture
def session(kernel_program: Path, kernel_pty):
    """``session(*options)``: pkdb on PROGRAM."""
    return lambda *options: kernel_pty(kernel_program, options=options)


def _alive(pid: int) -> bool:
    """Running (a zombie counts as gone: this container's init may not reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


@pytest.fixture
def run_program(tmp_path: Path, kernel_pty):
    """``run_program(name, source)``: pkdb on a program written from source."""
    return lambda name, source: kernel_pty(write(tmp_path, name, source))


def test_breakpoint_inspect_step_finish(session) -> None:
    s = session()
    assert f"Breakpoint 1 at {s.program}:{LINE_INNER}" in s.cmd(f"break {LINE_INNER}")
    stop = s.cmd("continue", KERNEL_PROMPT)
    m = re.search(kernel_stop("prog.py", LINE_INNER, "hit breakpoint 1", r"j=(\d+)"), stop)
    assert m, stop
    j = int(m.group(2))
    assert "-> temp2 += A_view[j][i] * x_view[i]" in stop
    assert s.cmd("p j", KERNEL_PROMPT).strip() == str(j)
    assert s.cmd("p temp2", KERNEL_PROMPT).strip() == "0.0"
    # views are the program's own arrays: slices, arithmetic, len, strided rows
    assert s.cmd("p y_view[j] * 4", KERNEL_PROMPT).strip() == f"np.float64({float(j)})"
    assert s.cmd("p len(x_view)", KERNEL_PROMPT).strip() == "8"
    assert s.cmd("p A_view[j][0:3].tolist()", KERNEL_PROMPT).strip() == "[1.0, 1.0, 1.0]"
    assert s.cmd("p A_view[:, 1][j:j+2].tolist()", KERNEL_PROMPT).strip() == "[1.0, 1.0]"
    where = s.cmd("where", KERNEL_PROMPT)
    assert re.search(rf"#0 \S*prog.py:{LINE_INNER} \(yAx\)", where), where
    assert re.search(r"#1 \S*prog.py:26 \(run\)", where), where
    threads = s.cmd("threads", KERNEL_PROMPT)
    assert re.search(rf"^\* {m.group(1)} .*prog.py:{LINE_INNER}", threads, re.M), threads
    assert "i = 0" in s.cmd("locals", KERNEL_PROMPT)
    args = s.cmd("args", KERNEL_PROMPT)
    assert "cols = 8" in args and "A_view = view(shape=(32, 8), dtype=float64)" in args
    listing = s.cmd("list", KERNEL_PROMPT)
    assert re.search(rf"{LINE_INNER}\s+B->\s+temp2 \+=", listing), listing
    # ll: the whole workunit, decorator to last line; pp: pprint's layout
    whole = s.cmd("ll", KERNEL_PROMPT).splitlines()
    assert re.match(r"\s*12\s+@pk.workunit", whole[0]), whole
    assert re.match(r"\s*17\s+acc \+= weight", whole[-1]), whole
    assert any(re.match(rf"\s*{LINE_INNER}\s+B->", line) for line in whole), whole
    assert s.cmd("pp A_view[j][0:3].tolist()", KERNEL_PROMPT).strip() == "[1.0, 1.0, 1.0]"
    wrapped = s.cmd("pp {'row': A_view[j].tolist() * 4}", KERNEL_PROMPT).strip().splitlines()
    assert wrapped[0] == "{'row': [1.0," and len(wrapped) == 32, wrapped
    # next goes back to the loop header, then into the body again (Python lines)
    assert f"prog.py({LINE_INNER - 1})yAx()" in s.cmd("next", KERNEL_PROMPT)
    assert s.cmd("p i", KERNEL_PROMPT).strip() == "0"
    assert f"prog.py({LINE_INNER})yAx()" in s.cmd("next", KERNEL_PROMPT)
    assert s.cmd("p i", KERNEL_PROMPT).strip() == "1"
    assert s.cmd("p temp2", KERNEL_PROMPT).strip() == "1.0"
    # finish: the kernel runs to its end and the session is back in the host code
    back = s.cmd("finish")
    assert f"prog.py({LINE_SECOND})run()" in back, back
    first = s.cmd("p first").strip()
    assert float(first) == pytest.approx(2 * 8 * sum(k / 4 for k in range(32)))
    gdb = gdb_children(s.child.pid)
    assert gdb, "gdb should be attached now"
    assert s.quit() == 0
    assert not [p for p in gdb if _alive(p)], "gdb outlived the session"


ROW_SUMS = """
import numpy as np
import pkernels as pk


@pk.workunit
def weighted(j, acc, cols, y_view, A_view):
    row: float = 0
    for i in range(cols):
        row += A_view[j][i]
    acc += y_view[j] * row


y = np.arange(32, dtype=np.float64) / 4
total = pk.parallel_reduce(pk.RangePolicy(pk.OpenMP, 0, 32), weighted, cols=8, y_view=y,
                           A_view=np.ones((32, 8)))
print("total", total)
"""


def test_index_conditions_stop_where_they_hold(run_program) -> None:
    # Conditions on the index alone (and scalar arguments) have a launch proven in range
    # run only the indices where they hold in the debug build, the others as release
    # code: the stops, values and results are those of the debug build, and a condition
    # changed at the stop may hold at indices that were left to release code.
    s = run_program("rows.py", ROW_SUMS)
    s.cmd("break 10 if j == cols + 12")  # acc += ...; cols is 8: j == 20
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert re.search(kernel_stop("rows.py", 10, "hit breakpoint 1", "j=20"), stop), stop
    assert s.cmd("p j, row", KERNEL_PROMPT).strip() == "(20, 8.0)"
    s.cmd("condition 1 j == 25", KERNEL_PROMPT)  # 25 runs after 20, in the same thread
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert re.search(r"thread \d+ \(j=25\)", stop), stop
    assert s.cmd("p y_view[j]", KERNEL_PROMPT).strip() == "np.float64(6.25)"
    assert "Deleted breakpoint 1" in s.cmd("clear 1", KERNEL_PROMPT)
    back = s.cmd("continue")
    assert f"total {8 * sum(k / 4 for k in range(32))}" in back, back
    assert s.quit() == 0


def test_conditional_breakpoint_and_helper_step(session) -> None:
    s = session()
    s.cmd(f"break {LINE_ACC} if j == 10")
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert re.search(r"thread \d+ \(j=10\)", stop), stop
    assert s.cmd("p j", KERNEL_PROMPT).strip() == "10"
    step = s.cmd("step", KERNEL_PROMPT)
    assert f"prog.py({LINE_W})weight()" in step and "-> w = v * 2.0" in step, step
    assert s.cmd("p v", KERNEL_PROMPT).strip() == "2.5"
    assert re.search(rf"#0 \S*prog.py:{LINE_W} \(weight\)", s.cmd("bt", KERNEL_PROMPT))
    # up/down move between the helper and the workunit that called it
    up = s.cmd("up", KERNEL_PROMPT)
    assert f"prog.py({LINE_ACC})yAx()" in up and "-> acc += weight(y_view[j]) * temp2" in up
    assert s.cmd("p j, temp2", KERNEL_PROMPT).strip() == "(10, 8.0)"
    # On up, past the kernel: the host frames of the dispatch, with their own names.
    host = s.cmd("up", KERNEL_PROMPT)
    assert f"prog.py({LINE_SECOND - 1})run()" in host and "first = pk.parallel_reduce" in host
    assert s.cmd("p N, M", KERNEL_PROMPT).strip() == "(32, 8)"
    assert "N = 32" in s.cmd("locals", KERNEL_PROMPT)
    assert re.search(
        rf"^> #2 \S*prog.py:{LINE_SECOND - 1} \(run\)$", s.cmd("where", KERNEL_PROMPT), re.M
    )
    assert f"{LINE_SECOND - 1:4d}  ->" in s.cmd("list", KERNEL_PROMPT)
    s.cmd("up", KERNEL_PROMPT)  # the module level
    assert "Oldest frame" in s.cmd("up", KERNEL_PROMPT)
    s.cmd("down 2", KERNEL_PROMPT)
    assert f"prog.py({LINE_W})weight()" in s.cmd("down", KERNEL_PROMPT)
    # a kernel-mode breakpoint shares pdb's numbering and lists with host ones
    assert "Breakpoint 2 at" in s.cmd(f"tbreak {LINE_INNER} if j == 11", KERNEL_PROMPT)
    listing = s.cmd("info breakpoints", KERNEL_PROMPT)
    assert "stop only if j == 10" in listing and "stop only if j == 11" in listing
    assert "Deleted breakpoint 1" in s.cmd("clear 1", KERNEL_PROMPT)
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert re.search(kernel_stop("prog.py", LINE_INNER, "hit breakpoint 2", "j=11"), stop)
    assert "not a kernel-mode command" in s.cmd("debug j", KERNEL_PROMPT)  # pdb's, host only
    # As in pdb, a line that is no command is Python over the kernel's variables.
    assert s.cmd("i + j * 2", KERNEL_PROMPT).strip() == "22"
    assert s.cmd("!j", KERNEL_PROMPT).strip() == "11"  # `j` alone is pdb's jump
    assert "NameError: name 'bogus' is not defined" in s.cmd("bogus", KERNEL_PROMPT)
    assert "Thread" in s.cmd("send info threads", KERNEL_PROMPT)
    assert "finish" in s.cmd("help", KERNEL_PROMPT)
    assert "Python expression" in s.cmd("help p", KERNEL_PROMPT)
    out = s.cmd("continue")  # the tbreak is gone: runs to the end of the program
    assert "results 1984.0 1984.0 1.5" in out and "exited with code 0" in out, out
    s.quit()


def test_up_and_down_take_counts_as_pdb_does(session) -> None:
    # Frames at the helper's stop: weight, yAx, run (the call site), <module>.
    s = session()
    s.cmd(f"break {LINE_ACC} if j == 10")
    s.cmd("continue", KERNEL_PROMPT)
    s.cmd("step", KERNEL_PROMPT)  # into weight
    assert s.cmd("down", KERNEL_PROMPT).strip() == "*** Newest frame"
    assert "<module>()" in s.cmd("up 100", KERNEL_PROMPT)  # as far as there is
    assert s.cmd("up", KERNEL_PROMPT).strip() == "*** Oldest frame"
    assert f"prog.py({LINE_W})weight()" in s.cmd("down -1", KERNEL_PROMPT)  # all the way
    assert s.cmd("up x", KERNEL_PROMPT).strip() == "*** Invalid frame count (x)"
    assert f"prog.py({LINE_SECOND - 1})run()" in s.cmd("u 2", KERNEL_PROMPT)
    assert f"prog.py({LINE_W})weight()" in s.cmd("d 5", KERNEL_PROMPT)
    assert "<module>()" in s.cmd("up -1", KERNEL_PROMPT)  # all the way
    # As pdb's, next goes on in the selected frame: in host code, that is the kernel's end
    assert "'finish' runs it to its end" in s.cmd("next", KERNEL_PROMPT)
    s.cmd("down -1", KERNEL_PROMPT)
    s.cmd("up", KERNEL_PROMPT)  # yAx, in the middle of its last line
    stop = s.cmd("next", KERNEL_PROMPT)  # weight returns, the line ends: the next index
    assert re.search(kernel_stop("prog.py", 14, "", "j=11"), stop), stop
    s.quit()


def test_a_local_before_its_line_has_run_has_no_value(session) -> None:
    # The debug build declares temp2 and i (as 0) at the def line; in Python they do
    # not exist before `temp2: float = 0` and the loop have run.
    s = session()
    s.cmd(f"break {LINE_INNER - 2} if j == 10")  # temp2: float = 0
    s.cmd("continue", KERNEL_PROMPT)
    shown = s.cmd("locals", KERNEL_PROMPT)
    assert "temp2 = <not yet assigned>" in shown and "i = <not yet assigned>" in shown, shown
    failed = s.cmd("p temp2 + 1", KERNEL_PROMPT)
    assert "UnboundLocalError: cannot access local variable 'temp2'" in failed, failed
    assert s.cmd("p j", KERNEL_PROMPT).strip() == "10"  # arguments are there
    s.cmd("next", KERNEL_PROMPT)
    assert s.cmd("p temp2", KERNEL_PROMPT).strip() == "0.0"
    assert "temp2 = 0.0" in s.cmd("info locals", KERNEL_PROMPT)
    s.quit()


def test_a_condition_gdb_cannot_evaluate_stops_there_and_leaves_the_others(session) -> None:
    # As pdb does with a condition that fails: the breakpoint stops unconditionally and
    # the user is told; the kernel stays debugged and the other breakpoints hold.
    s = session()
    s.cmd(f"break {LINE_INNER} if j == 10")
    s.cmd(f"break {LINE_ACC} if nosuch > 1")
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert "breakpoint 2: the condition 'nosuch > 1' cannot be evaluated in this kernel" in stop
    assert "it stops unconditionally" in stop and "runs undebugged" not in stop
    assert re.search(kernel_stop("prog.py", LINE_ACC, "hit breakpoint 2", r"j=\d+"), stop)
    assert "Deleted breakpoint 2" in s.cmd("clear 2", KERNEL_PROMPT)
    assert "j=10" in s.cmd("continue", KERNEL_PROMPT)  # breakpoint 1 still holds
    # A condition pkdb cannot even parse stops there too (the breakpoint is still set).
    broken = s.cmd(f"break {LINE_ACC} if j ==", KERNEL_PROMPT)
    assert "it stops unconditionally" in broken, broken
    s.cmd("disable 1", KERNEL_PROMPT)
    assert "hit breakpoint 3" in s.cmd("continue", KERNEL_PROMPT)
    s.cmd("clear 3", KERNEL_PROMPT)
    s.cmd("enable 1", KERNEL_PROMPT)
    changed = s.cmd("condition 1 nosuch == 3", KERNEL_PROMPT)
    assert "breakpoint 1: the condition 'nosuch == 3' cannot be evaluated" in changed
    assert "stop only if nosuch == 3" in s.cmd("info breakpoints", KERNEL_PROMPT)
    # A line with no code is refused as pdb refuses it at the host prompt.
    assert "*** Blank or comment" in s.cmd(f"break {LINE_W + 2}", KERNEL_PROMPT)
    assert "has no line 999" in s.cmd("break 999", KERNEL_PROMPT)
    s.quit()


def test_second_dispatch_and_imported_module(session) -> None:
    s = session()
    s.cmd(f"break {LINE_ACC} if j == 3")
    s.cmd(f"break kmod.py:{LINE_FILL} if i == 5")
    assert "j=3" in s.cmd("continue", KERNEL_PROMPT)
    assert f"prog.py({LINE_SECOND})run()" in s.cmd("finish")
    # the same kernel dispatched again stops again
    assert "j=3" in s.cmd("continue", KERNEL_PROMPT)
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert re.search(kernel_stop("kmod.py", LINE_FILL, "", "i=5"), stop), stop
    assert s.cmd("p value + i", KERNEL_PROMPT).strip() == "6.5"
    assert "results 1984.0 1984.0 1.5" in s.cmd("continue")
    s.quit()


def test_kernels_without_breakpoints_run_release_builds_without_gdb(session) -> None:
    s = session()
    s.cmd("break 29")  # the print: a host line after every dispatch
    out = s.cmd("continue")
    assert "prog.py(29)run()" in out and "kernel breakpoint" not in out
    assert not gdb_children(s.child.pid), "gdb was started for kernels without breakpoints"
    s.cmd("continue")
    s.cmd("set debug_all_kernels on")
    s.cmd("restart")
    assert "prog.py(29)run()" in s.cmd("continue")  # debug builds, still no breakpoint
    assert "results 1984.0 1984.0 1.5" in s.cmd("continue")
    s.quit()


def test_quit_in_kernel_mode_leaves_no_process(session) -> None:
    s = session()
    s.cmd(f"break {LINE_INNER}")
    s.cmd("continue", KERNEL_PROMPT)
    gdb = gdb_children(s.child.pid)
    assert gdb, "gdb should be attached now"
    s.child.sendline("quit")
    s.child.expect(pexpect.EOF)
    s.child.close()
    assert not [p for p in gdb if _alive(p)], "gdb outlived the session"


EVAL_PROGRAM = """
import numpy as np
import pkernels as pk


@pk.workunit
def scale(i, out, x, factor):
    y: float = x[i] * factor
    out[i] = y


@pk.workunit
def total(i, acc, x):
    acc += x[i]


def main():
    x = np.arange(8, dtype=np.float64)
    out = np.zeros(8)
    limit = 1
    pk.parallel_for(8, scale, out=out, x=x, factor=2.0)
    print("out", out.tolist(), "limit", limit)


main()
"""


def test_eval_and_parallel_print_at_a_kernel_stop(run_program) -> None:
    s = run_program("ev.py", EVAL_PROGRAM)
    s.cmd("break 8 if i == 0")  # out[i] = y, in the first iteration of thread 0's chunk
    assert "i=0" in s.cmd("continue", KERNEL_PROMPT)
    table = s.cmd("parallel_print i * 10", KERNEL_PROMPT)
    assert re.search(r"^\s+\d+\s+0\s+0$", table, re.M), table
    assert "threads" in table
    # a kernel variable is stored into the held thread; an array write lands in the
    # program's array; a call-site local survives continue; a second kernel runs
    assert "y = 100.0 (stored in thread" in s.cmd("eval y = 100.0", KERNEL_PROMPT)
    # The index is an integer in the kernel: a float is refused, not cut to 0.
    assert "i is an integer in the kernel: 0.5 is not stored" in s.cmd("i = 0.5", KERNEL_PROMPT)
    assert s.cmd("p i", KERNEL_PROMPT).strip() == "0"
    s.cmd("eval x[3] = -1.0", KERNEL_PROMPT)  # thread 0's chunk (static schedule): 0..3
    s.cmd("eval limit = 42", KERNEL_PROMPT)
    assert s.cmd("eval pk.parallel_reduce(8, total, x=x)", KERNEL_PROMPT).strip() == "24.0"
    out = s.cmd("continue")
    assert "out [100.0, 2.0, 4.0, -2.0, 8.0, 10.0, 12.0, 14.0] limit 42" in out, out


def test_thread_aware_continue_holds_and_resumes_chosen_threads(run_program) -> None:
    s = run_program("ev.py", EVAL_PROGRAM)
    s.cmd("break 7")  # y: float = x[i] * factor
    stop = s.cmd("continue", KERNEL_PROMPT)
    # both OpenMP threads reach the breakpoint before the prompt comes back
    assert "also at a breakpoint: thread" in stop, stop
    table = s.cmd("parallel_print i", KERNEL_PROMPT)
    rows = re.findall(r"^\s+(\d+)\s+(\d+)\s+\d+$", table, re.M)
    assert sorted(int(i) for _, i in rows) == [0, 4], table  # static chunks 0..3, 4..7
    first = min(rows, key=lambda r: int(r[1]))[0]  # the thread running 0..3
    out = s.cmd(f"continue threads {first}:{first}", KERNEL_PROMPT)
    assert f"Resuming thread {first}" in out and f"thread {first} (i=1)" in out, out
    table = s.cmd("parallel_print i", KERNEL_PROMPT)
    assert sorted(int(i) for _, i in re.findall(r"^\s+(\d+)\s+(\d+)\s+\d+$", table, re.M)) == [
        1,
        4,
    ], table  # the other thread did not move
    assert "not a kernel" not in s.cmd("clear 1", KERNEL_PROMPT)
    assert "exited with code 0" in s.cmd("continue")


HOST_EVAL = """
import numpy as np
import pkernels as pk


@pk.workunit
def fill(i, out, value):
    out[i] = value


def main():
    y = np.zeros(4)
    n = 4
    print("y", y.tolist(), "n", n)


main()
"""


def test_eval_in_host_mode_changes_the_live_program(run_program) -> None:
    s = run_program("hev.py", HOST_EVAL)
    s.cmd("break 13")
    s.cmd("continue")
    s.cmd("eval n = 2")
    s.cmd("eval pk.parallel_for(n, fill, out=y, value=7.0)")  # a kernel on the live array
    assert s.cmd("eval y.sum()").strip() == "np.float64(14.0)"
    assert "eval EXPRESSION | eval STATEMENT" in s.cmd("help eval")
    assert "y [7.0, 7.0, 0.0, 0.0] n 2" in s.cmd("continue")


def test_next_crosses_iterations_and_knows_when_a_thread_is_done(run_program) -> None:
    s = run_program("ev.py", EVAL_PROGRAM)
    s.cmd("break 8 if i == 2")  # out[i] = y; thread 0 runs i = 0..3
    stop = s.cmd("continue", KERNEL_PROMPT)
    thread = re.search(r"thread (\d+) \(i=2\)", stop).group(1)
    assert re.search(kernel_stop("ev.py", 7, "", "i=3"), s.cmd("next", KERNEL_PROMPT))
    assert re.search(kernel_stop("ev.py", 8, "", "i=3"), s.cmd("next", KERNEL_PROMPT))
    assert "has run all its iterations" in s.cmd("next", KERNEL_PROMPT)
    assert "choose another with 'thread N'" in s.cmd("step", KERNEL_PROMPT)
    threads = s.cmd("threads", KERNEL_PROMPT)
    assert re.search(rf"^\* {thread} .*\(done: waits at the end of the kernel\)", threads, re.M)
    # Resumed alone, a finished thread would wait at the kernel's end for ever.
    refused = s.cmd(f"continue threads {thread}", KERNEL_PROMPT)
    assert f"thread {thread} is outside the kernel's lines" in refused, refused
    s.cmd("clear 1", KERNEL_PROMPT)
    assert "exited with code 0" in s.cmd("continue")


MDRANGE = """
import numpy as np
import pkernels as pk


@pk.workunit
def add(i, j, out, a):
    out[i, j] = a[i, j] + 1.0


a = np.arange(12.0).reshape(3, 4)
out = np.zeros((3, 4))
pk.parallel_for(pk.MDRangePolicy([0, 0], [3, 4]), add, out=out, a=a)
print("sum", out.sum())
"""


def test_mdrange_kernel_stop_shows_every_index(run_program) -> None:
    s = run_program("md.py", MDRANGE)
    s.cmd("break 7 if i == 2 and j == 1")
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert re.search(kernel_stop("md.py", 7, "hit breakpoint 1", "i=2, j=1"), stop), stop
    assert s.cmd("p a[i, j]", KERNEL_PROMPT).strip() == "np.float64(9.0)"
    assert re.search(
        r"^\s+\d+\s+2, 1\s+21$", s.cmd("parallel_print i * 10 + j", KERNEL_PROMPT), re.M
    )
    s.cmd("clear 1", KERNEL_PROMPT)
    assert "sum 78.0" in s.cmd("continue")


LAYOUT_LEFT = """
import numpy as np
import pkernels as pk


@pk.workunit
def scale(j, x, f):
    v: float = x[j, 1] * 2.0
    f[j, 0] = v


x = np.asfortranarray(np.arange(24.0).reshape(8, 3))
f = np.zeros((8, 3), order="F")
pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 8), scale, x=x, f=f)
print("f", f[:, 0].tolist())
"""


def test_a_kernel_over_fortran_order_arrays_stops_on_their_elements(run_program) -> None:
    # Its views index axis 0 with a constant 1 (pk_rt::View<double, 2, 2>); gdb reads a
    # condition's elements through the views' strides, which they still hold.
    s = run_program("left.py", LAYOUT_LEFT)
    s.cmd("break 8 if x[j, 1] == 13.0")  # f[j, 0] = v; x[j, 1] is 3 * j + 1: j == 4
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert re.search(kernel_stop("left.py", 8, "hit breakpoint 1", "j=4"), stop), stop
    assert s.cmd("p v", KERNEL_PROMPT).strip() == "26.0"
    assert s.cmd("p x[j].tolist()", KERNEL_PROMPT).strip() == "[12.0, 13.0, 14.0]"
    assert "x = view(shape=(8, 3), dtype=float64)" in s.cmd("args", KERNEL_PROMPT)
    s.cmd("clear 1", KERNEL_PROMPT)
    assert "f [2.0, 8.0, 14.0, 20.0, 26.0, 32.0, 38.0, 44.0]" in s.cmd("continue")
    assert s.quit() == 0


def test_next_on_serial_goes_on_to_the_next_index(run_program) -> None:
    # A Serial launch's loop is visible to gdb: stepping out of the body lands there, and
    # the step goes on to the thread's next index (as on OpenMP), until the last one.
    program = EVAL_PROGRAM.replace(
        "pk.parallel_for(8,", "pk.parallel_for(pk.RangePolicy(pk.Serial, 0, 8),"
    )
    s = run_program("serial.py", program)
    s.cmd("break 8 if i == 6")
    serial_prompt = r"\(pkdb-serial\) "
    assert "Serial thread 0 (i=6) hit breakpoint 1" in s.cmd("continue", serial_prompt)
    assert "serial.py(7)scale()\nSerial thread 0 (i=7)\n" in s.cmd("next", serial_prompt)
    assert s.cmd("p i", serial_prompt).strip() == "7"
    assert "serial.py(8)scale()\nSerial thread 0 (i=7)\n" in s.cmd("next", serial_prompt)
    assert "has run all its iterations; 'continue' ends the kernel" in s.cmd("next", serial_prompt)
    assert "out [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]" in s.cmd("continue")
    s.quit()


RUNTIME_CALL = """
import numpy as np
import pkernels as pk


@pk.workunit
def spin(i, a, m):
    s: float = 0.0
    for k in range(m):
        s += (k % 7) * 0.5
    a[i] = s


a = np.zeros(2)
pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 2), spin, a=a, m=3)
print("after", a.tolist())
"""


def test_next_from_inside_the_runtime_goes_on_from_the_python_line(run_program) -> None:
    # A thread interrupted (Ctrl-C) inside the C++ runtime, here pk_rt::mod of `k % 7`,
    # is run back out to its Python line before the step; it was taken for finished.
    s = run_program("rt.py", RUNTIME_CALL)
    s.cmd("break 9 if i == 0")
    s.cmd("continue", KERNEL_PROMPT)
    for _ in range(80):  # instruction by instruction into the call of pk_rt::mod
        s.cmd("send stepi", KERNEL_PROMPT)
        if "pk_rt::" in s.cmd("send bt 1", KERNEL_PROMPT):
            break
    else:
        raise AssertionError("stepi never entered the runtime")
    assert "rt.py:9 (spin)" in s.cmd("where", KERNEL_PROMPT)  # where shows Python frames
    assert re.search(kernel_stop("rt.py", 8, "", "i=0"), s.cmd("next", KERNEL_PROMPT))
    assert s.cmd("p k, i", KERNEL_PROMPT).strip() == "(0, 0)"
    assert re.search(kernel_stop("rt.py", 9, "", "i=0"), s.cmd("next", KERNEL_PROMPT))
    assert s.cmd("p k", KERNEL_PROMPT).strip() == "1"
    s.cmd("clear 1", KERNEL_PROMPT)
    assert "after [1.5, 1.5]" in s.cmd("continue")
    s.quit()


def test_ignore_counts_and_commands_apply_to_kernel_breakpoints(run_program) -> None:
    # pdb's `ignore N COUNT` and `commands N` set at the host prompt hold in the kernel
    # (one Serial thread: the crossings come in index order), and `ignore` works there.
    program = EVAL_PROGRAM.replace(
        "pk.parallel_for(8,", "pk.parallel_for(pk.RangePolicy(pk.Serial, 0, 8),"
    )
    s = run_program("ign.py", program)
    serial_prompt = r"\(pkdb-serial\) "
    s.cmd("break 8")
    assert "Will ignore next 3 crossings of breakpoint 1." in s.cmd("ignore 1 3")
    s.cmd("commands 1", r"\(com\) ")
    s.cmd('p "at", i, y', r"\(com\) ")
    s.cmd("end")
    stop = s.cmd("continue", serial_prompt)
    assert "Serial thread 0 (i=3)" in stop and "('at', 3, 6.0)" in stop, stop
    assert "condition is tested by gdb" not in stop  # none here
    listing = s.cmd("info breakpoints", serial_prompt)
    assert "breakpoint already hit 1 time" in listing and "ignore next" not in listing
    frames = re.findall(r"#\d+ (\S+):\d+", s.cmd("where", serial_prompt))
    assert len(frames) == 3 and all(f.endswith("ign.py") for f in frames), frames  # no pkdb
    assert "Will ignore next 1 crossing of breakpoint 1." in s.cmd("ignore 1 1", serial_prompt)
    assert "('at', 5, 10.0)" in s.cmd("continue", serial_prompt)
    s.cmd("clear 1", serial_prompt)
    assert "exited with code 0" in s.cmd("continue")
    s.quit()


def test_list_goes_on_and_takes_pdbs_arguments(session) -> None:
    s = session()
    s.cmd(f"break {LINE_ACC} if j == 2")
    s.cmd("continue", KERNEL_PROMPT)
    around = s.cmd("list", KERNEL_PROMPT)
    assert f"{LINE_ACC:4d} B->" in around and f"{LINE_ACC - 5:4d} " in around
    assert f"{LINE_ACC + 6:4d} " in s.cmd("list", KERNEL_PROMPT)  # the next lines
    assert f"{LINE_ACC:4d} B->" in s.cmd("list .", KERNEL_PROMPT)
    assert re.findall(r"^\s*(\d+) ", s.cmd("list 1, 3", KERNEL_PROMPT), re.M) == ["1", "2", "3"]
    assert re.findall(r"^\s*(\d+) ", s.cmd("list 5, 1", KERNEL_PROMPT), re.M) == ["5", "6"]
    assert "usage: list" in s.cmd("list x", KERNEL_PROMPT)
    assert s.cmd("list 900", KERNEL_PROMPT).strip() == "[EOF]"
    s.quit()


def test_enable_at_a_stop_holds_in_the_running_launch(session) -> None:
    # A breakpoint disabled when the launch began was never set in gdb: enabling it at a
    # stop must set it there, for the rest of this launch.
    s = session()
    s.cmd(f"tbreak {LINE_INNER} if j == 2")
    s.cmd(f"break {LINE_ACC} if j == 2")
    s.cmd("disable 2")
    assert "j=2" in s.cmd("continue", KERNEL_PROMPT)
    assert "Enabled breakpoint 2" in s.cmd("enable 2", KERNEL_PROMPT)
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert re.search(kernel_stop("prog.py", LINE_ACC, "hit breakpoint 2", "j=2"), stop), stop
    assert f"prog.py:{LINE_SECOND - 1} (run)" in s.cmd("where", KERNEL_PROMPT)  # the first launch
    s.quit()


LONG_KERNEL = """
import numpy as np
import pkernels as pk


@pk.workunit
def spin(i, a, m):
    s: float = 0.0
    for k in range(m):
        s += (k % 3) * 0.5
    a[i] = s


a = np.zeros(4)
pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 4), spin, a=a, m=10**11)
print("after", a)
"""


def test_ctrl_c_during_finish_puts_the_breakpoints_back(run_program) -> None:
    # `finish` takes the kernel's breakpoints out of gdb; Ctrl-C before the kernel ends
    # brings the user back into it, where the breakpoints must hold again.

    s = run_program("long.py", LONG_KERNEL)
    s.cmd("break 9")
    s.cmd("continue", KERNEL_PROMPT)
    s.child.sendline("finish")
    wait_busy(s, 0.5)  # the kernel runs on, deep in its long indices
    s.child.sendintr()
    assert re.search(r"^OpenMP thread \d+ .*interrupted$", s.wait_prompt(KERNEL_PROMPT), re.M)
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert re.search(kernel_stop("long.py", 9, "hit breakpoint 1"), stop), stop
    s.quit()


EVAL_TROUBLE = """
import numpy as np
import pkernels as pk


@pk.workunit
def fill(i, a, value):
    a[i] = value


@pk.workunit
def past_the_end(i, a):
    a[i + 1000000000] = 1.0


@pk.workunit
def slow(i, a, m):
    s: float = 0.0
    for k in range(m):
        s += k * 0.5
    a[i] = s


n = 8
a = np.zeros(n)
pk.parallel_for(n, fill, a=a, value=1.0)
print("a", a.tolist())
"""


def test_an_evaluated_kernel_that_fails_or_never_ends_leaves_the_session_whole(
    run_program,
) -> None:
    # A kernel run by eval at a stop is the checked release build: an index past its view
    # is the evaluation's error, not a crash of the program. One that runs too long: Ctrl-C
    # stops the waiting (the program runs it on), and the session goes on.

    s = run_program("trouble.py", EVAL_TROUBLE)
    s.cmd("break 7")  # a[i] = value
    s.cmd("continue", KERNEL_PROMPT)
    failed = s.cmd("eval pk.parallel_for(n, past_the_end, a=a)", KERNEL_PROMPT)
    assert "KernelIndexError" in failed and "is out of range for axis 0 of view" in failed, failed
    builds = "p [(k.debug, k.checked) for k in past_the_end.__pkernels__.specializations.values()]"
    assert s.cmd(builds, KERNEL_PROMPT).strip() == "[(False, True)]"
    s.child.sendline("eval pk.parallel_for(2, slow, a=np.zeros(2), m=10**12)")
    wait_busy(s, 0.5)
    s.child.sendintr()
    stopped = s.wait_prompt(KERNEL_PROMPT)
    assert "interrupted: the evaluation runs on in the program" in stopped, stopped
    assert s.cmd("p i", KERNEL_PROMPT).strip() in ("0", "4")
    assert s.cmd("eval pk.parallel_for(n, fill, a=a, value=3.0)", KERNEL_PROMPT).strip() == "None"
    assert s.cmd("p a[5]", KERNEL_PROMPT).strip() == "np.float64(3.0)"
    s.quit()


def test_gdb_habits_counts_info_locals_and_clear_by_location(session) -> None:
    s = session()
    s.cmd(f"break {LINE_INNER} if j == 5 and temp2 == 0")
    stop = s.cmd("continue", KERNEL_PROMPT)
    # A condition on a loop's variable is gdb's to test at every pass: the user is told.
    assert "note: breakpoint 1's condition is tested by gdb each time" in stop, stop
    assert s.cmd("p i", KERNEL_PROMPT).strip() == "0"
    s.cmd("next 2", KERNEL_PROMPT)  # the loop header, then its body again
    assert s.cmd("p i", KERNEL_PROMPT).strip() == "1"
    assert "temp2 = 1.0" in s.cmd("info locals", KERNEL_PROMPT)
    assert "cols = 8" in s.cmd("info args", KERNEL_PROMPT)
    assert "Deleted breakpoint 1" in s.cmd(f"clear prog.py:{LINE_INNER}", KERNEL_PROMPT)
    assert "no breakpoint at prog.py:3" in s.cmd("clear prog.py:3", KERNEL_PROMPT)
    assert "a number of steps expected" in s.cmd("next x", KERNEL_PROMPT)
    s.quit()


def test_an_ignore_count_goes_on_from_one_launch_to_the_next(session) -> None:
    # 32 crossings of the line per launch: ignoring 40 stops in the second launch, and
    # what gdb used up of the count is what pdb shows (and carries) afterwards.
    s = session()
    s.cmd(f"break {LINE_ACC}")
    s.cmd("ignore 1 40")
    assert "hit breakpoint 1" in s.cmd("continue", KERNEL_PROMPT)
    assert f"prog.py:{LINE_SECOND} (run)" in s.cmd("where", KERNEL_PROMPT)
    assert "ignore next" not in s.cmd("info breakpoints", KERNEL_PROMPT)
    s.cmd("ignore 1 5", KERNEL_PROMPT)
    s.cmd("clear 1", KERNEL_PROMPT)
    s.quit()


def test_silent_commands_show_only_their_own_output(run_program) -> None:
    program = EVAL_PROGRAM.replace(
        "pk.parallel_for(8,", "pk.parallel_for(pk.RangePolicy(pk.Serial, 0, 8),"
    )
    s = run_program("silent.py", program)
    s.cmd("break 8")
    s.cmd("commands 1", r"\(com\) ")
    s.cmd("silent", r"\(com\) ")
    s.cmd('p "at", i', r"\(com\) ")
    s.cmd("end")
    stop = s.cmd("continue", r"\(pkdb-serial\) ")
    assert "('at', 0)" in stop, stop
    assert "hit breakpoint 1" not in stop and "held" not in stop, stop
    s.quit()


def test_continue_threads_comes_back_when_they_run_out_of_iterations(run_program) -> None:
    # Static schedule, 2 threads: chunks 0..3 and 4..7. The current thread (whichever of
    # the two reported first), resumed alone, runs out of its chunk and waits at the
    # kernel's end for the held one; the prompt comes back, at the held thread's line.
    s = run_program("ct.py", EVAL_PROGRAM)
    s.cmd("break 8 if i == 3 or i == 5")  # both threads stop: one at i=3, one at i=5
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert "also at a breakpoint" in stop, stop
    table = s.cmd("parallel_print i", KERNEL_PROMPT)
    index_of = dict(re.findall(r"^\s+(\d+)\s+(\d+)\s+\d+$", table, re.M))
    current = re.search(r"^\* (\d+) ", s.cmd("threads", KERNEL_PROMPT), re.M).group(1)
    (other,) = set(index_of) - {current}
    out = s.cmd(f"continue threads {current}", KERNEL_PROMPT)
    assert f"Thread {current} ran all its iterations and waits at the end" in out, out
    assert f"[Switching to thread {other} at " in out, out
    threads = s.cmd("threads", KERNEL_PROMPT)
    assert re.search(rf"^  {current} .*\(done: waits at the end of the kernel\)", threads, re.M)
    assert re.search(rf"^\* {other} .*ct\.py:8 \(scale\)", threads, re.M), threads
    assert s.cmd("p i", KERNEL_PROMPT).strip() == index_of[other]
    s.cmd("clear 1", KERNEL_PROMPT)
    assert "out [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]" in s.cmd("continue")


def test_ctrl_c_in_a_partly_debug_launch_stops_where_variables_are(run_program) -> None:
    # `break 7 if i == 2` runs index 2 in the debug build and the others as release code.
    # Ctrl-C while both threads are deep in long indices reports the thread in the debug
    # build (its variables are there), not one in release code (none).

    s = run_program("part.py", LONG_KERNEL.replace("10**11", "10**12"))
    s.cmd("break 7 if i == 2")
    assert "i=2" in s.cmd("continue", KERNEL_PROMPT)
    s.child.sendline("finish")
    wait_busy(s, 0.5)  # the kernel runs on, deep in its long indices
    s.child.sendintr()
    stop = s.wait_prompt(KERNEL_PROMPT)
    assert re.search(kernel_stop("part.py", r"\d+", "interrupted", "i=2"), stop), stop
    assert s.cmd("p i", KERNEL_PROMPT).strip() == "2"
    s.quit()


def test_exit_in_eval_at_a_kernel_stop_is_an_error_not_a_hang(session) -> None:
    s = session()
    s.cmd(f"break {LINE_INNER} if j == 3")
    s.cmd("continue", KERNEL_PROMPT)
    s.child.timeout = 15  # without a reply the prompt never comes back
    assert s.cmd("eval raise SystemExit(3)", KERNEL_PROMPT).strip() == "*** SystemExit: 3"
    assert "*** SystemExit" in s.cmd("eval exit()", KERNEL_PROMPT)
    assert s.cmd("p j", KERNEL_PROMPT).strip() == "3"  # the evaluation thread lives on
    assert s.quit() == 0


def test_host_aliases_expand_at_the_kernel_prompt(session) -> None:
    s = session()
    s.cmd("alias pj p j, temp2")
    s.cmd("alias times p %1 * %2;; p '%*'")
    s.cmd(f"break {LINE_INNER} if j == 3")
    s.cmd("continue", KERNEL_PROMPT)
    assert s.cmd("pj", KERNEL_PROMPT).strip() == "(3, 0.0)"
    assert s.cmd("times j 10", KERNEL_PROMPT).split() == ["30", "'j", "10'"]
    assert s.quit() == 0


def test_kernel_breakpoint_errors_read_as_pdb_messages(session) -> None:
    s = session()
    s.cmd(f"break {LINE_INNER} if j == 3")
    s.cmd("continue", KERNEL_PROMPT)
    for command in ("enable 99", "disable 99", "clear 99", "delete 2"):
        number = command.split()[1]
        out = s.cmd(command, KERNEL_PROMPT).strip()
        assert out == f"*** Breakpoint number {number} out of range", out  # no ValueError
    out = s.cmd("break /nonexistent/file.py:3", KERNEL_PROMPT).strip()
    assert out == "*** No such file: /nonexistent/file.py", out
    assert "has no line 9999" in s.cmd(f"break {s.program}:9999", KERNEL_PROMPT)
    assert s.quit() == 0
