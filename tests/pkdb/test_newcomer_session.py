"""What a pdb user meets in the first hour of kernel debugging (issue 23): real pkdb
sessions on a PTY, real gdb and g++, real OpenMP and Serial kernels."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pkdb_harness import EWALD, kernel_stop, pkdb_env, write

pytestmark = pytest.mark.skipif(
    shutil.which("gdb") is None or shutil.which("g++") is None, reason="needs gdb and g++"
)


@pytest.fixture
def run_program(tmp_path: Path, kernel_pty):
    """``run_program(name, source)``: pkdb on a program written from source."""
    return lambda name, source, *options: kernel_pty(write(tmp_path, name, source), options=options)


SERIAL_PROMPT = r"\(pkdb-serial\) "
KERNEL_PROMPT = r"\(pkdb-openmp\) "

HISTOGRAM = """
import numpy as np
import pkernels as pk


@pk.workunit
def histogram(i, values, counts):
    b = values[i] % 4
    pk.atomic_add(counts, [b], 1)
    values[i] = b


values = np.array([5, 2, 7], dtype=np.int64)
counts = np.zeros(4, dtype=np.int64)
pk.parallel_for(pk.RangePolicy(pk.Serial, 0, 3), histogram, values=values, counts=counts)
print("counts", counts.tolist())
"""


def test_an_atomic_line_stops_once_per_index_with_the_kernels_frame(run_program) -> None:
    # The C++ emitter wrote pk.atomic_add as a lambda at the same Python line: gdb stopped
    # a second time inside it, where `p i` was a NameError and `where` showed (operator).
    s = run_program("hist.py", HISTOGRAM)
    s.cmd("break 8")
    for i in range(3):
        stop = s.cmd("continue", SERIAL_PROMPT)
        assert f"i={i})" in stop, stop
        assert s.cmd("p i", SERIAL_PROMPT).strip() == str(i)
        where = s.cmd("where", SERIAL_PROMPT)
        assert "operator" not in where and "(histogram)" in where.splitlines()[0], where
        assert "pk_old" not in s.cmd("args", SERIAL_PROMPT)
    assert "counts [0, 1, 1, 1]" in s.cmd("continue")


def test_next_from_an_atomic_line_goes_to_the_next_line(run_program) -> None:
    s = run_program("hist.py", HISTOGRAM)
    s.cmd("break 8")
    s.cmd("continue", SERIAL_PROMPT)
    step = s.cmd("next", SERIAL_PROMPT)
    assert "hist.py(9)" in step or "hist.py:9" in step, step
    assert "-> values[i] = b" in step
    assert s.cmd("p counts.tolist()", SERIAL_PROMPT).strip() == "[0, 1, 0, 0]"


def test_an_index_out_of_range_stops_at_its_line_on_the_first_continue(run_program) -> None:
    # The classic cell-list bug: the particle on the upper edge bins one cell past the
    # end. With no breakpoint and no flag, the kernel ran its release build and wrote
    # past `counter`; now it runs the checked build, and the bad index stops there.
    s = run_program("ewald.py", EWALD)
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert re.search(kernel_stop("ewald.py", 8, "stopped by a failed check: "), stop), stop
    assert "index 8 is out of range for axis 0 of view 'counter' with extent 8" in stop
    assert "-> pk.atomic_add(counter, [cell], 1)" in stop
    # the thread the stop names is the one the error names (OpenMP's numbering)
    thread = re.search(kernel_stop("ewald.py", 8), stop).group(1)
    out = s.cmd("continue")
    assert f"with extent 8 (OpenMP thread {thread})" in out, out
    assert "Entering post mortem debugging" in out
    assert s.quit() == 0


SHIFT = """
import numpy as np
import pkernels as pk


@pk.workunit
def shift(i, x):
    x[i + 1] = 1.0


x = np.zeros(4)
pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 4), shift, x=x)
"""


def test_a_failed_check_shows_one_frame_for_its_line(run_program) -> None:
    # The checked build's helpers are inlined at the line and gdb shows them as frames
    # of that line: 'where' listed the kernel's line twice.
    s = run_program("shift.py", SHIFT)
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert re.search(kernel_stop("shift.py", 7, "stopped by a failed check: "), stop), stop
    where = s.cmd("where", KERNEL_PROMPT).splitlines()
    places = [line.split()[-2].rsplit("/", 1)[-1] for line in where]
    assert places == ["shift.py:7", "shift.py:11"], where
    s.quit()


def test_set_checks_off_runs_release_builds(run_program) -> None:
    s = run_program("ewald.py", EWALD)
    assert "checks = on" in s.cmd("show checks")
    s.cmd("set checks off")
    out = s.cmd("continue")  # unchecked: the write past the end goes unnoticed
    assert "counts [4 4 4 4 4 4 4 4]" in out and "The program exited" in out, out


BLAS_AND_KERNEL = """
import numpy as np
import pkernels as pk


@pk.workunit
def scale(i, out, x):
    out[i] = x[i] * 2.0


a = np.random.default_rng(0).random((300, 300))
b = a @ a  # starts NumPy's BLAS threads
out = np.zeros(4)
pk.parallel_for(4, scale, out=out, x=np.arange(4.0))
print("done", out.tolist())
"""


def test_only_the_kernels_threads_are_held_listed_and_selectable(run_program) -> None:
    # Two OpenMP threads: numbers 0 and 1. NumPy's BLAS threads run no kernel: they were
    # counted as held, listed, and could be made current (where `p i` failed).
    s = run_program("blas.py", BLAS_AND_KERNEL)
    s.cmd("break 7")
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert "held" not in stop, stop  # both threads are at the breakpoint
    numbers = re.findall(r"^[* ] (\d+) ", s.cmd("threads", KERNEL_PROMPT), re.M)
    assert sorted(numbers) == ["0", "1"], numbers
    assert "no stopped kernel thread 2" in s.cmd("thread 2", KERNEL_PROMPT)
    assert "[Switching to thread 1 at " in s.cmd("thread 1", KERNEL_PROMPT)
    assert s.cmd("p i", KERNEL_PROMPT).strip() == "2"  # static chunks: thread 1 has 2, 3
    s.cmd("clear 1", KERNEL_PROMPT)
    assert "done [0.0, 2.0, 4.0, 6.0]" in s.cmd("continue")


def test_step_at_a_dispatch_line_enters_the_kernel(run_program) -> None:
    # As pdb's step enters a called function; it used to run the whole kernel.
    s = run_program("hist.py", HISTOGRAM)
    s.cmd("break 14")  # pk.parallel_for(...)
    s.cmd("continue")
    stop = s.cmd("step", SERIAL_PROMPT)
    assert re.search(kernel_stop("hist.py", 7, "", "i=0") + r"\n-> b = values\[i\] % 4$", stop)
    assert s.cmd("p i", SERIAL_PROMPT).strip() == "0"
    assert "hist.py(8)histogram()" in s.cmd("step", SERIAL_PROMPT)
    # the rest is up to the commands given in the kernel: `continue` runs on, as in pdb
    out = s.cmd("continue")
    assert "counts [0, 1, 1, 1]" in out and "The program exited" in out, out


def test_the_slow_condition_note_says_why_gdb_tests_the_condition(run_program) -> None:
    # `p == 32` is a condition on the index alone, which pkdb evaluates before a launch
    # it can prove in range; this kernel converts a float to an integer (no proof), so
    # gdb tests it in every index, and the note says so rather than advising what the
    # user already did.
    s = run_program("ewald.py", EWALD)
    s.cmd("break 8 if p == 31")
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert "p=31" in stop, stop
    assert re.search(
        r"note: breakpoint 1's condition is tested by gdb each time a thread reaches its line "
        r"\(slow inside a long loop\), because the kernel converts a float to an integer",
        stop,
    ), stop
    s.quit()


def test_no_slow_condition_note_where_pkdb_evaluated_the_condition(run_program) -> None:
    s = run_program("blas.py", BLAS_AND_KERNEL)
    s.cmd("break 7 if i == 3")
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert "(i=3) hit breakpoint 1" in stop and "note:" not in stop, stop
    s.quit()
    s = run_program("blas2.py", BLAS_AND_KERNEL)
    s.cmd("break 7 if x[i] > 2.5")  # reads a view: gdb tests it, and the note says why
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert "because the condition reads more than the index and the scalar arguments" in stop


def test_a_breakpoint_after_the_end_says_the_program_is_loaded_again(run_program) -> None:
    # pdb takes breakpoint commands with the program loaded: after the end, pkdb loaded
    # it again without a word, and the next `continue` silently ran it from the start.
    s = run_program("blas.py", BLAS_AND_KERNEL)
    assert "The program exited with code 0" in s.cmd("continue")
    out = s.cmd("break 7")
    assert "loaded again, stopped before its first line" in out, out
    assert "'continue' runs it from the start" in out and "Breakpoint 1 at" in out, out
    assert "hit breakpoint 1" in s.cmd("continue", KERNEL_PROMPT)


WEIGHTED = """
import numpy as np
import pkernels as pk


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


y = np.arange(32, dtype=np.float64) / 4
x, A = np.ones(8), np.ones((32, 8))
policy = pk.RangePolicy(pk.OpenMP, 0, 32)
print("result", pk.parallel_reduce(policy, yAx, cols=8, y_view=y, x_view=x, A_view=A))
"""


def test_pdbs_other_commands_work_at_a_kernel_stop(run_program) -> None:
    # retval, source, alias, jump, interact, commands and clear were host-only (or not
    # there): at a kernel stop they said "not a kernel-mode command".
    s = run_program("w.py", WEIGHTED)
    s.cmd("break 16 if j == 10")  # acc += weight(...) * temp2
    s.cmd("continue", KERNEL_PROMPT)
    assert "*** Not yet returned!" in s.cmd("retval", KERNEL_PROMPT)
    s.cmd("step", KERNEL_PROMPT)  # into weight
    assert "weight returned 5.0" in s.cmd("return", KERNEL_PROMPT)
    assert s.cmd("rv", KERNEL_PROMPT).strip() == "5.0"
    source = s.cmd("source weight", KERNEL_PROMPT)
    assert re.search(r"^\s+6\s+def weight\(v: float\) -> float:$", source, re.M), source
    s.cmd("alias pj p j * 100", KERNEL_PROMPT)
    assert s.cmd("pj", KERNEL_PROMPT).strip() == "1000"
    jumped = s.cmd("jump 13", KERNEL_PROMPT)  # temp2: float = 0, again
    assert re.search(kernel_stop("w.py", 13, "", "j=10"), jumped), jumped
    assert "inside a loop" in s.cmd("jump 15", KERNEL_PROMPT)
    assert s.cmd("next", KERNEL_PROMPT) and s.cmd("p temp2", KERNEL_PROMPT).strip() == "0.0"
    s.cmd("interact", ">>> ")
    assert s.cmd("k = j + 1", ">>> ") == ""
    assert s.cmd("k * 2", ">>> ").strip() == "22"
    assert s.cmd("print(k)", ">>> ").strip() == "11"  # no None after it, as in Python
    assert "exiting" in s.cmd("exit()", KERNEL_PROMPT)
    s.cmd("commands 1", r"\(com\) ")
    s.cmd('p "at", j', r"\(com\) ")
    s.cmd("end", KERNEL_PROMPT)
    assert "('at', 10)" in s.cmd("continue", KERNEL_PROMPT)  # j == 10 again: the jump
    assert s.cmd("clear", "Clear all breaks\\? ") == ""
    s.cmd("n", KERNEL_PROMPT)
    assert "1   breakpoint" in s.cmd("break", KERNEL_PROMPT)  # still there
    s.cmd("clear", "Clear all breaks\\? ")
    assert "Deleted breakpoint 1" in s.cmd("y", KERNEL_PROMPT)
    assert "result" in s.cmd("continue")


def test_run_and_restart_at_a_kernel_stop_start_the_program_again(run_program) -> None:
    s = run_program("w.py", WEIGHTED)
    s.cmd("break 16 if j == 10")
    s.cmd("continue", KERNEL_PROMPT)
    out = s.cmd("restart")
    assert "Restarting" in out and "w.py(1)<module>()" in out, out
    assert "j=10" in s.cmd("continue", KERNEL_PROMPT)
    out = s.cmd("run", KERNEL_PROMPT)  # pdb's run restarts too; on to the breakpoint
    assert "Restarting" in out and "j=10) hit breakpoint 1" in out, out
    assert s.quit() == 0


def test_until_in_a_team_kernel_brings_the_team_across_its_barriers(run_program) -> None:
    # Run alone, the thread would wait at the reduce's barrier for its held teammate.
    from test_team_session import PROGRAM as TEAM

    s = run_program("team.py", TEAM)
    s.cmd("break 7 if team_member.league_rank() == 0")  # row: int = ...
    stop = s.cmd("continue", KERNEL_PROMPT)
    rank = re.search(r"league 0, team_rank (\d)\) hit breakpoint 1", stop).group(1)
    out = s.cmd("until 15", KERNEL_PROMPT)  # past the reduce and the team barrier
    assert re.search(kernel_stop("team.py", 15, "", f"league 0, team_rank {rank}"), out), out
    assert s.cmd("p total", KERNEL_PROMPT).strip() == "28.0"
    s.cmd("clear 1", KERNEL_PROMPT)
    assert "rows ok True" in s.cmd("continue")


def _pkdb(*args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pkdb", *args],
        cwd=cwd,
        env=pkdb_env(cwd),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_version_and_help_say_what_pkdb_needs(tmp_path: Path) -> None:
    version = _pkdb("--version", cwd=tmp_path)
    assert version.returncode == 0
    assert re.match(r"pkdb \S+ \(pkernels \S+, Python 3\.\d+", version.stdout), version
    helped = _pkdb("--help", cwd=tmp_path).stdout
    assert "pkdb [options] -m MODULE [ARGS...]" in helped
    assert "Required: the program to debug" in helped and "gdb and g++ with OpenMP" in helped
    assert "Exit status: the program's" in helped
    missing = _pkdb(cwd=tmp_path)
    assert missing.returncode == 2
    assert "the program to debug is required" in missing.stderr
    assert "Traceback" not in missing.stderr + missing.stdout, missing


def test_a_module_is_debugged_as_python_m_runs_it_and_its_status_is_pkdbs(tmp_path) -> None:
    package = tmp_path / "tool"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text("VALUE = 42\n")
    (package / "__main__.py").write_text(
        "import sys\nfrom .helper import VALUE\nprint('ran', VALUE, sys.argv[1:])\nsys.exit(3)\n"
    )
    result = _pkdb("-m", "tool", "a", "-b", cwd=tmp_path, stdin="continue\n")
    assert "tool/__main__.py(1)<module>()" in result.stdout, result.stdout
    assert "ran 42 ['a', '-b']" in result.stdout
    assert "The program exited with code 3" in result.stdout
    assert result.returncode == 3  # the program's, at the end of input


def test_pkdbs_exit_status_is_the_programs(tmp_path: Path) -> None:
    program = write(tmp_path, "fails.py", "raise SystemExit(5)\n")
    assert _pkdb(str(program), cwd=tmp_path, stdin="continue\n").returncode == 5
    crash = write(tmp_path, "crash.py", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    assert _pkdb(str(crash), cwd=tmp_path, stdin="continue\n").returncode == 128 + 11
    assert _pkdb(str(program), cwd=tmp_path, stdin="quit\n").returncode == 0  # never ended


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_the_program_lets_pkdbs_debugger_attach_under_yama(tmp_path: Path) -> None:
    # Under Yama's ptrace_scope=1 (Ubuntu's default) only a process's ancestors may
    # attach to it, and gdb is the program's sibling: the program must name pkdb (gdb's
    # parent) its tracer. Seen with strace, since Yama cannot be switched on here.
    program = write(tmp_path, "plain.py", "x = 1\n")
    log, pid = tmp_path / "strace.txt", tmp_path / "pkdb.pid"
    pkdb = f'echo $$ > {pid}; exec "{sys.executable}" -m pkdb "{program}"'  # pkdb keeps $$
    subprocess.run(
        ["strace", "-f", "-e", "trace=prctl", "-o", str(log), "sh", "-c", pkdb],
        cwd=tmp_path, env=pkdb_env(tmp_path), input="continue\n", capture_output=True,
        text=True, timeout=60, check=True,
    )  # fmt: skip
    lines = log.read_text().splitlines()
    pkdb_pid = pid.read_text().strip()
    assert any(f"prctl(PR_SET_PTRACER, {pkdb_pid})" in line for line in lines), lines


STENCIL = """
import numpy as np
import pkernels as pk


@pk.workunit
def smooth(i, j, u, out):
    out[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])


n = 16
u = np.random.default_rng(0).random((n, n))
out = np.zeros((n, n))
pk.parallel_for(pk.MDRangePolicy([1, 1], [n, n - 1]), smooth, u=u, out=out)  # one row too far
print("sum", out.sum())
"""


def test_an_mdrange_box_too_large_stops_at_its_line_on_the_first_continue(run_program) -> None:
    s = run_program("stencil.py", STENCIL)
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert re.search(kernel_stop("stencil.py", 7, "stopped by a failed check: "), stop), stop
    assert "index 16 is out of range for axis 0 of view 'u' with extent 16" in stop
