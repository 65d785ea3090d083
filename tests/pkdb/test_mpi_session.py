"""pkdb --np: one session over the ranks of an MPI program (PTY, real mpirun and gdb)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from mpi_harness import MPI_PROMPT, MpiSession, halo_local, halo_total, no_leftovers, require_mpi
from pkdb_harness import gdb_children, normalize, pkdb_env, process_gone, wait_until, write

ROOT = Path(__file__).resolve().parents[2]
HALO = ROOT / "examples" / "halo_mpi.py"
pytestmark = pytest.mark.skipif(shutil.which("gdb") is None, reason="needs gdb")


def _line(path: Path, text: str) -> int:
    """The number of the line of ``path`` that holds ``text``."""
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def _pids(ranks_output: str) -> dict[int, int]:
    return {int(r): int(p) for r, p in re.findall(r"rank (\d+)  pid (\d+)", ranks_output)}


@pytest.fixture
def sessions() -> Iterator[list[MpiSession]]:
    started: list[MpiSession] = []
    yield started
    for session in started:
        session.close()


def test_four_rank_halo_exchange(tmp_path: Path, sessions: list[MpiSession]) -> None:
    require_mpi()
    after_kernel = _line(HALO, "u, v = v, u")
    kernel_line = _line(HALO, "v[i] = 0.5 * u[i]")
    # --patience: the console waits for rank 2's kernel stop (a debug build to compile,
    # gdb to attach: seconds on a loaded machine) rather than report it running.
    session = MpiSession(HALO, 4, "--patience", "60", cwd=ROOT, tmp=tmp_path)
    sessions.append(session)
    assert "ranks 0-3 at halo_mpi.py:1\n" in session.start, session.start

    # A breakpoint for every rank; every rank stops at the host line.
    out = session.cmd(f"break {after_kernel}")
    assert f"[ranks 0-3] Breakpoint 1 at {HALO}:{after_kernel}" in out, out
    out = session.cmd("continue")
    assert f"[ranks 0-3]\n> {HALO}({after_kernel})main()\n-> u, v = v, u\n" in out, out
    assert out.endswith(f"ranks 0-3 at halo_mpi.py:{after_kernel}\n"), out

    # Answers that agree are shown once; views that differ, side by side.
    assert session.cmd("p size") == "[ranks 0-3] 4\n"
    out = session.cmd("on 1,2: p u[0:3]")
    assert re.search(
        r"\[rank 1\] +\| \[rank 2\]\narray\(\[7\., 8\., 9\.\]\) \| array\(\[15\., 16\., 17\.\]\)",
        out,
    ), out

    # A kernel breakpoint in rank 2 only: its kernel stops there, under its own gdb.
    out = session.cmd(f"break {kernel_line} if rank == 2")
    assert "(set in rank 2 only: the condition is on the rank)" in out, out
    assert f"[rank 2] Breakpoint 2 at {HALO}:{kernel_line}" in out, out
    out = session.cmd("continue", timeout=120)
    assert re.search(r"OpenMP thread \d+ \(i=\d+\) hit breakpoint 2", out), out
    assert out.rstrip().endswith(
        f"ranks 0,1,3 at halo_mpi.py:{after_kernel}; "
        f"rank 2 at halo_mpi.py:{kernel_line} (openmp kernel)"
    ), out
    # Rank 2's own gdb: the only one, as no other rank is in a kernel.
    debuggers = gdb_children(session.child.pid)
    assert len(debuggers) == 1, debuggers
    # Views in two ranks: rank 2's kernel (gdb), in the second step, and rank 1's host
    # frame (pdb), after its second step's kernel: both see step 1's exchanged cells.
    i = int(session.cmd("on 2: p i").removeprefix("[rank 2] "))
    out = session.cmd("on 2: p u[i-1:i+2]")
    assert out == f"[rank 2] {halo_local(4, 2, steps=1)[i - 1 : i + 2]!r}\n", out
    assert session.cmd("rank 1") == ""
    out = session.cmd("p u[0:4]")
    assert out == f"[rank 1] {halo_local(4, 1, steps=1)[0:4]!r}\n", out
    out = session.cmd("ranks")
    assert "* rank 1 " in out and "  rank 2 " in out, out

    # Back to every rank: clear the breakpoints and run to the end.
    session.cmd("ranks all")
    # A question in rank 2's kernel mode, answered at the console.
    assert session.cmd("on 2: clear") == "[rank 2] Clear all breaks? \n"
    out = session.cmd("on 2: y")
    assert out.startswith("[rank 2]") and "Deleted breakpoint 2" in out, out
    assert "Deleted breakpoint 1" in out, out
    out = session.cmd("on 0,1,3: clear 1")
    assert out == f"[ranks 0,1,3] Deleted breakpoint 1 at {HALO}:{after_kernel}\n", out
    out = session.cmd("continue", timeout=120)
    total = re.search(r"rank 0\| total ([\d.]+) over 4 ranks", out)
    assert total is not None, out
    assert float(total.group(1)) == pytest.approx(halo_total(4), abs=1e-6)
    assert "The program exited with code 0" in out, out
    assert out.rstrip().endswith("ranks 0-3 exited with code 0"), out
    pids = list(_pids(session.cmd("ranks")).values())
    assert session.quit() == 0
    assert no_leftovers(tmp_path, pids + sorted(debuggers)) == []


SPIN = """
import time

from mpi4py import MPI

rank = MPI.COMM_WORLD.Get_rank()
count = 0
while True:
    count += 1
    time.sleep(0.01)
    if rank == 1 and count == 50:
        print("rank 1 here")
"""


def test_hang_interrupt_and_a_killed_rank(tmp_path: Path, sessions: list[MpiSession]) -> None:
    require_mpi()
    program = write(tmp_path, "spin.py", SPIN)
    session = MpiSession(program, 2, "--patience", "1", cwd=tmp_path, tmp=tmp_path)
    sessions.append(session)
    assert "ranks 0,1 at spin.py:1\n" in session.start, session.start
    session.cmd("break 11")

    # Rank 1 stops; rank 0 never does: reported running (where, as its agent says) once
    # the others are quiet.
    out = session.cmd("continue")
    assert "rank 1| rank 1 here" not in out  # (stopped before the print)
    assert re.search(
        r"\nrank 0 running in (time\.sleep|<module>)\(\) at spin.py:(8|9|10|11); rank 1 at spin.py:11\n$",
        out,
    ), out
    out = session.cmd("p count")
    assert out == "(rank 0 running: not asked; Ctrl-C interrupts)\n[rank 1] 50\n", out

    # Ctrl-C interrupts every running rank.
    session.child.sendline("wait")
    session.child.expect("wait")
    session.child.sendintr()
    out = session.wait_prompt()
    assert "--KeyboardInterrupt-- (interrupting rank 0)" in out, out
    assert re.search(r"\nrank 0 at spin.py:(8|9|10|11|12); rank 1 at spin.py:11\n", out), out
    pids = _pids(session.cmd("ranks"))
    assert sorted(pids) == [0, 1]

    # Rank 1 killed from outside: reported at the next command; rank 0 still answers.
    os.kill(pids[1], signal.SIGKILL)
    assert wait_until(lambda: process_gone(pids[1]))
    out = session.cmd("p count > 0")
    # (rank 1's end is shown before the answer, or beside it when it was told during it)
    assert re.search(
        r"\[rank 1\](.*\n)?.*The program was killed by signal SIGKILL \(Killed\)", out
    ), out
    assert re.search(r"\nrank 0 at spin.py:\d+; rank 1 killed by SIGKILL\n", out), out
    assert "True" in out, out
    assert session.cmd("p rank") == "[rank 0] 0\n"
    assert session.cmd("on 1: p rank") == "*** rank 1: the program has ended there\n"
    assert session.quit() == 128 + signal.SIGKILL
    assert no_leftovers(tmp_path, list(pids.values())) == []


SUM = """
from mpi4py import MPI

comm = MPI.COMM_WORLD
total = comm.allreduce(comm.Get_rank() + 1)
print("total", total)
"""


def test_ranks_from_the_users_own_launcher(tmp_path: Path, sessions: list[MpiSession]) -> None:
    """--launcher none: pkdb says what to run; the ranks the user starts connect back."""
    require_mpi()
    from pkdb.mpi.launcher import find_mpirun, launch_environment, mpirun_options

    program = write(tmp_path, "sum.py", SUM)
    env = pkdb_env(tmp_path) | {"TMPDIR": str(tmp_path)}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "pkdb", "--np", "2", "--launcher", "none", str(program)],
        cwd=str(tmp_path), env=env, encoding="utf-8", timeout=60, dimensions=(24, 200),
    )  # fmt: skip
    try:
        child.expect(r"start them with your launcher, e\.g\.\r\n  mpirun -n 2 (.+?)\r\n")
        rank_command = shlex.split(child.match.group(1))
        assert rank_command[1:4] == ["-m", "pkdb", "--rank"], rank_command
        launcher = subprocess.Popen(
            [find_mpirun(), "-n", "2", *mpirun_options(find_mpirun()), *rank_command],
            env=launch_environment(default_launcher=True) | env,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        child.expect(MPI_PROMPT, timeout=120)
        assert "ranks 0,1 at sum.py:1" in child.before
        child.sendline("continue")
        child.expect(MPI_PROMPT)
        out = normalize(child.before)
        assert "rank 0| total 3" in out and "rank 1| total 3" in out, out
        assert "ranks 0,1 exited with code 0" in out, out
        child.sendline("quit")
        child.expect(pexpect.EOF)
        assert launcher.wait(timeout=30) == 0
    finally:
        child.close(force=True)
