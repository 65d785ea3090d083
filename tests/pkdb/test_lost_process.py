"""The program or gdb killed from outside during a kernel session: pkdb says which process
died and how, in one line, ends what is left of the run, and the session goes on (no
traceback, no command failing on a thread that is gone, no child left behind)."""

from __future__ import annotations

import os
import re
import shutil
import signal
from pathlib import Path

import pytest
from pkdb_harness import gdb_children, process_gone, wait_busy, wait_until, write

pytestmark = pytest.mark.skipif(
    shutil.which("gdb") is None or shutil.which("g++") is None, reason="needs gdb and g++"
)

KERNEL_PROMPT = r"\(pkdb-openmp\) "

PROGRAM = """
import os
import numpy as np
import pkernels as pk


@pk.workunit
def double(j, out, x):
    t = x[j] * 2.0
    out[j] = t


@pk.workunit
def spin(i, out, n):
    k = 0
    while k < n:
        k += 1
        out[i] = k


print("pid", os.getpid(), flush=True)
x = np.arange(8.0)
out = np.zeros(8)
pk.parallel_for(8, double, out=out, x=x)
pk.parallel_for(2, spin, out=out, n=10**13)
print("sum", out.sum())
"""
LINE_DOUBLE = 9  # out[j] = t
LINE_SPIN = 16  # k += 1


@pytest.fixture
def stopped(tmp_path: Path, kernel_pty):
    """A session at a kernel breakpoint in ``double``: (session, program pid, gdb pid)."""
    s = kernel_pty(write(tmp_path, "prog.py", PROGRAM))
    s.cmd(f"break {LINE_DOUBLE}")
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert f"prog.py({LINE_DOUBLE})" in stop, stop
    pid = int(re.search(r"pid (\d+)", stop).group(1))
    (gdb,) = gdb_children(s.child.pid)
    return s, pid, gdb


def test_program_killed_at_a_kernel_stop_is_reported_once(stopped) -> None:
    s, pid, gdb = stopped
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: process_gone(pid))
    out = s.cmd("p t")  # host prompt: the kernel stop is gone
    assert out.strip() == "The program was killed by signal SIGKILL (Killed)", out
    assert wait_until(lambda: process_gone(gdb)), "gdb outlived the program"
    assert "not being run" in s.cmd("next")
    assert "prog.py(1)<module>()" in s.cmd("restart")  # the session goes on
    assert s.quit() == 0


def test_gdb_killed_at_a_kernel_stop_ends_the_program_with_one_line(stopped) -> None:
    s, pid, gdb = stopped
    os.kill(gdb, signal.SIGKILL)
    assert wait_until(lambda: process_gone(gdb))
    out = s.cmd("where")
    assert out.strip() == (
        "*** gdb was killed by signal SIGKILL (Killed); the program it was debugging was "
        "ended with it ('run' or 'restart' starts it again)"
    ), out
    assert wait_until(lambda: process_gone(pid)), "the program outlived its gdb"
    assert not gdb_children(s.child.pid)
    assert s.quit() == 0


def test_gdb_killed_while_a_kernel_runs_is_reported_at_once(stopped) -> None:
    s, pid, gdb = stopped
    s.cmd("clear 1", KERNEL_PROMPT)
    s.cmd(f"break {LINE_SPIN} if k < 0", KERNEL_PROMPT)  # never true: spin runs under gdb
    s.child.sendline("continue")
    s.child.expect("is tested by gdb each time")  # said as spin starts under gdb
    wait_busy(s)  # spin runs
    os.kill(gdb, signal.SIGKILL)
    out = s.wait_prompt()  # no command typed: the waiting session notices by itself
    assert "*** gdb was killed by signal SIGKILL (Killed); the program it was debugging" in out
    assert "Traceback" not in out and "SIGTRAP" not in out, out
    assert wait_until(lambda: process_gone(pid))
    assert s.quit() == 0


@pytest.mark.parametrize("where", ["at a kernel stop", "while a kernel runs"])
def test_gdb_ends_with_a_pkdb_killed(stopped, where) -> None:
    """SIGKILL gives pkdb no chance to close its gdb: gdb must still end (it reads its
    commands from pkdb; an orphan stays attached to the program, spinning on a core)."""
    s, pid, gdb = stopped
    if where == "while a kernel runs":
        s.cmd("clear 1", KERNEL_PROMPT)
        # A condition never true keeps spin under gdb (its release build, g++ folds the
        # loop away: the program would end at once).
        s.cmd(f"break {LINE_SPIN} if k < 0", KERNEL_PROMPT)
        s.child.sendline("continue")  # into spin, for good
        s.child.expect("is tested by gdb each time")
        wait_busy(s)
    os.kill(s.child.pid, signal.SIGKILL)
    assert wait_until(lambda: process_gone(gdb), timeout=30), "gdb outlived pkdb"
    try:
        os.kill(pid, signal.SIGKILL)  # the program is the test's to end, if still there
    except ProcessLookupError:
        pass
