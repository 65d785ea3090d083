"""Kernel mode: break/tbreak, clear/delete, disable/enable, condition, ignore, info breakpoints.

They are pdb's breakpoints (the agent sets them, so numbers are shared with host
breakpoints) mirrored into gdb for the running kernel.
"""

from __future__ import annotations

import os

from ..gdbexpr import ConditionError
from ..targets.base import TargetError
from .kernel_support import BREAKPOINT_LOCATION, KernelConsole, guarded
from .registry import Command


def _set(console: KernelConsole, arg: str, temporary: bool) -> None:
    kernel = console.kernel
    if not arg.strip():
        _list(console)
        return
    match = BREAKPOINT_LOCATION.match(arg.strip())
    if match is None:
        console.error("usage: break [FILE:]LINE [if CONDITION]  (or: LINE, CONDITION)")
        return
    launch = kernel.launch
    file = match["file"] or (launch.filename if launch else "")
    if match["file"] and not os.path.isabs(file):
        candidates = (
            [file, os.path.join(os.path.dirname(launch.filename), file)] if launch else [file]
        )
        file = next((os.path.abspath(c) for c in candidates if os.path.exists(c)), file)
    line = _line_number(match["line"])
    if line is None:
        console.error(f"End of file: {file} has no line {_abbreviated(match['line'])}")
        return
    reply = console.kernel_request(
        "break", file=file, line=line, condition=match["cond"], temporary=temporary
    )
    if not reply.ok:
        console.error(reply.text)
        return
    bp = reply.data
    problem = kernel.insert(bp)
    console.message(f"Breakpoint {bp['number']} at {bp['file']}:{bp['line']}")  # as pdb says
    if problem:
        console.error(problem)


def _list(console: KernelConsole) -> None:
    breakpoints = console.state.get("breakpoints", [])  # type: ignore[attr-defined]
    if not breakpoints:
        console.message("No breakpoints.")
        return
    console.message("Num Type         Disp Enb   Where")
    try:  # gdb uses ignore counts up as threads pass: its count is the current one
        left = console.kernel.ignore_counts()
    except TargetError:
        left = {}
    for bp in breakpoints:
        bp = {**bp, "ignore": left.get(bp["number"], bp.get("ignore", 0))}
        disp = "del " if bp.get("temporary") else "keep"
        enabled = "yes" if bp.get("enabled", True) else "no "
        console.message(
            f"{bp['number']:<3} breakpoint   {disp} {enabled}   at {bp['file']}:{bp['line']}"
        )
        if bp.get("condition"):
            console.message(f"\tstop only if {bp['condition']}")
        if bp.get("ignore"):
            console.message(f"\tignore next {bp['ignore']} hits")
        if bp.get("hits"):
            console.message(f"\tbreakpoint already hit {bp['hits']} time{'s' * (bp['hits'] > 1)}")


@guarded
def do_break(console: KernelConsole, arg: str) -> None:
    """b(reak) [[FILE:]LINE [if CONDITION]]
    Set a breakpoint on a kernel line (of this kernel's file unless FILE
    is given). CONDITION is Python over kernel variables and views, e.g.
    break 9 if j == 10. Without argument, list all breakpoints.
    """
    _set(console, arg, temporary=False)


@guarded
def do_tbreak(console: KernelConsole, arg: str) -> None:
    """tbreak [FILE:]LINE [if CONDITION]
    Like break, but the breakpoint is removed when first hit.
    """
    _set(console, arg, temporary=True)


def _numbers(console: KernelConsole, arg: str) -> list[int] | None:
    """Breakpoint numbers, or those of the breakpoints at a ``[FILE:]LINE``."""
    location = BREAKPOINT_LOCATION.match(arg.strip())
    if location is not None and location["file"] and location["cond"] is None:
        line = _line_number(location["line"])
        if line is None:
            console.error(f"no breakpoint at {location['file']}:{_abbreviated(location['line'])}")
            return None
        return _at(console, location["file"], line)
    try:
        numbers = [int(word) for word in arg.split()]
    except ValueError:
        console.error(f"breakpoint numbers expected, or FILE:LINE, got {_abbreviated(arg)!r}")
        return None
    if not numbers:
        console.error("which breakpoint? give its number (see 'break')")
        return None
    below_one = [n for n in numbers if n < 1]
    if below_one:  # pdb takes -1 as Python's last item: `enable -1` set a second copy
        console.error(f"Breakpoint number {below_one[0]} out of range")
        return None
    return numbers


def _line_number(text: str) -> int | None:
    """A line number as typed (digits); None when it has more digits than any file has
    lines (int() refuses over 4300 digits)."""
    return int(text) if len(text) <= 9 else None


def _at(console: KernelConsole, file: str, line: int) -> list[int] | None:
    """The numbers of the breakpoints at ``file:line`` (a name relative to the kernel's
    directory, or a base name, will do)."""
    found = [
        bp["number"]
        for bp in console.state.get("breakpoints", [])  # type: ignore[attr-defined]
        if bp["line"] == line
        and (bp["file"] == file or os.path.basename(bp["file"]) == os.path.basename(file))
    ]
    if not found:
        console.error(f"no breakpoint at {file}:{line}")
        return None
    return found


def _each(console: KernelConsole, arg: str, action: str, verb: str) -> None:
    for number in _numbers(console, arg) or []:
        reply = console.kernel_request(action, number=number)
        if not reply.ok:
            console.error(reply.text)
            continue
        kernel = console.kernel
        gdb_number = kernel.gdb_numbers.get(number)
        if action == "clear":
            kernel.remove(number)
        elif gdb_number is None and action == "enable":
            # Disabled when the launch began, so never set in gdb: set it now.
            problem = kernel.insert(reply.data)
            if problem:
                console.error(problem)
        elif gdb_number is not None:
            controller = kernel.require_controller()
            (
                controller.disable_breakpoint
                if action == "disable"
                else controller.enable_breakpoint
            )(gdb_number)
        console.message(f"{verb} breakpoint {number}")


@guarded
def do_clear(console: KernelConsole, arg: str) -> None:
    """cl(ear) [N ...] | delete [N ...]
    Delete breakpoints by number (host or kernel breakpoints alike).
    Without argument, delete all breakpoints, after asking, as pdb does.
    """
    if not arg.strip():
        numbers = [bp["number"] for bp in console.state.get("breakpoints", [])]  # type: ignore[attr-defined]
        answer = console.read_answer("Clear all breaks? ")
        if numbers and (answer or "").strip().lower() in ("y", "yes"):
            arg = " ".join(map(str, numbers))
        else:
            return
    _each(console, arg, "clear", "Deleted")


@guarded
def do_disable(console: KernelConsole, arg: str) -> None:
    """disable N [N ...]
    Disable breakpoints by number; they stay listed and can be enabled.
    """
    _each(console, arg, "disable", "Disabled")


@guarded
def do_enable(console: KernelConsole, arg: str) -> None:
    """enable N [N ...]
    Enable breakpoints by number.
    """
    _each(console, arg, "enable", "Enabled")


@guarded
def do_condition(console: KernelConsole, arg: str) -> None:
    """condition N [CONDITION]
    Stop at breakpoint N only when the Python CONDITION holds (over kernel
    variables and views); without CONDITION the breakpoint becomes
    unconditional.
    """
    number_text, _, condition = arg.strip().partition(" ")
    numbers = _numbers(console, number_text)
    if not numbers:
        return
    number = numbers[0]
    known = {bp["number"] for bp in console.state.get("breakpoints", [])}  # type: ignore[attr-defined]
    if number not in known:  # pdb's word on it, not "unchanged", which says it exists
        reply = console.kernel_request("condition", number=number, condition=None)
        console.error(reply.text if not reply.ok else f"no breakpoint {number}")
        return
    kernel = console.kernel
    try:  # checked before anything changes: gdb evaluates it as C
        c_condition = kernel.c_condition(condition.strip())
    except ConditionError as exc:
        console.error(f"{exc}; breakpoint {number} is unchanged")
        return
    reply = console.kernel_request("condition", number=number, condition=condition.strip() or None)
    if not reply.ok:
        console.error(reply.text)
        return
    gdb_number = kernel.gdb_numbers.get(number)
    if gdb_number is not None:
        controller = kernel.require_controller()
        try:
            controller.set_condition(gdb_number, c_condition)
        except TargetError as exc:
            # As when the kernel starts (KernelSession.insert): pdb keeps the condition,
            # gdb stops there unconditionally, and the user is told.
            controller.set_condition(gdb_number, None)
            console.error(
                f"breakpoint {number}: the condition {condition.strip()!r} cannot be "
                f"evaluated in this kernel ({exc}); it stops unconditionally"
            )
            return
    if condition.strip():
        console.message(f"New condition set for breakpoint {number}.")
    else:
        console.message(f"Breakpoint {number} is now unconditional.")


@guarded
def do_ignore(console: KernelConsole, arg: str) -> None:
    """ignore N [COUNT]
    Let breakpoint N pass its next COUNT hits (0 or none: stop at the next
    one), counted over every kernel thread that reaches it with its
    condition true.
    """
    words = arg.split()
    numbers = _numbers(console, words[0] if words else "")
    if not numbers:
        return
    try:
        count = int(words[1]) if len(words) > 1 else 0
    except ValueError:
        console.error(f"the count must be a number, got {words[1]!r}")
        return
    number = numbers[0]
    reply = console.kernel_request("ignore", number=number, count=count)
    if not reply.ok:
        console.error(reply.text)
        return
    gdb_number = console.kernel.gdb_numbers.get(number)
    if gdb_number is not None:
        console.kernel.require_controller().set_ignore_count(gdb_number, max(0, count))
    if count > 0:
        console.message(
            f"Will ignore next {count} crossing{'s' * (count > 1)} of breakpoint {number}."
        )
    else:
        console.message(f"Will stop next time breakpoint {number} is reached.")


@guarded
def do_info(console: KernelConsole, arg: str) -> None:
    """info breakpoints | info threads
    List the breakpoints (host and kernel), or the kernel's threads (as
    'threads').
    """
    subject = arg.strip()
    if subject in ("b", "break", "breakpoint", "breakpoints"):
        _list(console)
    elif subject in ("thread", "threads"):
        from .kernel_threads import do_threads

        do_threads(console, "")
    elif subject in ("locals", "args"):  # gdb's names for pdb's locals / args
        from . import kernel_inspect

        (kernel_inspect.do_locals if subject == "locals" else kernel_inspect.do_args)(console, "")
    else:
        console.error("Try: info breakpoints, info threads, info locals, info args")


COMMANDS = [
    Command("break", do_break, aliases=("b",)),
    Command("tbreak", do_tbreak),
    Command("clear", do_clear, aliases=("cl", "delete")),
    Command("disable", do_disable),
    Command("enable", do_enable),
    Command("condition", do_condition),
    Command("ignore", do_ignore),
    Command("info", do_info),
]


def _abbreviated(text: str, keep: int = 40) -> str:
    """``text`` for an error message: a 5,000-digit number is shown by its head."""
    return text if len(text) <= keep else f"{text[:keep]}... ({len(text)} characters)"
