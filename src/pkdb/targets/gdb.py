"""The gdb target: OpenMP and Serial kernels, debugged in non-stop mode over GDB/MI3.

Why non-stop: the debuggee is the user's Python process. When a kernel thread stops at a
breakpoint, the other threads -- in particular the agent thread that evaluates Python
expressions on the live arrays -- must keep running; only the threads that stop are held.
In non-stop mode every execution command applies to one thread (``--thread N``) or to all
(``--all``), and each stop is reported for the thread that stopped.

Attaching: gdb stops every thread on attach (even in non-stop mode); :meth:`attach` waits
for those stops, swallows them and resumes all threads, so the caller sees a running
process with its breakpoints armed.
"""

from __future__ import annotations

import re
import shutil
import threading
import time
from collections.abc import Iterable, Sequence

from ..procstate import state as os_thread_state
from .base import Breakpoint, Controller, FrameInfo, StopEvent, TargetError, ThreadInfo
from .cli_attach import attach_through_cli, cli_command
from .gdb_settings import (
    BASE_SETTINGS,
    CLI_OPTIONAL_SETTINGS,
    OPTIONAL_SETTINGS,
    PTRACE_HINT,
    SIGINT_PASS,
    SIGINT_STOP,
    is_cuda_gdb,
)
from .mi import DEFAULT_GDB_ARGS, MiResult, MiSession, mi_quote
from .mi_records import (
    as_list,
    breakpoint_of,
    format_fields,
    frame_of,
    int_field,
    parse_threads,
    stop_event_of,
)

#: gdb's answer to ``info line *ADDR``: ``Line 8 of "/path/prog.py" starts at ...``.
_INFO_LINE = re.compile(r'Line (\d+) of "([^"]+)"')

# Re-exported: pkdb.targets.factory asks which debugger a path is.
__all__ = ["BASE_SETTINGS", "OPTIONAL_SETTINGS", "PTRACE_HINT", "GdbController", "is_cuda_gdb"]


class GdbController(Controller):
    """:class:`Controller` for gdb (OpenMP / Serial kernels) in non-stop mode.

    ``gdb`` is the debugger executable; ``args`` its MI options (cuda-gdb and rocgdb
    reuse this class's machinery through :class:`~pkdb.targets.mi.MiSession`);
    ``init_commands`` are extra MI commands run after the base settings;
    ``timeout`` is the default seconds to wait for any one command.
    """

    stops_whole_process = False

    #: MI settings of every session (the CPU's: non-stop); :class:`CudaGdbController`
    #: has its own.
    settings: tuple[str, ...] = BASE_SETTINGS
    #: Command-line commands run right after a ``cli_first`` attach, before MI opens.
    attach_commands: tuple[str, ...] = ()

    def __init__(
        self,
        gdb: str = "gdb",
        *,
        args: Sequence[str] = DEFAULT_GDB_ARGS,
        init_commands: Sequence[str] = (),
        timeout: float = 10.0,
        cli_first: bool | None = None,
    ) -> None:
        """``cli_first``: attach through the command line and only then speak MI (see
        :mod:`pkdb.targets.cli_attach`); by default when ``gdb`` is cuda-gdb, which
        crashes attaching over MI to a process with a CUDA context."""
        path = shutil.which(gdb)
        if path is None:
            raise TargetError(f"debugger not found: {gdb!r}")
        self.timeout = timeout
        self._path = path
        self._pid: int | None = None
        self._state_lock = threading.Condition()
        self._thread_state: dict[int, str] = {}
        self._stops: list[StopEvent] = []
        self._swallow_stops = False
        self._init_commands = tuple(init_commands)
        self._os_tids: dict[int, int] = {}  # gdb thread id -> OS thread id, from threads()
        self.cli_first = is_cuda_gdb(path) if cli_first is None else cli_first
        self._mi: MiSession | None = None  # cli_first: opened by attach()
        self._closed = False
        if self.cli_first:
            return
        self._mi = MiSession([path, *args])
        self._mi.add_listener(self._on_async)
        try:
            for cmd in self.settings:
                self._mi.command(cmd, timeout)
            for cmd in OPTIONAL_SETTINGS:
                try:
                    self._mi.command(cmd, timeout)
                except TargetError:
                    pass
            for cmd in init_commands:
                self._mi.command(cmd, timeout)
        except BaseException:
            self._mi.close()
            raise

    # -- plumbing --------------------------------------------------------------------

    @property
    def mi(self) -> MiSession:
        """The underlying MI session (for commands this class does not wrap)."""
        if self._mi is None:
            raise TargetError("the debugger is not attached to a process")
        return self._mi

    @property
    def gdb_pid(self) -> int:
        """The pid of the gdb process."""
        return self.mi.pid

    def _cmd(self, command: str, timeout: float | None = None) -> MiResult:
        return self.mi.command(command, self.timeout if timeout is None else timeout)

    def _on_async(self, record: dict) -> None:
        """Track thread states and queue stop events (runs on the MI reader thread)."""
        message = record.get("message")
        payload = record.get("payload") or {}
        with self._state_lock:
            if message == "running":
                tid = payload.get("thread-id")
                if tid == "all":
                    for t in self._thread_state:
                        self._thread_state[t] = "running"
                elif tid is not None:
                    self._thread_state[int(tid)] = "running"
            elif message == "stopped":
                event = stop_event_of(payload)
                if event.exited:
                    self._thread_state.clear()
                    self._pid = None
                else:
                    ids = event.stopped_threads
                    for t in ids if ids is not None else list(self._thread_state):
                        self._thread_state[t] = "stopped"
                if not self._swallow_stops or event.exited:
                    self._stops.append(event)
            elif message == "thread-created":
                self._thread_state[int(payload["id"])] = "running"
            elif message == "thread-exited":
                self._thread_state.pop(int(payload["id"]), None)
            elif message == "thread-group-exited":
                self._thread_state.clear()
            else:
                return
            self._state_lock.notify_all()

    def _all_stopped(self) -> bool:
        states = self._thread_state.values()
        return bool(states) and all(state == "stopped" for state in states)

    def _thread_opt(self, thread_id: int | None) -> str:
        return f"--thread {int(thread_id)} " if thread_id is not None else ""

    def _require_attached(self) -> None:
        if self._pid is None:
            raise TargetError("not attached to a process")

    # -- life cycle ------------------------------------------------------------------

    @property
    def attached_pid(self) -> int | None:
        return self._pid

    @property
    def alive(self) -> bool:
        if self._mi is None:  # cli_first, between attaches: nothing runs, nothing died
            return not self._closed
        return self._mi.alive

    @property
    def exit_status(self) -> int | None:
        """gdb's exit status once it ended (negative: killed by that signal)."""
        return None if self._mi is None else self._mi.exit_status

    def attach(self, pid: int, timeout: float = 60.0) -> None:
        """Attach to ``pid``, wait until gdb has stopped every thread, then resume them all.

        Raises :class:`TargetError` (with gdb's message, e.g. ``ptrace: Operation not
        permitted.``) when the attach is refused.
        """
        if self._pid is not None:
            raise TargetError(f"already attached to process {self._pid}")
        if self.cli_first:
            self._attach_through_cli(pid, timeout)
            return
        deadline = time.monotonic() + timeout
        with self._state_lock:
            self._swallow_stops = True
        try:
            try:
                self._cmd(f"-target-attach {int(pid)}", timeout)
            except TargetError as exc:
                if "ptrace" in exc.message and "not permitted" in exc.message:
                    raise TargetError(exc.message + PTRACE_HINT, exc.command) from exc
                raise
            # -target-attach answers ^done at once; gdb then reads the libraries' symbols
            # and stops every thread, each with its own *stopped record. Wait until our
            # event tracking and gdb's own thread list both say every thread is stopped.
            while True:
                with self._state_lock:
                    while not self._all_stopped():
                        left = deadline - time.monotonic()
                        if left <= 0:
                            break
                        self._state_lock.wait(left)
                infos = parse_threads(self._cmd("-thread-info", timeout).payload)
                if infos and all(t.stopped for t in infos):
                    break
                if time.monotonic() >= deadline:
                    raise TargetError(f"attaching to {pid}: the threads did not all stop")
                with self._state_lock:
                    self._state_lock.wait(0.01)
            self._pid = int(pid)
            self._cmd("-exec-continue --all", timeout)
        except BaseException:
            with self._state_lock:
                self._swallow_stops = False
            if self._pid is None and self.mi.alive:
                try:
                    self._cmd("-target-detach", 5.0)
                except TargetError:
                    pass
            raise
        with self._state_lock:
            self._swallow_stops = False

    def _attach_through_cli(self, pid: int, timeout: float) -> None:
        """:meth:`attach` for ``cli_first``: the command line attaches, then MI opens (see
        :mod:`pkdb.targets.cli_attach`); every thread is stopped then: resume them."""
        settings = [cli_command(c) for c in (*self.settings, *self._init_commands)]
        try:
            _, self._mi = attach_through_cli(
                [self._path, "-q", "-nx"],
                pid,
                settings + list(CLI_OPTIONAL_SETTINGS),
                timeout,
                after_attach=self.attach_commands,
            )
        except TargetError as exc:
            if "ptrace" in exc.message and "not permitted" in exc.message:
                raise TargetError(exc.message + PTRACE_HINT, exc.command) from exc
            raise
        self._mi.add_listener(self._on_async)
        threads = parse_threads(self._cmd("-thread-info", timeout).payload)
        with self._state_lock:
            self._thread_state = {t.id: t.state for t in threads}
            self._stops.clear()
        self._pid = int(pid)
        self._resume_all(timeout)

    def _resume_all(self, timeout: float | None = None) -> None:
        """Let every thread run (non-stop mode: each of them)."""
        self._cmd("-exec-continue --all", timeout)

    def detach(self) -> None:
        """Resume every thread and detach (gdb lifts its breakpoints from the process).
        A ``cli_first`` debugger then ends: the next attach starts a new one."""
        if self._pid is None:
            return
        try:
            self._cmd("-target-detach", max(self.timeout, 10.0))
        finally:
            with self._state_lock:
                self._pid = None
                self._thread_state.clear()
                self._stops.clear()
            self._os_tids.clear()
            if self.cli_first and self._mi is not None:
                mi, self._mi = self._mi, None
                mi.close()

    @property
    def internal_errors(self) -> list[str]:
        """gdb's internal errors so far (gdb aborts after one): first line each."""
        return [] if self._mi is None else list(self._mi.internal_errors)

    def close(self) -> None:
        """Detach if attached, then end gdb (never the debuggee). Idempotent."""
        self._closed = True
        try:
            if self._pid is not None and self._mi is not None and self._mi.alive:
                self.detach()
        except TargetError:
            pass
        finally:
            if self._mi is not None:
                self._mi.close()

    # -- breakpoints -----------------------------------------------------------------

    def _insert(self, spec: str, condition: str | None, temporary: bool) -> Breakpoint:
        opts = "-f "
        if temporary:
            opts += "-t "
        if condition:
            opts += f"-c {mi_quote(condition)} "
        payload = self._cmd(f"-break-insert {opts}{spec}").payload
        return breakpoint_of(payload.get("bkpt", {}))

    def insert_breakpoint(
        self, file: str, line: int, condition: str | None = None, temporary: bool = False
    ) -> Breakpoint:
        return self._insert(f"--source {mi_quote(file)} --line {int(line)}", condition, temporary)

    def set_breakpoint_on_function(
        self, name: str, condition: str | None = None, temporary: bool = False
    ) -> Breakpoint:
        return self._insert(f"--function {mi_quote(name)}", condition, temporary)

    def delete_breakpoint(self, number: int) -> None:
        self._cmd(f"-break-delete {int(number)}")

    def enable_breakpoint(self, number: int) -> None:
        self._cmd(f"-break-enable {int(number)}")

    def disable_breakpoint(self, number: int) -> None:
        self._cmd(f"-break-disable {int(number)}")

    def disable_location(self, location: str) -> None:
        """Disable one location ("3.2") of a breakpoint, leaving the others."""
        major, _, minor = location.partition(".")
        self._cmd(f"-break-disable {int(major)}" + (f".{int(minor)}" if minor else ""))

    def library_ranges(self, path: str) -> list[tuple[int, int]]:
        """The address ranges (from, to) of the loaded shared library ``path``'s code."""
        payload = self._cmd(f"-file-list-shared-libraries {mi_quote(re.escape(path))}").payload
        ranges = []
        for library in as_list(payload.get("shared-libraries")):
            for r in as_list(library.get("ranges")):
                try:
                    ranges.append((int(r["from"], 16), int(r["to"], 16)))
                except (KeyError, ValueError):
                    continue
        return ranges

    def set_condition(self, number: int, condition: str | None) -> None:
        if condition:
            self._cmd(f"-break-condition {int(number)} {condition}")
        else:
            self._cmd(f"-break-condition {int(number)}")

    def set_ignore_count(self, number: int, count: int) -> None:
        """Let breakpoint ``number`` pass its next ``count`` hits (pdb's ``ignore``)."""
        self._cmd(f"-break-after {int(number)} {int(count)}")

    def breakpoints(self) -> list[Breakpoint]:
        table = self._cmd("-break-list").payload.get("BreakpointTable", {})
        result = []
        for b in as_list(table.get("body")):
            bkpt = b.get("bkpt", b) if isinstance(b, dict) else b
            if isinstance(bkpt, list):  # pygdbmi merges repeated keys into a list
                result.extend(breakpoint_of(x) for x in bkpt)
            else:
                result.append(breakpoint_of(bkpt))
        return sorted(result, key=lambda b: b.number)

    # -- execution -------------------------------------------------------------------

    def continue_(self, thread_ids: Iterable[int] | None = None) -> None:
        self._require_attached()
        if thread_ids is None:
            self._cmd("-exec-continue --all")
            return
        for tid in thread_ids:
            try:
                self._cmd(f"-exec-continue --thread {int(tid)}")
            except TargetError as exc:
                if "is running" not in exc.message:  # already running: nothing to do
                    raise

    def set_sigint_stops(self, stops: bool) -> None:
        """Whether Ctrl-C stops the program in gdb (while a debug kernel runs) or passes
        on to the program unseen (host code: Python's handler stops it)."""
        self._cmd(SIGINT_STOP if stops else SIGINT_PASS)

    def interrupt(self, thread_ids: Iterable[int] | None = None) -> None:
        self._require_attached()
        if thread_ids is None:
            self._cmd("-exec-interrupt --all")
            return
        for tid in thread_ids:
            self._cmd(f"-exec-interrupt --thread {int(tid)}")

    def step(self, thread_id: int) -> None:
        self._require_attached()
        self._cmd(f"-exec-step --thread {int(thread_id)}")

    def next(self, thread_id: int) -> None:
        self._require_attached()
        self._cmd(f"-exec-next --thread {int(thread_id)}")

    def finish(self, thread_id: int, frame: int = 0) -> None:
        """Run ``thread_id`` until frame ``frame`` (0: the innermost) returns."""
        self._require_attached()
        self._cmd(f"-exec-finish --thread {int(thread_id)} --frame {int(frame)}")

    def jump(self, thread_id: int, location: str) -> None:
        """Resume ``thread_id`` at ``location`` (gdb's ``jump``; a breakpoint there stops
        it again at once)."""
        self._cmd(f"-exec-jump --thread {int(thread_id)} {mi_quote(location)}")

    def set_thread_breakpoint(self, location: str, thread_id: int, temporary: bool = False) -> int:
        """Break at ``location`` (a function, ``file:line``...) in ``thread_id`` only; its
        number. Other threads that pass there are resumed by gdb without a stop event."""
        opts = "-t " if temporary else ""
        payload = self._cmd(f"-break-insert {opts}-p {int(thread_id)} {location}").payload
        number = int_field(payload.get("bkpt", {}).get("number"))
        if number is None:
            raise TargetError(f"no breakpoint at {location}")
        return number

    def wait_for_stop(
        self, timeout: float | None = None, thread_id: int | None = None
    ) -> StopEvent | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._state_lock:
            while True:
                for i, event in enumerate(self._stops):
                    if thread_id is None or event.exited or event.thread_id == thread_id:
                        return self._stops.pop(i)
                if self._mi is None or not self._mi.alive:
                    raise TargetError("gdb is not running")
                if deadline is None:
                    self._state_lock.wait(1.0)
                    continue
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._state_lock.wait(left)

    def wait_for_stop_among(self, thread_ids: Iterable[int], timeout: float) -> StopEvent | None:
        """The next stop of one of ``thread_ids`` (or the process exiting) within
        ``timeout`` seconds; other threads' stops stay queued."""
        wanted = set(thread_ids)
        deadline = time.monotonic() + timeout
        with self._state_lock:
            while True:
                for i, event in enumerate(self._stops):
                    if event.exited or event.thread_id in wanted:
                        return self._stops.pop(i)
                if self._mi is None or not self._mi.alive:
                    raise TargetError("gdb is not running")
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._state_lock.wait(left)

    def poll_stop(self) -> StopEvent | None:
        return self.wait_for_stop(0)

    # -- inspection ------------------------------------------------------------------

    def threads(self) -> list[ThreadInfo]:
        threads = parse_threads(self._cmd("-thread-info").payload)
        self._os_tids.update((t.id, t.os_tid) for t in threads if t.os_tid)
        return threads

    def thread_asleep(self, thread_id: int) -> bool:
        """From the OS thread's scheduler state in ``/proc`` (Linux): asleep (``S``) or
        in an uninterruptible wait (``D``); gdb itself cannot tell a running thread's."""
        pid = self._pid
        if pid is None:
            return False
        tid = self._os_tids.get(thread_id)
        if tid is None:
            self.threads()  # learns the thread's OS id
            tid = self._os_tids.get(thread_id)
        return tid is not None and os_thread_state(pid, tid) in ("S", "D")

    def stopped_threads(self) -> list[int]:
        with self._state_lock:
            return sorted(t for t, s in self._thread_state.items() if s == "stopped")

    def select_thread(self, thread_id: int) -> None:
        self._cmd(f"-thread-select {int(thread_id)}")

    def stack(self, thread_id: int, max_depth: int | None = None) -> list[FrameInfo]:
        limits = f" 0 {int(max_depth) - 1}" if max_depth else ""
        payload = self._cmd(f"-stack-list-frames --thread {int(thread_id)}{limits}").payload
        frames = []
        for f in as_list(payload.get("stack")):
            f = f.get("frame", f)
            frame = frame_of(f)
            if frame is not None:
                frames.append(frame)
        return frames

    def locals(self, thread_id: int, frame: int = 0) -> dict[str, str]:
        payload = self._cmd(
            f"-stack-list-locals --thread {int(thread_id)} --frame {int(frame)} --all-values"
        ).payload
        result: dict[str, str] = {}
        for v in as_list(payload.get("locals")):
            # An inner block's variable comes first and shadows an outer one of that name.
            result.setdefault(v["name"], v.get("value", ""))
        return result

    def args(self, thread_id: int, frame: int = 0) -> dict[str, str]:
        payload = self._cmd(
            f"-stack-list-arguments --thread {int(thread_id)} --all-values "
            f"{int(frame)} {int(frame)}"
        ).payload
        result: dict[str, str] = {}
        for level in as_list(payload.get("stack-args")):
            level = level.get("frame", level)
            for v in as_list(level.get("args")):
                result[v["name"]] = v.get("value", "")
        return result

    def variable_types(self, thread_id: int, frame: int = 0) -> dict[str, str]:
        payload = self._cmd(
            f"-stack-list-variables --thread {int(thread_id)} --frame {int(frame)} --simple-values"
        ).payload
        result: dict[str, str] = {}
        for v in as_list(payload.get("variables")):
            result.setdefault(v["name"], v.get("type", ""))  # an inner block's comes first
        return result

    def evaluate(self, expression: str, thread_id: int | None = None, frame: int = 0) -> str:
        opts = self._thread_opt(thread_id)
        if thread_id is not None:
            opts += f"--frame {int(frame)} "
        payload = self._cmd(f"-data-evaluate-expression {opts}{mi_quote(expression)}").payload
        return payload.get("value", "")

    def type_of(self, expression: str, thread_id: int | None = None) -> str:
        text = self._console(f"whatis {expression}", thread_id)
        return text.strip().removeprefix("type = ")

    def _console(self, command: str, thread_id: int | None = None) -> str:
        """A gdb CLI command's printed text (over MI's ``-interpreter-exec``)."""
        opts = self._thread_opt(thread_id)
        result = self._cmd(f"-interpreter-exec {opts}console {mi_quote(command)}")
        return result.console + result.log

    # -- code and symbols ------------------------------------------------------------

    def load_symbols(self, library: str) -> None:
        self._console(f"sharedlibrary {re.escape(library)}")  # gdb's regex: no alternation

    def line_of_address(self, address: int, thread_id: int | None = None) -> tuple[str, int] | None:
        text = self._console(f"info line *{int(address):#x}", thread_id)
        found = _INFO_LINE.search(text)  # Line 8 of "/path/prog.py" starts at ...
        return (found.group(2), int(found.group(1))) if found else None

    def function_at(self, address: int) -> str | None:
        # "pk_kernel::yAx(...) + 12 in section .text of /path/lib.so"
        text = self._console(f"info symbol {int(address):#x}").strip()
        if not text or text.startswith("No symbol"):
            return None
        return text.split(" in section ")[0].split(" + ")[0]

    def read_memory(self, address: int, nbytes: int, thread_id: int | None = None) -> bytes:
        if nbytes <= 0:
            return b""
        opts = self._thread_opt(thread_id)
        payload = self._cmd(
            f"-data-read-memory-bytes {opts}{int(address):#x} {int(nbytes)}"
        ).payload
        data = bytearray()
        for block in sorted(
            as_list(payload.get("memory")), key=lambda b: int(b.get("offset", "0"), 0)
        ):
            if int(block.get("offset", "0"), 0) != len(data):
                break
            data += bytes.fromhex(block.get("contents", ""))
        if len(data) < nbytes:
            raise TargetError(
                f"cannot read {nbytes} bytes at {int(address):#x} (only {len(data)} readable)"
            )
        return bytes(data[:nbytes])

    def send_raw(self, command: str, thread_id: int | None = None) -> str:
        """Run a raw command: MI (``-...``) as is, anything else as a gdb CLI command.

        Returns the console and log text it printed; for MI commands, followed by the
        result record (``^done,...``). gdb's refusal raises :class:`TargetError`.
        """
        command = command.strip()
        if command.startswith("-"):
            result = self._cmd(command)
            text = result.console + result.log
            record = f"^{result.message}"
            if result.payload:
                record += "," + format_fields(result.payload)
            return text + record + "\n"
        return self._console(command, thread_id)
