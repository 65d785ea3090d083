"""GPU kernel mode's source and displays: list, longlist, display, undisplay."""

from __future__ import annotations

from ..kernel_support import listed_range
from .breakpoints import pdb_breakpoints
from .console import GpuConsole, guarded


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
        first, last = listed_range(text, here, stop.listed)
    except ValueError:
        console.error(f"usage: list [FIRST[, LAST]] or list . (got {text!r})")
        return
    _show_lines(console, frame.file, frame.line, first, last)
    stop.listed = (*here, last)


def _show_lines(console: GpuConsole, file: str, current: int, first: int, last: int) -> None:
    import linecache

    marked = {b["line"] for b in pdb_breakpoints(console) if b["file"] == file}
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
    from ..kernel_support import enclosing_function

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
