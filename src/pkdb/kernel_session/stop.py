"""A kernel stop: where the user is, and what kind of stop it is."""

from __future__ import annotations

import linecache
from dataclasses import dataclass, field

from ..targets.base import FrameInfo, StopEvent


def is_interrupt(event: StopEvent) -> bool:
    """Whether a stop is an interrupt (Ctrl-C, or gdb stopping a running thread: non-stop
    mode reports that as signal 0 or SIGINT) rather than a breakpoint or a crash."""
    return event.reason == "interrupted" or (
        event.reason == "signal-received" and event.signal_name in ("SIGINT", "0", None)
    )


def at_def_line(frame: FrameInfo | None) -> bool:
    """True when ``frame`` is at the ``def`` line of a Python function: where the
    generated code declares the function's locals, before its first line runs (gdb
    stops there on entering a kernel or helper)."""
    if frame is None or not frame.file or not frame.line or not frame.file.endswith(".py"):
        return False
    return linecache.getline(frame.file, frame.line).lstrip().startswith("def ")


@dataclass
class KernelStop:
    """Where the user is: the thread and frame selected at the current kernel stop."""

    event: StopEvent
    thread: int
    frame: int = 0
    stopped: list[int] = field(default_factory=list)  # threads that reached a breakpoint
    held: list[int] = field(default_factory=list)  # threads interrupted elsewhere
    finished: set[int] = field(default_factory=set)  # threads done with their iterations
    # Failed checks of other threads that arrived with this stop, not yet reported:
    # `continue` reports each before anything runs again.
    pending_faults: list[StopEvent] = field(default_factory=list)
    # `list` with no argument goes on from here: (file, line of the listed frame, the
    # last line listed).
    listed: tuple[str, int, int] | None = None
    # What the last `return` of a helper gave (as Python shows it), for `retval`, and
    # the stop it left the thread at (another stop since: no value).
    returned: tuple[StopEvent, str] | None = None
