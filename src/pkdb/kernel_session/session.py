"""The front end's side of one debugged kernel: gdb, breakpoints, the current stop.

gdb is started and attached lazily, at the first kernel launch that has a breakpoint,
then stays attached to that debuggee (a restart is a new process: a new attach). Each
launch re-synchronises gdb's breakpoints with pdb's kernel breakpoints (the agent sends
them), so host and kernel breakpoints keep pdb's single numbering.

This module is the session's life cycle and its stops; its parts are
:mod:`.breakpoints` (pdb's breakpoints in gdb), :mod:`.threads` (which threads are the
kernel's, and their numbers) and :mod:`.frames` (where a thread is).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..kernel_protocol import KernelLaunch
from ..targets.base import StopEvent, TargetError
from .breakpoints import SessionBreakpoints
from .frames import KernelFrames
from .stop import KernelStop, at_def_line, is_interrupt
from .threads import OPENMP_RUNTIME, KernelThreads

if TYPE_CHECKING:
    from ..targets.base import Controller

#: After the first thread stops, the others may still reach a breakpoint: the prompt
#: waits until none has arrived for this long (generous: a loaded machine may deschedule
#: a thread for tens of ms), then holds the rest where they are.
ARRIVAL_SETTLE_SECONDS = 0.15
#: How long `step` into a kernel waits for the thread to reach the body's first line.
_FIRST_LINE_SECONDS = 2.0
#: gdb reads no shared library's symbols by itself (see pkdb.targets.factory): each
#: kernel library's symbols are loaded when it launches, and those of the C and OpenMP
#: runtimes, which stepping and unwinding through threads need.
_RUNTIME_LIBRARIES = (
    "/libc.so",
    "/libm.so",
    OPENMP_RUNTIME,
    "/libgcc_s.so",
    "/libstdc",
    "/ld-linux",
)


class KernelSession(SessionBreakpoints, KernelThreads, KernelFrames):
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
            from ..targets.factory import controller_for

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
        failures = self._close_debugger()
        self.next_index_breakpoint = None
        return failures

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
