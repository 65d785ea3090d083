"""GPU kernel mode (``(pkdb-cuda)``): the commands at a stop inside a ``pk.Cuda`` kernel.

The program is held whole at a GPU stop (see :mod:`pkdb.gpu_session`): these commands
speak to cuda-gdb (variables, frames, threads, stepping) and to the evaluation helper
(Python over the live device arrays), never to the agent. What pdb must learn of
(breakpoints set or cleared here) is told once the kernel has ended.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any, Protocol

from ..gdbexpr import ConditionError
from ..gpu_session import Deferred, GpuKernelSession
from ..targets.base import TargetError
from ..targets.device import dim3
from .kernel_support import format_value, python_name
from .registry import Command, Console

_LOCATION = re.compile(r"^(?:(?P<file>[^:\s]+):)?(?P<line>\d+)\s*(?:(?:,|\bif\b)\s*(?P<cond>.+))?$")
#: Threads `parallel_print` evaluates at most (a block has up to 1024).
PARALLEL_PRINT_LIMIT = 1024


class GpuConsole(Console, Protocol):
    """The front end as GPU kernel commands see it."""

    gpu: GpuKernelSession
    kernel_displays: dict[str, str]
    state: dict[str, Any]

    def resume_gpu(self, *, stepping: bool = False) -> None:
        """Let the program run until the next GPU stop, the kernel's end, or a prompt;
        ``stepping``: a step was asked for (a stop outside Python lines steps on)."""

    def gpu_stop_text(self, event: Any) -> str:
        """``CUDA kernel breakpoint 1 hit at yax.py:18 (block 0, thread 10, j=10)``..."""


def guarded(handler):
    """Report a cuda-gdb or helper error as a command error; the session goes on."""

    def run(console: GpuConsole, arg: str) -> None:
        try:
            handler(console, arg)
        except TargetError as exc:
            console.error(str(exc))

    run.__doc__ = handler.__doc__
    run.__name__ = handler.__name__
    return run


# -- running ---------------------------------------------------------------------------


@guarded
def do_continue(console: GpuConsole, arg: str) -> None:
    """c(ont(inue))
    Let the GPU kernel run to its next breakpoint (any thread) or its end.
    """
    if arg.strip():
        console.error("on the GPU, 'continue' resumes every thread (no thread range)")
        return
    console.gpu.require_controller().continue_()
    console.resume_gpu()


@guarded
def do_next(console: GpuConsole, arg: str) -> None:
    """n(ext)
    Run the focused thread's warp to the next Python line of the kernel,
    over @pk.function calls (on to the thread's next index at the end of
    one). The other threads run too, as cuda-gdb steps a whole warp.
    """
    console.gpu.require_controller().next()
    console.resume_gpu(stepping=True)


@guarded
def do_step(console: GpuConsole, arg: str) -> None:
    """s(tep)
    Like next, but into @pk.function helpers.
    """
    console.gpu.require_controller().step()
    console.resume_gpu(stepping=True)


@guarded
def do_until(console: GpuConsole, arg: str) -> None:
    """unt(il) [LINE]
    Run until the focused thread reaches LINE (by default the next line
    after the current one: out of a loop), or the kernel ends.
    """
    gpu = console.gpu
    here = gpu.location(0)
    if here is None or not here.file or gpu.require_stop().focus is None:
        console.error("until: the focused thread is at no Python line")
        return
    try:
        line = int(arg) if arg.strip() else here.line + 1  # type: ignore[operator]
    except ValueError:
        console.error(f"until takes a line number, not {arg!r}")
        return
    condition = _this_thread(gpu)
    controller = gpu.require_controller()
    controller.insert_breakpoint(here.file, line, condition, temporary=True)
    controller.continue_()
    console.resume_gpu()


def _this_thread(gpu: GpuKernelSession) -> str:
    """A condition that holds in the focused thread only: on its index variables (the
    thread's own registers), as cuda-gdb reads blockIdx/threadIdx in a condition from
    the focus rather than from the thread that hit (seen on an H200: an `until` for
    thread 10 stopped thread 32); a team kernel's by its coordinates."""
    from pkernels.translate.emit_cpp import cpp_name

    values = gpu.index_values()
    if values:
        return " && ".join(f"{cpp_name(name)} == {value}" for name, value in values.items())
    focus = gpu.require_stop().focus
    assert focus is not None
    return (
        f"blockIdx.x == {focus.block[0]} && blockIdx.y == {focus.block[1]} && "
        f"threadIdx.x == {focus.thread[0]} && threadIdx.y == {focus.thread[1]}"
    )


@guarded
def do_finish(console: GpuConsole, arg: str) -> None:
    """finish
    Run the kernel to its end (its breakpoints are passed over in this
    launch) and stop at the host line after the dispatch.
    """
    gpu = console.gpu
    for number in list(gpu.gdb_numbers):
        gpu.remove(number)
    gpu.finishing = True
    gpu.require_controller().continue_()
    console.resume_gpu()


# -- breakpoints -----------------------------------------------------------------------


def _pdb_breakpoints(console: GpuConsole) -> list[dict[str, Any]]:
    return console.state.setdefault("breakpoints", [])


def _find(console: GpuConsole, number: int) -> dict[str, Any] | None:
    return next((b for b in _pdb_breakpoints(console) if b["number"] == number), None)


def _set(console: GpuConsole, arg: str, temporary: bool) -> None:
    if not arg.strip():
        _list(console)
        return
    match = _LOCATION.match(arg.strip())
    if match is None:
        console.error("usage: break [FILE:]LINE [if CONDITION]  (or: LINE, CONDITION)")
        return
    gpu = console.gpu
    launch = gpu.launch
    file = match["file"] or (launch.filename if launch else "")
    if match["file"] and not os.path.isabs(file):
        base = os.path.dirname(launch.filename) if launch else ""
        candidates = [file, os.path.join(base, file)]
        file = next((os.path.abspath(c) for c in candidates if os.path.exists(c)), file)
    line = int(match["line"])
    condition = match["cond"]
    try:
        gpu.c_condition(condition)
    except ConditionError as exc:
        console.error(f"{exc}; no breakpoint set")
        return
    # pdb numbers it when told, after the kernel: the number it will give.
    number = int(console.state.get("next_breakpoint") or 1)
    bp = {"number": number, "file": os.path.abspath(file), "line": line, "condition": condition,
          "temporary": temporary, "enabled": True, "ignore": 0, "hits": 0}  # fmt: skip
    problem = gpu.insert(bp)
    console.state["next_breakpoint"] = number + 1
    _pdb_breakpoints(console).append(bp)
    gpu.deferred.append(
        Deferred(
            "break",
            {"file": bp["file"], "line": line, "condition": condition, "temporary": temporary},
        )  # fmt: skip
    )
    console.message(f"Breakpoint {number} at {bp['file']}:{line}")
    if problem:
        console.error(problem)


def _list(console: GpuConsole) -> None:
    breakpoints = _pdb_breakpoints(console)
    if not breakpoints:
        console.message("No breakpoints.")
        return
    console.message("Num Type         Disp Enb   Where")
    for bp in breakpoints:
        disp = "del " if bp.get("temporary") else "keep"
        enabled = "yes" if bp.get("enabled", True) else "no "
        console.message(
            f"{bp['number']:<3} breakpoint   {disp} {enabled}   at {bp['file']}:{bp['line']}"
        )
        if bp.get("condition"):
            console.message(f"\tstop only if {bp['condition']}")


@guarded
def do_break(console: GpuConsole, arg: str) -> None:
    """b(reak) [[FILE:]LINE [if CONDITION]]
    Set a breakpoint on a kernel line (of this kernel's file unless FILE
    is given); CONDITION is Python over kernel variables, e.g.
    break 18 if j == 10 (tested on the GPU by cuda-gdb). Without argument,
    list all breakpoints.
    """
    _set(console, arg, temporary=False)


@guarded
def do_tbreak(console: GpuConsole, arg: str) -> None:
    """tbreak [FILE:]LINE [if CONDITION]
    Like break, but the breakpoint is removed when first hit.
    """
    _set(console, arg, temporary=True)


def _numbers(console: GpuConsole, arg: str) -> list[int] | None:
    try:
        numbers = [int(word) for word in arg.replace(",", " ").split()]
    except ValueError:
        console.error(f"breakpoint numbers expected, got {arg!r}")
        return None
    if not numbers:
        console.error("which breakpoint? give its number (see 'break')")
        return None
    return numbers


def _change(console: GpuConsole, arg: str, action: str, verb: str) -> None:
    numbers = _numbers(console, arg)
    if numbers is None:
        return
    gpu = console.gpu
    for number in numbers:
        bp = _find(console, number)
        if bp is None:
            console.error(f"No breakpoint numbered {number}")
            continue
        if action == "clear":
            gpu.remove(number)
            _pdb_breakpoints(console).remove(bp)
        elif action == "disable":
            gpu.remove(number)
            bp["enabled"] = False
        else:  # enable
            bp["enabled"] = True
            if number not in gpu.gdb_numbers and not gpu.finishing:
                problem = gpu.insert(bp)
                if problem:
                    console.error(problem)
        gpu.deferred.append(Deferred(action, {"number": number}))
        console.message(f"{verb} breakpoint {number} at {bp['file']}:{bp['line']}")


@guarded
def do_clear(console: GpuConsole, arg: str) -> None:
    """cl(ear) N [N ...] | delete N [N ...]
    Delete breakpoints by number.
    """
    _change(console, arg, "clear", "Deleted")


@guarded
def do_disable(console: GpuConsole, arg: str) -> None:
    """disable N [N ...]
    Disable breakpoints by number.
    """
    _change(console, arg, "disable", "Disabled")


@guarded
def do_enable(console: GpuConsole, arg: str) -> None:
    """enable N [N ...]
    Enable breakpoints by number.
    """
    _change(console, arg, "enable", "Enabled")


@guarded
def do_condition(console: GpuConsole, arg: str) -> None:
    """condition N [CONDITION]
    Stop at breakpoint N only when CONDITION holds; without CONDITION the
    breakpoint becomes unconditional.
    """
    number_text, _, condition = arg.strip().partition(" ")
    numbers = _numbers(console, number_text)
    if not numbers:
        return
    number = numbers[0]
    bp = _find(console, number)
    if bp is None:
        console.error(f"No breakpoint numbered {number}")
        return
    gpu = console.gpu
    try:
        c_condition = gpu.c_condition(condition.strip() or None)
    except ConditionError as exc:
        console.error(f"{exc}; breakpoint {number} is unchanged")
        return
    bp["condition"] = condition.strip() or None
    gdb_number = gpu.gdb_numbers.get(number)
    if gdb_number is not None:
        gpu.require_controller().set_condition(gdb_number, c_condition)
    gpu.deferred.append(Deferred("condition", {"number": number, "condition": bp["condition"]}))
    if bp["condition"]:
        console.message(f"New condition set for breakpoint {number}.")
    else:
        console.message(f"Breakpoint {number} is now unconditional.")


# -- inspecting ------------------------------------------------------------------------


def _evaluate(console: GpuConsole, expression: str, pretty: bool = False) -> None:
    gpu = console.gpu
    values = gpu.kernel_values()
    name = expression.strip()
    if not pretty and name in values and isinstance(values[name], int | float | bool):
        console.message(format_value(values[name]))  # read by cuda-gdb: no round trip
        return
    answer = gpu.evaluate("eval", expr=expression, locals=values, pretty=pretty)
    (console.message if answer["ok"] else console.error)(answer["text"])


@guarded
def do_print(console: GpuConsole, arg: str) -> None:
    """p(rint) EXPRESSION
    Evaluate Python at the GPU stop: over the kernel's variables in the
    focused thread (j, temp2, ...), its views (the program's own device
    arrays: y_view[0:8], A_view[j][0:4]) and the call site's names.
    Example: p y_view[j] * 2
    """
    if not arg.strip():
        console.error("print needs an expression, e.g. 'p y_view[j]'")
        return
    _evaluate(console, arg)


@guarded
def do_pp(console: GpuConsole, arg: str) -> None:
    """pp EXPRESSION
    Like p, with the value pretty-printed.
    """
    if not arg.strip():
        console.error("pp needs an expression, e.g. 'pp y_view[0:20]'")
        return
    _evaluate(console, arg, pretty=True)


@guarded
def do_eval(console: GpuConsole, arg: str) -> None:
    """eval EXPRESSION | eval STATEMENT
    Run Python at the GPU stop, over the live program: writes to device
    arrays land in the program's arrays, a kernel variable assigned is
    stored into the focused thread, new kernels may be dispatched (on
    pk.Cuda, on the live arrays; they run while the stopped kernel is held).
    The call site's plain values are copies here.
    """
    source = arg.strip()
    if not source:
        console.error("eval needs Python, e.g. 'eval float(y.sum())'")
        return
    gpu = console.gpu
    values = gpu.kernel_values()
    try:
        compile(source, "<pkdb>", "eval")
    except SyntaxError:
        answer = gpu.evaluate("exec", source=source, locals=values)
        if answer["text"]:
            console.message(answer["text"].rstrip("\n"))
        if not answer["ok"]:
            return
        level = gpu.frame_level(gpu.require_stop().frame) or 0
        controller = gpu.require_controller()
        for name, value in answer.get("data", {}).get("kernel_writes", {}).items():
            from pkernels.translate.emit_cpp import cpp_name

            literal = repr(int(value)) if isinstance(value, bool) else repr(value)
            controller.evaluate(f"{cpp_name(name)} = {literal}", frame=level)
        return
    answer = gpu.evaluate("eval", expr=source, locals=values)
    (console.message if answer["ok"] else console.error)(answer["text"])


def _show_values(console: GpuConsole, arguments: bool) -> None:
    gpu = console.gpu
    stop = gpu.require_stop()
    level = gpu.frame_level(stop.frame)
    if level is None:
        console.error("a host frame: 'down' to the kernel's frames")
        return
    controller = gpu.require_controller()
    raw = controller.args(frame=level) if arguments else controller.locals(frame=level)
    values = gpu.kernel_values()
    for name in raw:
        if name.startswith("pk_"):
            continue
        py_name = name[:-1] if name.endswith("_") else name
        if py_name in values:
            console.message(f"{py_name} = {format_value(values[py_name])}")
        elif gpu.launch and py_name in gpu.launch.views:
            info = gpu.launch.views[py_name]
            console.message(f"{py_name} = <device view of {info['dtype']}, shape "
                            f"{tuple(info['shape'])}>")  # fmt: skip


@guarded
def do_locals(console: GpuConsole, arg: str) -> None:
    """locals
    The focused thread's local variables in the current kernel frame.
    """
    _show_values(console, arguments=False)


@guarded
def do_args(console: GpuConsole, arg: str) -> None:
    """a(rgs)
    The arguments of the current kernel frame (views as their shape).
    """
    _show_values(console, arguments=True)


@guarded
def do_where(console: GpuConsole, arg: str) -> None:
    """w(here) | bt
    The kernel frames of the focused thread (Python lines), then the host
    frames that dispatched the kernel. The current frame is marked >.
    """
    gpu = console.gpu
    stop = gpu.require_stop()
    number = 0
    for frame in gpu.python_frames():
        marker = ">" if number == stop.frame else " "
        console.message(
            f"{marker} #{number} {frame.file}:{frame.line} ({python_name(frame.function)})"
        )
        number += 1
    for frame in gpu.host_frames():
        marker = ">" if number == stop.frame else " "
        console.message(f"{marker} #{number} {frame.file}:{frame.line} ({frame.function})")
        number += 1


def _move(console: GpuConsole, arg: str, step: int) -> None:
    gpu = console.gpu
    stop = gpu.require_stop()
    try:
        count = int(arg) if arg.strip() else 1
    except ValueError:
        console.error(f"a count expected, got {arg!r}")
        return
    total = len(gpu.python_frames()) + len(gpu.host_frames())
    target = stop.frame + step * count
    if not 0 <= target < total:
        console.error("Oldest frame" if step > 0 else "Newest frame")
        target = max(0, min(total - 1, target))
    stop.frame = target
    stop.listed = None
    frame = gpu.location(target)
    if frame is not None:
        console.message(f"> {frame.file}({frame.line}){python_name(frame.function)}()")
        source = gpu.source_line(frame)
        if source:
            console.message(f"-> {source}")


@guarded
def do_up(console: GpuConsole, arg: str) -> None:
    """u(p) [COUNT]
    Move COUNT frames outwards (towards the host code that dispatched).
    """
    _move(console, arg, 1)


@guarded
def do_down(console: GpuConsole, arg: str) -> None:
    """d(own) [COUNT]
    Move COUNT frames inwards.
    """
    _move(console, arg, -1)


@guarded
def do_list(console: GpuConsole, arg: str) -> None:
    """l(ist) [FIRST[, LAST]] | l(ist) .
    List the Python source around the current line (-> marks it, B marks
    breakpoints); again without argument, the next 11 lines.
    """
    gpu = console.gpu
    stop = gpu.require_stop()
    frame = gpu.location(stop.frame)
    if frame is None or not frame.file or not frame.line:
        console.error("no source for this frame")
        return
    text = arg.strip()
    here = (frame.file, frame.line)
    try:
        if not text and stop.listed is not None and stop.listed[:2] == here:
            first = stop.listed[2] + 1
            last = first + 10
        elif not text or text == ".":
            first = max(1, frame.line - 5)
            last = first + 10
        else:
            start, _, end = text.partition(",")
            first = int(start)
            if end.strip():
                last = int(end)
                last = first + last if last < first else last
            else:
                first, last = max(1, first - 5), max(1, first - 5) + 10
    except ValueError:
        console.error(f"usage: list [FIRST[, LAST]] or list . (got {text!r})")
        return
    _show_lines(console, frame.file, frame.line, first, last)
    stop.listed = (*here, last)


def _show_lines(console: GpuConsole, file: str, current: int, first: int, last: int) -> None:
    import linecache

    marked = {b["line"] for b in _pdb_breakpoints(console) if b["file"] == file}
    for number in range(first, last + 1):
        text = linecache.getline(file, number)
        if not text:
            break
        mark = "B" if number in marked else " "
        arrow = "->" if number == current else "  "
        console.message(f"{number:4d} {mark}{arrow}\t{text.rstrip()}")


@guarded
def do_longlist(console: GpuConsole, arg: str) -> None:
    """ll | longlist
    List the whole kernel function around the current line.
    """
    from .kernel_support import enclosing_function

    gpu = console.gpu
    frame = gpu.location(gpu.require_stop().frame)
    if frame is None or not frame.file or not frame.line:
        console.error("no source for this frame")
        return
    span = enclosing_function(frame.file, frame.line) or (frame.line, frame.line)
    _show_lines(console, frame.file, frame.line, *span)


@guarded
def do_display(console: GpuConsole, arg: str) -> None:
    """display [EXPRESSION]
    Show EXPRESSION at each GPU stop where its value changed; without
    argument, list the displays.
    """
    expression = arg.strip()
    if not expression:
        for shown, value in console.kernel_displays.items():
            console.message(f"display {shown}: {value}")
        return
    answer = console.gpu.evaluate("eval", expr=expression, locals=console.gpu.kernel_values())
    value = answer["text"] if answer["ok"] else f"** raised {answer['text']} **"
    console.kernel_displays[expression] = value
    console.message(f"display {expression}: {value}")


@guarded
def do_undisplay(console: GpuConsole, arg: str) -> None:
    """undisplay [EXPRESSION]
    Stop showing EXPRESSION (all displays without argument).
    """
    if arg.strip():
        console.kernel_displays.pop(arg.strip(), None)
    else:
        console.kernel_displays.clear()


def show_changed_displays(console: GpuConsole) -> None:
    """At a stop: the displays whose value changed."""
    if not console.kernel_displays:
        return
    values = console.gpu.kernel_values()
    for expression, old in list(console.kernel_displays.items()):
        answer = console.gpu.evaluate("eval", expr=expression, locals=values)
        value = answer["text"] if answer["ok"] else f"** raised {answer['text']} **"
        if value != old:
            console.kernel_displays[expression] = value
            console.message(f"display {expression}: {value}  [old: {old}]")


# -- threads ---------------------------------------------------------------------------


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
        _list(console)
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
    the grid (N = block * threads per block + thread); thread j=10 on the
    thread that runs index j = 10 (a team kernel: league=L, team_rank=T).
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
        first = stop.focus.block[0] * size
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
        console.message(f"thread {number:>6} (block {block[0]}, thread {thread[0]}): {value}")
    seconds = time.monotonic() - started
    if seconds > 2:
        console.message(f"({len(numbers)} threads in {seconds:.1f} s)")


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


COMMANDS = [
    Command("continue", do_continue, ("c", "cont")),
    Command("next", do_next, ("n",)),
    Command("step", do_step, ("s",)),
    Command("until", do_until, ("unt",)),
    Command("finish", do_finish),
    Command("break", do_break, ("b",)),
    Command("tbreak", do_tbreak),
    Command("clear", do_clear, ("cl", "delete")),
    Command("disable", do_disable),
    Command("enable", do_enable),
    Command("condition", do_condition),
    Command("print", do_print, ("p",)),
    Command("pp", do_pp),
    Command("eval", do_eval),
    Command("locals", do_locals),
    Command("args", do_args, ("a",)),
    Command("where", do_where, ("w", "bt", "backtrace")),
    Command("up", do_up, ("u",)),
    Command("down", do_down, ("d",)),
    Command("list", do_list, ("l",)),
    Command("longlist", do_longlist, ("ll",)),
    Command("display", do_display),
    Command("undisplay", do_undisplay),
    Command("threads", do_threads),
    Command("info", do_info),
    Command("thread", do_thread),
    Command("cuda", do_cuda),
    Command("parallel_print", do_parallel_print),
    Command("send", do_send),
    Command("hotswap", do_held, ("parallel_launch",)),
]
