"""Checked release builds (``BuildMode.CHECKED``, ``PKERNELS_CHECKS=1``) side by side
with the release build and the debug build, on the three benchmark kernels.

A checked build is the release build's ``-O3`` code keeping every check of the debug
build (each view index, integer divisor, float-to-int conversion): an index out of range
raises ``KernelIndexError`` instead of writing past an array. pkdb's ``parallel_launch``
runs its clauses so. This prints each build's median time over interleaved rounds (every
build runs once per round, in a balanced order) and the checked and debug builds' times
as a ratio to the release build's, round by round, with a 90 % interval of the median
ratio. Each result is checked against NumPy's.

    python bench/bench_checked.py [--quick] [--repeats 9] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))


class _ChosenBuild:
    """A dispatch observer giving every dispatch the build in ``mode``."""

    def __init__(self) -> None:
        self.mode: Any = None

    def dispatch_started(self, dispatch: Any) -> None:
        dispatch.build = self.mode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small problems (a smoke run)")
    parser.add_argument("--repeats", type=int, default=9, help="timed rounds (default 9)")
    parser.add_argument("--threads", type=int, default=0, help="OMP_NUM_THREADS (default: all)")
    args = parser.parse_args()
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)

    from _timing import fmt_seconds, interleaved, median, paired, print_table, settle
    from _workloads import workloads

    import pkernels as pk
    from pkernels.runtime import hooks

    chosen = _ChosenBuild()
    hooks.add_observer(chosen)
    builds = {
        "release": hooks.BuildMode.RELEASE,
        "checked": hooks.BuildMode.CHECKED,
        "debug": hooks.BuildMode.DEBUG,
    }
    threads = os.environ.get("OMP_NUM_THREADS") or str(os.cpu_count())
    print(f"OpenMP, {threads} threads, {args.repeats} interleaved rounds per kernel")
    rows = []
    worst = 0.0
    for wl in workloads(args.quick):
        call = wl.pkernels(pk.OpenMP)
        variants = {}
        for name, mode in builds.items():

            def run(mode: Any = mode, call: Any = call) -> Any:
                chosen.mode = mode
                return call()

            variants[name] = run
        for name, run in variants.items():  # compiles, and checks each build's answer
            wl.poison_output()
            error = wl.error(run())
            if not error <= wl.tolerance:
                print(f"{wl.name}: the {name} build is off by {error:.3g}", file=sys.stderr)
                return 1
        settle()
        samples = interleaved(variants, args.repeats)
        release = samples["release"]
        cells = [wl.name, wl.size]
        cells += [fmt_seconds(median(samples[name])) for name in builds]
        for name in ("checked", "debug"):
            # paired() gives reference / timed; the cost of a build is its inverse
            ratio = paired(samples[name], release)
            cells.append(f"{ratio.median:.2f}x [{ratio.low:.2f}, {ratio.high:.2f}]")
        worst = max(worst, paired(samples["checked"], release).median)
        rows.append(cells)
    header = ["kernel", "size", "release", "checked", "debug (-O0)", "checked / release"]
    header.append("debug / release")
    print_table("Time per launch (median) and cost against the release build", header, rows)
    print(f"\nThe checked build's largest cost: {worst:.2f}x the release build's time.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
