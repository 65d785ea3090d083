"""Kernel mode: display / undisplay -- expressions shown at each kernel stop where their
value changed, as pdb's display does in Python frames."""

from __future__ import annotations

from ..targets.base import TargetError
from .kernel_support import KernelConsole, guarded, kernel_values
from .registry import Command


@guarded
def do_display(console: KernelConsole, arg: str) -> None:
    """display [EXPRESSION]
    Show EXPRESSION's value now, and again at every later kernel stop
    (breakpoint, step, next) where it changed, evaluated in the thread
    that stopped. Without an argument, list the expressions with their
    values now. Example: display temp2
    """
    expression = arg.strip()
    displays = console.kernel_displays
    if not expression:
        if not displays:
            console.message("No expressions are displayed ('display EXPRESSION' adds one).")
            return
        console.message("Currently displaying:")
        for shown in displays:
            console.message(f"{shown}: {_value_text(console, shown)}")
        return
    displays[expression] = _value_text(console, expression)
    console.message(f"display {expression}: {displays[expression]}")


def do_undisplay(console: KernelConsole, arg: str) -> None:
    """undisplay [EXPRESSION]
    Stop displaying EXPRESSION at kernel stops; without an argument, stop
    displaying every expression.
    """
    expression = arg.strip()
    displays = console.kernel_displays
    if not expression:
        displays.clear()
    elif expression in displays:
        del displays[expression]
    else:
        console.error(f"not displaying {expression!r} ('display' lists what is displayed)")


def show_changed(console: KernelConsole) -> None:
    """After a kernel stop: each displayed expression whose value changed, pdb's way
    (``display temp2: 3.0  [old: 1.0]``)."""
    for expression, old in list(console.kernel_displays.items()):
        try:
            new = _value_text(console, expression)
        except TargetError as exc:
            new = f"** {exc} **"
        if new != old:
            console.kernel_displays[expression] = new
            console.message(f"display {expression}: {new}  [old: {old}]")


def _value_text(console: KernelConsole, expression: str) -> str:
    reply = console.kernel_request("eval", expr=expression, locals=kernel_values(console))
    return reply.text if reply.ok else f"** raised {reply.text} **"


COMMANDS = [
    Command("display", do_display),
    Command("undisplay", do_undisplay),
]
