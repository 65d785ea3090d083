"""A process's or thread's scheduler state, from ``/proc`` (Linux)."""

from __future__ import annotations


def state(pid: int, tid: int | None = None) -> str | None:
    """The state letter of process ``pid`` (of its thread ``tid``): ``R`` running, ``S``
    sleeping, ``Z`` zombie...; None when it is gone or there is no ``/proc``."""
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    try:
        with open(path, "rb") as stat:
            text = stat.read()
    except OSError:
        return None
    end = text.rfind(b")")  # the command name, in parentheses, may hold anything
    return text[end + 2 : end + 3].decode("ascii", "replace") or None


def main_thread_exited(pid: int) -> bool:
    """Whether process ``pid``'s main thread has exited: a zombie (its other threads may
    still be exiting, so a wait for it does not return yet) or being reaped."""
    return state(pid) in ("Z", "X")
