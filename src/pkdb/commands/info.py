"""``info SUBJECT`` (gdb style) for what pdb shows under other names."""

from __future__ import annotations

from .registry import Command, Console

#: Subcommand (and its abbreviations) → the host debugger command that shows it.
_SUBJECTS = {
    "breakpoints": "break",
    "breakpoint": "break",
    "break": "break",
    "b": "break",
    "display": "display",
}


def do_info(console: Console, arg: str) -> None:
    """info breakpoints | info display
    info breakpoints (or: info b) lists the breakpoints, like 'break'
    without arguments: number, temporary or not, enabled or not,
    location, condition, ignore count and hits. info display lists the
    display expressions of the current frame, like 'display'.
    """
    subject = arg.strip()
    command = _SUBJECTS.get(subject)
    if command is None:
        known = "breakpoints, display"
        what = f"Undefined info command: {subject!r}." if subject else "Info what?"
        console.error(f"{what} Try one of: {known}.")
        return
    # Breakpoints outlive the program; displays belong to the frames of a live one.
    console.to_agent(command, load=command == "break")


COMMANDS = [Command("info", do_info)]
