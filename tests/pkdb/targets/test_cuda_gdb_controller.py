"""CudaGdbController: the parts that need no GPU, against a real gdb in all-stop mode.

cuda-gdb is gdb with CUDA commands; the all-stop machinery of the controller (attaching
through the command line, whole-process stops, commands on the focus with no host
thread named, frames selected without ``--thread``) is gdb's own, so plain gdb checks it
here. The GPU half runs in tests/pkdb/test_gpu_session.py on a machine with cuda-gdb.
"""

from __future__ import annotations

import shutil

import pytest
from test_gdb_controller import EXPECTED, hit

from pkdb.targets.cuda_gdb import CudaFocus, CudaGdbController, dim3
from pkdb.targets.device import LineStop, StepMode

pytestmark = pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed")


@pytest.fixture
def all_stop(debuggee, kernels):
    controller = CudaGdbController("gdb")  # cuda-gdb's settings; gdb skips the CUDA ones
    controller.attach(debuggee.pid)
    # It reads no library's symbols by itself: cuda-gdb debugs a GPU kernel from its CUDA
    # module; this CPU kernel's symbols are loaded as the CPU session loads them.
    controller.load_symbols(kernels.yax_so.name)
    yield controller
    controller.close()


def test_a_stop_holds_the_whole_process(all_stop, debuggee):
    assert all_stop.stops_whole_process
    bp = all_stop.insert_breakpoint("yax.py", 8, condition="j == 3")
    debuggee.send("yax")
    event = hit(all_stop)
    assert event.reason == "breakpoint-hit" and event.frame.line == 8
    assert all(t.stopped for t in all_stop.threads())  # the agent thread too
    assert all_stop.evaluate("j") == "3"
    assert set(all_stop.locals()) >= {"temp2", "i"}
    assert all_stop.args()["j"] == "3"
    frames = all_stop.stack()
    assert frames[0].line == 8 and frames[0].file.endswith("yax.py")
    # A frame further out, selected without naming a host thread, and back.
    assert all_stop.evaluate("j", frame=0) == "3"
    # No pk.Cuda debug build here: no step request globals, so next/step fall back to
    # gdb's own stepping (gdb's "No symbol" answer is what says so).
    request = LineStop(StepMode.NEXT, (0, 0, 0), (3, 0, 0), depth=0, line=8)
    assert all_stop.request_line_stop(request) is False
    assert all_stop.request_line_stop(None) is False
    all_stop.next()
    event = hit(all_stop)
    assert event.reason == "end-stepping-range" and event.frame.line in (7, 8)
    all_stop.delete_breakpoint(bp.number)
    all_stop.continue_()
    assert debuggee.expect("result") == f"result {float(EXPECTED)}"
    # No CUDA here: no focus, no device threads.
    assert all_stop.focus() is None


def test_interrupt_stops_the_running_process(all_stop, debuggee):
    all_stop.set_sigint_stops(True)  # while a kernel runs (host code: Python's Ctrl-C)
    all_stop.interrupt()
    event = hit(all_stop)
    assert event.interrupted or event.reason == "signal-received"
    all_stop.continue_()  # the SIGINT of the interrupt is not passed on (nopass)
    all_stop.set_sigint_stops(False)
    debuggee.send("ping")
    assert debuggee.expect("pong").startswith("pong")


def test_focus_records_parse():
    record = {"kernel": "0", "blockIdx": "(1,0,0)", "threadIdx": "(10,0,0)", "sm": "3"}
    focus = CudaFocus.from_mi(record)
    assert focus == CudaFocus(0, (1, 0, 0), (10, 0, 0))
    assert focus.label() == "block 1, thread 10"
    assert CudaFocus(0, (1, 2, 0), (3, 0, 0)).label() == "block (1,2,0), thread 3"
    assert CudaFocus.from_mi({"kernel": "0"}) is None
    assert dim3("( 4, 5, 6 )") == (4, 5, 6) and dim3("4") is None
