"""The parked thread that keeps Python 3.12+'s trace instrumentation while pkdb's
dispatch hooks switch the program's tracing off and on (pkdb.agent.trace_keeper)."""

from __future__ import annotations

import threading
import time

from pkdb.agent import trace_keeper


def _keepers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "pkdb-trace-keeper"]


def _wait_until(condition, seconds: float = 5.0) -> bool:
    end = time.monotonic() + seconds
    while not condition() and time.monotonic() < end:
        time.sleep(0.01)
    return condition()


def test_the_keeper_lives_while_the_program_traces_and_only_then(monkeypatch):
    monkeypatch.setattr(trace_keeper, "NEEDED", True)
    monkeypatch.setattr(trace_keeper, "_keeper", None)
    trace_keeper.keep_instrumented(True)
    trace_keeper.keep_instrumented(True)  # one keeper, however many dispatches
    assert _wait_until(lambda: len(_keepers()) == 1)
    trace_keeper.keep_instrumented(False)  # the program no longer traces: let it go
    assert _wait_until(lambda: not _keepers())
    assert trace_keeper._keeper is None


def test_nothing_is_kept_where_switching_tracing_is_cheap(monkeypatch):
    monkeypatch.setattr(trace_keeper, "NEEDED", False)
    monkeypatch.setattr(trace_keeper, "_keeper", None)
    trace_keeper.keep_instrumented(True)
    assert trace_keeper._keeper is None and not _keepers()
