"""``step``/``next`` in a TeamPolicy kernel: over team barriers, across league ranks.

pkdb holds every other kernel thread while one steps. In a team kernel the stepping
thread may enter ``pk_rt::team_barrier`` (``team_member.team_barrier()``, the two
barriers of a nested TeamThreadRange reduce or scan, the launcher's barrier at the end
of each league rank), which returns only when every thread of its team has arrived:
with the teammates held, the step would never end. So a team step watches for the
stepping thread entering the barrier (a breakpoint for that thread only) and then lets
the held threads of the same team (same shared team state) run until they reach the
barrier too (a breakpoint on the barrier for each of them); then all pass it, the
teammates stop right after it, and the step goes on. A teammate that stops on the way
(at a breakpoint, a failed check) ends the step there, and that stop is reported.

Past the workunit's last line, the step goes on through the launcher: to the start of
the thread's next league rank, or out of the launcher when the thread has run all its
league ranks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .kernel_session import at_def_line
from .targets.base import FrameInfo, StopEvent, TargetError
from .teams import END_OF_WORKUNIT_LINE

if TYPE_CHECKING:
    from .kernel_session import KernelSession
    from .targets.base import Controller

#: The runtime's barrier (every team collective goes through it).
BARRIER = "pk_rt::team_barrier"
#: A step (between barriers) that has not ended by then is stuck: it is interrupted.
STEP_TIMEOUT_SECONDS = 2.0
#: How long the threads of a team get to meet at a barrier (they run the code before it).
MEET_TIMEOUT_SECONDS = 10.0
#: Bound on the rounds of one step (a line with many barriers, launcher hops...).
_MAX_ROUNDS = 64


@dataclass
class StepOutcome:
    """How a team step ended.

    ``kind``: ``"stopped"`` (``event``: the thread's stop at its next line, or at a
    breakpoint or a failed check on the way), ``"finished"`` (the thread has run all
    its league ranks), ``"diverted"`` (``event``: a teammate stopped on its way to the
    barrier; the stepping thread waits at the barrier), ``"stuck"``, ``"exited"``.
    """

    kind: str
    event: StopEvent | None = None
    notes: list[str] = field(default_factory=list)


def _function(frame: FrameInfo) -> str:
    return (frame.function or "").split("(")[0]


def _barrier_level(stack: list[FrameInfo]) -> int | None:
    return next((f.level for f in stack if _function(f) == BARRIER), None)


class TeamStep:
    """One ``step`` (``into``) or ``next`` of kernel thread ``thread`` of a team kernel."""

    def __init__(self, kernel: KernelSession, thread: int, into: bool) -> None:
        self.kernel = kernel
        self.controller: Controller = kernel.require_controller()
        self.thread = thread
        self.into = into
        self.notes: list[str] = []
        self._barrier_bps: dict[int, int] = {}  # thread -> its breakpoint on BARRIER
        self._iteration_bp: int | None = None
        self._start_line: int | None = None  # the Python line the step starts from
        self._start_function = ""

    # -- the step ----------------------------------------------------------------------

    def run(self) -> StepOutcome:
        """Do the step; the caller reports the outcome."""
        try:
            self._barrier_breakpoint(self.thread)
            self._iteration_bp = self._next_league_breakpoint()
            event: StopEvent | None = None
            stack = self.controller.stack(self.thread, max_depth=64)
            frames = self.kernel.python_frames(self.thread, stack)
            self._start_line = frames[0].line if frames else None
            self._start_function = _function(frames[0]) if frames else ""
            if _barrier_level(stack) is not None:  # held inside a barrier: meet first
                outcome, event = self._meet(stack)
                if outcome is not None:
                    return outcome
            else:
                self._line_step()
            launcher = False
            for _ in range(_MAX_ROUNDS):
                if event is None:
                    event = self.controller.wait_for_stop(
                        STEP_TIMEOUT_SECONDS, thread_id=self.thread
                    )
                if event is None:
                    self._hold([self.thread])
                    return StepOutcome("stuck", notes=self.notes)
                if event.exited:
                    return StepOutcome("exited", event, self.notes)
                mine = self._barrier_bps.get(self.thread)
                if event.breakpoint is not None and event.breakpoint == mine:
                    outcome, event = self._meet(self.controller.stack(self.thread, max_depth=64))
                    if outcome is not None:
                        return outcome
                    launcher = False
                    continue  # on from right after the barrier
                if (
                    event.breakpoint is not None
                    and event.breakpoint == self._iteration_bp
                    and at_def_line(event.frame)
                ):
                    # the next league rank's entry: on to the workunit's first line
                    self._iteration_bp = None  # (temporary: gdb deleted it)
                    self.controller.next(self.thread)
                    event = None
                    continue
                if event.breakpoint is not None or event.reason == "signal-received":
                    return StepOutcome("stopped", event, self.notes)  # a breakpoint, a fault
                next_move = self._after(event, launcher)
                if next_move == "done":
                    return StepOutcome("stopped", event, self.notes)
                if next_move == "finished":
                    return StepOutcome("finished", event, self.notes)
                launcher = next_move == "launcher"
                event = None
            self._hold([self.thread])
            return StepOutcome("stuck", notes=self.notes)
        finally:
            for number in [*self._barrier_bps.values(), self._iteration_bp]:
                self._delete(number)

    def _line_step(self) -> None:
        (self.controller.step if self.into else self.controller.next)(self.thread)

    def _after(self, event: StopEvent, from_launcher: bool) -> str:
        """Where the thread is after a stop that is neither a breakpoint nor a barrier:
        ``done`` (at its next Python line), ``finished`` (out of the launcher), or the
        move just started (``line``: the rest of a Python line, ``helper``: out of a
        runtime helper, ``launcher``: on through the launcher's loop)."""
        frame = event.frame
        function = _function(frame) if frame else ""
        if frame is not None and (frame.file or "").endswith(".py"):
            if event.reason != "function-finished" or frame.line != self._start_line:
                if self.into and _function(frame) != self._start_function and at_def_line(frame):
                    self.controller.next(self.thread)  # into a helper: to its first line
                    return "line"
                return "done"  # (a barrier call that ends its line returns to the next one)
            self._line_step()  # back from a barrier in the middle of the line: end it
            return "line"
        if function.startswith("pk_rt::"):
            self.controller.finish(self.thread, 0)  # e.g. between team_reduce's barriers
            return "helper"
        stack = self.controller.stack(self.thread, max_depth=64)
        level = next((f.level for f in stack if "pk_launch_" in _function(f)), None)
        if level is None or (from_launcher and event.reason == "function-finished"):
            return "finished"
        # The launcher's loop over this thread's league ranks: to the next one's first
        # line (a breakpoint for this thread), or out when it has none.
        self.controller.finish(self.thread, level)
        return "launcher"

    # -- meeting at a barrier ----------------------------------------------------------

    def _meet(self, stack: list[FrameInfo]) -> tuple[StepOutcome | None, StopEvent | None]:
        """The stepping thread is in (or at the entry of) the barrier: let its held
        teammates reach it, all pass it. (None, the stepping thread's stop right after the
        barrier), or (an outcome that ends the step, None)."""
        kernel, controller, me = self.kernel, self.controller, self.thread
        level = _barrier_level(stack)
        assert level is not None
        position = kernel.team_position(me, stack)
        where = self._barrier_place(level)
        if position is None or position.team_size <= 1 or not position.shared:
            controller.finish(me, level)
            return None, None
        generation = self._generation(position.shared, me)
        mates = []
        for thread in kernel.kernel_threads():
            if thread.id == me or not thread.stopped:
                continue
            mate_stack = controller.stack(thread.id, max_depth=64)
            mate = kernel.team_position(thread.id, mate_stack)
            if mate is not None and mate.shared == position.shared:
                mates.append((thread.id, mate_stack))
        state: dict[int, str] = {}
        stale: dict[int, int] = {}
        for thread_id, mate_stack in mates:
            state[thread_id] = self._toward_barrier(thread_id, _barrier_level(mate_stack))
        controller.finish(me, level)
        state[me] = "finishing"
        mine: StopEvent | None = None
        deadline = time.monotonic() + MEET_TIMEOUT_SECONDS
        while any(s != "done" for s in state.values()):
            moving = [t for t, s in state.items() if s != "done"]
            event = controller.wait_for_stop_among(moving, max(0.0, deadline - time.monotonic()))
            if event is None:
                self._hold(moving)
                number = kernel.thread_number
                waiting = ", ".join(map(str, sorted(number(t) for t in moving if t != me)))
                self.notes.append(
                    f"(the team of league {position.league_rank} did not meet at {where} "
                    f"within {MEET_TIMEOUT_SECONDS:.0f} s: thread{'s' * (',' in waiting)} "
                    f"{waiting or number(me)} did not get there; every thread is held)"
                )
                return StepOutcome("stuck", notes=self.notes), None
            if event.exited:
                return StepOutcome("exited", event, self.notes), None
            thread_id = event.thread_id or 0
            if event.breakpoint is not None and event.breakpoint == self._barrier_bps.get(
                thread_id
            ):
                controller.finish(thread_id, 0)  # arrived: wait in the barrier, then pass
                state[thread_id] = "finishing"
            elif event.reason == "function-finished":
                now = self._generation(position.shared, thread_id)
                if now == generation and stale.get(thread_id, 0) < 1:
                    # it left the team's previous barrier: on to this one
                    stale[thread_id] = stale.get(thread_id, 0) + 1
                    self._barrier_breakpoint(thread_id)
                    controller.continue_([thread_id])
                    state[thread_id] = "running"
                else:
                    state[thread_id] = "done"
                    if thread_id == me:
                        mine = event
            else:  # a breakpoint, a failed check or a signal on the way
                self._hold([t for t, s in state.items() if s != "done" and t != thread_id])
                if thread_id != me:
                    self.notes.append(
                        f"(thread {kernel.thread_number(me)} waits at {where} for its team, "
                        f"league {position.league_rank})"
                    )
                kind = "stopped" if thread_id == me else "diverted"
                return StepOutcome(kind, event, self.notes), None
        for thread_id, _ in mates:
            self._delete(self._barrier_bps.pop(thread_id, None))
        ids = ", ".join(str(n) for n in sorted(kernel.thread_number(t) for t, _ in mates))
        note = (
            f"(team of league {position.league_rank}: thread{'s' * (len(mates) > 1)} {ids} "
            f"ran to {where} too)"
        )
        if mates and note not in self.notes:  # a reduce's two barriers: said once
            self.notes.append(note)
        return None, mine

    def _toward_barrier(self, thread_id: int, level: int | None) -> str:
        """Start a teammate towards the barrier; its state."""
        if level is not None:  # already inside one: through it
            self.controller.finish(thread_id, level)
            return "finishing"
        self._barrier_breakpoint(thread_id)
        self.controller.continue_([thread_id])
        return "running"

    def _barrier_place(self, level: int) -> str:
        """``the barrier at prog.py:14`` / ``the end of the workunit``."""
        try:
            line = int(self.controller.evaluate("line", self.thread, level))
        except (TargetError, ValueError):
            return "the barrier"
        if line == END_OF_WORKUNIT_LINE:
            return "the end of the workunit"
        launch = self.kernel.launch
        name = launch.filename.rsplit("/", 1)[-1] if launch else "?"
        return f"the barrier at {name}:{line}"

    def _generation(self, shared: int, stopped_thread: int) -> int | None:
        """The barrier generation of the team whose shared state is at ``shared`` (read
        through a stopped thread: gdb reads no frame of a running one)."""
        try:
            text = self.controller.evaluate(
                f"((pk_rt::TeamShared*){shared:#x})->generation", stopped_thread, 0
            )
            return int(text)
        except (TargetError, ValueError):
            return None

    # -- breakpoints and holding -------------------------------------------------------

    def _barrier_breakpoint(self, thread_id: int) -> None:
        if thread_id not in self._barrier_bps:
            self._barrier_bps[thread_id] = self.controller.set_thread_breakpoint(BARRIER, thread_id)

    def _next_league_breakpoint(self) -> int | None:
        launch = self.kernel.launch
        if launch is None or not launch.kernel_symbol:
            return None
        try:
            return self.controller.set_thread_breakpoint(
                launch.kernel_symbol, self.thread, temporary=True
            )
        except TargetError:
            return None

    def _delete(self, number: int | None) -> None:
        if number is None:
            return
        try:
            self.controller.delete_breakpoint(number)
        except TargetError:
            pass  # a temporary one, already gone

    def _hold(self, threads: list[int]) -> None:
        """Stop ``threads`` (moving ones) where they are."""
        for thread_id in threads:
            if self.controller.wait_for_stop(0, thread_id=thread_id) is not None:
                continue
            try:
                self.controller.interrupt([thread_id])
            except TargetError:
                continue
            self.controller.wait_for_stop(1.0, thread_id=thread_id)
