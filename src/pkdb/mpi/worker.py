"""One rank's session, in a thread of its own.

Each rank gets the ordinary per-rank front end (:class:`pkdb.frontend.Frontend`: its
host debugger conversation, its own gdb for kernels), driven line by line from a
queue: a command that resumes the rank blocks its thread until the rank stops again,
while the other ranks' threads go on. What the session prints goes to a buffer the
multi-rank console collects and aggregates.
"""

from __future__ import annotations

import io
import itertools
import queue
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..channel import ChannelClosed
from ..frontend import Frontend
from ..protocol import ENTRY_STOP
from ..session import Debuggee, describe_exit
from ..settings import Settings
from .rank_process import RankDebuggee

if TYPE_CHECKING:
    from ..kernel_protocol import KernelReply

#: pdb's stop line, ``> /path/prog.py(42)function()`` (host and kernel stops alike).
_STOP_LINE = re.compile(r"^> (?P<file>.+?)\((?P<line>\d+)\)(?P<function>[^\n]*)$", re.MULTILINE)


class RankState(Enum):
    STARTING = "starting"
    STOPPED = "stopped"  # at a prompt: takes commands
    RUNNING = "running"  # running a command (the program runs, or an evaluation does)
    ENDED = "ended"  # the program is over (exited, killed) or the rank was quit


@dataclass(frozen=True)
class Location:
    """Where a rank stopped."""

    file: str
    line: int
    kernel_space: str | None  # the kernel mode's space ("openmp"), None in Python code

    def __str__(self) -> str:
        where = f"{Path(self.file).name}:{self.line}"
        return f"{where} ({self.kernel_space} kernel)" if self.kernel_space else where


class _Buffer(io.StringIO):
    """A thread-safe text buffer (the rank's thread writes, the console takes)."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self.last_write = 0.0  # time.monotonic() of the last write

    def write(self, text: str) -> int:
        with self._lock:
            self.last_write = time.monotonic()
            return super().write(text)

    def take(self) -> str:
        with self._lock:
            text = self.getvalue()
            self.seek(0)
            self.truncate()
            return text


#: Ids of the console's own requests to a rank's agent, far above the session's own.
_PLACE_IDS = itertools.count(1 << 40)


class RankFrontend(Frontend):
    """The per-rank session: an ordinary front end whose one process is the rank (a
    rank cannot be started again on its own: `run` and `restart` need the whole job).

    While the rank runs, the console may ask its agent where the program is
    (:meth:`ask_place`); the session's thread, which reads the channel then, hands the
    answer over (:meth:`_on_reply`)."""

    def __init__(self, *args: Any, ask: Callable[[str], str | None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ask = ask
        self._places: dict[int, queue.SimpleQueue[KernelReply]] = {}
        self._places_lock = threading.Lock()
        self._session_reply = self.message_handlers["kernel-reply"]
        self.message_handlers["kernel-reply"] = self._on_reply

    def ask_place(self) -> queue.SimpleQueue[KernelReply] | None:
        """Ask the running program's agent where its main thread is; the queue its
        answer will arrive on (None: the program is gone)."""
        from ..kernel_protocol import KernelRequest

        debuggee = self.debuggee
        if debuggee is None:
            return None
        request_id = next(_PLACE_IDS)
        answer: queue.SimpleQueue[KernelReply] = queue.SimpleQueue()
        with self._places_lock:
            self._places[request_id] = answer
        try:
            debuggee.send(KernelRequest(id=request_id, action="where"))
        except (ChannelClosed, OSError):
            return None
        return answer

    def read_answer(self, prompt: str) -> str | None:
        """A question of a kernel-mode command (``Clear all breaks?``, a line of
        ``interact``): answered by the next line typed at the console."""
        return self._ask(prompt)

    def _on_reply(self, message: KernelReply) -> bool:
        with self._places_lock:
            answer = self._places.pop(message.reply_to, None)
        if answer is None:
            return self._session_reply(message)
        answer.put(message)
        return False

    def _new_debuggee(self) -> Debuggee:
        spare, self._spare_debuggee = self._spare_debuggee, None
        if spare is not None and spare.poll() is None:
            return spare
        raise OSError(
            "an MPI rank cannot be started again on its own; quit, and start the "
            "session again to run the program again"
        )


class RankWorker:
    """Rank ``rank``'s session and the thread that drives it."""

    def __init__(
        self,
        rank: int,
        debuggee: RankDebuggee,
        argv: list[str],
        settings: Settings,
        on_done: Callable[[int], None],
    ) -> None:
        self.rank = rank
        self.debuggee = debuggee
        self.output = _Buffer()
        empty: TextIO = io.StringIO("")  # no terminal: answers to questions come as commands
        self.frontend = RankFrontend(
            argv,
            settings=settings,
            stdin=empty,
            stdout=self.output,
            debuggee=debuggee,
            ask=self._ask,
        )
        self.state = RankState.STARTING
        self.location: Location | None = None
        self.exit_code: int | None = None
        self._on_done = on_done
        self._lines: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=f"pkdb-rank-{rank}", daemon=True)

    @property
    def pid(self) -> int:
        return self.debuggee.pid

    def start(self) -> None:
        self._thread.start()

    def submit(self, line: str) -> None:
        """Run ``line`` in this rank's session (it must be STOPPED)."""
        assert self.state is RankState.STOPPED, self.state
        self.state = RankState.RUNNING
        self._lines.put(line)

    def interrupt(self) -> None:
        """Ctrl-C for this rank's program (it runs)."""
        frontend = self.frontend
        if frontend.gpu_active:
            frontend.gpu_frontend.interrupt()
        elif frontend.debuggee is not None:
            frontend.debuggee.interrupt()

    @property
    def last_activity(self) -> float:
        """When the rank last showed a sign of life (time.monotonic()): output of its
        program (a compile notice, say) or of its session."""
        return max(self.output.last_write, self.debuggee.process.last_output)

    def ask_place(self) -> queue.SimpleQueue[KernelReply] | None:
        """See :meth:`RankFrontend.ask_place` (only while the rank runs)."""
        if self.state is not RankState.RUNNING:
            return None
        return self.frontend.ask_place()

    def take_output(self) -> str:
        return self.output.take()

    def retire(self) -> None:
        """The rank's process ended while it was stopped (killed from outside): let its
        session clean up (gdb), and say how it ended."""
        if self.state is not RankState.STOPPED:
            return
        self.state = RankState.RUNNING
        self._lines.put(None)

    def stop(self) -> None:
        """End the thread (the session is over)."""
        self._lines.put(None)

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            self.frontend.start_program(ENTRY_STOP)
        except Exception as exc:  # noqa: BLE001 - a pkdb bug must not end the session
            self.frontend.error(f"pkdb failed starting rank {self.rank}: {exc}")
        self._report()
        while True:
            line = self._lines.get()
            if line is None:
                if self.state is RankState.RUNNING:  # retire(): the rank died meanwhile
                    self._end_here()
                    self._report()
                    continue
                return
            try:
                self.frontend.onecmd(line)
            except Exception as exc:  # noqa: BLE001 - as Frontend.cmdloop does
                self.frontend.error(f"pkdb failed on {line.strip()!r}: {type(exc).__name__}: {exc}")
            self._report()

    def _ask(self, prompt: str) -> str | None:
        """In this rank's thread, during a command: show ``prompt`` and give the user the
        word; the next line sent to this rank is the answer (None: the session ends)."""
        self.output.write(prompt + "\n")
        self.state = RankState.STOPPED
        self._on_done(self.rank)
        return self._lines.get()

    def _end_here(self) -> None:
        code = self.debuggee.wait()
        self.frontend.close()
        self.frontend.debuggee = None
        self.exit_code = code
        self.frontend.message(describe_exit(code))

    def _report(self) -> None:
        """The command is done: note where the rank is, then tell the console."""
        frontend = self.frontend
        text = self.output.getvalue()
        stops = list(_STOP_LINE.finditer(text))
        if frontend.finished or frontend.debuggee is None:
            if self.exit_code is None:
                self.exit_code = self.debuggee.process.returncode
            self.location = None
            self.state = RankState.ENDED
        else:
            if stops:
                last = stops[-1]
                mode = frontend.mode
                # a kernel mode's prompt names its space: "(pkdb-openmp) "
                space = None if mode is frontend.host_mode else mode.prompt.strip("() ")[5:]
                self.location = Location(last["file"], int(last["line"]), space)
            self.state = RankState.STOPPED
        self._on_done(self.rank)
