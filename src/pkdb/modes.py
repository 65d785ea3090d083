"""Modes: where the front end sends a command, depending on where the program stopped.

A :class:`Mode` has a prompt, a :class:`~pkdb.commands.registry.CommandRouter` of the
front end's own commands, and a ``default`` for every other line. Host mode
(``(pkdb)``) sends those lines to pdb in the debuggee. A kernel mode (``(pkdb-openmp)``
...) is one more subclass: its router is built from the kernel command families in
:mod:`pkdb.commands`, its ``default`` reports an unknown command, and the front end
switches to it when the agent reports a kernel launch to debug (see
``Frontend.message_handlers``).
"""

from __future__ import annotations

import abc
import io
import pdb
import re
from typing import Any

from .commands import help as help_commands
from .commands import info, program
from .commands import settings as settings_commands
from .commands.registry import CommandRouter, Console, split_command
from .protocol import HOST_PROMPT

#: With no program running, these commands load it (silently, stopped before its first
#: line) so that pdb itself parses them: breakpoints and aliases outlive runs.
LOADING_COMMANDS = frozenset(
    {
        "b",
        "break",
        "tbreak",
        "cl",
        "clear",
        "disable",
        "enable",
        "condition",
        "ignore",
        "commands",
        "alias",
        "unalias",
        "l",
        "list",
        "ll",
        "longlist",
    }
)


def gdb_style_condition(arg: str) -> str:
    """``9 if j == 10`` (gdb's spelling, as in kernel mode) -> ``9, j == 10`` (pdb's)."""
    match = re.match(r"^(?P<where>\S+)\s+if\s+(?P<cond>.+)$", arg.strip())
    return f"{match['where']}, {match['cond']}" if match else arg


class Mode(abc.ABC):
    """How commands are read and routed in one kind of stop."""

    name: str
    title: str  # for help listings
    prompt: str
    router: CommandRouter

    def execute(self, console: Console, line: str) -> None:
        """Run one command line (already split at ``;;``)."""
        word, arg = split_command(line)
        command = self.router.lookup(word)
        if command is not None:
            command.handler(console, arg)
        else:
            self.default(console, line)

    @abc.abstractmethod
    def default(self, console: Console, line: str) -> None:
        """A line that is none of the router's commands."""

    def fallback_help(self, topic: str) -> str | None:
        """Help for what :meth:`default` handles (``""``: the list of commands)."""
        return None

    def completion_names(self) -> list[str]:
        return self.router.names()


class HostMode(Mode):
    """The program is stopped in Python code: pdb commands, plus the front end's."""

    name = "host"
    title = "pkdb"
    prompt = HOST_PROMPT

    def __init__(self) -> None:
        self.router = CommandRouter(
            [
                *program.COMMANDS,
                *info.COMMANDS,
                *settings_commands.COMMANDS,
                *help_commands.COMMANDS,
            ]
        )
        self._help_debugger: Any = None  # a HostDebugger, made for the first `help`
        self._help_output = io.StringIO()

    def default(self, console: Console, line: str) -> None:
        word, arg = split_command(line)
        if word in ("b", "break", "tbreak"):
            line = f"{word} {gdb_style_condition(arg)}".rstrip()
        elif word == "delete":  # gdb's name, as in kernel mode, for pdb's clear
            word, line = "clear", f"clear {arg}".rstrip()
        console.to_agent(line, load=word in LOADING_COMMANDS)

    def fallback_help(self, topic: str) -> str | None:
        # pdb's own help text, from a local instance that never runs anything.
        if self._help_debugger is None:
            from .agent.host_debugger import HostDebugger  # pdb's, loaded when first needed

            self._help_debugger = HostDebugger(io.StringIO(), self._help_output, readrc=False)
        self._help_output.seek(0)
        self._help_output.truncate()
        self._help_debugger.do_help(topic)
        return self._help_output.getvalue()

    def completion_names(self) -> list[str]:
        from .agent.host_debugger import HostDebugger

        pdb_names = {name[3:] for name in dir(HostDebugger) if name.startswith("do_")}
        return sorted(pdb_names.union(self.router.names()) - {"EOF"})


def _is_python(source: str) -> bool:
    try:
        compile(source, "<pkdb>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


class KernelMode(Mode):
    """The program is stopped inside a kernel: kernel commands, answered by gdb and by
    the agent's reader thread. The prompt names the space: ``(pkdb-openmp)``."""

    name = "kernel"
    title = "pkdb kernel"

    def __init__(self, space: str) -> None:
        from .commands import hotswap as hotswap_commands
        from .commands import (
            kernel_breakpoints,
            kernel_display,
            kernel_eval,
            kernel_flow,
            kernel_inspect,
            kernel_pdb,
            kernel_threads,
        )
        from .commands import parallel_launch as parallel_launch_commands

        self.space = space
        self.prompt = f"(pkdb-{space}) "
        self.router = CommandRouter(
            [
                *kernel_flow.COMMANDS,
                *kernel_inspect.COMMANDS,
                *kernel_eval.COMMANDS,
                *kernel_display.COMMANDS,
                *kernel_threads.COMMANDS,
                *kernel_breakpoints.COMMANDS,
                *hotswap_commands.COMMANDS,
                *parallel_launch_commands.COMMANDS,
                *kernel_pdb.COMMANDS,
                *[c for c in program.COMMANDS if c.name == "quit"],
                *settings_commands.COMMANDS,
                *help_commands.COMMANDS,
            ]
        )

    def default(self, console: Console, line: str) -> None:
        """As pdb: a line that is no command runs as Python (``i``, ``!x = 3``) over the
        kernel's variables, as ``eval`` does; a host-only pdb command is named as such."""
        word, _ = split_command(line)
        source = line[1:] if line.startswith("!") else line
        if line.startswith("!") or (not hasattr(pdb.Pdb, f"do_{word}") and _is_python(source)):
            from .commands.kernel_eval import do_eval

            do_eval(console, source)  # type: ignore[arg-type]
            return
        console.error(
            f"{word or line!r} is not a kernel-mode command (type 'help' for the list; "
            "'finish' returns to the host code)"
        )


class CudaKernelMode(Mode):
    """The program is held whole at a GPU kernel stop: the commands of
    :mod:`pkdb.commands.gpu`, answered by cuda-gdb and the evaluation helper."""

    name = "cuda"
    title = "pkdb GPU kernel"
    prompt = "(pkdb-cuda) "

    def __init__(self) -> None:
        from .commands import gpu

        self.router = CommandRouter(
            [
                *gpu.COMMANDS,
                *[c for c in program.COMMANDS if c.name == "quit"],
                *settings_commands.COMMANDS,
                *help_commands.COMMANDS,
            ]
        )

    def default(self, console: Console, line: str) -> None:
        """As pdb: a line that is no command runs as Python over the kernel's variables."""
        word, _ = split_command(line)
        source = line[1:] if line.startswith("!") else line
        if line.startswith("!") or (not hasattr(pdb.Pdb, f"do_{word}") and _is_python(source)):
            from .commands.gpu import do_eval

            do_eval(console, source)  # type: ignore[arg-type]
            return
        console.error(
            f"{word or line!r} is not a GPU kernel-mode command (type 'help' for the list; "
            "'finish' returns to the host code)"
        )
