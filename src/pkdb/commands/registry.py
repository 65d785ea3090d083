"""Commands, the router that finds them, and what a command may ask of the front end."""

from __future__ import annotations

import inspect
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..modes import Mode
    from ..settings import Settings

_IDENTCHARS = frozenset(string.ascii_letters + string.digits + "_")


class Console(Protocol):
    """The front end as command handlers see it."""

    settings: Settings
    mode: Mode
    argv: list[str]

    @property
    def program_live(self) -> bool:
        """A debuggee exists and waits at its command prompt."""

    def message(self, text: str) -> None:
        """Print a line."""

    def error(self, text: str) -> None:
        """Print a line as an error (``*** ...``)."""

    def to_agent(self, line: str, *, load: bool = False) -> None:
        """Run ``line`` in the host debugger. With ``load`` and no program, load the
        program first (stopped before its first line, silently)."""

    def start_program(self, entry: str, argv: list[str] | None = None) -> None:
        """(Re)start the program in a fresh process."""

    def end_session(self) -> None:
        """Kill the program, if any, and leave the REPL."""

    def settings_changed(self) -> None:
        """Tell the debuggee about new setting values."""


Handler = Callable[[Any, str], None]


@dataclass(frozen=True)
class Command:
    """A front-end command: its name, aliases and handler ``(console, arg)``."""

    name: str
    handler: Handler
    aliases: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @property
    def help(self) -> str:
        """The handler's docstring, which is the command's help text."""
        return inspect.cleandoc(self.handler.__doc__ or f"{self.name}: no help")


class CommandRouter:
    """Finds the command for a command word (exact names and aliases, as pdb does)."""

    def __init__(self, commands: Iterable[Command] = ()) -> None:
        self._by_name: dict[str, Command] = {}
        self._commands: list[Command] = []
        for command in commands:
            self.add(command)

    def add(self, command: Command) -> None:
        for name in command.names:
            if name in self._by_name:
                raise ValueError(f"command {name!r} defined twice")
        for name in command.names:
            self._by_name[name] = command
        self._commands.append(command)

    def lookup(self, name: str | None) -> Command | None:
        return self._by_name.get(name) if name else None

    def commands(self) -> list[Command]:
        return sorted(self._commands, key=lambda c: c.name)

    def names(self) -> list[str]:
        return sorted(self._by_name)


def split_command(line: str) -> tuple[str, str]:
    """``(command word, argument)`` the way :meth:`cmd.Cmd.parseline` splits a line
    (``?x`` is ``help x``). The word is empty when the line starts with another
    character (``!stmt``, ``x=1``...)."""
    line = line.strip()
    if line.startswith("?"):
        return "help", line[1:].strip()
    end = 0
    while end < len(line) and line[end] in _IDENTCHARS:
        end += 1
    return line[:end], line[end:].strip()


def split_commands(line: str) -> tuple[str, str | None]:
    """Split off what follows the first ``;;`` (pdb's separator), except in ``alias``
    definitions, which may contain it. Returns ``(first, rest or None)``."""
    if split_command(line)[0] == "alias":
        return line, None
    marker = line.find(";;")
    if marker < 0:
        return line, None
    return line[:marker].rstrip(), line[marker + 2 :].lstrip()


def expand_alias(line: str, aliases: dict[str, str]) -> str:
    """pdb's alias expansion (Pdb.precmd): ``%1``.. are the arguments, ``%*`` all of them;
    the result is expanded again while its first word is an alias (once per alias: a
    self-referencing one would loop forever in pdb)."""
    args = line.split()
    seen: set[str] = set()
    while args and args[0] in aliases and args[0] not in seen:
        seen.add(args[0])
        line = aliases[args[0]]
        for number, arg in enumerate(args[1:], start=1):
            line = line.replace(f"%{number}", arg)
        line = line.replace("%*", " ".join(args[1:]))
        args = line.split()
    return line
