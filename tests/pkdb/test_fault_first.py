"""A failed check stops at its line whatever else stopped with it: a thread at a
conditional breakpoint reported first made the faulting thread "also at a breakpoint",
`continue` let it go, and the fault surfaced only as a KernelIndexError after the launch."""

from __future__ import annotations

import shutil

import pytest
from pkdb_harness import write

pytestmark = pytest.mark.skipif(
    shutil.which("gdb") is None or shutil.which("g++") is None, reason="needs gdb and g++"
)

KERNEL_PROMPT = r"\(pkdb-openmp\) "

PROGRAM = """
import numpy as np
import pkernels as pk


@pk.workunit
def shift(i, x, y, n: int):
    v: float = x[i]
    if i == 0:
        y[i + n] = v
    y[i] = v


n = 8
x = np.arange(float(n))
y = np.zeros(n)
pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, n), shift, x=x, y=y, n=n)
print("done", y)
"""


def test_a_failed_check_is_reported_before_a_breakpoint_hit(tmp_path, kernel_pty):
    # Two threads: indices 0-3 and 4-7. Index 0 writes past y; gdb tests the
    # breakpoint's condition (on a local), true from index 4: both stop at once.
    s = kernel_pty(write(tmp_path, "lost.py", PROGRAM))
    s.cmd("break 8 if v > 3.5")
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert "lost.py(9)shift()" in stop, stop
    assert (
        "OpenMP thread 0 (i=0) stopped by a failed check: index 8 is out of range for axis 0 "
        "of view 'y' with extent 8" in stop
    ), stop
    assert "(also at a breakpoint: thread" in stop, stop
    assert s.cmd("p i, v", KERNEL_PROMPT).strip() == "(0, 0.0)"
    s.cmd("clear 1", KERNEL_PROMPT)
    out = s.cmd("continue")
    assert "KernelIndexError" in out and "index 8 is out of range" in out, out
    s.quit()
