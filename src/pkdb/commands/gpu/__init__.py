"""GPU kernel mode (``(pkdb-cuda)``): the commands at a stop inside a ``pk.Cuda`` kernel.

The program is held whole at a GPU stop (see :mod:`pkdb.gpu_session`): these commands
speak to cuda-gdb (variables, frames, threads, stepping) and to the evaluation helper
(Python over the live device arrays), never to the agent. What pdb must learn of
(breakpoints set or cleared here) is told once the kernel has ended.
"""

from ..registry import Command
from .breakpoints import do_break, do_clear, do_condition, do_disable, do_enable, do_tbreak
from .console import GpuConsole, guarded
from .flow import do_continue, do_finish, do_next, do_step, do_until
from .inspect import do_args, do_down, do_eval, do_locals, do_pp, do_print, do_up, do_where
from .listing import do_display, do_list, do_longlist, do_undisplay, show_changed_displays
from .threads import (
    PARALLEL_PRINT_LIMIT,
    do_cuda,
    do_held,
    do_info,
    do_parallel_print,
    do_send,
    do_thread,
    do_threads,
)

__all__ = [
    "COMMANDS",
    "PARALLEL_PRINT_LIMIT",
    "GpuConsole",
    "do_eval",
    "guarded",
    "show_changed_displays",
]

COMMANDS = [
    Command("continue", do_continue, ("c", "cont")),
    Command("next", do_next, ("n",)),
    Command("step", do_step, ("s",)),
    Command("until", do_until, ("unt",)),
    Command("finish", do_finish),
    Command("break", do_break, ("b",)),
    Command("tbreak", do_tbreak),
    Command("clear", do_clear, ("cl", "delete")),
    Command("disable", do_disable),
    Command("enable", do_enable),
    Command("condition", do_condition),
    Command("print", do_print, ("p",)),
    Command("pp", do_pp),
    Command("eval", do_eval),
    Command("locals", do_locals),
    Command("args", do_args, ("a",)),
    Command("where", do_where, ("w", "bt", "backtrace")),
    Command("up", do_up, ("u",)),
    Command("down", do_down, ("d",)),
    Command("list", do_list, ("l",)),
    Command("longlist", do_longlist, ("ll",)),
    Command("display", do_display),
    Command("undisplay", do_undisplay),
    Command("threads", do_threads),
    Command("info", do_info),
    Command("thread", do_thread),
    Command("cuda", do_cuda),
    Command("parallel_print", do_parallel_print),
    Command("send", do_send),
    Command("hotswap", do_held, ("parallel_launch",)),
]
