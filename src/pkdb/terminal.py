"""Job control: the running program gets the terminal, the front end takes it back.

The debuggee runs in its own process group (so it can be ended with everything it
started). While it runs, that group is the terminal's foreground group, as a shell (or
gdb) would do: Ctrl-C interrupts the program, not the front end, and the program may read
the terminal. At a prompt the front end is in the foreground again. Without a
controlling terminal (scripts, CI) this does nothing; the front end then forwards
SIGINT itself.
"""

from __future__ import annotations

import os
import signal
import sys
import termios
from typing import TextIO


class Terminal:
    """The controlling terminal on ``stdin``, if the front end has it in the foreground."""

    def __init__(self, stream: TextIO | None = None) -> None:
        stream = stream if stream is not None else sys.stdin
        self._fd: int | None = None
        self._modes: list | None = None
        try:
            fd = stream.fileno()
            if os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp():
                self._fd = fd
        except (OSError, ValueError, AttributeError):
            pass
        if self._fd is not None:
            # Taking the terminal back from the background must not stop us.
            signal.signal(signal.SIGTTOU, signal.SIG_IGN)

    @property
    def controlled(self) -> bool:
        """True when job control is in effect."""
        return self._fd is not None

    def give_to(self, pgid: int) -> None:
        """Make process group ``pgid`` the foreground group (remembering our modes)."""
        if self._fd is None:
            return
        try:
            self._modes = termios.tcgetattr(self._fd)
            os.tcsetpgrp(self._fd, pgid)
        except OSError:
            pass  # the group is already gone: nothing to hand over

    def take_back(self) -> None:
        """Become the foreground group again and restore our terminal modes (the
        program may have left the terminal raw or without echo)."""
        if self._fd is None:
            return
        try:
            os.tcsetpgrp(self._fd, os.getpgrp())
            if self._modes is not None:
                termios.tcsetattr(self._fd, termios.TCSADRAIN, self._modes)
        except OSError:
            pass  # terminal hung up
