"""An in-memory :class:`~pkdb.targets.base.Controller`: the kernel threads of one
OpenMP kernel, each walking a scripted list of Python lines, to unit-test command logic
(breakpoint numbering and conditions, thread selection, ``continue threads``, ``until``,
``next``) with no terminal session, no gdb and no program.

What it models, as gdb in non-stop mode does: each thread is stopped or running on its
own; ``next``/``step`` move a thread to the next line of its route; ``continue_`` runs
it along its route to the first line with a breakpoint (for every thread, or for this
thread only; a temporary one is deleted once hit), and a thread that runs out of lines
waits at the kernel's end (in the OpenMP runtime, asleep, no Python frame, no stop
event). Breakpoint conditions are kept, not evaluated; a condition in
:attr:`FakeController.rejected_conditions` is refused as gdb refuses one it cannot
parse. The real controllers are tested against gdb in tests/pkdb/targets/.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field

from pkdb.targets.base import Breakpoint, Controller, FrameInfo, StopEvent, TargetError, ThreadInfo

#: The expression KernelSession evaluates for a thread's OpenMP number.
OMP_THREAD_NUM = "((int (*)(void))omp_get_thread_num)()"
#: Where a thread that ran out of lines waits (libgomp's barrier, no line information).
END_OF_KERNEL = FrameInfo(0, "gomp_team_barrier_wait_end", None, None, None, 0x7000)


@dataclass
class FakeThread:
    """One kernel thread: gdb's ``id``, its OpenMP number, its current line and the lines
    it will run next (``route``); ``None`` as the line: done, waiting at the kernel's end."""

    id: int
    omp_number: int
    line: int | None
    route: list[int] = field(default_factory=list)
    stopped: bool = True
    values: dict[str, str] = field(default_factory=dict)
    os_tid: int = 0


@dataclass
class FakeController(Controller):
    """Threads of kernel function ``function`` in ``file`` (a real Python file: the
    commands read its source); see the module docstring."""

    file: str
    function: str = "pk_kernel::yAx(int, double&)"
    threads_by_id: dict[int, FakeThread] = field(default_factory=dict)
    pid: int | None = 4242
    rejected_conditions: set[str] = field(default_factory=set)
    calls: list[str] = field(default_factory=list)  # what was asked, in order
    _breakpoints: dict[int, Breakpoint] = field(default_factory=dict)
    _thread_only: dict[int, int] = field(default_factory=dict)  # breakpoint -> its thread
    _events: list[StopEvent] = field(default_factory=list)
    _next_number: int = 1
    _alive: bool = True

    def add_thread(
        self, omp_number: int, line: int | None, route: Iterable[int] = (), os_tid: int = 0
    ) -> int:
        """A stopped thread at ``line`` that will run ``route``; its gdb id. Its OS
        thread id is ``os_tid`` (the program's pid: its main thread), else 1000 + id."""
        tid = len(self.threads_by_id) + 1
        thread = FakeThread(tid, omp_number, line, list(route), os_tid=os_tid or 1000 + tid)
        self.threads_by_id[tid] = thread
        return tid

    def frame(self, line: int | None) -> FrameInfo:
        if line is None:
            return END_OF_KERNEL
        return FrameInfo(0, self.function, self.file, self.file, line, 0x1000 + line)

    # -- life cycle --------------------------------------------------------------------

    @property
    def attached_pid(self) -> int | None:
        return self.pid

    def attach(self, pid: int, timeout: float = 60.0) -> None:
        self.calls.append(f"attach {pid}")
        self.pid = pid

    def detach(self) -> None:
        self.calls.append("detach")
        self.pid = None

    def close(self) -> None:
        self._alive = False

    @property
    def alive(self) -> bool:
        return self._alive

    @property
    def exit_status(self) -> int | None:
        return None if self._alive else 0

    @property
    def internal_errors(self) -> list[str]:
        return []

    # -- breakpoints -------------------------------------------------------------------

    def _add(self, location: str, file: str | None, line: int | None, condition: str | None,
             temporary: bool) -> Breakpoint:  # fmt: skip
        if condition in self.rejected_conditions:
            raise TargetError(f'No symbol "{condition.split()[0]}" in current context.')
        bp = Breakpoint(self._next_number, location, file, line, condition=condition or None,
                        temporary=temporary, addresses=((f"{self._next_number}.1", 0x1000),))  # fmt: skip
        self._breakpoints[bp.number] = bp
        self._next_number += 1
        return bp

    def insert_breakpoint(
        self, file: str, line: int, condition: str | None = None, temporary: bool = False
    ) -> Breakpoint:
        self.calls.append(f"break {file}:{line}" + (f" if {condition}" if condition else ""))
        return self._add(f"{file}:{line}", file, line, condition, temporary)

    def set_breakpoint_on_function(
        self, name: str, condition: str | None = None, temporary: bool = False
    ) -> Breakpoint:
        self.calls.append(f"break {name}")
        return self._add(name, None, None, condition, temporary)

    def set_thread_breakpoint(self, location: str, thread_id: int, temporary: bool = False) -> int:
        self.calls.append(f"break {location} thread {thread_id}")
        file, _, line = location.rpartition(":")
        if not line.isdigit():
            raise TargetError(f"Function {location!r} not defined.")
        number = self._add(location, file, int(line), None, temporary).number
        self._thread_only[number] = thread_id
        return number

    def disable_location(self, location: str) -> None:
        self.calls.append(f"disable {location}")

    def _replace(self, number: int, **changes: object) -> None:
        if number not in self._breakpoints:
            raise TargetError(f"No breakpoint number {number}.")
        self._breakpoints[number] = dataclasses.replace(self._breakpoints[number], **changes)

    def delete_breakpoint(self, number: int) -> None:
        self.calls.append(f"delete {number}")
        if self._breakpoints.pop(number, None) is None:
            raise TargetError(f"No breakpoint number {number}.")
        self._thread_only.pop(number, None)

    def enable_breakpoint(self, number: int) -> None:
        self._replace(number, enabled=True)

    def disable_breakpoint(self, number: int) -> None:
        self.calls.append(f"disable {number}")
        self._replace(number, enabled=False)

    def set_condition(self, number: int, condition: str | None) -> None:
        self._replace(number, condition=condition or None)

    def set_ignore_count(self, number: int, count: int) -> None:
        self.calls.append(f"ignore {number} {count}")
        self._replace(number, ignore=count)

    def breakpoints(self) -> list[Breakpoint]:
        return [self._breakpoints[n] for n in sorted(self._breakpoints)]

    # -- execution ---------------------------------------------------------------------

    def _thread(self, thread_id: int) -> FakeThread:
        if thread_id not in self.threads_by_id:
            raise TargetError(f"Invalid thread id: {thread_id}")
        return self.threads_by_id[thread_id]

    def _breakpoint_at(self, thread: FakeThread, line: int) -> Breakpoint | None:
        for bp in self.breakpoints():
            only = self._thread_only.get(bp.number)
            if bp.enabled and bp.line == line and only in (None, thread.id):
                return bp
        return None

    def _run(self, thread: FakeThread) -> None:
        """Run ``thread`` along its route to a breakpoint, or to the kernel's end."""
        thread.stopped = False
        while thread.route:
            thread.line = thread.route.pop(0)
            bp = self._breakpoint_at(thread, thread.line)
            if bp is not None:
                if bp.temporary:
                    self.delete_breakpoint(bp.number)
                self._stop(thread, "breakpoint-hit", bp.number)
                return
        thread.line = None  # done: asleep in the runtime, no event

    def _stop(self, thread: FakeThread, reason: str, breakpoint: int | None = None) -> None:
        thread.stopped = True
        frame = self.frame(thread.line)
        self._events.append(StopEvent(reason, thread.id, breakpoint, frame))

    def continue_(self, thread_ids: Iterable[int] | None = None) -> None:
        chosen = list(self.threads_by_id) if thread_ids is None else list(thread_ids)
        self.calls.append("continue" + ("" if thread_ids is None else f" {chosen}"))
        for tid in chosen:
            thread = self._thread(tid)
            if thread.stopped:
                self._run(thread)

    def interrupt(self, thread_ids: Iterable[int] | None = None) -> None:
        chosen = list(self.threads_by_id) if thread_ids is None else list(thread_ids)
        self.calls.append(f"interrupt {chosen}")
        for tid in chosen:
            thread = self._thread(tid)
            if not thread.stopped:
                self._stop(thread, "signal-received")

    def _step_line(self, thread_id: int, how: str) -> None:
        thread = self._thread(thread_id)
        self.calls.append(f"{how} {thread_id}")
        if not thread.route:
            thread.stopped, thread.line = False, None  # out of lines: waits at the end
            return
        thread.line = thread.route.pop(0)
        bp = self._breakpoint_at(thread, thread.line)
        self._stop(thread, "breakpoint-hit" if bp else "end-stepping-range",
                   bp.number if bp else None)  # fmt: skip

    def step(self, thread_id: int) -> None:
        self._step_line(thread_id, "step")

    def next(self, thread_id: int) -> None:
        self._step_line(thread_id, "next")

    def finish(self, thread_id: int, frame: int = 0) -> None:
        self.calls.append(f"finish {thread_id} {frame}")

    def jump(self, thread_id: int, location: str) -> None:
        self.calls.append(f"jump {thread_id} {location}")

    def set_sigint_stops(self, stops: bool) -> None:
        self.calls.append(f"sigint {'stop' if stops else 'pass'}")

    def wait_for_stop(
        self, timeout: float | None = None, thread_id: int | None = None
    ) -> StopEvent | None:
        for i, event in enumerate(self._events):
            if thread_id is None or event.thread_id == thread_id:
                return self._events.pop(i)
        return None  # nothing runs in the background: waiting longer changes nothing

    def wait_for_stop_among(self, thread_ids: Iterable[int], timeout: float) -> StopEvent | None:
        wanted = set(thread_ids)
        for i, event in enumerate(self._events):
            if event.thread_id in wanted:
                return self._events.pop(i)
        return None

    # -- inspection --------------------------------------------------------------------

    def threads(self) -> list[ThreadInfo]:
        return [
            ThreadInfo(
                t.id,
                f"Thread 0x{t.id:x} (LWP {t.os_tid})",
                t.os_tid,
                None,
                "stopped" if t.stopped else "running",
                self.frame(t.line),
            )
            for t in self.threads_by_id.values()
        ]

    def stopped_threads(self) -> list[int]:
        return [t.id for t in self.threads_by_id.values() if t.stopped]

    def thread_asleep(self, thread_id: int) -> bool:
        thread = self._thread(thread_id)
        return not thread.stopped and thread.line is None

    def select_thread(self, thread_id: int) -> None:
        self._thread(thread_id)

    def stack(self, thread_id: int, max_depth: int | None = None) -> list[FrameInfo]:
        thread = self._thread(thread_id)
        if not thread.stopped:
            raise TargetError("Selected thread is running.")
        launcher = FrameInfo(1, "pk_launch_yAx._omp_fn.0", "kernel.cpp", "kernel.cpp", 90, 0x2000)
        return [self.frame(thread.line), launcher][:max_depth]

    def locals(self, thread_id: int, frame: int = 0) -> dict[str, str]:
        return dict(self._thread(thread_id).values)

    def args(self, thread_id: int, frame: int = 0) -> dict[str, str]:
        return {}

    def variable_types(self, thread_id: int, frame: int = 0) -> dict[str, str]:
        return {name: "int" for name in self._thread(thread_id).values}

    def evaluate(self, expression: str, thread_id: int | None = None, frame: int = 0) -> str:
        thread = self._thread(thread_id if thread_id is not None else 1)
        if expression == OMP_THREAD_NUM:
            return str(thread.omp_number)
        if expression in thread.values:
            return thread.values[expression]
        raise TargetError(f'No symbol "{expression}" in current context.')

    def type_of(self, expression: str, thread_id: int | None = None) -> str:
        return "int"

    def read_memory(self, address: int, nbytes: int, thread_id: int | None = None) -> bytes:
        raise TargetError(f"Cannot access memory at address {address:#x}")

    # -- code and symbols --------------------------------------------------------------

    def load_symbols(self, library: str) -> None:
        self.calls.append(f"symbols {library}")

    def library_ranges(self, library: str) -> list[tuple[int, int]]:
        return []

    def line_of_address(self, address: int, thread_id: int | None = None) -> tuple[str, int] | None:
        return (self.file, address - 0x1000) if address > 0x1000 else None

    def function_at(self, address: int) -> str | None:
        return self.function if address > 0x1000 else None

    def send_raw(self, command: str, thread_id: int | None = None) -> str:
        self.calls.append(f"send {command}")
        return f"(gdb's answer to {command})\n"
