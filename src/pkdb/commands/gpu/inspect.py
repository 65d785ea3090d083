"""GPU kernel mode's inspection: print, pp, eval (Python over the live device arrays),
locals, args, and the frames (where, up, down)."""

from __future__ import annotations

from ..kernel_support import format_value, pool_argument, python_name, show_frames, shown_name
from .console import GpuConsole, guarded


def _evaluate(console: GpuConsole, expression: str, pretty: bool = False) -> None:
    gpu = console.gpu
    values = gpu.kernel_values()
    name = expression.strip()
    if not pretty and name in values and isinstance(values[name], int | float | bool):
        console.message(format_value(values[name]))  # read by cuda-gdb: no round trip
        return
    answer = gpu.evaluate("eval", expr=expression, locals=values, pretty=pretty)
    (console.message if answer["ok"] else console.error)(answer["text"])


@guarded
def do_print(console: GpuConsole, arg: str) -> None:
    """p(rint) EXPRESSION
    Evaluate Python at the GPU stop: over the kernel's variables in the
    focused thread (j, temp2, ...), its views (the program's own device
    arrays: y_view[0:8], A_view[j][0:4]) and the call site's names.
    Example: p y_view[j] * 2
    """
    if not arg.strip():
        console.error("print needs an expression, e.g. 'p y_view[j]'")
        return
    _evaluate(console, arg)


@guarded
def do_pp(console: GpuConsole, arg: str) -> None:
    """pp EXPRESSION
    Like p, with the value pretty-printed.
    """
    if not arg.strip():
        console.error("pp needs an expression, e.g. 'pp y_view[0:20]'")
        return
    _evaluate(console, arg, pretty=True)


@guarded
def do_eval(console: GpuConsole, arg: str) -> None:
    """eval EXPRESSION | eval STATEMENT
    Run Python at the GPU stop, over the live program: writes to device
    arrays land in the program's arrays, a kernel variable assigned is
    stored into the focused thread, new kernels may be dispatched (on
    pk.Cuda, on the live arrays; they run while the stopped kernel is held).
    The call site's plain values are copies here.
    """
    source = arg.strip()
    if not source:
        console.error("eval needs Python, e.g. 'eval float(y.sum())'")
        return
    gpu = console.gpu
    values = gpu.kernel_values()
    try:
        compile(source, "<pkdb>", "eval")
    except SyntaxError:
        answer = gpu.evaluate("exec", source=source, locals=values)
        if answer["text"]:
            console.message(answer["text"].rstrip("\n"))
        if not answer["ok"]:
            return
        level = gpu.frame_level(gpu.require_stop().frame) or 0
        controller = gpu.require_controller()
        for name, value in answer.get("data", {}).get("kernel_writes", {}).items():
            from pkernels.translate.emit_exprs import cpp_name

            literal = repr(int(value)) if isinstance(value, bool) else repr(value)
            controller.evaluate(f"{cpp_name(name)} = {literal}", frame=level)
        return
    answer = gpu.evaluate("eval", expr=source, locals=values)
    (console.message if answer["ok"] else console.error)(answer["text"])


def _show_values(console: GpuConsole, arguments: bool) -> None:
    gpu = console.gpu
    stop = gpu.require_stop()
    level = gpu.frame_level(stop.frame)
    if level is None:
        console.error("a host frame: 'down' to the kernel's frames")
        return
    raw = gpu.frame_variables(level)[0 if arguments else 1]
    values = gpu.kernel_values()
    for name in raw:
        if name.startswith("pk_"):
            continue
        py_name = name[:-1] if name.endswith("_") else name
        shown = shown_name(gpu.launch, name)  # a workload's field as self.pool
        pool = pool_argument(gpu.launch, name, raw[name]) if arguments else None
        if pool is not None:
            console.message(f"{shown} = {pool}")
        elif py_name in values:
            console.message(f"{shown} = {format_value(values[py_name])}")
        elif gpu.launch and py_name in gpu.launch.views:
            info = gpu.launch.views[py_name]
            console.message(f"{shown} = <device view of {info['dtype']}, shape "
                            f"{tuple(info['shape'])}>")  # fmt: skip


@guarded
def do_locals(console: GpuConsole, arg: str) -> None:
    """locals
    The focused thread's local variables in the current kernel frame.
    """
    _show_values(console, arguments=False)


@guarded
def do_args(console: GpuConsole, arg: str) -> None:
    """a(rgs)
    The arguments of the current kernel frame (views as their shape).
    """
    _show_values(console, arguments=True)


@guarded
def do_where(console: GpuConsole, arg: str) -> None:
    """w(here) | bt
    The kernel frames of the focused thread (Python lines), then the host
    frames that dispatched the kernel. The current frame is marked >.
    """
    gpu = console.gpu
    stop = gpu.require_stop()
    show_frames(console, gpu.python_frames(), gpu.host_frames(), stop.frame)


def _move(console: GpuConsole, arg: str, step: int) -> None:
    gpu = console.gpu
    stop = gpu.require_stop()
    try:
        count = int(arg) if arg.strip() else 1
    except ValueError:
        console.error(f"a count expected, got {arg!r}")
        return
    total = len(gpu.python_frames()) + len(gpu.host_frames())
    target = stop.frame + step * count
    if not 0 <= target < total:
        console.error("Oldest frame" if step > 0 else "Newest frame")
        target = max(0, min(total - 1, target))
    stop.frame = target
    stop.listed = None
    frame = gpu.location(target)
    if frame is not None:
        console.message(f"> {frame.file}({frame.line}){python_name(frame.function)}()")
        source = gpu.source_line(frame)
        if source:
            console.message(f"-> {source}")


@guarded
def do_up(console: GpuConsole, arg: str) -> None:
    """u(p) [COUNT]
    Move COUNT frames outwards (towards the host code that dispatched).
    """
    _move(console, arg, 1)


@guarded
def do_down(console: GpuConsole, arg: str) -> None:
    """d(own) [COUNT]
    Move COUNT frames inwards.
    """
    _move(console, arg, -1)
