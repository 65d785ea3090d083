"""`send` refuses gdb's run control (it wedged the session: `thread apply all continue`
left pkdb waiting on threads gdb had let go, `-gdb-exit` ended gdb under it, `detach`
let the kernel run off), naming the pkdb command to use; other gdb commands still run."""

from __future__ import annotations

import shutil

import pytest
from pkdb_harness import write

from pkdb.send_guard import refusal

KERNEL_PROMPT = r"\(pkdb-openmp\) "

PROGRAM = """
import numpy as np
import pkernels as pk


@pk.workunit
def yAx(j, acc, cols, y_view, x_view, A_view):
    temp2: float = 0
    for i in range(cols):
        temp2 += A_view[j][i] * x_view[i]
    acc += y_view[j] * temp2


N, M = 16, 4
total = pk.parallel_reduce(
    pk.RangePolicy(pk.OpenMP, 0, N), yAx, cols=M,
    y_view=np.ones(N), x_view=np.ones(M), A_view=np.ones((N, M)),
)
print("total", total)
"""
LINE_INNER = 9

# (command as typed after `send`, the pkdb command the refusal names)
RUN_CONTROL = [
    ("thread apply all continue", "'continue'"),
    ("t a a c", "'continue'"),
    ("taas next", "'next'"),
    ("-exec-continue", "'continue'"),
    ("-exec-continue --all", "'continue'"),
    ('-interpreter-exec console "continue"', "'continue'"),
    ("continue", "'continue'"),
    ("c", "'continue'"),
    ("cont&", "'continue'"),
    ("next", "'next'"),
    ("-exec-next --thread 1", "'next'"),
    ("step", "'step'"),
    ("finish", "'return'"),
    ("until 10", "'until [LINE]'"),
    ("detach", "'finish'"),
    ("-target-detach", "'finish'"),
    ("-gdb-exit", "'quit'"),
    ("quit", "'quit'"),
    ("kill", "'quit'"),
    ("-exec-abort", "'quit'"),
    ("run", "'restart'"),
    ("attach 1", "pkdb attached gdb"),
    ("interrupt -a", "held already"),
    ("with print pretty -- continue", "'continue'"),
    ("pipe next | cat", "'next'"),
    ("python gdb.execute('continue')", "'continue'"),
    ("stepi 100000", "at most 100"),
]


@pytest.mark.parametrize("command, advice", RUN_CONTROL)
def test_run_control_is_refused_with_the_command_to_use(command, advice):
    reason = refusal(command)
    assert reason is not None and reason.startswith(f"'send {command}' is refused")
    assert advice in reason


@pytest.mark.parametrize(
    "command",
    ["info threads", "bt", "p temp2", "thread apply all bt", "t a a bt", "stepi", "ni 3",
     "x/4xg $sp", "-data-evaluate-expression j", "co", "info frame", "frame 1", "thread 2",
     "python print(1)", "with print pretty -- p j", "-thread-info"],
)  # fmt: skip
def test_other_commands_go_to_gdb(command):
    assert refusal(command) is None


@pytest.mark.skipif(shutil.which("gdb") is None, reason="needs gdb")
def test_the_session_survives_every_refused_command(tmp_path, kernel_pty):
    s = kernel_pty(write(tmp_path, "prog.py", PROGRAM))
    s.cmd(f"break {LINE_INNER} if j == 5")
    assert "j=5)" in s.cmd("continue", KERNEL_PROMPT)
    for command, advice in RUN_CONTROL:
        out = s.cmd(f"send {command}", KERNEL_PROMPT)
        assert f"*** 'send {command}' is refused" in out and advice in out, out
    # Still at the same stop, with gdb and the threads where pkdb left them.
    assert s.cmd("p j", KERNEL_PROMPT).strip() == "5"
    assert "Thread" in s.cmd("send info threads", KERNEL_PROMPT)
    assert f"prog.py:{LINE_INNER}" in s.cmd("send bt 1", KERNEL_PROMPT)
    assert f"prog.py({LINE_INNER - 1})" in s.cmd("next", KERNEL_PROMPT)
    s.cmd("clear 1", KERNEL_PROMPT)
    out = s.cmd("continue")
    assert "total 64.0" in out and "exited with code 0" in out, out
    s.quit()
