"""The debuggee process: spawn it, talk to it, interrupt it, end it.

Each run of the user's program is a fresh agent process in its own process group,
connected to the front end by a private socket pair (the child's end is passed by file
descriptor). The first run's is a fork of pkdb itself, taken before the front end loads
anything (no second interpreter start-up: most of what pkdb costs over pdb); later runs
are ``python -m pkdb.agent`` children (the front end then has threads, and a fork of a
threaded process is not safe). Ending it kills the whole group, so nothing the program
started outlives it; the agent also ends itself when the front end's end of the socket
closes, which covers the front end being killed outright.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from typing import TYPE_CHECKING, Any

from .procstate import main_thread_exited

if TYPE_CHECKING:
    from .channel import Channel
    from .protocol import Message, Start

#: How long to wait for a killed debuggee to be reaped before giving up on it.
_REAP_TIMEOUT = 5.0


class Debuggee:
    """One running (or just ended) debuggee process."""

    def __init__(self, process: Any, channel: Channel) -> None:
        self.process = process  # a subprocess.Popen, or a _ForkedProcess
        self.channel = channel
        self.adopted = False  # a front end owns it (pkdb's main spawns it before that)
        # The Start message pkdb's main sent ahead of the front end, if any.
        self.sent_start: Start | None = None

    @classmethod
    def fork(cls) -> Debuggee:
        """Start the agent as a fork of this process, which must have no other thread.
        In the child this never returns: the agent runs the program and the process
        exits with its status."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                os.setpgid(0, 0)  # its own group: one killpg ends everything it started
                fd = theirs.detach()
                from .agent.runner import run_agent
            except BaseException:  # noqa: BLE001 - nothing to report to yet
                os._exit(1)
            run_agent(fd)  # raises SystemExit, never returns
        try:
            os.setpgid(pid, pid)  # also here: whichever runs first, the group exists
        except OSError:
            pass  # the child did it already (and may have exec'd)
        theirs.close()
        from .channel import Channel

        return cls(_ForkedProcess(pid), Channel(ours))

    @classmethod
    def spawn(cls) -> Debuggee:
        """Start the agent; it waits for its :class:`~pkdb.protocol.Start` message."""
        import subprocess

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "pkdb.agent", "--channel-fd", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                process_group=0,  # its own group: one killpg ends everything it started
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        from .channel import Channel  # imported while the child starts up

        return cls(process, Channel(ours))

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def pgid(self) -> int:
        return self.process.pid  # group leader, see spawn()

    def poll(self) -> int | None:
        return self.process.poll()

    def receive(self, timeout: float | None) -> Message | None:
        return self.channel.receive(timeout)

    def send(self, message: Message) -> None:
        self.channel.send(message)

    def resume_if_stopped(self) -> bool:
        """Continue the process if job control stopped it (SIGTTIN, SIGTTOU, Ctrl-Z):
        pkdb owns job control for the session, so the program just goes on."""
        try:
            info = os.waitid(os.P_PID, self.pid, os.WSTOPPED | os.WNOHANG)
        except ChildProcessError:
            return False
        if info is None:
            return False
        self._signal_group(signal.SIGCONT)
        return True

    def interrupt(self) -> None:
        """Ctrl-C for the program (when the front end, not the program, got it)."""
        self._signal_group(signal.SIGINT)

    def wait_exited(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the process to exit, without reaping it
        (its group id stays ours); whether it has."""
        deadline = time.monotonic() + timeout
        while self.process.returncode is None:
            try:
                info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
            except ChildProcessError:
                return True
            if info is not None:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.002)
        return True

    def gone(self) -> bool:
        """Whether the process has exited or is exiting (its main thread has: a wait
        for it returns as soon as its other threads are gone too)."""
        return self.wait_exited(0) or main_thread_exited(self.pid)

    def wait(self) -> int:
        """Reap the process; its exit status (negative: killed by that signal)."""
        if self.process.returncode is None:
            # Wait without reaping: while the leader is a zombie its pid cannot be
            # reused, so killing its group cannot hit an unrelated process.
            try:
                os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
            except ChildProcessError:
                pass
            self._signal_group(signal.SIGKILL)  # whatever the program left behind
        code = self.process.wait()
        self.channel.close()
        return code

    def terminate(self) -> int | None:
        """End the debuggee and its process group now; its exit status."""
        self.channel.close()
        if self.process.returncode is None:  # not reaped: the group id is still ours
            self._signal_group(signal.SIGKILL)
        import subprocess

        try:
            return self.process.wait(timeout=_REAP_TIMEOUT)
        except subprocess.TimeoutExpired:  # pragma: no cover - unkillable (D state)
            return None

    def _signal_group(self, signum: int) -> None:
        try:
            os.killpg(self.pgid, signum)
        except (ProcessLookupError, PermissionError):
            pass


class _ForkedProcess:
    """The part of ``subprocess.Popen``'s interface a Debuggee uses, for a forked child."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if timeout is None:
            while self.returncode is None:
                try:
                    _, status = os.waitpid(self.pid, 0)
                except ChildProcessError:
                    self.returncode = 0 if self.returncode is None else self.returncode
                    break
                except InterruptedError:  # pragma: no cover - retried by Python itself
                    continue
                self.returncode = os.waitstatus_to_exitcode(status)
            return self.returncode
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                import subprocess

                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout)
            time.sleep(0.005)
        assert self.returncode is not None
        return self.returncode


def describe_exit(code: int | None, who: str = "The program") -> str:
    """How the program (or ``who``: gdb, say) ended, for the user."""
    if code is None:
        return f"{who} could not be stopped"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        meaning = signal.strsignal(-code)
        return f"{who} was killed by signal {name}" + (f" ({meaning})" if meaning else "")
    return f"{who} exited with code {code}"
