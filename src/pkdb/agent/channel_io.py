"""File-like objects backed by the channel, so a stock :class:`pdb.Pdb` runs over it.

pdb (through :class:`cmd.Cmd` with ``use_rawinput`` off) writes its prompt to its
``stdout`` and then calls ``stdin.readline()``. :class:`ChannelOutput` sends complete
lines as ``output`` messages and keeps a trailing partial line; :class:`ChannelInput`
takes that partial line as the prompt text of its ``prompt`` request. So every prompt
pdb shows -- ``(pkdb)``, ``(com)`` of ``commands``, the nested ``debug`` prompt, the
``>>>`` of :class:`ChannelConsole` -- reaches the front end as a prompt, with no pdb
method copied here.
"""

from __future__ import annotations

import code
import ctypes
import io
import sys
from collections.abc import Callable

from ..protocol import Command, Output, Prompt
from .link import AgentLink


def _c_fflush() -> Callable[[], None]:
    """``fflush(NULL)`` of the C library, or a no-op where there is none."""
    try:
        libc = ctypes.CDLL(None)
        fflush = libc.fflush
    except (OSError, AttributeError):
        return lambda: None
    fflush.argtypes = [ctypes.c_void_p]
    return lambda: fflush(None)


_flush_c_streams = _c_fflush()


def flush_program_streams() -> None:
    """Flush the program's own stdout/stderr (inherited terminal fds) so its output
    lands before whatever the debugger sends next -- Python's buffers and C's (native
    kernels print through C stdio)."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    _flush_c_streams()


class ChannelOutput(io.TextIOBase):
    """Debugger output: complete lines go to the front end at once."""

    def __init__(self, link: AgentLink) -> None:
        super().__init__()
        self._link = link
        self._pending = ""

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        self._pending += text
        cut = self._pending.rfind("\n") + 1
        if cut:
            complete, self._pending = self._pending[:cut], self._pending[cut:]
            self._send(complete)
        return len(text)

    def flush(self) -> None:
        """Keep the partial line: it may be a prompt (see :class:`ChannelInput`)."""

    def flush_partial(self) -> None:
        """Send the partial line too (before the program runs on)."""
        if self._pending:
            text, self._pending = self._pending, ""
            self._send(text)

    def take_partial(self) -> str:
        text, self._pending = self._pending, ""
        return text

    def _send(self, text: str) -> None:
        flush_program_streams()
        self._link.send(Output(text=text))


class ChannelInput(io.TextIOBase):
    """Debugger input: each ``readline`` is a ``prompt`` request to the front end.

    ``is_main(prompt)`` says whether the prompt is the debugger's command prompt;
    ``before_prompt`` runs first (the runner reports changed breakpoints there).
    """

    def __init__(
        self,
        link: AgentLink,
        output: ChannelOutput,
        *,
        is_main: Callable[[str], bool] = lambda prompt: True,
        before_prompt: Callable[[], None] = lambda: None,
    ) -> None:
        super().__init__()
        self._link = link
        self._output = output
        self._is_main = is_main
        self._before_prompt = before_prompt

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def readable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def readline(self, size: int | None = -1) -> str:
        prompt = self._output.take_partial()
        self._before_prompt()
        flush_program_streams()
        request = Prompt(id=self._link.new_id(), prompt=prompt, main=self._is_main(prompt))
        reply = self._link.request(request, interruptible=False)
        assert isinstance(reply, Command)
        if reply.interrupt:
            raise KeyboardInterrupt
        if reply.line is None:
            return ""  # EOF
        return reply.line + "\n"

    def read(self, size: int | None = -1) -> str:
        return self.readline()


class ChannelConsole(code.InteractiveConsole):
    """``interact`` over the channel: pdb's version reads the real stdin."""

    def __init__(self, namespace: dict, stdin: ChannelInput, stdout: ChannelOutput) -> None:
        super().__init__(locals=namespace)
        self._stdin = stdin
        self._stdout = stdout

    def raw_input(self, prompt: str = "") -> str:
        self._stdout.write(prompt)
        line = self._stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\n")

    def write(self, data: str) -> None:
        self._stdout.write(data)
