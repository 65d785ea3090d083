"""pkdb overhead and latency, measured side by side in one run.

1. Session wall time (the PKDB paper's Table V metric): a scripted session with one host
   breakpoint (set, continue to it, continue to the end) under plain ``python -m pdb``,
   under ``pkdb`` (kernels without breakpoints run release builds: breakpoint skipping),
   under ``pkdb --debug-all-kernels`` (every kernel in a debug build; with
   fast_debug_builds, the default, a launch proven unable to fail a check runs release
   code until a stop needs the debug build) and, for reference, the same with
   ``set fast_debug_builds off`` (-O0 for every index: no target); on examples/yax.py (a
   0.3 s program) and on examples/heat.py (a larger one: 1500 and 3000 dispatches).
   N rounds of fresh sessions, every variant once a round in a balanced order; "vs pdb"
   is the median of the per-round ratios to that round's pdb session (drift between
   rounds cancels), with a 90% bootstrap interval.
2. Latency at a kernel stop, through a real terminal (pexpect): ``continue`` from the
   host prompt to the first kernel prompt (cold: debug compile and gdb attach included;
   and warm: gdb attached, build cached), then ``p``, ``next``, ``threads``, ``where``.
3. First stop at a conditional breakpoint on the index (the README's ``break 18 if
   j == 10`` in examples/yax.py): ``continue`` to the kernel prompt with
   fast_debug_builds on (pkdb evaluates the condition for every index before the launch;
   only index 10 runs in the debug build) and off (the debug build runs every index and
   gdb tests the condition each time a thread reaches line 18), on 2 threads and on 8,
   side by side in rounds.

    python bench/bench_pkdb.py [--repeats 8] [--quick]
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import _timing as tm

ROOT = Path(__file__).resolve().parents[1]
YAX = ROOT / "examples" / "yax.py"
HEAT = ROOT / "examples" / "heat.py"
PROGRAMS = {
    # name: (program, its args, host line after every dispatch, with an all -O0 run)
    "yax.py (256x1024, 1 dispatch)": (YAX, [], 31, True),
    "heat.py (512^2, 1500 dispatches)": (HEAT, ["512", "1500"], 35, True),
    # the larger program: -O0 debug builds for every index would take minutes here
    "heat.py (1024^2, 3000 dispatches)": (HEAT, ["1024", "3000"], 35, False),
}
YAX_KERNEL_LINE = 18  # temp2 += A_view[j][i] * x_view[i]


def run_session(argv: list[str], env: dict[str, str]) -> float:
    """Wall time of one session, from start to exit."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    # A blocking wait: Popen.wait(timeout) polls with sleeps of up to 50 ms, which would
    # round every session's time up to the next poll. The timer only ends a hung one.
    guard = threading.Timer(600, process.kill)
    guard.start()
    try:
        status = process.wait()
    finally:
        guard.cancel()
    elapsed = time.perf_counter() - start
    if status != 0:
        raise subprocess.CalledProcessError(status, argv)
    return elapsed


def timed_rounds(
    variants: dict[str, list[str]], repeats: int, env: dict[str, str]
) -> dict[str, list[float]]:
    """Wall times of sessions: each variant (an argv) once to warm the kernel cache and
    the OS caches, then ``repeats`` rounds running every variant once, in the balanced
    order of that round. ``times[variant][r]`` is round ``r``'s session."""
    for argv in variants.values():
        run_session(argv, env)
    times: dict[str, list[float]] = {v: [] for v in variants}
    names = list(variants)
    orders = tm.balanced_orders(len(names))
    for r in range(repeats):
        for k in orders[r % len(orders)]:
            times[names[k]].append(run_session(variants[names[k]], env))
    return times


def ratio_to(values: list[float], base: list[float]) -> tuple[float, float, float]:
    """Median of the per-round ratios ``values[r] / base[r]`` and its 90% bootstrap
    interval. Sessions of one round ran seconds apart, so the machine's slow drift
    cancels out of them (a ratio of two medians keeps it)."""
    ratios = [v / b for v, b in zip(values, base, strict=True)]
    low, high = tm.bootstrap_median_interval(ratios)
    return statistics.median(ratios), low, high


def session_table(repeats: int, env: dict[str, str], quick: bool) -> None:
    print("1. Session wall time: one host breakpoint, continue to it, continue to the end")
    print(f"   ({tm.loops_note(env)})")
    print(f"{'program':<34} {'variant':<30} {'median':>9} {'best':>9} {'vs pdb':>7} interval")
    verdicts = []
    for name, (program, args, line, with_debug) in PROGRAMS.items():
        if quick:
            args = args[:1] + ["100"] if args else args
        script = ["-c", f"break {line}", "-c", "continue", "-c", "continue"]
        variants = {
            "python -m pdb": [sys.executable, "-m", "pdb", *script, str(program), *args],
            "pkdb (breakpoint skipping)": [
                sys.executable,
                "-m",
                "pkdb",
                *script,
                str(program),
                *args,
            ],
        }
        variants["pkdb --debug-all-kernels"] = [
            sys.executable, "-m", "pkdb", "--debug-all-kernels", *script, str(program), *args
        ]  # fmt: skip
        if with_debug:
            strict = ["-c", "set fast_debug_builds off"]
            variants["  ... fast_debug_builds off"] = [
                sys.executable, "-m", "pkdb", "--debug-all-kernels", *strict, *script,
                str(program), *args,
            ]  # fmt: skip
        times = timed_rounds(variants, repeats, env)
        base = times["python -m pdb"]
        for variant, values in times.items():
            ratio, low, high = ratio_to(values, base)
            print(f"{name:<34} {variant:<30} {statistics.median(values):8.3f}s "
                  f"{min(values):8.3f}s {ratio:6.2f}x [{low:.2f}, {high:.2f}]")  # fmt: skip
            if variant in ("pkdb (breakpoint skipping)", "pkdb --debug-all-kernels"):
                target = 1.05 if "skipping" in variant else 1.25
                verdicts.append((f"{name}, {variant}", ratio, target))
    print()
    print("  (vs pdb: median of the per-round ratios to the pdb session of the same round,")
    print("   with a 90% bootstrap interval of that median)")
    for what, ratio, target in verdicts:
        verdict = "PASS" if ratio <= target else "MISS"
        print(f"  target <= {target:.2f}x  {what}: {ratio:.2f}x {verdict}")
    print()


def latency_table(repeats: int, cache_dir: str) -> None:
    try:
        import pexpect
    except ImportError:
        print("2. Latency: skipped (pexpect not installed: pip install -e '.[test]')")
        return
    print("2. Latency at a kernel stop (examples/yax.py, through a pseudo-terminal)")
    host, kernel = r"\(pkdb\) ", r"\(pkdb-openmp\) "
    samples: dict[str, list[float]] = {}

    def timed(child, line: str, prompt: str, label: str) -> None:
        start = time.perf_counter()
        child.sendline(line)
        child.expect(prompt)
        samples.setdefault(label, []).append(time.perf_counter() - start)

    for attempt in range(repeats):
        env = dict(os.environ, TERM="dumb", OMP_NUM_THREADS="2")
        # the first session of the run starts from an empty cache: a cold debug compile
        env["PKERNELS_CACHE_DIR"] = tempfile.mkdtemp(dir=cache_dir) if attempt == 0 else cache_dir
        child = pexpect.spawn(sys.executable, ["-m", "pkdb", str(YAX)], env=env,
                              encoding="utf-8", timeout=120)  # fmt: skip
        child.delaybeforesend = None  # pexpect otherwise sleeps 50 ms before each line
        child.expect(host)
        child.sendline(f"break {YAX_KERNEL_LINE}")
        child.expect(host)
        label = "continue -> first kernel prompt" + (" (cold)" if attempt == 0 else " (warm)")
        timed(child, "continue", kernel, label)
        for _ in range(20):
            timed(child, "p y_view[j] * temp2", kernel, "p EXPR")
            timed(child, "next", kernel, "next")
            timed(child, "threads", kernel, "threads")
            timed(child, "where", kernel, "where")
        timed(child, "continue", kernel, "continue -> next kernel stop (attached)")
        child.sendline("quit")
        child.expect(pexpect.EOF)
    print(f"{'operation':<42} {'median':>10} {'best':>10} {'n':>4}")
    for label, values in samples.items():
        median = statistics.median(values)
        print(f"{label:<42} {median * 1e3:8.2f}ms {min(values) * 1e3:8.2f}ms {len(values):4d}")
    print()
    commands = [statistics.median(samples[k]) for k in ("p EXPR", "next", "threads", "where")]
    first = samples["continue -> first kernel prompt (cold)"][0]
    print(f"  target <= 10 ms a command at a kernel stop: worst median {max(commands) * 1e3:.1f} ms"
          f" {'PASS' if max(commands) <= 0.010 else 'MISS'}")  # fmt: skip
    print(f"  target first kernel stop <= 1.5 s incl. debug compile: {first:.2f} s"
          f" {'PASS' if first <= 1.5 else 'MISS'}")  # fmt: skip


def conditional_table(repeats: int, cache_dir: str) -> None:
    try:
        import pexpect
    except ImportError:
        print("3. Conditional breakpoint: skipped (pexpect not installed)")
        return
    print("3. First stop at 'break 18 if j == 10' (examples/yax.py, 256 indices x 1024)")
    host, kernel = r"\(pkdb\) ", r"\(pkdb-openmp\) "

    def first_stop(threads: int, fast: bool) -> float:
        env = dict(os.environ, TERM="dumb", OMP_NUM_THREADS=str(threads))
        env["PKERNELS_CACHE_DIR"] = cache_dir
        child = pexpect.spawn(sys.executable, ["-m", "pkdb", str(YAX)], env=env,
                              encoding="utf-8", timeout=300)  # fmt: skip
        child.delaybeforesend = None
        child.expect(host)
        for line in ([] if fast else ["set fast_debug_builds off"]) + [
            f"break {YAX_KERNEL_LINE} if j == 10"
        ]:
            child.sendline(line)
            child.expect(host)
        start = time.perf_counter()
        child.sendline("continue")
        child.expect(kernel)
        elapsed = time.perf_counter() - start
        assert "j=10)" in (child.before or ""), child.before
        child.sendline("quit")
        child.expect(pexpect.EOF)
        return elapsed

    variants = {(t, fast): f"{t} threads, fast_debug_builds {'on' if fast else 'off'}"
                for t in (2, 8) for fast in (True, False)}  # fmt: skip
    for t, fast in variants:  # warm the cache (both builds) and gdb's own start
        first_stop(t, fast)
    times: dict[tuple[int, bool], list[float]] = {v: [] for v in variants}
    keys = list(variants)
    orders = tm.balanced_orders(len(keys))
    for r in range(repeats):
        for k in orders[r % len(orders)]:
            times[keys[k]].append(first_stop(*keys[k]))
    print(f"{'variant':<34} {'median':>9} {'best':>9} {'off / on':>9}")
    for key, label in variants.items():
        values = times[key]
        ratio = ""
        if key[1]:
            ratios = [off / on for off, on in zip(times[key[0], False], values, strict=True)]
            ratio = f"{statistics.median(ratios):8.1f}x"
        print(f"{label:<34} {statistics.median(values):8.3f}s {min(values):8.3f}s {ratio:>9}")
    print("  (off / on: median of the per-round ratios, the same round's sessions)")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=8, help="rounds of sessions (8)")
    parser.add_argument("--quick", action="store_true", help="fewer steps of heat.py")
    options = parser.parse_args()
    cache_dir = tempfile.mkdtemp(prefix="pkdb-bench-")
    env = tm.same_loops_env(dict(os.environ, PKERNELS_CACHE_DIR=cache_dir))
    # Sessions start as an installed debugger does: from compiled bytecode (pip writes it
    # at install). Without this, $PYTHONDONTWRITEBYTECODE makes every session of an
    # editable install recompile each pkdb module it imports, and pdb's never.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    compileall.compile_dir(str(ROOT / "src"), quiet=1)
    session_table(options.repeats, env, options.quick)
    latency_table(min(options.repeats, 3), cache_dir)
    conditional_table(min(options.repeats, 3), cache_dir)


if __name__ == "__main__":
    main()
