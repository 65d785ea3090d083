"""pkdb --np: what one front end over N ranks costs, for N = 2, 4, 8 on this machine.

For each N, in fresh sessions (``--repeats`` rounds, each N once a round):

* session start: from ``pkdb --np N prog.py`` to the first prompt, every rank stopped
  at the program's first line (mpirun's start, each rank's keeper and agent, the
  connections back, and each rank's first stop, shown aggregated);
* ``p``: the time from typing ``p rank`` (at a breakpoint after MPI_Init) to the next
  prompt, every rank answering (median of 20 in each session);
* the front end's memory (resident set, from /proc) at that stop; the memory per rank
  is the slope of a least-squares line through (N, memory).

Through a real terminal (pexpect), as a user sees it. Needs the mpi extra.

    python bench/bench_mpi.py [--repeats 3] [--ranks 2 4 8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pexpect

ROOT = Path(__file__).resolve().parents[1]
PROMPT = r"\(pkdb ranks? [0-9,\-]+\) "
PROGRAM = """\
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
total = comm.allreduce(rank)
print("total", total)
"""


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def one_session(program: Path, ranks: int, prints: int) -> tuple[float, float, int]:
    """(start seconds, median `p` seconds, front-end RSS KiB) of one session."""
    env = dict(os.environ, PKERNELS_COMPILE_NOTICE="off", TERM="dumb")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    begin = time.perf_counter()
    child = pexpect.spawn(
        sys.executable, ["-m", "pkdb", "--np", str(ranks), str(program)],
        env=env, encoding="utf-8", timeout=300, dimensions=(24, 200),
    )  # fmt: skip
    child.delaybeforesend = None
    try:
        child.expect(PROMPT)
        start = time.perf_counter() - begin
        child.sendline("break 5")
        child.expect(PROMPT)
        child.sendline("continue")
        child.expect(r"at \S+:5\r\n" + PROMPT)
        times = []
        for _ in range(prints):
            t0 = time.perf_counter()
            child.sendline("p rank")
            child.expect(PROMPT)
            times.append(time.perf_counter() - t0)
            if ranks > 1 and "|" not in child.before and "[rank " not in child.before:
                raise RuntimeError(f"unexpected answer: {child.before!r}")
        memory = rss_kib(child.pid)
        child.sendline("quit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    return start, statistics.median(times), memory


def slope(xs: list[int], ys: list[float]) -> float:
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="sessions per N (default 3)")
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--prints", type=int, default=20, help="`p` per session (default 20)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-mpi-") as tmp:
        program = Path(tmp) / "allreduce.py"
        program.write_text(PROGRAM)
        results: dict[int, list[tuple[float, float, int]]] = {n: [] for n in options.ranks}
        for round_ in range(options.repeats):
            order = options.ranks if round_ % 2 == 0 else options.ranks[::-1]
            for n in order:
                results[n].append(one_session(program, n, options.prints))
    load = os.getloadavg()[0]
    print(f"pkdb --np N on {os.cpu_count()} cores (load average {load:.1f}), "
          f"{options.repeats} sessions per N, medians")  # fmt: skip
    print(f"{'ranks':>5} | {'session start':>13} | {'p answered':>10} | {'front end RSS':>13}")
    print(f"{'-' * 5}-+-{'-' * 13}-+-{'-' * 10}-+-{'-' * 13}")
    memories: list[float] = []
    for n in options.ranks:
        starts, prints, rss = zip(*results[n], strict=True)
        memory = statistics.median(rss) / 1024
        memories.append(memory)
        print(
            f"{n:>5} | {statistics.median(starts):>11.2f} s | "
            f"{statistics.median(prints) * 1000:>7.1f} ms | {memory:>9.1f} MiB"
        )
    if len(options.ranks) > 1:
        per_rank = slope(options.ranks, memories)
        print(f"front-end memory per rank (slope): {per_rank * 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
