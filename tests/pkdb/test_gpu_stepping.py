"""``next``/``step`` at a GPU stop on a fake cuda-gdb: the request a debug build's code
stops by itself for (pkdb.targets.device.LineStop, include/pkernels/cuda_step.hpp), and
what the stops that end it look like. The real thing on a GPU: test_gpu_session.py."""

from __future__ import annotations

import pytest
from test_gpu_commands import console  # noqa: F401 - the fixture

from pkdb.gpu_frontend import GpuFrontend
from pkdb.targets.base import FrameInfo, StopEvent
from pkdb.targets.device import LineStop, StepMode

HOOK = 7  # cuda-gdb's breakpoint on pk_step_hook in these tests


@pytest.fixture
def stepping(console):  # noqa: F811
    console.gpu.step_breakpoint = HOOK
    return console


def _hook_stop() -> StopEvent:
    focus = {"kernel": "0", "blockIdx": "(0,0,0)", "threadIdx": "(10,0,0)"}
    return StopEvent("breakpoint-hit", breakpoint=HOOK, raw={"CudaFocus": focus})


def test_the_request_names_the_thread_its_depth_and_line():
    request = LineStop(StepMode.NEXT, (1, 0, 0), (10, 2, 0), depth=1, line=24)
    assert request.assignments() == (
        "pk_step_block_x = 1, pk_step_block_y = 0, pk_step_block_z = 0, "
        "pk_step_thread_x = 10, pk_step_thread_y = 2, pk_step_thread_z = 0, "
        "pk_step_start = 1, pk_step_depth = 1, pk_step_skip = 24, pk_step_mode = 2"
    )


def test_next_asks_the_focused_thread_to_stop_and_runs_the_gpu(stepping):
    fake = stepping.gpu.controller
    stepping.run("next")
    assert fake.line_stops == [LineStop(StepMode.NEXT, (0, 0, 0), (10, 0, 0), 0, 8)]
    assert fake.commands[-2:] == ["line stop", "continue"]  # no cuda-gdb step
    assert stepping.resumed == [True] and stepping.gpu.line_stop_pending


def test_step_in_a_helper_counts_its_depth_from_the_python_frames(stepping):
    fake = stepping.gpu.controller
    file = stepping.gpu.launch.filename
    fake.frames = [
        FrameInfo(0, "pk_step_hook", "cuda_step.hpp", "cuda_step.hpp", 30, 1),
        FrameInfo(1, "pk_kernel::pk_fn_twice_", file, file, 3, 2),
        FrameInfo(2, "pk_kernel::yAx", file, file, 8, 3),
        FrameInfo(3, "pk_cuda_entry", "kernel.cu", "kernel.cu", 500, 4),
    ]
    stepping.run("step")
    assert fake.line_stops == [LineStop(StepMode.STEP, (0, 0, 0), (10, 0, 0), 1, 3)]


def test_a_build_without_the_hook_is_stepped_by_cuda_gdb(stepping):
    fake = stepping.gpu.controller
    fake.step_hook = False
    stepping.run("next")
    stepping.run("step")
    assert fake.commands[-2:] == ["next", "step"] and not stepping.gpu.line_stop_pending


def test_the_hooks_stop_ends_the_request_and_reads_like_a_step(stepping):
    session, fake = stepping.gpu, stepping.gpu.controller
    stepping.run("next")
    session.stop = None
    fake.events.append(_hook_stop())
    stop = session.poll_stop(0.0)
    assert stop is not None and not session.line_stop_pending
    assert fake.line_stops[-1] is not None  # the kernel cleared it itself: nothing written
    frontend = GpuFrontend.__new__(GpuFrontend)
    frontend.session = session
    assert frontend.stop_text(stop.event).splitlines() == [
        f"> {session.launch.filename}(8)yAx()",
        "CUDA block 0, thread 10 (j=10)",
        "-> temp2 += A_view[j][i] * x_view[i]",
    ]


def test_another_stop_first_clears_the_request(stepping):
    session, fake = stepping.gpu, stepping.gpu.controller
    stepping.run("next")
    session.stop = None
    fake.focus_now = None  # a host signal first: passed over, the request stands
    fake.events.append(StopEvent("signal-received", signal_name="SIGUSR1"))
    assert session.poll_stop(0.0) is None and session.line_stop_pending
    fake.switch_focus((1, 0, 0), (3, 0, 0))
    fake.events.append(StopEvent("breakpoint-hit", breakpoint=1))  # another thread's
    stop = session.poll_stop(0.0)
    assert stop is not None and stop.focus.block == (1, 0, 0)
    assert fake.line_stops[-1] is None and not session.line_stop_pending


def test_a_request_left_by_an_ended_launch_is_passed_over(stepping):
    session, fake = stepping.gpu, stepping.gpu.controller
    launch = session.launch
    stepping.run("next")
    session.end()  # the kernel ended before the thread met a new line
    session.launch, session.stop = launch, None  # the next launch of the module
    fake.events.append(_hook_stop())  # the next launch's thread 10 meets it
    assert session.poll_stop(0.0) is None
    assert fake.line_stops[-1] is None and fake.commands[-1] == "continue"


def test_breakpoints_on_the_threads_line_are_off_until_the_next_stop(stepping):
    """While the focused thread runs to its next line, the breakpoints on the line it is
    at are off in cuda-gdb (it meets its next line first; other threads passing them
    would each stop the GPU for their condition); the next stop turns them back on."""
    session, fake = stepping.gpu, stepping.gpu.controller
    file = session.launch.filename
    here = {"number": 11, "file": file, "line": 8, "condition": "j == 10"}
    other = {"number": 12, "file": file, "line": 9}
    session.insert(here), session.insert(other)
    on_line = session.gdb_numbers[11]
    stepping.run("next")
    assert [c for c in fake.commands if c.startswith(("disable", "enable"))] == [
        f"disable {on_line}"
    ]
    session.stop = None
    fake.events.append(_hook_stop())
    assert session.poll_stop(0.0) is not None
    assert fake.commands[-1] == f"enable {on_line}"
    stepping.run("next")
    mark = len(fake.commands)
    session.end()  # the kernel ended first: they are back on for the next launch
    assert f"enable {on_line}" in fake.commands[mark:]
