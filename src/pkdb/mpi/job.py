"""The MPI job: start the launcher, gather the ranks as they connect, forward their
output, and end everything at the session's end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..channel import Channel
from .launcher import launch_command, launch_environment
from .listener import Arrival, HelloError, RankListener
from .rank_process import RankDebuggee, RankProcess, pid_alive

#: Seconds the launcher gets to exit once its ranks are gone, before it is killed.
LAUNCHER_PATIENCE = 5.0
#: The most lines of the launcher's own output kept to explain a failed start.
_KEPT_LINES = 40


class JobError(Exception):
    """The ranks could not be started (the launcher failed, or they did not connect)."""


@dataclass
class _Rank:
    agent: Arrival | None = None
    keeper: Arrival | None = None


@dataclass
class _Lines:
    """Output of one source, cut into whole lines."""

    prefix: str
    partial: str = ""

    def feed(self, text: str) -> str:
        text = self.partial + text
        complete, _, self.partial = text.rpartition("\n")
        if not complete and not text.endswith("\n"):
            return ""
        return "".join(f"{self.prefix}{line}\n" for line in complete.split("\n"))

    def flush(self) -> str:
        rest, self.partial = self.partial, ""
        return f"{self.prefix}{rest}\n" if rest else ""


@dataclass
class MpiJob:
    """``size`` ranks started by ``launcher`` (None: pkdb's mpirun; ``"none"``: the user
    starts them, as :meth:`start` says); their output goes to ``write``."""

    size: int
    launcher: str | None
    write: Callable[[str], None]
    process: subprocess.Popen[bytes] | None = None
    listener: RankListener | None = None
    debuggees: dict[int, RankDebuggee] = field(default_factory=dict)
    keeper_pids: dict[int, int] = field(default_factory=dict)
    _launcher_lines: list[str] = field(default_factory=list)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self, timeout: float) -> dict[int, RankDebuggee]:
        """Start the ranks and wait (up to ``timeout`` seconds) for all to connect; the
        per-rank debuggees, by rank. :class:`JobError` when that fails."""
        self.listener = RankListener()
        if self.launcher == "none":
            from .launcher import rank_command

            command = " ".join(rank_command(self.listener.directory))
            self.write(
                f"pkdb: waiting for {self.size} ranks; start them with your launcher, e.g.\n"
                f"  mpirun -n {self.size} {command}\n"
            )
        else:
            command_line = launch_command(self.size, self.launcher, self.listener.directory)
            try:
                self.process = subprocess.Popen(
                    command_line,
                    env=launch_environment(self.launcher is None),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # Ctrl-C is pkdb's to pass on, not mpirun's
                )
            except OSError as exc:
                raise JobError(f"cannot run {command_line[0]}: {exc}") from None
            self._spawn(self._forward_launcher, self.process)
        ranks = self._gather(timeout)
        for rank, arrival in sorted(ranks.items()):
            assert arrival.agent is not None and arrival.keeper is not None
            process = RankProcess(arrival.agent.pid)
            self.debuggees[rank] = RankDebuggee(process, Channel(arrival.agent.sock))
            self.keeper_pids[rank] = arrival.keeper.pid
            self._spawn(self._read_keeper, rank, arrival.keeper, process)
        return self.debuggees

    def _gather(self, timeout: float) -> dict[int, _Rank]:
        assert self.listener is not None
        ranks: dict[int, _Rank] = {}
        deadline = time.monotonic() + timeout
        while sum(r.agent is not None and r.keeper is not None for r in ranks.values()) < self.size:
            if self.process is not None and self.process.poll() is not None:
                time.sleep(0.1)  # its last words
                raise JobError(
                    self._launcher_failure(f"exited with code {self.process.returncode}")
                )
            left = deadline - time.monotonic()
            if left <= 0:
                connected = sum(r.agent is not None for r in ranks.values())
                raise JobError(
                    self._launcher_failure(
                        f"started {connected} of {self.size} ranks in {timeout:.0f} s"
                    )
                )
            try:
                arrival = self.listener.accept(min(left, 0.2))
            except HelloError:
                continue  # not one of ours: refused
            if arrival is None:
                continue
            if not 0 <= arrival.rank < self.size:
                arrival.sock.close()
                raise JobError(f"a rank {arrival.rank} connected: the job has {self.size} ranks")
            slot = ranks.setdefault(arrival.rank, _Rank())
            if getattr(slot, arrival.kind) is not None:
                arrival.sock.close()
                raise JobError(
                    f"rank {arrival.rank} connected twice: does the launcher start "
                    f"{self.size} ranks, each with its own rank number?"
                )
            setattr(slot, arrival.kind, arrival)
        return ranks

    def _launcher_failure(self, what: str) -> str:
        name = "the launcher" if self.launcher else "mpirun"
        said = "".join(self._launcher_lines[-_KEPT_LINES:])
        return f"{name} {what}" + (f"; it said:\n{said.rstrip()}" if said else "")

    def _spawn(self, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _forward_launcher(self, process: subprocess.Popen[bytes]) -> None:
        lines = _Lines("mpirun| ")
        assert process.stdout is not None
        fd = process.stdout.fileno()
        for raw in iter(lambda: os.read(fd, 65536), b""):
            text = lines.feed(raw.decode("utf-8", "replace"))
            if text:
                self._launcher_lines.append(text)
                self.write(text)
        tail = lines.flush()
        if tail:
            self._launcher_lines.append(tail)
            self.write(tail)

    def _read_keeper(self, rank: int, keeper: Arrival, process: RankProcess) -> None:
        """The keeper's reports: the program's output, then its exit status."""
        lines = _Lines(f"rank {rank}| ")
        buffer = keeper.leftover
        sock = keeper.sock
        while True:
            while b"\n" in buffer:
                line, _, buffer = buffer.partition(b"\n")
                try:
                    report = json.loads(line)
                except ValueError:
                    continue
                if "out" in report:
                    process.last_output = time.monotonic()
                    text = lines.feed(str(report["out"]))
                    if text:
                        self.write(text)
                elif "exit" in report:
                    tail = lines.flush()
                    if tail:
                        self.write(tail)
                    process.set_exit(int(report["exit"]))
            try:
                data = sock.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            buffer += data
        sock.close()
        if process.returncode is None:
            # The keeper died without a word: its agent follows it (PR_SET_PDEATHSIG).
            deadline = time.monotonic() + 2.0
            while pid_alive(process.pid) and time.monotonic() < deadline:
                time.sleep(0.01)
            process.set_exit(-signal.SIGKILL)

    def close(self) -> None:
        """End every rank, the launcher and the socket; nothing is left running."""
        for debuggee in self.debuggees.values():
            debuggee.kill_now()
        for debuggee in self.debuggees.values():
            debuggee.terminate()
        for pid in self.keeper_pids.values():
            if pid_alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if self.process is not None:
            try:
                self.process.wait(timeout=LAUNCHER_PATIENCE)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.process.wait()
            try:  # whatever it left in its session's group
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.listener is not None:
            self.listener.close()
        for thread in self._threads:
            thread.join(timeout=1.0)
