"""``pkdb --np N [--launcher CMD] PROGRAM [ARGS...]``: one pkdb session over an MPI job
(and ``python -m pkdb --rank DIR``, the rank side the launcher starts)."""

from __future__ import annotations

import argparse
import os
import queue
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .job import MpiJob
    from .worker import RankWorker

USAGE = "pkdb --np N [--launcher CMD] [options] PROGRAM [ARGS...]"
DESCRIPTION = """\
Debug an MPI program (mpi4py) with one pkdb session over all its ranks: the
program runs under mpirun, each rank under its own pkdb agent (and its own gdb
for kernels), connected back to this front end by a private Unix socket.
Commands go to the focused ranks ('rank 2', 'ranks 0-3', 'on 1,3: p x');
answers that agree are shown once. 'help' at the prompt says more."""
EPILOG = """\
examples:
  pkdb --np 4 halo.py                         4 ranks under the mpi extra's mpirun
  pkdb --np 4 --launcher 'srun -n 4' halo.py  your own launcher (pkdb appends the
                                              rank command to it)
  pkdb --np 4 --launcher none halo.py         you start the ranks: pkdb prints the
                                              command (mpirun -n 4 ... --rank DIR)
  pkdb --np 2 -c 'break 30' -c continue prog.py"""

#: Seconds the ranks get to connect by default.
START_TIMEOUT = 120.0


def build_parser() -> argparse.ArgumentParser:
    from ..command_line import add_session_options
    from .console import PATIENCE

    parser = argparse.ArgumentParser(
        prog="pkdb",
        usage=USAGE,
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--np", type=int, required=True, metavar="N", help="number of ranks")
    parser.add_argument(
        "--launcher",
        metavar="CMD",
        help="start the ranks with CMD (split as a shell does) followed by the rank "
        "command, instead of the mpi extra's mpirun; 'none': print the rank command "
        "and wait for ranks you start yourself",
    )
    parser.add_argument(
        "--start-timeout",
        type=float,
        default=START_TIMEOUT,
        metavar="SECONDS",
        help=f"how long the ranks get to connect (default {START_TIMEOUT:.0f})",
    )
    parser.add_argument(
        "--patience",
        type=float,
        default=None,
        metavar="SECONDS",
        help="after a command that resumes ranks, how long to wait for the others once "
        f"one has stopped, before reporting them running (default {PATIENCE:g})",
    )
    add_session_options(parser)
    parser.add_argument("program", help="the Python program to debug (a file)")
    return parser


class _Killed(BaseException):
    """SIGTERM or SIGHUP reached the front end."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_killed(signum: int, frame: object) -> None:
    raise _Killed(signum)


def main(argv: Sequence[str]) -> int:
    """Run the MPI session (or, with ``--rank``, be a rank); pkdb's exit status."""
    argv = list(argv)
    if argv and argv[0] == "--rank":
        from .rank import main as rank_main

        rank_main(argv)
    from ..command_line import read_commands
    from .options import split_mpi_argv

    parser = build_parser()
    own, program_args = split_mpi_argv(argv)
    options = parser.parse_args(own)
    options.args = program_args
    if options.np < 1:
        parser.error("--np must be 1 or more")
    if not os.path.isfile(options.program):
        parser.exit(1, f"pkdb: error: {options.program} is not a file\n")
    try:
        script = read_commands(options.commands or [])
    except OSError as exc:
        parser.exit(1, f"pkdb: error: cannot read commands: {exc}\n")
    return _session(options, script)


def _session(options: argparse.Namespace, script: list[str]) -> int:
    from ..settings import Settings
    from .console import PATIENCE, MpiConsole
    from .job import JobError, MpiJob
    from .launcher import LauncherError
    from .worker import RankWorker

    lock = threading.Lock()

    def write(text: str) -> None:
        with lock:
            sys.stdout.write(text)
            sys.stdout.flush()

    job = MpiJob(options.np, options.launcher, write)
    workers: dict[int, RankWorker] = {}
    previous = {s: signal.signal(s, _raise_killed) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        try:
            debuggees = job.start(options.start_timeout)
        except (JobError, LauncherError) as exc:
            write(f"pkdb: {exc}\n")
            return 1
        except KeyboardInterrupt:
            write("\npkdb: interrupted while the ranks started\n")
            return 128 + signal.SIGINT
        done: queue.SimpleQueue[int] = queue.SimpleQueue()
        argv = [options.program, *options.args]
        for rank, debuggee in debuggees.items():
            settings = Settings()  # each rank's own: 'set' acts on the focused ranks
            if options.debug_all_kernels:
                settings.set_value("debug_all_kernels", True)
            workers[rank] = RankWorker(rank, debuggee, argv, settings, done.put)
        console = MpiConsole(
            workers,
            done,
            script=script,
            patience=PATIENCE if options.patience is None else options.patience,
            write_lock=lock,
        )
        console.run()
        return _exit_status(workers)
    except _Killed as killed:
        return 128 + killed.signum
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        _end(job, workers)


def _exit_status(workers: Mapping[int, RankWorker]) -> int:
    """The highest exit status among the ranks that ended (as a shell says: 128 + N for
    signal N); 0 when none ended or all exited with 0."""
    status = 0
    for worker in workers.values():
        code = worker.exit_code
        if code is not None:
            status = max(status, code if code >= 0 else 128 - code)
    return status


def _end(job: MpiJob, workers: Mapping[int, RankWorker]) -> None:
    """End the session: every rank killed (first: a held kernel must not run on when
    gdb lets go), every rank's session closed (its gdb), then the launcher."""
    for debuggee in job.debuggees.values():
        debuggee.kill_now()
    for worker in workers.values():
        worker.stop()
    for worker in workers.values():
        worker.join(timeout=5.0)
        worker.frontend.close()
    job.close()
