"""Kernel mode's requests to the agent (``kernel-request``, answered by its reader
thread while the program's main thread is held in a kernel or at a host stop), and
what the front end keeps of the requests the user stopped waiting for."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .channel import ChannelClosed
from .protocol import EVALUATION_THREADS
from .targets.errors import TargetError

if TYPE_CHECKING:
    from .frontend import Frontend
    from .kernel_protocol import KernelReply

#: While a kernel runs under gdb, how long to wait for the agent before looking at gdb.
KERNEL_POLL_INTERVAL = 0.005
#: How long a request that runs none of the user's code may take to be answered.
REQUEST_PATIENCE = 10.0
#: How long the agent may take to answer a ping while an interrupted evaluation runs.
PING_PATIENCE = 1.0
_BLOCKED = (
    "the program cannot answer: the evaluation you interrupted still runs and holds "
    "Python's interpreter lock (a long call into C code: sum(range(...)), a NumPy "
    "operation...), so Python commands wait until it returns. gdb's commands still "
    "answer (threads, where, send ...); 'quit' ends the program"
)


class AgentRequests:
    """Sends kernel requests for one front end and waits for their replies."""

    def __init__(self, frontend: Frontend) -> None:
        self.frontend = frontend
        self._ids = 0
        # User-code requests (eval at a kernel stop) the user stopped waiting for with
        # Ctrl-C: the program runs them to their end; their replies are dropped.
        self.abandoned: set[int] = set()

    def ask(self, action: str, _patience: float = REQUEST_PATIENCE, **args: Any) -> KernelReply:
        """Ask the agent; other messages meanwhile are handled as usual. A request that
        runs the user's code (``eval`` of a kernel, say) is waited for as long as it
        takes, or until Ctrl-C; any other must be answered within ``_patience`` seconds.
        While an evaluation the user interrupted runs on, a request is sent only when
        the agent shows it can answer (see :meth:`agent_answers`)."""
        from .kernel_protocol import USER_CODE_ACTIONS, KernelRequest

        frontend = self.frontend
        debuggee = frontend.debuggee
        if debuggee is None:
            raise TargetError("the program is not running")
        if self.abandoned and action != "ping" and not self.agent_answers():
            raise TargetError(_BLOCKED)
        user_code = action in USER_CODE_ACTIONS
        self._ids += 1
        request_id = self._ids
        try:
            debuggee.send(KernelRequest(id=request_id, action=action, args=args))
        except ChannelClosed:
            raise TargetError("the program ended") from None
        deadline = None if user_code else time.monotonic() + _patience
        try:
            return self._reply_to(request_id, deadline, user_code)
        except KeyboardInterrupt:
            # Wherever Ctrl-C lands while the user's code runs -- waiting for a message,
            # tending the evaluation's threads, handling another message --, the
            # evaluation runs on: say so and drop its reply when it comes.
            if not user_code:
                raise
            self.abandoned.add(request_id)
            raise TargetError(
                "interrupted: the evaluation runs on in the program until it returns "
                "(a running kernel cannot be stopped midway); its result is dropped"
                + _busy_note(len(self.abandoned))
            ) from None

    def _reply_to(self, request_id: int, deadline: float | None, user_code: bool) -> KernelReply:
        """The agent's reply to ``request_id``, handling other messages meanwhile."""
        from .kernel_protocol import KernelReply

        frontend = self.frontend
        debuggee = frontend.debuggee
        assert debuggee is not None
        while True:
            try:
                message = debuggee.receive(timeout=KERNEL_POLL_INTERVAL)
            except ChannelClosed:
                raise TargetError("the program ended") from None
            if message is None:
                if deadline is not None and time.monotonic() > deadline:
                    raise TargetError("the program did not answer")
                if user_code:
                    frontend.cpu_frontend.tend_evaluation_threads()
                continue
            if isinstance(message, KernelReply) and message.reply_to == request_id:
                return message
            handler = frontend.message_handlers.get(message.TYPE)
            if handler is not None:
                handler(message)

    def agent_answers(self) -> bool:
        """Whether the agent's reader thread answers within a second: an evaluation the
        user stopped waiting for may hold Python's interpreter lock (a long call into C
        code), and then no request of the session would be answered before it ends."""
        try:
            self.ask("ping", _patience=PING_PATIENCE)
        except TargetError:
            return False
        return True

    def on_stray_reply(self, message: KernelReply) -> bool:
        self.abandoned.discard(message.reply_to)
        return False


def _busy_note(abandoned: int) -> str:
    """What the program has left to run evaluations once ``abandoned`` of them run on."""
    left = EVALUATION_THREADS - abandoned
    if left > 0:
        return ""
    return "; the next evaluation waits for one of those to end"
