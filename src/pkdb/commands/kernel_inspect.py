"""Kernel mode: p/print, pp, whatis, locals, args, bt/where, l/list, ll/longlist,
up/down."""

from __future__ import annotations

import linecache
import os

from .. import subviews
from ..kernel_session import cpp_name
from ..stop_lines import location_line
from ..targets.base import FrameInfo
from .kernel_support import (
    KernelConsole,
    enclosing_function,
    format_value,
    guarded,
    kernel_values,
    listed_range,
    pool_argument,
    show_frames,
    shown_name,
)
from .registry import Command


@guarded
def do_print(console: KernelConsole, arg: str) -> None:
    """p(rint) EXPRESSION
    Evaluate a Python expression at the kernel stop: over the kernel's
    variables in the current thread (j, temp2, ...), its views (the
    program's own arrays: y_view[j:j+2], A_view[3][0:4], len(x_view)),
    and the call site's names. Example: p y_view[j] * 2
    """
    _evaluate_and_show(console, arg, "print needs an expression, e.g. 'p y_view[j]'")


@guarded
def do_pp(console: KernelConsole, arg: str) -> None:
    """pp EXPRESSION
    Like p, with the value pretty-printed (pprint): long lists, dicts and
    nested values one item a line.
    """
    _evaluate_and_show(console, arg, "pp needs an expression, e.g. 'pp y_view[0:20]'", True)


@guarded
def do_whatis(console: KernelConsole, arg: str) -> None:
    """whatis EXPRESSION
    The type of EXPRESSION. A kernel variable shows the type the compiled
    kernel holds it in (float64, float32, int64, int32, ...: a float32
    local rounds at every assignment), a view its dtype and shape; any
    other expression the Python type of its value, as pdb shows it.
    """
    expression = arg.strip()
    if not expression:
        console.error("whatis needs an expression, e.g. 'whatis temp2'")
        return
    kernel = console.kernel
    views = kernel.launch.views if kernel.launch else {}
    if expression in views:
        info = views[expression]
        console.message(f"view of {info['dtype']}, shape {tuple(info['shape'])}")
        return
    stop = kernel.require_stop()
    level = kernel.frame_level(stop.thread, stop.frame)
    ctype = kernel.require_controller().variable_types(stop.thread, level).get(cpp_name(expression))
    if ctype:
        console.message(f"{kernel_type(ctype)} (a kernel variable; C++ {ctype})")
        return
    _evaluate_and_show(console, f"type({expression})", "")


def kernel_type(ctype: str) -> str:
    """``const double &`` -> ``float64`` (the C++ types the generated code declares, as
    gdb names them); a classtype's struct keeps its name."""
    from pkernels.api.types import ALL_TYPES

    bare = ctype.replace("const ", "").replace("&", "").strip()
    by_ctype = {dtype.ctype: dtype.name for dtype in ALL_TYPES}
    return by_ctype.get(bare, bare.removeprefix("pk_kernel::"))


def _evaluate_and_show(console: KernelConsole, arg: str, usage: str, pretty: bool = False) -> None:
    expression = arg.strip()
    if not expression:
        console.error(usage)
        return
    values = kernel_values(console)
    reply = console.kernel_request("eval", expr=expression, locals=values, pretty=pretty)
    if reply.ok:
        console.message(reply.text)
    else:
        console.error(reply.text)


@guarded
def do_locals(console: KernelConsole, arg: str) -> None:
    """locals
    Show the local variables of the current kernel frame.
    """
    kernel = console.kernel
    stop = kernel.require_stop()
    if kernel.host_frame_index(stop.thread, stop.frame) is not None:
        _host_names(console, "locals")
        return
    level = kernel.frame_level(stop.thread, stop.frame)
    names = kernel.require_controller().locals(stop.thread, level)
    values = kernel_values(console)
    shown = [n for n in names if not n.startswith("pk_")]
    # Subviews (`row = A[j, 1:]`) live in hidden locals: shown as the part of the view.
    shown += [n for n, v in values.items() if subviews.is_encoded(v) and n not in shown]
    if not shown:
        console.message("(no locals)")
    for name in shown:
        value = values.get(name)
        text = format_value(value) if value is not None else names[name]
        console.message(f"{shown_name(kernel.launch, name)} = {text}")


@guarded
def do_args(console: KernelConsole, arg: str) -> None:
    """a(rgs)
    Show the arguments of the current kernel frame; views are shown by
    shape and dtype.
    """
    kernel = console.kernel
    stop = kernel.require_stop()
    if kernel.host_frame_index(stop.thread, stop.frame) is not None:
        _host_names(console, "args")
        return
    level = kernel.frame_level(stop.thread, stop.frame)
    raw = kernel.require_controller().args(stop.thread, level)
    values = kernel_values(console)
    views = kernel.launch.views if kernel.launch else {}
    for name, text in raw.items():
        pool = pool_argument(kernel.launch, name, text)
        shown = shown_name(kernel.launch, name)
        if name in views:
            info = views[name]
            console.message(f"{shown} = view(shape={tuple(info['shape'])}, dtype={info['dtype']})")
        elif pool is not None:
            console.message(f"{shown} = {pool}")
        else:
            console.message(f"{shown} = {format_value(values.get(name, text))}")


def _host_names(console: KernelConsole, which: str) -> None:
    """``locals`` / ``args`` of a host frame (``up`` past the kernel), as pdb shows them."""
    reply = console.kernel_request("frame_names", which=which, locals=kernel_values(console))
    if not reply.ok:
        console.error(reply.text)
        return
    pairs = reply.data.get("pairs", [])
    for name, text in pairs:
        console.message(f"{name} = {text}")
    if not pairs:
        console.message(f"(no {which})")


@guarded
def do_where(console: KernelConsole, arg: str) -> None:
    """w(here) | bt
    Show the kernel frames of the current thread (Python lines), then the
    host frames that dispatched the kernel. The current frame is marked >.
    """
    kernel = console.kernel
    stop = kernel.require_stop()
    show_frames(console, kernel.python_frames(stop.thread), kernel.host_frames(), stop.frame)


@guarded
def do_list(console: KernelConsole, arg: str) -> None:
    """l(ist) [FIRST[, LAST]] | l(ist) .
    List the Python source around the current kernel line (-> marks it,
    B marks breakpoints); again without argument, the next 11 lines. With
    FIRST, 11 lines around it; with FIRST, LAST, that range (a LAST below
    FIRST is a count). 'list .' lists around the current line again.
    """
    frame = _source_frame(console)
    if frame is None:
        return
    stop = console.kernel.require_stop()
    here = (frame.file or "", frame.line)
    text = arg.strip()
    try:
        first, last = listed_range(text, here, stop.listed)
    except ValueError:
        console.error(f"usage: list [FIRST[, LAST]] or list . (got {text!r})")
        return
    _show_lines(console, frame, first, last)
    stop.listed = (*here, last)


@guarded
def do_longlist(console: KernelConsole, arg: str) -> None:
    """ll | longlist
    List the whole source of the current kernel function (the workunit, or
    the @pk.function helper the frame is in); -> marks the current line, B
    the breakpoints.
    """
    frame = _source_frame(console)
    if frame is None:
        return
    span = enclosing_function(frame.file, frame.line)
    if span is None:
        console.error(f"no function around {frame.file}:{frame.line}")
        return
    _show_lines(console, frame, *span)


def _source_frame(console: KernelConsole) -> FrameInfo | None:
    kernel = console.kernel
    stop = kernel.require_stop()
    frame = kernel.location(stop.thread, stop.frame)
    if frame is None or not frame.file:
        console.error("no Python source for this frame")
        return None
    return frame


def _show_lines(console: KernelConsole, frame: FrameInfo, first: int, last: int) -> None:
    """Lines ``first..last`` of the frame's file, as pdb lists them."""
    kernel = console.kernel
    breakpoint_lines = {
        bp["line"]
        for bp in (kernel.launch.breakpoints if kernel.launch else [])
        if os.path.abspath(bp["file"]) == os.path.abspath(frame.file)
    }
    for line in range(first, last + 1):
        text = linecache.getline(frame.file, line)
        if not text:
            console.message("[EOF]")  # as pdb says past the end of the file
            break
        mark = "B" if line in breakpoint_lines else " "
        arrow = "->" if line == frame.line else "  "
        console.message(f"{line:4d} {mark}{arrow} {text.rstrip()}")


def _move(console: KernelConsole, arg: str, direction: int) -> None:
    """pdb's ``up``/``down``: ``count`` frames (1 by default) towards the oldest
    (``direction`` 1) or newest (-1) frame, no further than the end of the stack; a
    negative count goes all the way; at that end already, pdb's error."""
    kernel = console.kernel
    stop = kernel.require_stop()
    frames = [*kernel.python_frames(stop.thread), *kernel.host_frames()]
    end = len(frames) - 1 if direction > 0 else 0
    if stop.frame == end or not frames:
        console.error("Oldest frame" if direction > 0 else "Newest frame")
        return
    try:
        count = int(arg.strip() or "1")
    except ValueError:
        console.error(f"Invalid frame count ({arg.strip()})")
        return
    target = end if count < 0 else stop.frame + direction * count
    target = max(0, min(len(frames) - 1, target))
    stop.frame = target
    frame = frames[target]
    text = linecache.getline(frame.file or "", frame.line).strip()
    console.message(location_line(frame))  # pdb's form: editors following pdb follow it
    if text:
        console.message(f"-> {text}")


@guarded
def do_up(console: KernelConsole, arg: str) -> None:
    """u(p) [count]
    Move count (default one) frames older: from a @pk.function helper to
    the kernel that called it, then past the kernel to the host frames of
    the dispatch (its call site first); no further than the oldest (a
    negative count goes there). p, locals, args, list and next then work in
    that frame.
    """
    _move(console, arg, +1)


@guarded
def do_down(console: KernelConsole, arg: str) -> None:
    """d(own) [count]
    Move count (default one) frames newer, back towards where the thread
    stopped; no further than the newest (a negative count goes there).
    """
    _move(console, arg, -1)


COMMANDS = [
    Command("print", do_print, aliases=("p",)),
    Command("pp", do_pp),
    Command("whatis", do_whatis),
    Command("locals", do_locals),
    Command("args", do_args, aliases=("a",)),
    Command("where", do_where, aliases=("w", "bt", "backtrace")),
    Command("list", do_list, aliases=("l",)),
    Command("longlist", do_longlist, aliases=("ll",)),
    Command("up", do_up, aliases=("u",)),
    Command("down", do_down, aliases=("d",)),
]
