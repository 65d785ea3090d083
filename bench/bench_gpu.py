"""pk.Cuda against hand-written CUDA and CuPy, side by side in one run (issue 21).

    python bench/bench_gpu.py [--quick] [--repeats N] [--only yax,axpy,...] [--json PATH]

Kernels (``--only`` names): yax (yAx, A LayoutLeft), axpy, dot, stencil7 (3D
MDRangePolicy), lj (Lennard-Jones force loop over a neighbour list), team (TeamPolicy with
level-0 scratch), launch (a cached one-element launch); lj-empty and team-1, the lj
and team launches over no work (every atom without neighbours; a league of one team):
their dispatch cost, which the kernels' rows include, shown apart (no target). For each: pk.Cuda
(``pk.parallel_for/reduce`` returning: dispatch, launch and synchronisation as a user
sees them), the same algorithm and layout written by hand in CUDA C++ and launched with
CuPy's ``RawKernel`` + a stream synchronisation (``_gpu_kernels.py``), and the CuPy
expression + synchronisation. Median of ``--repeats`` calls after two warm-up calls,
the variants called in interleaved rounds (``_timing.interleaved``); hand/pk is the
median of the per-round ratios. Achieved bandwidth (the bytes each algorithm must move
/ time) is shown as a fraction of the device-to-device copy rate measured first. Then
each kernel's NVRTC release compile: its first dispatch in a fresh kernel cache minus a
warm dispatch. Every result is checked against the hand kernel's; a disagreement is
printed as an error row and the exit status is 1. Needs CuPy and an NVIDIA GPU: without
them it prints one line saying so and exits 0. See bench/README.md.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TARGET_VS_HAND = 0.9  # pk.Cuda >= 0.9x the hand-written kernel's speed
TARGET_VS_CUBLAS = 1.5  # yAx: pk.Cuda within 1.5x of cuBLAS's time
TARGET_LAUNCH_S = 20e-6  # a cached one-element launch
TARGET_COMPILE_S = 0.3  # NVRTC release compile per kernel
PK, HAND, CUPY = "pk.Cuda", "hand CUDA", "CuPy"
LAUNCH_BATCH = 100  # one-element launches per timed sample
NAMES = ("yax", "axpy", "dot", "stencil7", "lj", "lj-empty", "team", "team-1", "launch")


def gpu_missing() -> str | None:
    """Why this machine cannot run the benchmark, or None."""
    try:
        import cupy
    except ImportError as exc:
        return f"CuPy is not installed ({exc})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - the CUDA driver's reason
        return f"CuPy finds no GPU ({exc})"
    return None if count > 0 else "CuPy finds no GPU"


@dataclass
class Case:
    """One kernel at one size: a call per variant, what resets its output, how its result
    is read, the bytes its algorithm must move, and how closely results must agree."""

    name: str
    size: str
    bytes_moved: int
    calls: dict[str, Callable[[], Any]]
    reset: Callable[[], None]
    output: Any = None  # the array the calls write (None: they return the result)
    tolerance: float = 1e-10  # max |a - b| / max |hand|
    per_call: int = 1  # calls each sample makes (the launch probe's batches)
    target: bool = True  # False: a dispatch-overhead row, shown without a verdict


@dataclass
class Outcome:
    key: str  # the --only name
    case: Case
    seconds: dict[str, float] = field(default_factory=dict)  # median per call
    paired: Any = None  # _timing.Paired: per-round hand time / pk time
    compile_s: float | None = None
    errors: dict[str, float] = field(default_factory=dict)  # variant -> disagreement
    failure: str = ""  # an exception that stopped the case


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes, 5 calls")
    p.add_argument("--repeats", type=int, default=None, help="timed rounds (20; 5 quick)")
    p.add_argument("--only", default=",".join(NAMES), help="kernels: " + ",".join(NAMES))
    p.add_argument("--json", type=Path, help="also write the rows here")
    args = p.parse_args()
    args.repeats = args.repeats or (5 if args.quick else 20)
    args.only = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = sorted(set(args.only) - set(NAMES))
    if unknown or not args.only or args.repeats < 1:
        p.error(f"--only takes some of {','.join(NAMES)} (got {unknown}); --repeats >= 1")
    return args


def main() -> int:
    return run_on_gpu("bench_gpu.py", run, parse_args())


def run_on_gpu(script: str, run: Callable[[Any], int], args: Any) -> int:
    """``run(args)`` with a fresh kernel cache (set before pkernels is imported: first
    dispatches compile), removed after; where there is no GPU, one line saying so and 0."""
    missing = gpu_missing()
    if missing is not None:
        print(f"{script} needs CuPy and an NVIDIA GPU: {missing}; nothing measured")
        return 0
    cache = tempfile.mkdtemp(prefix=f"pkernels-{Path(script).stem}-")
    os.environ["PKERNELS_CACHE_DIR"] = cache
    try:
        return run(args)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def run(args: argparse.Namespace) -> int:
    import _gpu_kernels as g
    import _timing as tm
    import cupy as cp
    import numpy as np

    import pkernels as pk

    sms = int(cp.cuda.Device().attributes["MultiProcessorCount"])
    print_header(args, cp, pk, sms)
    hand = {name: cp.RawKernel(g.CUDA_SOURCE, name, options=g.HAND_OPTIONS) for name in
            g.HAND_KERNELS}  # fmt: skip
    for kernel in hand.values():  # NVRTC compiles (and loads) them now, not while timed
        _ = kernel.attributes
    primer = cp.zeros(4)
    first, _ = tm.time_once(
        lambda: pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 4), g.prime, out=primer)
    )
    print(f"  primer    first pk.Cuda dispatch of the process {first:.3f} s (one-time costs: "
          "not in the compile rows)")  # fmt: skip
    copy_rate = measure_copy_rate(cp, tm, args.repeats)
    cp.get_default_memory_pool().free_all_blocks()
    print(f"  copy rate {copy_rate / 1e9:.0f} GB/s (1 GiB device-to-device copy, bytes read "
          "+ written / median time)", flush=True)  # fmt: skip

    builders = {"yax": yax_case, "axpy": axpy_case, "dot": dot_case, "stencil7": stencil_case,
                "lj": lj_case, "lj-empty": functools.partial(lj_case, empty=True),
                "team": team_case, "team-1": functools.partial(team_case, league=1),
                "launch": launch_case}  # fmt: skip
    outcomes = []
    for name in args.only:
        print(f"... {name}", flush=True)
        outcome = Outcome(name, Case(name, "", 0, {}, lambda: None))
        try:
            outcome.case = builders[name](cp, np, pk, g, hand, sms, args.quick)
            measure(outcome, cp, tm, args.repeats)
        except Exception as exc:  # noqa: BLE001 - reported as the case's row; others go on
            outcome.failure = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            traceback.print_exc()
        outcomes.append(outcome)
        # Drop the case's arrays before the next one allocates.
        outcome.case.calls.clear()
        outcome.case.reset, outcome.case.output = (lambda: None), None
        cp.get_default_memory_pool().free_all_blocks()

    rows = table_rows(outcomes, copy_rate)
    header = ["kernel", f"{PK} ms", f"{HAND} ms", f"{CUPY} ms", "hand/pk", "pk GB/s",
              "pk fraction of copy rate", "target"]  # fmt: skip
    tm.print_table(
        f"pk.Cuda vs hand-written CUDA vs CuPy: median of {args.repeats} calls, each "
        "synchronised; hand/pk: median of per-round ratios\n(above 1: pk faster); GB/s: "
        f"bytes the algorithm must move / pk median; copy rate {copy_rate / 1e9:.0f} GB/s",
        header,
        [[r[k] for k in header] for r in rows],
    )
    print("sizes: " + "; ".join(f"{o.case.name}: {o.case.size}" for o in outcomes))
    if args.json:
        args.json.write_text(json.dumps({"copy_rate_Bps": copy_rate, "rows": rows}, indent=1))
    bad = [r for r in rows if r["target"].startswith(("ERROR", "DISAGREE"))]
    for r in bad:
        print(f"FAILED: {r['kernel']}: {r['target']}")
    return 1 if bad else 0


def print_header(args: argparse.Namespace, cp: Any, pk: Any, sms: int) -> None:
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    runtime = cp.cuda.runtime.runtimeGetVersion()
    nvrtc = ".".join(map(str, cp.cuda.nvrtc.getVersion()))
    print("pk.Cuda benchmark" + (" (--quick sizes)" if args.quick else ""))
    print(f"  device    {name}, {sms} multiprocessors, CUDA runtime {runtime}, NVRTC {nvrtc}")
    print(f"  software  Python {sys.version.split()[0]}, CuPy {cp.__version__}, pkernels "
          f"{pk.__version__}")  # fmt: skip
    print(f"  cache     {os.environ['PKERNELS_CACHE_DIR']} (fresh: first dispatches compile)")
    print(f"  repeats   {args.repeats} rounds after 2 warm-up calls, every variant once a "
          "round, in balanced orders", flush=True)  # fmt: skip


def measure_copy_rate(cp: Any, tm: Any, repeats: int) -> float:
    """Bytes read + written per second by a 1 GiB device-to-device copy (median)."""
    nbytes = 1 << 30
    src, dst = cp.ones(nbytes // 8), cp.empty(nbytes // 8)
    stream = cp.cuda.get_current_stream()

    def copy() -> None:
        dst.data.copy_from_device_async(src.data, nbytes, stream)
        stream.synchronize()

    samples = tm.interleaved({"copy": copy}, max(repeats, 5), warmup=2)["copy"]
    return 2 * nbytes / tm.median(samples)  # the arrays go back to CuPy's pool here


def measure(o: Outcome, cp: Any, tm: Any, repeats: int) -> None:
    """Cold first dispatch, then each variant's result checked alone, then the rounds."""
    case = o.case
    case.reset()
    cp.cuda.get_current_stream().synchronize()  # the data's set-up is not the first call's
    first, _ = tm.time_once(case.calls[PK])  # translate + NVRTC + load + one run
    results = {}
    for name, call in case.calls.items():  # the variants share the output: one at a time
        case.reset()
        value = call()
        results[name] = value if case.output is None else case.output.copy()
    reference = results[HAND]
    for name, value in results.items():
        if name != HAND:
            o.errors[name] = disagreement(cp, value, reference)
    del results, reference
    case.reset()
    samples = tm.interleaved(case.calls, repeats, warmup=2)
    o.seconds = {name: tm.median(v) / case.per_call for name, v in samples.items()}
    o.paired = tm.paired(samples[HAND], samples[PK])
    # (a launch sample is a batch: its first holds the cold call and warm ones)
    o.compile_s = first - tm.median(samples[PK])


def disagreement(cp: Any, value: Any, reference: Any) -> float:
    """max |value - reference| / max |reference| (numbers or GPU arrays)."""
    if isinstance(reference, float):
        return abs(float(value) - reference) / (abs(reference) or 1.0)
    scale = float(cp.max(cp.abs(reference))) or 1.0
    return float(cp.max(cp.abs(value - reference))) / scale


def table_rows(outcomes: list[Outcome], copy_rate: float) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    blank = {f"{PK} ms": "-", f"{HAND} ms": "-", f"{CUPY} ms": "-", "hand/pk": "-",
             "pk GB/s": "-", "pk fraction of copy rate": "-"}  # fmt: skip
    for o in outcomes:
        c = o.case
        if o.failure:
            rows.append({"kernel": c.name, **blank, "target": f"ERROR {o.failure}"})
            continue
        bad = [f"{n} {e:.1e}" for n, e in o.errors.items() if not e <= c.tolerance]
        if bad:
            rows.append({"kernel": c.name, **blank, "target": "DISAGREE with hand CUDA (max rel "
                         f"error {', '.join(bad)} > {c.tolerance:g})"})  # fmt: skip
        pk_s, hand_s, cupy_s = (o.seconds.get(v) for v in (PK, HAND, CUPY))
        assert pk_s is not None and hand_s is not None
        ratio = o.paired.median
        launch = c.name.startswith("cached launch") or not c.target  # no bandwidth
        row = {
            "kernel": c.name,
            f"{PK} ms": f"{pk_s * 1e3:.4f}",
            f"{HAND} ms": f"{hand_s * 1e3:.4f}",
            f"{CUPY} ms": f"{cupy_s * 1e3:.4f}" if cupy_s is not None else "-",
            "hand/pk": f"{ratio:.2f}x",
            "pk GB/s": "-" if launch else f"{c.bytes_moved / pk_s / 1e9:.0f}",
            "pk fraction of copy rate":
                "-" if launch else f"{c.bytes_moved / pk_s / copy_rate:.2f}",
            "size": c.size,
            "seconds": o.seconds,
            "hand/pk interval": [o.paired.low, o.paired.high],
            "errors": o.errors,
        }  # fmt: skip
        if not c.target:
            row["target"] = f"- dispatch cost: pk {pk_s * 1e6:.1f} us, hand {hand_s * 1e6:.1f} us"
        elif launch:
            row["target"] = f"{verdict(pk_s <= TARGET_LAUNCH_S)} pk <= 20 us ({pk_s * 1e6:.1f} us)"
        else:
            row["target"] = f"{verdict(ratio >= TARGET_VS_HAND)} >= {TARGET_VS_HAND}x hand"
        if c.name.startswith("yAx") and cupy_s is not None:
            within = pk_s <= TARGET_VS_CUBLAS * cupy_s
            row["target"] += (f"; {verdict(within)} <= {TARGET_VS_CUBLAS}x cuBLAS "
                              f"({pk_s / cupy_s:.2f}x)")  # fmt: skip
        rows.append(row)
    for o in outcomes:
        if o.compile_s is not None and not o.failure and o.case.target:
            rows.append({"kernel": f"NVRTC release compile: {o.key}", **blank,
                         f"{PK} ms": f"{o.compile_s * 1e3:.0f}", "compile_s": o.compile_s,
                         "target": f"{verdict(o.compile_s <= TARGET_COMPILE_S)} <= "
                                   f"{TARGET_COMPILE_S} s"})  # fmt: skip
    return rows


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


# ---------------------------------------------------------------- the cases


def synced(cp: Any, launch: Callable[[], Any]) -> Callable[[], None]:
    """``launch`` followed by a synchronisation of the current stream."""
    stream = cp.cuda.get_current_stream()

    def call() -> None:
        launch()
        stream.synchronize()

    return call


def hand_reduce(cp: Any, kernel: Any, grid: Any, block: Any, args: tuple) -> Callable[[], float]:
    """A hand reduction: zero the total, launch (the blocks add into it), read it back."""
    total = cp.zeros(1)

    def call() -> float:
        total.data.memset_async(0, 8)
        kernel(grid, block, (*args, total))
        return float(total.get()[0])  # a copy to the host: waits for the kernel

    return call


# Each builder takes (cupy, numpy, pkernels, _gpu_kernels, the hand RawKernels by name, the
# GPU's multiprocessor count, --quick) and returns the Case, its data on the GPU.


def yax_case(cp, np, pk, g, hand, sms, quick) -> Case:
    rows = cols = 1024 if quick else 8192
    rs = cp.random.RandomState(0)
    # LayoutLeft, as Kokkos (and a PyKokkos user) gets a CudaSpace view by default.
    A = pk.View([rows, cols], pk.double, space=pk.CudaSpace, layout=pk.LayoutLeft)
    A.data = rs.random_sample((rows, cols))
    a = A.data
    if not a.flags.f_contiguous:  # the hand kernel indexes A column-major
        raise RuntimeError("pk.View(..., layout=pk.LayoutLeft) did not give a column-major array")
    x, y = rs.random_sample(cols), rs.random_sample(rows)
    policy = pk.RangePolicy(pk.Cuda, 0, rows)
    grid, block = g.reduce_launch(rows, sms, g.YAX_BLOCK)
    calls = {
        PK: lambda: pk.parallel_reduce(policy, g.yAx, cols=cols, y_view=y, x_view=x, A_view=A),
        HAND: hand_reduce(cp, hand["yax_left"], grid, block, (np.int64(rows), np.int64(cols),
                                                              y, x, a)),
        CUPY: lambda: float(y @ (a @ x)),
    }  # fmt: skip
    return Case(f"yAx {rows}x{cols}", f"A {rows}x{cols} LayoutLeft, a row per thread",
                8 * (rows * cols + rows + cols), calls, lambda: None)  # fmt: skip


def axpy_case(cp, np, pk, g, hand, sms, quick) -> Case:
    n = 1 << (20 if quick else 27)
    rs = cp.random.RandomState(1)
    x, y0 = rs.random_sample(n), rs.random_sample(n)
    y, a = y0.copy(), 0.5
    policy = pk.RangePolicy(pk.Cuda, 0, n)
    grid, block = g.range_launch(n)
    args = (np.int64(n), np.float64(a), x, y)

    calls = {
        PK: lambda: pk.parallel_for(policy, g.axpy, y=y, x=x, a=a),
        HAND: synced(cp, lambda: hand["axpy"](grid, block, args)),
        CUPY: synced(cp, lambda: cp.add(y, a * x, out=y)),
    }
    return Case(f"axpy 2^{n.bit_length() - 1}", f"{n} doubles, y = a*x + y in place",
                24 * n, calls, lambda: y.__setitem__(Ellipsis, y0), output=y)  # fmt: skip


def dot_case(cp, np, pk, g, hand, sms, quick) -> Case:
    n = 1 << (20 if quick else 27)
    rs = cp.random.RandomState(2)
    x, y = rs.random_sample(n), rs.random_sample(n)
    policy = pk.RangePolicy(pk.Cuda, 0, n)
    grid, block = g.reduce_launch(n, sms)
    calls = {
        PK: lambda: pk.parallel_reduce(policy, g.dot, x=x, y=y),
        HAND: hand_reduce(cp, hand["dot"], grid, block, (np.int64(n), x, y)),
        CUPY: lambda: float(x @ y),
    }
    return Case(f"dot 2^{n.bit_length() - 1}", f"{n} doubles", 16 * n, calls, lambda: None)


def stencil_case(cp, np, pk, g, hand, sms, quick) -> Case:
    n = 64 if quick else 512
    c0, c1 = -6.0 / 7.0, 1.0 / 7.0
    u = cp.random.RandomState(3).random_sample((n, n, n))
    out = cp.zeros_like(u)
    box = pk.MDRangePolicy(pk.Cuda, [1, 1, 1], [n - 1, n - 1, n - 1])
    grid, block = g.stencil_launch(n, n, n)
    args = (np.int64(n), np.int64(n), np.int64(n), np.float64(c0), np.float64(c1), u, out)
    inner = (slice(1, -1),) * 3

    def cupy_stencil() -> None:
        out[inner] = c0 * u[inner] + c1 * (
            u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1]
            + u[1:-1, 2:, 1:-1] + u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:]
        )  # fmt: skip

    calls = {
        PK: lambda: pk.parallel_for(box, g.stencil7_box, c0=c0, c1=c1, u=u, out=out),
        HAND: synced(cp, lambda: hand["stencil7"](grid, block, args)),
        CUPY: synced(cp, cupy_stencil),
    }
    return Case(f"stencil7 {n}^3", f"{n}^3 C order, interior {n - 2}^3, MDRangePolicy 3D",
                8 * (n**3 + (n - 2) ** 3), calls, lambda: out.fill(0), output=out)  # fmt: skip


def lj_case(cp, np, pk, g, hand, sms, quick, empty: bool = False) -> Case:
    from _workloads import LennardJones as LJ
    from _workloads import lj_lattice

    side = 16 if quick else 64
    x_host, neigh_host, counts_host = lj_lattice(side, LJ.cutoff + LJ.skin, LJ.density,
                                                 LJ.jitter)  # fmt: skip
    n, maxn = neigh_host.shape
    cutsq = LJ.cutoff**2

    def left(shape: list[int], dtype: Any, values: Any = None) -> Any:
        # LayoutLeft, as Kokkos makes 2D CudaSpace views (ExaMiniMD's x, f, neighbours).
        view = pk.View(shape, dtype, space=pk.CudaSpace, layout=pk.LayoutLeft)
        if values is not None:
            view.data = cp.asarray(values)
        if not view.data.flags.f_contiguous:  # the hand kernel indexes them column-major
            raise RuntimeError("pk.LayoutLeft did not give a column-major array")
        return view

    x, neigh, f = left([n, 3], pk.double, x_host), left([n, maxn], pk.int32, neigh_host), \
        left([n, 3], pk.double)  # fmt: skip
    counts = cp.zeros(n, dtype=counts_host.dtype) if empty else cp.asarray(counts_host)
    policy = pk.RangePolicy(pk.Cuda, 0, n)
    grid, block = g.range_launch(n)
    args = (np.int64(n), np.float64(cutsq), x.data, neigh.data, counts, f.data)
    xs, nb, fs = x.data, neigh.data, f.data
    slots = cp.arange(maxn)[None, :]

    def cupy_lj() -> None:
        d = xs[:, None, :] - xs[nb]
        r2 = cp.einsum("ijk,ijk->ij", d, d)
        valid = (slots < counts[:, None]) & (r2 < cutsq)
        sr2 = cp.where(valid, 1.0 / cp.where(valid, r2, 1.0), 0.0)
        sr6 = sr2 * sr2 * sr2
        fs[...] = cp.einsum("ijk,ij->ik", d, 48.0 * sr6 * (sr6 - 0.5) * sr2)

    calls = {
        PK: lambda: pk.parallel_for(policy, g.lj_force, cutsq=cutsq, x=x, neigh=neigh,
                                    counts=counts, f=f),
        HAND: synced(cp, lambda: hand["lj_force"](grid, block, args)),
    }  # fmt: skip
    if empty:  # the same launch over no neighbours: its dispatch cost
        return Case(f"lj {n} atoms, no neighbours", "the lj launch with every count 0",
                    48 * n, calls, lambda: fs.fill(0), output=fs, target=False)  # fmt: skip
    calls[CUPY] = synced(cp, cupy_lj)
    pairs = int(counts_host.sum())
    # Compulsory traffic: x and counts read, the neighbour entries walked, f written.
    moved = 24 * n + 4 * n + 4 * pairs + 24 * n
    return Case(f"lj {n} atoms", f"{n} atoms, {pairs / n:.1f} neighbours/atom (max {maxn}), "
                "x, f, neighbours LayoutLeft", moved, calls, lambda: fs.fill(0),
                output=fs, tolerance=1e-10)  # fmt: skip


def team_case(cp, np, pk, g, hand, sms, quick, league: int | None = None) -> Case:
    rows, m = (1024, 256) if quick else (65536, 1024)
    rows = league or rows
    A = cp.random.RandomState(4).random_sample((rows, m))
    out = cp.zeros_like(A)
    scratch = pk.ScratchView1D[pk.double].shmem_size(m)
    policy = pk.TeamPolicy(pk.Cuda, rows, g.TEAM_SIZE).set_scratch_size(0, pk.PerTeam(scratch))
    args = (np.int64(rows), np.int64(m), A, out)

    def hand_team() -> None:
        hand["row_plus_reverse"]((rows,), (g.TEAM_SIZE,), args, shared_mem=8 * m)

    calls = {
        PK: lambda: pk.parallel_for(policy, g.row_plus_reverse, out=out, A=A, m=m),
        HAND: synced(cp, hand_team),
        CUPY: synced(cp, lambda: cp.add(A, A[:, ::-1], out=out)),
    }
    if league is not None:  # one team: the team launch's dispatch cost
        del calls[CUPY]
    return Case(f"team scratch {rows}x{m}", f"{rows} teams of {g.TEAM_SIZE} threads, a "
                f"{m}-double row each in level-0 scratch", 16 * rows * m, calls,
                lambda: out.fill(0), output=out, target=league is None)  # fmt: skip


def launch_case(cp, np, pk, g, hand, sms, quick) -> Case:
    out = cp.zeros(1)
    policy = pk.RangePolicy(pk.Cuda, 0, 1)
    stream = cp.cuda.get_current_stream()
    args = (np.int64(1), out)

    def batch(one: Callable[[], Any]) -> Callable[[], None]:
        def calls() -> None:
            for _ in range(LAUNCH_BATCH):
                one()

        return calls

    def hand_one() -> None:
        hand["noop"]((1,), (1,), args)
        stream.synchronize()

    def cupy_one() -> None:
        cp.add(out, 1.0, out=out)
        stream.synchronize()

    calls = {
        PK: batch(lambda: pk.parallel_for(policy, g.noop, out=out)),
        HAND: batch(hand_one),
        CUPY: batch(cupy_one),
    }
    return Case("cached launch, 1 element", f"out[i] += 1 over 1 index, {LAUNCH_BATCH} calls "
                "a sample", 16, calls, lambda: out.fill(0), output=out,
                per_call=LAUNCH_BATCH)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
