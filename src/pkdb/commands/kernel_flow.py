"""Kernel mode: continue, step, next, finish."""

from __future__ import annotations

from .kernel_support import KernelConsole, guarded
from .registry import Command

#: How many raw gdb steps a Python-level step may take through generated code.
_MAX_RAW_STEPS = 40


@guarded
def do_continue(console: KernelConsole, arg: str) -> None:
    """c(ont(inue)) [threads A:B | threads N]
    Resume every kernel thread until a breakpoint is hit again or the
    kernel ends (then the session is back in the host code). At each stop
    every thread has either reached the breakpoint or been held where it
    was, so the state is the same run after run. 'continue threads A:B'
    resumes only threads A to B (ids from 'threads', both included); the
    others stay held.
    """
    words = arg.split()
    controller = console.kernel.require_controller()
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
    chosen = [t.id for t in console.kernel.kernel_threads() if low <= t.id <= high and t.stopped]
    if not chosen:
        console.error(f"no stopped kernel thread has an id from {low} to {high}")
        return
    console.message(f"Resuming thread{'s' * (len(chosen) > 1)} {', '.join(map(str, chosen))}")
    controller.continue_(chosen)
    console.resume_kernel()


def _step(console: KernelConsole, into: bool) -> None:
    kernel = console.kernel
    stop = kernel.require_stop()
    controller = kernel.require_controller()
    thread = stop.thread
    # Python-line granularity: keep stepping while gdb stops in generated C++ (the
    # launcher's loop between two iterations); in it, `step` enters the next call of
    # the workunit, in this same thread.
    for _ in range(_MAX_RAW_STEPS):
        location = controller.stack(thread, max_depth=1)
        in_python = bool(location) and (location[0].file or "").endswith(".py")
        (controller.step if (into or not in_python) else controller.next)(thread)
        event = controller.wait_for_stop(timeout=30.0, thread_id=thread)
        if event is None or event.exited:
            console.resume_kernel()  # the program ended: report it
            return
        frame = event.frame
        if frame is not None and (frame.file or "").endswith(".py"):
            stop.event = event
            stop.frame = 0
            console.message(console.kernel_stop_text(event))  # type: ignore[attr-defined]
            return
        if frame is None or not frame.file:
            break  # left the kernel's code (the OpenMP runtime): let it run
        into = False
    console.message(f"Thread {thread} has no more kernel lines to run; it continues.")
    controller.continue_([thread])
    console.resume_kernel()


@guarded
def do_step(console: KernelConsole, arg: str) -> None:
    """s(tep)
    Run the current kernel thread to the next Python line, entering
    @pk.function helpers. Other threads stay where they are.
    """
    _step(console, into=True)


@guarded
def do_next(console: KernelConsole, arg: str) -> None:
    """n(ext)
    Run the current kernel thread to the next Python line of this
    function, over helper calls. Other threads stay where they are.
    """
    _step(console, into=False)


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
    console.kernel.require_controller().continue_()
    console.resume_kernel()


COMMANDS = [
    Command("continue", do_continue, aliases=("c", "cont")),
    Command("step", do_step, aliases=("s",)),
    Command("next", do_next, aliases=("n",)),
    Command("finish", do_finish),
]
