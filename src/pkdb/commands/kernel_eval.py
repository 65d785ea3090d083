"""Kernel mode: eval (expressions and statements, over the live program), parallel_print."""

from __future__ import annotations

from ..kernel_session import cpp_name
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
    values = kernel_values(console)
    reply = console.kernel_request("exec", source=source, locals=values)
    if not reply.ok:
        console.error(reply.text)
        return
    if reply.text:
        console.message(reply.text)
    writes = reply.data.get("kernel_writes", {})
    if writes:
        kernel = console.kernel
        stop = kernel.require_stop()
        level = kernel.frame_level(stop.thread, stop.frame)
        controller = kernel.require_controller()
        for name, value in writes.items():
            if not isinstance(value, bool | int | float):
                console.error(f"{name}: only numbers can be stored into a kernel variable")
                continue
            literal = str(int(value)) if isinstance(value, bool) else repr(value)
            controller.evaluate(f"{cpp_name(name)} = {literal}", stop.thread, level)
            console.message(f"{name} = {format_value(value)} (stored in thread {stop.thread})")


@guarded
def do_parallel_print(console: KernelConsole, arg: str) -> None:
    """parallel_print EXPRESSION
    Evaluate EXPRESSION in every stopped kernel thread (over that thread's
    variables, the views and the call site's names) and show a table by
    thread. Long tables show their first and last rows.
    """
    expression = arg.strip()
    if not expression:
        console.error("parallel_print needs an expression, e.g. 'parallel_print j, temp2'")
        return
    kernel = console.kernel
    kernel.require_stop()
    index = kernel.launch.index if kernel.launch else "i"
    rows: list[tuple[int, str]] = []
    per_thread = []
    for thread in kernel.kernel_threads():
        if not thread.stopped or not kernel.python_frames(thread.id):
            continue
        values = kernel_values(console, thread.id, 0)
        shown = [format_value(values.get(name, "?")) for name in index.split(", ")]
        rows.append((thread.id, ", ".join(shown)))
        per_thread.append(values)
    if not rows:
        console.error("no kernel thread is stopped in kernel code")
        return
    reply = console.kernel_request("eval_many", expr=expression, per_thread=per_thread)
    if not reply.ok:
        console.error(reply.text)
        return
    table = [
        (str(tid), idx, value) for (tid, idx), value in zip(rows, reply.data["values"], strict=True)
    ]
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


COMMANDS = [
    Command("eval", do_eval),
    Command("parallel_print", do_parallel_print),
]
