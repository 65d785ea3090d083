"""``next`` and ``step`` at a GPU stop through a real terminal: the debug build's code
stops by itself at the focused thread's next Python line (include/pkernels/cuda_step.hpp)
while the GPU runs at full speed. Marked ``gpu``: they skip without CuPy, a GPU and
cuda-gdb (``python3 -m pytest -q tests/pkdb/test_gpu_stepping_session.py`` on a GPU
machine). The command logic on a fake cuda-gdb: test_gpu_stepping.py."""

from __future__ import annotations

import re
import time
from pathlib import Path

from gpu_harness import GPU_MARKS, HOST_PROMPT, continue_to_the_end, yax_agrees_with_cupy
from gpu_harness import gpu_session as _session
from gpu_harness import run as _run
from pkdb_harness import write

ROOT = Path(__file__).resolve().parents[2]
pytestmark = GPU_MARKS


def _at(out: str, program: str, line: int, function: str) -> bool:
    """The stop is the focused thread's, at ``line`` of ``function``."""
    return (
        re.search(rf"^> \S*{re.escape(program)}\({line}\){function}\(\)\nCUDA ", out, re.M)
        is not None
    )


def test_next_goes_round_the_loop_of_the_focused_thread(tmp_path):
    """yAx's line 24 for j=10: next to the loop's line 23, next back to 24 with i one more."""
    program = tmp_path / "yax_gpu.py"
    program.write_text((ROOT / "examples" / "yax_gpu.py").read_text())
    session = _session(program, "256", "64")
    try:
        _run(session, "break 24 if j == 10", HOST_PROMPT)
        out = _run(session, "continue")
        assert _at(out, "yax_gpu.py", 24, "yAx") and "(j=10)" in out, out
        first = int(_run(session, "p i"))
        started = time.monotonic()
        out = _run(session, "next")
        # cuda-gdb's own stepping took 5-6 s here on an H200 (a round trip an instruction)
        assert time.monotonic() - started < 1.5
        assert _at(out, "yax_gpu.py", 23, "yAx") and "thread 10 (j=10)" in out, out
        assert "-> for i in range(cols):" in out
        out = _run(session, "next")
        assert _at(out, "yax_gpu.py", 24, "yAx") and "thread 10 (j=10)" in out, out
        assert int(_run(session, "p i")) == first + 1
        assert _run(session, "p j") == "10"
        _run(session, "clear 1")
        out = continue_to_the_end(session)
        assert yax_agrees_with_cupy(out), out
    finally:
        session.close()


HELPER_PROGRAM = """\
import cupy as cp
import pkernels as pk


@pk.function
def scaled(v: float, s: float) -> float:
    w: float = v * s
    return w + 1.0


@pk.workunit
def apply(i, out):
    a: float = out[i]
    b: float = scaled(a, 2.0)
    out[i] = b


out = cp.arange(64.0)
pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 64), apply, out=out)
print("out", out[:6].get().tolist())
"""


def test_step_into_a_helper_and_next_out_of_it(tmp_path):
    program = write(tmp_path, "helper_gpu.py", HELPER_PROGRAM)
    session = _session(program)
    try:
        _run(session, "break 14 if i == 5", HOST_PROMPT)
        out = _run(session, "continue")
        assert _at(out, "helper_gpu.py", 14, "apply"), out
        out = _run(session, "step")
        assert _at(out, "helper_gpu.py", 7, "scaled") and "(i=5)" in out, out
        assert _run(session, "p v + 0.25") == "5.25"  # a float, however shown
        out = _run(session, "next")
        assert _at(out, "helper_gpu.py", 8, "scaled"), out
        assert _run(session, "p w + 0.25") == "10.25"
        out = _run(session, "next")  # out of the helper: the caller's next line
        assert _at(out, "helper_gpu.py", 15, "apply") and "(i=5)" in out, out
        assert _run(session, "p b + 0.25") == "11.25"
        _run(session, "clear 1")
        out = session.cmd("continue", r"The program exited|" + HOST_PROMPT)
        out += session.wait_prompt(HOST_PROMPT) if "exited" in out else ""
        assert "out [1.0, 3.0, 5.0, 7.0, 9.0, 11.0]" in out, out
    finally:
        session.close()
