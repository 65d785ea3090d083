"""GPU kernel mode's breakpoints: break, tbreak, clear, disable, enable, condition.

Set in cuda-gdb at once; told to pdb once the kernel has ended (see
:class:`pkdb.gpu_session.Deferred`).
"""

from __future__ import annotations

import os
from typing import Any

from ...gdbexpr import ConditionError
from ...gpu_session import Deferred
from ..kernel_support import BREAKPOINT_LOCATION
from .console import GpuConsole, guarded


def pdb_breakpoints(console: GpuConsole) -> list[dict[str, Any]]:
    return console.state.setdefault("breakpoints", [])


def _find(console: GpuConsole, number: int) -> dict[str, Any] | None:
    return next((b for b in pdb_breakpoints(console) if b["number"] == number), None)


def _set(console: GpuConsole, arg: str, temporary: bool) -> None:
    if not arg.strip():
        list_breakpoints(console)
        return
    match = BREAKPOINT_LOCATION.match(arg.strip())
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
    pdb_breakpoints(console).append(bp)
    gpu.deferred.append(
        Deferred(
            "break",
            {"file": bp["file"], "line": line, "condition": condition, "temporary": temporary},
        )  # fmt: skip
    )
    console.message(f"Breakpoint {number} at {bp['file']}:{line}")
    if problem:
        console.error(problem)


def list_breakpoints(console: GpuConsole) -> None:
    breakpoints = pdb_breakpoints(console)
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
            pdb_breakpoints(console).remove(bp)
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
