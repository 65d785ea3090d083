"""The README's Ewald session: pkdb finds the paper's boundary bug of examples/ewald.py
(a particle on the upper box edge indexes one cell past the end) in one ``continue``."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from pkdb_harness import kernel_stop

pytestmark = pytest.mark.skipif(
    shutil.which("gdb") is None or shutil.which("g++") is None, reason="needs gdb and g++"
)

EWALD = Path(__file__).resolve().parents[2] / "examples" / "ewald.py"
KERNEL_PROMPT = r"\(pkdb-openmp\) "


def line_of(text: str) -> int:
    return next(
        k + 1 for k, line in enumerate(EWALD.read_text().splitlines()) if line.strip() == text
    )


def test_one_continue_stops_at_the_out_of_range_cell(kernel_pty) -> None:
    s = kernel_pty(EWALD, "64", "--edge-bug", options=("--debug-all-kernels",))
    stop = s.cmd("continue", KERNEL_PROMPT)
    line = line_of("pk.atomic_add(counter, [cx, cy, cz], 1)")
    assert re.search(kernel_stop("ewald.py", line, "stopped by a failed check: ", "i=63"), stop)
    assert "index 3 is out of range for axis 0 of view 'counter' with extent 3" in stop
    assert s.cmd("p cx, cy, cz", KERNEL_PROMPT).strip() == "(3, 1, 1)"
    assert s.cmd("p x[i][0] / cell_size", KERNEL_PROMPT).strip() in {"3.0", "np.float64(3.0)"}
    assert re.search(rf"#0 \S*ewald.py:{line} \(bin_particles\)", s.cmd("where", KERNEL_PROMPT))
    assert s.quit() == 0


def test_without_the_flag_the_program_runs_to_the_end(kernel_pty) -> None:
    s = kernel_pty(EWALD, "64", options=("--debug-all-kernels",))
    out = s.cmd("continue")
    assert "64 charges" in out and "The program exited with code 0" in out, out
    assert s.quit() == 0


def test_without_the_option_one_continue_stops_there_too(kernel_pty) -> None:
    # No --debug-all-kernels: the kernel runs its checked build, which stops at the line.
    s = kernel_pty(EWALD, "64", "--edge-bug")
    stop = s.cmd("continue", KERNEL_PROMPT)
    line = line_of("pk.atomic_add(counter, [cx, cy, cz], 1)")
    assert re.search(kernel_stop("ewald.py", line, "stopped by a failed check: "), stop), stop
    assert "index 3 is out of range for axis 0 of view 'counter' with extent 3" in stop
