"""An evaluation the user stopped waiting for (Ctrl-C) that holds Python's interpreter
lock -- a long call into C code -- leaves the session answering: every Python command
waited for it, and so the session answered nothing until it ended."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pexpect
import pytest
from pkdb_harness import wait_busy

pytestmark = pytest.mark.skipif(
    shutil.which("gdb") is None or shutil.which("g++") is None, reason="needs gdb and g++"
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
KERNEL_PROMPT = r"\(pkdb-openmp\) "


def test_the_session_answers_while_an_interrupted_evaluation_holds_the_gil(kernel_pty):
    s = kernel_pty(EXAMPLES / "yax.py", "48", "24")
    s.cmd("break 18 if j == 3")
    s.cmd("continue", KERNEL_PROMPT)
    s.child.sendline("eval sum(range(10**12))")  # minutes in C, the GIL held throughout
    wait_busy(s)  # the evaluation runs in the program
    s.child.sendcontrol("c")
    s.child.expect(KERNEL_PROMPT, timeout=10)
    assert "interrupted: the evaluation runs on in the program" in s.child.before
    s.child.timeout = 10
    start = time.monotonic()
    out = s.cmd("p j + 1", KERNEL_PROMPT)
    assert time.monotonic() - start < 5
    assert "the program cannot answer: the evaluation you interrupted still runs" in out, out
    assert "yax.py:18 (yAx)" in s.cmd("threads", KERNEL_PROMPT)  # gdb's view: at once
    assert "yax.py:18 (yAx)" in s.cmd("where", KERNEL_PROMPT)
    s.child.sendline("quit")
    s.child.expect(pexpect.EOF, timeout=20)
