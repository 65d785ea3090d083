"""The front end's component for CPU kernels (OpenMP, Serial): the ``kernel-launch`` of
a debug build, its stops, ``continue threads``, its end (see :mod:`pkdb.kernel_session`
for gdb's side of a kernel).

:class:`pkdb.frontend.Frontend` owns one, made at the first CPU launch, and hands it the
CPU kernels' messages; the commands of kernel mode are :mod:`pkdb.commands` (``kernel_*``).
The GPU's counterpart is :mod:`pkdb.gpu_frontend`.
"""

from __future__ import annotations

import signal
import time
from typing import TYPE_CHECKING, Any

from .channel import ChannelClosed
from .kernel_session import KernelSession
from .modes import KernelMode
from .partial_waits import DONE, waiting_note, waiting_place
from .targets.errors import TargetError

if TYPE_CHECKING:
    from .frontend import Frontend
    from .kernel_protocol import KernelFinished, KernelLaunch
    from .targets.base import StopEvent

#: Seconds Ctrl-C in a HYBRID launch waits for a thread to begin an index in the debug
#: build before stopping the threads where they are (in release code).
NEXT_INDEX_PATIENCE = 0.5


class CpuFrontend:
    """Routes the CPU kernels' messages and stops to the session and the user."""

    debugger = "gdb"  # see pkdb.space_frontend.SpaceFrontend

    def __init__(self, frontend: Frontend) -> None:
        self.frontend = frontend
        self.session = KernelSession()
        #: When to interrupt the kernel (see NEXT_INDEX_PATIENCE), if at all.
        self.interrupt_at: float | None = None
        self.partial: PartialContinue | None = None  # see watch_partial_continue

    @property
    def active(self) -> bool:
        return self.session.active

    @property
    def attached(self) -> bool:
        return self.session.attached

    def close(self) -> list[str]:
        """Detach and end gdb; its internal errors during the session."""
        self.interrupt_at = None
        self.partial = None
        return self.session.close()

    def end(self) -> None:
        """The kernel is over (the program runs on): forget its stop."""
        self.session.end()

    def poll(self) -> bool:
        """While the program runs: True when a kernel stop gives the user the word (a
        breakpoint, Ctrl-C, the threads of a ``continue threads`` all done)."""
        if not self.active:
            return False
        if self.check_stop():
            self.interrupt_at = None
            self.partial = None
            return True
        if self.check_partial_continue():
            return True
        if self.interrupt_at is not None and time.monotonic() > self.interrupt_at:
            self.interrupt()
        return False

    # -- messages ----------------------------------------------------------------------

    def on_launch(self, message: KernelLaunch) -> None:
        """A CPU debug build is about to run: attach gdb, set breakpoints, then let it go."""
        frontend = self.frontend
        assert frontend.debuggee is not None
        try:
            for problem in self.session.begin(message):
                (frontend.message if problem.startswith("note: ") else frontend.error)(problem)
        except TargetError as exc:
            frontend.close_debuggers()
            if frontend.debuggee.gone():
                return  # it died meanwhile (why gdb could not attach): the pump says so
            frontend.error(f"cannot debug kernel {message.kernel}: {exc}; it runs undebugged")
        from .kernel_protocol import KernelGo

        try:
            frontend.debuggee.send(KernelGo(reply_to=message.id))
        except ChannelClosed:
            pass  # it died: the pump sees the end of the stream
        if message.crash_signal == signal.SIGINT and self.session.controller is not None:
            if message.stop_at_next_index:
                # The threads stop as they begin their next index, in the debug build; one
                # deep in a long index would keep the user waiting: interrupt then.
                self.interrupt_at = time.monotonic() + NEXT_INDEX_PATIENCE
            else:
                self.interrupt()  # Ctrl-C in a release build: gdb is there now

    def interrupt(self) -> None:
        self.interrupt_at = None
        try:
            self.session.require_controller().interrupt()
        except TargetError:
            pass

    def on_finished(self, message: KernelFinished) -> None:
        """The CPU kernel returned: free the threads still held, tell pdb what is left of
        the ignore counts."""
        self.interrupt_at = None
        moved = self._used_ignore_counts()
        if message.error:
            self.frontend.message(f"Kernel {message.kernel} failed: {message.error}")
        self.session.release_held_threads()  # held by `continue threads`: free them
        self.partial = None
        self.frontend.leave_kernel(close=False)
        # Told to pdb only now: the program runs on, and its next launch (handled while
        # this request waits) must find this one ended.
        try:
            for number, left in moved.items():
                self.frontend.kernel_request("ignore", number=number, count=left)
        except TargetError:
            pass  # the program went away

    def check_stop(self) -> bool:
        """A kernel thread stopped: enter kernel mode and give the user the word."""
        try:
            stop = self.session.poll_stop(0.0) if self.session.stop is None else None
        except TargetError:
            return False
        if stop is None:
            return False
        launch = self.session.launch
        assert launch is not None
        if launch.partial_debug and self._to_next_index(stop.event):
            return False
        self.frontend.mode = KernelMode(launch.space)
        if self.session.finishing:
            self._cancel_finish()
        step_in = self.session.step_in_breakpoint
        if step_in is not None and stop.event.breakpoint == step_in:
            stop.event = self.session.enter_body(stop.event)  # `step` at the dispatch line
        hit = self._hit_breakpoint(stop.event)
        silent = hit is not None and hit.get("silent")
        text = self.kernel_stop_text(stop.event)  # (also forgets a temporary breakpoint)
        if not silent:
            self.frontend.message(text)
        if hit is not None:
            self._count_hit(hit)
        others = [t for t in stop.stopped if t != stop.thread]
        if (others or stop.held) and not silent:
            parts = []
            if others:
                # After Ctrl-C or a signal the others were stopped where they ran.
                also = (
                    "also at a breakpoint" if stop.event.breakpoint is not None else "also stopped"
                )
                numbers = sorted(self.session.thread_number(t) for t in others)
                parts.append(f"{also}: thread{'s' * (len(others) > 1)} "
                             + ", ".join(map(str, numbers)))  # fmt: skip
            if stop.held:
                parts.append(f"{len(stop.held)} other thread{'s' * (len(stop.held) > 1)} held")
            self.frontend.message(f"({'; '.join(parts)})")
        self._show_displays()
        if hit is not None and hit.get("commands"):
            # pdb's `commands N`: run before the user has the word (a resuming one last).
            self.frontend.cmdqueue[:0] = list(hit["commands"])
        return True

    def _used_ignore_counts(self) -> dict[int, int]:
        """The launch is over: what gdb left of the ignore counts it used, by pdb
        breakpoint number (the next launch goes on from them)."""
        kernel = self.session
        if kernel.launch is None or kernel.controller is None:
            return {}
        try:
            return kernel.note_ignore_counts()
        except TargetError:
            return {}  # gdb went away: nothing to carry

    def _cancel_finish(self) -> None:
        """A stop (Ctrl-C) during `finish`: the kernel is debugged again, its breakpoints
        back in gdb, and the dispatch no longer ends with a stop after it."""
        kernel = self.session
        kernel.finishing = False
        launch = kernel.launch
        assert launch is not None
        current = {b["number"]: b for b in self.frontend.state.get("breakpoints", [])}
        again = [
            current[b["number"]]
            for b in launch.breakpoints
            if b["number"] in current and current[b["number"]].get("enabled", True)
        ]
        try:
            self.frontend.kernel_request("finish_cancel")
            for problem in kernel.sync_breakpoints(again):
                self.frontend.error(problem)
        except TargetError as exc:
            self.frontend.error(f"the breakpoints could not be set again: {exc}")

    def _hit_breakpoint(self, event: StopEvent) -> dict[str, Any] | None:
        """The pdb breakpoint (as the agent reports it) whose gdb breakpoint stopped
        ``event``'s thread, if one did."""
        if event.breakpoint is None:
            return None
        number = self.session.pdb_number(event.breakpoint)
        breakpoints = self.frontend.state.get("breakpoints", [])
        return next((b for b in breakpoints if b["number"] == number), None)

    def _count_hit(self, bp: dict[str, Any]) -> None:
        """pdb's hit count (and its ignore count, which gdb used up) of a kernel stop."""
        try:
            self.frontend.kernel_request("hit", number=bp["number"])
        except TargetError:
            pass

    def report_kernel_stop(self, event: StopEvent) -> None:
        """Where a step or next stopped, then the displays whose value changed."""
        self.frontend.message(self.kernel_stop_text(event))
        self._show_displays()

    def _show_displays(self) -> None:
        if self.frontend.kernel_displays:
            from .commands.kernel_display import show_changed

            show_changed(self.frontend)  # type: ignore[arg-type]

    def _to_next_index(self, event: StopEvent) -> bool:
        """Ctrl-C in a launch that runs most indices as release code (its breakpoints'
        conditions hold only at some): the threads are most likely there, with no
        variables. Send the rest of the launch to the debug build and stop the first
        thread to begin its next index, as Ctrl-C in a fast debug build does. True when
        the threads run on towards that stop."""
        from .kernel_session import is_interrupt

        launch = self.session.launch
        if launch is None or not is_interrupt(event) or not launch.kernel_symbol:
            return False
        try:
            self.debug_rest_of_launch()
            self.session.run_to_next_index()
        except TargetError:
            return False
        self.interrupt_at = time.monotonic() + NEXT_INDEX_PATIENCE
        return True

    def debug_rest_of_launch(self) -> None:
        """A launch running only some indices in the debug build (``partial_debug``):
        have its remaining indices run there too (once)."""
        launch = self.session.launch
        if launch is not None and launch.partial_debug:
            launch.partial_debug = False
            self.frontend.kernel_request("debug_code")

    def kernel_stop_text(self, event: StopEvent) -> str:
        """pdb's ``> /path/yax.py(18)yAx()``, the thread and why it stopped (``OpenMP
        thread 1 (j=10) hit breakpoint 1``), then ``-> source`` (see pkdb.stop_lines)."""
        from .kernel_protocol import FAILED_CHECK
        from .kernel_session import cpp_name, is_interrupt
        from .stop_lines import fault_text, stop_text

        launch = self.session.launch
        assert launch is not None  # a kernel stop is a stop of a launch
        thread = event.thread_id or 0
        space = {"openmp": "OpenMP", "serial": "Serial"}.get(launch.space, launch.space)
        frame = event.frame
        if is_interrupt(event) and not self.session.python_frames(thread):
            return self._interrupt_without_line(space, event)
        if frame is None or not (frame.file or "").endswith(".py"):
            # a fault or signal inside runtime code: show the Python line that caused it
            frame = self.session.location(thread) or frame
        details = []
        try:
            if self.session.team_member:
                position = self.session.team_position(thread)
                if position is not None:
                    details.append(f"league {position.league_rank}, team_rank {position.team_rank}")
            else:
                level = self.session.frame_level(thread, 0)
                controller = self.session.require_controller()
                for name in launch.index.split(", "):
                    value = controller.evaluate(cpp_name(name), thread, level)
                    details.append(f"{name}={value}")
        except TargetError:
            pass  # stopped in a helper, where the index is not in scope; or release code
        who = f"{space} thread {self.session.thread_number(thread)}"
        if details:
            who += f" ({', '.join(details)})"
        release_note = (
            "(the kernel's release build: its variables are not available; to see them, run "
            "it again with a breakpoint in it or 'set debug_all_kernels on')"
        )
        fault = self.session.fault_message(event)
        if fault is not None:
            notes: tuple[str, ...] = ()
            if launch.crash_signal == FAILED_CHECK:
                notes = (
                    "(this launch ran the kernel's checked release build, which keeps no "
                    "variables; to see them: 'set debug_all_kernels on', 'restart', "
                    "'continue')",
                )
            elif launch.crash_signal:
                notes = (release_note,)
            return stop_text(frame, who, f"stopped by a failed check: {fault_text(fault)}", notes)
        if event.breakpoint is not None and event.breakpoint == self.session.next_index_breakpoint:
            self.session.forget_next_index_breakpoint()
            return stop_text(
                frame,
                who,
                "interrupted",
                (
                    "(stopped as the thread began its next index, in the debug build; until "
                    "Ctrl-C this launch ran release code, proven unable to fail a check)",
                ),
            )
        notes = ()
        if launch.stop_at_next_index:
            notes = (
                "(threads still in this launch's release code show no variables; each one's "
                "next index runs the debug build: 'continue' stops the first to begin one)",
            )
        elif launch.crash_signal:
            notes = (release_note,)
        if is_interrupt(event):
            return stop_text(frame, who, "interrupted", notes)
        if event.reason == "signal-received":
            return stop_text(frame, who, f"received {event.signal_name or 'a signal'}", notes)
        number = self.session.pdb_number(event.breakpoint)
        if number is None:  # a step
            return stop_text(frame, who)
        if event.breakpoint is not None:
            self._forget_temporary(number)
        return stop_text(frame, who, f"hit breakpoint {number}")

    def _interrupt_without_line(self, space: str, event: StopEvent) -> str:
        """A Ctrl-C stop in kernel code that maps to no Python line (a loop the compiler
        made of a recursion, say): where it is in C++ terms, and the dispatch's line."""
        stack = self.session.require_controller().stack(event.thread_id or 0, max_depth=1)
        inner = stack[0] if stack else None
        where = ""
        if inner is not None and inner.file:
            where = f", in {inner.function} at {inner.file}:{inner.line}"
        call = self.session.host_frames()
        site = f"; the kernel was launched at {call[0].file}:{call[0].line}" if call else ""
        number = self.session.thread_number(event.thread_id or 0)
        return (
            f"{space} kernel interrupted in kernel code with no Python line (thread "
            f"{number}{where}){site}\n('threads' shows where the others are; "
            "'continue' resumes, 'quit' ends the program)"
        )

    def _forget_temporary(self, number: int) -> None:
        for bp in self.frontend.state.get("breakpoints", []):
            if bp.get("number") == number and bp.get("temporary"):
                self.session.gdb_numbers.pop(number, None)
                self.frontend.kernel_request("clear", number=number)

    def watch_partial_continue(self, threads: list[int]) -> None:
        self.partial = PartialContinue(self.session.require_stop(), list(threads))

    def check_partial_continue(self) -> bool:
        """True when the threads a ``continue threads`` resumed have all ended their
        iterations: they are held again, and the user has the word."""
        partial = self.partial
        if partial is None or not partial.due():
            return False
        kernel = self.session
        controller = kernel.require_controller()
        if kernel.launch is None:
            return False  # not yet known: look again later
        # An OpenMP thread done with its indices waits for the others in a futex (asleep);
        # one running kernel code is runnable.
        asleep = all(controller.thread_asleep(t) for t in partial.threads)
        if not asleep and not partial.look_at_stacks():
            return False  # running kernel code: look again later
        controller.interrupt(partial.threads)
        for _ in partial.threads:
            controller.wait_for_stop_among(partial.threads, timeout=2.0)
        places = {t: waiting_place(kernel, t) for t in partial.threads}
        if not partial.all_waiting(places):
            controller.continue_(partial.threads)  # kernel code to run yet: on
            return False
        self.partial = None
        stop = partial.stop
        stop.finished.update(t for t, place in places.items() if place == DONE)
        kernel.stop = stop
        self.frontend.mode = KernelMode(kernel.launch.space)
        self.frontend.message(waiting_note(places, kernel.thread_number))  # type: ignore[arg-type]
        if stop.thread in stop.finished:
            self._switch_to_a_held_thread(stop)
        return True

    def _switch_to_a_held_thread(self, stop: Any) -> None:
        """The current thread is done (no variables left to show): the user goes on with
        the first held thread still at a Python line, as after 'thread N'."""
        for thread in [*stop.stopped, *stop.held]:
            if thread not in stop.finished and self.session.python_frames(thread):
                self.frontend.message(self.session.select_thread(thread))
                return

    def tend_evaluation_threads(self) -> None:
        """While an evaluation runs at a kernel stop: its threads run undebugged, so a
        stop of one at a breakpoint or a debug-build check goes on at once; one that a
        signal stopped has crashed the program, which is said and ends the wait."""
        from .kernel_session import is_interrupt

        kernel = self.session
        stop = kernel.stop
        if kernel.controller is None or stop is None:
            return
        held = {stop.thread, *stop.stopped, *stop.held}
        controller = kernel.controller
        while (event := controller.poll_stop()) is not None:
            if event.exited:
                raise TargetError("the program ended during the evaluation")
            if event.thread_id in held:
                continue  # a held kernel thread: nothing of the evaluation's
            if event.reason == "signal-received" and not is_interrupt(event):
                where = event.frame.function if event.frame else "??"
                raise TargetError(
                    f"the evaluation crashed the program: thread {event.thread_id} received "
                    f"{event.signal_name or 'a signal'} in {where}"
                )
            if event.thread_id is not None:
                controller.continue_([event.thread_id])


class PartialContinue:
    """The threads a ``continue threads`` resumed, and the stop the others stay held at."""

    #: How often to look whether they all ended their iterations.
    INTERVAL = 0.5

    def __init__(self, stop: Any, threads: list[int]) -> None:
        self.stop = stop
        self.threads = threads
        self._next = time.monotonic() + self.INTERVAL
        self._polls = 0
        self._places: dict[int, str | None] = {}  # where all_waiting saw them last

    def due(self) -> bool:
        if time.monotonic() < self._next:
            return False
        self._next = time.monotonic() + self.INTERVAL
        return True

    def look_at_stacks(self) -> bool:
        """Whether to stop the resumed threads to see where they are, though they do
        not sleep: every other poll (a thread at a team barrier spins)."""
        self._polls += 1
        return self._polls % 2 == 0

    def all_waiting(self, places: dict[int, str | None]) -> bool:
        """Whether the resumed threads, at ``places`` (see partial_waits), wait for held
        ones: all done, or waiting at team barriers where the last look saw them too (a
        thread passes a barrier its teammates reach at once)."""
        seen, self._places = self._places, places
        if any(place is None for place in places.values()):
            return False
        return all(place == DONE for place in places.values()) or places == seen
