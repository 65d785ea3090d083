"""Would 512-bit vectors pay, kernel by kernel, and does the run-time choice find out?

Each kernel of ``_width_kernels.py`` is compiled three times in one process: with
pkernels' release flags running its plain (256-bit) loops, with
``-mprefer-vector-width=512`` added (the whole build), and as released, where a
parallel_for that stores into views inside its loops times its plain loops against their
512-bit twin at the first launches and keeps the faster (runtime/width_tuning.py). The
builds are timed in interleaved rounds on the same arrays; the table gives the paired
ratios per round (above 1: faster than the 256-bit build) and the width the released
build chose (``-``: it has one only). With ``--aligned`` every array is copied to a
64-byte boundary first (NumPy's own large arrays start 16 bytes past one, so a 64-byte
store there writes two cache lines).

    python bench/bench_vector_width.py [--repeats 100] [--threads 2] [--aligned] [--only NAME]

g++ applies the flag only where AVX-512 exists; elsewhere the builds are the same.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _aligned_copy(array):
    import numpy as np

    buffer = np.empty(array.nbytes + 64, np.uint8)
    start = -buffer.ctypes.data % 64
    copy = buffer[start : start + array.nbytes].view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy


def _twin(workunit):
    """A second workunit with the same code, so it is translated and built anew."""
    import pkernels as pk

    plain = getattr(workunit, "__wrapped__", workunit)
    copy = types.FunctionType(plain.__code__, plain.__globals__, plain.__name__)
    return pk.workunit(copy)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--aligned", action="store_true", help="arrays on 64-byte boundaries")
    parser.add_argument("--only", help="run the cases whose name contains this text")
    options = parser.parse_args()
    if options.threads:
        os.environ["OMP_NUM_THREADS"] = str(options.threads)

    import numpy as np
    from _timing import fmt_seconds, interleaved, median, paired, print_table
    from _width_kernels import CASES

    import pkernels as pk
    from pkernels.build import toolchain

    release = toolchain.RELEASE_FLAGS
    wide = ("-mprefer-vector-width=512",)
    rows = []
    for name, (workunit, operation, make, what) in CASES.items():
        if options.only and options.only not in name:
            continue
        args = make()
        if options.aligned:
            args = {key: _aligned_copy(value) for key, value in args.items()}
        extent = next(iter(args.values())).shape[0]
        dispatch = pk.parallel_for if operation == "for" else pk.parallel_reduce
        builds = {}
        results = {}
        units = {}
        for label, flags, width in (("256", release, "256"), ("512", release + wide, "256"),
                                    ("auto", release, "auto")):  # fmt: skip
            unit = units[label] = _twin(workunit)
            # Both read when the build is made and loaded, at its first dispatch.
            toolchain.RELEASE_FLAGS = flags
            os.environ["PKERNELS_VECTOR_WIDTH"] = width
            try:
                results[label] = dispatch(pk.RangePolicy(pk.OpenMP, 0, extent), unit, **args)
            finally:
                toolchain.RELEASE_FLAGS = release
                os.environ.pop("PKERNELS_VECTOR_WIDTH")
            builds[label] = functools.partial(
                dispatch, pk.RangePolicy(pk.OpenMP, 0, extent), unit, **args
            )
        if operation == "reduce" and not np.isclose(results["256"], results["512"], rtol=1e-12):
            raise SystemExit(f"{name}: the two builds disagree: {results}")
        samples = interleaved(builds, options.repeats)
        to_512 = paired(samples["256"], samples["512"])
        to_auto = paired(samples["256"], samples["auto"])
        (auto_build,) = units["auto"].__pkernels__.specializations.values()
        rows.append([
            name, what, fmt_seconds(median(samples["256"])), fmt_seconds(median(samples["512"])),
            f"{to_512.median:.3f} [{to_512.low:.3f}, {to_512.high:.3f}]",
            auto_build.vector_width or "-", f"{to_auto.median:.3f}",
        ])  # fmt: skip
    alignment = "64-byte aligned" if options.aligned else "as NumPy allocates them"
    print_table(
        f"256-bit vs 512-bit builds ({os.environ.get('OMP_NUM_THREADS', 'all')} threads, "
        f"{options.repeats} rounds, arrays {alignment})",
        ["kernel", "what", "256-bit", "512-bit", "256/512 paired [90%]", "chose", "256/auto"],
        rows,
    )
    print("256/512 paired: median per round of time(256-bit) / time(512-bit); > 1: 512 faster")
    print("chose: the width the released build kept after timing both; 256/auto: its time")
    print("against the 256-bit build's, the timing launches included")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
