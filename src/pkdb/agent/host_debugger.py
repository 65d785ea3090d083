"""The host debugger: pdb itself, with its terminal replaced by the channel.

Every pdb command behaves as users know because it *is* pdb. What changes:

* input/output are channel file-likes (:mod:`pkdb.agent.channel_io`); ``interact``
  reads its lines through them too;
* the program starts one of three ways (:data:`pkdb.protocol.ENTRY_MODES`);
* ``run`` continues, ``restart`` asks the front end for a fresh process;
* Ctrl-C stops the running program at the current line after any resuming command,
  not only after ``continue``;
* breakpoints and aliases can be saved and restored, so a new process (after a crash,
  or ``restart``) keeps them with their numbers.
"""

from __future__ import annotations

import bdb
import builtins
import io
import os
import pdb
import shlex
import signal
import sys
import sysconfig
import threading
import types

# The C module's getsignal: signal.getsignal() wraps it, turning a handler into a
# Handlers member where it can, which for a Python handler costs a ValueError (~2.4 us
# on 3.11): too much at every kernel dispatch (guard_sigint_for_kernel).
from _signal import getsignal as _raw_getsignal
from typing import Any

from ..protocol import (
    ENTRY_QUIET,
    ENTRY_RUN,
    ENTRY_STOP,
    HOST_PROMPT,
    BreakpointState,
    DebuggerState,
)
from .channel_io import ChannelConsole
from .live_commands import LiveKernelCommands

_BDB_RUN_CODE = bdb.Bdb.run.__code__
_UNKNOWN: Any = object()  # not looked up yet (see HostDebugger._lines_of)
_OWN_MODULES = ("pkernels", "pkernels.*", "pkdb", "pkdb.*")
# The standard library only: a program's own packages may be installed in site-packages.
_LIBRARY_DIRS = tuple(
    {os.path.join(p, "") for k in ("stdlib", "platstdlib") if (p := sysconfig.get_paths().get(k))}
)


def _is_library(filename: str) -> bool:
    # "<string>": code the standard library makes with exec (a namedtuple's __new__, a
    # dataclass's __init__), e.g. under inspect and tokenize when pkernels reads a source.
    return (
        filename.startswith(_LIBRARY_DIRS)
        or filename.startswith("<frozen")
        or filename == "<string>"
    )


class RestartRequest:
    """What ``restart``/``run ARGS`` typed inside the agent asked for."""

    def __init__(self, argv: list[str] | None, entry: str) -> None:
        self.argv = argv
        self.entry = entry


class _BreakTable(dict):
    """bdb's ``breaks`` dict, calling ``changed()`` after its set of files changes."""

    def __init__(self, table: dict[str, list[int]], changed: Any) -> None:
        super().__init__(table)
        self._changed = changed

    def __setitem__(self, key: str, value: list[int]) -> None:
        super().__setitem__(key, value)
        self._changed()

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self._changed()

    def setdefault(self, key: str, default: Any = None) -> Any:
        value = super().setdefault(key, default)
        self._changed()
        return value

    def pop(self, *args: Any) -> Any:
        value = super().pop(*args)
        self._changed()
        return value

    def popitem(self) -> tuple[str, list[int]]:
        item = super().popitem()
        self._changed()
        return item

    def clear(self) -> None:
        super().clear()
        self._changed()

    def update(self, *args: Any, **kwargs: Any) -> None:
        super().update(*args, **kwargs)
        self._changed()


class _Displayed:
    """A ``display`` expression's value, shown as itself, compared without raising."""

    __slots__ = ("value",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)

    def __eq__(self, other: object) -> bool:
        old = other.value if isinstance(other, _Displayed) else other
        new = self.value
        if new is old:
            return True
        try:
            return not bool(new != old)
        except Exception:  # noqa: BLE001 - an array's truth value, a broken __ne__
            numpy = sys.modules.get("numpy")
            try:
                if numpy is not None:
                    return bool(numpy.array_equal(new, old, equal_nan=True))
            except Exception:  # noqa: BLE001 - not arrays after all
                pass
            return repr(new) == repr(old)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)


class HostDebugger(LiveKernelCommands, pdb.Pdb):
    """A :class:`pdb.Pdb` that talks through the channel and survives restarts
    (plus ``hotswap`` and ``parallel_launch``, see :mod:`pkdb.agent.live_commands`)."""

    def __init__(
        self,
        stdin: Any,
        stdout: Any,
        *,
        readrc: bool = True,
        settings: dict[str, Any] | None = None,
    ) -> None:
        # `step` never stops inside pkernels or pkdb themselves: at a dispatch on the Debug
        # space it enters the kernel's body (and a view access is one step), elsewhere it
        # goes on to the program's next line.
        self._skipped: dict[str | None, bool] = {}  # see is_skipped_module
        super().__init__(stdin=stdin, stdout=stdout, readrc=readrc, skip=list(_OWN_MODULES))
        self.prompt = HOST_PROMPT
        self.settings: dict[str, Any] = dict(settings or {})
        self.restart_request: RestartRequest | None = None
        self._entry = ENTRY_STOP
        self._hide_next_stop = False
        # Ctrl-C that stopped a running kernel (in gdb): Python's handler, which runs once
        # the kernel returns, must not stop the program a second time.
        self.sigint_taken_by_kernel = False

    # -- tracing: bdb's answers, sooner ----------------------------------------------

    _quiet_generation = 0  # bumped at each change of the breakpoint files
    _continuing = False  # see _set_stopinfo

    # While the program runs on after `continue` with breakpoints set, bdb keeps
    # tracing and asks, at every Python call, whether the new frame's file has a
    # breakpoint: five method calls per call event (a program importing NumPy makes
    # ~75 000), which makes a program ~50% slower under pdb. The same answer, cached
    # per code file, costs one: see trace_dispatch. Likewise at each line of a traced
    # frame (the program's loop around its dispatches): three method calls in bdb to
    # find no breakpoint on it, one look-up here.

    @property
    def breaks(self) -> dict[str, list[int]]:
        """bdb's table of breakpoint lines per canonical file name."""
        return self._breaks

    @breaks.setter
    def breaks(self, table: dict[str, list[int]]) -> None:
        self._breaks = _BreakTable(table, self._forget_quiet_files)
        self._forget_quiet_files()

    def _forget_quiet_files(self) -> None:
        # Called after each change of the table's files (from any thread): answers
        # computed before it are dropped, see _is_quiet.
        self._quiet_generation += 1
        self._quiet_files: dict[str, bool] = {}
        # per code file: its line list in the table (changed in place by bdb), or None
        self._break_lines: dict[str, list[int] | None] = {}

    def _set_stopinfo(
        self, stopframe: Any, returnframe: Any, stoplineno: int = 0, *more: Any
    ) -> None:
        super()._set_stopinfo(stopframe, returnframe, stoplineno, *more)  # 3.13: opcode
        # `continue` (bdb's set_continue), with a bottom frame: bdb then stops only at
        # breakpoints, and a new frame needs tracing only if its file has one.
        self._continuing = stoplineno == -1 and stopframe is not None

    def trace_dispatch(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        if not self.quitting:
            # bdb's own branches for the commonest events (every traced line, every
            # return), one call frame sooner: this override sits in front of bdb's.
            if event == "line":
                if self._continuing:
                    # bdb stops at a breakpoint only (stop_here is False for any frame):
                    # a line with none (nor its function's first line) goes on at once.
                    code = frame.f_code
                    lines = self._break_lines.get(code.co_filename, _UNKNOWN)
                    if lines is _UNKNOWN:
                        lines = self._lines_of(code.co_filename)
                    if lines is None or (
                        frame.f_lineno not in lines and code.co_firstlineno not in lines
                    ):
                        return self.trace_dispatch
                return self.dispatch_line(frame)
            if event == "return":
                return self.dispatch_return(frame, arg)
        if event == "call" and self._continuing:
            filename = frame.f_code.co_filename
            quiet = self._quiet_files.get(filename)
            if quiet is None:
                quiet = self._is_quiet(filename)
            if quiet:
                return None  # what bdb's dispatch_call answers for such a frame
        return bdb.Bdb.trace_dispatch(self, frame, event, arg)

    def _lines_of(self, filename: str) -> Any:
        """The breakpoint lines of ``filename`` (bdb's list), or None; cached."""
        generation = self._quiet_generation
        lines = self._breaks.get(self.canonic(filename))
        cache = self._break_lines
        cache[filename] = lines
        if self._quiet_generation != generation:  # the table changed meanwhile
            cache.pop(filename, None)
        return lines

    def _is_quiet(self, filename: str) -> bool:
        """Whether ``filename`` has no breakpoint (bdb's break_anywhere), cached."""
        generation = self._quiet_generation
        quiet = self.canonic(filename) not in self._breaks
        cache = self._quiet_files
        cache[filename] = quiet
        if self._quiet_generation != generation:  # the table changed meanwhile
            cache.pop(filename, None)
        return quiet

    # -- running the program ---------------------------------------------------------

    def compile_script(self, path: str) -> types.CodeType:
        """Read and compile the program (SyntaxError/OSError: it cannot start)."""
        filename = os.path.realpath(path)
        with io.open_code(filename) as source_file:
            source = source_file.read()
        return compile(source, filename, "exec")

    def run_script(self, code: types.CodeType, entry: str = ENTRY_STOP, spec: Any = None) -> None:
        """Run the compiled program as ``__main__`` -- what ``pdb._run`` does for a
        script, but with the code object run directly, so no ``<string>`` frame shows.

        Exceptions of the program propagate; ``quit``/``restart`` end it quietly.
        ``spec``: the module's, when the program is a module run as ``python -m`` runs
        it (its package then resolves relative imports).
        """
        self._entry = entry
        self._hide_next_stop = entry == ENTRY_QUIET
        self.restart_request = None
        self._wait_for_mainpyfile = True
        self._user_requested_quit = False
        self.mainpyfile = self.canonic(code.co_filename)

        # The program must run in the __main__ namespace (pickle, multiprocessing and
        # `if __name__ == "__main__"` depend on it), as under pdb.
        import __main__

        __main__.__dict__.clear()
        __main__.__dict__.update(
            __name__="__main__",
            __file__=code.co_filename,
            __builtins__=builtins,
            __spec__=spec,
            __package__=spec.parent if spec is not None else None,
            __loader__=spec.loader if spec is not None else None,
        )
        self.arm_sigint()
        self.run(code)

    @property
    def user_requested_quit(self) -> bool:
        return bool(self._user_requested_quit)

    def user_line(self, frame: types.FrameType) -> None:
        if self._entry == ENTRY_RUN:
            # `run`: pdb would stop at the first line of the program; instead go on
            # unless a breakpoint is set right there.
            if self._wait_for_mainpyfile:
                if self.mainpyfile != self.canonic(frame.f_code.co_filename) or frame.f_lineno <= 0:
                    return
                self._wait_for_mainpyfile = False
            self._entry = ENTRY_STOP
            if not self.break_here(frame):
                self.set_continue()
                return
        super().user_line(frame)

    def get_stack(self, f: Any, t: Any) -> tuple[list, int]:
        # Hide bdb's run() frame under the program: `where` starts at the program.
        stack, index = super().get_stack(f, t)
        while len(stack) > 1 and index > 0 and stack[0][0].f_code is _BDB_RUN_CODE:
            stack.pop(0)
            index -= 1
        return stack, index

    def print_stack_entry(self, frame_lineno: Any, prompt_prefix: str = pdb.line_prefix) -> None:
        if self._hide_next_stop:  # the quiet entry stop: no "> prog.py(1)<module>()"
            self._hide_next_stop = False
            return
        super().print_stack_entry(frame_lineno, prompt_prefix)

    def is_skipped_module(self, module_name: str | None) -> bool:
        # bdb asks at every line event it traces: answered once per module name.
        skipped = self._skipped.get(module_name)
        if skipped is None:
            skipped = self._skipped[module_name] = super().is_skipped_module(module_name)
        return skipped

    def stop_here(self, frame: types.FrameType) -> bool:
        stopframe = self.stopframe
        if stopframe and frame is not stopframe:
            return False  # bdb's answer whatever the frame's module (continue, next)
        if not super().stop_here(frame):
            return False
        # Standard-library code that pkernels or pkdb call is theirs too: a step goes on
        # through it to the program's next line.
        caller = frame
        while caller is not None and _is_library(caller.f_code.co_filename):
            caller = caller.f_back
        return (
            caller is frame
            or caller is None
            or not self.is_skipped_module(caller.f_globals.get("__name__"))
        )

    def setup(self, f: Any, tb: Any) -> Any:
        rc = super().setup(f, tb)
        # An exception a kernel raised on the Debug space surfaces inside pkernels' view
        # class: post-mortem starts at the program's innermost frame (the kernel's line).
        index = self.curindex
        while index > 0 and self.is_skipped_module(self.stack[index][0].f_globals.get("__name__")):
            index -= 1
        if index != self.curindex and tb is not None:
            self.curindex = index
            self.curframe = self.stack[index][0]
            self.curframe_locals = self.curframe.f_locals
        return rc

    def interaction(self, frame: types.FrameType | None, traceback: Any) -> None:
        super().interaction(frame, traceback)
        self._resuming()

    def bp_commands(self, frame: types.FrameType) -> bool | None:
        # A breakpoint with `commands` may prompt without going through interaction().
        must_interact = super().bp_commands(frame)
        if not must_interact:
            self._resuming()
        return must_interact

    def _resuming(self) -> None:
        """The program runs on: send what is still buffered, and let Ctrl-C stop it
        again whatever the resuming command was (pdb arms this for `continue` only)."""
        flush_partial = getattr(self.stdout, "flush_partial", None)
        if flush_partial is not None:
            flush_partial()
        self.arm_sigint()

    # -- Ctrl-C ----------------------------------------------------------------------

    def arm_sigint(self) -> None:
        """Make SIGINT stop the running program at its current line."""
        if self.nosigint or threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGINT) == self.sigint_handler:
            return
        pdb.Pdb._previous_sigint_handler = signal.signal(signal.SIGINT, self.sigint_handler)

    def sigint_handler(self, signum: int, frame: types.FrameType | None) -> None:
        if self.sigint_taken_by_kernel:
            self.sigint_taken_by_kernel = False
            return
        if self.allow_kbdint:
            raise KeyboardInterrupt
        self.message("\nProgram interrupted. (Use 'cont' to resume).")
        self.stop_in(frame)

    def guard_sigint_for_kernel(self) -> Any:
        """A release-build kernel is about to run in the main thread: a Ctrl-C then stops
        it in kernel mode (``sigint_taken_by_kernel``), and Python's handler, which runs
        once the kernel returns, must skip it. Ours does; at a pdb prompt (an ``eval`` or
        ``p`` that dispatches a kernel) pdb has put back another, which would raise
        KeyboardInterrupt into the evaluation after ``continue``: wrap that one for the
        launch. Returns the handler to put back after it (None: nothing to do). Main
        thread only."""
        current = _raw_getsignal(signal.SIGINT)
        if current == self.sigint_handler or not callable(current):
            return None

        def skip_kernel_stop(signum: int, frame: types.FrameType | None) -> None:
            if self.sigint_taken_by_kernel:
                self.sigint_taken_by_kernel = False
                return
            current(signum, frame)

        signal.signal(signal.SIGINT, skip_kernel_stop)
        return current

    def stop_in(self, frame: types.FrameType | None) -> None:
        """Stop at the next line of ``frame`` (Ctrl-C, ``breakpoint()``).

        Like :meth:`set_trace`, but the program's bottom frame stays the bottom frame:
        set_trace() would make it the agent's outermost frame, and stepping out of the
        program would then wander into the agent.
        """
        botframe = self.botframe
        self.set_trace(frame)
        if botframe is not None:
            self.botframe = botframe

    def breakpointhook(self, *args: Any, **kwargs: Any) -> None:
        """``breakpoint()`` and ``pdb.set_trace()`` in the program stop in this
        session (they would otherwise start a second pdb on the raw terminal)."""
        header = kwargs.get("header")
        if header is not None:
            self.message(header)
        self.stop_in(sys._getframe(1))

    # -- commands that must not touch the real terminal -----------------------------

    def do_interact(self, arg: str) -> None:
        """interact

        Start an interactive interpreter whose global namespace
        contains all the (global and local) names found in the current scope.
        """
        namespace = {**self.curframe.f_globals, **self.curframe_locals}
        console = ChannelConsole(namespace, self.stdin, self.stdout)
        console.interact("*interactive*", exitmsg="now exiting InteractiveConsole...")

    def handle_command_def(self, line: str) -> bool | None:
        # EOF at the (com) prompt ends the list, as `end` does (stock pdb would record
        # an "EOF" command and read on forever).
        if line.strip() == "EOF":
            line = "end"
        return super().handle_command_def(line)

    def _getval_except(self, arg: str, frame: types.FrameType | None = None) -> Any:
        # The values of `display`: pdb compares each with the last one shown using !=,
        # which a NumPy array answers element by element; the ValueError of its truth
        # value ended the program (in pdb's preloop).
        return _Displayed(super()._getval_except(arg, frame))

    # -- run / restart ---------------------------------------------------------------

    def do_eval(self, arg: str) -> None:
        """eval EXPRESSION | eval STATEMENT
        Run Python in the current frame of the live program: an expression
        prints its value, a statement runs (assignments stay: the frame's
        variables, the program's own arrays -- no copies). It may call any
        function and dispatch kernels on the live arrays, e.g.
        eval pk.parallel_for(n, fill, out=y, value=0.0)
        """
        if not arg.strip():
            self.error("eval needs an expression or a statement")
            return
        self.default(arg)  # pdb's `!`: runs in the frame, prints expression values

    def do_run(self, arg: str) -> bool | None:
        """run [args...]
        Continue the program (at the first stop: start it). With
        arguments, restart it with them as its new arguments and run
        until a breakpoint. Breakpoints, conditions, commands and
        aliases are kept.
        """
        if not arg:
            return self.do_continue(arg)
        return self._request_restart(arg, ENTRY_RUN)

    def do_restart(self, arg: str) -> bool | None:
        """restart [args...]
        Start the program again in a fresh process and stop before its
        first line. With arguments, they replace the program's arguments.
        Breakpoints, conditions, commands and aliases are kept.
        """
        return self._request_restart(arg, ENTRY_STOP)

    def _request_restart(self, arg: str, entry: str) -> bool | None:
        argv = None
        if arg:
            try:
                argv = sys.argv[:1] + shlex.split(arg)
            except ValueError as exc:
                self.error(f"Cannot run {arg}: {exc}")
                return None
        self.restart_request = RestartRequest(argv, entry)
        self.set_quit()
        return True

    # -- state that survives the process ---------------------------------------------

    def snapshot_state(self) -> DebuggerState:
        """Breakpoints (numbers, conditions, counts, commands) and aliases."""
        breakpoints = []
        for bp in bdb.Breakpoint.bpbynumber:
            if bp is None:
                continue
            breakpoints.append(
                BreakpointState(
                    number=bp.number,
                    file=bp.file,
                    line=bp.line,
                    temporary=bool(bp.temporary),
                    condition=bp.cond,
                    enabled=bool(bp.enabled),
                    ignore=bp.ignore,
                    hits=bp.hits,
                    funcname=bp.funcname,
                    commands=list(self.commands[bp.number]) if bp.number in self.commands else None,
                    silent=bool(self.commands_silent.get(bp.number, False)),
                    prompt=bool(self.commands_doprompt.get(bp.number, True)),
                )
            )
        return DebuggerState(
            breakpoints=breakpoints,
            aliases=dict(self.aliases),
            next_breakpoint=bdb.Breakpoint.next,
        )

    def restore_state(self, state: DebuggerState) -> list[str]:
        """Recreate breakpoints with their old numbers, and aliases. Returns one
        message per breakpoint that could not be set again (e.g. the file shrank)."""
        problems = []
        registry = bdb.Breakpoint
        for saved in sorted(state.breakpoints, key=lambda b: b.number):
            # bdb numbers breakpoints by their position in bpbynumber.
            while len(registry.bpbynumber) < saved.number:
                registry.bpbynumber.append(None)
            registry.next = saved.number
            error = self.set_break(
                saved.file, saved.line, saved.temporary, saved.condition, saved.funcname
            )
            if error:
                registry.bpbynumber.append(None)  # keep the number taken
                registry.next = saved.number + 1
                problems.append(f"Breakpoint {saved.number} not restored: {error}")
                continue
            bp = registry.bpbynumber[saved.number]
            bp.enabled = saved.enabled
            bp.ignore = saved.ignore
            bp.hits = saved.hits
            if saved.commands is not None:
                self.commands[saved.number] = list(saved.commands)
                self.commands_silent[saved.number] = saved.silent
                self.commands_doprompt[saved.number] = saved.prompt
        while len(registry.bpbynumber) < state.next_breakpoint:
            registry.bpbynumber.append(None)
        registry.next = max(registry.next, state.next_breakpoint)
        self.aliases.update(state.aliases)
        return problems
