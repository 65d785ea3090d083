"""Ctrl-C stops a release kernel that spins where no Python line is (g++ made a loop
jumping to itself of a recursion): gdb attached, found no thread at a Python line, let
them all run again and reported nothing, and neither a second Ctrl-C nor `quit` could
end the session."""

from __future__ import annotations

import shutil

import pexpect
import pytest
from pkdb_harness import wait_busy, write

pytestmark = pytest.mark.skipif(
    shutil.which("gdb") is None or shutil.which("g++") is None, reason="needs gdb and g++"
)

KERNEL_PROMPT = r"\(pkdb-openmp\) "

SPINNING = """
import numpy as np
import pkernels as pk


@pk.function
def down(k: int) -> int:
    return down(k + 1) + 1


@pk.workunit
def work(i, out, n: int):
    if n > 0:
        out[i] = down(i)


out = np.zeros(4, dtype=np.int64)
pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 4), work, out=out, n=0)  # compiles it
print("spinning", flush=True)
pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 4), work, out=out, n=1)
print("never", out)
"""


def test_ctrl_c_stops_a_kernel_spinning_with_no_python_line(tmp_path, kernel_pty):
    s = kernel_pty(write(tmp_path, "spin.py", SPINNING))
    s.child.sendline("continue")
    s.child.expect("spinning")
    wait_busy(s)  # in the spinning kernel
    s.child.sendcontrol("c")
    s.child.expect(KERNEL_PROMPT, timeout=20)
    stop = s.child.before.replace("\r\n", "\n")
    assert "OpenMP kernel interrupted in kernel code with no Python line (thread" in stop, stop
    assert "the kernel was launched at" in stop and "spin.py:19" in stop, stop
    threads = s.cmd("threads", KERNEL_PROMPT)
    assert "(in kernel code with no Python line)" in threads, threads
    s.child.sendline("quit")
    s.child.expect(pexpect.EOF, timeout=20)
