"""A debugger started by pkdb ends when pkdb does, even one that ignores SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pkdb.targets.spawn import GRACE_SECONDS

SRC = Path(__file__).resolve().parents[3] / "src"

# A stand-in owner (pkdb): starts a "debugger" through spawn_debugger, prints its pid,
# then waits to be killed.
OWNER = """
import sys, time
sys.path.insert(0, {src!r})
from pkdb.targets.spawn import spawn_debugger
debugger = spawn_debugger([sys.executable, "-c", {debugger!r}])
print(debugger.pid, flush=True)
time.sleep(600)
"""

OBEDIENT = "import time; time.sleep(600)"  # SIGTERM ends it
STUBBORN = (  # as gdb was seen doing: SIGTERM caught, the process goes on
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie reparented to init is gone for our purpose
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] == "Z"


def _ignores_sigterm(pid: int) -> bool:
    with open(f"/proc/{pid}/status") as status:
        ignored = next(line for line in status if line.startswith("SigIgn:"))
    return bool(int(ignored.split()[1], 16) & (1 << (signal.SIGTERM - 1)))


def _debugger_of_killed_owner(debugger: str) -> tuple[int, float]:
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER.format(src=str(SRC), debugger=debugger)],
        stdout=subprocess.PIPE,
        text=True,
    )
    pid = int(owner.stdout.readline())
    deadline = time.monotonic() + 10
    while debugger == STUBBORN and not _ignores_sigterm(pid) and time.monotonic() < deadline:
        time.sleep(0.02)  # Python starting up: not stubborn yet
    assert not _gone(pid)
    owner.kill()  # SIGKILL: the owner has no say
    owner.wait()
    start = time.monotonic()
    while not _gone(pid) and time.monotonic() - start < GRACE_SECONDS + 10:
        time.sleep(0.05)
    return pid, time.monotonic() - start


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's parent-death signal")
def test_a_debugger_ends_at_once_with_its_owner() -> None:
    pid, waited = _debugger_of_killed_owner(OBEDIENT)
    assert _gone(pid), "the debugger outlived its owner"
    assert waited < GRACE_SECONDS  # the SIGTERM did it, not the watchdog


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's parent-death signal")
def test_a_debugger_that_ignores_sigterm_is_killed_after_the_grace() -> None:
    pid, waited = _debugger_of_killed_owner(STUBBORN)
    assert _gone(pid), "the debugger outlived its owner"
    assert waited >= GRACE_SECONDS - 1, waited


def test_a_missing_debugger_is_popens_error() -> None:
    from pkdb.targets.spawn import spawn_debugger

    with pytest.raises(FileNotFoundError):
        spawn_debugger(["no-such-debugger-here"])
