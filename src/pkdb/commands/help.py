"""``help``: the front end's own commands, then whatever the current mode adds."""

from __future__ import annotations

import cmd
import io

from .registry import Command, Console


def columnize(names: list[str], width: int = 80) -> str:
    """``names`` in columns, as :mod:`cmd` lists commands."""
    out = io.StringIO()
    cmd.Cmd(stdout=out).columnize(names, width - 1)
    return out.getvalue().rstrip("\n")


def do_help(console: Console, arg: str) -> None:
    """h(elp) [command]
    Without argument, list the available commands. With a command
    name, show its help. "help pdb" shows the full pdb documentation,
    "help exec" explains the ! command.
    """
    topic = arg.strip()
    mode = console.mode
    if not topic:
        listing = mode.fallback_help("")
        if listing:
            console.message(listing.strip("\n") + "\n")
        header = f"{mode.title} commands (type help <topic>):"
        console.message(header)
        console.message("=" * len(header))
        console.message(columnize([c.name for c in mode.router.commands()]))
        return
    command = mode.router.lookup(topic)
    if command is not None:
        console.message(command.help)
        return
    text = mode.fallback_help(topic)
    if text:
        console.message(text.rstrip("\n"))
    else:
        console.error(f"No help for {topic!r}")


COMMANDS = [Command("help", do_help, aliases=("h",))]
