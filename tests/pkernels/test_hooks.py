"""The dispatch observer API (pkernels.hooks): what observers see, and how they steer a
dispatch (workunit substitution, debug builds)."""

from __future__ import annotations

import inspect
import re
import sys

import numpy as np
import pytest
from pkt_support import observing

import pkernels as pk
from pkernels import hooks
from pkernels.runtime.hooks import BuildMode, Dispatch
from pkernels.runtime.launch import CompiledKernel


@pk.workunit
def fill(i, value, out):
    out[i] = value


@pk.workunit
def fill_twice(i, value, out):
    out[i] = 2 * value


@pk.workunit
def total(i, acc, x):
    acc += x[i]


@pk.workunit
def running(i, acc, last_pass, x, out):
    acc += x[i]
    if last_pass:
        out[i] = acc


@pk.workunit
def broken(i, out):
    out[i] = undefined_thing  # noqa: F821 - the translation error under test


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def dispatch_started(self, dispatch: Dispatch) -> None:
        self.events.append(
            ("started", dispatch, dispatch.frame.f_lineno, dispatch.frame.f_code.co_filename)
        )

    def before_launch(self, dispatch: Dispatch, kernel: CompiledKernel) -> None:
        self.events.append(("launch", dispatch, kernel))

    def dispatch_finished(self, dispatch: Dispatch, result, error) -> None:
        self.events.append(("finished", dispatch, result, error))

    def kinds(self) -> list[str]:
        return [e[0] for e in self.events]


def test_observer_sees_the_dispatch(space):
    out = np.zeros(5)
    policy = pk.RangePolicy(space, 1, 4)
    with observing(Recorder()) as rec:
        line = sys._getframe().f_lineno + 1
        pk.parallel_for("fill label", policy, fill, value=2.5, out=out)
    np.testing.assert_array_equal(out, [0, 2.5, 2.5, 2.5, 0])
    expected = (
        ["started", "launch", "finished"] if space is not pk.Debug else ["started", "finished"]
    )
    assert rec.kinds() == expected
    _, dispatch, f_lineno, filename = rec.events[0]
    assert dispatch.operation == "for"
    assert dispatch.label == "fill label"
    assert dispatch.policy is policy and dispatch.space is space
    assert dispatch.workunit is fill and dispatch.original_workunit is fill
    assert dispatch.kwargs["out"] is out  # the caller's own array, not a copy
    assert dispatch.kwargs["value"] == 2.5
    assert dispatch.build is BuildMode.RELEASE
    assert f_lineno == line
    assert filename == __file__
    finished = rec.events[-1]
    assert finished[1] is dispatch and finished[2] is None and finished[3] is None


def test_observer_sees_reduce_and_scan_results(space):
    x = np.arange(6.0)
    out = np.zeros(6)
    with observing(Recorder()) as rec:
        r = pk.parallel_reduce(pk.RangePolicy(space, 0, 6), total, x=x)
        s = pk.parallel_scan("scan", pk.RangePolicy(space, 0, 6), running, x=x, out=out)
    assert r == 15.0 and s == 15.0
    started = [e[1] for e in rec.events if e[0] == "started"]
    assert [d.operation for d in started] == ["reduce", "scan"]
    assert [d.label for d in started] == [None, "scan"]
    finished = [e for e in rec.events if e[0] == "finished"]
    assert [e[2] for e in finished] == [15.0, 15.0]


def test_int_policy_is_seen_as_a_range_policy():
    with observing(Recorder()) as rec:
        pk.parallel_for(3, fill, value=1.0, out=np.zeros(3))
    dispatch = rec.events[0][1]
    assert isinstance(dispatch.policy, pk.RangePolicy)
    assert (dispatch.policy.begin, dispatch.policy.end) == (0, 3)
    assert dispatch.space is pk.get_default_space()


def test_before_launch_gets_the_compiled_kernel(native_space):
    with observing(Recorder()) as rec:
        pk.parallel_for(pk.RangePolicy(native_space, 0, 2), fill, value=1.0, out=np.zeros(2))
    (_, _, kernel) = next(e for e in rec.events if e[0] == "launch")
    assert isinstance(kernel, CompiledKernel)
    assert kernel.library.exists() and kernel.library.suffix == ".so"
    assert kernel.source.exists()
    cpp = kernel.source.read_text()
    first = inspect.getsourcelines(fill)[1]
    body_line = first + 2  # decorator, def, body
    assert f'#line {body_line} "{__file__}"' in cpp
    # The reset lines point at the generated file itself, and are right.
    resets = re.findall(rf'#line (\d+) "{re.escape(str(kernel.source))}"', cpp)
    lines = cpp.split("\n")
    assert resets
    for k, text in enumerate(lines):
        if text.startswith("#line") and str(kernel.source) in text:
            assert int(text.split()[1]) == k + 2  # the directive names the next line
    assert kernel.filename == __file__
    assert body_line in kernel.lines
    assert kernel.operation == "for" and kernel.name == "fill"
    assert "fill" in kernel.kernel_symbol
    assert not kernel.debug


def test_substituting_the_workunit(space):
    class Swap:
        def dispatch_started(self, dispatch: Dispatch) -> None:
            if dispatch.workunit is fill:
                dispatch.workunit = fill_twice

    out = np.zeros(3)
    with observing(Recorder()) as rec, observing(Swap()):
        pk.parallel_for(pk.RangePolicy(space, 0, 3), fill, value=1.5, out=out)
    np.testing.assert_array_equal(out, [3.0, 3.0, 3.0])
    dispatch = rec.events[0][1]
    assert dispatch.original_workunit is fill
    assert dispatch.workunit is fill_twice
    if space is not pk.Debug:
        kernel = next(e[2] for e in rec.events if e[0] == "launch")
        assert kernel.name == "fill_twice"
    # Without the observer, the original runs again.
    pk.parallel_for(pk.RangePolicy(space, 0, 3), fill, value=1.5, out=out)
    np.testing.assert_array_equal(out, [1.5, 1.5, 1.5])


def test_dispatch_finished_gets_the_error():
    with observing(Recorder()) as rec:
        with pytest.raises(pk.TranslationError) as info:
            pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 2), broken, out=np.zeros(2))
    assert rec.kinds() == ["started", "finished"]
    assert rec.events[-1][3] is info.value
    assert rec.events[-1][2] is None


def test_dispatch_finished_gets_argument_errors():
    with observing(Recorder()) as rec:
        with pytest.raises(pk.DispatchError) as info:
            pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 2), fill, out=np.zeros(2))
    assert rec.events[-1][0] == "finished" and rec.events[-1][3] is info.value


def test_observers_run_in_registration_order_and_may_implement_a_subset():
    calls = []

    class OnlyStarted:
        def __init__(self, name):
            self.name = name

        def dispatch_started(self, dispatch):
            calls.append(self.name)

    a, b = OnlyStarted("a"), OnlyStarted("b")
    hooks.add_observer(a)
    hooks.add_observer(b)
    hooks.add_observer(a)  # a second registration is a no-op
    try:
        assert hooks.observers() == (a, b)
        pk.parallel_for(pk.RangePolicy(pk.Serial, 0, 1), fill, value=1.0, out=np.zeros(1))
    finally:
        hooks.remove_observer(a)
        hooks.remove_observer(b)
        hooks.remove_observer(b)  # unknown: ignored
    assert calls == ["a", "b"]
    assert hooks.observers() == ()


def test_the_frame_is_the_callers_through_helpers():
    def dispatch_from_helper(out):
        pk.parallel_for(pk.RangePolicy(pk.Serial, 0, 1), fill, value=1.0, out=out)

    with observing(Recorder()) as rec:
        dispatch_from_helper(np.zeros(1))
    frame = rec.events[0][1].frame
    assert frame.f_code is dispatch_from_helper.__code__
    assert frame.f_locals["out"] is rec.events[0][1].kwargs["out"]


def test_debug_build_requested_by_an_observer(native_space):
    class Debug:
        def dispatch_started(self, dispatch):
            dispatch.build = BuildMode.DEBUG

    with observing(Recorder()) as rec, observing(Debug()):
        pk.parallel_for(pk.RangePolicy(native_space, 0, 2), fill, value=1.0, out=np.zeros(2))
    kernel = next(e[2] for e in rec.events if e[0] == "launch")
    assert kernel.debug
