"""Regenerate the paper report: the PKDB paper's evaluation measured on this checkout,
side by side in one run, as a markdown report with PNG plots.

    python bench/paper/run.py [--quick] [--gpu] [--out DIR] [--only a,b,c,d]
        [--examinimd-cpp PATH/TO/ExaMiniMD] [--examinimd-py PATH/TO/examinimd-pykokkos/standalone]

(a) debug overhead, pkdb vs pdb, across sizes and thread counts (Table V, Figure 4);
(b) pkdb on OpenMP vs pdb on the serial Debug space, examples/md.py (Figures 5-7);
(c) hotswap vs edit-and-rerun (Table VI);
(d) kernel speed vs hand-written C++, Numba and NumPy; ExaMiniMD, C++ vs pkernels;
with ``--gpu`` (the GPU machine: CuPy, cuda-gdb) the GPU rows of (a) and (b).

``--quick`` (a few minutes on 2 cores): fewer sizes, steps and rounds. Writes
``REPORT.md``, one PNG per section and ``results.json`` (the raw numbers) into ``--out``
(default bench/paper/results/). Needs matplotlib for the plots (``pip install -e
'.[bench]'``); without it the report has its tables only, and says so.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402  (sets up the paths of the modules below)
import report  # noqa: E402
from common import Machine, Section  # noqa: E402

PEER = common.ROOT.parent / "shared" / "peer"


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a few minutes on 2 cores")
    p.add_argument("--gpu", action="store_true", help="add the GPU rows (pk.Cuda, cuda-gdb)")
    p.add_argument("--out", type=Path, default=common.HERE / "results")
    p.add_argument("--only", default="a,b,c,d", help="sections to run (default a,b,c,d)")
    p.add_argument("--repeats", type=int, help="rounds of sessions (2 quick, 4 full)")
    p.add_argument("--threads", default=None,
                   help="OpenMP thread counts of (a), comma-separated (default: 1, the cores, "
                        "and twice the cores unless --quick)")  # fmt: skip
    p.add_argument("--examinimd-cpp", type=Path, help="the C++ ExaMiniMD binary (built on Kokkos)")
    p.add_argument(
        "--examinimd-py",
        type=Path,
        default=PEER / "examinimd-pykokkos" / "standalone",
        help="PyKokkos's ExaMiniMD (the folder with src/main.py and input/in.lj)",
    )
    p.add_argument("--replot", action="store_true",
                   help="only draw the figures of the results.json in --out (a run cut short "
                        "before its figures: its REPORT.md links them already)")  # fmt: skip
    p.add_argument("--examinimd-cells", type=int, default=None,
                   help="lattice cells per side of in.lj (4 atoms each; default 10 with "
                        "--quick, else in.lj's own 40)")  # fmt: skip
    options = p.parse_args(argv)
    cores = os.cpu_count() or 1
    if options.threads:
        options.thread_counts = [int(t) for t in options.threads.split(",")]
    else:
        options.thread_counts = sorted({1, cores} | (set() if options.quick else {2 * cores}))
    options.repeats = options.repeats or (2 if options.quick else 4)
    if options.examinimd_cells is None and options.quick:
        options.examinimd_cells = 10
    return options


def failed_section(key: str, title: str, error: BaseException) -> Section:
    """What the report shows for a part that raised: the error, as a MISS, so one broken
    part costs its own rows and not the whole report (a long run on a lent machine)."""
    print(f"  ({key}) FAILED: {error!r}", flush=True)
    return Section(key=key, title=title, header=["error"], rows=[[repr(error)]],
                   verdicts=[f"MISS {key} did not run to its end: {error!r}"])  # fmt: skip


def guarded(key: str, title: str, measure: Callable[[], Section]) -> Section:
    """``measure()``, or a failed section saying why it raised."""
    try:
        return measure()
    except Exception as error:  # noqa: BLE001 - any failure of one part is reported
        traceback.print_exc()
        return failed_section(key, title, error)


def with_load(measure: Callable[[], Section], key: str, title: str) -> Section:
    """``measure()``, its section noting how busy other processes kept the CPUs: on a
    small shared machine that decides how far to trust its numbers."""
    import _timing

    load = _timing.OutsideLoad()
    section = guarded(key, title, measure)
    share = load.fraction()
    if share is not None:
        section.notes.append(f"Other processes used {100 * share:.0f}% of the "
                             f"{os.cpu_count()} cores while this section ran (load average "
                             f"at its end {common.load_average()}).")  # fmt: skip
    return section


def draw_figures(sections: list[Section], machine: Machine, out: Path, skipped: list[str]) -> None:
    """Each section's PNG (a section whose figure could not be drawn loses it)."""
    try:
        import plots
    except ImportError:
        plots = None
    for section in sections:
        if section.figure is None:
            continue
        (out / section.figure).unlink(missing_ok=True)
        try:
            if plots is None:
                raise ImportError("matplotlib")
            plots.draw(section, machine, out)
        except ImportError:
            skipped.append(f"figure {section.figure} (matplotlib missing: pip install -e "
                           "'.[bench]')")  # fmt: skip
        if not (out / section.figure).exists():
            section.figure = None


def write_report(sections: list[Section], machine: Machine, out: Path, skipped: list[str],
                 unfinished: str = "") -> str:  # fmt: skip
    """REPORT.md and results.json of ``sections``; ``unfinished`` names what is still to
    run (the report is rewritten after every part, so a run cut short keeps its parts)."""
    shown = [*skipped, f"{unfinished} (still running when this was written)"] if unfinished \
        else skipped  # fmt: skip
    text = report.render(sections, machine, common.git_revision(), shown)
    (out / "REPORT.md").write_text(text)
    raw = {"machine": vars(machine), "sections": {s.key: s.data for s in sections}}
    (out / "results.json").write_text(json.dumps(raw, indent=1, default=str))
    return text


def replot(out: Path) -> int:
    """Draw the figures of ``out``/results.json (each part's raw numbers, written after
    every part) with the machine and command that measured them."""
    raw = json.loads((out / "results.json").read_text())
    machine = Machine(**raw["machine"])
    sections = [Section(key, "", [], [], figure=f"{key}.png", data=data)
                for key, data in raw["sections"].items()]  # fmt: skip
    skipped: list[str] = []
    draw_figures(sections, machine, out, skipped)
    for section in sections:
        if section.figure:
            print(f"drawn: {out / section.figure}")
    for reason in skipped:
        print(f"not drawn: {reason}")
    return 0


def main(argv: list[str]) -> int:
    options = parse_args(argv)
    if options.replot:
        return replot(options.out)
    machine = Machine.here(["bench/paper/run.py", *argv])
    options.out.mkdir(parents=True, exist_ok=True)
    cache = Path(tempfile.mkdtemp(prefix="paper-bench-"))
    cores = os.cpu_count() or 1
    only = set(options.only.split(","))
    sections: list[Section] = []
    skipped: list[str] = []
    print(f"{machine.caption()}\n", flush=True)

    def add(section: Section) -> None:
        sections.append(section)
        write_report(sections, machine, options.out, skipped, "the parts after the last one")

    # Each GPU part right after its CPU part: a run cut short keeps both of (a).
    if not options.gpu:
        skipped.append("the GPU rows of (a) and (b) (pass --gpu on the GPU machine)")
    if "a" in only:
        import overhead

        add(with_load(
            lambda: overhead.measure(options.quick, options.thread_counts, options.repeats,
                                     cache),
            "overhead", "(a) Debug overhead: pkdb vs pdb"))  # fmt: skip
        if options.gpu:
            add(guarded(
                "overhead_gpu", "(a, GPU) Debug overhead on pk.Cuda",
                lambda: overhead.measure_gpu(options.quick, options.repeats, cache)))  # fmt: skip
    if "b" in only:
        import debug_space

        debug = with_load(
            lambda: debug_space.measure(options.quick, max(1, options.repeats - 1), cache, cores),
            "debug_space", "(b) pkdb on OpenMP vs pdb on the serial Debug space")  # fmt: skip
        add(debug)
        if options.gpu and "points" in debug.data:
            gpu = guarded(
                "debug_space_gpu",
                "(b, GPU) pkdb on pk.Cuda vs pdb on the Debug space",
                lambda: debug_space.measure_gpu(options.quick, options.repeats, cache, debug),
            )
            if "points" in gpu.data:
                debug.data["gpu"] = gpu.data["points"]
            add(gpu)
    if "c" in only:
        import hotswap_rows

        add(with_load(
            lambda: hotswap_rows.measure(options.quick, 1 if options.quick else 3, cores),
            "hotswap", "(c) Hotswap vs edit-and-rerun"))  # fmt: skip
    if "d" in only:
        import speed

        add(with_load(lambda: speed.measure_kernels(options.quick, cores),
                                  "kernels", "(d) Kernel speed"))  # fmt: skip
        add(guarded(
            "examinimd", "(d) ExaMiniMD, C++ vs pkernels",
            lambda: speed.measure_examinimd(options.examinimd_cpp, options.examinimd_py,
                                            options.examinimd_cells, cache)))  # fmt: skip

    draw_figures(sections, machine, options.out, skipped)
    text = write_report(sections, machine, options.out, skipped)
    print("\n" + text)
    print(f"written: {options.out / 'REPORT.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
