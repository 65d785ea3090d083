"""Cached load time, measured in a new process: ``bench_kernels.py`` runs this script
with ``PKERNELS_CACHE_DIR`` pointing at the cache its own run filled, so every kernel
is found on disk. For each kernel it times the first dispatch on tiny arrays of the
same dtypes and ranks (same specialisation, same cache key): translation, cache look-up,
``dlopen`` and a launch over a handful of elements; then a second dispatch (in-memory
memo) for comparison. Prints one JSON object on stdout.
"""

from __future__ import annotations

import json
import time

start = time.perf_counter()
import _workloads as w  # noqa: E402

import pkernels as pk  # noqa: E402
from pkernels.api.decorators import marker_of  # noqa: E402

import_seconds = time.perf_counter() - start


def main() -> None:
    out: dict[str, object] = {"import_seconds": import_seconds}
    for wl in w.tiny_workloads():
        call = wl.pkernels(pk.OpenMP)
        t0 = time.perf_counter()
        call()
        t1 = time.perf_counter()
        call()
        t2 = time.perf_counter()
        marker = marker_of(wl.workunit)
        compiled = any(k.module.compile_seconds > 0 for k in marker.specializations.values())
        out[wl.name] = {"first": t1 - t0, "again": t2 - t1, "compiled": compiled}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
