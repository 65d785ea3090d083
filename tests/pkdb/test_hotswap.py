"""End-to-end ``hotswap``: real pkdb sessions on a PTY, real kernels, host and kernel mode."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from pkdb_harness import kernel_stop, write

KERNEL_PROMPT = r"\(pkdb-openmp\) "

PROGRAM = """
import os

import numpy as np
import pkernels as pk
import kmod


@pk.workunit
def scale(i, out, x, factor):
    out[i] = x[i] * factor


@pk.workunit
def scale_plus(i, out, x, factor):
    out[i] = x[i] * factor + 100.0


@pk.workunit
def scale_minus(i, out, x, factor):
    out[i] = x[i] * factor - 100.0


@pk.workunit
def scale_short(i, out, x):
    out[i] = x[i]


@pk.workunit
def scale_reordered(i, x, out, factor):
    out[i] = x[i] * factor


@pk.workunit
def scale_broken(i, out, x, factor):
    out[i] = x[i] * undefined_factor


def run():
    n = 8
    x = np.arange(n, dtype=np.float64)
    a = np.zeros(n)
    b = np.zeros(n)
    for step in range(3):
        pk.parallel_for(n, scale, out=a, x=x, factor=2.0)
        pk.parallel_for(n, scale, out=b, x=x, factor=3.0)
        print("step", step, a[1], b[1], os.getpid())
    print("done", a.sum(), b.sum())


run()
"""

MODULE = """
import pkernels as pk


@pk.workunit
def negate(i, out, x, factor):
    out[i] = -x[i]
"""

# Lines of PROGRAM (1-based, after dedent/lstrip): keep in step with the text above.
LINE_SCALE_BODY = 10  # out[i] = x[i] * factor
LINE_PLUS_BODY = 15  # out[i] = x[i] * factor + 100.0
LINE_A = 44  # pk.parallel_for(n, scale, out=a, ...)
LINE_B = 45  # pk.parallel_for(n, scale, out=b, ...)
LINE_PRINT = 46  # print("step", ...)


@pytest.fixture
def program(tmp_path: Path) -> Path:
    write(tmp_path, "kmod.py", MODULE)
    path = write(tmp_path, "prog.py", PROGRAM)
    lines = path.read_text().splitlines()
    assert "out=a" in lines[LINE_A - 1] and "out=b" in lines[LINE_B - 1]
    assert "+ 100.0" in lines[LINE_PLUS_BODY - 1] and "print(" in lines[LINE_PRINT - 1]
    return path


@pytest.fixture
def session(program: Path, kernel_pty):
    return lambda: kernel_pty(program)


def step_line(output: str, step: int) -> tuple[float, float, int]:
    """(a[1], b[1], pid) printed by the program at ``step``."""
    m = re.search(rf"^step {step} (\S+) (\S+) (\d+)$", output, re.M)
    assert m, output
    return float(m.group(1)), float(m.group(2)), int(m.group(3))


def test_per_line_rule_beats_global_rule_and_clear(session, program: Path) -> None:
    source = program.read_text()
    s = session()
    s.cmd(f"break {LINE_A}")
    s.cmd("continue")
    assert s.cmd("hotswap") == "No hotswap rules.\n"
    assert s.cmd("hotswap scale scale_plus") == (
        "Hotswap 1: scale -> scale_plus at every call site\n"
    )
    assert s.cmd(f"hotswap {LINE_B} scale scale_minus") == (
        f"Hotswap 2: scale -> scale_minus at prog.py:{LINE_B}\n"
    )
    out = s.cmd("continue")  # step 0: both dispatches swapped, each by its own rule
    assert f"[hotswap 1] prog.py:{LINE_A}: scale_plus runs instead of scale" in out
    assert f"[hotswap 2] prog.py:{LINE_B}: scale_minus runs instead of scale" in out
    a1, b1, pid = step_line(out, 0)
    assert (a1, b1) == (102.0, -97.0)
    listing = s.cmd("hotswap")
    assert re.search(r"^1\s+every call site\s+scale\s+scale_plus\s+1$", listing, re.M), listing
    assert re.search(rf"^2\s+prog.py:{LINE_B}\s+scale\s+scale_minus\s+1$", listing, re.M)
    # only the kernels that ran were compiled: each replacement once; scale (both of its
    # dispatches were swapped) and the unused scale_short never
    counts = s.cmd(
        "p [len(k.__pkernels__.specializations) for k in "
        "(scale, scale_plus, scale_minus, scale_short)]"
    )
    assert counts.strip() == "[0, 1, 1, 0]"
    # without the per-line rule, the global one applies at that call site too
    assert s.cmd("hotswap clear 2") == (
        f"Deleted hotswap rule 2: scale -> scale_minus at prog.py:{LINE_B}\n"
    )
    a1, b1, pid1 = step_line(s.cmd("continue"), 1)
    assert (a1, b1) == (102.0, 103.0)
    assert pid1 == pid  # the same process all along: never restarted
    assert s.cmd("hotswap clear 7").startswith("*** no hotswap rule 7")
    assert s.cmd("hotswap clear") == "Deleted all hotswap rules.\n"
    out = s.cmd("continue")
    assert step_line(out, 2)[:2] == (2.0, 3.0)  # the original kernel again
    assert "done 56.0 84.0" in out and "exited with code 0" in out
    assert program.read_text() == source  # the file on disk was never touched
    s.quit()


def test_signature_mismatch_is_refused_and_the_original_runs(session) -> None:
    s = session()
    s.cmd(f"break {LINE_A}")
    s.cmd("continue")
    refused = s.cmd("hotswap scale scale_short")
    assert refused.startswith(
        "*** hotswap refused: scale_short(i, out, x) does not take the parameters of "
        "scale(i, out, x, factor): it lacks parameter 'factor'. scale keeps running."
    ), refused
    refused = s.cmd(f"hotswap {LINE_B} scale scale_reordered")
    assert "same names in another order: parameter 2 is 'x', not 'out'" in refused
    assert "is not a @pk.workunit (it is a module)" in s.cmd("hotswap scale np")
    assert "NameError" in s.cmd("hotswap scale scale_typo")
    assert "usage: hotswap" in s.cmd("hotswap scale")
    assert "has no line 999" in s.cmd("hotswap 999 scale scale_plus")
    assert s.cmd("hotswap") == "No hotswap rules.\n"
    out = s.cmd("continue")
    assert step_line(out, 0)[:2] == (2.0, 3.0) and "[hotswap" not in out
    # a dotted name, and FILE:LINE
    assert s.cmd(f"hotswap prog.py:{LINE_B} scale kmod.negate") == (
        f"Hotswap 1: scale -> kmod.negate at prog.py:{LINE_B}\n"
    )
    assert step_line(s.cmd("continue"), 1)[:2] == (2.0, -1.0)
    # a replacement that does not translate is not swapped in: the program goes on
    assert s.cmd("hotswap scale scale_broken").startswith("Hotswap 2:")
    out = s.cmd("continue")
    assert f"[hotswap 2] prog.py:{LINE_A}: scale_broken cannot run here, scale runs: " in out
    assert "undefined_factor" in out
    assert step_line(out, 2)[:2] == (2.0, -1.0)
    s.quit()


@pytest.mark.skipif(
    shutil.which("gdb") is None or shutil.which("g++") is None, reason="needs gdb and g++"
)
def test_hotswap_at_a_kernel_stop_and_breakpoints_in_the_new_kernel(session) -> None:
    s = session()
    s.cmd(f"break {LINE_SCALE_BODY} if i == 2")
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert re.search(kernel_stop("prog.py", LINE_SCALE_BODY, "hit breakpoint 1", "i=2"), stop)
    assert s.cmd("p factor", KERNEL_PROMPT).strip() == "2.0"
    # names are those of the call site (scale_plus is a global of prog.py)
    assert s.cmd("hotswap scale scale_plus", KERNEL_PROMPT) == (
        "Hotswap 1: scale -> scale_plus at every call site\n"
    )
    assert "refused" in s.cmd("hotswap scale scale_short", KERNEL_PROMPT)
    assert "scale_plus  0" in s.cmd("hotswap", KERNEL_PROMPT)
    s.cmd("clear 1", KERNEL_PROMPT)
    # a breakpoint in the new kernel's lines: the swapped dispatch is a debug build
    s.cmd(f"break {LINE_PLUS_BODY} if i == 3", KERNEL_PROMPT)
    stop = s.cmd("continue", KERNEL_PROMPT)  # the held dispatch ends; the next one is swapped
    assert "[hotswap 1] prog.py:" in stop
    assert re.search(kernel_stop("prog.py", LINE_PLUS_BODY, "hit breakpoint 2", "i=3"), stop)
    assert s.cmd("p factor", KERNEL_PROMPT).strip() == "3.0"  # the dispatch at LINE_B
    where = s.cmd("where", KERNEL_PROMPT)
    assert re.search(rf"#0 \S*prog.py:{LINE_PLUS_BODY} \(scale_plus\)", where), where
    assert re.search(rf"#1 \S*prog.py:{LINE_B} \(run\)", where), where
    s.cmd("clear 2", KERNEL_PROMPT)
    s.cmd("hotswap clear 1", KERNEL_PROMPT)
    out = s.cmd("continue")
    # step 0: a ran the original (held when the rule was made), b the new kernel
    assert step_line(out, 0)[:2] == (2.0, 103.0)
    assert step_line(out, 1)[:2] == (2.0, 3.0)
    assert "exited with code 0" in out
    s.quit()


TEAMS_AND_REDUCERS = """
import numpy as np
import pkernels as pk


@pk.workunit
def mark(team_member: pk.TeamMember, x):
    x[team_member.league_rank()] = 1.0


@pk.workunit
def mark_minus(team_member: pk.TeamMember, x):
    x[team_member.league_rank()] = -1.0


@pk.workunit
def largest(i, acc, x):
    if x[i] > acc.val:
        acc.val = x[i]
        acc.loc = i


@pk.workunit
def smallest_as_largest(i, acc, x):
    if -x[i] > acc.val:
        acc.val = -x[i]
        acc.loc = i


x = np.zeros(4)
pk.parallel_for(pk.TeamPolicy(4, 1), mark, x=x)
print("team", x.tolist())
print("where", pk.parallel_reduce(4, largest, reducer=pk.MaxLoc, x=np.array([3.0, 9.0, 1.0, 5.0])))
"""


def test_team_kernels_and_reducers_to_several_values_can_be_swapped(
    tmp_path: Path, kernel_pty
) -> None:
    # NEW is checked as the dispatch translates OLD: a TeamPolicy's team member first,
    # a reducer's accumulator fields (both were refused as translation errors).
    program = write(tmp_path, "tr.py", TEAMS_AND_REDUCERS)
    s = kernel_pty(program)
    first = program.read_text().splitlines().index("x = np.zeros(4)") + 1
    s.cmd(f"break {first}")
    s.cmd("continue")  # the kernels are defined now
    reduce_line = first + 3  # print("where", pk.parallel_reduce(..., largest, ...))
    wrong = s.cmd(f"hotswap {reduce_line} mark mark_minus")
    assert f"the parallel_* call on line {reduce_line} does not name mark" in wrong, wrong
    s.cmd("hotswap clear")
    s.cmd("hotswap mark mark_minus")
    s.cmd("hotswap largest smallest_as_largest")
    out = s.cmd("continue")
    assert "mark_minus runs instead of mark" in out and "team [-1.0, -1.0, -1.0, -1.0]" in out
    assert "where ValLocScalar(val=-1.0, loc=2)" in out, out
    assert "cannot run here" not in out
