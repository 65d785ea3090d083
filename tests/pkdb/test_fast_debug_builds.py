"""debug_all_kernels with fast_debug_builds (the default): a range parallel_for (or
parallel_reduce) proven unable to fail a check runs release code until Ctrl-C, which
stops a thread as it begins its next index, in the debug build, with its variables."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from pkdb_harness import kernel_stop, wait_busy, write
from test_kernel_crash import LONG_RELEASE as LONG  # two indices that run for hours

pytestmark = pytest.mark.skipif(
    shutil.which("gdb") is None or shutil.which("g++") is None, reason="needs gdb and g++"
)

KERNEL_PROMPT = r"\(pkdb-openmp\) "

# Many short indices: a few seconds in release code, a few more in the debug build.
ROWS = """
import numpy as np
import pkernels as pk


@pk.workunit
def smooth(i, n, out):
    x: float = 0.0
    for k in range(n):
        x = x * 0.5 + 1.0
    out[i] = x + i


out = np.zeros(4000)
pk.parallel_for(4000, smooth, n=10, out=out)  # compiled now: the next dispatch just runs
print("compiled", flush=True)
pk.parallel_for(4000, smooth, n=600_000, out=out)
print("done", out[:3], out[-1])
"""


@pytest.fixture
def start(tmp_path: Path, kernel_pty):
    """``start(name, source, *options)``: pkdb on a program written from source."""
    return lambda name, source, *options: kernel_pty(write(tmp_path, name, source), options=options)


def interrupt_after_compiled(s, delay: float) -> str:
    s.child.sendline("continue")
    s.child.expect("compiled")
    wait_busy(s, delay)
    s.child.sendintr()
    return s.wait_prompt(KERNEL_PROMPT)


def test_ctrl_c_stops_at_the_next_index_in_the_debug_build(start) -> None:
    s = start("rows.py", ROWS, "--debug-all-kernels")
    stop = interrupt_after_compiled(s, 0.5)
    found = re.search(kernel_stop("rows.py", r"(\d+)", "interrupted", r"i=(\d+)"), stop)
    assert found, stop
    assert "began its next index, in the debug build" in stop
    index = int(found.group(3))
    assert 0 < index < 4000  # release code ran the indices before it
    assert s.cmd("p i", KERNEL_PROMPT).strip() == str(index)
    out = ""
    for _ in range(4):  # into the loop: the debug build has every variable
        out = s.cmd("next", KERNEL_PROMPT)
        if "x = x * 0.5 + 1.0" in out:
            break
    assert "x = x * 0.5 + 1.0" in out, out
    assert s.cmd("p n, k", KERNEL_PROMPT).strip() == "(600000, 0)"
    # The rest of the launch runs in the debug build; the Ctrl-C does not stop it again.
    out = s.cmd("continue")
    assert "done [2. 3. 4.] 4001.0" in out, out
    assert "interrupted" not in out
    assert s.quit() == 0


def test_ctrl_c_in_long_indices_stops_the_threads_where_they_are(start) -> None:
    s = start("long.py", LONG, "--debug-all-kernels")
    stop = interrupt_after_compiled(s, 0.5)
    assert re.search(kernel_stop("long.py", "(7|8|9|10)", "interrupted"), stop), stop
    assert "threads still in this launch's release code show no variables" in stop
    assert re.search(r"#0 \S*long.py:(7|8|9|10) \(spin\)", s.cmd("where", KERNEL_PROMPT))
    assert s.quit() == 0


def test_without_fast_debug_builds_ctrl_c_stops_in_the_debug_build_where_it_is(start) -> None:
    s = start("long.py", LONG, "--debug-all-kernels", "-c", "set fast_debug_builds off")
    stop = interrupt_after_compiled(s, 1.0)
    assert re.search(kernel_stop("long.py", "(8|9|10)", "interrupted", "i=[01]"), stop), stop
    assert "release code" not in stop
    assert s.cmd("p n", KERNEL_PROMPT).strip() == "10000000000000"
    assert s.quit() == 0


OUT_OF_RANGE = """
import numpy as np
import pkernels as pk


@pk.workunit
def shift(i, n, src, dst):
    dst[i] = src[i + n]


src = np.arange(10.0)
dst = np.zeros(10)
pk.parallel_for(10, shift, n=0, src=src, dst=dst)
print("first", dst[-1], flush=True)
pk.parallel_for(10, shift, n=1, src=src, dst=dst)
print("second", dst[-1])
"""


def test_a_launch_that_could_fail_a_check_runs_the_debug_build_and_stops_there(start) -> None:
    s = start("shift.py", OUT_OF_RANGE, "--debug-all-kernels")
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert "first 9.0" in stop  # proven: release code, no stop
    assert re.search(kernel_stop("shift.py", 7, "stopped by a failed check: ", "i=9"), stop), stop
    assert "index 10 is out of range for axis 0 of view 'src' with extent 10" in stop
    assert s.cmd("p i + n", KERNEL_PROMPT).strip() == "10"
    assert s.quit() == 0


def test_after_ctrl_c_in_a_release_build_continue_finishes_the_program(start) -> None:
    s = start("rows.py", ROWS)  # no debug_all_kernels: the release build, no gdb until Ctrl-C
    stop = interrupt_after_compiled(s, 0.5)
    assert re.search(kernel_stop("rows.py", r"\d+", "interrupted"), stop), stop
    out = s.cmd("continue")  # the kernel goes on; the same Ctrl-C does not stop it twice
    assert "done [2. 3. 4.] 4001.0" in out, out
    assert "interrupted" not in out
    assert s.quit() == 0


# A long reduce: each index sums a row; the total is checked after the stop.
ROW_SUMS = """
import numpy as np
import pkernels as pk


@pk.workunit
def row_sums(i, acc, m, a):
    s: float = 0.0
    for k in range(m):
        s += a[i][k % 8] * 0.5
    acc += s


a = np.ones((2000, 8))
total = pk.parallel_reduce(2000, row_sums, m=10, a=a)
print("compiled", flush=True)
total = pk.parallel_reduce(2000, row_sums, m=600_000, a=a)
print("total", total, flush=True)
"""


def test_ctrl_c_in_a_reduce_stops_at_the_next_index_and_the_total_holds(start) -> None:
    s = start("sums.py", ROW_SUMS, "--debug-all-kernels")
    stop = interrupt_after_compiled(s, 0.1)  # the launch takes ~0.5 s in release code
    assert re.search(kernel_stop("sums.py", r"\d+", "interrupted", r"i=\d+"), stop), stop
    assert "began its next index, in the debug build" in stop
    assert s.cmd("p m", KERNEL_PROMPT).strip() == "600000"
    out = s.cmd("continue")  # release and debug code added their indices alike
    assert "total 600000000.0" in out, out
    assert s.quit() == 0


def test_ctrl_c_where_only_some_indices_run_the_debug_build(start) -> None:
    # A condition on the index alone: only i == 3999 runs in the debug build, the other
    # indices as release code. Ctrl-C there stops a thread as it begins its next index,
    # in the debug build, as above (no --debug-all-kernels here).
    s = start("rows.py", ROWS)
    s.cmd("break 10 if i == 3999")  # out[i] = x + i
    stop = s.cmd("continue", KERNEL_PROMPT)  # the first, short dispatch
    assert re.search(kernel_stop("rows.py", 10, "hit breakpoint 1", "i=3999"), stop), stop
    assert s.cmd("p x", KERNEL_PROMPT).strip() == "1.998046875"  # 2 - 2**-9
    stop = interrupt_after_compiled(s, 0.5)
    found = re.search(kernel_stop("rows.py", r"\d+", "interrupted", r"i=(\d+)"), stop)
    assert found and "began its next index, in the debug build" in stop, stop
    assert s.cmd("p i, n", KERNEL_PROMPT).strip() == f"({found.group(2)}, 600000)"
    assert "Deleted breakpoint 1" in s.cmd("clear 1", KERNEL_PROMPT)
    out = s.cmd("continue")
    assert "done [2. 3. 4.] 4001.0" in out, out
    assert s.quit() == 0
