"""How pkdb keeps the host debugger's tracing out of a dispatch (pkdb.agent.dispatch_tracing):
the parked thread that keeps Python 3.12+'s trace instrumentation where the dispatch hooks
switch the program's tracing off and on (pkernels' C boundary not built)."""

from __future__ import annotations

import threading
import time

from pkdb.agent import dispatch_tracing


def _keepers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "pkdb-trace-keeper"]


def _wait_until(condition, seconds: float = 5.0) -> bool:
    end = time.monotonic() + seconds
    while not condition() and time.monotonic() < end:
        time.sleep(0.01)
    return condition()


def test_the_keeper_lives_while_the_program_traces_and_only_then(monkeypatch):
    monkeypatch.setattr(dispatch_tracing, "_REINSTRUMENTS", True)
    monkeypatch.setattr(dispatch_tracing, "_keeper", None)
    dispatch_tracing._keep_instrumented(True)
    dispatch_tracing._keep_instrumented(True)  # one keeper, however many dispatches
    assert _wait_until(lambda: len(_keepers()) == 1)
    dispatch_tracing._keep_instrumented(False)  # the program no longer traces: let it go
    assert _wait_until(lambda: not _keepers())
    assert dispatch_tracing._keeper is None


def test_nothing_is_kept_where_switching_tracing_is_cheap(monkeypatch):
    monkeypatch.setattr(dispatch_tracing, "_REINSTRUMENTS", False)
    monkeypatch.setattr(dispatch_tracing, "_keeper", None)
    dispatch_tracing._keep_instrumented(True)
    assert dispatch_tracing._keeper is None and not _keepers()
