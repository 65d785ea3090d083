"""A kernel that ``eval`` launches at a kernel stop records a failed check in its library,
which the held launch shares when it is the same kernel: each launch must get its own
fault, and only its own."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from pkdb_harness import EWALD, kernel_stop, write

pytestmark = pytest.mark.skipif(
    shutil.which("gdb") is None or shutil.which("g++") is None, reason="needs gdb and g++"
)

KERNEL_PROMPT = r"\(pkdb-openmp\) "

SCALE = """
import numpy as np
import pkernels as pk


@pk.workunit
def scale(i, out, x, factor):
    y: float = x[i] * factor
    out[i] = y


x = np.arange(8.0)
out = np.zeros(8)
pk.parallel_for(8, scale, out=out, x=x, factor=2.0)
print("out", out.tolist())
"""


@pytest.fixture
def start(tmp_path: Path, kernel_pty):
    return lambda name, source, *options: kernel_pty(write(tmp_path, name, source), options=options)


def test_a_fault_of_an_evaluated_kernel_is_not_the_held_launchs(start) -> None:
    s = start("scale.py", SCALE)
    s.cmd("break 8")  # out[i] = y
    s.cmd("continue", KERNEL_PROMPT)
    # the same kernel, over more indices than x has: the evaluation's own error
    failed = s.cmd("eval pk.parallel_for(12, scale, out=out, x=x, factor=1.0)", KERNEL_PROMPT)
    assert "KernelIndexError" in failed and "index 8 is out of range" in failed, failed
    s.cmd("clear 1", KERNEL_PROMPT)
    out = s.cmd("continue")
    # the held launch finishes as it would have (factor 2.0 over 0..7), with no error
    assert "out [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]" in out, out
    assert "KernelIndexError" not in out and "exited with code 0" in out, out
    assert s.quit() == 0


def test_an_evaluated_kernel_leaves_the_held_launchs_fault(start) -> None:
    s = start("ewald.py", EWALD, "--debug-all-kernels")
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert re.search(kernel_stop("ewald.py", 8, "stopped by a failed check: ", "p=32"), stop)
    # the same kernel again, in range this time: it succeeds, and clears nothing of the
    # held launch's fault
    fine = "eval pk.parallel_for(4, bin_particles, pos=pos, box=2.0, ncells=8, counter=counter)"
    assert s.cmd(fine, KERNEL_PROMPT).strip() == "None"
    out = s.cmd("continue")
    assert "KernelIndexError" in out and "index 8 is out of range" in out, out
    assert "Entering post mortem debugging" in out and "counts" not in out, out
    assert s.quit() == 0
