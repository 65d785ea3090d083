"""GPU kernel mode's threads: threads, info cuda, thread, cuda (focus), parallel_print;
send, and hotswap / parallel_launch refused at a GPU stop."""

from __future__ import annotations

import re
import time

from ...targets.base import TargetError
from ...targets.device import dim3
from .breakpoints import list_breakpoints
from .console import GpuConsole, guarded
from .inspect import do_args, do_locals

#: Threads `parallel_print` evaluates at most (a block has up to 1024).
PARALLEL_PRINT_LIMIT = 1024


@guarded
def do_threads(console: GpuConsole, arg: str) -> None:
    """threads | info cuda threads
    The kernel's threads, coalesced into ranges of consecutive threads at
    the same line (a million threads are a few lines); * marks the focus.
    """
    rows = console.gpu.require_controller().device_threads()
    if not rows:
        console.message("No CUDA threads.")
        return
    console.message("  Block       Thread      To block    Thread       Count  Where")
    for r in rows:
        where = f"{r.file}:{r.line}" if r.file else "??"
        console.message(
            f"{'*' if r.current else ' '} {_d(r.first_block):<11} {_d(r.first_thread):<11} "
            f"{_d(r.last_block):<11} {_d(r.last_thread):<11} {r.count:>6}  {where}"
        )


def _d(value: tuple[int, int, int]) -> str:
    return "(" + ",".join(map(str, value)) + ")"


@guarded
def do_info(console: GpuConsole, arg: str) -> None:
    """info cuda threads | info threads | info breakpoints | info locals | info args
    What gdb's info commands show, at a GPU stop.
    """
    words = arg.split()
    if words[:2] == ["cuda", "threads"] or words[:1] == ["threads"]:
        do_threads(console, "")
    elif words[:1] in (["breakpoints"], ["break"], ["b"]):
        list_breakpoints(console)
    elif words[:1] == ["locals"]:
        do_locals(console, "")
    elif words[:1] == ["args"]:
        do_args(console, "")
    elif words[:1] == ["cuda"]:
        topic = arg.split(None, 1)[1] if len(words) > 1 else ""
        console.message(console.gpu.require_controller().device_info(topic).rstrip())
    else:
        console.error(f"info {arg}: try 'info cuda threads', 'info breakpoints', 'info locals'")


def _announce(console: GpuConsole) -> None:
    gpu = console.gpu
    stop = gpu.require_stop()
    frame = gpu.location(0)
    where = f" at {frame.file}:{frame.line}" if frame and frame.file else ""
    detail = ", ".join(f"{k}={v}" for k, v in gpu.index_values().items())
    assert stop.focus is not None
    number = gpu.thread_number(stop.focus)
    console.message(
        f"[Switching to thread {number} ({stop.focus.label()}{', ' + detail if detail else ''})"
        f"{where}]"
    )


@guarded
def do_thread(console: GpuConsole, arg: str) -> None:
    """thread [N | NAME=VALUE[, NAME=VALUE]]
    Without argument, the focused thread. thread N focuses on thread N of
    the grid (N = block * threads per block + thread, blocks and threads
    numbered x fastest); thread j=10 on the thread that runs index j = 10
    (a team kernel: league=L, team_rank=T).
    """
    gpu = console.gpu
    stop = gpu.require_stop()
    text = arg.strip()
    if not text:
        assert stop.focus is not None
        console.message(f"thread {gpu.thread_number(stop.focus)} ({stop.focus.label()})")
        return
    if "=" in text:
        pairs = [p.split("=", 1) for p in re.split(r"[,\s]+", text) if p]
        try:
            wanted = {name.strip(): int(value) for name, value in pairs}
        except ValueError:
            console.error(f"thread NAME=VALUE takes integer values, got {text!r}")
            return
        launch = gpu.launch
        assert launch is not None
        if launch.team_member:
            order = ["league", "team_rank"]
        else:
            order = [n for n in launch.index.split(", ") if n]
        missing = [n for n in wanted if n not in order]
        if missing:
            console.error(
                f"{missing[0]!r} is not one of this kernel's indices ({', '.join(order)})"
            )
            return
        block, thread = gpu.thread_of_index([wanted.get(n, 0) for n in order])
    else:
        try:
            block, thread = gpu.thread_of_number(int(text))
        except ValueError:
            console.error(f"thread takes a number or NAME=VALUE, got {text!r}")
            return
    gpu.switch(block, thread)
    _announce(console)
    if "=" in text:
        now = gpu.index_values()
        differ = {k: v for k, v in now.items() if k in wanted and wanted[k] != v}
        if differ:
            console.message(
                "(this thread runs that index in another iteration of its loop; it is at "
                + ", ".join(f"{k}={v}" for k, v in now.items())
                + " now)"
            )


_CUDA_FOCUS = re.compile(
    r"^(?:block\s+(?P<block>\(?[\d,\s]+\)?))?\s*(?:thread\s+(?P<thread>\(?[\d,\s]+\)?))?$"
)


def _coordinate(text: str | None) -> tuple[int, int, int] | None:
    if text is None:
        return None
    text = text.strip()
    if text.isdigit():
        return (int(text), 0, 0)
    return dim3(text if text.startswith("(") else f"({text})")


@guarded
def do_cuda(console: GpuConsole, arg: str) -> None:
    """cuda [block B] [thread T]
    Focus on thread T of block B (numbers along x, or (x,y,z)); either may
    be left out (it stays as it is). Without argument, the focus.
    """
    gpu = console.gpu
    stop = gpu.require_stop()
    assert stop.focus is not None
    match = _CUDA_FOCUS.match(arg.strip())
    if not arg.strip():
        console.message(f"kernel {stop.focus.kernel}, {stop.focus.label()}")
        return
    if match is None or not (match["block"] or match["thread"]):
        console.error("usage: cuda block B thread T  (e.g. cuda block 1 thread 3)")
        return
    block = _coordinate(match["block"]) or stop.focus.block
    thread = _coordinate(match["thread"]) or stop.focus.thread
    gpu.switch(block, thread)
    _announce(console)


@guarded
def do_parallel_print(console: GpuConsole, arg: str) -> None:
    """parallel_print EXPRESSION [threads A:B]
    EXPRESSION in each thread of the focused block (or threads A to B of
    the grid, both included), a table by thread.
    """
    gpu = console.gpu
    stop = gpu.require_stop()
    assert stop.focus is not None
    text = arg.strip()
    match = re.search(r"\s+threads\s+(\d+):(\d+)\s*$", text)
    if match:
        first, last = int(match[1]), int(match[2])
        text = text[: match.start()].strip()
        if last < first:
            console.error(
                f"thread range {first}:{last} runs backwards: the first number comes first"
            )
            return
    else:
        size = gpu.block_size()
        first = gpu.number_of_thread(stop.focus.block, (0, 0, 0))
        last = first + size - 1
    if not text:
        console.error("parallel_print needs an expression, e.g. 'parallel_print temp2'")
        return
    if last - first + 1 > PARALLEL_PRINT_LIMIT:
        console.error(f"at most {PARALLEL_PRINT_LIMIT} threads at a time (threads A:B)")
        return
    home = stop.focus
    numbers, per_thread = [], []
    started = time.monotonic()
    try:
        for number in range(first, last + 1):
            block, thread = gpu.thread_of_number(number)
            try:
                gpu.switch(block, thread)
            except TargetError:
                continue  # not running (ended, or past the grid)
            numbers.append(number)
            per_thread.append(gpu.kernel_values())
    finally:
        gpu.switch(home.block, home.thread)
    if not numbers:
        console.error(f"no thread of {first}..{last} is running")
        return
    answer = gpu.evaluate("eval_many", expr=text, per_thread=per_thread)
    if not answer["ok"]:
        console.error(answer["text"])
        return
    for number, value in zip(numbers, answer["data"]["values"], strict=True):
        block, thread = gpu.thread_of_number(number)
        console.message(f"thread {number:>6} (block {_dim(block)}, thread {_dim(thread)}): {value}")
    seconds = time.monotonic() - started
    if seconds > 2:
        console.message(f"({len(numbers)} threads in {seconds:.1f} s)")


def _dim(coordinate: tuple[int, int, int]) -> str:
    """A block or thread coordinate: its x alone when y and z are 0 (1-D launches)."""
    x, y, z = coordinate
    return str(x) if y == z == 0 else f"({x},{y},{z})"


@guarded
def do_send(console: GpuConsole, arg: str) -> None:
    """send RAW
    Send RAW to cuda-gdb (a CLI command, or MI when it starts with -).
    """
    if not arg.strip():
        console.error("send needs a cuda-gdb command, e.g. 'send info cuda kernels'")
        return
    console.message(console.gpu.require_controller().send_raw(arg).rstrip("\n"))


def do_held(console: GpuConsole, arg: str) -> None:
    """hotswap / parallel_launch
    Not at a GPU stop: the program is held whole there (cuda-gdb's all-stop
    mode). Use them at the host prompt ('finish' returns to it).
    """
    console.error(
        "the program is held whole at a GPU stop: hotswap and parallel_launch run at the "
        "host prompt ('finish' returns there)"
    )
