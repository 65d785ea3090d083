"""What one dispatch costs under python, pdb and pkdb, by OpenMP thread count.

    python bench/bench_dispatch_threads.py [--threads 1,2,8,16] [--n 256] [--gap 0,200]
        [--dispatches 2000] [--repeats 3]

Each session runs ``_dispatch_loop.py`` (heat.py's diffuse kernel), which times its own
loop of dispatches, so the sessions' start-up and end are left out: what is left is the
per-dispatch cost the debugger adds (pdb and pkdb both with a breakpoint set after the
loop, so both keep tracing, as in bench_pkdb's sessions); "python+observer" is the
program with a do-nothing dispatch observer (pkernels' observed dispatch path, without
pkdb's observer logic). Thread counts above the core
count oversubscribe the cores: on a small machine that is how to see a cost that grows
with the number of OpenMP threads (issue 25: pkdb 1.18-1.35x pdb on 16 cores, <= 1.05x
on 2). ``--gap`` spins host Python between dispatches (microseconds), long enough for
libgomp's idle workers to stop spinning and sleep.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import _timing as tm

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "_dispatch_loop.py"


def argv_of(variant: str, args: list[str]) -> list[str]:
    line = next(k for k, text in enumerate(PROGRAM.read_text().splitlines(), 1)
                if 'print("DISPATCH' in text)  # fmt: skip
    script = ["-c", f"break {line}", "-c", "continue", "-c", "continue"]
    if variant == "python":
        return [sys.executable, str(PROGRAM), *args]
    if variant == "observed":
        return [sys.executable, str(PROGRAM), *args, "--observer"]
    return [sys.executable, "-m", variant, *script, str(PROGRAM), *args]


def per_dispatch(argv: list[str], env: dict[str, str]) -> dict[str, float]:
    out = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, timeout=600).stdout  # fmt: skip
    line = next(text for text in out.splitlines() if text.startswith("DISPATCH {"))
    return json.loads(line.split("DISPATCH ", 1)[1])


def stat(runs: list[dict[str, float]], key: str) -> float:
    """The median over the rounds of one statistic of the sessions' dispatches."""
    return statistics.median(run[key] for run in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cores = os.cpu_count() or 1
    parser.add_argument("--threads", default=f"1,{cores},{4 * cores},{8 * cores}")
    parser.add_argument("--n", type=int, default=256, help="grid side (default 256)")
    parser.add_argument("--gap", default="0,200", help="host µs between dispatches")
    parser.add_argument("--dispatches", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3, help="rounds (default 3)")
    options = parser.parse_args()
    env = dict(os.environ, PKERNELS_CACHE_DIR=tempfile.mkdtemp(prefix="dispatch-threads-"))
    tm.same_loops_env(env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE.parent / "src"),
                                                      env.get("PYTHONPATH")]))  # fmt: skip
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    variants = ["python", "observed", "pdb", "pkdb"]
    print(
        f"per-dispatch time (median of {options.dispatches} dispatches in a session; the "
        f"median of {options.repeats} rounds), heat diffuse {options.n}^2, {cores} cores"
    )
    print(tm.loops_note(env))
    print(
        "median / mean: of the dispatches of a session (the mean is what a session's wall "
        "time sees: it keeps the stalls); each the median over the rounds"
    )
    print(f"{'threads':>7} {'gap':>5} | {'python':>15} | {'python+observer':>15} | "
          f"{'pdb':>15} | {'pkdb':>15} | "
          f"{'pkdb/pdb':>11}")  # fmt: skip
    for gap in options.gap.split(","):
        for threads in options.threads.split(","):
            run_env = dict(env, OMP_NUM_THREADS=threads)
            args = [str(options.n), str(options.dispatches), gap]
            times: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
            orders = tm.balanced_orders(len(variants))
            for v in variants:  # warm the kernel cache
                per_dispatch(argv_of(v, [str(options.n), "50", gap]), run_env)
            for r in range(options.repeats):
                for k in orders[r % len(orders)]:
                    times[variants[k]].append(per_dispatch(argv_of(variants[k], args), run_env))

            cells = [f"{stat(times[v], 'median') * 1e6:6.1f} / "
                     f"{stat(times[v], 'mean') * 1e6:6.1f}"
                     for v in variants]  # fmt: skip
            ratio = [statistics.median(a[key] / b[key] for a, b in zip(times["pkdb"], times["pdb"],
                                                                       strict=True))
                     for key in ("median", "mean")]  # fmt: skip
            print(f"{threads:>7} {gap:>5} | " + " | ".join(cells)
                  + f" | {ratio[0]:4.2f} / {ratio[1]:4.2f}", flush=True)  # fmt: skip
    print("(µs per dispatch: median / mean)")


if __name__ == "__main__":
    main()
