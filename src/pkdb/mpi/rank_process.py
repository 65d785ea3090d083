"""A rank as the per-rank session sees it: a :class:`pkdb.session.Debuggee` whose process
is not the front end's child. Its keeper (see :mod:`.rank`) says how it ended."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable

from ..channel import Channel
from ..procstate import main_thread_exited, state
from ..session import Debuggee

#: Seconds a rank whose channel closed gets to be reported ended by its keeper before
#: the front end kills what is left of it.
EXIT_REPORT_PATIENCE = 3.0


class RankProcess:
    """The part of ``subprocess.Popen``'s interface a Debuggee uses, for a rank's agent
    process: its exit status comes from the keeper's report (:meth:`set_exit`)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        #: When the rank last wrote output (time.monotonic()): a sign of life.
        self.last_output = 0.0
        self._ended = threading.Event()
        self._listeners: list[Callable[[int], None]] = []

    def on_exit(self, listener: Callable[[int], None]) -> None:
        """Call ``listener(code)`` (in the keeper's reader thread) when the rank ends."""
        self._listeners.append(listener)

    def set_exit(self, code: int) -> None:
        """The keeper saw the agent end with ``code`` (negative: killed by that signal)."""
        if self.returncode is not None:
            return
        self.returncode = code
        self._ended.set()
        for listener in self._listeners:
            listener(code)

    def poll(self) -> int | None:
        return self.returncode

    def ended(self, timeout: float | None) -> bool:
        return self._ended.wait(timeout)

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout or 0.0)
        assert self.returncode is not None
        return self.returncode


class RankDebuggee(Debuggee):
    """A Debuggee whose process an MPI launcher started (through our keeper)."""

    process: RankProcess

    def __init__(self, process: RankProcess, channel: Channel) -> None:
        super().__init__(process, channel)

    def wait_exited(self, timeout: float) -> bool:
        """Whether the rank's process has exited, all its threads (gdb must not detach
        from one whose threads are still exiting), waiting up to ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not (self.process.ended(0) or _all_threads_exited(self.pid)):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.002)
        return True

    def gone(self) -> bool:
        return self.wait_exited(0) or main_thread_exited(self.pid)

    def resume_if_stopped(self) -> bool:
        if state(self.pid) != "T":
            return False
        self._signal_group(signal.SIGCONT)
        return True

    def wait(self) -> int:
        """The rank's exit status, once its keeper reports it (what is left of it is
        killed when the report is late)."""
        if not self.process.ended(EXIT_REPORT_PATIENCE):
            self._signal_group(signal.SIGKILL)
            if not self.process.ended(EXIT_REPORT_PATIENCE):
                self.process.set_exit(-signal.SIGKILL)  # its keeper is gone too
        self.channel.close()
        return self.process.wait()

    def terminate(self) -> int | None:
        self.channel.close()
        if self.process.returncode is None:
            self._signal_group(signal.SIGKILL)
        try:
            return self.process.wait(timeout=EXIT_REPORT_PATIENCE)
        except subprocess.TimeoutExpired:
            if state(self.pid) is None:  # killed, and its keeper gone: no report comes
                self.process.set_exit(-signal.SIGKILL)
                return self.process.returncode
            return None

    def kill_now(self) -> None:
        """SIGKILL to the rank's process group, without waiting (the session's end)."""
        if self.process.returncode is None:
            self._signal_group(signal.SIGKILL)


def _all_threads_exited(pid: int) -> bool:
    """Whether process ``pid`` is gone, or a zombie with no thread left but its main one."""
    if state(pid) not in (None, "Z", "X"):
        return False
    try:
        return len(os.listdir(f"/proc/{pid}/task")) <= 1
    except OSError:
        return True


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and has not exited."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return state(pid) not in (None, "Z", "X")
