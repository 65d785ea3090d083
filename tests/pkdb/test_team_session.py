"""End-to-end debugging of TeamPolicy kernels: real pkdb on a PTY, real gdb, teams of real
OpenMP threads (4 threads: two teams of 2 run at once)."""

from __future__ import annotations

import os
import re
import shutil
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pkdb_harness import PtySession, gdb_children, process_gone, wait_until, write

pytestmark = pytest.mark.skipif(
    shutil.which("gdb") is None or shutil.which("g++") is None, reason="needs gdb and g++"
)

KERNEL_PROMPT = r"\(pkdb-openmp\) "
ANY_PROMPT = r"\(pkdb(?:-openmp)?\) "

PROGRAM = """
import numpy as np
import pkernels as pk


@pk.workunit
def row_sums(team_member: pk.TeamMember, acc: pk.Acc[float], cols: int, A, out):
    row: int = team_member.league_rank()
    rank: int = team_member.team_rank()

    def inner(i: int, inner_acc: pk.Acc[float]):
        inner_acc += A[row][i]

    total: float = pk.parallel_reduce(pk.TeamThreadRange(team_member, cols), inner)
    team_member.team_barrier()
    if rank == 0:
        out[row] = total
        acc += total


def main():
    rows, cols = 4, 8
    A = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols)
    out = np.zeros(rows)
    policy = pk.TeamPolicy(pk.OpenMP, rows, 2)
    result = pk.parallel_reduce(policy, row_sums, cols=cols, A=A, out=out)
    print("result", result, "rows ok", bool(np.array_equal(out, A.sum(axis=1))))


main()
"""

# Lines of PROGRAM (1-based, after dedent/lstrip): keep in step with the text above.
LINE_ROW = 7  # row: int = team_member.league_rank()
LINE_INNER = 11  # inner_acc += A[row][i]  (nested TeamThreadRange body)
LINE_REDUCE = 13  # total = pk.parallel_reduce(...)  (two team barriers)
LINE_BARRIER = 14  # team_member.team_barrier()
LINE_AFTER = 15  # if rank == 0:
LINE_ACC = 17  # acc += total  (the workunit's last line)
RESULT = "result 496.0 rows ok True"

STOP = r"OpenMP thread (\d+) \(league (\d+), team_rank (\d+)\)"
THREAD_LINE = re.compile(
    r"^([* ]) (\d+)\s+Thread .*prog\.py:(\d+) \(row_sums\) league (\d+) team_rank (\d+)$", re.M
)


class TeamSessions:
    """Starts pkdb on PROGRAM and keeps the ids of the gdb processes the sessions start."""

    def __init__(self, program: Path, kernel_pty: Callable[..., PtySession]) -> None:
        self.program = program
        self.kernel_pty = kernel_pty
        self.sessions: list[PtySession] = []
        self.gdb: set[int] = set()

    def start(self) -> PtySession:
        session = self.kernel_pty(self.program)
        self.sessions.append(session)
        return session

    def note_gdb(self) -> None:
        """Remember the gdb processes running now (call it while gdb is attached)."""
        for session in self.sessions:
            if session.child.isalive():
                self.gdb.update(gdb_children(session.child.pid))


@pytest.fixture
def team_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel_pty: Callable[..., PtySession]
) -> Iterator[TeamSessions]:
    """pkdb on PROGRAM with 4 OpenMP threads. At teardown, every gdb the sessions started
    must be gone (one left is killed by its pid, and the test fails)."""
    program = write(tmp_path, "prog.py", PROGRAM)
    lines = program.read_text().splitlines()
    assert "team_barrier()" in lines[LINE_BARRIER - 1] and "acc += total" in lines[LINE_ACC - 1]
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    sessions = TeamSessions(program, kernel_pty)
    yield sessions
    sessions.note_gdb()
    for session in sessions.sessions:
        session.close()
    left = [pid for pid in sessions.gdb if not wait_until(lambda p=pid: process_gone(p), 5.0)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)  # ours: a child of the pkdb this test started
    assert not left, f"gdb outlived the session: {left}"


def _stop(text: str, line: int) -> tuple[int, int, int]:
    """(thread, league, team_rank) of a stop report at prog.py:line."""
    m = re.search(rf"prog\.py\({line}\)row_sums\(\)\n{STOP}", text)
    assert m, text
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def _threads(s: PtySession) -> list[tuple[bool, int, int, int, int]]:
    """`threads`: (current, id, line, league, team_rank) of the threads in kernel lines."""
    out = s.cmd("threads", KERNEL_PROMPT)
    return [
        (mark == "*", int(tid), int(line), int(league), int(rank))
        for mark, tid, line, league, rank in THREAD_LINE.findall(out)
    ]


def _run_to_end(s: PtySession) -> str:
    """`continue` until the program ends; all it printed."""
    printed = ""
    for _ in range(12):
        printed += s.cmd("continue", ANY_PROMPT)
        if "exited with code" in printed:
            return printed
    raise AssertionError(printed)


def test_team_stops_threads_switch_print_and_barrier(team_session) -> None:
    s = team_session.start()
    assert f"Breakpoint 1 at {s.program}:{LINE_INNER}" in s.cmd(f"break {LINE_INNER}")
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert "hit breakpoint 1" in stop and "team_member=" not in stop, stop
    thread, league, rank = _stop(stop, LINE_INNER)
    assert "-> inner_acc += A[row][i]" in stop
    team_session.note_gdb()
    # `threads`: both teams, each thread with its league and team rank, team by team
    for _ in range(6):  # a thread may be held before the breakpoint: let it get there
        threads = _threads(s)
        if len({t[3] for t in threads}) >= 2:
            break
        thread, league, rank = _stop(s.cmd("continue", KERNEL_PROMPT), LINE_INNER)
    assert len({t[3] for t in threads}) == 2, threads
    assert (True, thread, LINE_INNER, league, rank) in threads, threads
    leagues = [t[3] for t in threads]
    assert leagues == sorted(leagues, key=leagues.index), f"teams not grouped: {threads}"
    # switch to a thread of the other team: the team member and the locals follow it
    other = next(t for t in threads if t[3] != league)
    _, tid, _, other_league, other_rank = other
    switched = s.cmd(f"thread {tid}", KERNEL_PROMPT)
    assert f"(league {other_league} team_rank {other_rank})" in switched, switched
    assert s.cmd("p team_member.league_rank()", KERNEL_PROMPT).strip() == str(other_league)
    assert s.cmd("p row, rank", KERNEL_PROMPT).strip() == f"({other_league}, {other_rank})"
    assert s.cmd("p team_member", KERNEL_PROMPT).strip() == (
        f"TeamMember(league_rank={other_league}, league_size=4, team_rank={other_rank}, "
        "team_size=2)"
    )
    assert (
        s.cmd("p team_member.team_size() * team_member.league_size()", KERNEL_PROMPT).strip() == "8"
    )
    s.cmd(f"thread {thread}", KERNEL_PROMPT)
    assert s.cmd("p row", KERNEL_PROMPT).strip() == str(league) != str(other_league)
    # parallel_print: grouped by team (league shown on its first row), team rank per thread
    table = s.cmd("parallel_print row * 10 + rank", KERNEL_PROMPT)
    assert re.search(r"^league\s+team_rank\s+thread\s+row \* 10 \+ rank$", table, re.M), table
    rows = re.findall(r"^\s*(\d*)\s+(\d+)\s+(\d+)\s+(\d+)$", table, re.M)
    assert len(rows) == len(threads), table
    where = {t[1]: (t[3], t[4]) for t in threads}  # thread -> (league, team rank)
    current = None
    for shown_league, team_rank, tid, value in rows:
        current = int(shown_league) if shown_league else current
        assert where[int(tid)] == (current, int(team_rank)), table
        assert int(value) == where[int(tid)][0] * 10 + where[int(tid)][1], table
    assert [int(r[0]) for r in rows if r[0]] == sorted({t[3] for t in threads}), table
    assert f"({len(threads)} threads in 2 teams" in table, table
    # a breakpoint on a workunit line; then `next` over the team barrier completes
    assert "Deleted breakpoint 1" in s.cmd("clear 1", KERNEL_PROMPT)
    s.cmd(f"break {LINE_BARRIER}", KERNEL_PROMPT)
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert "-> team_member.team_barrier()" in stop, stop
    thread, league, rank = _stop(stop, LINE_BARRIER)
    s.cmd("clear 2", KERNEL_PROMPT)
    step = s.cmd("next", KERNEL_PROMPT)
    expected = (
        f"> {s.program}({LINE_AFTER})row_sums()\nOpenMP thread {thread} (league {league}, "
        f"team_rank {rank})\n"
    )
    assert expected in step, step
    assert re.search(
        rf"\(team of league {league}: thread \d+ ran to the barrier at prog\.py:{LINE_BARRIER} "
        r"too\)",
        step,
    ), step
    mates = [t for t in _threads(s) if t[3] == league]
    assert len(mates) == 2 and all(t[2] == LINE_AFTER for t in mates), mates
    assert RESULT in _run_to_end(s)
    assert s.quit() == 0


def test_team_condition_and_next_into_the_next_league(team_session) -> None:
    s = team_session.start()
    s.cmd(f"break {LINE_INNER} if team_member.league_rank() == 2")
    stop = s.cmd("continue", KERNEL_PROMPT)
    _, league, _ = _stop(stop, LINE_INNER)
    assert league == 2, stop
    team_session.note_gdb()
    assert s.cmd("p row, team_member.league_rank()", KERNEL_PROMPT).strip() == "(2, 2)"
    assert "New condition set" in s.cmd("condition 1 team_member.league_rank() == 3", KERNEL_PROMPT)
    _, league, _ = _stop(s.cmd("continue", KERNEL_PROMPT), LINE_INNER)
    assert league == 3
    # `next` over a nested reduce (two barriers) brings the teammate along
    s.cmd("clear 1", KERNEL_PROMPT)
    s.cmd(f"break {LINE_REDUCE}", KERNEL_PROMPT)
    s.cmd(f"break {LINE_ACC}", KERNEL_PROMPT)
    stop = s.cmd("continue", KERNEL_PROMPT)
    thread, league, rank = _stop(stop, LINE_REDUCE if f"({LINE_REDUCE})" in stop else LINE_ACC)
    if f"({LINE_REDUCE})" in stop:
        s.cmd("clear 2", KERNEL_PROMPT)
        step = s.cmd("next", KERNEL_PROMPT)
        assert (thread, league, rank) == _stop(step, LINE_BARRIER), step
        assert f"ran to the barrier at prog.py:{LINE_REDUCE} too" in step, step
        stop = s.cmd("continue", KERNEL_PROMPT)
        thread, league, rank = _stop(stop, LINE_ACC)
    # `next` from the workunit's last line: on to this thread's next league rank, if any
    assert rank == 0
    step = s.cmd("next", KERNEL_PROMPT)
    assert f"team of league {league}: thread" in step and "ran to the end of the workunit" in step
    if league % 2 == 0:  # each team runs two league ranks: 0, 1 and 2, 3
        expected = (
            f"> {s.program}({LINE_ROW})row_sums()\nOpenMP thread {thread} (league {league + 1}, "
        )
        assert expected in step, step
        assert s.cmd("p team_member.league_rank()", KERNEL_PROMPT).strip() == str(league + 1)
    else:
        assert f"Thread {thread} has run all its league ranks" in step, step
    assert RESULT in _run_to_end(s)
    assert s.quit() == 0


def test_team_next_stopped_by_a_teammate_on_its_way(team_session) -> None:
    s = team_session.start()
    s.cmd(f"break {LINE_REDUCE}")
    thread, league, rank = _stop(s.cmd("continue", KERNEL_PROMPT), LINE_REDUCE)
    team_session.note_gdb()
    s.cmd("clear 1", KERNEL_PROMPT)
    assert f"prog.py({LINE_BARRIER})" in s.cmd("next", KERNEL_PROMPT)
    # the teammate waits right after the reduce; on its way to the barrier it meets a
    # breakpoint: that stop is reported, and this thread waits at the barrier
    s.cmd(f"break {LINE_BARRIER}", KERNEL_PROMPT)
    step = s.cmd("next", KERNEL_PROMPT)
    mate, mate_league, mate_rank = _stop(step, LINE_BARRIER)
    assert "hit breakpoint 2" in step and mate != thread, step
    assert (mate_league, mate_rank) == (league, 1 - rank), step
    assert f"(thread {thread} waits at the barrier at prog.py:{LINE_BARRIER}" in step, step
    s.cmd("clear 2", KERNEL_PROMPT)
    s.cmd(f"thread {thread}", KERNEL_PROMPT)
    step = s.cmd("next", KERNEL_PROMPT)
    expected = f"> {s.program}({LINE_AFTER})row_sums()\nOpenMP thread {thread} (league {league}, "
    assert expected in step, step
    assert f"thread {mate} ran to the barrier at prog.py:{LINE_BARRIER} too" in step, step
    assert RESULT in _run_to_end(s)
    assert s.quit() == 0


SCRATCH_PROGRAM = """
import numpy as np
import pkernels as pk


@pk.workunit
def reverse_rows(team_member: pk.TeamMember, out, inp, m: int):
    row: int = team_member.league_rank()
    s: pk.ScratchView1D[pk.double] = pk.ScratchView1D(team_member.team_scratch(0), m)

    def stage(i: int):
        s[i] = inp[row, i]

    pk.parallel_for(pk.TeamThreadRange(team_member, m), stage)
    team_member.team_barrier()
    out[row, 0] = s[m - 1]


inp = np.arange(12.0).reshape(3, 4)
out = np.zeros((3, 4))
policy = pk.TeamPolicy(pk.OpenMP, 3, 2).set_scratch_size(0, pk.PerTeam(32))
pk.parallel_for(policy, reverse_rows, out=out, inp=inp, m=4)
print("first", out[:, 0].tolist())
"""


def test_a_scratch_view_is_the_teams_memory_at_a_stop(tmp_path: Path, kernel_pty) -> None:
    # A scratch view is no array of the caller: pkdb reads it from the kernel's memory,
    # so p, slices and eval writes work on it as on any view.
    s = kernel_pty(write(tmp_path, "scratch.py", SCRATCH_PROGRAM))
    s.cmd("break 15 if team_member.league_rank() == 1")  # out[row, 0] = s[m - 1]
    s.cmd("continue", KERNEL_PROMPT)
    assert s.cmd("p s", KERNEL_PROMPT).strip() == "array([4., 5., 6., 7.])"
    assert s.cmd("p s[1:3] * 2", KERNEL_PROMPT).strip() == "array([10., 12.])"
    assert "s = view(shape=(4,), dtype=float64)" in s.cmd("locals", KERNEL_PROMPT)
    s.cmd("eval s[3] = -1.0", KERNEL_PROMPT)  # the kernel reads it next
    s.cmd("clear 1", KERNEL_PROMPT)
    assert "first [3.0, -1.0, 11.0]" in s.cmd("continue")
    s.quit()
