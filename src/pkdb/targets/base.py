"""The platform-neutral interface to a target debugger (gdb, cuda-gdb, rocgdb).

pkdb drives native kernels through one :class:`Controller` per platform: gdb for the
OpenMP and Serial back ends (:class:`pkdb.targets.gdb.GdbController`), cuda-gdb for CUDA
and later rocgdb for HIP. Each attaches to the running debuggee process (lazily, when the
first kernel that must be debugged is dispatched) and then stays attached for the rest of
the session.

Thread ids are the debugger's own thread numbers (gdb's ``1``, ``2``, ...), not OS thread
ids; :class:`ThreadInfo` carries both. Source positions are whatever the debug
information says; pkernels emits ``#line`` directives, so for kernel code they are Python
files and lines.

All methods raise :class:`TargetError` when the debugger refuses a command or dies.

Why one protocol: pkdb's commands and front end (``pkdb.commands``, ``kernel_session``,
``frontend``) speak only these methods -- never MI, gdb's command-line text, or
``/proc`` -- so a target is one class to write (rocgdb for HIP), the choice of target is
one function (:func:`pkdb.targets.factory.controller_for`), and command logic can be
unit-tested against an in-memory controller (``tests/pkdb/fake_controller.py``). The
operations are the small ones the commands need (a temporary breakpoint for one thread,
whether a thread sleeps in the OS, the Python line of an address...), each implemented
by the target in its debugger's terms. The user's ``send RAW`` stays raw by design
(:meth:`Controller.send_raw`).
"""

from __future__ import annotations

import abc
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from .errors import TargetError as TargetError  # part of this interface; lives apart


@dataclass(frozen=True)
class FrameInfo:
    """One frame of a stack (level 0 is the innermost)."""

    level: int
    function: str | None
    file: str | None
    fullname: str | None
    line: int | None
    address: int | None

    @property
    def location(self) -> str:
        """``file:line`` (or ``function`` / ``0xaddr`` when there is no line info)."""
        if self.file and self.line is not None:
            return f"{self.file}:{self.line}"
        if self.function:
            return self.function
        return hex(self.address) if self.address is not None else "??"


@dataclass(frozen=True)
class StopEvent:
    """Why (and where) a thread or the process stopped.

    ``reason`` is ``"breakpoint-hit"``, ``"end-stepping-range"``, ``"signal-received"``,
    ``"function-finished"``, ``"exited"`` (the process is gone; see ``exit_code``),
    ``"exited-signalled"``, or the debugger's raw reason for anything else
    (``"location-reached"``, ``"watchpoint-trigger"``, ``""`` when it gave none).
    ``raw`` is the debugger's full record, for what this class does not model.
    """

    reason: str
    thread_id: int | None = None
    breakpoint: int | None = None
    frame: FrameInfo | None = None
    signal_name: str | None = None
    signal_meaning: str | None = None
    exit_code: int | None = None
    return_value: str | None = None
    stopped_threads: tuple[int, ...] | None = None  # None: "all"
    raw: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def exited(self) -> bool:
        """True when the process itself is gone (exit or fatal signal)."""
        return self.reason in ("exited", "exited-signalled")

    @property
    def interrupted(self) -> bool:
        """True for a stop asked for by :meth:`Controller.interrupt` (gdb reports those as
        ``signal-received`` with signal ``0`` in non-stop mode)."""
        return self.reason == "signal-received" and self.signal_name in ("0", "SIGINT", None)


@dataclass(frozen=True)
class ThreadInfo:
    """One thread of the debuggee as the debugger sees it."""

    id: int
    target_id: str
    os_tid: int | None
    name: str | None
    state: str  # "running" | "stopped"
    frame: FrameInfo | None
    current: bool = False

    @property
    def stopped(self) -> bool:
        return self.state == "stopped"


@dataclass(frozen=True)
class Breakpoint:
    """A breakpoint as the debugger reports it.

    ``file``/``line`` are those of the first resolved location (``None`` while the
    breakpoint is pending, e.g. its library is not loaded yet); ``locations`` counts the
    resolved code locations (a Python line can map to several, e.g. an OpenMP outlined
    function and its caller).
    """

    number: int
    location: str
    file: str | None = None
    line: int | None = None
    function: str | None = None
    condition: str | None = None
    enabled: bool = True
    hit_count: int = 0
    ignore: int = 0  # hits still to pass before it stops
    temporary: bool = False
    pending: bool = False
    locations: int = 1
    #: (location id such as "3.2", address) of each resolved location.
    addresses: tuple[tuple[str, int], ...] = ()


class Controller(abc.ABC):
    """Drives one target debugger attached to the debuggee process.

    The CPU implementation runs gdb in non-stop mode: a breakpoint stops only the thread
    that hit it, the other threads (in particular the Python main thread, where pkdb's
    agent lives) keep running. Execution commands that take a ``thread_id`` move only that
    thread. Implementations for platforms that stop the whole process (cuda-gdb) keep the
    same interface; the caller can tell from :attr:`stops_whole_process`.
    """

    #: True when a stop freezes every thread of the process (cuda-gdb), False when only
    #: the stopping thread is held (gdb non-stop).
    stops_whole_process: bool = False

    # -- life cycle ------------------------------------------------------------------

    @property
    @abc.abstractmethod
    def attached_pid(self) -> int | None:
        """The pid of the attached process, or ``None``."""

    @abc.abstractmethod
    def attach(self, pid: int, timeout: float = 60.0) -> None:
        """Attach to process ``pid`` and leave all its threads running."""

    @abc.abstractmethod
    def detach(self) -> None:
        """Remove all breakpoints, resume every thread and detach; the process lives on."""

    @abc.abstractmethod
    def close(self) -> None:
        """Detach if attached, then end the debugger process. Idempotent; kills nothing else."""

    @property
    @abc.abstractmethod
    def alive(self) -> bool:
        """True while the debugger process runs."""

    @property
    @abc.abstractmethod
    def exit_status(self) -> int | None:
        """The debugger's exit status once it ended (negative: killed by that signal);
        None while it runs."""

    @property
    @abc.abstractmethod
    def internal_errors(self) -> list[str]:
        """The debugger's internal errors so far (first line each), for the user."""

    def __enter__(self) -> Controller:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- breakpoints -----------------------------------------------------------------

    @abc.abstractmethod
    def insert_breakpoint(
        self, file: str, line: int, condition: str | None = None, temporary: bool = False
    ) -> Breakpoint:
        """Break at ``file:line`` (``file`` may be a base name or an absolute path).

        The breakpoint stays pending when no loaded code has that line yet.
        """

    @abc.abstractmethod
    def set_breakpoint_on_function(
        self, name: str, condition: str | None = None, temporary: bool = False
    ) -> Breakpoint:
        """Break on entry to function ``name`` (e.g. a bounds-check failure hook)."""

    @abc.abstractmethod
    def set_thread_breakpoint(self, location: str, thread_id: int, temporary: bool = False) -> int:
        """Break at ``location`` (a function name, ``file:line`` or ``*0xADDR``) in
        ``thread_id`` only; the breakpoint's number. Other threads pass there unstopped.
        Raises :class:`TargetError` when there is no such location (or the target has
        no per-thread breakpoints)."""

    @abc.abstractmethod
    def disable_location(self, location: str) -> None:
        """Disable one resolved location (an id of :attr:`Breakpoint.addresses`, such as
        ``"3.2"``) of a breakpoint, leaving its others."""

    @abc.abstractmethod
    def delete_breakpoint(self, number: int) -> None:
        """Delete breakpoint ``number``."""

    @abc.abstractmethod
    def enable_breakpoint(self, number: int) -> None:
        """Enable breakpoint ``number``."""

    @abc.abstractmethod
    def disable_breakpoint(self, number: int) -> None:
        """Disable breakpoint ``number``."""

    @abc.abstractmethod
    def set_condition(self, number: int, condition: str | None) -> None:
        """Set (or with ``None``/``""`` remove) the condition of breakpoint ``number``."""

    @abc.abstractmethod
    def set_ignore_count(self, number: int, count: int) -> None:
        """Let breakpoint ``number`` pass its next ``count`` hits."""

    @abc.abstractmethod
    def breakpoints(self) -> list[Breakpoint]:
        """All breakpoints, in number order."""

    # -- execution -------------------------------------------------------------------

    @abc.abstractmethod
    def continue_(self, thread_ids: Iterable[int] | None = None) -> None:
        """Resume every stopped thread, or only ``thread_ids``. Returns at once."""

    @abc.abstractmethod
    def interrupt(self, thread_ids: Iterable[int] | None = None) -> None:
        """Stop every thread, or only ``thread_ids``; the stops arrive as events."""

    @abc.abstractmethod
    def step(self, thread_id: int) -> None:
        """Step one source line in ``thread_id``, into calls. Returns at once."""

    @abc.abstractmethod
    def next(self, thread_id: int) -> None:
        """Step one source line in ``thread_id``, over calls. Returns at once."""

    @abc.abstractmethod
    def finish(self, thread_id: int, frame: int = 0) -> None:
        """Run ``thread_id`` until its frame ``frame`` (0: the innermost) returns.
        Returns at once."""

    @abc.abstractmethod
    def jump(self, thread_id: int, location: str) -> None:
        """Resume ``thread_id`` at ``location`` (``*0xADDR``, ``file:line``). Returns at
        once; a breakpoint there stops it again at once."""

    @abc.abstractmethod
    def set_sigint_stops(self, stops: bool) -> None:
        """Whether Ctrl-C (SIGINT) stops the program in the debugger (while a kernel is
        debugged) or passes to the program unseen (host code: Python handles it)."""

    @abc.abstractmethod
    def wait_for_stop(
        self, timeout: float | None = None, thread_id: int | None = None
    ) -> StopEvent | None:
        """The next stop event; ``None`` if none came within ``timeout`` seconds.

        With ``thread_id``, only a stop of that thread (or the process exiting) is taken;
        other threads' stops stay queued, in order, for later calls.
        """

    @abc.abstractmethod
    def wait_for_stop_among(self, thread_ids: Iterable[int], timeout: float) -> StopEvent | None:
        """The next stop of one of ``thread_ids`` (or the process exiting) within
        ``timeout`` seconds; other threads' stops stay queued, in order."""

    def poll_stop(self) -> StopEvent | None:
        """The next stop event if one is already there, else ``None`` (never blocks)."""
        return self.wait_for_stop(0)

    def drain_stops(self, settle_time: float = 0.05, limit: float = 5.0) -> list[StopEvent]:
        """Collect stop events until none arrives for ``settle_time`` seconds.

        Used after a breakpoint hit in a parallel region, where several threads stop one
        after another. Never waits longer than ``limit`` seconds in total.
        """
        events: list[StopEvent] = []
        deadline = time.monotonic() + limit
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return events
            event = self.wait_for_stop(min(settle_time, remaining))
            if event is None:
                return events
            events.append(event)

    # -- inspection ------------------------------------------------------------------

    @abc.abstractmethod
    def threads(self) -> list[ThreadInfo]:
        """Every thread of the process, in id order."""

    @abc.abstractmethod
    def stopped_threads(self) -> list[int]:
        """Ids of the threads that are stopped now (from the debugger's events)."""

    @abc.abstractmethod
    def thread_asleep(self, thread_id: int) -> bool:
        """Whether running thread ``thread_id`` sleeps in the operating system (waits in
        a futex, say: an OpenMP thread done with its indices) rather than running code.
        False when it runs or cannot be told."""

    @abc.abstractmethod
    def select_thread(self, thread_id: int) -> None:
        """Make ``thread_id`` the current thread for commands given without one."""

    @abc.abstractmethod
    def stack(self, thread_id: int, max_depth: int | None = None) -> list[FrameInfo]:
        """The stack of a stopped thread, innermost frame first (at most ``max_depth``)."""

    @abc.abstractmethod
    def locals(self, thread_id: int, frame: int = 0) -> dict[str, str]:
        """Local variables of a frame: name -> value as the debugger prints it."""

    @abc.abstractmethod
    def args(self, thread_id: int, frame: int = 0) -> dict[str, str]:
        """Arguments of a frame: name -> value as the debugger prints it."""

    @abc.abstractmethod
    def variable_types(self, thread_id: int, frame: int = 0) -> dict[str, str]:
        """Arguments and locals of a frame: name -> type as the debugger names it."""

    @abc.abstractmethod
    def evaluate(self, expression: str, thread_id: int | None = None, frame: int = 0) -> str:
        """Evaluate a (C/C++ for gdb) expression in a frame; the value as printed."""

    @abc.abstractmethod
    def type_of(self, expression: str, thread_id: int | None = None) -> str:
        """The type the debugger gives ``expression`` (``double``) in the innermost frame
        of ``thread_id``; raises :class:`TargetError` when it has none."""

    @abc.abstractmethod
    def read_memory(self, address: int, nbytes: int, thread_id: int | None = None) -> bytes:
        """Read ``nbytes`` of debuggee memory at ``address``."""

    # -- code and symbols ------------------------------------------------------------

    @abc.abstractmethod
    def load_symbols(self, library: str) -> None:
        """Read the symbols of the loaded shared libraries whose path contains
        ``library`` (a plain text, e.g. ``/libgomp.so``; targets that read every
        library's symbols at attach may do nothing)."""

    @abc.abstractmethod
    def library_ranges(self, library: str) -> list[tuple[int, int]]:
        """The address ranges ``[from, to)`` of the code of the loaded shared libraries
        whose path contains ``library``."""

    @abc.abstractmethod
    def line_of_address(self, address: int, thread_id: int | None = None) -> tuple[str, int] | None:
        """The source file and line the line table gives ``address``, if any."""

    @abc.abstractmethod
    def function_at(self, address: int) -> str | None:
        """The name of the function whose code holds ``address`` (as the symbol table
        names it, e.g. ``pk_kernel::yAx(...)``), or None."""

    # -- the user's raw passthrough ----------------------------------------------------

    @abc.abstractmethod
    def send_raw(self, command: str, thread_id: int | None = None) -> str:
        """Run a raw debugger command (CLI, or MI when it starts with ``-``).

        Returns what it printed (for MI commands, also the result record).
        """
