"""The program's runs, as the front end drives them: start one, let it run while
printing what the agent sends until it prompts or ends, and report its end (or the loss
of its debugger) -- the session never depends on the debuggee staying alive."""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .agent_requests import KERNEL_POLL_INTERVAL
from .channel import ChannelClosed
from .protocol import (
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

if TYPE_CHECKING:
    from .cpu_frontend import CpuFrontend
    from .gpu_frontend import GpuFrontend
    from .modes import HostMode, Mode
    from .settings import Settings
    from .space_frontend import SpaceFrontend
    from .terminal import Terminal

#: While the program runs, how often to check that it is still alive even though the
#: channel is open (a forked child of the program may hold the agent's socket).
_POLL_INTERVAL = 0.25
#: Seconds a program that ended (its agent gone) gets to finish exiting before gdb lets
#: go of it; a program still running then (threads it left behind) is detached anyway.
_EXIT_PATIENCE = 5.0
#: Exit statuses of a program killed by a crash signal.
_CRASH_CODES = frozenset(-s for s in (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGABRT))


class ProgramRun:
    """The program's life cycle, a part of :class:`pkdb.frontend.Frontend` (which sets
    the state below and provides the methods it calls)."""

    argv: list[str]
    module: bool
    exit_status: int
    settings: Settings
    mode: Mode
    host_mode: HostMode
    debuggee: Debuggee | None
    agent_prompt: Prompt | None
    state: dict[str, Any]
    finished: bool
    terminal: Terminal
    message_handlers: dict[str, Callable[[Any], bool]]
    _spare_debuggee: Debuggee | None
    _finished_request: Finished | None
    _cpu: CpuFrontend | None
    _gpu: GpuFrontend | None

    if TYPE_CHECKING:  # Frontend's

        def message(self, text: str) -> None: ...
        def error(self, text: str) -> None: ...
        def leave_kernel(self, *, close: bool) -> None: ...
        def space_frontends(self) -> list[SpaceFrontend]: ...
        @property
        def kernel_active(self) -> bool: ...
        @property
        def gpu_active(self) -> bool: ...
        @property
        def gpu_frontend(self) -> GpuFrontend: ...
        def _write(self, text: str) -> None: ...

    @property
    def program_live(self) -> bool:
        """The program runs and its agent waits for a command."""
        return self.debuggee is not None and self.agent_prompt is not None

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
        debuggee = self.debuggee
        if debuggee is not None and self.program_live:
            try:
                debuggee.send(SettingsChanged(values=self.settings.as_dict()))
            except ChannelClosed:
                pass  # it died; the next command reports that

    def close(self) -> None:
        """Kill the debuggee if there is one (the session is over, however)."""
        self._stop_debuggee()
        if self._spare_debuggee is not None:
            self._spare_debuggee.terminate()
            self._spare_debuggee = None
        self.terminal.take_back()

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
            if self._cpu is not None and self._cpu.poll():
                return False
            # cuda-gdb stays attached between GPU launches: a release kernel's CUDA
            # exception stops the program then too.
            if self._gpu_attached() and self.gpu_frontend.check_stop():
                return False
            busy = self.kernel_active or self.gpu_active
            timeout = KERNEL_POLL_INTERVAL if busy else _POLL_INTERVAL
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
            self.leave_kernel(close=True)
            self.error(
                f"{gdb_lost}; the program it was debugging was ended with it ('run' or "
                "'restart' starts it again)"
            )
            return None
        if request is None and self._cpu is not None and self._cpu.attached:
            # The program is exiting under gdb: let it finish before gdb detaches. gdb 13
            # aborts, dumping core, when told to detach from a process whose threads are
            # still exiting (linux-nat.c: "Assertion `num_lwps (pid) == 1' failed").
            debuggee.wait_exited(_EXIT_PATIENCE)
        self.leave_kernel(close=True)
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
        for space in self.space_frontends():
            session, name = space.session, space.debugger
            if not session.attached or session.controller.alive:
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
                self.leave_kernel(close=True)
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
        self.leave_kernel(close=True)
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

    def resume_program(self) -> None:
        """Let the program run until the next stop, its end, or the next host prompt."""
        restart = self._send_and_wait(None)
        if restart is not None:
            self.start_program(restart.entry, restart.argv)
