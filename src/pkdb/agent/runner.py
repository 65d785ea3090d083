"""One run of the user's program under the host debugger, in the debuggee process.

The front end starts this process with the child end of the socket pair on
``--channel-fd``; the first message tells what to run (:class:`pkdb.protocol.Start`).
The process lives exactly as long as the program: when the program ends, however it
ends, the process ends and the front end reports how. A restart is a new process.
"""

from __future__ import annotations

import os
import pdb
import signal
import socket
import sys
import traceback
import types
from typing import NoReturn

from ..channel import Channel, ChannelClosed
from ..protocol import (
    ENTRY_STOP,
    DebuggerState,
    Finished,
    Output,
    SettingsChanged,
    Start,
    StateChanged,
)
from .channel_io import ChannelInput, ChannelOutput, flush_program_streams
from .host_debugger import HostDebugger
from .kernel_observer import KernelObserver
from .link import AgentLink
from .tracebacks import full_tracebacks, hide_internal_frames, user_traceback


def main(argv: list[str] | None = None) -> NoReturn:
    """Entry point of ``python -m pkdb.agent``; exits with the program's status."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m pkdb.agent")
    parser.add_argument("--channel-fd", type=int, required=True)
    run_agent(parser.parse_args(argv).channel_fd)


def run_agent(channel_fd: int, tracer: int | None = None) -> NoReturn:
    """Be the agent on the socket ``channel_fd``: wait for the front end's
    :class:`~pkdb.protocol.Start`, run the program, exit with its status. ``tracer``:
    the front end's pid, when it is not this process's parent (an MPI rank)."""
    _reset_signals()
    _allow_the_debugger(os.getppid() if tracer is None else tracer)

    # The socket must not leak into programs the debuggee execs.
    os.set_inheritable(channel_fd, False)
    channel = Channel(socket.socket(fileno=channel_fd))
    try:
        start = channel.receive()
    except ChannelClosed:
        os._exit(1)  # pkdb stopped before starting a program (a command-line error)
    if not isinstance(start, Start):
        raise SystemExit("pkdb agent: expected a start message")

    link = AgentLink(channel, on_closed=_end_with_front_end)
    output = ChannelOutput(link)
    debugger: HostDebugger | None = None

    def is_main(prompt: str) -> bool:
        return (
            debugger is not None and prompt == debugger.prompt and (not debugger.commands_defining)
        )

    reporter = _StateReporter(link, lambda: debugger)
    stdin = ChannelInput(link, output, is_main=is_main, before_prompt=reporter.report)
    debugger = HostDebugger(stdin, output, settings=start.settings)
    link.on(SettingsChanged.TYPE, lambda message: debugger.settings.update(message.values))
    KernelObserver(debugger, link, reporter.report).install()
    link.start()

    for problem in debugger.restore_state(DebuggerState.from_dict(start.state)):
        link.send(Output(text=f"*** {problem}\n"))
    reporter.report()

    if os.environ.get("PYTHONBREAKPOINT") != "0":  # "0" disables breakpoint()
        sys.breakpointhook = debugger.breakpointhook
        pdb.set_trace = debugger.breakpointhook

    # As for `python prog.py`: the program sees its own argv, and its directory
    # replaces ours at the head of sys.path (unless -P / PYTHONSAFEPATH says not to).
    sys.argv[:] = start.argv
    if not sys.flags.safe_path:
        program = os.path.dirname(os.path.realpath(start.argv[0]))
        sys.path[0] = os.getcwd() if start.module else program  # as `python -m` does
    raise SystemExit(_run_program(debugger, link, reporter, start))


def _run_program(
    debugger: HostDebugger, link: AgentLink, reporter: _StateReporter, start: Start
) -> int:
    """Run the program once; the process exit status it should end with."""
    spec = None
    try:
        if start.module:
            spec, code = _module_code(start.argv[0])
            sys.argv[0] = code.co_filename  # as `python -m` sets it
        else:
            code = debugger.compile_script(start.argv[0])
    except (OSError, SyntaxError, ImportError) as exc:
        traceback.print_exception(type(exc), exc, None)
        return 1

    try:
        debugger.run_script(code, start.entry, spec)
    except SystemExit:
        reporter.report()
        raise  # the interpreter turns it into the exit status, as without pkdb
    except BaseException as exc:  # noqa: BLE001 - anything uncaught: post-mortem
        reporter.report()
        return _post_mortem(debugger, link, exc)

    reporter.report()
    _send_finished(debugger, link)
    return 0


def _module_code(name: str) -> tuple[object, types.CodeType]:
    """The spec and code of module ``name``, as ``python -m name`` runs it (a package
    runs its ``__main__``); ImportError when there is no such module."""
    import runpy

    try:
        _, spec, code = runpy._get_module_details(name)  # type: ignore[attr-defined]
    except ImportError:
        raise
    except Exception as exc:  # runpy's own _Error: not a module it can run
        raise ImportError(str(exc)) from exc
    return spec, code


def _post_mortem(debugger: HostDebugger, link: AgentLink, exc: BaseException) -> int:
    """pdb's post-mortem: show the traceback, stop in the frame that raised (pkernels'
    own frames left out, unless PKERNELS_TRACEBACK=full)."""
    tb = _program_traceback(debugger, exc.__traceback__)
    hidden = 0
    if not full_tracebacks():
        tb, hidden = user_traceback(tb)
        hidden += hide_internal_frames(exc)
    flush_program_streams()
    traceback.print_exception(type(exc), exc, tb)
    if hidden:
        debugger.message(
            f"({hidden} frame{'s' * (hidden > 1)} of pkernels' own code not shown; "
            "PKERNELS_TRACEBACK=full shows them)"
        )
    debugger.message("Uncaught exception. Entering post mortem debugging")
    debugger.message("Running 'cont' or 'step' will restart the program")
    debugger.interaction(None, tb)
    if not _send_finished(debugger, link):
        debugger.message("Post mortem debugger finished. The program will be restarted")
        _send(link, Finished(reason="restart", entry=ENTRY_STOP))
    return 1


def _send_finished(debugger: HostDebugger, link: AgentLink) -> bool:
    """Tell the front end about a quit/restart the user asked for; False if none."""
    if debugger.user_requested_quit:
        _send(link, Finished(reason="quit"))
        return True
    request = debugger.restart_request
    if request is not None:
        _send(link, Finished(reason="restart", argv=request.argv, entry=request.entry))
        return True
    return False


def _send(link: AgentLink, message: Finished) -> None:
    try:
        link.send(message)
    except ChannelClosed:
        pass


def _program_traceback(
    debugger: HostDebugger, tb: types.TracebackType | None
) -> types.TracebackType | None:
    """Drop the agent's and bdb's frames from the top of the traceback."""
    first = tb
    while first is not None:
        if debugger.canonic(first.tb_frame.f_code.co_filename) == debugger.mainpyfile:
            return first
        first = first.tb_next
    return tb


#: prctl's PR_SET_PTRACER (linux/prctl.h): which process may ptrace this one.
_PR_SET_PTRACER = 0x59616D61


def _allow_the_debugger(front_end: int) -> None:
    """Let pkdb's gdb attach under Yama's ``ptrace_scope=1`` (Ubuntu's default), where a
    process may only be traced by its ancestors: gdb is the front end's child, the
    program's sibling. The front end (this process's parent) and its descendants may
    trace it (``front_end``: its pid). Without Yama the call fails, harmlessly."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PTRACER, ctypes.c_ulong(front_end), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _reset_signals() -> None:
    """Undo what the front end's dispositions would leak into the program."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for name in ("SIGTTOU", "SIGTTIN", "SIGTSTP", "SIGHUP", "SIGTERM"):
        signum = getattr(signal, name, None)
        if signum is not None:
            signal.signal(signum, signal.SIG_DFL)


def _end_with_front_end() -> None:
    """The front end is gone (closed the channel, or was killed): end the debuggee and
    everything it started in its process group, so nothing outlives the session."""
    try:
        if os.getpgrp() == os.getpid():
            os.killpg(os.getpid(), signal.SIGKILL)
    finally:
        os._exit(1)


class _StateReporter:
    """Sends the debugger state whenever it changed (before each prompt, at the end)."""

    def __init__(self, link: AgentLink, get_debugger) -> None:
        self._link = link
        self._get_debugger = get_debugger
        self._last: dict | None = None

    def report(self) -> None:
        debugger = self._get_debugger()
        if debugger is None:
            return
        state = debugger.snapshot_state().to_dict()
        if state != self._last:
            self._last = state
            try:
                self._link.send(StateChanged(state=state))
            except ChannelClosed:
                pass
