"""A GDB/MI3 session over pipes: gdb, cuda-gdb or rocgdb as a child process.

Commands are sent as ``<token>-command args`` and :meth:`MiSession.command` returns as
soon as the result record carrying that token arrives (a reader thread parses every line
with pygdbmi's parser and wakes the waiting caller; no polling). Async records
(``*stopped``, ``*running``, ``=thread-created``, ...) go to registered listeners (and to
:meth:`MiSession.next_async` for a session made with ``keep_async=True``: nothing is
kept that no one reads, so a long session stays flat); stream records (console ``~``,
target ``@``, log ``&``) produced while a command is in flight are collected into its
:class:`MiResult`.

One command is in flight at a time (callers from several threads are serialised); async
records keep flowing meanwhile. The debugger never outlives its owner: :meth:`close` ends
it, a finaliser (which also runs at interpreter exit) ends it if the owner forgets, and
gdb itself exits -- detaching from what it attached to -- when its stdin pipe closes
(owner killed, even by SIGKILL).
"""

from __future__ import annotations

import collections
import itertools
import os
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from pygdbmi.gdbmiparser import parse_response

from ..procstate import main_thread_exited
from .base import TargetError
from .spawn import spawn_debugger

DEFAULT_GDB_ARGS: tuple[str, ...] = ("--interpreter=mi3", "--nx", "-q")

AsyncListener = Callable[[dict], None]


def mi_quote(text: str) -> str:
    """Quote ``text`` as an MI c-string (``"..."`` with backslash escapes)."""
    escaped = (
        text.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return f'"{escaped}"'


@dataclass
class MiResult:
    """The answer to one MI command.

    ``message`` is ``"done"``, ``"running"``, ``"connected"`` or ``"exit"`` (``^error``
    raises instead); ``payload`` the parsed result fields; ``console``/``log``/``target``
    the stream output the debugger printed while the command ran.
    """

    message: str
    payload: dict[str, Any]
    console: str = ""
    log: str = ""
    target: str = ""
    elapsed: float = 0.0


@dataclass
class _Pending:
    token: int
    command: str
    done: threading.Event = field(default_factory=threading.Event)
    record: dict | None = None
    console: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    target: list[str] = field(default_factory=list)


_STREAM_TYPES = {"console": "console", "log": "log", "target": "target"}
# Async record classes, by the first character of the line.
_ASYNC_KINDS = {"*": "exec", "+": "status", "=": "notify"}


def _clean(line: str) -> str:
    """Strip the newline and stray control bytes (cuda-gdb prefixes some records with \\x01)."""
    line = line.rstrip("\r\n")
    start = 0
    while start < len(line) and (line[start] < " " and line[start] != "\t"):
        start += 1
    return line[start:] if start else line


class MiSession:
    """One debugger process spoken to over GDB/MI.

    ``argv`` is the debugger command (default ``gdb --interpreter=mi3 --nx -q``); pass
    e.g. ``("cuda-gdb", "--interpreter=mi3", "--nx", "-q")`` for cuda-gdb.

    With ``process`` and ``channel``, the session speaks MI over ``channel`` (the master
    end of a pseudo-terminal) to a debugger already running as ``process``: a second
    user interface that gdb opened on that terminal (``new-ui mi3 TTY``, see
    :mod:`pkdb.targets.cli_attach`). The session owns both: closing it ends the debugger.

    ``keep_async``: queue async records for :meth:`next_async` (listeners see them
    either way).
    """

    def __init__(
        self,
        argv: Sequence[str] | None = None,
        *,
        env: dict[str, str] | None = None,
        startup_timeout: float = 30.0,
        process: subprocess.Popen | None = None,
        channel: int | None = None,
        keep_async: bool = False,
    ) -> None:
        self.argv = list(argv) if argv else ["gdb", *DEFAULT_GDB_ARGS]
        self._tokens = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._pending_lock = threading.Lock()
        self._command_lock = threading.Lock()
        self._current: _Pending | None = None
        # Async records for next_async, newest last (only when asked for: parsed records
        # are ~2 KB a stop); bounded so a session that stops draining cannot grow.
        self._keep_async = keep_async
        self._async: collections.deque[dict] = collections.deque(maxlen=10000)
        self._async_ready = threading.Condition()
        self._listeners: list[AsyncListener] = []
        self._unclaimed_streams: collections.deque[tuple[str, str]] = collections.deque(maxlen=64)
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=200)
        #: gdb's own failures ("...: internal-error: ..."), first line each, oldest first.
        self.internal_errors: list[str] = []
        self._dead = threading.Event()
        self._closing = False
        self._trace = _open_trace()
        if process is not None and channel is not None:
            self._proc = process
            # MI over the terminal: written and read through two file objects of its fd.
            self._writer: IO[bytes] = os.fdopen(channel, "wb", buffering=0)
            self._output: IO[bytes] = os.fdopen(os.dup(channel), "rb", buffering=0)
        else:
            try:
                self._proc = spawn_debugger(
                    self.argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=env,
                    # Own session: a Ctrl-C at the terminal must not reach the debugger.
                    start_new_session=True,
                )
            except OSError as exc:
                raise TargetError(f"cannot start {self.argv[0]}: {exc}") from exc
            assert self._proc.stdin is not None and self._proc.stdout is not None
            self._writer, self._output = self._proc.stdin, self._proc.stdout
        self.pid = self._proc.pid
        # Runs when the session is collected or, at the latest, at interpreter exit.
        self._finalizer = weakref.finalize(
            self, _kill_process, self._proc, (self._writer, self._output)
        )
        self._reader = threading.Thread(
            target=self._read_stdout, name=f"mi-reader-{self.pid}", daemon=True
        )
        self._reader.start()
        self._stderr_reader = threading.Thread(
            target=self._read_stderr, name=f"mi-stderr-{self.pid}", daemon=True
        )
        self._stderr_reader.start()
        # A first command proves the interpreter is up (gdb may take a moment to start).
        self.command("-gdb-version", timeout=startup_timeout)

    # -- public API ------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        """True while the debugger process runs and its output pipe is open."""
        if self._dead.is_set() or self._proc.poll() is not None:
            return False
        # Killed, it releases the processes it traced before its own exit completes
        # (its pipes may close later still): one that is a zombie already is gone.
        return not main_thread_exited(self.pid)

    @property
    def exit_status(self) -> int | None:
        """The debugger's exit status once it ended (negative: killed by that signal);
        None while it runs."""
        if self.alive:
            return None
        try:  # its output closed as it died: the exit itself follows at once
            return self._proc.wait(1.0)
        except subprocess.TimeoutExpired:
            return None

    def add_listener(self, listener: AsyncListener) -> None:
        """Call ``listener(record)`` (on the reader thread) for every async record.

        ``record`` is pygdbmi's dict plus ``"kind"``: ``"exec"`` (``*``), ``"status"``
        (``+``) or ``"notify"`` (``=``). Listeners must be quick and must not send
        commands (the reader thread would wait for itself).
        """
        self._listeners.append(listener)

    def command(self, mi_command: str, timeout: float | None = 10.0) -> MiResult:
        """Send one MI command and return its result record.

        Raises :class:`TargetError` on ``^error`` (with gdb's message), when no result
        arrives within ``timeout`` seconds, or when the debugger dies.
        """
        mi_command = mi_command.strip()
        if not mi_command.startswith("-"):
            raise ValueError(f"not an MI command (must start with '-'): {mi_command!r}")
        if "\n" in mi_command:
            raise ValueError("an MI command is a single line")
        start = time.monotonic()
        if not self._command_lock.acquire(timeout=-1 if timeout is None else timeout):
            raise TargetError(f"timed out waiting to send {mi_command!r}", mi_command)
        try:
            if not self.alive:
                raise TargetError(self._death_message(), mi_command)
            token = next(self._tokens)
            pending = _Pending(token, mi_command)
            with self._pending_lock:
                self._pending[token] = pending
                self._current = pending
            try:
                self._write(f"{token}{mi_command}\n")
                remaining = (
                    None if timeout is None else max(0.0, timeout - (time.monotonic() - start))
                )
                if not pending.done.wait(remaining):
                    raise TargetError(f"no answer to {mi_command!r} within {timeout} s", mi_command)
            finally:
                with self._pending_lock:
                    self._pending.pop(token, None)
                    if self._current is pending:
                        self._current = None
        finally:
            self._command_lock.release()
        record = pending.record
        if record is None:
            raise TargetError(self._death_message(), mi_command)
        payload = record.get("payload") or {}
        if record["message"] == "error":
            raise TargetError(payload.get("msg", "unknown error"), mi_command)
        return MiResult(
            message=record["message"],
            payload=payload,
            console="".join(pending.console),
            log="".join(pending.log),
            target="".join(pending.target),
            elapsed=time.monotonic() - start,
        )

    def console(
        self, cli_command: str, timeout: float | None = 10.0, thread: int | None = None
    ) -> str:
        """Run a CLI command through ``-interpreter-exec console`` and return its output."""
        thread_opt = f"--thread {int(thread)} " if thread is not None else ""
        result = self.command(
            f"-interpreter-exec {thread_opt}console {mi_quote(cli_command)}", timeout
        )
        return result.console

    def next_async(self, timeout: float | None = None) -> dict | None:
        """The next async record (see :meth:`add_listener`), or ``None`` after ``timeout``.

        Only for a session made with ``keep_async=True`` (else it waits ``timeout`` and
        returns None); the latest 10000 records are kept; listeners see them all.
        """
        with self._async_ready:
            if not self._async_ready.wait_for(lambda: self._async, timeout):
                return None
            return self._async.popleft()

    def unclaimed_streams(self) -> list[tuple[str, str]]:
        """Stream output that arrived while no command was in flight: (type, text) pairs,
        the latest 64."""
        items = list(self._unclaimed_streams)
        self._unclaimed_streams.clear()
        return items

    @property
    def stderr_tail(self) -> str:
        """The last lines the debugger wrote to its stderr."""
        return "".join(self._stderr_tail)

    def close(self, timeout: float = 3.0) -> None:
        """End the debugger: ``-gdb-exit``, then SIGTERM, then SIGKILL. Idempotent.

        Detaching from the debuggee first is the caller's job (gdb detaches attached
        processes on exit anyway, but only when it exits cleanly).
        """
        if self._closing:
            self._wait_gone(timeout)
            return
        self._closing = True
        if self.alive:
            try:
                self.command("-gdb-exit", timeout=timeout)
            except TargetError:
                pass
        for stream in (self._writer, self._proc.stdin):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass
        self._wait_gone(timeout)
        self._finalizer()

    def __enter__(self) -> MiSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------

    def _wait_gone(self, timeout: float) -> None:
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            _kill_process(self._proc)
        self._reader.join(timeout)
        self._stderr_reader.join(timeout)

    def _write(self, text: str) -> None:
        if self._trace is not None:
            self._trace.record(self.pid, ">", text)
        try:
            self._writer.write(text.encode())
            self._writer.flush()
        except (OSError, ValueError) as exc:
            raise TargetError(f"cannot write to {self.argv[0]}: {exc}") from exc

    def _death_message(self) -> str:
        code = self._proc.poll()
        msg = f"{self.argv[0]} is not running" + (f" (exit status {code})" if code else "")
        tail = self.stderr_tail.strip()
        return f"{msg}: {tail[-500:]}" if tail else msg

    def _read_stderr(self) -> None:
        stream = self._proc.stderr
        if stream is None:
            return
        try:
            for raw in iter(stream.readline, b""):
                self._stderr_tail.append(raw.decode(errors="replace"))
        except (OSError, ValueError):
            pass  # closed under us

    def _read_stdout(self) -> None:
        stream = self._output
        try:
            for raw in _lines(stream):
                line = _clean(raw.decode(errors="replace"))
                if not line:
                    continue
                if self._trace is not None:
                    self._trace.record(self.pid, "<", line)
                try:
                    record = parse_response(line)
                except Exception:  # noqa: BLE001 - a malformed line must not kill the reader
                    record = {"type": "output", "message": None, "payload": line}
                self._route(line, record)
        finally:
            self._dead.set()
            with self._pending_lock:
                pending = list(self._pending.values())
            for p in pending:
                p.done.set()  # record stays None: the waiter reports the death

    def _route(self, line: str, record: dict) -> None:
        kind = record.get("type")
        if kind == "result":
            token = record.get("token")
            with self._pending_lock:
                pending = self._pending.get(token) if token is not None else self._current
            if pending is not None:
                pending.record = record
                pending.done.set()
            return
        if kind == "notify":
            record["kind"] = _ASYNC_KINDS.get(line[0], "notify")
            if self._keep_async:
                with self._async_ready:
                    self._async.append(record)
                    self._async_ready.notify_all()
            for listener in list(self._listeners):
                try:
                    listener(record)
                except Exception:  # noqa: BLE001 - a listener bug must not kill the reader
                    pass
            return
        if kind in _STREAM_TYPES:
            with self._pending_lock:
                pending = self._current
            text = record.get("payload") or ""
            if kind == "log" and "internal-error:" in text:
                self.internal_errors.append(text.strip().split("\n", 1)[0])
            if pending is not None:
                getattr(pending, _STREAM_TYPES[kind]).append(text)
            else:
                self._unclaimed_streams.append((kind, text))
            return
        if kind == "output":
            self._unclaimed_streams.append(("output", record.get("payload") or ""))
        # "done" is the "(gdb)" prompt: nothing to do.


class _MiTrace:
    """The MI traffic of every debugger of this process, timed, appended to the file
    ``PKDB_MI_LOG`` names (for reports of a debugger that misbehaves or is slow): one
    line per command sent (``>``) and record read (``<``), with seconds since the first."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._file = open(path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - process-long
        self._start = time.monotonic()
        self._lock = threading.Lock()

    def record(self, pid: int, direction: str, text: str) -> None:
        line = text.rstrip("\n")
        if len(line) > 400:
            line = line[:400] + f"... ({len(line)} chars)"
        with self._lock:
            self._file.write(f"{time.monotonic() - self._start:10.4f} {pid} {direction} {line}\n")


_trace: _MiTrace | None = None


def _open_trace() -> _MiTrace | None:
    """The process's MI trace when ``PKDB_MI_LOG`` names a file, else None."""
    global _trace
    path = os.environ.get("PKDB_MI_LOG")
    if not path:
        return None
    if _trace is None or _trace.path != path:
        try:
            _trace = _MiTrace(path)
        except OSError:
            return None  # a log that cannot be written must not stop the session
    return _trace


def _lines(stream: IO[bytes]) -> Iterator[bytes]:
    """The lines of ``stream`` until its end; a terminal's end (EIO once the other side
    closed) is one too."""
    while True:
        try:
            raw = stream.readline()
        except OSError:
            return
        if not raw:
            return
        yield raw


def _kill_process(
    proc: subprocess.Popen, streams: tuple[IO[bytes], ...] = (), grace: float = 2.0
) -> None:
    """Make sure ``proc`` is gone: end of input first (gdb then quits cleanly, detaching
    from attached processes), then SIGTERM (also a clean quit), then SIGKILL."""
    if proc.poll() is None:
        try:
            for stream in (*streams, proc.stdin):
                if stream:
                    stream.close()
            proc.wait(grace)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
    for sig, wait in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 2.0)):
        if proc.poll() is not None:
            break
        try:
            os.kill(proc.pid, sig)
            proc.wait(wait)
        except (OSError, subprocess.TimeoutExpired):
            pass
    for pipe in (*streams, proc.stdin, proc.stdout, proc.stderr):
        try:
            if pipe:
                pipe.close()
        except (OSError, ValueError):
            pass
