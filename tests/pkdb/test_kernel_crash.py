"""Crash stops: a failed bounds check or a segfault in a kernel stops the session at the
kernel's Python line, in the faulting thread, with its variables available."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest
from pkdb_harness import EWALD, kernel_stop, wait_busy, write

pytestmark = pytest.mark.skipif(
    shutil.which("gdb") is None or shutil.which("g++") is None, reason="needs gdb and g++"
)

KERNEL_PROMPT = r"\(pkdb-openmp\) "


SEGFAULT = """
import numpy as np
import pkernels as pk


@pk.function
def depth(n: int) -> int:
    return depth(n + 1) + 1


@pk.workunit
def deep(i, out):
    out[i] = depth(i)


out = np.zeros(4, dtype=np.int64)
pk.parallel_for(4, deep, out=out)
print(out)
"""


@pytest.fixture
def start(tmp_path: Path, kernel_pty):
    """``start(name, source, *options)``: pkdb on a program written from source."""
    return lambda name, source, *options: kernel_pty(write(tmp_path, name, source), options=options)


def test_out_of_bounds_stops_at_the_python_line_in_the_faulting_thread(start) -> None:
    s = start("ewald.py", EWALD, "--debug-all-kernels")
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert re.search(kernel_stop("ewald.py", 8, "stopped by a failed check: ", "p=32"), stop)
    assert "index 8 is out of range for axis 0 of view 'counter' with extent 8" in stop
    assert "-> pk.atomic_add(counter, [cell], 1)" in stop
    assert s.cmd("p p, cell, pos[p]", KERNEL_PROMPT).strip() == "(32, 8, np.float64(1.0))"
    assert re.search(r"#0 \S*ewald.py:8 \(bin_particles\)", s.cmd("where", KERNEL_PROMPT))
    # continuing lets the kernel finish; the program then gets the error, post-mortem
    out = s.cmd("continue")
    assert "KernelIndexError" in out and "Entering post mortem debugging" in out
    s.quit()


def test_segfault_in_a_kernel_stops_the_session_not_kills_it(start) -> None:
    s = start("crash.py", SEGFAULT, "--debug-all-kernels")
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert re.search(kernel_stop("crash.py", r"\d+", "received SIGSEGV"), stop), stop
    assert "(depth)" in s.cmd("where", KERNEL_PROMPT)
    out = s.cmd("continue")
    assert "killed by signal SIGSEGV" in out
    assert "set debug_all_kernels on" not in out  # already on: no hint
    assert s.quit() == 128 + 11  # the program's status, as a shell gives it


SPIN = """
import numpy as np
import pkernels as pk


@pk.workunit
def spin(i, out, n):
    k = 0
    while k < n:
        k += 1
        out[i] = k


out = np.zeros(2, dtype=np.int64)
pk.parallel_for(2, spin, out=out, n=10**13)
print(out)
"""


def test_ctrl_c_interrupts_a_running_kernel_into_kernel_mode(start) -> None:
    s = start("spin.py", SPIN)
    s.cmd("break 9 if k < 0")  # never true: the kernel runs under gdb, never stops
    s.child.sendline("continue")
    s.child.expect("is tested by gdb each time")  # said as the kernel starts under gdb
    wait_busy(s)
    s.child.sendintr()
    stop = s.wait_prompt(KERNEL_PROMPT)
    assert re.search(kernel_stop("spin.py", "(8|9|10)", "interrupted", "i=[01]"), stop), stop
    assert s.cmd("p k > 0", KERNEL_PROMPT).strip() == "True"
    rows = re.findall(
        r"^\s+\d+\s+([01])\s+True$", s.cmd("parallel_print k > 0", KERNEL_PROMPT), re.M
    )
    assert sorted(rows) == ["0", "1"]  # both kernel threads are held, with live values
    assert s.quit() == 0


# A release build (no breakpoint, so no gdb while it runs) writing far out of its view.
WILD_STORE = """
import numpy as np
import pkernels as pk


@pk.workunit
def scatter(i, stride, out):
    j = i * stride
    out[j] = i


out = np.zeros(4, dtype=np.int64)
pk.parallel_for(4, scatter, stride=10**12, out=out)
print(out)
"""


HOST_LOOP_AFTER_KERNEL = """
import time
import numpy as np
import pkernels as pk


@pk.workunit
def quick(i, out):
    out[i] = i * 2.0


@pk.workunit
def spin(i, out):
    k = 0
    while k < 10**13:
        k += 1
        out[i] = k


out = np.zeros(4)
pk.parallel_for(4, quick, out=out)
print("quick done", flush=True)
go = False
while not go:
    time.sleep(0.01)
pk.parallel_for(2, spin, out=out)
"""


def test_ctrl_c_reaches_host_code_after_a_kernel_stop(start) -> None:
    s = start("after.py", HOST_LOOP_AFTER_KERNEL)
    s.cmd("break 8")
    s.cmd("continue", KERNEL_PROMPT)
    s.cmd("clear 1", KERNEL_PROMPT)
    s.child.sendline("continue")
    s.child.expect("quick done")
    time.sleep(1.0)
    s.child.sendintr()  # gdb is still attached: it must not swallow the SIGINT
    assert "Program interrupted" in s.wait_prompt()
    s.cmd("go = True")
    s.cmd("break 14 if k < 0")  # never true: spin runs under gdb
    s.child.sendline("continue")
    s.child.expect("is tested by gdb each time")  # said as the kernel starts under gdb
    wait_busy(s)
    s.child.sendintr()  # in a debug kernel, Ctrl-C is gdb's again
    assert re.search(r"^OpenMP thread \d+ .*interrupted$", s.wait_prompt(KERNEL_PROMPT), re.M)
    assert s.quit() == 0


def test_segfault_in_a_release_build_stops_at_the_python_line(start) -> None:
    s = start("wild.py", WILD_STORE)
    s.cmd("set checks off")  # the release build, not the checked one
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert re.search(kernel_stop("wild.py", 8, "received SIGSEGV"), stop), stop
    assert "-> out[j] = i" in stop
    assert "release build: its variables are not available" in stop
    assert re.search(r"#0 \S*wild.py:8 \(scatter\)", s.cmd("where", KERNEL_PROMPT))
    out = s.cmd("continue")
    assert "killed by signal SIGSEGV" in out
    assert s.quit() == 128 + 11  # the program's status, as a shell gives it


# Both threads of a release build fault, the second while gdb is attaching for the first:
# its crash report must not make pkdb resume the threads gdb holds (their SIGSEGV then
# killed the program, or a later command met "Invalid thread id").
TWO_CRASHES = """
import numpy as np
import pkernels as pk


@pk.workunit
def scatter(i, n, stride, out):
    x: float = 1.0
    for k in range(i * n):
        x = x * 1.0000001 + 0.5
    j = (i + 1) * stride + int(x) % 2
    out[j] = i


out = np.zeros(2, dtype=np.int64)
pk.parallel_for(2, scatter, n=20000000, stride=10**12, out=out)
print(out)
"""


def test_two_threads_crashing_in_a_release_build_stop_both_under_gdb(start) -> None:
    s = start("two.py", TWO_CRASHES)
    s.cmd("set checks off")  # the release build, not the checked one
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert re.search(kernel_stop("two.py", 11, "received SIGSEGV"), stop), stop
    assert re.search(r"also stopped: thread \d+", stop), stop
    threads = s.cmd("threads", KERNEL_PROMPT)
    assert len(re.findall(r"two.py:11 \(scatter\)", threads)) == 2, threads
    assert re.search(r"#0 \S*two.py:11 \(scatter\)", s.cmd("where", KERNEL_PROMPT))
    out = s.cmd("continue")
    assert "killed by signal SIGSEGV" in out
    assert s.quit() == 128 + 11  # the program's status, as a shell gives it


# A release build that runs for hours: no breakpoint, so no gdb until Ctrl-C.
LONG_RELEASE = """
import numpy as np
import pkernels as pk


@pk.workunit
def spin(i, n, out):
    x: float = 1.0
    for k in range(n):
        x = x * 1.0000001 + 0.5
    out[i] = x


out = np.zeros(2)
pk.parallel_for(2, spin, n=10, out=out)  # compiled now: the next dispatch just runs
print("compiled", flush=True)
pk.parallel_for(2, spin, n=10**13, out=out)
print(out)
"""


def test_ctrl_c_interrupts_a_release_build_into_kernel_mode(start) -> None:
    s = start("long.py", LONG_RELEASE)
    s.child.sendline("continue")
    s.child.expect("compiled")
    wait_busy(s)
    s.child.sendintr()
    stop = s.wait_prompt(KERNEL_PROMPT)
    assert re.search(kernel_stop("long.py", "(7|8|9)", "interrupted"), stop), stop
    assert "release build: its variables are not available" in stop
    assert re.search(r"#0 \S*long.py:(7|8|9) \(spin\)", s.cmd("where", KERNEL_PROMPT))
    assert s.quit() == 0


# A release build run by an expression at the host prompt: Ctrl-C stops it in kernel
# mode as it would in the program; `continue` then finishes the expression.
HOST_EVAL_LONG = """
import time
import numpy as np
import pkernels as pk


@pk.workunit
def slow(i, a, m):
    s: float = 0.0
    for k in range(m):
        s += k * 0.5
    a[i] = s


a = np.zeros(2)
pk.parallel_for(2, slow, a=a, m=10)  # compiled now: the expression's dispatch just runs
go = False
while not go:
    time.sleep(0.01)
"""


def test_ctrl_c_in_a_kernel_run_by_an_expression_at_the_host_prompt(start) -> None:
    s = start("hostexpr.py", HOST_EVAL_LONG)
    s.cmd("break 18")  # go = False
    s.cmd("continue")
    s.child.sendline("p (pk.parallel_for(2, slow, a=a, m=2 * 10**9), 5)")
    s.child.expect("10\\*\\*9")
    wait_busy(s)
    s.child.sendintr()
    stop = s.wait_prompt(KERNEL_PROMPT)
    assert re.search(kernel_stop("hostexpr.py", "(10|11|12)", "interrupted"), stop), stop
    # continue: the kernel finishes and the expression shows its value; the Ctrl-C the
    # kernel took is not raised into it afterwards (it was: "*** KeyboardInterrupt")
    out = s.cmd("continue")
    assert out.strip() == "(None, 5)", out
    # nor does it swallow the next Ctrl-C, which stops the program as usual
    s.cmd("clear 1")
    s.child.sendline("continue")
    s.child.expect("continue")
    time.sleep(0.5)
    s.child.sendintr()
    assert "Program interrupted" in s.wait_prompt()
    assert s.quit() == 0
