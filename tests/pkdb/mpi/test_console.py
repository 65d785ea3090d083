"""The multi-rank console's command logic, over fake ranks (the real ones:
tests/pkdb/test_mpi_session.py)."""

from __future__ import annotations

import io
import queue
from types import SimpleNamespace

import pytest

from pkdb.mpi.console import MpiConsole
from pkdb.mpi.worker import Location, RankState


class FakeRank:
    """A rank that answers each command at once (or never, when ``hangs``)."""

    def __init__(self, rank: int, done: queue.SimpleQueue[int], answer: str) -> None:
        self.rank = rank
        self.pid = 1000 + rank
        self.state = RankState.STOPPED
        self.location: Location | None = Location("/src/heat.py", 42, None)
        self.exit_code: int | None = None
        self.last_activity = 0.0
        self.debuggee = SimpleNamespace(process=SimpleNamespace(on_exit=lambda listener: None))
        self.answer = answer
        self.hangs = False
        self.submitted: list[str] = []
        self.interrupted = 0
        self._done = done
        self._output = ""

    def submit(self, line: str) -> None:
        self.submitted.append(line)
        self.state = RankState.RUNNING
        if self.hangs:
            return
        self._output = self.answer.format(rank=self.rank, line=line)
        self.state = RankState.STOPPED
        self._done.put(self.rank)

    def take_output(self) -> str:
        output, self._output = self._output, ""
        return output

    def ask_place(self) -> None:
        return None

    def interrupt(self) -> None:
        self.interrupted += 1


def console(
    answer: str = "same\n", size: int = 4
) -> tuple[MpiConsole, list[FakeRank], io.StringIO]:
    done: queue.SimpleQueue[int] = queue.SimpleQueue()
    ranks = [FakeRank(rank, done, answer) for rank in range(size)]
    out = io.StringIO()
    shell = MpiConsole(
        {r.rank: r for r in ranks},  # type: ignore[misc]
        done,
        stdin=io.StringIO(""),
        stdout=out,
        patience=0.2,
    )
    return shell, ranks, out


def test_equal_answers_shown_once() -> None:
    shell, ranks, out = console()
    shell.onecmd("p x")
    assert out.getvalue() == "[ranks 0-3] same\n"
    assert all(r.submitted == ["p x"] for r in ranks)


def test_different_answers_side_by_side() -> None:
    shell, _, out = console("{rank}\n", size=2)
    shell.onecmd("p rank")
    assert out.getvalue() == "[rank 0] | [rank 1]\n0        | 1\n"


def test_on_runs_a_command_on_some_ranks_once() -> None:
    shell, ranks, out = console()
    shell.onecmd("on 1,3: p x")
    assert [r.submitted for r in ranks] == [[], ["p x"], [], ["p x"]]
    assert out.getvalue() == "[ranks 1,3] same\n"
    assert shell.focus == {0, 1, 2, 3}


def test_focus() -> None:
    shell, ranks, out = console()
    shell.onecmd("ranks 2-3")
    assert shell.prompt == "(pkdb ranks 2,3) "
    shell.onecmd("p x")
    assert [len(r.submitted) for r in ranks] == [0, 0, 1, 1]
    shell.onecmd("rank 9")
    assert "*** '9': this job has 4 ranks (0-3)\n" in out.getvalue()
    assert shell.focus == {2, 3}
    shell.onecmd("on 1: ")
    assert "*** write it as: on RANKS: COMMAND (on 1,3: p x)\n" in out.getvalue()


def test_rank_only_condition_sets_the_breakpoint_where_it_holds() -> None:
    shell, ranks, out = console("Breakpoint 1 at /src/heat.py:30\n")
    shell.onecmd("break 30 if rank == 2")
    assert [r.submitted for r in ranks] == [[], [], ["break 30"], []]
    assert out.getvalue() == (
        "(set in rank 2 only: the condition is on the rank)\n"
        "[rank 2] Breakpoint 1 at /src/heat.py:30\n"
    )
    shell.onecmd("break 31 if rank > 7")
    assert "*** the condition holds in none of ranks 0-3\n" in out.getvalue()


def test_conditions_on_the_programs_names_go_to_every_rank() -> None:
    shell, ranks, _ = console()
    shell.onecmd("break 30 if x > rank")
    assert all(r.submitted == ["break 30 if x > rank"] for r in ranks)


def test_a_rank_that_does_not_stop_is_reported_running() -> None:
    shell, ranks, out = console("> /src/heat.py(50)main()\n")
    ranks[3].hangs = True
    for rank in ranks[:3]:
        rank.location = Location("/src/heat.py", 50, None)
    shell.onecmd("continue")
    assert out.getvalue().endswith("ranks 0-2 at heat.py:50; rank 3 running\n"), out.getvalue()
    out.truncate(0)
    out.seek(0)
    shell.onecmd("p x")
    assert out.getvalue().startswith("(rank 3 running: not asked; Ctrl-C interrupts)\n")
    assert ranks[3].submitted == ["continue"]


def test_summary_of_every_state() -> None:
    shell, ranks, _ = console()
    ranks[1].location = Location("/src/heat.py", 18, "openmp")
    ranks[2].state = RankState.RUNNING
    ranks[3].state = RankState.ENDED
    ranks[3].exit_code = -9
    assert shell.summary() == (
        "rank 0 at heat.py:42; rank 1 at heat.py:18 (openmp kernel); "
        "rank 2 running; rank 3 killed by SIGKILL"
    )
    ranks[3].exit_code = 3
    assert shell.summary().endswith("rank 3 exited with code 3")


@pytest.mark.parametrize("word", ["run", "restart"])
def test_run_and_restart_are_refused(word: str) -> None:
    shell, ranks, out = console()
    shell.onecmd(word)
    assert "is not available over MPI ranks" in out.getvalue()
    assert all(not r.submitted for r in ranks)


def test_ended_ranks_are_not_asked() -> None:
    shell, ranks, out = console()
    for rank in ranks:
        rank.state = RankState.ENDED
    shell.onecmd("p x")
    assert out.getvalue() == "*** ranks 0-3: the program has ended there\n"


def test_an_empty_line_repeats_the_last_command_and_quit_ends() -> None:
    shell, ranks, _ = console()
    shell.onecmd("next")
    shell.onecmd("")
    assert ranks[0].submitted == ["next", "next"]
    shell.onecmd("quit")
    assert shell.finished
