"""pkdb overhead (the PKDB paper's Table V metric), measured side by side in one run.

Wall time of a whole debugging session on a program: plain ``python -m pdb`` with one
host breakpoint vs ``pkdb`` with the same breakpoint (kernels run release builds:
breakpoint skipping) vs ``pkdb --debug-all-kernels`` (every kernel in a debug build); and
the time from ``continue`` to the first kernel prompt (debug compile and gdb attach
included). Each session is a fresh process run from a script (``-c``), median of N runs.

    python bench/bench_pkdb.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
YAX = ROOT / "examples" / "yax.py"
HOST_LINE = 31  # `expected = y @ A @ x`, after the dispatch
KERNEL_LINE = 18  # `temp2 += ...` inside the workunit


def session(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True, timeout=300)  # fmt: skip
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    env = dict(os.environ, PKERNELS_CACHE_DIR=tempfile.mkdtemp(prefix="pkdb-bench-"))
    host = ["-c", f"break {HOST_LINE}", "-c", "continue", "-c", "continue"]
    kernel = ["-c", f"break {KERNEL_LINE}", "-c", "continue", "-c", "finish", "-c", "continue"]
    variants = {
        "python -m pdb (host breakpoint)": [sys.executable, "-m", "pdb", *host, str(YAX)],
        "pkdb, breakpoint skipping": [sys.executable, "-m", "pkdb", *host, str(YAX)],
        "pkdb --debug-all-kernels": [
            sys.executable,
            "-m",
            "pkdb",
            "--debug-all-kernels",
            *host,
            str(YAX),
        ],  # fmt: skip
        "pkdb, stop in the kernel + finish": [sys.executable, "-m", "pkdb", *kernel, str(YAX)],
    }
    for argv in variants.values():  # warm the compile cache and the OS caches
        session(argv, env)
    times = {name: [] for name in variants}
    for _ in range(options.repeats):
        for name, argv in variants.items():  # interleaved, so drift hits all alike
            times[name].append(session(argv, env))
    base = statistics.median(times["python -m pdb (host breakpoint)"])
    print(f"{'session on examples/yax.py':<38} {'median':>9} {'best':>9} {'vs pdb':>8}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<38} {median:8.3f}s {min(values):8.3f}s {median / base:7.2f}x")
    skip = statistics.median(times["pkdb, breakpoint skipping"]) / base
    debug = statistics.median(times["pkdb --debug-all-kernels"]) / base
    print(f"\ntargets: skipping <= 1.05x: {skip:.2f}x {'PASS' if skip <= 1.05 else 'MISS'}; "
          f"debug builds <= 1.25x: {debug:.2f}x {'PASS' if debug <= 1.25 else 'MISS'}")  # fmt: skip


if __name__ == "__main__":
    main()
