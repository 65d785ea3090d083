"""GPU kernel mode's running commands: continue, next, step, until, finish."""

from __future__ import annotations

from ...gpu_session import GpuKernelSession
from .console import GpuConsole, guarded


@guarded
def do_continue(console: GpuConsole, arg: str) -> None:
    """c(ont(inue))
    Let the GPU kernel run to its next breakpoint (any thread) or its end.
    """
    if arg.strip():
        console.error("on the GPU, 'continue' resumes every thread (no thread range)")
        return
    console.gpu.require_controller().continue_()
    console.resume_gpu()


@guarded
def do_next(console: GpuConsole, arg: str) -> None:
    """n(ext)
    Run the focused thread to its next Python line of the kernel, over
    @pk.function calls (on to the thread's next index at the end of one).
    The whole GPU runs meanwhile: a breakpoint another thread reaches
    first stops there (those on the focused thread's line are off until
    the next stop).
    """
    console.gpu.step_line(into=False)
    console.resume_gpu(stepping=True)


@guarded
def do_step(console: GpuConsole, arg: str) -> None:
    """s(tep)
    Like next, but into @pk.function helpers.
    """
    console.gpu.step_line(into=True)
    console.resume_gpu(stepping=True)


@guarded
def do_until(console: GpuConsole, arg: str) -> None:
    """unt(il) [LINE]
    Run until the focused thread reaches LINE (by default the next line
    after the current one: out of a loop), or the kernel ends.
    """
    gpu = console.gpu
    here = gpu.location(0)
    if here is None or not here.file or gpu.require_stop().focus is None:
        console.error("until: the focused thread is at no Python line")
        return
    try:
        line = int(arg) if arg.strip() else here.line + 1  # type: ignore[operator]
    except ValueError:
        console.error(f"until takes a line number, not {arg!r}")
        return
    condition = _this_thread(gpu)
    controller = gpu.require_controller()
    controller.insert_breakpoint(here.file, line, condition, temporary=True)
    controller.continue_()
    console.resume_gpu()


def _this_thread(gpu: GpuKernelSession) -> str:
    """A condition that holds in the focused thread only: on its index variables (the
    thread's own registers), as cuda-gdb reads blockIdx/threadIdx in a condition from
    the focus rather than from the thread that hit (seen on an H200: an `until` for
    thread 10 stopped thread 32); a team kernel's by its coordinates."""
    from pkernels.translate.emit_exprs import cpp_name

    values = gpu.index_values()
    if values:
        return " && ".join(f"{cpp_name(name)} == {value}" for name, value in values.items())
    focus = gpu.require_stop().focus
    assert focus is not None
    return (
        f"blockIdx.x == {focus.block[0]} && blockIdx.y == {focus.block[1]} && "
        f"threadIdx.x == {focus.thread[0]} && threadIdx.y == {focus.thread[1]}"
    )


@guarded
def do_finish(console: GpuConsole, arg: str) -> None:
    """finish
    Run the kernel to its end (its breakpoints are passed over in this
    launch) and stop at the host line after the dispatch.
    """
    gpu = console.gpu
    for number in list(gpu.gdb_numbers):
        gpu.remove(number)
    gpu.finishing = True
    gpu.require_controller().continue_()
    console.resume_gpu()
