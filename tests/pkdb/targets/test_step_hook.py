"""The stepping hook of pk.Cuda debug builds (include/pkernels/cuda_step.hpp) under a real
gdb, with no GPU: the header compiled for the host (g++) in a program that runs a
"grid" of threads one after the other (blockIdx/threadIdx are globals it sets), written
as the CUDA emitter writes kernels (PK_LINE on each statement, on a for's increment, the
depth guard in a helper). CudaGdbController.request_line_stop writes the request as it
does into a GPU module; the thread asked for then stops by itself in pk_step_hook at its
next line. The same on a GPU: tests/pkdb/test_gpu_stepping_session.py."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pkdb.targets.base import StopEvent
from pkdb.targets.cuda_gdb import CudaGdbController
from pkdb.targets.device import LineStop, StepMode
from pkernels.build.runtime import INCLUDE_DIR

pytestmark = pytest.mark.skipif(
    shutil.which("gdb") is None or shutil.which("g++") is None, reason="needs gdb and g++"
)

# Each PK_LINE names its own line (__LINE__), as the emitter's name their #line's.
PROGRAM = r"""
#include <cstdio>
#include <iostream>
#include <string>
#include <unistd.h>
#define PK_DEBUG 1
#define __device__
#define __noinline__ __attribute__((noinline))
struct uint3 { unsigned x, y, z; };
uint3 blockIdx, threadIdx;
#include "pkernels/cuda_step.hpp"

__attribute__((noinline)) double twice(double v) { PK_STEP_DEPTH
    double w = 0;
    PK_LINE(__LINE__); w = v * 2;  // TWICE_FIRST
    PK_LINE(__LINE__); return w + 0.5;  // TWICE_LAST
}

__attribute__((noinline)) double workunit(int j, int cols) {
    double t = 0; int i = 0;
    PK_LINE(__LINE__); for (int c = 0; c < cols; PK_LINE(__LINE__), ++c) {  // FOR
        i = c;
        PK_LINE(__LINE__); t += i * j;  // BODY
    }
    PK_LINE(__LINE__); t = twice(t);  // CALL
    PK_LINE(__LINE__); t = twice(t);  // CALL_AGAIN
    PK_LINE(__LINE__); t += 1;  // AFTER
    return t;
}

int main() {
    std::cout << getpid() << std::endl;
    std::string line;
    std::getline(std::cin, line);  // "go": the debugger is attached
    double total = 0;
    for (unsigned b = 0; b < 2; ++b)
        for (unsigned th = 0; th < 4; ++th) {
            blockIdx = {b, 0, 0};
            threadIdx = {th, 0, 0};
            total += workunit((int)(b * 4 + th), 3);
        }
    std::printf("total %g\n", total);
    std::fflush(stdout);
    std::getline(std::cin, line);
    return 0;
}
"""


def _line(marker: str) -> int:
    return next(n for n, text in enumerate(PROGRAM.split("\n"), 1) if f"// {marker}" in text)


def _expected_total() -> float:
    total = 0.0
    for j in range(8):
        t = float(sum(i * j for i in range(3)))
        t = (t * 2 + 0.5) * 2 + 0.5
        total += t + 1
    return total


@pytest.fixture
def program(tmp_path: Path):
    source = tmp_path / "steps.cpp"
    source.write_text(PROGRAM)
    binary = tmp_path / "steps"
    subprocess.run(["g++", "-g", "-O0", f"-I{INCLUDE_DIR}", str(source), "-o", str(binary)],
                   check=True)  # fmt: skip
    proc = subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)  # fmt: skip
    assert proc.stdout is not None and proc.stdin is not None
    pid = int(proc.stdout.readline())
    controller = CudaGdbController("gdb")
    controller.attach(pid)
    yield controller, proc, source
    controller.close()
    proc.kill()
    proc.wait()


def _stop(controller: CudaGdbController) -> StopEvent:
    event = controller.wait_for_stop(timeout=20)
    assert event is not None and not event.exited
    return event


def _where(controller: CudaGdbController, source: Path) -> tuple[str, int]:
    """The function and line of the innermost frame in the program's source (a stop in
    the hook has pk_step_hook and pk_rt::step_at above it, in the header)."""
    frame = next(f for f in controller.stack() if f.file and f.file.endswith(source.name))
    return frame.function or "", frame.line or 0


def _request(controller, mode: StepMode, line: int, depth: int = 0) -> StopEvent:
    # Thread 1 of block 1: j = 5.
    assert controller.request_line_stop(LineStop(mode, (1, 0, 0), (1, 0, 0), depth, line))
    controller.continue_()
    return _stop(controller)


def test_the_thread_asked_for_stops_by_itself_at_its_next_line(program):
    controller, proc, source = program
    body = controller.insert_breakpoint(source.name, _line("BODY"), "j == 5")
    hook = controller.set_breakpoint_on_function("pk_step_hook").number
    proc.stdin.write("go\n")
    proc.stdin.flush()
    assert _stop(controller).breakpoint == body.number
    here = _where(controller, source)
    assert here[1] == _line("BODY") and controller.evaluate("i", frame=0) == "0"
    # next from the body's line: the for line (its increment), then the body again.
    event = _request(controller, StepMode.NEXT, _line("BODY"))
    assert event.breakpoint == hook and _where(controller, source)[1] == _line("FOR")
    # The user's breakpoint comes first at the body's line, before its PK_LINE...
    event = _request(controller, StepMode.NEXT, _line("FOR"))
    assert event.breakpoint == body.number
    # ...which the next request passes over: the thread was held before it.
    event = _request(controller, StepMode.NEXT, _line("BODY"))
    assert event.breakpoint == hook and _where(controller, source)[1] == _line("FOR")
    controller.delete_breakpoint(body.number)
    event = _request(controller, StepMode.NEXT, _line("FOR"))
    assert _where(controller, source)[1] == _line("BODY")
    level = next(f.level for f in controller.stack() if f.function.startswith("workunit"))
    assert controller.evaluate("i", frame=level) == "2"
    assert controller.evaluate("j", frame=level) == "5"  # still the thread asked for
    _request(controller, StepMode.NEXT, _line("BODY"))  # the for line, the last time
    event = _request(controller, StepMode.NEXT, _line("FOR"))  # out of the loop
    assert _where(controller, source) == ("workunit", _line("CALL"))
    # step: into the helper; next in it; next out of it to the caller's next line.
    _request(controller, StepMode.STEP, _line("CALL"))
    assert _where(controller, source) == ("twice", _line("TWICE_FIRST"))
    _request(controller, StepMode.NEXT, _line("TWICE_FIRST"), depth=1)
    assert _where(controller, source) == ("twice", _line("TWICE_LAST"))
    _request(controller, StepMode.NEXT, _line("TWICE_LAST"), depth=1)
    assert _where(controller, source) == ("workunit", _line("CALL_AGAIN"))
    # next over a helper call.
    _request(controller, StepMode.NEXT, _line("CALL_AGAIN"))
    assert _where(controller, source) == ("workunit", _line("AFTER"))
    # No request: the other threads and the rest run through.
    assert controller.request_line_stop(None)
    controller.continue_()
    assert proc.stdout.readline().split() == ["total", f"{_expected_total():g}"]
