"""parallel_launch in-process: reading clauses, inferring operations, running them
concurrently on copies (or shared arrays), and the side-by-side report."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from pkdb.agent import parallel_launch as pl
from pkdb.agent.live_scope import LiveScope
from pkernels import hooks

SOURCE = """
import pkernels as pk


@pk.workunit
def fill(i, out, value):
    out[i] = value


@pk.workunit
def total(i, acc, x):
    acc += x[i]


@pk.workunit
def weighted(i, s: pk.Acc[pk.double], x):
    s += 2.0 * x[i]


@pk.workunit
def running(i, acc, last_pass, x, out):
    acc += x[i]
    if last_pass:
        out[i] = acc


@pk.workunit
def meet(i, me: int, flags, out):
    # Debug space: plain Python threads, so a clause can wait for another that shares
    # `flags` (mut:flags): it raises its flag, then spins until the other's is up (a
    # ZeroDivisionError if it never comes)
    flags[me] = 1
    spins: int = 0
    while flags[1 - me] == 0 and spins < 10000000:
        spins += 1
    out[i] = 1.0 / flags[1 - me]
"""


@pytest.fixture
def scope(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PKERNELS_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "pl_kernels.py"
    path.write_text(textwrap.dedent(SOURCE).lstrip("\n"))
    spec = importlib.util.spec_from_file_location("pl_kernels", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["pl_kernels"] = module
    spec.loader.exec_module(module)
    names = vars(module)
    names.update(n=6, x=np.arange(6, dtype=np.float64), out=np.zeros(6), flags=np.zeros(2, int))
    yield LiveScope(globals=names, main_file=str(path))
    sys.modules.pop("pl_kernels", None)


def test_clauses_and_words() -> None:
    assert pl.split_clauses("a n x=f(1; 2) ; b n s=';' ;; c") == ["a n x=f(1; 2)", "b n s=';'", "c"]
    assert pl.tokens("k pk.RangePolicy(0, n) x = a[1:3] y=b * 2 z=w if c else v") == [
        "k", "pk.RangePolicy(0, n)", "x=a[1:3]", "y=b * 2", "z=w if c else v"
    ]  # fmt: skip
    assert pl.tokens("k n // 2 mut:out=o mut:x") == ["k", "n // 2", "mut:out=o", "mut:x"]
    clause = pl.parse_clause(1, "reduce total pk.Serial n x=x mut:y")
    assert (clause.operation, clause.kernel, clause.space, clause.policy) == (
        "reduce", "total", "pk.Serial", "n"
    )  # fmt: skip
    assert [(a.name, a.expr, a.mut) for a in clause.arguments] == [
        ("x", "x", False), ("y", "y", True)
    ]  # fmt: skip
    clause = pl.parse_clause(2, "mod.fill pk.RangePolicy(1, n) out=o value=a == b")
    assert (clause.kernel, clause.space, clause.policy) == (
        "mod.fill",
        None,
        "pk.RangePolicy(1, n)",
    )
    assert clause.arguments[1].expr == "a == b"
    for text, message in {
        "fill": "needs a kernel and a policy",
        "fill pk.Serial n 2 out=o": "too many words",
        "fill n out=o stray": "'stray' after the arguments",
        "fill n out=o out=p": "out given twice",
    }.items():
        with pytest.raises(pl.LaunchSyntaxError, match=message):
            pl.parse_clause(1, text)


def test_operation_inferred_from_the_kernel(scope: LiveScope) -> None:
    mod = sys.modules["pl_kernels"]
    assert pl.infer_operation(mod.fill) == "for"
    assert pl.infer_operation(mod.total) == "reduce"
    assert pl.infer_operation(mod.weighted) == "reduce"
    assert pl.infer_operation(mod.running) == "scan"


def test_results_side_by_side_and_isolation(scope: LiveScope) -> None:
    x, out = scope.globals["x"], scope.globals["out"]
    ok, text = pl.run_command(
        "fill pk.Serial n out=out value=1.5 ; fill pk.OpenMP n out=out value=2.0 ; "
        "total pk.Debug n x=x ; weighted n x=x ; running pk.Serial n x=x out=out",
        scope,
    )
    assert ok, text
    lines = text.splitlines()
    assert lines[1].split() == ["operation", "for", "Serial", "0..6", "for", "OpenMP", "0..6",
                                "reduce", "Debug", "0..6", "reduce", "OpenMP", "0..6",
                                "scan", "Serial", "0..6"]  # fmt: skip
    returned = next(line for line in lines if line.startswith("returned")).split()
    assert returned == ["returned", "None", "None", "15.0", "30.0", "15.0"]
    sums = next(line for line in lines if line.startswith("  sum")).split()
    assert sums == ["sum", "9.0", "12.0", "-", "-", "35.0"]
    diffs = next(line for line in lines if line.startswith("  max|diff|")).split()
    assert diffs == ["max|diff|", "vs", "[1]", "(reference)", "0.5", "-", "-", "13.5"]
    assert "5 of 5 clauses launched concurrently" in text and "none failed." in text
    np.testing.assert_array_equal(out, 0.0)  # the program's arrays: untouched
    np.testing.assert_array_equal(x, np.arange(6))


def test_mut_shares_and_copies_are_taken_before_any_clause_runs(scope: LiveScope) -> None:
    ok, text = pl.run_command("fill pk.Serial n mut:out=x value=7.0 ; total pk.Serial n x=x", scope)
    assert ok, text
    np.testing.assert_array_equal(scope.globals["x"], 7.0)  # the program's x, written
    returned = next(line for line in text.splitlines() if line.startswith("returned"))
    assert returned.split() == ["returned", "None", "15.0"]  # the copy of x, taken first
    assert "shared (mut:)" in text


def test_clauses_run_at_the_same_time_and_failures_stay_in_their_column(scope: LiveScope) -> None:
    seen: list[tuple[bool, str]] = []

    class Spy:
        def dispatch_started(self, dispatch) -> None:
            seen.append((pl.in_clause(), threading.current_thread().name))

    hooks.add_observer(Spy())
    try:
        # each `meet` waits for the other's flag: they finish only if concurrent
        ok, text = pl.run_command(
            "meet pk.Debug 1 me=0 mut:flags out=out ; meet pk.Debug 1 me=1 mut:flags out=out ; "
            "fill n out=missing value=1 ; fill n out=out",
            scope,
        )
    finally:
        for observer in hooks.observers():
            if isinstance(observer, Spy):
                hooks.remove_observer(observer)
    assert ok, text
    status = next(line for line in text.splitlines() if line.startswith("status")).split()
    assert status == ["status", "ok", "ok", "FAILED", "FAILED"], text
    assert "[3] fill failed: NameError: name 'missing' is not defined" in text
    assert "[4] fill failed: DispatchError: parallel_for of fill: missing value" in text
    assert all(inside for inside, _ in seen) and len(seen) == 3
    assert {name for _, name in seen} == {
        "pkdb-parallel-launch-1", "pkdb-parallel-launch-2", "pkdb-parallel-launch-4"
    }  # fmt: skip


def test_keepalive_while_clauses_run(scope: LiveScope, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pl.running, "KEEPALIVE_SECONDS", 0.0)  # where launch() reads it
    calls: list[int] = []
    flags = scope.globals["flags"]
    release = threading.Timer(0.6, flags.__setitem__, (1, 1))
    release.start()  # the other party's flag comes late: the launch lasts ~0.6 s
    ok, text = pl.run_command(
        "meet pk.Debug 1 me=0 mut:flags out=out", scope, keepalive=lambda: calls.append(1)
    )
    release.join()
    assert ok and "ok" in text
    assert calls, "no keepalive while the clause ran"
