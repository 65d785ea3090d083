"""Kernel mode: continue, step, next, return, finish."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..gdbexpr import parse_gdb_value
from ..kernel_session import at_def_line
from ..targets.base import FrameInfo, StopEvent, TargetError
from ..team_stepping import STEP_TIMEOUT_SECONDS, TeamStep
from .kernel_inspect import kernel_type
from .kernel_support import KernelConsole, enclosing_function, guarded, python_name
from .registry import Command

#: A step that has not ended by then is stuck (at the kernel's end, waiting for held
#: threads): it is interrupted and reported as such.
_STEP_TIMEOUT_SECONDS = 2.0
#: until runs the thread at full speed (a loop to its end); past this it is interrupted.
_UNTIL_TIMEOUT_SECONDS = 60.0
#: A thread stepped out of an index of a HYBRID launch enters its next one at once.
_NEXT_INDEX_SECONDS = 0.5


@guarded
def do_continue(console: KernelConsole, arg: str) -> None:
    """c(ont(inue)) [threads A:B | threads N]
    Resume every kernel thread until a breakpoint is hit again or the
    kernel ends (then the session is back in the host code). At each stop
    every thread has either reached the breakpoint or been held where it
    was, so the state is the same run after run. 'continue threads A:B'
    resumes only threads A to B (numbers from 'threads', both included); the
    others stay held. When those run out of iterations the prompt comes
    back; if the current thread was among them, the first held thread at a
    kernel line becomes the current one.
    """
    words = arg.split()
    controller = console.kernel.require_controller()
    pending = console.kernel.next_pending_fault() if console.kernel.stop else None
    if pending is not None:  # another thread failed a check at this stop: that first
        console.report_kernel_stop(pending.event)
        return
    if not words:
        controller.continue_()
        console.resume_kernel()
        return
    if words[0] != "threads" or len(words) != 2:
        console.error("usage: continue [threads A:B]")
        return
    try:
        first, _, last = words[1].partition(":")
        low, high = int(first), int(last or first)
    except ValueError:
        console.error(f"thread range expected, like 2:5, got {words[1]!r}")
        return
    if low > high:
        console.error(f"thread range {words[1]} runs backwards: the first number comes first")
        return
    kernel = console.kernel
    numbered = sorted(
        (kernel.thread_number(t.id), t.id) for t in kernel.kernel_threads() if t.stopped
    )
    chosen = [thread for number, thread in numbered if low <= number <= high]
    names = ", ".join(str(number) for number, _ in numbered if low <= number <= high)
    if not chosen:
        console.error(f"no stopped kernel thread has a number from {low} to {high}")
        return
    if not any(console.kernel.python_frames(t) for t in chosen):
        # Done, or idle in the OpenMP runtime: alone, it would wait for the held threads
        # at the kernel's end, and the prompt would not come back.
        console.error(
            f"thread{'s' * (len(chosen) > 1)} {names} "
            f"{'are' if len(chosen) > 1 else 'is'} outside the kernel's lines (done, or an "
            "idle runtime thread); resume a thread at a kernel line, or 'continue' them all"
        )
        return
    console.message(f"Resuming thread{'s' * (len(chosen) > 1)} {names}")
    console.watch_partial_continue(chosen)
    controller.continue_(chosen)
    console.resume_kernel()


def _step(
    console: KernelConsole,
    into: bool,
    advance: Callable[[int], StopEvent | None] | None = None,
) -> None:
    """A step of the current thread: into helpers or over them, or as ``advance``
    moves it (given the thread; it returns the stop)."""
    kernel = console.kernel
    stop = kernel.require_stop()
    controller = kernel.require_controller()
    thread = stop.thread
    if thread in stop.finished:
        console.error(
            f"thread {kernel.thread_number(thread)} has run all its iterations; choose another "
            "with 'thread N', or 'continue'"
        )
        return
    if kernel.team_member:
        _team_step(console, thread, into)
        return
    selected = None
    if not into and advance is None and stop.frame > 0:
        # pdb's next goes on in the frame `up` selected: to its next line, over the
        # frames it called. Past the kernel, in the dispatch's host frames, that is the
        # rest of the kernel.
        if kernel.host_frame_index(thread, stop.frame) is not None:
            console.error(
                "the selected frame is host code, which the kernel returns to when it ends: "
                "'finish' runs it to its end ('down' selects a kernel frame)"
            )
            return
        selected = kernel.location(thread, stop.frame)
    console.debug_rest_of_launch()  # a step may go on to the thread's next index
    launch = kernel.launch
    # Python-line granularity. gdb steps inside the Python functions; past the body's
    # last line it would run the generated loop (every remaining iteration) as one
    # line, so a breakpoint for this thread on the body's entry stops it at the start
    # of its next iteration instead.
    left_at = _leave_runtime(console, thread, selected)
    next_iteration = _iteration_breakpoint(console, thread)
    before = kernel.location(thread)
    try:
        if advance is not None:
            event = advance(thread)
        else:
            (controller.step if into else controller.next)(thread)
            event = controller.wait_for_stop(timeout=_STEP_TIMEOUT_SECONDS, thread_id=thread)
            if left_at is not None and _same_line(event, left_at):
                # Back from the runtime in the middle of the line: gdb's first step ends
                # that line's remaining code; the user asked for the next line.
                (controller.step if into else controller.next)(thread)
                event = controller.wait_for_stop(timeout=_STEP_TIMEOUT_SECONDS, thread_id=thread)
        if (
            launch is not None
            and launch.fast_library
            and next_iteration is not None
            and event is not None
            and not event.exited
            and not _in_python(event)
        ):
            # Out of the body of a HYBRID launch's index: the thread is in the debug
            # build's one-index entry, which release code called. Its next index (in the
            # debug build now) starts at once; with none, it stops when its indices are
            # done, before OpenMP's barrier (where held threads may be waiting already).
            done = _thread_breakpoint(console, thread, "pk_hybrid_chunk_done")
            try:
                controller.continue_([thread])
                event = controller.wait_for_stop(timeout=_NEXT_INDEX_SECONDS, thread_id=thread)
            finally:
                _delete_quietly(console, done)
        if (
            next_iteration is not None
            and event is not None
            and not event.exited
            and not _in_python(event)
            and _launcher_has_more(controller, thread)
        ):
            # Out of the body into a launcher loop gdb can see (a Serial launch's): on to
            # the thread's next index, where the iteration breakpoint stops it.
            controller.continue_([thread])
            event = controller.wait_for_stop(timeout=_STEP_TIMEOUT_SECONDS, thread_id=thread)
        entered = event is not None and (
            (event.breakpoint is not None and event.breakpoint == next_iteration)
            or (into and before is not None and _function_changed(before, event))
        )
        if entered and at_def_line(event.frame):
            # on to the function's first line (its def line only declares its locals)
            controller.next(thread)
            event = controller.wait_for_stop(timeout=_STEP_TIMEOUT_SECONDS, thread_id=thread)
    finally:
        _delete_quietly(console, next_iteration)
    if event is None:  # e.g. waiting at the kernel's end for held threads
        controller.interrupt([thread])
        controller.wait_for_stop(timeout=2.0, thread_id=thread)
    elif event.exited:
        console.resume_kernel()  # the program ended: report it
        return
    if event is not None and _in_python(event):
        stop.event = event
        stop.frame = 0
        console.report_kernel_stop(event)
        return
    stop.finished.add(thread)
    number = kernel.thread_number(thread)
    if launch is not None and launch.space == "serial":
        console.message(f"Thread {number} has run all its iterations; 'continue' ends the kernel.")
        return
    console.message(
        f"Thread {number} has run all its iterations; it waits at the end of the kernel "
        "for the other threads ('threads' lists them, 'continue' lets them finish)."
    )


def _leave_runtime(
    console: KernelConsole, thread: int, selected: FrameInfo | None = None
) -> FrameInfo | None:
    """A thread interrupted inside the C++ runtime (``pk_rt::mod`` of a ``%``, a bounds
    check) is first run out of it, back to the Python line that called it, so that the
    step starts from that line as the user sees it; so is a thread whose ``selected``
    frame (``up``) is an outer one, back to that frame. That line's frame, when it did."""
    frame = selected
    if frame is None:
        frames = console.kernel.python_frames(thread)
        frame = frames[0] if frames else None
    if frame is None or frame.level == 0:
        return None
    controller = console.kernel.require_controller()
    controller.finish(thread, frame.level - 1)
    controller.wait_for_stop(timeout=_STEP_TIMEOUT_SECONDS, thread_id=thread)
    return frame


def _same_line(event: StopEvent | None, frame: FrameInfo) -> bool:
    return (
        event is not None
        and event.frame is not None
        and event.frame.file == frame.file
        and event.frame.line == frame.line
        and event.frame.function == frame.function
    )


def _launcher_has_more(controller: Any, thread: int) -> bool:
    """Whether ``thread`` stands in a launcher's index loop (``pk_i`` of ``pk_end``, as a
    Serial launch's) with indices left to run."""
    try:
        index = int(controller.evaluate("pk_i", thread, 0))
        end = int(controller.evaluate("pk_end", thread, 0))
    except (TargetError, ValueError):
        return False
    return index + 1 < end


def _in_python(event: StopEvent) -> bool:
    return bool(event.frame and (event.frame.file or "").endswith(".py"))


def _function_changed(before: FrameInfo, event: StopEvent) -> bool:
    return event.frame is not None and event.frame.function != before.function


def _team_step(console: KernelConsole, thread: int, into: bool) -> None:
    """A step in a TeamPolicy kernel: over team barriers, on to the next league rank."""
    _report_team_outcome(console, thread, TeamStep(console.kernel, thread, into).run())


def _team_until(
    console: KernelConsole, thread: int, here: FrameInfo, first: int, last: int
) -> None:
    """``until`` in a TeamPolicy kernel: team-aware ``next`` steps (a barrier on the way
    brings the teammates along, where a thread run alone would wait for them for
    ever) until the thread reaches a line from ``first`` to ``last`` of this function,
    or its next league rank, or something else stops it."""
    kernel = console.kernel
    position = kernel.team_position(thread)
    deadline = time.monotonic() + _UNTIL_TIMEOUT_SECONDS
    notes: list[str] = []
    while True:
        outcome = TeamStep(kernel, thread, False).run()
        notes += [note for note in outcome.notes if note not in notes]
        event = outcome.event
        if outcome.kind != "stopped" or event is None or event.thread_id != thread:
            break  # finished, diverted by a teammate, stuck, the program's end
        frame = event.frame
        if event.breakpoint is not None or event.reason == "signal-received":
            break  # a breakpoint or a failed check on the way
        if frame is None or frame.file != here.file:
            break  # another function
        if frame.line is not None and first <= frame.line <= last:
            break
        now = kernel.team_position(thread)
        if position is None or now is None or now.league_rank != position.league_rank:
            break  # its next league rank began
        if time.monotonic() > deadline:
            break
        kernel.require_stop().event = event  # the loop goes on from here
    outcome.notes = notes
    _report_team_outcome(console, thread, outcome)


def _report_team_outcome(console: KernelConsole, thread: int, outcome: Any) -> None:
    """Say how a team step (or ``until``) ended, and make its stop the current one."""
    stop = console.kernel.require_stop()
    number = console.kernel.thread_number(thread)
    if outcome.kind == "exited":
        console.resume_kernel()  # the program ended: report it
        return
    if outcome.kind in ("stopped", "diverted") and outcome.event is not None:
        stop.event = outcome.event
        stop.thread = outcome.event.thread_id or thread
        stop.frame = 0
        console.report_kernel_stop(outcome.event)
    elif outcome.kind == "finished":
        stop.finished.add(thread)
        console.message(
            f"Thread {number} has run all its league ranks; it waits at the end of the kernel "
            "for the other threads ('threads' lists them, 'continue' lets them finish)."
        )
    else:
        console.message(
            f"Thread {number} did not reach another Python line within "
            f"{STEP_TIMEOUT_SECONDS:.0f} s; it is held where it was interrupted."
        )
    for note in outcome.notes:
        console.message(note)


def _iteration_breakpoint(console: KernelConsole, thread: int) -> int | None:
    launch = console.kernel.launch
    if launch is None or not launch.kernel_symbol:
        return None
    return _thread_breakpoint(console, thread, launch.kernel_symbol)


def _thread_breakpoint(console: KernelConsole, thread: int, function: str) -> int | None:
    """A temporary breakpoint on ``function`` for ``thread`` only; its number."""
    controller = console.kernel.require_controller()
    try:
        return controller.set_thread_breakpoint(function, thread, temporary=True)
    except TargetError:
        return None


def _delete_quietly(console: KernelConsole, number: int | None) -> None:
    if number is None:
        return
    try:
        console.kernel.require_controller().delete_breakpoint(number)
    except TargetError:
        pass  # temporary: already gone after it was hit


@guarded
def do_step(console: KernelConsole, arg: str) -> None:
    """s(tep)
    Run the current kernel thread to the next Python line, entering
    @pk.function helpers. Other threads stay where they are, except, in a
    TeamPolicy kernel, the thread's teammates when the step reaches a team
    barrier: they run until they reach it too. 'step N' steps N times.
    """
    _repeat(console, arg, into=True)


@guarded
def do_next(console: KernelConsole, arg: str) -> None:
    """n(ext)
    Run the current kernel thread to the next Python line of this
    function (the frame 'up' selected, as in pdb), over helper calls.
    Other threads stay where they are, except, in a TeamPolicy kernel, the
    thread's teammates when the step reaches a team barrier (team_barrier(),
    a nested TeamThreadRange reduce or scan, the end of a league rank): they
    run until they reach it too. Past the workunit's last line it goes on to
    the thread's next league rank.
    'next N' steps N times.
    """
    _repeat(console, arg, into=False)


def _repeat(console: KernelConsole, arg: str, into: bool) -> None:
    """``step N`` / ``next N`` (as gdb counts them): N steps of the current thread, fewer
    when it runs out of iterations or the stop moves to another thread."""
    try:
        count = int(arg.strip() or "1")
    except ValueError:
        console.error(f"a number of steps expected, got {arg.strip()!r}")
        return
    stop = console.kernel.require_stop()
    thread = stop.thread
    for _ in range(max(1, count)):
        _step(console, into=into)
        stop = console.kernel.stop
        if stop is None or stop.thread != thread or thread in stop.finished:
            break


@guarded
def do_until(console: KernelConsole, arg: str) -> None:
    """unt(il) [LINE]
    Run the current kernel thread until it reaches a line past the current
    one in this function -- out of a loop, to the line after it -- or,
    with LINE, a line at or past LINE; or its next index, when this one
    ends first. Other threads stay where they are.
    """
    kernel = console.kernel
    stop = kernel.require_stop()
    here = kernel.location(stop.thread, stop.frame)
    if here is None or not here.file:
        console.error("no Python source for this frame")
        return
    first = here.line + 1
    if arg.strip():
        try:
            first = int(arg.strip())
        except ValueError:
            console.error(f"a line number expected, got {arg.strip()!r}")
            return
        if first <= here.line:
            console.error(f"line {first} is not past the current line {here.line}")
            return
    span = enclosing_function(here.file, here.line)
    last = span[1] if span else first
    if first > last:
        if arg.strip():
            console.error(f"line {first} is past the end of this function (line {last})")
        else:  # the function's last line: on to where the function returns, as next goes
            _step(console, into=False)
        return
    if kernel.team_member:
        if stop.thread in stop.finished:
            _step(console, into=False)  # says the thread is done
        else:
            _team_until(console, stop.thread, here, first, last)
        return

    def run_to_later_line(thread: int) -> StopEvent | None:
        numbers = [_thread_breakpoint(console, thread, f"{here.file}:{line}")
                   for line in range(first, last + 1)]  # fmt: skip
        controller = kernel.require_controller()
        try:
            controller.continue_([thread])
            return controller.wait_for_stop(timeout=_UNTIL_TIMEOUT_SECONDS, thread_id=thread)
        finally:
            for number in numbers:
                _delete_quietly(console, number)

    _step(console, into=False, advance=run_to_later_line)


@guarded
def do_return(console: KernelConsole, arg: str) -> None:
    """r(eturn)
    Run the current thread until the @pk.function helper it is in returns:
    it stops in the caller, and the value the helper returned is shown.
    (In the workunit itself, 'next' runs to the end of the index and
    'finish' to the end of the kernel.)
    """
    kernel = console.kernel
    stop = kernel.require_stop()
    thread = stop.thread
    if stop.frame + 1 >= len(kernel.python_frames(thread)):
        console.error(
            "the workunit returns to no kernel code: 'next' runs to the end of this index, "
            "'finish' to the end of the kernel"
        )
        return
    controller = kernel.require_controller()
    function = kernel.location(thread, stop.frame)
    controller.finish(thread, kernel.frame_level(thread, stop.frame))
    event = controller.wait_for_stop(timeout=_STEP_TIMEOUT_SECONDS, thread_id=thread)
    if event is None:  # e.g. the helper waits for a held thread
        controller.interrupt([thread])
        event = controller.wait_for_stop(timeout=2.0, thread_id=thread)
    if event is None:
        console.error(f"thread {kernel.thread_number(thread)} did not come back from the helper")
        return
    if event.exited:
        console.resume_kernel()  # the program ended: report it
        return
    stop.event = event
    stop.frame = 0
    console.report_kernel_stop(event)
    if event.return_value is not None:
        name = python_name(function.function if function else None)
        value = _returned(controller, event, thread)
        stop.returned = (event, value)  # for `retval`
        console.message(f"{name} returned {value}")


def _returned(controller: Any, event: StopEvent, thread: int) -> str:
    """The value a helper returned, as Python shows it (gdb writes the double 6.0 as 6)."""
    text = event.return_value or ""
    variable = event.raw.get("gdb-result-var")
    try:
        answer = controller.type_of(variable, thread) if variable else ""
    except TargetError:
        answer = ""
    dtype = kernel_type(answer)  # "double"
    value = parse_gdb_value(text)
    if dtype in ("float64", "float32"):
        return repr(float(value)) if isinstance(value, int | float) else text
    if dtype == "bool":
        return "True" if value else "False"
    return repr(value) if isinstance(value, int | float) else text


@guarded
def do_finish(console: KernelConsole, arg: str) -> None:
    """finish
    Run the kernel to completion, ignoring its breakpoints this once,
    and stop in the host code right after the dispatch.
    """
    reply = console.kernel_request("finish")
    if not reply.ok:
        console.error(reply.text)
        return
    console.kernel.remove_all()
    console.kernel.finishing = True
    console.kernel.require_controller().continue_()
    console.resume_kernel()


COMMANDS = [
    Command("continue", do_continue, aliases=("c", "cont")),
    Command("step", do_step, aliases=("s",)),
    Command("next", do_next, aliases=("n",)),
    Command("until", do_until, aliases=("unt",)),
    Command("return", do_return, aliases=("r",)),
    Command("finish", do_finish),
]
