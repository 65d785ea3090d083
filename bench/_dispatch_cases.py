"""The cases bench_dispatch.py times, in the process of one tree (see its docstring):
one-element kernels on the Serial space, each dispatched as the case's name says."""

import time
from collections.abc import Callable

import numpy as np

import pkernels as pk
from pkernels.runtime import hooks


@pk.workunit
def add_one(i: int, out: pk.View1D[pk.double]):
    out[i] += 1.0


@pk.workunit
def axpby(i: int, n: int, a: float, x: pk.View1D[pk.double], y: pk.View1D[pk.double]):
    if i < n:
        y[i] = a * x[i] + y[i]


@pk.workunit
def total(i: int, acc: pk.Acc[pk.double], x: pk.View1D[pk.double]):
    acc += x[i]


@pk.workunit
def largest(i: int, acc: pk.Acc[pk.double], x: pk.View1D[pk.double]):
    if x[i] > acc:
        acc = x[i]


@pk.workunit
def add_one_2d(i: int, j: int, out: pk.View2D[pk.double]):
    out[i, j] += 1.0


@pk.workunit
def team_add(team: pk.TeamMember, out: pk.View1D[pk.double]):
    out[team.league_rank()] += 1.0
    team.team_barrier()


class NoOp:
    """An observer that does nothing: the observed path's own cost."""

    def dispatch_started(self, dispatch: hooks.Dispatch) -> None:
        pass

    def before_launch(self, dispatch: hooks.Dispatch, kernel: object) -> None:
        pass

    def dispatch_finished(self, dispatch: hooks.Dispatch, result: object, error: object) -> None:
        pass


class Guarded(NoOp):
    """Runs every dispatch as GUARDED, as pkdb does a kernel with no breakpoint."""

    def dispatch_started(self, dispatch: hooks.Dispatch) -> None:
        dispatch.build = hooks.BuildMode.GUARDED


out, x, out2 = np.zeros(1), np.ones(1), np.zeros((1, 1))
rng = pk.RangePolicy(pk.Serial, 0, 1)
box = pk.MDRangePolicy(pk.Serial, [0, 0], [1, 1])
teams = pk.TeamPolicy(pk.Serial, 1, pk.AUTO)

Case = tuple[object | None, Callable[[], object]]
#: name -> (the observer registered while it runs, or None; one dispatch)
CASES: dict[str, Case] = {
    "fast": (None, lambda: pk.parallel_for(rng, add_one, out=out)),
    "fast, 2 views 2 numbers": (None, lambda: pk.parallel_for(rng, axpby, n=1, a=0.5, x=x, y=out)),
    "labelled": (None, lambda: pk.parallel_for("l", rng, add_one, out=out)),
    "observed": (NoOp(), lambda: pk.parallel_for(rng, add_one, out=out)),
    "observed, GUARDED": (Guarded(), lambda: pk.parallel_for(rng, add_one, out=out)),
    "reduce, labelled": (None, lambda: pk.parallel_reduce("l", rng, total, x=x)),
    "reduce, pk.Max": (None, lambda: pk.parallel_reduce(rng, largest, reducer=pk.Max, x=x)),
    "MDRange 2D": (None, lambda: pk.parallel_for(box, add_one_2d, out=out2)),
    "team": (None, lambda: pk.parallel_for(teams, team_add, out=out)),
}


def timed(case: Case, calls: int) -> float:
    """Seconds per dispatch of ``calls`` back-to-back dispatches of ``case``."""
    observer, dispatch = case
    if observer is not None:
        hooks.add_observer(observer)
    try:
        start = time.perf_counter()
        for _ in range(calls):
            dispatch()
        return (time.perf_counter() - start) / calls
    finally:
        if observer is not None:
            hooks.remove_observer(observer)
