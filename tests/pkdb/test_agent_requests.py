"""AgentRequests: Ctrl-C while the user's code runs in the program (an eval at a kernel
stop) stops the waiting and drops the evaluation's reply, wherever in the wait it lands.
The end-to-end test is test_kernel_session's evaluated kernel that never ends; this one
makes Ctrl-C land where a PTY session only sometimes does (under load, CI saw it)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pkdb.agent_requests import AgentRequests
from pkdb.kernel_protocol import USER_CODE_ACTIONS
from pkdb.targets.errors import TargetError


class _QuietProgram:
    """A debuggee channel that takes requests and has nothing to say."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send(self, message: Any) -> None:
        self.sent.append(message)

    def receive(self, timeout: float) -> None:
        return None


def _interrupted_while_tending() -> None:
    raise KeyboardInterrupt


def test_ctrl_c_while_the_evaluation_threads_are_tended_abandons_the_evaluation() -> None:
    program = _QuietProgram()
    frontend = SimpleNamespace(
        debuggee=program,
        message_handlers={},
        cpu_frontend=SimpleNamespace(tend_evaluation_threads=_interrupted_while_tending),
    )
    requests = AgentRequests(frontend)  # type: ignore[arg-type]
    action = sorted(USER_CODE_ACTIONS)[0]
    with pytest.raises(TargetError, match="interrupted: the evaluation runs on"):
        requests.ask(action, source="1")
    assert requests.abandoned == {program.sent[0].id}
