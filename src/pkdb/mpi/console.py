"""The multi-rank REPL: one prompt over every rank.

Commands go to the focused ranks (``rank 2``, ``ranks 0-3``; ``on 1,3: CMD`` once),
each rank's own session runs them in its thread, and the answers come back aggregated
(:mod:`.aggregate`): equal answers once, with the ranks that gave them, different ones
side by side. After a command that lets ranks run, a summary line says where each
rank is (``ranks 0-2 at heat.py:42; rank 3 running``).
"""

from __future__ import annotations

import queue
import shutil
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO

from ..command_input import read_command_line
from ..commands.registry import split_command
from .aggregate import group_answers, render
from .rank_conditions import ranks_where, split_rank_break
from .ranksets import RankSetError, describe_ranks, parse_ranks
from .worker import RankState, RankWorker

#: Commands that let the program run (after them, the console says where ranks are).
RESUMING = frozenset(
    {"c", "cont", "continue", "s", "step", "n", "next", "r", "return", "unt", "until",
     "j", "jump", "finish"}
)  # fmt: skip
#: Seconds the console waits for the other ranks once one has stopped, before it gives
#: the user the word and reports them running (a rank waiting in MPI for a stopped one
#: never stops by itself). Output of a rank (a compile notice, say) starts it again.
PATIENCE = 3.0
#: Seconds the agents of running ranks get to say where their programs are.
PLACE_PATIENCE = 0.5

HELP = """\
pkdb over MPI ranks: one prompt for every rank of the job.
Commands go to the focused ranks (all at first); their answers are shown once per
distinct answer, with the ranks that gave it ([ranks 0-3] ...), different ones side by
side. Every pdb and pkdb command works, in each rank's own session.

  rank N / ranks SET   focus on those ranks (SET: 2, 0-3, 1,3, 0-3,6 or all)
  ranks                list the ranks: process, state, where each one stopped
  on SET: CMD          run CMD on those ranks only, once (on 1,3: p x)
  wait                 wait until every running rank stops (Ctrl-C: interrupt them;
                       twice: stop waiting)
  break LINE if rank == 2
                       a condition on the rank alone is decided here: the breakpoint
                       is set only in the ranks where it holds (kernel lines too)
  continue, step, ...  resume the focused ranks that are stopped; the prompt comes
                       back when they all stop again, or when the others
                       have been quiet for 3 s after one stopped (they are then
                       reported running; 'wait' waits for them)
  Ctrl-C               interrupt every running rank (a second one gives the prompt
                       back at once: a rank inside an MPI call hears it only when
                       the call returns)
  quit                 end every rank and the session
'run' and 'restart' are not available: an MPI job starts again only as a whole (quit,
then start pkdb --np again)."""


class MpiConsole:
    """The REPL over ``workers`` (rank → its session)."""

    def __init__(
        self,
        workers: dict[int, RankWorker],
        done: queue.SimpleQueue[int],
        *,
        script: Iterable[str] = (),
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        patience: float = PATIENCE,
        write_lock: threading.Lock | None = None,
    ) -> None:
        self.workers = workers
        self.size = len(workers)
        self.focus: frozenset[int] = frozenset(workers)
        self.patience = patience
        self.finished = False
        self._done = done
        self._deaths: queue.SimpleQueue[int] = queue.SimpleQueue()
        self._script = deque(script)
        self.stdin = stdin if stdin is not None else sys.stdin
        self.stdout = stdout if stdout is not None else sys.stdout
        self._lock = write_lock if write_lock is not None else threading.Lock()
        self._interactive = self.stdin is sys.stdin and self.stdin.isatty()
        self._last = ""
        for rank, worker in workers.items():
            worker.debuggee.process.on_exit(self._death_listener(rank))

    def _death_listener(self, rank: int) -> Callable[[int], None]:
        def ended(code: int) -> None:
            self._deaths.put(rank)

        return ended

    # -- output ----------------------------------------------------------------------

    def write(self, text: str) -> None:
        with self._lock:
            self.stdout.write(text)
            self.stdout.flush()

    def message(self, text: str) -> None:
        self.write(text + "\n")

    def error(self, text: str) -> None:
        self.write(f"*** {text}\n")

    @property
    def prompt(self) -> str:
        return f"(pkdb {describe_ranks(self.focus)}) "

    # -- the loop --------------------------------------------------------------------

    def run(self) -> None:
        """Start every rank's session, show where they stopped, then take commands."""
        for worker in self.workers.values():
            worker.start()
        self._wait(set(self.workers), resuming=True, wait_all=True)
        while not self.finished:
            try:
                line = self._read_line()
            except KeyboardInterrupt:
                self.message("\n--KeyboardInterrupt--")
                continue
            if line is None:
                self.finished = True
                break
            try:
                self.onecmd(line)
            except KeyboardInterrupt:
                self.message("\n--KeyboardInterrupt--")
            except Exception as exc:  # noqa: BLE001 - a pkdb bug must not end the session
                self.error(f"pkdb failed on {line.strip()!r}: {type(exc).__name__}: {exc}")

    def _read_line(self) -> str | None:
        return read_command_line(
            self.prompt, self._script, self._interactive, self.stdin, self.write
        )

    def onecmd(self, line: str) -> None:
        """Run one command line."""
        self._catch_up()
        self._report_deaths()
        line = line.strip()
        if not line:
            line = self._last
            if not line:
                return
        self._last = line
        word, arg = split_command(line)
        if word in ("q", "quit", "exit"):
            self.finished = True
        elif word in ("rank", "ranks"):
            self._focus_command(arg)
        elif word == "wait":
            if not any(w.state is RankState.RUNNING for w in self.workers.values()):
                self.message("(no rank is running)")
            else:
                self._wait(set(), resuming=True, wait_all=True)
        elif word == "on":
            self._on_command(arg)
        elif word in ("run", "restart"):
            self.error(
                f"'{word}' is not available over MPI ranks: a job starts again only as a "
                "whole (quit, then start pkdb --np again)"
            )
        elif word in ("h", "help") and not arg:
            self.message(HELP)
            self.message("The commands of each rank's session: 'on 0: help'.")
        else:
            self.dispatch(self.focus, line)

    def _focus_command(self, arg: str) -> None:
        if not arg:
            self._list_ranks()
            return
        try:
            self.focus = parse_ranks(arg, self.size)
        except RankSetError as exc:
            self.error(str(exc))

    def _on_command(self, arg: str) -> None:
        where, colon, command = arg.partition(":")
        if not colon or not command.strip():
            self.error("write it as: on RANKS: COMMAND (on 1,3: p x)")
            return
        try:
            ranks = parse_ranks(where, self.size)
        except RankSetError as exc:
            self.error(str(exc))
            return
        self.dispatch(ranks, command.strip())

    def _list_ranks(self) -> None:
        places = self._running_places()
        for rank, worker in sorted(self.workers.items()):
            mark = "*" if rank in self.focus else " "
            state = _state_text(worker, places.get(rank))
            self.message(f"{mark} rank {rank}  pid {worker.pid}  {state}")

    # -- commands to ranks -----------------------------------------------------------

    def dispatch(self, ranks: frozenset[int], line: str) -> None:
        """Run ``line`` in the stopped ones of ``ranks``; show the answers aggregated."""
        stopped = sorted(r for r in ranks if self.workers[r].state is RankState.STOPPED)
        busy = sorted(r for r in ranks if self.workers[r].state is RankState.RUNNING)
        if busy:
            self.message(f"({describe_ranks(busy)} running: not asked; Ctrl-C interrupts)")
        if not stopped:
            if not busy:
                self.error(f"{describe_ranks(ranks)}: the program has ended there")
            return
        targets = stopped
        rank_break = split_rank_break(line)
        if rank_break is not None:
            word, where, condition = rank_break
            targets = ranks_where(condition, stopped)
            if not targets:
                self.error(f"the condition holds in none of {describe_ranks(stopped)}")
                return
            line = f"{word} {where}"
            self.message(f"(set in {describe_ranks(targets)} only: the condition is on the rank)")
        for rank in targets:
            self.workers[rank].submit(line)
        self._wait(set(targets), resuming=split_command(line)[0] in RESUMING)

    def _wait(self, targets: set[int], *, resuming: bool, wait_all: bool = False) -> None:
        """Wait for ``targets`` to be done with their command, then show the answers.
        When ranks run (``resuming``), every running rank is waited for, up to
        :attr:`patience` seconds after the last one stopped (``wait_all``: for as long
        as it takes)."""
        patience = self.patience if resuming and not wait_all else None
        pending = set(targets)
        if resuming:
            pending.update(r for r, w in self.workers.items() if w.state is RankState.RUNNING)
        reported: set[int] = set()
        last_stop: float | None = None
        interrupts = 0
        while pending:
            try:
                rank = self._done.get(timeout=0.05)
            except queue.Empty:
                if patience is not None and last_stop is not None:
                    active = max(self.workers[r].last_activity for r in pending)
                    if time.monotonic() - max(last_stop, active) > patience:
                        break
                continue
            except KeyboardInterrupt:
                interrupts += 1
                if interrupts > 1:
                    break
                running = sorted(pending)
                self.message(f"\n--KeyboardInterrupt-- (interrupting {describe_ranks(running)})")
                for r in running:
                    self.workers[r].interrupt()
                last_stop = time.monotonic() if reported else None
                continue
            reported.add(rank)
            pending.discard(rank)
            last_stop = time.monotonic()
        self._show(reported)
        if resuming or any(self.workers[r].state is RankState.ENDED for r in reported):
            self.message(self.summary())

    def _show(self, ranks: Iterable[int]) -> None:
        answers = {rank: self.workers[rank].take_output() for rank in ranks}
        width = shutil.get_terminal_size((100, 24)).columns
        self.write(render(group_answers(answers), width))

    def _catch_up(self) -> None:
        """Show the ranks that stopped (or ended) while the user had the word."""
        reported: set[int] = set()
        while True:
            try:
                reported.add(self._done.get_nowait())
            except queue.Empty:
                break
        if reported:
            self._show(reported)
            self.message(self.summary())

    def _report_deaths(self) -> None:
        """Ranks whose process ended while they were stopped (killed from outside, say):
        their sessions end, and the console says how."""
        retired: set[int] = set()
        while True:
            try:
                rank = self._deaths.get_nowait()
            except queue.Empty:
                break
            worker = self.workers[rank]
            if worker.state is RankState.STOPPED:
                worker.retire()
                retired.add(rank)
        if retired:
            self._wait(retired, resuming=False)

    def summary(self) -> str:
        """Where every rank is: ``ranks 0-2 at heat.py:42; rank 3 running in
        comm.Allreduce() at heat.py:30``."""
        running = self._running_places()
        places: dict[str, list[int]] = {}
        for rank, worker in sorted(self.workers.items()):
            places.setdefault(_state_text(worker, running.get(rank)), []).append(rank)
        parts = sorted(places.items(), key=lambda item: item[1][0])
        return "; ".join(f"{describe_ranks(ranks)} {text}" for text, ranks in parts)

    def _running_places(self) -> dict[int, str]:
        """Where the running ranks' programs are (``comm.Sendrecv() at halo.py:29``: the
        call the program's code waits in, else its function), as their
        agents answer within :data:`PLACE_PATIENCE` seconds (an agent answers from a
        thread of its own, while the program waits in an MPI call, say)."""
        asked = {rank: worker.ask_place() for rank, worker in self.workers.items()}
        deadline = time.monotonic() + PLACE_PATIENCE
        places = {}
        for rank, answer in asked.items():
            if answer is None:
                continue
            try:
                reply = answer.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                continue
            data = reply.data
            if reply.ok and data.get("file"):
                name = Path(str(data["file"])).name
                inside = data.get("call") or data.get("function", "?")
                places[rank] = f"{inside}() at {name}:{data.get('line')}"
        return places


def _state_text(worker: RankWorker, place: str | None = None) -> str:
    if worker.state is RankState.STOPPED:
        return f"at {worker.location}" if worker.location else "stopped"
    if worker.state is RankState.ENDED:
        code = worker.exit_code
        if code is None:
            return "ended"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with code {code}"
    if worker.state is RankState.RUNNING and place:
        return f"running in {place}"
    return str(worker.state.value)
