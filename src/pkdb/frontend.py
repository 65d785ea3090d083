"""The front end: the REPL that owns the terminal for the whole session.

It starts the debuggee, reads command lines (from ``-c``/``-x`` first, then the
terminal or stdin), and routes each one through the current :class:`~pkdb.modes.Mode`.
When a command resumes the program it waits for the agent, printing its output, until
the next prompt -- or until the program ends, which it reports before offering
``run``/``restart``/``quit``. The session never depends on the debuggee staying alive.
"""

from __future__ import annotations

import cmd
import sys
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TextIO

from .agent_requests import AgentRequests
from .command_input import read_command_line
from .commands.registry import expand_alias, split_command, split_commands
from .input_text import undecodable
from .modes import HostMode, Mode
from .program_run import ProgramRun
from .protocol import (
    ENTRY_QUIET,
    ENTRY_STOP,
    Finished,
    Output,
    Prompt,
    StateChanged,
)
from .session import Debuggee
from .settings import Settings
from .terminal import Terminal

if TYPE_CHECKING:  # loaded at the first kernel: a session's start does not wait for them
    from .cpu_frontend import CpuFrontend
    from .gpu_frontend import GpuFrontend
    from .kernel_protocol import KernelFinished, KernelLaunch, KernelReply
    from .kernel_session import KernelSession
    from .space_frontend import SpaceFrontend
    from .targets.base import StopEvent


class Frontend(ProgramRun, cmd.Cmd):
    """One pkdb session (implements :class:`pkdb.commands.registry.Console`); the
    program's runs are :class:`pkdb.program_run.ProgramRun`'s."""

    def __init__(
        self,
        argv: list[str],
        *,
        settings: Settings | None = None,
        module: bool = False,
        script: Iterable[str] = (),
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        debuggee: Debuggee | None = None,
    ) -> None:
        """``debuggee``: an agent process already started (pkdb starts it first, so that
        its start-up overlaps the front end's); it is used for the first run. ``module``:
        ``argv[0]`` names a module, run as ``python -m`` runs it."""
        super().__init__(completekey="tab", stdin=stdin, stdout=stdout)
        self._spare_debuggee = debuggee
        self.argv = list(argv)
        self.module = module
        #: pkdb's own exit status: the program's, when its last run ended (128 + the
        #: signal that killed it, as a shell says), else 0.
        self.exit_status = 0
        self.settings = settings if settings is not None else Settings()
        self.host_mode = HostMode()
        self.mode: Mode = self.host_mode
        self._cpu: CpuFrontend | None = None  # see the cpu_frontend property
        self._gpu: GpuFrontend | None = None  # see the gpu_frontend property
        self.debuggee: Debuggee | None = None
        self.agent_prompt: Prompt | None = None  # the agent's pending input request
        self.state: dict[str, Any] = {}  # breakpoints & aliases, for the next run
        self.kernel_displays: dict[str, str] = {}  # kernel mode's `display` expressions
        self.finished = False
        self._script = deque(script)
        self._finished_request: Finished | None = None
        self._interactive = self.stdin is sys.stdin and _isatty(self.stdin)
        self.terminal = Terminal(self.stdin)
        #: What to do with each message the agent sends while the program runs; a
        #: handler returns True when the user has the word (a prompt, or the end of
        #: the run). The kernel integration adds its ``kernel-launch`` request here:
        #: switch ``self.mode`` to a kernel mode, return True, and answer the request
        #: when the kernel is finished with.
        self.requests = AgentRequests(self)  # kernel mode's requests to the agent
        self.message_handlers: dict[str, Callable[[Any], bool]] = {
            Output.TYPE: self._on_output,
            StateChanged.TYPE: self._on_state,
            Prompt.TYPE: self._on_prompt,
            Finished.TYPE: self._on_finished,
            # kernel messages: pkdb.kernel_protocol, loaded with the first one
            "kernel-launch": self._on_kernel_launch,
            "kernel-finished": self._on_kernel_finished,
            "kernel-reply": self.requests.on_stray_reply,
        }

    @property
    def cpu_frontend(self) -> CpuFrontend:
        """The CPU kernels' component (gdb, the kernel's stops); loaded at first use
        (kernel debugging only), so that a session's start does not wait for it."""
        if self._cpu is None:
            from .cpu_frontend import CpuFrontend

            self._cpu = CpuFrontend(self)
        return self._cpu

    @property
    def kernel(self) -> KernelSession:
        """gdb and the CPU kernel being debugged (what kernel-mode commands use)."""
        return self.cpu_frontend.session

    @property
    def kernel_active(self) -> bool:
        """A kernel is running or held under gdb (False before any kernel was debugged)."""
        return self._cpu is not None and self._cpu.active

    @property
    def gpu_frontend(self) -> GpuFrontend:
        """The GPU kernels' component (cuda-gdb, the evaluation helper); loaded when a
        GPU kernel is first debugged."""
        if self._gpu is None:
            from .gpu_frontend import GpuFrontend

            self._gpu = GpuFrontend(self)
        return self._gpu

    @property
    def gpu(self) -> Any:
        """The GPU kernel session (what the GPU kernel-mode commands use)."""
        return self.gpu_frontend.session

    @property
    def gpu_active(self) -> bool:
        """A GPU kernel runs (or is held) under cuda-gdb."""
        return self._gpu is not None and self._gpu.active

    # -- the REPL --------------------------------------------------------------------

    def cmdloop(self, intro: Any = None) -> None:
        """Run the session: start the program, then read and route commands."""
        self._install_completion()
        self.start_program(ENTRY_STOP)
        while not self.finished:
            try:
                line = self._read_line()
            except KeyboardInterrupt:
                self._keyboard_interrupt()
                continue
            if line is None:
                self._end_of_input()
                continue
            try:
                self.onecmd(line)
            except KeyboardInterrupt:
                self.message("\n--KeyboardInterrupt--")
            except Exception as exc:  # noqa: BLE001 - a pkdb bug must not end the session
                self.error(f"pkdb failed on {line.strip()!r}: {type(exc).__name__}: {exc}")

    def onecmd(self, line: str) -> bool:
        """Route one line: verbatim to an agent sub-prompt, else through the mode."""
        problem = undecodable(line)
        if problem is not None:
            self.error(problem)
            return self.finished
        if self.agent_prompt is not None and not self.agent_prompt.main:
            self._reply(line=line)  # (com), >>>, nested debugger: theirs to parse
            return self.finished
        line = line.strip()
        if not line:
            line = self.lastcmd  # an empty line repeats the last command, as in pdb
            if not line:
                return self.finished
        if self.mode is not self.host_mode:  # pdb expands host aliases itself
            line = expand_alias(line, self.state.get("aliases", {}))
        first, rest = split_commands(line)
        if rest:
            self.cmdqueue.insert(0, rest)
        self.lastcmd = first
        if self._notice_lost_process():
            # The command was meant for the run that is gone; the session's own commands
            # (run, restart, quit, help, set...) still run.
            if self.host_mode.router.lookup(split_command(first)[0]) is None:
                return self.finished
        self.mode.execute(self, first)
        self._notice_lost_process()  # it died during the command (whose error is shown)
        return self.finished

    def read_answer(self, prompt: str) -> str | None:
        """A line the user types after ``prompt`` (a question's answer, a line of
        ``interact`` or ``commands``), read where commands are read; None at the end of
        input (Ctrl-D)."""
        return self._read_line(prompt)

    def _read_line(self, prompt: str | None = None) -> str | None:
        """The next command line; None at end of input."""
        if self.cmdqueue:  # the rest of a `a ;; b` line
            return self.cmdqueue.pop(0)
        if prompt is None:
            prompt = self.current_prompt
        return read_command_line(prompt, self._script, self._interactive, self.stdin, self._write)

    @property
    def current_prompt(self) -> str:
        if self.agent_prompt is not None and not self.agent_prompt.main:
            return self.agent_prompt.prompt
        return self.mode.prompt

    def _keyboard_interrupt(self) -> None:
        if self.agent_prompt is not None and not self.agent_prompt.main:
            self._write("\n")
            self._reply(interrupt=True)  # abort `commands` / the >>> line
        else:
            self.message("\n--KeyboardInterrupt--")

    def _end_of_input(self) -> None:
        if self._interactive and self.agent_prompt is not None and not self.agent_prompt.main:
            self._reply(line=None)  # Ctrl-D leaves `interact` / ends `commands`
        else:
            self.end_session()

    def _install_completion(self) -> None:
        if not (self._interactive and self.completekey):
            return
        try:
            import readline
        except ImportError:
            return
        readline.set_completer(self.complete)
        readline.parse_and_bind(self.completekey + ": complete")

    def completenames(self, text: str, *ignored: Any) -> list[str]:
        return [name for name in self.mode.completion_names() if name.startswith(text)]

    def completedefault(self, *ignored: Any) -> list[str]:
        return []

    # -- Console interface (what commands use) -------------------------------------

    def message(self, text: str) -> None:
        self._write(text + "\n")

    def error(self, text: str) -> None:
        self._write(f"*** {text}\n")

    def to_agent(self, line: str, *, load: bool = False) -> None:
        if not self.program_live and load:
            self.start_program(ENTRY_QUIET)
            if self.program_live:
                # pdb takes its breakpoint commands with the program loaded; said, so that
                # the next 'continue' running it from the start is no surprise.
                self.message(
                    "(The program is loaded again, stopped before its first line, to take "
                    "this command; 'continue' runs it from the start.)"
                )
        if not self.program_live:
            self.error("The program is not being run. Use 'run' or 'restart' to start it.")
            return
        self._reply(line=line)

    # -- talking to the agent --------------------------------------------------------

    # -- kernel debugging ------------------------------------------------------------

    def _on_kernel_launch(self, message: KernelLaunch) -> bool:
        """A debug build is about to run: its space's component attaches its debugger.
        One debugger traces the process at a time: the other one lets go first."""
        assert self.debuggee is not None
        space = self.gpu_frontend if message.space == "cuda" else self.cpu_frontend
        for other in self.space_frontends():
            if other is not space and other.attached:
                self._report_failures(other.debugger, other.close())
        space.on_launch(message)
        return False

    def _on_kernel_finished(self, message: KernelFinished) -> bool:
        space = self.gpu_frontend if self.gpu_active else self.cpu_frontend
        space.on_finished(message)
        return False

    def leave_kernel(self, *, close: bool) -> None:
        """Back to host mode; with ``close``, the debuggers end too."""
        if close:
            self.close_debuggers()
        elif self._cpu is not None:
            self._cpu.end()
        self.mode = self.host_mode

    def close_debuggers(self) -> None:
        """Stop gdb (and cuda-gdb), and say so if one failed during the session."""
        for space in self.space_frontends():
            self._report_failures(space.debugger, space.close())

    def space_frontends(self) -> list[SpaceFrontend]:
        """The execution spaces' components loaded so far: the CPU's, then the GPU's."""
        return [space for space in (self._cpu, self._gpu) if space is not None]

    def _report_failures(self, debugger: str, failures: list[str]) -> None:
        for failure in failures:
            self.error(f"{debugger} failed: {failure}")

    def report_kernel_stop(self, event: StopEvent) -> None:
        """Where a step or next stopped, then the displays whose value changed."""
        self.cpu_frontend.report_kernel_stop(event)

    def debug_rest_of_launch(self) -> None:
        """A launch running only some indices in the debug build (``partial_debug``):
        have its remaining indices run there too (once)."""
        self.cpu_frontend.debug_rest_of_launch()

    def watch_partial_continue(self, threads: list[int]) -> None:
        """``continue threads``: give the prompt back when those threads are all done."""
        self.cpu_frontend.watch_partial_continue(threads)

    def resume_kernel(self) -> None:
        """Let the kernel run until the next stop, its end, or the next host prompt."""
        self.kernel.stop = None
        self.resume_program()

    def resume_gpu(self, *, stepping: bool = False) -> None:
        """The GPU kernel runs (cuda-gdb was told): see :meth:`GpuFrontend.resume`."""
        self.gpu_frontend.resume(stepping=stepping)

    def kernel_request(self, action: str, **args: Any) -> KernelReply:
        """Ask the agent (see :meth:`pkdb.agent_requests.AgentRequests.ask`)."""
        return self.requests.ask(action, **args)

    def _write(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
