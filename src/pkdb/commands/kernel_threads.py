"""Kernel mode: threads, thread N, send RAW."""

from __future__ import annotations

from .kernel_support import KernelConsole, guarded
from .registry import Command


@guarded
def do_threads(console: KernelConsole, arg: str) -> None:
    """threads
    List the kernel's threads, one a line: its id, state and Python line.
    The current thread is marked *. Switch with 'thread N'.
    """
    kernel = console.kernel
    stop = kernel.require_stop()
    running = 0
    for thread in kernel.kernel_threads():
        frames = kernel.python_frames(thread.id) if thread.stopped else []
        if not thread.stopped:
            running += 1
            continue  # not held: a worker that has not reached kernel code, a pool thread
        mark = "*" if thread.id == stop.thread else " "
        if frames:
            where = f"{frames[0].file}:{frames[0].line} ({_name(frames[0])})"
        elif thread.id in stop.finished:
            where = "(done: waits at the end of the kernel)"
        else:
            where = "(held outside the kernel's lines: done, or an idle runtime thread)"
        console.message(f"{mark} {thread.id:<4} {thread.target_id:<34} {where}")
    if running:
        console.message(f"  ({running} other thread{'s' * (running > 1)} running)")


def _name(frame) -> str:
    return (frame.function or "??").split("(")[0].split("::")[-1].removesuffix("_")


@guarded
def do_thread(console: KernelConsole, arg: str) -> None:
    """thread N
    Make kernel thread N (an id from 'threads') the current thread.
    """
    kernel = console.kernel
    stop = kernel.require_stop()
    try:
        number = int(arg.strip())
    except ValueError:
        console.error("usage: thread N (see 'threads' for the ids)")
        return
    known = {t.id: t for t in kernel.kernel_threads()}
    if number not in known:
        console.error(f"no kernel thread {number}")
        return
    if not known[number].stopped:
        console.error(f"thread {number} is running; only stopped threads can be selected")
        return
    stop.thread = number
    stop.frame = 0
    frame = kernel.location(number)
    where = f" at {frame.file}:{frame.line}" if frame else ""
    console.message(f"[Switching to thread {number}{where}]")


@guarded
def do_send(console: KernelConsole, arg: str) -> None:
    """send RAW
    Send RAW to the target debugger (gdb) as typed, and show its answer.
    Example: send info registers rip
    """
    if not arg.strip():
        console.error("usage: send GDB-COMMAND")
        return
    stop = console.kernel.stop
    text = console.kernel.require_controller().send_raw(
        arg.strip(), thread_id=stop.thread if stop else None
    )
    console.message(text.rstrip("\n"))


COMMANDS = [
    Command("threads", do_threads),
    Command("thread", do_thread),
    Command("send", do_send),
]
