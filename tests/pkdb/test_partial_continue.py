"""`continue threads A:B` gives the prompt back whatever the resumed threads run into:
the end of the kernel while the others are held (they hung the program at its exit, or
at its next parallel region), or a team barrier a held teammate must reach (the resumed
thread spins there: it never looked asleep, and the session hung)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    shutil.which("gdb") is None or shutil.which("g++") is None, reason="needs gdb and g++"
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
KERNEL_PROMPT = r"\(pkdb-openmp\) "
PROMPT_PATIENCE = 20  # seconds: the prompt comes back in about one, or never


def test_resuming_the_thread_that_ends_the_region(kernel_pty):
    # The repro: with `if j == 3` pkdb runs only index 3 in the debug build; the
    # other threads, held outside the kernel's lines, were still held when it returned.
    s = kernel_pty(EXAMPLES / "yax.py")
    s.cmd("break 17 if j == 3")
    # Index 3 is OpenMP thread 0's (a static schedule): the thread that dispatched the
    # kernel, the one that ends the parallel region.
    assert "OpenMP thread 0 (j=3) hit breakpoint 1" in s.cmd("continue", KERNEL_PROMPT)
    s.child.timeout = PROMPT_PATIENCE
    out = s.cmd("continue threads 0:0")  # the kernel ends; so does the program
    assert "Resuming thread 0" in out
    assert "yAx = 35296.029174 (NumPy: 35296.029174)" in out
    assert "The program exited with code 0" in out
    assert s.quit() == 0


def test_resuming_a_team_thread_whose_teammate_is_held(kernel_pty):
    s = kernel_pty(EXAMPLES / "teams.py")
    s.cmd("break 34")  # stage(): before the team's barrier at line 37
    stop = s.cmd("continue", KERNEL_PROMPT)
    # Both threads of league 0's team reach line 34; whichever reports first is current.
    found = re.search(r"OpenMP thread (\d) \(league 0, team_rank (\d)\) hit breakpoint 1", stop)
    assert "teams.py(34)reverse_rows()" in stop and found, stop
    thread, rank = found.groups()
    s.cmd("clear 1", KERNEL_PROMPT)
    s.child.timeout = PROMPT_PATIENCE
    out = s.cmd(f"continue threads {thread}:{thread}", KERNEL_PROMPT)
    assert f"Resuming thread {thread}" in out
    assert f"Thread {thread} waits at the team barrier at" in out and "teams.py:37" in out, out
    assert "for held threads of its team" in out
    assert s.cmd("p 1+1", KERNEL_PROMPT).strip() == "2"
    threads = s.cmd("threads", KERNEL_PROMPT)
    assert f"teams.py:37 (reverse_rows) league 0 team_rank {rank}" in threads, threads
    out = s.cmd("continue")
    assert "rows reversed: True" in out and "exited with code 0" in out
    assert s.quit() == 0


def test_resumed_threads_that_finish_while_others_work_give_the_prompt(kernel_pty):
    s = kernel_pty(EXAMPLES / "yax.py", "64", "64")
    s.cmd("break 18")
    s.cmd("continue", KERNEL_PROMPT)
    s.cmd("clear 1", KERNEL_PROMPT)
    s.child.timeout = PROMPT_PATIENCE
    out = s.cmd("continue threads 1:1", KERNEL_PROMPT)
    assert "Thread 1 ran all its iterations and waits at the end of the kernel" in out, out
    assert "(done: waits at the end of the kernel)" in s.cmd("threads", KERNEL_PROMPT)
    out = s.cmd("continue")
    assert "yAx = 573.878309 (NumPy: 573.878309)" in out and "exited with code 0" in out
    assert s.quit() == 0
