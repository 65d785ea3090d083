"""pkdb on the GPU: overhead and latency at pk.Cuda kernels, side by side in one run.

1. Session wall time on examples/yax_gpu.py (4096 x 4096, 200 dispatches on pk.Cuda): a
   scripted session with one host breakpoint after the dispatches (set, continue to it,
   continue to the end) under plain ``python -m pdb``, under ``pkdb`` (the kernel has no
   breakpoint: its release build runs, no cuda-gdb: breakpoint skipping) and under
   ``pkdb --debug-all-kernels`` (a launch proven unable to fail a check runs its release
   build, as the CPU's fast debug builds; yAx's are proven) and the same with ``set
   fast_debug_builds off`` (every launch the NVRTC -G build, cuda-gdb attached).
   Rounds of fresh sessions, every variant once a round; "vs pdb" is the median of the
   per-round ratios, with a 90% bootstrap interval. Targets: 1.05x and 1.25x.
2. Latency at a GPU stop, through a pseudo-terminal: ``continue`` from the host prompt
   at the program's first line to the first GPU kernel prompt (cold: an empty kernel
   cache, so the NVRTC -G compile, the cuda-gdb attach and the evaluation helper's start
   are in it; target 2 s), shown with its two parts: the program's own start to its
   dispatch (importing CuPy, the CUDA context: plain python spends it too) and the
   dispatch to the GPU prompt (what the stop adds, held to the same 2 s); then
   ``p j`` (a scalar: cuda-gdb), ``next``, ``p y_view[0:8]`` (an 8-element device slice:
   the evaluation helper), ``eval float(y.sum())`` (a device sum). Targets: 20 ms for
   ``p j`` and ``next``, 50 ms for the slice, 300 ms for the sum.

    python bench/bench_gpu_pkdb.py [--repeats 5]

Needs CuPy, an NVIDIA GPU and cuda-gdb (the H200 machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_pkdb import ratio_to, timed_rounds

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "examples" / "yax_gpu.py"
AFTER_DISPATCHES = 44  # expected = float(y @ A @ x)
KERNEL_LINE = 24  # temp2 += A_view[j][i] * x_view[i]
DISPATCH_LINE = 43  # result = pk.parallel_reduce(policy, yAx, ...)


def session_variants(args: list[str], every_launch_debug: bool = True) -> dict[str, list[str]]:
    """The sessions on examples/yax_gpu.py ``args`` (N M repeats): pdb, pkdb, pkdb
    --debug-all-kernels (fast debug builds on), and with ``every_launch_debug`` the same
    with fast debug builds off; each breaks once after the dispatches."""
    script = ["-c", f"break {AFTER_DISPATCHES}", "-c", "continue", "-c", "continue"]
    variants = {
        "python -m pdb": [sys.executable, "-m", "pdb", *script, str(PROGRAM), *args],
        "pkdb (breakpoint skipping)": [sys.executable, "-m", "pkdb", *script, str(PROGRAM),
                                       *args],
        "pkdb --debug-all-kernels": [sys.executable, "-m", "pkdb", "--debug-all-kernels",
                                     *script, str(PROGRAM), *args],
    }  # fmt: skip
    if every_launch_debug:
        variants["  ... fast_debug_builds off"] = [
            sys.executable, "-m", "pkdb", "--debug-all-kernels", "-c",
            "set fast_debug_builds off", *script, str(PROGRAM), *args,
        ]  # fmt: skip
    return variants


def session_table(repeats: int, env: dict[str, str]) -> None:
    print("1. Session wall time on a GPU program (4096x4096 yAx, 200 dispatches on pk.Cuda)")
    print(f"{'variant':<30} {'median':>9} {'best':>9} {'vs pdb':>7} interval")
    times = timed_rounds(session_variants(["4096", "4096", "200"]), repeats, env)
    base = times["python -m pdb"]
    verdicts = []
    for variant, values in times.items():
        ratio, low, high = ratio_to(values, base)
        print(f"{variant:<30} {statistics.median(values):8.3f}s {min(values):8.3f}s "
              f"{ratio:6.2f}x [{low:.2f}, {high:.2f}]")  # fmt: skip
        if variant != "python -m pdb":
            verdicts.append((variant, ratio, 1.05 if "skipping" in variant else 1.25))
    for what, ratio, target in verdicts:
        print(f"  target <= {target:.2f}x  {what}: {ratio:.2f}x "
              f"{'PASS' if ratio <= target else 'MISS'}")  # fmt: skip
    print()


def latency_table(repeats: int, cache_dir: str) -> None:
    import pexpect

    print("2. Latency at a GPU stop (examples/yax_gpu.py 256x1024, through a pseudo-terminal)")
    host, kernel = r"\(pkdb\) ", r"\(pkdb-cuda\) "
    samples: dict[str, list[float]] = {}

    def timed(child, line: str, prompt: str, label: str) -> str:
        start = time.perf_counter()
        child.sendline(line)
        child.expect(prompt)
        samples.setdefault(label, []).append(time.perf_counter() - start)
        return child.before

    for attempt in range(repeats):
        env = dict(os.environ, TERM="dumb")
        env["PKERNELS_CACHE_DIR"] = tempfile.mkdtemp(dir=cache_dir) if attempt == 0 else cache_dir
        child = pexpect.spawn(sys.executable, ["-m", "pkdb", str(PROGRAM)], env=env,
                              encoding="utf-8", timeout=180)  # fmt: skip
        child.delaybeforesend = None
        child.expect(host)
        # In two steps: the program's own start (importing CuPy, the CUDA context, its
        # arrays), which plain python spends too, then what the first GPU stop adds (the
        # -G compile when cold, cuda-gdb's start and attach, the evaluation helper).
        which = " (cold)" if attempt == 0 else " (warm)"
        total = "continue -> first GPU prompt" + which
        samples[total] = []  # the sum of the two below, printed above them
        child.sendline(f"break {DISPATCH_LINE}")
        child.expect(host)
        own = "  the program's start, to its dispatch" + which
        timed(child, "continue", host, own)
        child.sendline(f"break {KERNEL_LINE} if j == 10")
        child.expect(host)
        stop = "  the dispatch -> first GPU prompt" + which
        timed(child, "continue", kernel, stop)
        samples[total].append(samples[own][-1] + samples[stop][-1])
        for _ in range(10):
            timed(child, "p j", kernel, "p j (a scalar)")
            timed(child, "p y_view[0:8]", kernel, "p y_view[0:8] (a device slice)")
            timed(child, "eval float(y.sum())", kernel, "eval float(y.sum())")
        for _ in range(3):
            timed(child, "next", kernel, "next")
        child.sendline("quit")
        child.expect(pexpect.EOF)
    print(f"{'operation':<42} {'median':>10} {'best':>10} {'n':>4}")
    for label, values in samples.items():
        median = statistics.median(values)
        print(f"{label:<42} {median * 1e3:8.2f}ms {min(values) * 1e3:8.2f}ms {len(values):4d}")
    print()
    targets = [
        ("continue -> first GPU prompt (cold)", 2.0),
        ("  the dispatch -> first GPU prompt (cold)", 2.0),  # what pkdb adds to the run
        ("p j (a scalar)", 0.020),
        ("next", 0.020),
        ("p y_view[0:8] (a device slice)", 0.050),
        ("eval float(y.sum())", 0.300),
    ]
    for label, target in targets:
        if label in samples:
            value = statistics.median(samples[label])
            print(f"  target <= {target * 1e3:.0f} ms  {label.strip()}: {value * 1e3:.1f} ms "
                  f"{'PASS' if value <= target else 'MISS'}")  # fmt: skip
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-sessions", action="store_true", help="only the latency table")
    args = parser.parse_args()
    cache = tempfile.mkdtemp(prefix="pkdb-gpu-bench-")
    env = dict(os.environ, PKERNELS_CACHE_DIR=cache)
    if not args.skip_sessions:
        session_table(args.repeats, env)
    latency_table(max(2, args.repeats // 2), cache)


if __name__ == "__main__":
    main()
