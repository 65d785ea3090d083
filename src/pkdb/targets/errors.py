"""The error of every target debugger: in a module of its own, so that code which only
catches it (the front end, before any kernel is debugged) loads nothing else."""

from __future__ import annotations


class TargetError(Exception):
    """The target debugger refused a command, timed out, or is gone.

    ``message`` is the debugger's own error text (for gdb, the ``msg`` of ``^error``);
    ``command`` is the command that failed, when known.
    """

    def __init__(self, message: str, command: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.command = command

    def __str__(self) -> str:
        return self.message
