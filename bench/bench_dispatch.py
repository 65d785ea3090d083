"""The Python cost of one dispatch, path by path, against other source trees in one run.

    python bench/bench_dispatch.py                            # this tree alone
    python bench/bench_dispatch.py --against base=/tmp/base   # vs a baseline tree
    python bench/bench_dispatch.py --against main=/tmp/main --against base=/tmp/base \
        --rounds 15 --calls 2000

A tree is a checkout whose ``src/`` holds pkernels (its C extensions built in place:
``python setup.py build_ext --inplace``, or copied from a tree with the same ``.c``
sources). Each tree runs in a process of its own (``PYTHONPATH=TREE/src``), started once
and kept; in every round each process times every case once (``--calls`` back-to-back
calls, per call), the trees taking turns in a balanced order (``_timing.balanced_orders``)
so a burst of outside load hits them alike. The table gives each case's best round
(min over rounds: the cost with the least interference on a shared machine), its median
round, and the ratio of the best rounds to the last ``--against`` tree (the baseline).
``NAME=PATH`` names a tree in the table (else its path does).

Every case is a one-element kernel on the Serial space (no thread pool: the launch
itself is a plain function call), so what is timed is pkernels' Python and C dispatch:

* ``fast``: ``parallel_for(RangePolicy(pk.Serial, 0, 1), wu, out=out)``, the range fast
  path (a kernel this process built, no label, nobody observing);
* ``fast, 2 views 2 numbers``: the fast path of ``axpby(i, n, a, x, y)`` (what each
  argument adds: its part of the specialisation key, its marshalling);
* ``labelled``: ``fast`` with a label: the full path (policy and workunit checks, the
  backend's build mode, specialisation look-up and launch);
* ``observed``: the same with a no-op observer registered (``hooks``: the ``Dispatch``
  record and its three notifications on top of the full path);
* ``observed, GUARDED``: the observer sets ``dispatch.build = GUARDED`` (what pkdb runs a
  kernel with no breakpoint as: the bounds proof is checked at every launch);
* ``reduce, labelled``: a ``parallel_reduce`` on the full path;
* ``reduce, pk.Max``: a reduce with a reducer (never on the fast path);
* ``MDRange 2D``: an ``MDRangePolicy`` of rank 2 over one element (full path);
* ``team``: ``TeamPolicy(pk.Serial, 1, pk.AUTO)`` with one ``team_barrier`` (full path).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = (
    "fast",
    "fast, 2 views 2 numbers",
    "labelled",
    "observed",
    "observed, GUARDED",
    "reduce, labelled",
    "reduce, pk.Max",
    "MDRange 2D",
    "team",
)


# --- the child: one tree's pkernels, timing the cases round after round --------------


def child(calls: int) -> None:
    sys.path.insert(0, str(HERE))
    from _dispatch_cases import CASES as cases
    from _dispatch_cases import timed

    import pkernels

    for name in CASES:  # compile (or load from the cache), then warm up
        timed(cases[name], 1)
        timed(cases[name], max(calls // 4, 50))
    print(json.dumps({"ready": pkernels.__file__}), flush=True)
    for line in sys.stdin:
        if line.strip() != "round":
            break
        print(json.dumps({name: timed(cases[name], calls) for name in CASES}), flush=True)


# --- the parent: start a child per tree, alternate rounds, print the table ------------


def start(tree: Path, calls: int) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--child", "--calls", str(calls)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd="/",  # no pkernels found through the working directory
    )
    assert proc.stdout is not None
    ready = json.loads(proc.stdout.readline() or "{}")
    where = Path(ready.get("ready", "?")).resolve()
    if not where.is_relative_to(tree.resolve()):
        proc.kill()
        sys.exit(f"bench_dispatch: {tree} ran pkernels from {where}; build it in place first")
    return proc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", action="append", default=[], metavar="[NAME=]TREE")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.calls)
    sys.path.insert(0, str(HERE))
    from _timing import balanced_orders, print_table

    trees = {"this": HERE.parent}
    for given in args.against:
        name, _, path = given.rpartition("=")
        trees[name or path] = Path(path)
    print(f"load before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}", flush=True)
    procs = {name: start(tree, args.calls) for name, tree in trees.items()}
    names = list(procs)
    samples: dict[str, dict[str, list[float]]] = {n: {c: [] for c in CASES} for n in names}
    orders = balanced_orders(len(names))
    for r in range(args.rounds):
        for k in orders[r % len(orders)]:
            proc = procs[names[k]]
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write("round\n")
            proc.stdin.flush()
            for case, seconds in json.loads(proc.stdout.readline()).items():
                samples[names[k]][case].append(seconds)
    for proc in procs.values():
        proc.communicate("")
    print(f"load after: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    base = names[-1] if len(names) > 1 else None
    header = ["case", *(f"{n} µs: min / med" for n in names)]
    header += [f"{n} / {base}" for n in names if n != base] if base else []
    rows = []
    for case in CASES:
        row = [case]
        for n in names:
            s = samples[n][case]
            row.append(f"{min(s) * 1e6:.2f} / {statistics.median(s) * 1e6:.2f}")
        if base:
            row += [
                f"{min(samples[n][case]) / min(samples[base][case]):.3f}"
                for n in names
                if n != base
            ]
        rows.append(row)
    title = (
        f"Dispatch cost per call, {args.rounds} rounds of {args.calls} calls, trees "
        f"alternating; ratios of the min over rounds"
    )
    print_table(title, header, rows)


if __name__ == "__main__":
    main()
