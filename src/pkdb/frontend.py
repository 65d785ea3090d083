"""The front end: the REPL that owns the terminal for the whole session.

It starts the debuggee, reads command lines (from ``-c``/``-x`` first, then the
terminal or stdin), and routes each one through the current :class:`~pkdb.modes.Mode`.
When a command resumes the program it waits for the agent, printing its output, until
the next prompt -- or until the program ends, which it reports before offering
``run``/``restart``/``quit``. The session never depends on the debuggee staying alive.
"""

from __future__ import annotations

import cmd
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TextIO

from .channel import ChannelClosed
from .commands.registry import expand_alias, split_command, split_commands
from .input_text import undecodable
from .modes import HostMode, KernelMode, Mode
from .partial_waits import DONE, waiting_note, waiting_place
from .protocol import (
    ENTRY_QUIET,
    ENTRY_STOP,
    EVALUATION_THREADS,
    Command,
    Finished,
    Message,
    Output,
    Prompt,
    ProtocolError,
    SettingsChanged,
    Start,
    StateChanged,
)
from .session import Debuggee, describe_exit
from .settings import Settings
from .targets.errors import TargetError
from .terminal import Terminal

if TYPE_CHECKING:  # loaded at the first kernel: a session's start does not wait for them
    from .gpu_frontend import GpuFrontend
    from .kernel_protocol import KernelFinished, KernelLaunch, KernelReply
    from .kernel_session import KernelSession
    from .targets.base import StopEvent

#: While the program runs, how often to check that it is still alive even though the
#: channel is open (a forked child of the program may hold the agent's socket).
_POLL_INTERVAL = 0.25
#: While a kernel runs under gdb, how long to wait for the agent before looking at gdb.
_KERNEL_POLL_INTERVAL = 0.005
#: Seconds Ctrl-C in a HYBRID launch waits for a thread to begin an index in the debug
#: build before stopping the threads where they are (in release code).
NEXT_INDEX_PATIENCE = 0.5
#: Seconds a program that ended (its agent gone) gets to finish exiting before gdb lets
#: go of it; a program still running then (threads it left behind) is detached anyway.
_EXIT_PATIENCE = 5.0
#: Exit statuses of a program killed by a crash signal.
_CRASH_CODES = frozenset(-s for s in (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGABRT))


#: How long a request that runs none of the user's code may take to be answered.
_REQUEST_PATIENCE = 10.0
#: How long the agent may take to answer a ping while an interrupted evaluation runs.
_PING_PATIENCE = 1.0
_BLOCKED = (
    "the program cannot answer: the evaluation you interrupted still runs and holds "
    "Python's interpreter lock (a long call into C code: sum(range(...)), a NumPy "
    "operation...), so Python commands wait until it returns. gdb's commands still "
    "answer (threads, where, send ...); 'quit' ends the program"
)


class Frontend(cmd.Cmd):
    """One pkdb session (implements :class:`pkdb.commands.registry.Console`)."""

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
        self._kernel: KernelSession | None = None  # see the kernel property
        self._gpu: GpuFrontend | None = None  # see the gpu_frontend property
        self._kernel_request_ids = 0
        self.debuggee: Debuggee | None = None
        self.agent_prompt: Prompt | None = None  # the agent's pending input request
        self._interrupt_at: float | None = None  # see NEXT_INDEX_PATIENCE
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
        self.message_handlers: dict[str, Callable[[Any], bool]] = {
            Output.TYPE: self._on_output,
            StateChanged.TYPE: self._on_state,
            Prompt.TYPE: self._on_prompt,
            Finished.TYPE: self._on_finished,
            # kernel messages: pkdb.kernel_protocol, loaded with the first one
            "kernel-launch": self._on_kernel_launch,
            "kernel-finished": self._on_kernel_finished,
            "kernel-reply": self._on_stray_reply,
        }
        self._partial: PartialContinue | None = None  # see watch_partial_continue
        # User-code requests (eval at a kernel stop) the user stopped waiting for with
        # Ctrl-C: the program runs them to their end; their replies are dropped.
        self._abandoned_requests: set[int] = set()

    @property
    def kernel(self) -> KernelSession:
        """gdb and the kernel being debugged; loaded at first use (kernel debugging only),
        so that a session's start does not wait for it."""
        if self._kernel is None:
            from .kernel_session import KernelSession

            self._kernel = KernelSession()
        return self._kernel

    @property
    def kernel_active(self) -> bool:
        """A kernel is running or held under gdb (False before any kernel was debugged)."""
        return self._kernel is not None and self._kernel.active

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
        if self._script:  # -c / -x: echoed, so the output reads like a session
            line = self._script.popleft()
            self._write(f"{prompt}{line}\n")
            return line
        if self._interactive:
            try:
                return input(prompt)
            except EOFError:
                self._write("\n")
                return None
        self._write(prompt)
        line = self.stdin.readline()
        if not line:
            self._write("\n")
            return None
        line = line.rstrip("\r\n")
        self._write(line + "\n")
        return line

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

    @property
    def program_live(self) -> bool:
        return self.debuggee is not None and self.agent_prompt is not None

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

    def start_program(self, entry: str, argv: list[str] | None = None) -> None:
        if argv is not None:
            self.argv = list(argv)
        self._stop_debuggee()
        while True:
            start = Start(
                argv=self.argv,
                entry=entry,
                state=self.state,
                settings=self.settings.as_dict(),
                module=self.module,
            )
            self.exit_status = 0
            try:
                self.debuggee = self._new_debuggee()
            except OSError as exc:
                self.error(f"cannot start the program: {exc}")
                return
            sent, self.debuggee.sent_start = self.debuggee.sent_start, None
            if sent is not None and sent != start:  # pkdb's main guessed wrong: start over
                self.debuggee.terminate()
                self.debuggee = Debuggee.spawn()
                sent = None
            restart = self._send_and_wait(start if sent is None else None)
            if restart is None:
                return
            entry = restart.entry
            if restart.argv is not None:
                self.argv = list(restart.argv)

    def _new_debuggee(self) -> Debuggee:
        spare, self._spare_debuggee = self._spare_debuggee, None
        if spare is not None and spare.poll() is None:
            return spare
        return Debuggee.spawn()

    def end_session(self) -> None:
        self._stop_debuggee()
        self.finished = True

    def settings_changed(self) -> None:
        if self.program_live:
            try:
                self.debuggee.send(SettingsChanged(values=self.settings.as_dict()))
            except ChannelClosed:
                pass  # it died; the next command reports that

    def close(self) -> None:
        """Kill the debuggee if there is one (the session is over, however)."""
        self._stop_debuggee()
        if self._spare_debuggee is not None:
            self._spare_debuggee.terminate()
            self._spare_debuggee = None
        self.terminal.take_back()

    # -- talking to the agent --------------------------------------------------------

    def _reply(self, *, line: str | None = None, interrupt: bool = False) -> None:
        """Answer the agent's prompt and wait for the next one (or the program's end)."""
        assert self.debuggee is not None and self.agent_prompt is not None
        request, self.agent_prompt = self.agent_prompt, None
        restart = self._send_and_wait(Command(reply_to=request.id, line=line, interrupt=interrupt))
        if restart is not None:
            self.start_program(restart.entry, restart.argv)

    def _send_and_wait(self, message: Message | None) -> Finished | None:
        """Let the program run with ``message``: print what the agent sends until it
        prompts or the program ends. Returns the agent's restart request, if the run
        ended with one."""
        debuggee = self.debuggee
        assert debuggee is not None
        # The terminal goes first: the program may read it as soon as it runs.
        self.terminal.give_to(debuggee.pgid)
        try:
            if message is not None:
                try:
                    debuggee.send(message)
                except ChannelClosed:
                    pass  # it just died: _pump sees the end of the stream
            ended = self._pump(debuggee)
        finally:
            self.terminal.take_back()
        if not ended:
            return None
        return self._program_ended()

    def _pump(self, debuggee: Debuggee) -> bool:
        """Handle the agent's messages while the program runs. Returns False when a
        handler says the user has the word (a prompt), True when the run is over."""
        while True:
            if self._gdb_loss() is not None:
                return True  # _program_ended says so and ends the program
            if self.kernel_active and self._check_kernel_stop():
                self._interrupt_at = None
                self._partial = None
                return False
            # cuda-gdb stays attached between GPU launches: a release kernel's CUDA
            # exception stops the program then too.
            if self._gpu_attached() and self.gpu_frontend.check_stop():
                return False
            if self.kernel_active and self._check_partial_continue():
                return False
            if self._interrupt_at is not None and time.monotonic() > self._interrupt_at:
                self._interrupt_kernel()
            busy = self.kernel_active or self.gpu_active
            timeout = _KERNEL_POLL_INTERVAL if busy else _POLL_INTERVAL
            try:
                message = debuggee.receive(timeout=timeout)
            except KeyboardInterrupt:
                if self.gpu_active:
                    self.gpu_frontend.interrupt()  # cuda-gdb stops the kernel
                else:
                    debuggee.interrupt()  # no terminal job control: pass Ctrl-C on
                continue
            except ChannelClosed:
                return True
            except ProtocolError as exc:
                self.error(f"pkdb: unreadable message from the debuggee ({exc})")
                continue
            if message is None:
                if debuggee.poll() is not None:
                    return True
                if not busy and not self._gpu_attached() and debuggee.resume_if_stopped():
                    self.terminal.give_to(debuggee.pgid)
                continue
            handler = self.message_handlers.get(message.TYPE)
            if handler is not None and handler(message):
                return self._finished_request is not None

    def _program_ended(self) -> Finished | None:
        """The run is over: reap it, then report, quit, or hand back a restart."""
        debuggee, self.debuggee = self.debuggee, None
        self.agent_prompt = None
        request, self._finished_request = self._finished_request, None
        assert debuggee is not None
        gdb_lost = self._gdb_loss()
        if gdb_lost is not None and request is None:
            # gdb's breakpoints are still in the program's code, and threads it held run
            # on: nothing of the run can be trusted. End it (killed first, see
            # _stop_debuggee).
            debuggee.terminate()
            self._leave_kernel(close=True)
            self.error(
                f"{gdb_lost}; the program it was debugging was ended with it ('run' or "
                "'restart' starts it again)"
            )
            return None
        if request is None and self._kernel is not None and self._kernel.attached:
            # The program is exiting under gdb: let it finish before gdb detaches. gdb 13
            # aborts, dumping core, when told to detach from a process whose threads are
            # still exiting (linux-nat.c: "Assertion `num_lwps (pid) == 1' failed").
            debuggee.wait_exited(_EXIT_PATIENCE)
        self._leave_kernel(close=True)
        if request is not None:
            debuggee.terminate()  # the user asked; don't wait for its threads
            if request.reason == "quit":
                self.finished = True
                return None
            return request
        code = debuggee.wait()
        self.exit_status = code if code >= 0 else 128 - code
        self.message(describe_exit(code))
        if code in _CRASH_CODES and not self.settings.get("debug_all_kernels"):
            # Kernels without breakpoints run release builds, outside gdb's sight.
            self.message(
                "If it crashed inside a kernel: 'set debug_all_kernels on' then 'run' stops "
                "at the faulting Python line (debug builds check every view index)."
            )
        return None

    def _gdb_loss(self) -> str | None:
        """How gdb (or cuda-gdb) ended, when it died while attached to the program
        (killed from outside, say); None while it runs, or when it is not attached."""
        gpu = self._gpu.session if self._gpu is not None else None
        for session, name in ((self._kernel, "gdb"), (gpu, "cuda-gdb")):
            if session is None or not session.attached or session.controller.alive:
                continue
            status = session.controller.exit_status
            return describe_exit(status, name) if status is not None else f"{name} ended"
        return None

    def _gpu_attached(self) -> bool:
        return self._gpu is not None and self._gpu.attached

    def _notice_lost_process(self) -> bool:
        """Between commands: the program or gdb died while the session did not look
        (killed from outside, say). Say which and how, end what is left of the run, and
        go back to host mode ('run' or 'restart' start the program again). True when
        one did. (In host mode, the next command that reaches the program reports its
        end, as it always did.)"""
        debuggee = self.debuggee
        if debuggee is None:
            if self._gdb_loss() is not None:
                self._leave_kernel(close=True)
            return False
        if self._gdb_loss() is None and (self.mode is self.host_mode or not debuggee.gone()):
            return False
        self._finished_request = None
        restart = self._program_ended()
        assert restart is None
        return True

    def _stop_debuggee(self) -> None:
        # Kill first, then let gdb go: detaching first would let a held kernel run on.
        if self.debuggee is not None:
            self.debuggee.terminate()
            self.debuggee = None
        self._leave_kernel(close=True)
        self.agent_prompt = None
        self._finished_request = None

    def _on_output(self, message: Output) -> bool:
        self._write(message.text)
        return False

    def _on_state(self, message: StateChanged) -> bool:
        self.state = message.state
        return False

    def _on_prompt(self, message: Prompt) -> bool:
        self.agent_prompt = message
        return True

    def _on_finished(self, message: Finished) -> bool:
        self._finished_request = message
        return True

    # -- kernel debugging ------------------------------------------------------------

    def _on_kernel_launch(self, message: KernelLaunch) -> bool:
        """A debug build is about to run: attach gdb, set breakpoints, then let it go."""
        assert self.debuggee is not None
        # One debugger traces the process at a time: the other one lets go first.
        if message.space == "cuda":
            if self._kernel is not None and self._kernel.attached:
                for failure in self._kernel.close():
                    self.error(f"gdb failed: {failure}")
            self.gpu_frontend.on_launch(message)
            return False
        if self._gpu is not None and self._gpu.attached:
            for failure in self._gpu.close():
                self.error(f"cuda-gdb failed: {failure}")
        try:
            for problem in self.kernel.begin(message):
                (self.message if problem.startswith("note: ") else self.error)(problem)
        except TargetError as exc:
            self._close_kernel()
            if self.debuggee.gone():
                return False  # it died meanwhile (why gdb could not attach): the pump says so
            self.error(f"cannot debug kernel {message.kernel}: {exc}; it runs undebugged")
        from .kernel_protocol import KernelGo

        try:
            self.debuggee.send(KernelGo(reply_to=message.id))
        except ChannelClosed:
            pass  # it died: the pump sees the end of the stream
        if message.crash_signal == signal.SIGINT and self.kernel.controller is not None:
            if message.stop_at_next_index:
                # The threads stop as they begin their next index, in the debug build; one
                # deep in a long index would keep the user waiting: interrupt then.
                self._interrupt_at = time.monotonic() + NEXT_INDEX_PATIENCE
            else:
                self._interrupt_kernel()  # Ctrl-C in a release build: gdb is there now
        return False

    def _interrupt_kernel(self) -> None:
        self._interrupt_at = None
        try:
            self.kernel.require_controller().interrupt()
        except TargetError:
            pass

    def _on_kernel_finished(self, message: KernelFinished) -> bool:
        if self.gpu_active:
            self.gpu_frontend.on_finished(message)
            return False
        self._interrupt_at = None
        moved = self._used_ignore_counts()
        if message.error:
            self.message(f"Kernel {message.kernel} failed: {message.error}")
        if self._kernel is not None:
            self._kernel.release_held_threads()  # held by `continue threads`: free them
        self._partial = None
        self._leave_kernel(close=False)
        # Told to pdb only now: the program runs on, and its next launch (handled while
        # this request waits) must find this one ended.
        try:
            for number, left in moved.items():
                self.kernel_request("ignore", number=number, count=left)
        except TargetError:
            pass  # the program went away
        return False

    def _leave_kernel(self, *, close: bool) -> None:
        if close:
            self._close_kernel()
        elif self._kernel is not None:
            self._kernel.end()
        self.mode = self.host_mode

    def _close_kernel(self) -> None:
        """Stop gdb (and cuda-gdb), and say so if one failed during the session."""
        if self._kernel is not None:
            for failure in self._kernel.close():
                self.error(f"gdb failed: {failure}")
        if self._gpu is not None:
            for failure in self._gpu.close():
                self.error(f"cuda-gdb failed: {failure}")

    def _check_kernel_stop(self) -> bool:
        """A kernel thread stopped: enter kernel mode and give the user the word."""
        try:
            stop = self.kernel.poll_stop(0.0) if self.kernel.stop is None else None
        except TargetError:
            return False
        if stop is None:
            return False
        launch = self.kernel.launch
        assert launch is not None
        if launch.partial_debug and self._to_next_index(stop.event):
            return False
        self.mode = KernelMode(launch.space)
        if self.kernel.finishing:
            self._cancel_finish()
        step_in = self.kernel.step_in_breakpoint
        if step_in is not None and stop.event.breakpoint == step_in:
            stop.event = self.kernel.enter_body(stop.event)  # `step` at the dispatch line
        hit = self._hit_breakpoint(stop.event)
        silent = hit is not None and hit.get("silent")
        text = self.kernel_stop_text(stop.event)  # (also forgets a temporary breakpoint)
        if not silent:
            self.message(text)
        if hit is not None:
            self._count_hit(hit)
        others = [t for t in stop.stopped if t != stop.thread]
        if (others or stop.held) and not silent:
            parts = []
            if others:
                # After Ctrl-C or a signal the others were stopped where they ran.
                also = (
                    "also at a breakpoint" if stop.event.breakpoint is not None else "also stopped"
                )
                numbers = sorted(self.kernel.thread_number(t) for t in others)
                parts.append(f"{also}: thread{'s' * (len(others) > 1)} "
                             + ", ".join(map(str, numbers)))  # fmt: skip
            if stop.held:
                parts.append(f"{len(stop.held)} other thread{'s' * (len(stop.held) > 1)} held")
            self.message(f"({'; '.join(parts)})")
        self._show_displays()
        if hit is not None and hit.get("commands"):
            # pdb's `commands N`: run before the user has the word (a resuming one last).
            self.cmdqueue[:0] = list(hit["commands"])
        return True

    def _used_ignore_counts(self) -> dict[int, int]:
        """The launch is over: what gdb left of the ignore counts it used, by pdb
        breakpoint number (the next launch goes on from them)."""
        kernel = self._kernel
        if kernel is None or kernel.launch is None or kernel.controller is None:
            return {}
        try:
            return kernel.note_ignore_counts()
        except TargetError:
            return {}  # gdb went away: nothing to carry

    def _cancel_finish(self) -> None:
        """A stop (Ctrl-C) during `finish`: the kernel is debugged again, its breakpoints
        back in gdb, and the dispatch no longer ends with a stop after it."""
        kernel = self.kernel
        kernel.finishing = False
        launch = kernel.launch
        assert launch is not None
        current = {b["number"]: b for b in self.state.get("breakpoints", [])}
        again = [
            current[b["number"]]
            for b in launch.breakpoints
            if b["number"] in current and current[b["number"]].get("enabled", True)
        ]
        try:
            self.kernel_request("finish_cancel")
            for problem in kernel.sync_breakpoints(again):
                self.error(problem)
        except TargetError as exc:
            self.error(f"the breakpoints could not be set again: {exc}")

    def _hit_breakpoint(self, event: StopEvent) -> dict[str, Any] | None:
        """The pdb breakpoint (as the agent reports it) whose gdb breakpoint stopped
        ``event``'s thread, if one did."""
        if event.breakpoint is None:
            return None
        number = self.kernel.pdb_number(event.breakpoint)
        return next((b for b in self.state.get("breakpoints", []) if b["number"] == number), None)

    def _count_hit(self, bp: dict[str, Any]) -> None:
        """pdb's hit count (and its ignore count, which gdb used up) of a kernel stop."""
        try:
            self.kernel_request("hit", number=bp["number"])
        except TargetError:
            pass

    def report_kernel_stop(self, event: StopEvent) -> None:
        """Where a step or next stopped, then the displays whose value changed."""
        self.message(self.kernel_stop_text(event))
        self._show_displays()

    def _show_displays(self) -> None:
        if self.kernel_displays:
            from .commands.kernel_display import show_changed

            show_changed(self)

    def _to_next_index(self, event: StopEvent) -> bool:
        """Ctrl-C in a launch that runs most indices as release code (its breakpoints'
        conditions hold only at some): the threads are most likely there, with no
        variables. Send the rest of the launch to the debug build and stop the first
        thread to begin its next index, as Ctrl-C in a fast debug build does. True when
        the threads run on towards that stop."""
        from .kernel_session import is_interrupt

        launch = self.kernel.launch
        if launch is None or not is_interrupt(event) or not launch.kernel_symbol:
            return False
        try:
            self.debug_rest_of_launch()
            self.kernel.run_to_next_index()
        except TargetError:
            return False
        self._interrupt_at = time.monotonic() + NEXT_INDEX_PATIENCE
        return True

    def debug_rest_of_launch(self) -> None:
        """A launch running only some indices in the debug build (``partial_debug``):
        have its remaining indices run there too (once)."""
        launch = self.kernel.launch
        if launch is not None and launch.partial_debug:
            launch.partial_debug = False
            self.kernel_request("debug_code")

    def kernel_stop_text(self, event: StopEvent) -> str:
        """pdb's ``> /path/yax.py(18)yAx()``, the thread and why it stopped (``OpenMP
        thread 1 (j=10) hit breakpoint 1``), then ``-> source`` (see pkdb.stop_lines)."""
        from .kernel_protocol import FAILED_CHECK
        from .kernel_session import cpp_name, is_interrupt
        from .stop_lines import fault_text, stop_text

        launch = self.kernel.launch
        space = {"openmp": "OpenMP", "serial": "Serial"}.get(launch.space, launch.space)
        frame = event.frame
        if is_interrupt(event) and not self.kernel.python_frames(event.thread_id):
            return self._interrupt_without_line(space, event)
        if frame is None or not (frame.file or "").endswith(".py"):
            # a fault or signal inside runtime code: show the Python line that caused it
            frame = self.kernel.location(event.thread_id) or frame
        details = []
        try:
            if self.kernel.team_member:
                position = self.kernel.team_position(event.thread_id)
                if position is not None:
                    details.append(f"league {position.league_rank}, team_rank {position.team_rank}")
            else:
                level = self.kernel.frame_level(event.thread_id, 0)
                controller = self.kernel.require_controller()
                for name in launch.index.split(", "):
                    value = controller.evaluate(cpp_name(name), event.thread_id, level)
                    details.append(f"{name}={value}")
        except TargetError:
            pass  # stopped in a helper, where the index is not in scope; or release code
        who = f"{space} thread {self.kernel.thread_number(event.thread_id)}"
        if details:
            who += f" ({', '.join(details)})"
        release_note = (
            "(the kernel's release build: its variables are not available; to see them, run "
            "it again with a breakpoint in it or 'set debug_all_kernels on')"
        )
        fault = self.kernel.fault_message(event)
        if fault is not None:
            notes: tuple[str, ...] = ()
            if launch.crash_signal == FAILED_CHECK:
                notes = (
                    "(this launch ran the kernel's checked release build, which keeps no "
                    "variables; to see them: 'set debug_all_kernels on', 'restart', "
                    "'continue')",
                )
            elif launch.crash_signal:
                notes = (release_note,)
            return stop_text(frame, who, f"stopped by a failed check: {fault_text(fault)}", notes)
        if event.breakpoint is not None and event.breakpoint == self.kernel.next_index_breakpoint:
            self.kernel.forget_next_index_breakpoint()
            return stop_text(
                frame,
                who,
                "interrupted",
                (
                    "(stopped as the thread began its next index, in the debug build; until "
                    "Ctrl-C this launch ran release code, proven unable to fail a check)",
                ),
            )
        notes = ()
        if launch.stop_at_next_index:
            notes = (
                "(threads still in this launch's release code show no variables; each one's "
                "next index runs the debug build: 'continue' stops the first to begin one)",
            )
        elif launch.crash_signal:
            notes = (release_note,)
        if is_interrupt(event):
            return stop_text(frame, who, "interrupted", notes)
        if event.reason == "signal-received":
            return stop_text(frame, who, f"received {event.signal_name or 'a signal'}", notes)
        number = self.kernel.pdb_number(event.breakpoint)
        if number is None:  # a step
            return stop_text(frame, who)
        if event.breakpoint is not None:
            self._forget_temporary(number)
        return stop_text(frame, who, f"hit breakpoint {number}")

    def _interrupt_without_line(self, space: str, event: StopEvent) -> str:
        """A Ctrl-C stop in kernel code that maps to no Python line (a loop the compiler
        made of a recursion, say): where it is in C++ terms, and the dispatch's line."""
        stack = self.kernel.require_controller().stack(event.thread_id, max_depth=1)
        inner = stack[0] if stack else None
        where = ""
        if inner is not None and inner.file:
            where = f", in {inner.function} at {inner.file}:{inner.line}"
        call = self.kernel.host_frames()
        site = f"; the kernel was launched at {call[0].file}:{call[0].line}" if call else ""
        number = self.kernel.thread_number(event.thread_id)
        return (
            f"{space} kernel interrupted in kernel code with no Python line (thread "
            f"{number}{where}){site}\n('threads' shows where the others are; "
            "'continue' resumes, 'quit' ends the program)"
        )

    def _forget_temporary(self, number: int) -> None:
        for bp in self.state.get("breakpoints", []):
            if bp.get("number") == number and bp.get("temporary"):
                self.kernel.gdb_numbers.pop(number, None)
                self.kernel_request("clear", number=number)

    def watch_partial_continue(self, threads: list[int]) -> None:
        self._partial = PartialContinue(self.kernel.require_stop(), list(threads))

    def _check_partial_continue(self) -> bool:
        """True when the threads a ``continue threads`` resumed have all ended their
        iterations: they are held again, and the user has the word."""
        partial = self._partial
        if partial is None or not partial.due():
            return False
        kernel = self.kernel
        controller = kernel.require_controller()
        if kernel.launch is None:
            return False  # not yet known: look again later
        # An OpenMP thread done with its indices waits for the others in a futex (asleep);
        # one running kernel code is runnable.
        asleep = all(controller.thread_asleep(t) for t in partial.threads)
        if not asleep and not partial.look_at_stacks():
            return False  # running kernel code: look again later
        controller.interrupt(partial.threads)
        for _ in partial.threads:
            controller.wait_for_stop_among(partial.threads, timeout=2.0)
        places = {t: waiting_place(kernel, t) for t in partial.threads}
        if not partial.all_waiting(places):
            controller.continue_(partial.threads)  # kernel code to run yet: on
            return False
        self._partial = None
        stop = partial.stop
        stop.finished.update(t for t, place in places.items() if place == DONE)
        kernel.stop = stop
        self.mode = KernelMode(kernel.launch.space)
        self.message(waiting_note(places, kernel.thread_number))  # type: ignore[arg-type]
        if stop.thread in stop.finished:
            self._switch_to_a_held_thread(stop)
        return True

    def _switch_to_a_held_thread(self, stop: Any) -> None:
        """The current thread is done (no variables left to show): the user goes on with
        the first held thread still at a Python line, as after 'thread N'."""
        for thread in [*stop.stopped, *stop.held]:
            if thread not in stop.finished and self.kernel.python_frames(thread):
                self.message(self.kernel.select_thread(thread))
                return

    def resume_kernel(self) -> None:
        """Let the kernel run until the next stop, its end, or the next host prompt."""
        self.kernel.stop = None
        restart = self._send_and_wait(None)
        if restart is not None:
            self.start_program(restart.entry, restart.argv)

    def resume_gpu(self, *, stepping: bool = False) -> None:
        """The GPU kernel runs (cuda-gdb was told): wait for its next stop, its end, or the
        next host prompt. ``stepping``: a step that ends between two indices of the
        thread steps on (see GpuFrontend.check_stop)."""
        from .gpu_frontend import STEP_ON_LIMIT

        gpu = self.gpu_frontend
        gpu.session.stop = None
        gpu.stepping = STEP_ON_LIMIT if stepping else 0
        self.mode = self.host_mode  # until it stops again
        restart = self._send_and_wait(None)
        if restart is not None:
            self.start_program(restart.entry, restart.argv)

    def kernel_request(
        self, action: str, _patience: float = _REQUEST_PATIENCE, **args: Any
    ) -> KernelReply:
        """Ask the agent; other messages meanwhile are handled as usual. A request that
        runs the user's code (``eval`` of a kernel, say) is waited for as long as it
        takes, or until Ctrl-C; any other must be answered within ``_patience`` seconds.
        While an evaluation the user interrupted runs on, a request is sent only when
        the agent shows it can answer (see :meth:`_agent_answers`)."""
        from .kernel_protocol import USER_CODE_ACTIONS, KernelReply, KernelRequest

        debuggee = self.debuggee
        if debuggee is None:
            raise TargetError("the program is not running")
        if self._abandoned_requests and action != "ping" and not self._agent_answers():
            raise TargetError(_BLOCKED)
        user_code = action in USER_CODE_ACTIONS
        self._kernel_request_ids += 1
        request_id = self._kernel_request_ids
        try:
            debuggee.send(KernelRequest(id=request_id, action=action, args=args))
        except ChannelClosed:
            raise TargetError("the program ended") from None
        deadline = None if user_code else time.monotonic() + _patience
        while True:
            try:
                message = debuggee.receive(timeout=_KERNEL_POLL_INTERVAL)
            except ChannelClosed:
                raise TargetError("the program ended") from None
            except KeyboardInterrupt:
                if not user_code:
                    raise
                self._abandoned_requests.add(request_id)
                raise TargetError(
                    "interrupted: the evaluation runs on in the program until it returns "
                    "(a running kernel cannot be stopped midway); its result is dropped"
                    + _busy_note(len(self._abandoned_requests))
                ) from None
            if message is None:
                if deadline is not None and time.monotonic() > deadline:
                    raise TargetError("the program did not answer")
                if user_code:
                    self._tend_evaluation_threads()
                continue
            if isinstance(message, KernelReply) and message.reply_to == request_id:
                return message
            handler = self.message_handlers.get(message.TYPE)
            if handler is not None:
                handler(message)

    def _agent_answers(self) -> bool:
        """Whether the agent's reader thread answers within a second: an evaluation the
        user stopped waiting for may hold Python's interpreter lock (a long call into C
        code), and then no request of the session would be answered before it ends."""
        try:
            self.kernel_request("ping", _patience=_PING_PATIENCE)
        except TargetError:
            return False
        return True

    def _on_stray_reply(self, message: KernelReply) -> bool:
        self._abandoned_requests.discard(message.reply_to)
        return False

    def _tend_evaluation_threads(self) -> None:
        """While an evaluation runs at a kernel stop: its threads run undebugged, so a
        stop of one at a breakpoint or a debug-build check goes on at once; one that a
        signal stopped has crashed the program, which is said and ends the wait."""
        from .kernel_session import is_interrupt

        kernel = self.kernel
        stop = kernel.stop
        if kernel.controller is None or stop is None:
            return
        held = {stop.thread, *stop.stopped, *stop.held}
        controller = kernel.controller
        while (event := controller.poll_stop()) is not None:
            if event.exited:
                raise TargetError("the program ended during the evaluation")
            if event.thread_id in held:
                continue  # a held kernel thread: nothing of the evaluation's
            if event.reason == "signal-received" and not is_interrupt(event):
                where = event.frame.function if event.frame else "??"
                raise TargetError(
                    f"the evaluation crashed the program: thread {event.thread_id} received "
                    f"{event.signal_name or 'a signal'} in {where}"
                )
            controller.continue_([event.thread_id])

    def _write(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()


class PartialContinue:
    """The threads a ``continue threads`` resumed, and the stop the others stay held at."""

    #: How often to look whether they all ended their iterations.
    INTERVAL = 0.5

    def __init__(self, stop: Any, threads: list[int]) -> None:
        self.stop = stop
        self.threads = threads
        self._next = time.monotonic() + self.INTERVAL
        self._polls = 0
        self._places: dict[int, str | None] = {}  # where all_waiting saw them last

    def due(self) -> bool:
        if time.monotonic() < self._next:
            return False
        self._next = time.monotonic() + self.INTERVAL
        return True

    def look_at_stacks(self) -> bool:
        """Whether to stop the resumed threads to see where they are, though they do
        not sleep: every other poll (a thread at a team barrier spins)."""
        self._polls += 1
        return self._polls % 2 == 0

    def all_waiting(self, places: dict[int, str | None]) -> bool:
        """Whether the resumed threads, at ``places`` (see partial_waits), wait for held
        ones: all done, or waiting at team barriers where the last look saw them too (a
        thread passes a barrier its teammates reach at once)."""
        seen, self._places = self._places, places
        if any(place is None for place in places.values()):
            return False
        return all(place == DONE for place in places.values()) or places == seen


def _busy_note(abandoned: int) -> str:
    """What the program has left to run evaluations once ``abandoned`` of them run on."""
    left = EVALUATION_THREADS - abandoned
    if left > 0:
        return ""
    return "; the next evaluation waits for one of those to end"


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
