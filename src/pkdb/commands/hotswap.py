"""Kernel mode: ``hotswap`` (answered by the agent, over the dispatch call site's names).

In host mode the command is pdb's own (:mod:`pkdb.agent.live_commands`); both share
one rule table in the agent and one help text.
"""

from __future__ import annotations

from ..agent.hotswap import HELP
from .kernel_support import KernelConsole, guarded
from .registry import Command


@guarded
def do_hotswap(console: KernelConsole, arg: str) -> None:
    reply = console.kernel_request("hotswap", arg=arg.strip())
    (console.message if reply.ok else console.error)(reply.text)


do_hotswap.__doc__ = HELP

COMMANDS = [Command("hotswap", do_hotswap)]
