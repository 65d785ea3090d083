"""A long session stays flat: the MI front end keeps no record nobody reads.

Each kernel stop brings gdb's ``*running``/``*stopped`` and thread records; the session
kept up to 10,000 of them parsed (+19 KB a stop over a 1,500-stop session) for a reader
no pkdb code has.
"""

from __future__ import annotations

import gc
import time
import tracemalloc

from pkdb.targets import GdbController

STOPS = 300  # measured after the first WARMUP
WARMUP = 100  # (and the 64 stream lines kept for a reader: filled by then)


def _stop_and_go(gdb: GdbController, debuggee, count: int) -> None:
    """``count`` breakpoint stops, each thread resumed at once; a new launch when one
    ends. (Resumed this fast, gdb sometimes lets a thread pass the breakpoint unreported:
    the launch then ends before its 32 stops.)"""
    done = 0
    deadline = time.monotonic() + 120
    while done < count:
        assert time.monotonic() < deadline, f"{done} stops in 120 s"
        event = gdb.wait_for_stop(0.2)
        if event is not None:
            assert event.reason == "breakpoint-hit", event
            gdb.continue_([event.thread_id])
            done += 1
        elif not debuggee.silent(0.05):
            debuggee.expect("result")
            debuggee.send("yax")


def test_memory_is_flat_over_many_stops(attached, debuggee):
    gdb = attached
    gdb.insert_breakpoint("yax.py", 9)  # acc += ...: once per index
    debuggee.send("yax")
    _stop_and_go(gdb, debuggee, WARMUP)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        _stop_and_go(gdb, debuggee, STOPS)
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    growth = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    per_stop = growth / STOPS
    top = "\n".join(map(str, after.compare_to(before, "lineno")[:5]))
    assert per_stop < 500, f"{per_stop:.0f} bytes kept per stop; grew most:\n{top}"
