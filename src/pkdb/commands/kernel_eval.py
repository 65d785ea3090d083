"""Kernel mode: eval (expressions and statements, over the live program), parallel_print."""

from __future__ import annotations

from ..kernel_session import cpp_name
from ..teams import TeamPosition
from .kernel_support import KernelConsole, format_value, guarded, kernel_values
from .registry import Command

#: Longer parallel_print tables show their first and last rows only.
_TABLE_HEAD, _TABLE_TAIL = 12, 4


@guarded
def do_eval(console: KernelConsole, arg: str) -> None:
    """eval EXPRESSION | eval STATEMENT
    Run Python at the kernel stop over the live program: the kernel's
    variables in the current thread, its views (the program's own arrays)
    and the call site's names. It may call any function and dispatch new
    kernels on the live arrays. Array writes land in the arrays; assigning
    a kernel variable (eval temp2 = 0.0) stores it into the held thread;
    assigning a call-site variable is seen by the host code after continue.
    """
    source = arg.strip()
    if not source:
        console.error("eval needs an expression or a statement")
        return
    run_python(console, source)


def run_python(console: KernelConsole, source: str, *, show_none: bool = True) -> None:
    """``eval``'s work: run ``source`` at the kernel stop, show an expression's value
    (``None`` too unless ``show_none`` is False, as Python's prompt does) and store the
    kernel variables it assigned into the held thread."""
    values = kernel_values(console)
    reply = console.kernel_request("exec", source=source, locals=values)
    if not reply.ok:
        console.error(reply.text)
        return
    if reply.text and (show_none or reply.text != "None"):
        console.message(reply.text)
    writes = reply.data.get("kernel_writes", {})
    if writes:
        kernel = console.kernel
        stop = kernel.require_stop()
        level = kernel.frame_level(stop.thread, stop.frame)
        controller = kernel.require_controller()
        for name, value in writes.items():
            if name == kernel.team_member:
                console.error(f"{name}: the team member cannot be assigned")
                continue
            if not isinstance(value, bool | int | float):
                console.error(f"{name}: only numbers can be stored into a kernel variable")
                continue
            kinds = kernel.launch.variable_kinds if kernel.launch else {}
            if kinds.get(name) == "int" and isinstance(value, float):
                # As in the kernel itself: a float is not silently cut to an integer.
                console.error(
                    f"{name} is an integer in the kernel: {value!r} is not stored "
                    f"(write {name} = int(...) to store its integer part)"
                )
                continue
            literal = str(int(value)) if isinstance(value, bool) else repr(value)
            controller.evaluate(f"{cpp_name(name)} = {literal}", stop.thread, level)
            number = kernel.thread_number(stop.thread)
            console.message(f"{name} = {format_value(value)} (stored in thread {number})")


@guarded
def do_parallel_print(console: KernelConsole, arg: str) -> None:
    """parallel_print EXPRESSION
    Evaluate EXPRESSION in every stopped kernel thread (over that thread's
    variables, the views and the call site's names) and show a table by
    thread; in a TeamPolicy kernel, team by team (league rank), with each
    thread's team rank. Long tables show their first and last rows.
    """
    expression = arg.strip()
    if not expression:
        console.error("parallel_print needs an expression, e.g. 'parallel_print j, temp2'")
        return
    kernel = console.kernel
    kernel.require_stop()
    index = kernel.launch.index if kernel.launch else "i"
    rows: list[tuple[int, str]] = []
    positions: list[TeamPosition | None] = []
    per_thread = []
    controller = kernel.require_controller()
    for thread in kernel.kernel_threads():
        if not thread.stopped:
            continue
        stack = controller.stack(thread.id, max_depth=64)
        if not kernel.python_frames(thread.id, stack):
            continue
        values = kernel_values(console, thread.id, 0)
        shown = [format_value(values.get(name, "?")) for name in index.split(", ")]
        rows.append((kernel.thread_number(thread.id), ", ".join(shown)))
        positions.append(kernel.team_position(thread.id, stack))
        per_thread.append(values)
    if not rows:
        console.error("no kernel thread is stopped in kernel code")
        return
    reply = console.kernel_request("eval_many", expr=expression, per_thread=per_thread)
    if not reply.ok:
        console.error(reply.text)
        return
    if kernel.team_member:
        _team_table(console, expression, rows, positions, reply.data["values"])
        return
    table = sorted(
        [(tid, idx, value) for (tid, idx), value in zip(rows, reply.data["values"], strict=True)]
    )
    table = [(str(tid), idx, value) for tid, idx, value in table]
    header = ("thread", index, expression)
    widths = [max(len(r[k]) for r in [header, *table]) for k in range(2)]
    shown = table
    if len(table) > _TABLE_HEAD + _TABLE_TAIL:
        shown = [*table[:_TABLE_HEAD], ("...", "", ""), *table[-_TABLE_TAIL:]]
    console.message(f"{header[0]:>{widths[0]}}  {header[1]:>{widths[1]}}  {header[2]}")
    for tid, idx, value in shown:
        console.message(f"{tid:>{widths[0]}}  {idx:>{widths[1]}}  {value}")
    distinct = len({r[2] for r in table})
    console.message(f"({len(table)} threads, {distinct} distinct value{'s' * (distinct != 1)})")


def _team_table(
    console: KernelConsole,
    expression: str,
    rows: list[tuple[int, str]],
    positions: list[TeamPosition | None],
    values: list[str],
) -> None:
    """parallel_print's table for a team kernel: grouped by league rank (the team),
    then by team rank; the league is shown on the first row of each team."""
    entries = sorted(
        zip(positions, (tid for tid, _ in rows), values, strict=True),
        key=lambda e: (
            (e[0].league_rank, e[0].team_rank) if e[0] else (1 << 62, 0),
            e[1],
        ),
    )
    table: list[tuple[str, str, str, str]] = []
    league_shown = None
    for position, tid, value in entries:
        league = position.league_rank if position else None
        first = league != league_shown or not table
        league_shown = league
        table.append(
            (
                ("?" if league is None else str(league)) if first else "",
                str(position.team_rank) if position else "?",
                str(tid),
                value,
            )
        )
    header = ("league", "team_rank", "thread", expression)
    widths = [max(len(r[k]) for r in [header, *table]) for k in range(3)]
    shown = table
    if len(table) > _TABLE_HEAD + _TABLE_TAIL:
        shown = [*table[:_TABLE_HEAD], ("...", "", "", ""), *table[-_TABLE_TAIL:]]
    for row in [header, *shown]:
        cells = "  ".join(f"{cell:>{width}}" for cell, width in zip(row, widths, strict=False))
        console.message(f"{cells}  {row[3]}")
    teams = len({(p.league_rank, p.shared) for p in positions if p is not None})
    distinct = len(set(values))
    console.message(
        f"({len(table)} threads in {teams} team{'s' * (teams != 1)}, "
        f"{distinct} distinct value{'s' * (distinct != 1)})"
    )


COMMANDS = [
    Command("eval", do_eval),
    Command("parallel_print", do_parallel_print),
]
