"""``parallel_launch`` (the PKDB paper's concurrent kernel launch), measured side by side.

Two clauses on the Serial space (one core each) -- the buggy and the fixed Lennard-Jones
force kernels of ``examples/md.py`` on the same atoms -- run by ``parallel_launch``, vs
the same two dispatches one after the other. Target: <= 0.6x the sequential time on two
cores. Measured twice:

* in the agent (in-process): the whole command (read the clauses, evaluate names, copy
  the arrays, run the clauses in threads, summarise and compare the results), and the
  launch alone (threads started to threads joined), vs two ``pk.parallel_for`` calls on
  copies of the same arrays;
* end to end in a pkdb session (stdin/stdout pipes), stopped in md.py: the
  ``parallel_launch`` command vs a ``p`` of the two dispatches one after the other;
  there the clauses run checked release builds (pkdb's default), and so do the two
  dispatches (``PKERNELS_CHECKS=1``).

The paper's second configuration, an OpenMP clause with a Cuda clause (target <= 1.1x
the longer one alone): the buggy force kernel on OpenMP and the fixed one on the GPU,
launched together and each alone. Without CuPy and a GPU it is reported as skipped,
not estimated.

    python bench/bench_parallel_launch.py [--cells 10] [--repeats 9]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import OutsideLoad, fmt_seconds, interleaved, print_table  # noqa: E402

MD = ROOT / "examples" / "md.py"
ARGS = "n=n box=box rc2=rc2 x=x f=f"
TWO_SERIAL = f"compute_forces pk.Serial n {ARGS} ; compute_forces_fixed pk.Serial n {ARGS}"
_SERIAL_CALL = (
    "pk.parallel_for(pk.RangePolicy(pk.Serial, 0, n), {}, n=n, box=box, rc2=rc2, x=x, f=f.copy())"
)
# (a tuple, not a comprehension: pdb evaluates comprehensions without the frame's locals)
SEQUENTIAL = "p ({}, {})".format(
    _SERIAL_CALL.format("compute_forces"), _SERIAL_CALL.format("compute_forces_fixed")
)


def load_md():
    spec = importlib.util.spec_from_file_location("md_bench", MD)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def in_process(cells: int, repeats: int) -> dict[str, list[float]]:
    import numpy as np

    import pkernels as pk
    from pkdb.agent import parallel_launch as pl
    from pkdb.agent.live_scope import LiveScope

    md = load_md()
    x, box = md.fcc_lattice(cells, density=0.8442)
    x += np.random.default_rng(1).normal(0.0, 0.05, x.shape)
    n = len(x)
    names = dict(vars(md), n=n, box=box, rc2=6.25, x=x, f=np.zeros((n, 3)))
    scope = LiveScope(globals=names)
    serial = pk.RangePolicy(pk.Serial, 0, n)

    def sequential() -> None:
        for kernel in (md.compute_forces, md.compute_forces_fixed):
            out = names["f"].copy()
            pk.parallel_for(serial, kernel, n=n, box=box, rc2=6.25, x=x.copy(), f=out)

    def command() -> None:
        ok, text = pl.run_command(TWO_SERIAL, scope)
        assert ok and "none failed." in text, text

    launch_walls: list[float] = []

    def launch_only() -> None:
        clauses = [pl.prepare(c, scope) for c in pl.parse_command(TWO_SERIAL)]
        launch_walls.append(pl.launch(clauses))
        assert all(c.ok for c in clauses), [c.error for c in clauses]

    samples = interleaved(
        {"sequential": sequential, "parallel_launch": command, "launch": launch_only},
        repeats,
    )
    samples["launch"] = launch_walls[-repeats:]  # threads started to joined
    ok, report = pl.run_command(TWO_SERIAL, scope)
    print(report)
    return samples


def in_session(cells: int, repeats: int, env: dict[str, str]) -> dict[str, list[float]]:
    """The two variants typed in a pkdb session stopped inside md.py's time-step loop."""
    workdir = Path(tempfile.mkdtemp(prefix="pkdb-pl-bench-"))
    shutil.copy(MD, workdir / "md.py")
    lines = MD.read_text().splitlines()
    loop = next(k for k, text in enumerate(lines) if "for step in range" in text)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pkdb", "md.py", str(cells), "2"], cwd=workdir, env=env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0,
    )  # fmt: skip
    buffer = b""

    def command(line: str | None) -> str:
        nonlocal buffer
        if line is not None:
            proc.stdin.write(line.encode() + b"\n")
        while b"(pkdb) " not in buffer:
            data = os.read(proc.stdout.fileno(), 65536)
            if not data:
                raise EOFError(buffer.decode(errors="replace"))
            buffer += data
        cut = buffer.index(b"(pkdb) ") + 7
        text, buffer = buffer[:cut].decode(errors="replace"), buffer[cut:]
        return text

    samples: dict[str, list[float]] = {"sequential (p ...)": [], "parallel_launch": []}
    try:
        command(None)  # the first prompt
        command(f"break {loop + 3}, step == 1")  # the force dispatch in the loop
        assert "md.py(" in command("continue")
        for _ in range(repeats + 1):
            variants = (
                ("sequential (p ...)", SEQUENTIAL),
                ("parallel_launch", f"parallel_launch {TWO_SERIAL}"),
            )
            for name, line in variants:
                start = time.perf_counter()
                text = command(line)
                samples[name].append(time.perf_counter() - start)
                assert "Error" not in text and "***" not in text, text
        proc.stdin.write(b"quit\n")
        proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)
    return {name: values[1:] for name, values in samples.items()}  # first round: warm-up


def gpu_available() -> str | None:
    """None when the Cuda space can run here, else why not."""
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no GPU"
    except Exception as exc:  # noqa: BLE001 - any failure means: no Cuda here
        return f"no GPU ({type(exc).__name__})"
    return None


def cuda_rows(cells: int, repeats: int) -> tuple[list[list[str]], float | None]:
    """An OpenMP clause with a Cuda clause, vs each alone: the launch (threads started to
    joined) of ``parallel_launch`` with both clauses, and with each clause by itself.
    Returns the table rows and (both) / (the longer one alone)."""
    why = gpu_available()
    if why is not None:
        return [["OpenMP + Cuda clauses", f"skipped: {why}", "", ""]], None
    import numpy as np

    from pkdb.agent import parallel_launch as pl
    from pkdb.agent.live_scope import LiveScope

    md = load_md()
    x, box = md.fcc_lattice(cells, density=0.8442)
    x += np.random.default_rng(1).normal(0.0, 0.05, x.shape)
    n = len(x)
    scope = LiveScope(globals=dict(vars(md), n=n, box=box, rc2=6.25, x=x, f=np.zeros((n, 3))))
    omp = f"compute_forces pk.OpenMP n {ARGS}"
    gpu = f"compute_forces_fixed pk.Cuda n {ARGS}"
    commands = {
        "OpenMP clause alone": omp,
        "Cuda clause alone": gpu,
        "both clauses": f"{omp} ; {gpu}",
    }
    walls: dict[str, list[float]] = {name: [] for name in commands}

    def launcher(name: str):
        def run() -> None:
            clauses = [pl.prepare(c, scope) for c in pl.parse_command(commands[name])]
            walls[name].append(pl.launch(clauses))
            assert all(c.ok for c in clauses), [c.error for c in clauses]

        return run

    interleaved({name: launcher(name) for name in commands}, repeats)
    ok, report = pl.run_command(commands["both clauses"], scope)
    print(report)
    medians = {name: statistics.median(values[-repeats:]) for name, values in walls.items()}
    longer = max(medians["OpenMP clause alone"], medians["Cuda clause alone"])
    rows = [
        [f"OpenMP + Cuda: {name}", fmt_seconds(medians[name]), fmt_seconds(min(walls[name])),
         f"{medians[name] / longer:.2f}x the longer alone"]
        for name in commands
    ]  # fmt: skip
    return rows, medians["both clauses"] / longer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=10, help="4*cells**3 atoms (default 10)")
    parser.add_argument("--repeats", type=int, default=9)
    options = parser.parse_args()
    cache = tempfile.mkdtemp(prefix="pkdb-pl-cache-")
    os.environ["PKERNELS_CACHE_DIR"] = cache
    env = dict(os.environ, TERM="dumb")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"examples/md.py forces, {4 * options.cells**3} atoms, two Serial clauses; {cores} cores")

    load = OutsideLoad()
    agent = in_process(options.cells, options.repeats)
    # In a session the clauses run checked release builds (pkdb's parallel_launch_checks,
    # on by default); PKERNELS_CHECKS=1 gives the sequential dispatches the same builds.
    session = in_session(options.cells, options.repeats, dict(env, PKERNELS_CHECKS="1"))
    outside = load.fraction()
    seq = statistics.median(agent["sequential"])
    rows = []
    for label, values, base in (
        ("agent, release builds: two dispatches one after the other", agent["sequential"], seq),
        ("agent, release builds: parallel_launch command", agent["parallel_launch"], seq),
        ("agent, release builds: parallel_launch, threads only", agent["launch"], seq),
        ("session, checked builds: p of the two dispatches", session["sequential (p ...)"], None),
        ("session, checked builds: parallel_launch command", session["parallel_launch"], None),
    ):
        median = statistics.median(values)
        ref = base if base is not None else statistics.median(session["sequential (p ...)"])
        rows.append([label, fmt_seconds(median), fmt_seconds(min(values)), f"{median / ref:.2f}x"])
    gpu_rows, gpu_ratio = cuda_rows(options.cells, options.repeats)
    print_table(
        f"parallel_launch vs sequential (median of {options.repeats})",
        ["variant", "median", "best", "vs sequential"],
        rows,
    )
    print_table(
        f"parallel_launch of an OpenMP and a Cuda clause (launch only, median of "
        f"{options.repeats})",
        ["variant", "median", "best", "vs the longer clause alone"],
        gpu_rows,
    )
    ratio = statistics.median(agent["parallel_launch"]) / seq
    session_ratio = statistics.median(session["parallel_launch"]) / statistics.median(
        session["sequential (p ...)"]
    )
    verdict = "PASS" if ratio <= 0.6 else "MISS"
    print(
        f"\ntarget: two Serial clauses <= 0.6x sequential on two cores: {ratio:.2f}x in the "
        f"agent, {session_ratio:.2f}x in a session: {verdict}"
        + ("" if (cores or 1) >= 2 else " (fewer than two cores: not meaningful)")
        + (
            "; OpenMP + Cuda <= 1.1x the longer: skipped (no GPU)"
            if gpu_ratio is None
            else f"; OpenMP + Cuda <= 1.1x the longer alone: {gpu_ratio:.2f}x "
            + ("PASS" if gpu_ratio <= 1.1 else "MISS")
        )
    )
    if outside is not None:
        print(
            f"other processes kept {outside:.0%} of the CPUs busy meanwhile"
            + (": with two cores, the concurrent runs had less than two" if outside > 0.1 else "")
        )
    shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
