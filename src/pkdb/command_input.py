"""Where the next command line comes from, for the front end and the multi-rank console.

First the ``-c`` / ``-x`` script lines, echoed after the prompt so that the output reads
like a session; then the terminal (``input()``, so readline edits and keeps history);
else a pipe, each line echoed likewise. None at the end of input.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TextIO


def read_command_line(
    prompt: str,
    script: deque[str],
    interactive: bool,
    stdin: TextIO,
    write: Callable[[str], object],
) -> str | None:
    """The next command line after showing ``prompt``; None at end of input."""
    if script:
        line = script.popleft()
        write(f"{prompt}{line}\n")
        return line
    if interactive:
        try:
            return input(prompt)
        except EOFError:
            write("\n")
            return None
    write(prompt)
    line = stdin.readline()
    if not line:
        write("\n")
        return None
    line = line.rstrip("\r\n")
    write(line + "\n")
    return line
