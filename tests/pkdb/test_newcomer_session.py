"""What a pdb user meets in the first hour of kernel debugging (issue 23): real pkdb
sessions on a PTY, real gdb and g++, real OpenMP and Serial kernels."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pkdb_harness import write

pytestmark = pytest.mark.skipif(
    shutil.which("gdb") is None or shutil.which("g++") is None, reason="needs gdb and g++"
)



@pytest.fixture
def run_program(tmp_path: Path, kernel_pty):
    """``run_program(name, source)``: pkdb on a program written from source."""
    return lambda name, source, *options: kernel_pty(write(tmp_path, name, source), options=options)


SERIAL_PROMPT = r"\(pkdb-serial\) "
KERNEL_PROMPT = r"\(pkdb-openmp\) "

HISTOGRAM = """
import numpy as np
import pkernels as pk


@pk.workunit
def histogram(i, values, counts):
    b = values[i] % 4
    pk.atomic_add(counts, [b], 1)
    values[i] = b


values = np.array([5, 2, 7], dtype=np.int64)
counts = np.zeros(4, dtype=np.int64)
pk.parallel_for(pk.RangePolicy(pk.Serial, 0, 3), histogram, values=values, counts=counts)
print("counts", counts.tolist())
"""


def test_an_atomic_line_stops_once_per_index_with_the_kernels_frame(run_program) -> None:
    # The C++ emitter wrote pk.atomic_add as a lambda at the same Python line: gdb stopped
    # a second time inside it, where `p i` was a NameError and `where` showed (operator).
    s = run_program("hist.py", HISTOGRAM)
    s.cmd("break 8")
    for i in range(3):
        stop = s.cmd("continue", SERIAL_PROMPT)
        assert f"i={i})" in stop, stop
        assert s.cmd("p i", SERIAL_PROMPT).strip() == str(i)
        where = s.cmd("where", SERIAL_PROMPT)
        assert "operator" not in where and "(histogram)" in where.splitlines()[0], where
        assert "pk_old" not in s.cmd("args", SERIAL_PROMPT)
    assert "counts [0, 1, 1, 1]" in s.cmd("continue")


def test_next_from_an_atomic_line_goes_to_the_next_line(run_program) -> None:
    s = run_program("hist.py", HISTOGRAM)
    s.cmd("break 8")
    s.cmd("continue", SERIAL_PROMPT)
    step = s.cmd("next", SERIAL_PROMPT)
    assert "hist.py(9)" in step or "hist.py:9" in step, step
    assert "-> values[i] = b" in step
    assert s.cmd("p counts.tolist()", SERIAL_PROMPT).strip() == "[0, 1, 0, 0]"
