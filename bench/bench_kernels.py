"""pkernels vs hand-written C++/OpenMP vs Numba vs NumPy vs pkernels Debug, side by side.

    python bench/bench_kernels.py [--quick] [--repeats N] [--threads T]

Kernels: yAx (examples/yax.py), a 7-point 3D stencil, a Lennard-Jones force loop over
a neighbour list. The compiled variants of a kernel are timed in rounds, each variant
called once per round, in an order that changes from round to round (balanced: every
variant in every position, and after every other, equally often).

Prints, per kernel, the median and best time of every variant and its speed relative to
the hand-written C++ (hand time / variant time: 1.00 = as fast, above 1 = faster); then
paired speed ratios: per round, reference time / pkernels time from the same round, their
median over the rounds and a 90% bootstrap interval of that median; then cold compile,
cached load and dispatch overhead; then PASS/MISS against the project's targets, the
speed targets judged on the median paired ratio (a ratio of two medians taken at
different moments drifts by +-10% between runs on a noisy machine; the paired ratio
cancels that drift). Every variant's result is checked against NumPy; the script exits
with status 1 if one disagrees. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

# Targets from the issue.
TARGET_VS_HAND = 0.9  # pkernels speed >= 0.9x the hand-written C++
TARGET_VS_NUMBA = 1.0  # pkernels at least as fast as Numba
TARGET_COMPILE_S = 0.5  # cold compile per kernel
TARGET_DISPATCH_S = 50e-6  # cached dispatch per call

PK = "pkernels OpenMP"
PK_LAUNCH = "pk launch only"
HAND = "hand C++ OpenMP"
NUMBA = "Numba parallel"
NUMPY = "NumPy"
DEBUG = "pkernels Debug"

# Paired comparisons (timed variant, reference): per round, reference time / timed time.
# The first two are judged against the targets; the launch-only ones are diagnostics
# (the generated code without pkernels' Python dispatch).
PAIRS = [(PK, HAND), (PK, NUMBA), (PK_LAUNCH, HAND), (PK_LAUNCH, NUMBA)]


@dataclass
class Measured:
    seconds: float  # median
    best: float
    spread: float
    error: float | None  # max relative disagreement with NumPy; None: not checked
    ok: bool = True
    note: str = ""


@dataclass
class KernelReport:
    name: str
    size: str
    variants: dict[str, Measured] = field(default_factory=dict)
    first_call: dict[str, float] = field(default_factory=dict)
    outside_load: float | None = None  # share of the CPUs other processes used while timing
    # (timed, reference) -> per-round ratios reference / timed, summarised (_timing.Paired)
    paired: dict[tuple[str, str], Any] = field(default_factory=dict)
    compile: dict[str, float] = field(default_factory=dict)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--quick", action="store_true", help="small problem sizes (seconds, not minutes)"
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="timed rounds, one call of each variant per round (48; 12 quick)",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count() or 1),
        help="threads for OpenMP, Numba and BLAS (default: $OMP_NUM_THREADS, else all cores)",
    )
    p.add_argument(
        "--compile-repeats", type=int, default=None, help="cold compiles per kernel (3; 1 quick)"
    )
    p.add_argument("--keep-cache", action="store_true", help="keep the temporary kernel cache")
    p.add_argument("--json", type=Path, help="also write the kernel times and ratios here")
    args = p.parse_args()
    if args.repeats is None:
        # Multiples of 12: whole cycles of the balanced orders of 4 (or 3) variants.
        args.repeats = 12 if args.quick else 48
    if args.compile_repeats is None:
        args.compile_repeats = 1 if args.quick else 3
    if args.repeats < 1 or args.compile_repeats < 1 or args.threads < 1:
        p.error("--repeats, --compile-repeats and --threads must be positive")
    return args


def main() -> int:
    args = parse_args()
    # Before anything loads libgomp or Numba: same thread count for every variant, and
    # a fresh kernel cache so pkernels' first calls are cold compiles.
    for var in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    root = Path(tempfile.mkdtemp(prefix="pkernels-bench-"))
    main_cache = root / "main"
    os.environ["PKERNELS_CACHE_DIR"] = str(main_cache)
    try:
        return run(args, root, main_cache)
    finally:
        if args.keep_cache:
            print(f"\nkernel cache kept at {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def run(args: argparse.Namespace, root: Path, main_cache: Path) -> int:
    import _handwritten as hw
    import _timing as tm
    import _workloads as w
    import numpy as np

    import pkernels as pk

    try:
        import _numba_kernels as nk
        import numba

        numba.set_num_threads(args.threads)
    except ImportError:
        numba = nk = None

    print_header(args, main_cache, np, numba, hw)
    whole_run = tm.OutsideLoad()

    hand = {name: hw.build(name, root) for name in hw.SOURCES}
    reports: list[KernelReport] = []
    failures: list[str] = []

    for wl in w.workloads(args.quick):
        print(f"\n... {wl.name}: {wl.size}", flush=True)
        rep = KernelReport(wl.name, wl.size)
        rep.compile["g++ hand"] = hand[_hand_name(wl.name)].compile_seconds
        calls: dict[str, Any] = {}

        pk_call = wl.pkernels(pk.OpenMP)
        rep.first_call[PK], _ = tm.time_once(pk_call)  # cold: translate, g++, load, run
        calls[PK] = pk_call
        calls[PK_LAUNCH] = wl.pkernels_launch_only(pk.OpenMP)  # runs until tuned, too
        builds = wl.workunit.__pkernels__.specializations.values()
        width = next((k.vector_width for k in builds if k.vector_width), None)
        if width is not None:
            print(f"    pkernels' loops: {width}-bit vectors (kept after timing both)", flush=True)
        calls[HAND] = wl.hand(hand[_hand_name(wl.name)].function)
        if nk is not None:
            numba_call = wl.numba(nk)
            rep.first_call[NUMBA], _ = tm.time_once(numba_call)  # compile + run
            calls[NUMBA] = numba_call
        calls[NUMPY] = wl.numpy()

        errors = {}
        for name, fn in calls.items():  # the variants share one output: check each alone
            wl.poison_output()
            errors[name] = wl.error(fn())
        # The compiled variants in rotation; NumPy on its own afterwards, because its
        # BLAS threads keep spinning ~0.1 s after a call and would slow whoever follows.
        numpy_call = calls.pop(NUMPY)
        tm.settle()
        load = tm.OutsideLoad()
        samples = tm.interleaved(calls, args.repeats, warmup=1)
        rep.outside_load = load.fraction()
        samples.update(tm.interleaved({NUMPY: numpy_call}, args.repeats, warmup=1))
        tm.settle()
        for name, values in samples.items():
            err = errors[name]
            rep.variants[name] = Measured(
                tm.median(values), min(values), tm.spread(values), err, err <= wl.tolerance
            )
        for timed, reference in PAIRS:
            if timed in calls and reference in calls:  # same rounds: samples pair up
                rep.paired[timed, reference] = tm.paired(samples[reference], samples[timed])

        dbg_call, dbg_error, fraction, note = wl.debug()
        dbg_times = []
        dbg_err = 0.0
        for _ in range(min(3, args.repeats)):
            seconds, result = tm.time_once(dbg_call)
            dbg_times.append(seconds)
            dbg_err = max(dbg_err, dbg_error(result))
        rep.variants[PK_LAUNCH].note = "diagnostic: the same kernel, ctypes call, no dispatch"
        rep.variants[DEBUG] = Measured(
            tm.median(dbg_times) / fraction,
            min(dbg_times) / fraction,
            tm.spread(dbg_times),
            dbg_err,
            dbg_err <= wl.tolerance,
            f"extrapolated: ran {note}",
        )
        for name, m in rep.variants.items():
            if not m.ok:
                failures.append(
                    f"{wl.name} / {name}: max relative error {m.error:.3g} > {wl.tolerance:g}"
                )
        reports.append(rep)

    print("\n... cold compiles, cached load, dispatch overhead", flush=True)
    measure_compiles(reports, root, main_cache, args.compile_repeats, w, tm)
    cached = measure_cached_load(main_cache)
    dispatch = measure_dispatch(hand, nk, pk, np, tm, args.quick)

    print_results(reports, cached, dispatch, nk is not None, tm)
    if args.json:
        write_json(args.json, reports, dispatch)
    verdicts = targets(reports, dispatch)
    tm.print_table(
        "Targets. Kernel speed: 'paired' = median over the rounds of the per-round ratio "
        "reference time /\npkernels time (same round) [90% bootstrap interval of that "
        "median]; the speed verdicts are on\nthat paired median (the ratios of medians and "
        "of bests are shown for comparison only).\nCompile: median of the cold compiles; "
        "dispatch: median of the batches of calls",
        ["target", "measured", "verdict"],
        verdicts,
    )
    print(
        f"other processes used {_percent(whole_run.fraction())} of the {os.cpu_count()} cores "
        f"during the whole run; load average at the end: {_loadavg()}"
    )

    if failures:
        print("\nFAILED: variants disagree with NumPy:")
        for f in failures:
            print("  " + f)
        return 1
    print("\nAll variants agree with NumPy within tolerance.")
    return 0


def write_json(path: Path, reports: list[KernelReport], dispatch: dict) -> None:
    """The kernel table and the paired ratios as JSON (for bench/paper's report)."""
    kernels = []
    for rep in reports:
        variants = {
            name: {"median": m.seconds, "best": m.best, "error": m.error, "ok": m.ok,
                   "note": m.note}
            for name, m in rep.variants.items()
        }  # fmt: skip
        paired = {
            f"{timed} vs {reference}": {"median": pr.median, "low": pr.low, "high": pr.high}
            for (timed, reference), pr in rep.paired.items()
        }
        kernels.append({"name": rep.name, "size": rep.size, "variants": variants,
                        "paired": paired, "compile": rep.compile})  # fmt: skip
    out = {"kernels": kernels, "dispatch": {k: v[0] for k, v in dispatch.items()}}
    path.write_text(json.dumps(out, indent=1))


def _hand_name(kernel: str) -> str:
    return {"yAx": "yax", "stencil7": "stencil7", "lj": "lj"}[kernel]


def print_header(args: argparse.Namespace, cache: Path, np: Any, numba: Any, hw: Any) -> None:
    import pkernels as pk

    try:
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    except (OSError, StopIteration):
        cpu = platform.processor() or "unknown CPU"
    gxx = subprocess.run([hw.compiler(), "--version"], capture_output=True, text=True).stdout
    print("pkernels kernel benchmark" + (" (--quick sizes)" if args.quick else ""))
    print(f"  machine   {cpu}, {os.cpu_count()} cores, load average {_loadavg()}")
    print(f"  threads   {args.threads} (OpenMP, Numba and NumPy's BLAS)")
    print(
        f"  python    {platform.python_version()}, NumPy {np.__version__}, pkernels "
        f"{pk.__version__}"
    )
    print(f"  numba     {numba.__version__ if numba else 'numba not installed (skipped)'}")
    print(f"  g++       {gxx.splitlines()[0] if gxx else '?'}")
    print(f"  flags     {' '.join(hw.CXX_FLAGS)} (pkernels release = hand C++)")
    print(f"  cache     {cache} (fresh: first calls compile)")
    print(
        f"  repeats   {args.repeats} rounds after 1 warm-up call; each round calls every "
        "compiled variant once,\n            in an order balanced over the rounds; NumPy "
        "timed apart, as many times"
    )


def _percent(value: float | None) -> str:
    return "?" if value is None else f"{100 * value:.0f}%"


def _loadavg() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "?"


def measure_compiles(
    reports: list[KernelReport], root: Path, main_cache: Path, repeats: int, w: Any, tm: Any
) -> None:
    """Translation time, and g++ time of release and debug builds in fresh caches."""
    from pkernels.build.compiler import build
    from pkernels.runtime.marshal import argument_type
    from pkernels.translate.kernel import translate_workunit

    tiny = {wl.name: wl for wl in w.tiny_workloads()}
    try:
        for rep in reports:
            wl = tiny[rep.name]
            arg_types = {n: argument_type(n, v) for n, v in wl.dispatch_kwargs().items()}
            translate = []
            for _ in range(max(3, repeats)):
                seconds, entry = tm.time_once(
                    lambda wl=wl, arg_types=arg_types: translate_workunit(
                        wl.workunit, wl.operation, arg_types
                    )
                )
                translate.append(seconds)
            rep.compile["translate"] = tm.median(translate)
            for mode, debug in (("release", False), ("debug", True)):
                times = []
                for r in range(repeats):
                    os.environ["PKERNELS_CACHE_DIR"] = str(root / f"cold-{rep.name}-{mode}-{r}")
                    module = build(entry.source, debug, f"bench {rep.name}")
                    times.append(module.compile_seconds)
                rep.compile[mode] = tm.median(times)
    finally:
        os.environ["PKERNELS_CACHE_DIR"] = str(main_cache)


def measure_cached_load(cache: Path) -> dict[str, Any]:
    """Run _cached_load.py in a new process on the warm cache; its JSON report."""
    env = dict(os.environ, PKERNELS_CACHE_DIR=str(cache))
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(HERE / "_cached_load.py")],
        capture_output=True,
        text=True,
        env=env,
        cwd=HERE,
        check=False,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        print(f"cached-load probe failed:\n{proc.stderr}")
        return {}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_seconds"] = wall
    return out


def measure_dispatch(hand: dict, nk: Any, pk: Any, np: Any, tm: Any, quick: bool) -> dict:
    """Seconds per call of a one-element kernel, dispatched many times, per variant; then
    the benchmark kernels themselves on tiny arrays (their real argument lists)."""
    import _workloads as w

    hand_noop = hand["noop"].function

    # Many short batches, and their median: a burst of outside load spoils a few batches
    # instead of shifting one long average.
    calls, repeats = 200, 15 if quick else 31
    out = np.zeros(1)
    omp = pk.RangePolicy(pk.OpenMP, 0, 1)
    serial = pk.RangePolicy(pk.Serial, 0, 1)
    ptr = out.ctypes.data
    probes: dict[str, Any] = {
        "pkernels parallel_for, OpenMP, 1 element": lambda: pk.parallel_for(omp, w.noop, out=out),
        "pkernels parallel_for, Serial, 1 element": lambda: pk.parallel_for(
            serial, w.noop, out=out
        ),
        "pkernels parallel_for(1, ...), default space": lambda: pk.parallel_for(1, w.noop, out=out),
        "hand C++ via ctypes, OpenMP, 1 element": lambda: hand_noop(0, 1, ptr),
    }
    if nk is not None:
        probes["Numba parallel, 1 element"] = lambda: nk.noop(out)
    # The launch alone (argument marshalling + ctypes call + OpenMP region), without
    # the Python dispatch path: an internal, to split the overhead.
    pk.parallel_for(omp, w.noop, out=out)
    marker = getattr(w.noop, "__pkernels__", None)
    kernels = list(getattr(marker, "specializations", {}).values())
    if kernels and hasattr(kernels[0], "launch"):
        kernel, kwargs = kernels[0], {"out": out}
        probes["pkernels CompiledKernel.launch only (internal), OpenMP"] = lambda: kernel.launch(
            pk.OpenMP, 0, 1, kwargs
        )
    for wl in w.tiny_workloads():
        probes[f"pkernels {wl.name}, tiny ({len(wl.dispatch_kwargs())} kwargs)"] = wl.pkernels(
            pk.OpenMP
        )
        probes[f"hand C++ {wl.name} via ctypes, tiny"] = wl.hand(hand[_hand_name(wl.name)].function)
    results = {}
    for name, fn in probes.items():
        samples = tm.per_call(fn, calls, repeats)
        results[name] = (tm.median(samples), min(samples))
    # The same calls one at a time, each after a 64 MB sweep: what a dispatch costs right
    # after a kernel that streamed its arrays through the caches (the benchmark kernels
    # do), when the Python code and data on its path come back from memory.
    lj = next(wl for wl in w.tiny_workloads() if wl.name == "lj")
    cold = {
        "pkernels lj, tiny (5 kwargs)": lj.pkernels(pk.OpenMP),
        "pkernels lj, launch only (internal)": lj.pkernels_launch_only(pk.OpenMP),
        "hand C++ lj via ctypes, tiny": lj.hand(hand["lj"].function),
    }
    if nk is not None:
        cold["Numba lj, tiny"] = lj.numba(nk)
    for name, fn in cold.items():
        samples = tm.after_sweep(fn, repeats)
        results[f"{name}, after a 64 MB sweep"] = (tm.median(samples), min(samples))
    return results


def print_results(
    reports: list[KernelReport], cached: dict, dispatch: dict, have_numba: bool, tm: Any
) -> None:
    rows = []
    for rep in reports:
        hand = rep.variants[HAND].seconds
        hand_best = rep.variants[HAND].best
        order = [PK, PK_LAUNCH, HAND, NUMBA, NUMPY, DEBUG]
        for k, name in enumerate(order):
            m = rep.variants.get(name)
            kernel = rep.name if k == 0 else ""
            if m is None:
                rows.append([kernel, name, "skipped", "", "", "", "", "", "numba not installed"])
                continue
            rows.append(
                [
                    kernel,
                    name,
                    tm.fmt_seconds(m.seconds),
                    tm.fmt_seconds(m.best),
                    f"{100 * m.spread:.0f}%",
                    f"{hand / m.seconds:.2f}x",
                    f"{hand_best / m.best:.2f}x",
                    ("ok " if m.ok else "BAD ") + f"{m.error:.1e}",
                    m.note,
                ]
            )
    tm.print_table(
        "Kernel times: median and best of the repeats; spread = (max - min) / median;\n"
        "speed vs hand = hand C++ time / variant time (1.00x: as fast; > 1: faster), "
        "from medians and from bests;\nagreement = max relative error vs the NumPy result",
        [
            "kernel",
            "variant",
            "median",
            "best",
            "spread",
            "speed vs hand",
            "(best)",
            "agreement",
            "note",
        ],
        rows,
    )
    print("sizes: " + "; ".join(f"{r.name}: {r.size}" for r in reports))
    print(
        "CPU time other processes took while the compiled variants were timed: "
        + "; ".join(f"{r.name} {_percent(r.outside_load)}" for r in reports)
        + f" of {os.cpu_count()} cores (above a few %, expect noisy medians)"
    )

    rows = []
    for rep in reports:
        first = True
        for (timed, reference), pr in rep.paired.items():
            m_ref, m_timed = rep.variants[reference], rep.variants[timed]
            rows.append(
                [
                    rep.name if first else "",
                    f"{timed} vs {reference}",
                    f"{pr.median:.2f}x",
                    f"[{pr.low:.2f}, {pr.high:.2f}]",
                    f"{pr.q25:.2f}-{pr.q75:.2f}",
                    f"{round(100 * pr.faster)}% of {pr.rounds}",
                    f"{m_ref.seconds / m_timed.seconds:.2f}x",
                    "target" if timed == PK else "diagnostic",
                ]
            )
            first = False
    if rows:
        tm.print_table(
            "Paired speed ratios: per round, reference time / timed time, both from the same "
            "round\n(above 1: the first variant is faster). paired median: median over the "
            "rounds; 90% interval:\nbootstrap interval of that median (2000 resamples of the "
            "rounds); rounds IQR: 25th-75th\npercentile of the per-round ratios; rounds faster: "
            "share of rounds the first variant won;\nratio of medians: as in the table above, "
            "for comparison",
            [
                "kernel",
                "pair",
                "paired median",
                "90% interval",
                "rounds IQR",
                "rounds faster",
                "ratio of medians",
                "role",
            ],
            rows,
        )

    rows = []
    for rep in reports:
        load = cached.get(rep.name, {})
        first_load = load.get("first")
        rows.append(
            [
                rep.name,
                tm.fmt_seconds(rep.compile["translate"]),
                tm.fmt_seconds(rep.compile["release"]),
                tm.fmt_seconds(rep.compile["debug"]),
                tm.fmt_seconds(rep.compile["g++ hand"]),
                tm.fmt_seconds(rep.first_call[PK]),
                (tm.fmt_seconds(first_load) if first_load is not None else "?")
                + (" (RECOMPILED)" if load.get("compiled") else ""),
                tm.fmt_seconds(rep.first_call[NUMBA]) if have_numba else "numba not installed",
            ]
        )
    tm.print_table(
        "Compile and load (per kernel)",
        [
            "kernel",
            "translate",
            "cold g++ release",
            "cold g++ debug",
            "g++ hand-written",
            "pk first call (cold)",
            "cached load (new proc)",
            "Numba first call",
        ],
        rows,
    )
    print(
        "translate: Python AST -> C++ text; cold g++: BuiltModule.compile_seconds in a fresh "
        "cache dir;\npk first call: translate + g++ + load + one full-size run; cached load: "
        "first dispatch in a\nnew process on tiny arrays, kernel found on disk (translate + "
        "dlopen + launch);\nNumba first call: type inference + LLVM compile + one full-size run."
    )
    if cached:
        print(
            f"cached-load process: import pkernels+bench {tm.fmt_seconds(cached['import_seconds'])}"
            f", whole process {tm.fmt_seconds(cached['process_seconds'])}"
        )

    rows = [[name, tm.fmt_seconds(m), tm.fmt_seconds(b)] for name, (m, b) in dispatch.items()]
    tm.print_table(
        "Dispatch overhead (kernel cached and loaded; time per call, batches of 200 calls)",
        ["probe", "median", "best"],
        rows,
    )


def targets(reports: list[KernelReport], dispatch: dict) -> list[list[str]]:
    def verdict(ok: bool) -> str:
        return "PASS" if ok else "MISS"

    def speed_row(rep: KernelReport, reference: str, label: str, target: float) -> list[str]:
        pr = rep.paired.get((PK, reference))
        if pr is None:
            return [f"{rep.name}: pkernels >= {label}", "numba not installed", "n/a"]
        pk_m, ref = rep.variants[PK], rep.variants[reference]
        of_medians, of_bests = ref.seconds / pk_m.seconds, ref.best / pk_m.best
        measured = (
            f"paired {pr.median:.3f}x [{pr.low:.3f}, {pr.high:.3f}]; "
            f"ratio of medians {of_medians:.2f}x, of bests {of_bests:.2f}x"
        )
        close = " (interval spans target)" if pr.low < target <= pr.high else ""
        return [f"{rep.name}: pkernels >= {label}", measured, verdict(pr.median >= target) + close]

    rows = []
    for rep in reports:
        rows.append(speed_row(rep, HAND, f"{TARGET_VS_HAND}x hand C++", TARGET_VS_HAND))
        rows.append(speed_row(rep, NUMBA, "Numba", TARGET_VS_NUMBA))
        for mode in ("release", "debug"):
            s = rep.compile[mode]
            rows.append(
                [f"{rep.name}: cold compile ({mode}) <= {TARGET_COMPILE_S} s", f"{s:.3f} s",
                 verdict(s <= TARGET_COMPILE_S)]
            )  # fmt: skip
    d, best = dispatch["pkernels parallel_for, OpenMP, 1 element"]
    rows.append(
        [f"cached dispatch (OpenMP) <= {TARGET_DISPATCH_S * 1e6:.0f} µs",
         f"{d * 1e6:.1f} µs (best {best * 1e6:.1f} µs)", verdict(d <= TARGET_DISPATCH_S)]
    )  # fmt: skip
    return rows


if __name__ == "__main__":
    sys.exit(main())
