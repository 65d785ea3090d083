"""Program lifecycle: ``run``, ``restart``, ``quit``."""

from __future__ import annotations

import shlex

from ..protocol import ENTRY_RUN, ENTRY_STOP
from .registry import Command, Console


def new_argv(console: Console, arg: str) -> list[str] | None:
    """The program's argv with ``arg`` as its new arguments (None: keep them).
    Raises ValueError for unbalanced quotes."""
    if not arg.strip():
        return None
    return console.argv[:1] + shlex.split(arg)


def do_run(console: Console, arg: str) -> None:
    """run [args...]
    Start the program, or let it continue.

    At a stop -- the stop before the first line included -- this is
    'continue'. When the program has ended, start it again and run
    until a breakpoint. With arguments, (re)start it with them as its
    new arguments (sys.argv[1:]) and run until a breakpoint.
    Breakpoints (numbers, conditions, commands) and aliases are kept.
    """
    try:
        argv = new_argv(console, arg)
    except ValueError as exc:
        console.error(f"Cannot run {arg}: {exc}")
        return
    if argv is None and console.program_live:
        console.to_agent("continue")
    else:
        console.start_program(ENTRY_RUN, argv)


def do_restart(console: Console, arg: str) -> None:
    """restart [args...]
    Start the program again in a fresh process and stop before its
    first line, as when the session began. Works after the program
    ended or crashed too. With arguments, they become the program's
    new arguments (sys.argv[1:]).
    Breakpoints (numbers, conditions, commands) and aliases are kept.
    """
    try:
        argv = new_argv(console, arg)
    except ValueError as exc:
        console.error(f"Cannot restart {arg}: {exc}")
        return
    shown = argv if argv is not None else console.argv
    arguments = f" with arguments: {shlex.join(shown[1:])}" if shown[1:] else ""
    console.message(f"Restarting {shown[0]}{arguments}")
    console.start_program(ENTRY_STOP, argv)


def do_quit(console: Console, arg: str) -> None:
    """q(uit) | exit
    End the debugging session. The program, if it is still running,
    is killed (with any process it started in its process group).
    """
    console.end_session()


COMMANDS = [
    Command("run", do_run),
    Command("restart", do_restart),
    Command("quit", do_quit, aliases=("q", "exit")),
]
