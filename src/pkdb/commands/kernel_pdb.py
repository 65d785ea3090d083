"""Kernel mode: the rest of pdb's commands, as pdb users type them at a kernel stop.

``run``/``restart`` (the program starts again), ``jump``, ``retval``, ``interact``,
``source``, ``alias``/``unalias`` and ``commands``.
"""

from __future__ import annotations

import ast
import codeop
import linecache

from ..protocol import ENTRY_RUN
from . import program
from .kernel_eval import run_python
from .kernel_support import KernelConsole, enclosing_function, guarded
from .registry import Command

#: How long `jump` waits for the thread to stop at the line it jumped to.
_JUMP_SECONDS = 2.0


def do_run(console: KernelConsole, arg: str) -> None:
    """run [args...]
    End this run of the program (the kernel with it) and start it again
    in a fresh process, running until a breakpoint (pdb's run restarts the
    program too). With arguments, they become its new sys.argv[1:].
    Breakpoints (numbers, conditions, commands) and aliases are kept.
    """
    try:
        argv = program.new_argv(console, arg)
    except ValueError as exc:
        console.error(f"Cannot run {arg}: {exc}")
        return
    shown = argv if argv is not None else console.argv
    console.message(f"Restarting {shown[0]} (the kernel's run ends)")
    console.start_program(ENTRY_RUN, argv)


def do_restart(console: KernelConsole, arg: str) -> None:
    """restart [args...]
    End this run of the program (the kernel with it) and start it again
    in a fresh process, stopped before its first line. With arguments,
    they become its new sys.argv[1:]. Breakpoints and aliases are kept.
    """
    program.do_restart(console, arg)


@guarded
def do_jump(console: KernelConsole, arg: str) -> None:
    """j(ump) LINENO
    Set the next line the current thread runs, in the kernel function it
    is in (the others stay held); as in pdb, not into a loop from outside
    it. The lines skipped do not run; a line run again runs again.
    """
    kernel = console.kernel
    stop = kernel.require_stop()
    try:
        target = int(arg.strip())
    except ValueError:
        console.error("The 'jump' command requires a line number")
        return
    if stop.frame != 0:
        console.error("You can only jump within the bottom frame")  # pdb's words
        return
    if kernel.launch is not None and kernel.launch.crash_signal:
        console.error("this stop is in the kernel's release build, which cannot jump")
        return
    here = kernel.location(stop.thread, 0)
    if here is None or not here.file or not here.line:
        console.error("no Python line here to jump from")
        return
    problem = _jump_problem(here.file, here.line, target)
    if problem is not None:
        console.error(f"Jump failed: {problem}")
        return
    controller = kernel.require_controller()
    address = _line_address(console, here.file, target, here.function)
    if address is None:
        console.error(f"Jump failed: no code of line {target} in this function")
        return
    # gdb's jump resumes the thread at the line; a breakpoint of its own there (for
    # this thread, temporary) stops it again at once, as pdb's jump leaves it stopped.
    location = f"*{address:#x}"
    controller.set_thread_breakpoint(location, stop.thread, temporary=True)
    controller.jump(stop.thread, location)
    event = controller.wait_for_stop(timeout=_JUMP_SECONDS, thread_id=stop.thread)
    if event is None:
        controller.interrupt([stop.thread])
        event = controller.wait_for_stop(timeout=_JUMP_SECONDS, thread_id=stop.thread)
    if event is None or event.exited:
        console.error("the thread did not stop after the jump")
        return
    stop.event = event
    stop.frame = 0
    console.report_kernel_stop(event)


def _line_address(console: KernelConsole, file: str, line: int, function: str | None) -> int | None:
    """The address of ``file:line``'s code in ``function`` (the line may have code in
    other functions too: the release build's, a launcher's)."""
    controller = console.kernel.require_controller()
    probe = controller.insert_breakpoint(file, line)  # where gdb puts the line's code
    try:
        for _, address in probe.addresses:
            symbol = controller.function_at(address) or ""
            if function and symbol.split("(")[0] == function.split("(")[0]:
                return address
    finally:
        controller.delete_breakpoint(probe.number)
    return None


def _jump_problem(file: str, line: int, target: int) -> str | None:
    """Why pdb would refuse to jump from ``line`` to ``target`` (None: it would not):
    outside the function, a line without code, into a loop from outside it."""
    span = enclosing_function(file, line)
    if span is None or not span[0] < target <= span[1]:
        return f"line {target} is not in the function around line {line}"
    text = linecache.getline(file, target).strip()
    if not text or text.startswith("#"):
        return f"line {target} has no code"
    try:
        tree = ast.parse("".join(linecache.getlines(file)))
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.For | ast.While):
            end = node.end_lineno or node.lineno
            if node.lineno < target <= end and not node.lineno < line <= end:
                return f"line {target} is inside a loop that line {line} is not in"
    return None


@guarded
def do_retval(console: KernelConsole, arg: str) -> None:
    """retval | rv
    Print the value the last 'return' of a @pk.function helper gave, at
    the stop it left the thread at.
    """
    stop = console.kernel.require_stop()
    if stop.returned is None or stop.returned[0] is not stop.event:
        console.error("Not yet returned!")  # pdb's words
        return
    console.message(stop.returned[1])


@guarded
def do_interact(console: KernelConsole, arg: str) -> None:
    """interact
    Start an interactive Python interpreter over what 'eval' sees: the
    kernel's variables in the current thread, its views (the program's own
    arrays) and the call site's names. Statements act as 'eval' does
    (array writes land in the arrays). Ctrl-D (end of input) returns to
    the kernel prompt.
    """
    console.kernel.require_stop()
    console.message("*interactive*")
    lines: list[str] = []
    while True:
        line = console.read_answer("... " if lines else ">>> ")
        if line is None or (not lines and line.strip() in ("exit()", "quit()")):
            console.message("now exiting InteractiveConsole...")
            return
        lines.append(line)
        source = "\n".join(lines)
        try:
            code = codeop.compile_command(source, "<stdin>", "single")
        except (SyntaxError, OverflowError, ValueError) as exc:
            console.error(f"{type(exc).__name__}: {exc}")
            lines = []
            continue
        if code is None:
            continue  # more to come: a block's body
        lines = []
        if source.strip():
            run_python(console, source, show_none=False)


@guarded
def do_source(console: KernelConsole, arg: str) -> None:
    """source EXPRESSION
    Show the source code of the function, class or module EXPRESSION
    names (evaluated as 'eval' does: a kernel variable, a call-site name).
    """
    expression = arg.strip()
    if not expression:
        console.error("source needs an expression, e.g. 'source my_helper'")
        return
    from .kernel_support import kernel_values

    reply = console.kernel_request(
        "exec",
        source=f"__import__('inspect').getsourcelines({expression})",
        locals=kernel_values(console),
    )
    if not reply.ok:
        console.error(reply.text)
        return
    try:
        lines, first = ast.literal_eval(reply.text)
    except (ValueError, SyntaxError):
        console.error(reply.text)
        return
    for number, line in enumerate(lines, first):
        console.message(f"{number:>3}  \t{line.rstrip()}")


@guarded
def do_alias(console: KernelConsole, arg: str) -> None:
    """alias [NAME [COMMAND]]
    pdb's alias: define NAME as COMMAND (%1, %2... its arguments, %*
    all of them), or show one or every alias. Aliases are pdb's, shared
    by the host and the kernel prompts.
    """
    _pdb_command(console, f"alias {arg}".rstrip())


@guarded
def do_unalias(console: KernelConsole, arg: str) -> None:
    """unalias NAME
    Delete the alias NAME.
    """
    _pdb_command(console, f"unalias {arg}".rstrip())


def _pdb_command(console: KernelConsole, line: str) -> None:
    reply = console.kernel_request("pdb_command", line=line)
    if reply.text:
        (console.message if reply.ok else console.error)(reply.text.rstrip("\n"))


@guarded
def do_commands(console: KernelConsole, arg: str) -> None:
    """commands [N]
    pdb's commands: type the commands to run each time breakpoint N (the
    last one set by default) stops a thread, one a line, then 'end';
    'silent' first leaves the stop unannounced.
    """
    breakpoints = console.state.get("breakpoints", [])  # type: ignore[attr-defined]
    if arg.strip():
        try:
            number = int(arg.strip())
        except ValueError:
            console.error(f"Usage: commands [bnum]\n        ...\n        end (not {arg.strip()!r})")
            return
    elif breakpoints:
        number = max(bp["number"] for bp in breakpoints)
    else:
        console.error("No breakpoints.")
        return
    lines: list[str] = []
    while True:
        line = console.read_answer("(com) ")
        if line is None or line.strip() == "end":
            break
        if line.strip():
            lines.append(line.strip())
    reply = console.kernel_request("commands", number=number, lines=lines)
    if not reply.ok:
        console.error(reply.text)


COMMANDS = [
    Command("run", do_run),
    Command("restart", do_restart),
    Command("jump", do_jump, aliases=("j",)),
    Command("retval", do_retval, aliases=("rv",)),
    Command("interact", do_interact),
    Command("source", do_source),
    Command("alias", do_alias),
    Command("unalias", do_unalias),
    Command("commands", do_commands),
]
