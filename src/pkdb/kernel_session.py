"""The front end's side of one debugged kernel: gdb, breakpoints, the current stop.

gdb is started and attached lazily, at the first kernel launch that has a breakpoint,
then stays attached to that debuggee (a restart is a new process: a new attach). Each
launch re-synchronises gdb's breakpoints with pdb's kernel breakpoints (the agent sends
them), so host and kernel breakpoints keep pdb's single numbering.
"""

from __future__ import annotations

import dataclasses
import linecache
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pkernels.build.runtime import INCLUDE_DIR

from .gdbexpr import ConditionError, python_to_c
from .kernel_protocol import KernelLaunch
from .targets.base import FrameInfo, StopEvent, TargetError, ThreadInfo
from .teams import TeamPosition

#: Where the runtime headers kernels include live: frames there are kernel code.
_RUNTIME_DIR = str(INCLUDE_DIR) + "/"

if TYPE_CHECKING:
    from .targets.base import Controller

#: After the first thread stops, the others may still reach a breakpoint: the prompt
#: waits until none has arrived for this long (generous: a loaded machine may deschedule
#: a thread for tens of ms), then holds the rest where they are.
ARRIVAL_SETTLE_SECONDS = 0.15
#: How long `step` into a kernel waits for the thread to reach the body's first line.
_FIRST_LINE_SECONDS = 2.0
#: How long to wait for the stops that interrupts cause.
STOP_SETTLE_SECONDS = 0.02
#: The OpenMP runtime, whose threads (and the main thread) run OpenMP kernels.
_OPENMP_RUNTIME = "/libgomp.so"
#: gdb reads no shared library's symbols by itself (see pkdb.targets.factory): each
#: kernel library's symbols are loaded when it launches, and those of the C and OpenMP
#: runtimes, which stepping and unwinding through threads need.
_RUNTIME_LIBRARIES = (
    "/libc.so",
    "/libm.so",
    _OPENMP_RUNTIME,
    "/libgcc_s.so",
    "/libstdc",
    "/ld-linux",
)

#: How many innermost frames tell a thread's role (see _role).
_ROLE_FRAMES = 64
#: The calling thread's OpenMP thread number, for gdb to evaluate in a stopped thread
#: (libgomp has no debug information: the call is cast to the function's type).
_OMP_THREAD_NUM = "((int (*)(void))omp_get_thread_num)()"

#: The template argument of a release build's body (``spin<false>``).
_RELEASE_VARIANT = re.compile(r"<(true|false)>$")


def is_interrupt(event: StopEvent) -> bool:
    """Whether a stop is an interrupt (Ctrl-C, or gdb stopping a running thread: non-stop
    mode reports that as signal 0 or SIGINT) rather than a breakpoint or a crash."""
    return event.reason == "interrupted" or (
        event.reason == "signal-received" and event.signal_name in ("SIGINT", "0", None)
    )


def cpp_name(py_name: str) -> str:
    """The generated code's name of a kernel variable (pkernels' translator rule)."""
    from pkernels.translate.emit_cpp import cpp_name as translate

    return translate(py_name)


def at_def_line(frame: FrameInfo | None) -> bool:
    """True when ``frame`` is at the ``def`` line of a Python function: where the
    generated code declares the function's locals, before its first line runs (gdb
    stops there on entering a kernel or helper)."""
    if frame is None or not frame.file or not frame.line or not frame.file.endswith(".py"):
        return False
    return linecache.getline(frame.file, frame.line).lstrip().startswith("def ")


@dataclass
class KernelStop:
    """Where the user is: the thread and frame selected at the current kernel stop."""

    event: StopEvent
    thread: int
    frame: int = 0
    stopped: list[int] = field(default_factory=list)  # threads that reached a breakpoint
    held: list[int] = field(default_factory=list)  # threads interrupted elsewhere
    finished: set[int] = field(default_factory=set)  # threads done with their iterations
    # Failed checks of other threads that arrived with this stop, not yet reported:
    # `continue` reports each before anything runs again.
    pending_faults: list[StopEvent] = field(default_factory=list)
    # `list` with no argument goes on from here: (file, line of the listed frame, the
    # last line listed).
    listed: tuple[str, int, int] | None = None
    # What the last `return` of a helper gave (as Python shows it), for `retval`, and
    # the stop it left the thread at (another stop since: no value).
    returned: tuple[StopEvent, str] | None = None


class KernelSession:
    """gdb and the state of the kernel being debugged, for one front end."""

    def __init__(self, make_controller: Callable[[str], Controller] | None = None) -> None:
        """``make_controller``: a new controller for an execution space (by default
        :func:`pkdb.targets.factory.controller_for`; tests pass a fake)."""
        self._make_controller = make_controller
        self.controller: Controller | None = None
        self.launch: KernelLaunch | None = None
        self.stop: KernelStop | None = None
        self.gdb_numbers: dict[int, int] = {}  # pkdb breakpoint -> gdb breakpoint
        self.fault_breakpoint: int | None = None  # gdb's, on pk_fault_hook (debug builds)
        # gdb's temporary breakpoint on the debug body, after Ctrl-C in a HYBRID launch's
        # release code: the first thread to begin an index in the debug build stops there.
        self.next_index_breakpoint: int | None = None
        # gdb's temporary breakpoint on the debug body after `step` at the dispatch line.
        self.step_in_breakpoint: int | None = None
        # `finish` took the breakpoints out of gdb for the rest of this launch.
        self.finishing = False
        self._told_slow_conditions: set[int] = set()  # see _slow_condition_notes
        self._gdb_conditions: set[int] = set()  # pdb breakpoints gdb tests a condition of
        # Ignore counts: pdb's and the one given to gdb, per breakpoint of this launch;
        # pdb's then and what gdb left of it, per breakpoint of an earlier launch.
        self._ignore_set: dict[int, tuple[int, int]] = {}
        self._ignore_left: dict[int, tuple[int, int]] = {}
        self._attached_pid: int | None = None
        self._release_ranges: list[tuple[int, int]] = []  # code of the launch's fast_library
        # What each thread of the attached process is, by OS thread id (see _role), and
        # the number the user knows each kernel thread by in this launch (see
        # thread_number), by gdb id.
        self._roles: dict[int, str] = {}
        self._openmp_code: list[tuple[int, int]] | None = None  # libgomp's, once read
        self._numbers: dict[int, int] = {}
        self._numbers_pending: set[int] = set()  # being worked out (see thread_number)

    # -- life cycle --------------------------------------------------------------------

    @property
    def active(self) -> bool:
        """A kernel is running (or held) under gdb."""
        return self.launch is not None

    def begin(self, launch: KernelLaunch) -> list[str]:
        """Attach if needed, set the launch's breakpoints, let every thread run.

        Returns problems to show the user (a condition gdb cannot evaluate, ...).
        """
        if self.controller is None or not self.controller.alive:
            from .targets.factory import controller_for

            self.controller = (self._make_controller or controller_for)(launch.space)
            self._symbols_loaded: set[str] = set()
            self._attached_pid = None
        if self._attached_pid != launch.pid:
            if self._attached_pid is not None:
                self.controller.detach()
            self.controller.attach(launch.pid)
            self._attached_pid = launch.pid
            self._roles = {}
            self._openmp_code = None
            self._symbols_loaded = set()
            for library in _RUNTIME_LIBRARIES:
                self.controller.load_symbols(library)
            # Debug builds call pk_fault_hook in the faulting thread (out-of-range index,
            # division by zero): stop there, at the Python line, before the kernel goes on.
            self.fault_breakpoint = self.controller.set_breakpoint_on_function(
                "pk_fault_hook"
            ).number
        for library in filter(None, (launch.library, launch.fast_library)):
            if library not in self._symbols_loaded:
                self.controller.load_symbols(library)
                self._symbols_loaded.add(library)
        # A HYBRID launch's release code has line tables too: a breakpoint must not stop
        # there (no variables to test a condition on or to show), only in the debug build.
        self._release_ranges = (
            self.controller.library_ranges(launch.fast_library) if launch.fast_library else []
        )
        self.launch = launch
        self.stop = None
        self._numbers = {}
        self.controller.set_sigint_stops(True)  # Ctrl-C in the kernel: a kernel stop
        problems = self.sync_breakpoints(launch.breakpoints)
        problems += self._slow_condition_notes(launch)
        self.step_in_breakpoint = None
        if launch.step_in and launch.kernel_symbol:
            # Not temporary: every thread stops as it begins its first index (none runs
            # on meanwhile, into a failed check, say); removed once they are held.
            self.step_in_breakpoint = self.controller.set_breakpoint_on_function(
                launch.kernel_symbol
            ).number
        if launch.stop_at_next_index:
            self.run_to_next_index()
        else:
            self.controller.continue_()
        return problems

    def enter_body(self, event: StopEvent) -> StopEvent:
        """A stop at the step-in breakpoint (the body's entry, its ``def`` line, where the
        debug build only declares the locals): on to the body's first line, as pdb's
        ``step`` into a function stops there. The stop to report."""
        number, self.step_in_breakpoint = self.step_in_breakpoint, None
        if number is not None:
            try:
                self.require_controller().delete_breakpoint(number)
            except TargetError:
                pass
        thread = event.thread_id
        if thread is None or not at_def_line(event.frame):
            return event
        controller = self.require_controller()
        controller.next(thread)
        first = controller.wait_for_stop(timeout=_FIRST_LINE_SECONDS, thread_id=thread)
        if first is None or first.exited or first.frame is None:
            return event
        return first

    def _slow_condition_notes(self, launch: KernelLaunch) -> list[str]:
        """Once per breakpoint: a condition pkdb could not evaluate before the launch is
        tested by gdb each time a thread reaches the line, which inside a long loop takes
        a while; the agent says why (``launch.slow_conditions``)."""
        notes = []
        for bp in launch.breakpoints:
            number = bp["number"]
            why = launch.slow_conditions.get(str(number))
            if why is None or number not in self._gdb_conditions:
                continue  # evaluated before the launch, or not given to gdb
            if number not in self._told_slow_conditions:
                self._told_slow_conditions.add(number)
                notes.append(
                    f"note: breakpoint {number}'s condition is tested by gdb each time a "
                    f"thread reaches its line (slow inside a long loop), because {why}"
                )
        return notes

    def run_to_next_index(self) -> None:
        """Let every thread run; the first to begin an index in the debug build stops."""
        controller = self.require_controller()
        assert self.launch is not None
        self.stop = None
        controller.continue_()
        # Inserted once every thread runs: gdb's continue of all threads would resume a
        # thread that hit it while the continue was still going through them.
        self.next_index_breakpoint = controller.set_breakpoint_on_function(
            self.launch.kernel_symbol, temporary=True
        ).number

    def end(self) -> None:
        """The kernel returned: forget the stop; gdb stays attached for the next one."""
        self.launch = None
        self.stop = None
        self.finishing = False
        self.forget_next_index_breakpoint()
        step_in, self.step_in_breakpoint = self.step_in_breakpoint, None
        if step_in is not None and self.controller is not None and self.controller.alive:
            try:
                self.controller.delete_breakpoint(step_in)  # no thread began the body
            except TargetError:
                pass
        if self.controller is not None and self.controller.alive:
            try:
                self.controller.set_sigint_stops(False)  # host code: Ctrl-C is Python's
            except TargetError:
                pass  # the program went away

    def release_held_threads(self) -> None:
        """The kernel returned: let every thread gdb still holds run (threads held by
        ``continue threads`` that were done, or idle OpenMP workers: held, they block the
        program's next parallel region, or its exit)."""
        controller = self.controller
        if controller is None or not controller.alive or not controller.stopped_threads():
            return
        try:
            controller.continue_()
        except TargetError:
            pass  # the program went away

    def forget_next_index_breakpoint(self) -> None:
        """Remove the Ctrl-C breakpoint of a HYBRID launch (hit, or the kernel ended)."""
        number, self.next_index_breakpoint = self.next_index_breakpoint, None
        if number is not None and self.controller is not None and self.controller.alive:
            try:
                self.controller.delete_breakpoint(number)
            except TargetError:
                pass  # hit: gdb removed it already

    @property
    def attached(self) -> bool:
        """gdb is attached to the program (it debugged a kernel of this run)."""
        return self._attached_pid is not None and self.controller is not None

    def close(self) -> list[str]:
        """The debuggee is gone or the session ends: detach and stop gdb. Returns gdb's
        internal errors during the session, for the user (gdb aborts after one)."""
        self.end()
        failures = []
        if self.controller is not None:
            self.controller.close()
            failures = self.controller.internal_errors
        self.controller = None
        self._attached_pid = None
        self.fault_breakpoint = None
        self.next_index_breakpoint = None
        self.gdb_numbers.clear()
        return failures

    # -- breakpoints -------------------------------------------------------------------

    def sync_breakpoints(self, breakpoints: list[dict]) -> list[str]:
        controller = self.require_controller()
        for gdb_number in self.gdb_numbers.values():
            try:
                controller.delete_breakpoint(gdb_number)
            except TargetError:
                pass  # a temporary one gdb already removed
        self.gdb_numbers.clear()
        problems = []
        for bp in breakpoints:
            problem = self.insert(bp)
            if problem:
                problems.append(problem)
        return problems

    def insert(self, bp: dict) -> str | None:
        """Set pdb breakpoint ``bp`` in gdb; a problem to report, or None."""
        controller = self.require_controller()
        self.remove(bp["number"])  # one gdb breakpoint per pdb one: a copy would outlive it
        problem = None
        try:
            condition = self.c_condition(bp.get("condition"))
        except ConditionError as exc:  # as pdb does: stop there, and say why
            condition = None
            problem = f"breakpoint {bp['number']}: {exc}; it stops unconditionally"
        temporary = bp.get("temporary", False)
        try:
            inserted = controller.insert_breakpoint(
                bp["file"], bp["line"], condition=condition, temporary=temporary
            )
        except TargetError as exc:
            if condition is None:
                return f"breakpoint {bp['number']}: {exc}; it is not set in this kernel"
            # As pdb does with a condition it cannot evaluate: stop there, say why.
            problem = (
                f"breakpoint {bp['number']}: the condition {bp['condition']!r} cannot be "
                f"evaluated in this kernel ({exc}); it stops unconditionally"
            )
            inserted = controller.insert_breakpoint(bp["file"], bp["line"], temporary=temporary)
        self.gdb_numbers[bp["number"]] = inserted.number
        self._gdb_conditions.discard(bp["number"])
        if inserted.condition:
            self._gdb_conditions.add(bp["number"])
        for location, address in inserted.addresses:
            if any(start <= address < stop for start, stop in self._release_ranges):
                controller.disable_location(location)
        ignore = self._ignore_count(bp)
        if ignore:
            controller.set_ignore_count(inserted.number, ignore)
        self._ignore_set[bp["number"]] = (int(bp.get("ignore", 0)), ignore)
        if not bp.get("enabled", True):
            controller.disable_breakpoint(inserted.number)
        return problem

    def c_condition(self, condition: str | None) -> str | None:
        if not condition:
            return None
        views = {
            name: info["rank"] for name, info in (self.launch.views if self.launch else {}).items()
        }
        return python_to_c(condition, views, self.team_member or None)

    def _ignore_count(self, bp: dict) -> int:
        """``bp``'s ignore count for this launch: what an earlier launch left of it (pdb
        may not have heard yet: the program runs on when a kernel ends), unless the
        user set another since."""
        asked = int(bp.get("ignore", 0))
        earlier = self._ignore_left.get(bp["number"])
        if earlier is not None and asked in earlier:
            return earlier[1]
        return asked

    def note_ignore_counts(self) -> dict[int, int]:
        """At a launch's end: what is left of each ignore count set in it (also kept for
        the next launch); the counts that moved."""
        left = self.ignore_counts()
        moved = {}
        for number, (asked, set_to) in self._ignore_set.items():
            if number in left and set_to:
                self._ignore_left[number] = (asked, left[number])
                if left[number] != asked:
                    moved[number] = left[number]
        self._ignore_set.clear()
        return moved

    def pdb_number(self, gdb_number: int | None) -> int | None:
        """The pdb breakpoint that gdb breakpoint ``gdb_number`` stands for, if any."""
        return next((n for n, g in self.gdb_numbers.items() if g == gdb_number), None)

    def ignore_counts(self) -> dict[int, int]:
        """What is left of each pdb breakpoint's ignore count in gdb, which uses it up
        as threads pass (pdb's own count does not move in a kernel)."""
        left = {b.number: b.ignore for b in self.require_controller().breakpoints()}
        return {n: left.get(g, 0) for n, g in self.gdb_numbers.items()}

    def remove(self, number: int) -> None:
        gdb_number = self.gdb_numbers.pop(number, None)
        if gdb_number is not None:
            try:
                self.require_controller().delete_breakpoint(gdb_number)
            except TargetError:
                pass

    def remove_all(self) -> None:
        for number in list(self.gdb_numbers):
            self.remove(number)

    # -- stops -------------------------------------------------------------------------

    def poll_stop(self, timeout: float) -> KernelStop | None:
        """A new stop of a kernel thread, if one arrives within ``timeout`` seconds.

        Thread-aware: after the first thread stops, the others get until no new one has
        arrived for :data:`ARRIVAL_SETTLE_SECONDS` to reach a breakpoint too; then every
        thread still running is interrupted, so the prompt always comes back with the
        whole kernel held in a known state (and a step moves one thread only).
        """
        controller = self.require_controller()
        event = controller.wait_for_stop(timeout=timeout)
        if event is None:
            return None
        if event.exited:
            self.stop = None
            return None
        arrived = [event, *controller.drain_stops(ARRIVAL_SETTLE_SECONDS, limit=2.0)]
        if any(e.exited for e in arrived):
            self.stop = None
            return None
        held = self.hold_running_threads()
        agent = self.release_agent_threads()
        self.release_other_threads()
        kernel = {t.id for t in self.kernel_threads()}
        held = [t for t in held if t in kernel]
        arrived = [e for e in arrived if e.thread_id in kernel or e is event]
        arrived = [e for e in arrived if e.thread_id not in agent]
        faults = [e for e in arrived if self.is_fault(e)]
        if faults and not self.is_fault(event):
            event = faults[0]  # a failed check is never just "also at a breakpoint"
        interrupt = is_interrupt(event)
        if interrupt and self._release_ranges:
            # A partly-debug launch: a thread in its release code has no variables to
            # show; one that runs the debug build (at an index it stopped at) has.
            debug = self._debug_code_thread(
                [event.thread_id, *held, *(e.thread_id for e in arrived)]
            )
            if debug is not None and debug != event.thread_id:
                event = StopEvent(reason="interrupted", thread_id=debug, frame=self.location(debug))
        elsewhere = event.thread_id in agent or event.thread_id not in kernel
        if elsewhere or (interrupt and not self.python_frames(event.thread_id)):
            # Ctrl-C lands on whichever thread the kernel picks, often the agent's (or
            # NumPy's BLAS threads'): report an interrupt in a kernel thread that shows
            # Python lines instead.
            candidates = held or [t.id for t in self.kernel_threads() if t.stopped]
            current = next((t for t in candidates if self.python_frames(t)), None)
            if current is None:
                # None at a Python line (spinning where the compiler left none, say): stop
                # in the kernel's code anyway; resumed, the Ctrl-C did nothing at all.
                current = next((t for t in candidates if self.in_kernel_code(t)), None)
            if current is None:
                self.require_controller().continue_()
                return None
            event = StopEvent(reason="interrupted", thread_id=current, frame=self.location(current))
        self.stop = KernelStop(event, event.thread_id or 0, 0)
        self.stop.stopped = [e.thread_id for e in arrived if e.thread_id]
        self.stop.held = [t for t in held if t != event.thread_id]
        # (Another thread's crash is not kept: `continue` delivers the signals, and the
        # program dies of them, as before.)
        self.stop.pending_faults = [
            e for e in faults if e is not event and e.breakpoint == self.fault_breakpoint
        ]
        return self.stop

    def is_fault(self, event: StopEvent) -> bool:
        """A failed check of the debug build, or a crash (not a breakpoint, a step or an
        interrupt)."""
        if self.fault_breakpoint is not None and event.breakpoint == self.fault_breakpoint:
            return True
        return event.reason == "signal-received" and not is_interrupt(event)

    def next_pending_fault(self) -> KernelStop | None:
        """The stop of a failed check that arrived with the current stop and was not
        reported yet (now the current stop), or None."""
        stop = self.stop
        if stop is None or not stop.pending_faults:
            return None
        event = stop.pending_faults.pop(0)
        following = KernelStop(event, event.thread_id or 0, 0)
        following.stopped, following.held = stop.stopped, stop.held
        following.finished, following.pending_faults = stop.finished, stop.pending_faults
        self.stop = following
        return following

    def in_kernel_code(self, thread: int) -> bool:
        """Whether ``thread`` is in the kernel's generated code (at a Python line or not;
        one done with its iterations waits in the OpenMP runtime)."""
        if self.launch is None:
            return False
        sources = {self.launch.source, self.launch.library, self.launch.fast_library} - {""}
        stack = self.require_controller().stack(thread, max_depth=1)
        if not stack:
            return False
        place = stack[0].fullname or stack[0].file or ""
        # The runtime the kernel includes (pkernels/include) is kernel code too.
        return place in sources or stack[0].file in sources or place.startswith(_RUNTIME_DIR)

    def _debug_code_thread(self, threads: list[int | None]) -> int | None:
        """The first of ``threads`` (stopped ones) whose innermost Python frame is in a
        HYBRID launch's debug build, not its release code."""
        for thread in threads:
            if not thread:
                continue
            try:
                frames = self.python_frames(thread)
            except TargetError:
                continue  # not stopped after all
            address = frames[0].address if frames else None
            if address is not None and not any(a <= address < b for a, b in self._release_ranges):
                return thread
        return None

    def release_agent_threads(self) -> set[int]:
        """Let the agent's threads run again (a signal may have stopped them): they
        answer the front end while the kernel is held. Their gdb ids."""
        hidden = set(self.launch.agent_tids if self.launch else ())
        agent = {t.id for t in self.require_controller().threads() if t.os_tid in hidden}
        stopped = [t for t in agent if t in self.require_controller().stopped_threads()]
        if stopped:
            self.require_controller().continue_(stopped)
        return agent

    def hold_running_threads(self) -> list[int]:
        """Interrupt every kernel thread still running; their ids."""
        controller = self.require_controller()
        running = [t.id for t in self.kernel_threads() if not t.stopped]
        if not running:
            return []
        try:
            controller.interrupt(running)
        except TargetError:
            pass  # a thread that just exited
        controller.drain_stops(STOP_SETTLE_SECONDS, limit=1.0)
        return running

    def require_controller(self) -> Controller:
        if self.controller is None:
            raise TargetError("gdb is not attached")
        return self.controller

    def require_stop(self) -> KernelStop:
        if self.stop is None:
            raise TargetError("no kernel thread is stopped")
        return self.stop

    def select_thread(self, thread: int) -> str:
        """Make ``thread`` the current one, at its innermost frame; the line saying so
        (``thread N``, and pkdb itself when the current thread has no lines left)."""
        stop = self.require_stop()
        stop.thread = thread
        stop.frame = 0
        frame = self.location(thread)
        where = f" at {frame.file}:{frame.line}" if frame else ""
        position = self.team_position(thread)
        team = f" ({position.label()})" if position is not None else ""
        return f"[Switching to thread {self.thread_number(thread)}{where}{team}]"

    # -- what the commands show --------------------------------------------------------

    def kernel_threads(self) -> list[ThreadInfo]:
        """The threads of the kernel: the thread that dispatched it and, on OpenMP, the
        OpenMP runtime's; not the agent's, nor any other thread of the program (NumPy's
        BLAS pool, say) once seen stopped (see :meth:`release_other_threads`)."""
        hidden = set(self.launch.agent_tids if self.launch else ())
        serial = self.launch is not None and self.launch.space == "serial"
        kept = []
        for thread in self.require_controller().threads():
            role = self._roles.get(thread.os_tid or 0)
            if thread.os_tid in hidden or role == "other" or (serial and role == "pool"):
                continue
            kept.append(thread)
        return kept

    def release_other_threads(self) -> None:
        """Let the stopped threads that run no kernel code go on (an interrupt stopped
        them with the rest): from now on they are not kernel threads."""
        controller = self.require_controller()
        serial = self.launch is not None and self.launch.space == "serial"
        others = []
        for thread in self.kernel_threads():
            if not thread.stopped or not thread.os_tid:
                continue
            role = self._role(thread)
            if role == "other" or (serial and role == "pool"):
                others.append(thread.id)
        if others:
            controller.continue_(others)

    def _role(self, thread: ThreadInfo) -> str:
        """``main``: the program's main thread, which dispatches kernels (OpenMP thread 0);
        ``pool``: a thread of the OpenMP runtime; ``other``: any other thread. Read from
        the stack of a stopped thread, once."""
        tid = thread.os_tid or 0
        role = self._roles.get(tid)
        if role is None:
            if self.launch is not None and tid == self.launch.pid:
                role = "main"
            else:
                controller = self.require_controller()
                if self._openmp_code is None:
                    self._openmp_code = controller.library_ranges(_OPENMP_RUNTIME)
                stack = controller.stack(thread.id, max_depth=_ROLE_FRAMES)
                role = "pool" if self._openmp_frames(stack) else "other"
            self._roles[tid] = role
        return role

    def _openmp_frames(self, stack: list[FrameInfo]) -> bool:
        """Whether ``stack`` has frames of a kernel (its Python lines, a launcher) or of
        the OpenMP runtime. (A deep recursion in a kernel hides the runtime's frames
        below its own: those are enough.)"""
        code = self._openmp_code or []
        return any(
            (frame.file or "").endswith(".py")
            or "pk_launch_" in (frame.function or "")
            or any(a <= (frame.address or -1) < b for a, b in code)
            for frame in stack
        )

    def thread_number(self, thread: int) -> int:
        """The number users know kernel thread ``thread`` (gdb's id) by: its OpenMP thread
        number, as ``omp_get_thread_num()`` and a failed check's message give it (0: the
        thread that dispatched the kernel; a Serial kernel's only thread)."""
        number = self._numbers.get(thread)
        if number is None:
            self._numbers_pending.add(thread)
            try:
                number = self._read_thread_number(thread)
            finally:
                self._numbers_pending.discard(thread)
            self._numbers[thread] = number
        return number

    def _read_thread_number(self, thread: int) -> int:
        controller = self.require_controller()
        info = next((t for t in controller.threads() if t.id == thread), None)
        if info is not None and self.launch is not None and info.os_tid == self.launch.pid:
            return 0
        try:
            text = controller.evaluate(_OMP_THREAD_NUM, thread, 0)
            return int(text.strip())
        except (TargetError, ValueError):
            pass  # its stack is used up (the call got a signal), or no OpenMP runtime
        # The number no other kernel thread has, when there is one.
        others = {
            self.thread_number(t.id)
            for t in self.kernel_threads()
            if t.stopped and t.id != thread and t.id not in self._numbers_pending
        }
        free = [n for n in range(len(others) + 1) if n not in others]
        return free[0] if len(free) == 1 else thread

    def thread_of_number(self, number: int) -> int | None:
        """gdb's id of the stopped kernel thread users know as ``number``, if any."""
        for thread in self.kernel_threads():
            if thread.stopped and self.thread_number(thread.id) == number:
                return thread.id
        return None

    def fault_message(self, event: StopEvent) -> str | None:
        """The debug build's fault text when ``event`` is a stop in pk_fault_hook."""
        if self.fault_breakpoint is None or event.breakpoint != self.fault_breakpoint:
            return None
        if self.launch is not None and self.launch.fault:
            text = self.launch.fault  # a checked release build's, read by the agent
        else:
            try:
                raw = self.require_controller().evaluate("message", event.thread_id, 0)
            except TargetError:
                return "a check of the debug build failed"
            start, end = raw.find('"'), raw.rfind('"')
            text = raw[start + 1 : end] if 0 <= start < end else raw
        # The runtime names the OpenMP thread number; the stop names gdb's thread already.
        return re.sub(r" \(OpenMP thread \d+\)$", "", text)

    def python_frames(self, thread: int, stack: list[FrameInfo] | None = None) -> list[FrameInfo]:
        """The kernel frames of ``thread`` that map to Python lines (innermost first);
        ``stack``: its gdb stack, when the caller already has it."""
        frames = self.require_controller().stack(thread, max_depth=64) if stack is None else stack
        kernel_frames = []
        release = self.launch is not None and self.launch.crash_signal != 0
        # Frames inlined into a kernel line share its address: the line's own frame says
        # where it is; a helper inlined there (a check's) is no frame of the user's.
        at_lines = {f.address for f in frames if f.file and f.file.endswith(".py")}
        for frame in frames:
            if "pk_launch_" in (frame.function or ""):
                break  # the generated launcher: below it is the runtime, then Python's C
            if frame.file and frame.file.endswith(".py"):
                if release and frame.function:  # the release body: a template on PK_NA
                    frame = dataclasses.replace(
                        frame, function=_RELEASE_VARIANT.sub("", frame.function)
                    )
                kernel_frames.append(frame)
            elif release and frame.address is not None and frame.address not in at_lines:
                # A release build: the body is inlined and its frame shows the launcher's
                # line, but the line table still maps the address to the Python line.
                mapped = self._python_line(thread, frame.address)
                previous = kernel_frames[-1] if kernel_frames else None
                if mapped is not None and previous and (previous.file, previous.line) == mapped:
                    continue  # the same line as the inlined body's frame above it
                if mapped is not None:
                    file, line = mapped
                    kernel_frames.append(  # named after the kernel, not the OpenMP region
                        dataclasses.replace(
                            frame, function=self.launch.kernel, file=file, fullname=file, line=line
                        )
                    )
        return kernel_frames

    def _python_line(self, thread: int, address: int) -> tuple[str, int] | None:
        """The Python file and line gdb's line table gives ``address``, if any."""
        try:
            found = self.require_controller().line_of_address(address, thread)
        except TargetError:
            return None
        return found if found is not None and found[0].endswith(".py") else None

    def location(self, thread: int, frame: int = 0) -> FrameInfo | None:
        """The ``frame``-th Python frame of ``thread``: its kernel frames, innermost
        first, then the host frames of the dispatch (level -1: no gdb frame)."""
        frames = self.python_frames(thread)
        if frame < len(frames):
            return frames[frame]
        host = self.host_frames()
        index = frame - len(frames)
        return host[index] if index < len(host) else None

    def host_frames(self) -> list[FrameInfo]:
        """The dispatch's host frames, from its call site outwards."""
        stack = reversed(self.launch.call_stack) if self.launch else []
        return [FrameInfo(-1, function, file, file, line, None) for file, line, function in stack]

    def host_frame_index(self, thread: int, frame: int) -> int | None:
        """Which host frame the ``frame``-th Python frame of ``thread`` is (0: the call
        site), or None for a kernel frame."""
        kernel_frames = len(self.python_frames(thread))
        return frame - kernel_frames if frame >= kernel_frames else None

    def frame_level(self, thread: int, frame: int) -> int:
        """gdb's level of the ``frame``-th Python frame of ``thread`` (a kernel frame)."""
        frames = self.python_frames(thread)
        return frames[frame].level if frame < len(frames) else 0

    # -- team kernels (TeamPolicy) -----------------------------------------------------

    @property
    def team_member(self) -> str:
        """The team member parameter of a TeamPolicy kernel; "" for other kernels."""
        return self.launch.team_member if self.launch else ""

    def team_position(
        self, thread: int, stack: list[FrameInfo] | None = None
    ) -> TeamPosition | None:
        """League and team rank of ``thread`` in a team kernel (None elsewhere, or for a
        thread outside the kernel's code). Read from the innermost frame that has the
        team member: the workunit's parameter, a team helper's ``tm``, or the
        launcher's ``pk_tm`` (between league ranks)."""
        if not self.team_member:
            return None
        controller = self.require_controller()
        if stack is None:
            stack = controller.stack(thread, max_depth=64)
        for frame in stack:
            expression = self._team_expression(frame)
            if expression is None:
                continue
            try:
                text = controller.evaluate(f"*&{expression}", thread, frame.level)
            except TargetError:
                continue
            position = TeamPosition.parse(text)
            if position is not None:
                return position
        return None

    def _team_expression(self, frame: FrameInfo) -> str | None:
        function = (frame.function or "").split("(")[0]
        if self.launch is not None and function == self.launch.kernel_symbol:
            return cpp_name(self.team_member)
        if function.startswith("pk_rt::team_"):
            return "tm"
        if "pk_launch_" in function:
            return "pk_tm"
        return None
