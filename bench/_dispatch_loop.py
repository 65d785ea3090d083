"""The program bench_dispatch_threads.py runs under python, pdb and pkdb: it times its own
loop of dispatches (start-up and the debugger's set-up left out) and prints one JSON line.

    python _dispatch_loop.py N DISPATCHES [GAP_US] [--observer]

The kernel is heat.py's diffuse step on an N x N grid (RangePolicy on OpenMP);
GAP_US > 0 spins that many microseconds of host Python between dispatches (what a
program does between kernels), so the OpenMP workers may fall asleep in between.
``--observer`` registers a dispatch observer that does nothing: the cost of pkernels'
observed dispatch path alone, without pkdb's observer logic.
"""

import json
import sys
import time

import numpy as np

import pkernels as pk


@pk.workunit
def diffuse(i, n, alpha, u, u_new):
    for j in range(1, n - 1):
        lap = u[i - 1][j] + u[i + 1][j] + u[i][j - 1] + u[i][j + 1] - 4.0 * u[i][j]
        u_new[i][j] = u[i][j] + alpha * lap


def host_work(microseconds: float) -> None:
    end = time.perf_counter() + microseconds * 1e-6
    while time.perf_counter() < end:
        pass


class NoOpObserver:
    def dispatch_started(self, dispatch: object) -> None:
        pass

    def before_launch(self, dispatch: object, kernel: object) -> None:
        pass

    def dispatch_finished(self, dispatch: object, result: object, error: object) -> None:
        pass


def main() -> None:
    argv = [a for a in sys.argv[1:] if a != "--observer"]
    if "--observer" in sys.argv:
        from pkernels.runtime import hooks

        hooks.add_observer(NoOpObserver())
    n, dispatches = int(argv[0]), int(argv[1])
    gap = float(argv[2]) if len(argv) > 2 else 0.0
    u = np.zeros((n, n))
    u[n // 4 : n // 2, n // 4 : n // 2] = 1.0
    u_new = u.copy()
    policy = pk.RangePolicy(pk.OpenMP, 1, n - 1)
    for _ in range(20):  # compile, load, tune the vector width
        pk.parallel_for(policy, diffuse, n=n, alpha=0.1, u=u, u_new=u_new)
    times = []
    for _ in range(dispatches):
        host_work(gap)
        start = time.perf_counter()
        pk.parallel_for(policy, diffuse, n=n, alpha=0.1, u=u, u_new=u_new)
        times.append(time.perf_counter() - start)
        u, u_new = u_new, u
    times.sort()
    result = {"median": times[len(times) // 2], "q25": times[len(times) // 4],
              "q75": times[3 * len(times) // 4], "mean": sum(times) / len(times)}  # fmt: skip
    print("DISPATCH " + json.dumps(result))


main()
