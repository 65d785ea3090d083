"""Where the threads resumed by ``continue threads A:B`` wait for the held ones.

Resumed alone, a thread can run out of things to do while others are held: it has run
all its iterations and waits at the kernel's end (asleep in the OpenMP runtime), or, in
a TeamPolicy kernel, it waits at a team barrier (``team_barrier()``, a nested reduce)
for a teammate that is held -- spinning, so it never looks asleep. Either way the
kernel cannot go on until the user lets the others run: the prompt must come back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .team_stepping import BARRIER

if TYPE_CHECKING:
    from .kernel_session import KernelSession

#: A thread with no Python frame left: done with its iterations.
DONE = "done"


def waiting_place(kernel: KernelSession, thread: int) -> str | None:
    """For a stopped ``thread``: :data:`DONE`, ``"FILE:LINE"`` of the team barrier it
    waits at, or None when it is running kernel code."""
    stack = kernel.require_controller().stack(thread, max_depth=64)
    frames = kernel.python_frames(thread, stack)
    if not frames:
        return DONE
    in_barrier = any((f.function or "").split("(")[0] == BARRIER for f in stack)
    return f"{frames[0].file}:{frames[0].line}" if in_barrier else None


def waiting_note(places: dict[int, str], number: Callable[[int], int] = lambda t: t) -> str:
    """What to tell the user about the resumed threads, all waiting (``places``: as
    :func:`waiting_place` says, none None; ``number`` gives a thread the number users
    see)."""
    lines = []
    done = [t for t, place in places.items() if place == DONE]
    if done:
        names = ", ".join(str(number(t)) for t in done)
        several = len(done) > 1
        lines.append(
            f"Thread{'s' * several} {names} ran all {'their' if several else 'its'} "
            f"iterations and wait{'' if several else 's'} at the end of the kernel for the "
            "held threads ('threads' lists them, 'continue' lets them all finish)."
        )
    at_barrier: dict[str, list[int]] = {}
    for thread, place in places.items():
        if place != DONE:
            at_barrier.setdefault(place, []).append(thread)
    for place, threads in at_barrier.items():
        names = ", ".join(str(number(t)) for t in threads)
        several = len(threads) > 1
        lines.append(
            f"Thread{'s' * several} {names} wait{'' if several else 's'} at the team barrier "
            f"at {place} for held threads of {'their' if several else 'its'} team ('threads' "
            "lists them; 'continue' lets them all run, 'continue threads A:B' some of them)."
        )
    return "\n".join(lines)
