"""BuildMode.HYBRID: the debug build's behaviour at the release build's speed.

A range parallel_for launch proven unable to fail a check runs release code, which hands
its remaining indices to the debug build once the dispatch asks for the debug code; any
other launch runs the debug build, checks and all."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from heat_kernels import diffuse, laplacian_2d, total
from pkt_support import ForceDebugBuild, observing

import pkernels as pk
from pkernels.runtime import hooks
from pkernels.runtime.hooks import BuildMode


def numpy_diffuse(u: np.ndarray, alpha: float) -> np.ndarray:
    out = u.copy()
    lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]
    out[1:-1, 1:-1] = u[1:-1, 1:-1] + alpha * lap
    return out


class Hybrid:
    """Asks for HYBRID builds; records what before_launch saw; may ask for the debug
    code right away (``to_debug``), as pkdb does on Ctrl-C."""

    def __init__(self, to_debug: bool = False, debug_indices: np.ndarray | None = None) -> None:
        self.to_debug = to_debug
        self.debug_indices = debug_indices
        self.seen: list[tuple[bool, object]] = []  # (kernel.debug, dispatch.fast_build)

    def dispatch_started(self, dispatch: hooks.Dispatch) -> None:
        dispatch.build = BuildMode.HYBRID
        dispatch.debug_indices = self.debug_indices

    def before_launch(self, dispatch: hooks.Dispatch, kernel: object) -> None:
        self.seen.append((kernel.debug, dispatch.fast_build))
        if self.to_debug:
            dispatch.request_debug_code()


def heat_arrays(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(n)
    u = rng.random((n, n))
    return u, u.copy()


@pytest.mark.parametrize("space", [pk.OpenMP, pk.Serial], ids=lambda s: s.name)
@pytest.mark.parametrize("to_debug", [False, True], ids=["release code", "handed to debug"])
def test_a_proven_launch_gives_the_same_bits_in_either_code(space, to_debug) -> None:
    n = 67  # blocks of 16 indices and a partial one
    u, u_new = heat_arrays(n)
    with observing(Hybrid(to_debug)) as observer:
        pk.parallel_for(pk.RangePolicy(space, 1, n - 1), diffuse, n=n, alpha=0.1, u=u, u_new=u_new)
    [(kernel_is_debug, fast)] = observer.seen
    assert kernel_is_debug  # observers see the debug build: where a debugger stops
    assert fast is not None and not fast.debug  # the release code runs first
    np.testing.assert_array_equal(u_new, numpy_diffuse(u, 0.1))


def test_release_code_hands_every_remaining_index_to_the_debug_code() -> None:
    """Call the hybrid launcher itself with a Python function as the debug build's
    one-index entry: once asked, it gets each index exactly once; before, none."""
    n = 50
    u, u_new = heat_arrays(n)
    with observing(Hybrid()) as observer:
        pk.parallel_for(
            pk.RangePolicy(pk.OpenMP, 1, n - 1), diffuse, n=n, alpha=0.1, u=u, u_new=u_new
        )
    fast = observer.seen[0][1]
    args = fast._plan.marshal({"n": n, "alpha": 0.1, "u": u, "u_new": u_new})
    argtypes = [ctypes.c_int64, *fast._hybrid.argtypes[7:]]
    seen: list[int] = []
    entry = ctypes.CFUNCTYPE(None, *argtypes)(lambda i, *rest: seen.append(i))
    for request in (0, 1):
        seen.clear()
        flag = ctypes.c_int(request)
        fast._hybrid(ctypes.addressof(flag), ctypes.cast(entry, ctypes.c_void_p), None, False,
                     3, n - 1, None, *args)  # fmt: skip
        assert sorted(seen) == (list(range(3, n - 1)) if request else [])
    # A mask picks the indices that start in the debug code; the request still takes all.
    mask = np.zeros(n - 4, dtype=np.uint8)
    mask[[0, 15, 16, 40]] = 1  # indices 3, 18, 19, 43: block edges and a lone one
    for request, expected in ((0, [3, 18, 19, 43]), (1, list(range(3, n - 1)))):
        seen.clear()
        flag = ctypes.c_int(request)
        fast._hybrid(ctypes.addressof(flag), ctypes.cast(entry, ctypes.c_void_p),
                     mask.ctypes.data, True, 3, n - 1, None, *args)  # fmt: skip
        assert sorted(seen) == expected


def test_a_launch_that_could_fail_a_check_runs_the_debug_build() -> None:
    n = 40
    u, u_new = heat_arrays(n)
    with observing(Hybrid()) as observer, pytest.raises(pk.KernelIndexError, match="extent 40"):
        # n says 41: index 40 of a 40-wide array; the debug build stops it
        pk.parallel_for(
            pk.RangePolicy(pk.OpenMP, 1, n - 1), diffuse, n=n + 1, alpha=0.1, u=u, u_new=u_new
        )
    assert observer.seen == [(True, None)]


@pk.workunit
def truncate(i, x, out):
    out[i] = int(x[i])


def test_a_launch_converting_floats_to_integers_runs_the_debug_build() -> None:
    # Every index in range, but int(NaN) fails the debug build's check: release code
    # would store any number instead.
    x, out = np.array([1.5, np.nan, 2.5]), np.zeros(3, np.int64)
    with observing(Hybrid()) as observer, pytest.raises(pk.KernelValueError, match="NaN"):
        pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 3), truncate, x=x, out=out)
    assert observer.seen == [(True, None)]


@pytest.mark.parametrize("to_debug", [False, True], ids=["release code", "handed to debug"])
def test_a_reduce_gives_its_debug_builds_total(to_debug) -> None:
    n = 45
    u, _ = heat_arrays(n)
    policy = pk.RangePolicy(pk.OpenMP, 0, n)
    with observing(ForceDebugBuild()):
        expected = pk.parallel_reduce(policy, total, n=n, u=u)
    with observing(Hybrid(to_debug)) as observer:
        result = pk.parallel_reduce(policy, total, n=n, u=u)
    assert observer.seen[0][1] is not None  # proven: release code first
    # Each thread's partial sum is the same in either build; OpenMP adds the partials in
    # the order the threads finish (with more than two threads, the last bit may differ).
    assert result == pytest.approx(expected, rel=1e-14)
    assert result == pytest.approx(u.sum())


@pk.workunit
def prefix(i, acc, last_pass, x, out):
    acc += x[i]
    if last_pass:
        out[i] = acc


def test_a_scan_runs_the_debug_build() -> None:
    x = np.arange(20.0)
    out = np.zeros(20)
    with observing(Hybrid()) as observer:
        result = pk.parallel_scan(pk.RangePolicy(pk.OpenMP, 0, 20), prefix, x=x, out=out)
    assert observer.seen == [(True, None)]
    assert result == x.sum()
    np.testing.assert_array_equal(out, np.cumsum(x))


def test_a_later_launch_starts_in_release_code_again() -> None:
    n = 35
    u, u_new = heat_arrays(n)
    policy = pk.RangePolicy(pk.OpenMP, 1, n - 1)
    with observing(Hybrid(to_debug=True)) as first:
        pk.parallel_for(policy, diffuse, n=n, alpha=0.1, u=u, u_new=u_new)
    with observing(Hybrid()) as second:
        pk.parallel_for(policy, diffuse, n=n, alpha=0.1, u=u_new, u_new=u)
    assert first.seen[0][1] is not None and second.seen[0][1] is not None
    np.testing.assert_array_equal(u, numpy_diffuse(u_new, 0.1))


def numpy_laplacian(u: np.ndarray) -> np.ndarray:
    out = np.zeros_like(u)
    out[1:-1, 1:-1] = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]
    return out


@pytest.mark.parametrize("space", [pk.OpenMP, pk.Serial], ids=lambda s: s.name)
@pytest.mark.parametrize("to_debug", [False, True], ids=["release code", "handed to debug"])
def test_an_mdrange_box_runs_release_code_when_proven(space, to_debug) -> None:
    n = 37
    u, _ = heat_arrays(n)
    out = np.zeros_like(u)
    box = pk.MDRangePolicy(space, [1, 1], [n - 1, n - 1])
    with observing(Hybrid(to_debug)) as observer:
        pk.parallel_for(box, laplacian_2d, u=u, out=out)
    [(kernel_is_debug, fast)] = observer.seen
    assert kernel_is_debug and fast is not None
    np.testing.assert_array_equal(out, numpy_laplacian(u))


def test_an_mdrange_box_hands_every_remaining_index_to_the_debug_code() -> None:
    n = 9
    u, _ = heat_arrays(n)
    out = np.zeros_like(u)
    with observing(Hybrid()) as observer:
        pk.parallel_for(
            pk.MDRangePolicy(pk.OpenMP, [1, 1], [n - 1, n - 1]), laplacian_2d, u=u, out=out
        )
    fast = observer.seen[0][1]
    args = fast._plan.marshal({"u": u, "out": out})
    argtypes = [ctypes.c_int64, ctypes.c_int64, *fast._hybrid.argtypes[7:]]
    seen: list[tuple[int, int]] = []
    entry = ctypes.CFUNCTYPE(None, *argtypes)(lambda i, j, *rest: seen.append((i, j)))
    begins, ends = (ctypes.c_int64 * 2)(2, 1), (ctypes.c_int64 * 2)(n - 1, n - 2)
    flag = ctypes.c_int(1)
    fast._hybrid(ctypes.addressof(flag), ctypes.cast(entry, ctypes.c_void_p), None, False,
                 begins, ends, None, *args)  # fmt: skip
    assert sorted(seen) == [(i, j) for i in range(2, n - 1) for j in range(1, n - 2)]


def test_an_mdrange_box_that_could_fail_a_check_runs_the_debug_build() -> None:
    n = 10
    u, _ = heat_arrays(n)
    out = np.zeros_like(u)
    with observing(Hybrid()) as observer, pytest.raises(pk.KernelIndexError, match="extent 10"):
        pk.parallel_for(pk.MDRangePolicy(pk.OpenMP, [1, 1], [n, n - 1]), laplacian_2d, u=u, out=out)
    assert observer.seen == [(True, None)]


@pytest.mark.parametrize("space", [pk.OpenMP, pk.Serial], ids=lambda s: s.name)
def test_debug_indices_give_the_same_results(space) -> None:
    n = 67
    u, u_new = heat_arrays(n)
    mask = np.arange(1, n - 1) % 7 == 3
    with observing(Hybrid(debug_indices=mask)) as observer:
        pk.parallel_for(pk.RangePolicy(space, 1, n - 1), diffuse, n=n, alpha=0.1, u=u, u_new=u_new)
    assert observer.seen[0][1] is not None  # proven: release code for the other indices
    np.testing.assert_array_equal(u_new, numpy_diffuse(u, 0.1))
    policy = pk.RangePolicy(space, 0, n)
    with observing(Hybrid(debug_indices=np.arange(n) % 5 == 0)):
        result = pk.parallel_reduce(policy, total, n=n, u=u)
    assert result == pytest.approx(u.sum(), rel=1e-14)


def test_debug_indices_of_the_wrong_length_are_refused() -> None:
    n = 20
    u, u_new = heat_arrays(n)
    with observing(Hybrid(debug_indices=np.ones(n, dtype=bool))):
        with pytest.raises(pk.DispatchError, match=r"one entry per index of a range \(18\)"):
            pk.parallel_for(
                pk.RangePolicy(pk.OpenMP, 1, n - 1), diffuse, n=n, alpha=0.1, u=u, u_new=u_new
            )


def test_an_mdrange_box_given_debug_indices_runs_the_debug_build() -> None:
    n = 9
    u, _ = heat_arrays(n)
    out = np.zeros_like(u)
    with observing(Hybrid(debug_indices=np.ones(1, dtype=bool))) as observer:
        pk.parallel_for(
            pk.MDRangePolicy(pk.OpenMP, [1, 1], [n - 1, n - 1]), laplacian_2d, u=u, out=out
        )
    assert observer.seen == [(True, None)]


class CheckFirst(Hybrid):
    """HYBRID with ``check_first``, as pkdb asks under --debug-all-kernels."""

    def dispatch_started(self, dispatch: hooks.Dispatch) -> None:
        super().dispatch_started(dispatch)
        dispatch.check_first = True


@pk.workunit
def scatter(i, out, where, x):
    out[where[i]] = out[where[i]] + x[i]


def scatter_arrays(bad: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    where = np.random.default_rng(3).permutation(64)
    if bad:
        where[50] = 64  # one past the end: only the index read from data shows it
    return np.arange(64.0), where, np.linspace(1.0, 2.0, 64)


@pytest.mark.parametrize("space", [pk.OpenMP, pk.Serial], ids=lambda s: s.name)
def test_check_first_runs_an_unproven_launch_in_the_checked_build_only(space) -> None:
    out, where, x = scatter_arrays(bad=False)
    want = out.copy()
    want[where] += x
    with observing(CheckFirst()) as observer:
        pk.parallel_for(pk.RangePolicy(space, 0, 64), scatter, out=out, where=where, x=x)
    assert observer.seen == [(False, None)]  # the checked build; no debug build ran
    np.testing.assert_array_equal(out, want)


def test_a_failed_check_runs_the_launch_again_in_the_debug_build_from_the_same_inputs() -> None:
    out, where, x = scatter_arrays(bad=True)
    with observing(CheckFirst()) as observer, pytest.raises(pk.KernelIndexError, match="extent 64"):
        pk.parallel_for(pk.RangePolicy(pk.Serial, 0, 64), scatter, out=out, where=where, x=x)
    assert observer.seen == [(False, None), (True, None)]  # checked, then debug (announced)
    # Every other index added its x once (the debug build goes on past a failed check):
    # the checked run's additions were put back before the debug build ran.
    once = np.arange(64.0)
    good = np.arange(64) != 50
    once[where[good]] += x[good]
    np.testing.assert_array_equal(out, once)


@pk.function
def countdown(n: int) -> int:
    if n <= 0:
        return 0
    return countdown(n - 1) + 1


@pk.workunit
def count_each(i, out, where):
    out[where[i]] = countdown(i)


@pk.workunit
def say_each(i, out, where):
    print(i)
    out[where[i]] = i


@pytest.mark.parametrize("kernel", [count_each, say_each], ids=["recursive helper", "prints"])
def test_kernels_whose_checked_run_could_differ_run_the_debug_build_at_once(kernel) -> None:
    out, where = np.zeros(8, np.int64), np.arange(8)
    with observing(CheckFirst()) as observer:
        pk.parallel_for(pk.RangePolicy(pk.Serial, 0, 8), kernel, out=out, where=where)
    assert observer.seen == [(True, None)]
    np.testing.assert_array_equal(out, np.arange(8))
