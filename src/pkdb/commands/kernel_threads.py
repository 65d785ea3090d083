"""Kernel mode: threads, thread N, send RAW."""

from __future__ import annotations

from ..send_guard import refusal
from ..stop_lines import python_function
from ..teams import TeamPosition
from .kernel_support import KernelConsole, guarded
from .registry import Command

#: How long `send` waits for the stop of an execution command it passed to gdb.
_SEND_STOP_SECONDS = 5.0
#: The execution commands `send` lets through (send_guard refuses the others).
_EXECUTION_COMMANDS = {"stepi", "si", "nexti", "ni"}


@guarded
def do_threads(console: KernelConsole, arg: str) -> None:
    """threads
    List the kernel's threads, one a line: its OpenMP thread number (0 is
    the thread that dispatched the kernel, as omp_get_thread_num() and the
    checks' messages number them), gdb's name for it, and its Python line.
    The current thread is marked *. Switch with 'thread N'. In a TeamPolicy
    kernel each line also shows the thread's league rank (its team) and
    team rank, and the threads are listed team by team.
    """
    kernel = console.kernel
    stop = kernel.require_stop()
    controller = kernel.require_controller()
    running = 0
    rows: list[tuple[int, TeamPosition | None, str]] = []
    for thread in kernel.kernel_threads():
        number = kernel.thread_number(thread.id) if thread.stopped else thread.id
        if not thread.stopped:
            running += 1
            continue  # not held: a worker that has not reached kernel code, a pool thread
        stack = controller.stack(thread.id, max_depth=64)
        frames = kernel.python_frames(thread.id, stack)
        position = kernel.team_position(thread.id, stack)
        mark = "*" if thread.id == stop.thread else " "
        if frames:
            where = f"{frames[0].file}:{frames[0].line} ({_name(frames[0])})"
        elif thread.id in stop.finished:
            where = "(done: waits at the end of the kernel)"
        elif position is not None and any(
            (f.function or "").startswith("pk_rt::team_barrier") for f in stack
        ):
            where = "(at the end of its league rank: waits for its team)"
        elif position is not None:
            where = "(past the end of its league rank)"
        elif kernel.in_kernel_code(thread.id):
            where = "(in kernel code with no Python line)"
        else:
            where = "(held outside the kernel's lines: done, or an idle runtime thread)"
        team = f" {position.label()}" if position is not None else ""
        rows.append((number, position, f"{mark} {number:<4} {thread.target_id:<34} {where}{team}"))
    rows = _team_order(rows) if kernel.team_member else sorted(rows, key=lambda row: row[0])
    for _, _, line in rows:
        console.message(line)
    if running:
        console.message(f"  ({running} other thread{'s' * (running > 1)} running)")


def _team_order(
    rows: list[tuple[int, TeamPosition | None, str]],
) -> list[tuple[int, TeamPosition | None, str]]:
    """Team by team (threads sharing a team's state, teams by their lowest league rank),
    each team in team rank order; threads outside any team last."""
    first_league: dict[int, int] = {}
    for _, position, _ in rows:
        if position is not None:
            known = first_league.get(position.shared, position.league_rank)
            first_league[position.shared] = min(known, position.league_rank)

    def key(row: tuple[int, TeamPosition | None, str]) -> tuple[int, int, int, int]:
        thread, position, _ = row
        if position is None:
            return (1 << 62, 0, 0, thread)
        team = first_league[position.shared]
        return (team, position.shared, position.team_rank, thread)

    return sorted(rows, key=key)


def _name(frame) -> str:
    return python_function(frame.function)


@guarded
def do_thread(console: KernelConsole, arg: str) -> None:
    """thread N
    Make kernel thread N (its OpenMP thread number, as 'threads' lists
    them) the current thread.
    """
    kernel = console.kernel
    kernel.require_stop()  # before reading the argument: at a kernel stop only
    try:
        number = int(arg.strip())
    except ValueError:
        console.error("usage: thread N (see 'threads' for the numbers)")
        return
    thread = kernel.thread_of_number(number)
    if thread is None:
        console.error(f"no stopped kernel thread {number} (see 'threads')")
        return
    console.message(kernel.select_thread(thread))


@guarded
def do_send(console: KernelConsole, arg: str) -> None:
    """send RAW
    Send RAW to the target debugger (gdb) as typed, and show its answer.
    Example: send info registers rip
    Commands that run, stop or end the program (continue, next, step,
    finish, detach, kill, quit, run, attach, -exec-..., -gdb-exit, also
    under thread apply) are refused, naming the pkdb command to use:
    pkdb drives gdb's run control itself. stepi/nexti are let through.
    """
    if not arg.strip():
        console.error("usage: send GDB-COMMAND")
        return
    refused = refusal(arg)
    if refused is not None:
        console.error(refused)
        return
    stop = console.kernel.stop
    controller = console.kernel.require_controller()
    thread = stop.thread if stop else None
    text = controller.send_raw(arg.strip(), thread_id=thread)
    if thread is not None and arg.split()[0] in _EXECUTION_COMMANDS:
        # Take the stop of an execution command here, so that the next pkdb command does
        # not mistake it for its own.
        controller.wait_for_stop(timeout=_SEND_STOP_SECONDS, thread_id=thread)
    console.message(text.rstrip("\n"))


COMMANDS = [
    Command("threads", do_threads),
    Command("thread", do_thread),
    Command("send", do_send),
]
