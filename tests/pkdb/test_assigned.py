"""Which kernel locals have no value yet at a line (debug builds declare them all at the
``def`` line): read from the Python source, never hiding one that may have a value."""

from __future__ import annotations

from pathlib import Path

import pytest
from pkdb_harness import write

from pkdb.assigned import unassigned_locals

SOURCE = """
import pkernels as pk


@pk.workunit
def kernel(i, out, n):
    total: float = 0.0
    for k in range(n):
        if k > 0:
            out[i] = carry
        carry = k * 2.0
        total += carry
    scale: float
    scale = total / n
    out[i] = scale


def host():
    return 1
"""


@pytest.fixture
def program(tmp_path: Path) -> str:
    return str(write(tmp_path, "prog.py", SOURCE))


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (5, {"total", "k", "carry", "scale"}),  # the def line: only the parameters exist
        (6, {"total", "k", "carry", "scale"}),  # total's own line has not run yet
        # In the loop (its header too), an earlier pass may have assigned k and carry:
        # shown, even on the first pass.
        (7, {"scale"}),
        (9, {"scale"}),
        (11, {"scale"}),
        (12, {"scale"}),  # `scale: float` alone assigns nothing
        (13, {"scale"}),
        (14, set()),
        (18, set()),  # another function: nothing of the kernel's
        (3, set()),  # outside any function
    ],
)
def test_locals_without_a_value_at_a_line(program: str, line: int, expected: set) -> None:
    assert unassigned_locals(program, line) == expected


def test_a_nested_def_shares_the_frame_and_is_left_alone(tmp_path: Path) -> None:
    program = write(
        tmp_path,
        "nested.py",
        """
        def team(member, out):
            base = 1.0

            def body(j):
                value = base + j
                out[j] = value

            later = 2.0
        """,
    )
    # value and j are the nested def's: shown (its body runs in the kernel's frame)
    assert unassigned_locals(str(program), 2) == {"base", "body", "later"}
    assert unassigned_locals(str(program), 5) == set()  # inside the nested def
