"""Kernel mode: ``parallel_launch`` (run by the agent's reader thread while the
program's kernel is held; names are those of the dispatch call site, the kernel's
views, and the selected thread's kernel locals)."""

from __future__ import annotations

from ..agent.parallel_launch import HELP
from .kernel_support import KernelConsole, guarded, kernel_values
from .registry import Command


@guarded
def do_parallel_launch(console: KernelConsole, arg: str) -> None:
    reply = console.kernel_request(
        "parallel_launch", arg=arg.strip(), locals=kernel_values(console)
    )
    (console.message if reply.ok else console.error)(reply.text)


do_parallel_launch.__doc__ = HELP

COMMANDS = [Command("parallel_launch", do_parallel_launch)]
