"""@pk.function helpers taking views: element reads and writes, len(), extent(), atomics,
annotated (``pk.View1D[...]``) or typed from the call; what a helper writes counts as
written by the kernel. Checked against plain Python on every space, in release and
debug builds."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from pkt_support import ForceDebugBuild, observing, run_python

import pkernels as pk
from pkernels.runtime.marshal import argument_type
from pkernels.translate.kernel import translate_workunit


@pk.function
def window_sum(v: pk.View1D[pk.double], i: int, w: int) -> float:
    s: float = 0.0
    for k in range(w):
        s += v[(i + k) % len(v)]
    return s


@pk.function
def row_dot(m, x, r: int) -> float:  # unannotated: typed from the call
    s = 0.0
    for c in range(m.extent(1)):
        s += m[r, c] * x[c]
    return s


@pk.function
def put(out: pk.View1D[pk.double], i: int, value: float):
    out[i] = value


@pk.function
def count_into(hist: pk.View1D[pk.int64], bucket: int):
    pk.atomic_add(hist, [bucket], 1)


@pk.function
def scale_row(m: pk.View2D[pk.double], r: int, f: float):
    for c in range(m.shape[1]):
        m[r, c] = m[r, c] * f


@pk.function
def first_then_rest(m, r: int, n: int):
    """Recursive: the store comes after the call."""
    if n > 0:
        first_then_rest(m, r, n - 1)
        m[r, n - 1] = r * 10 + n


@pk.function
def ping(m, r: int, n: int):
    """Writes m, after calling pong (which reaches ping again)."""
    if n > 0:
        pong(m, r, n - 1)
        m[r, 0] = m[r, 0] + 1


@pk.function
def pong(m, r: int, n: int):
    """Writes nothing itself: only through ping, which it is lowered inside of."""
    if n > 0:
        ping(m, r, n - 1)


@pk.function
def nested_read(v, i: int) -> float:
    return window_sum(v, i, 2) * 0.5


@pk.workunit
def k_read(i, x, m, y, out):
    out[i] = window_sum(x, i, 3) + row_dot(m, y, i) + nested_read(x, i)


@pk.workunit
def k_write(i, x, out):
    put(out, i, x[i] * 2.0 + len(x))


@pk.workunit
def k_hist(i, x, hist):
    count_into(hist, int(x[i] * 4))


@pk.workunit
def k_scale(i, m, f):
    scale_row(m, i, f)


@pk.workunit
def k_recursive(i, out):
    first_then_rest(out, i, out.extent(1))


@pk.workunit
def k_ping_pong(i, u, w):
    ping(u, i, 3)
    pong(w, i, 4)


@pk.workunit
def k_loop_store_and_helper(i, a, b):
    """Stores in a loop of its own (the release build's no-alias check applies) and, through
    a helper, into `b` as well."""
    for c in range(a.extent(1)):
        a[i, c] = a[i, c] + 1.0
    scale_row(b, i, 3.0)


@pk.workunit
def k_reduce(i, acc, x):
    acc += window_sum(x, i, 4)


@pk.function
def stage_into(s, inp, row: int, i: int):
    s[i] = inp[row, i]


@pk.function
def read_back(s: pk.View1D[pk.double], i: int) -> float:
    return s[i]


@pk.function
def store_2d(out: pk.View2D[pk.double], r: int, c: int, v: float):
    out[r, c] = v


@pk.workunit
def k_team_reverse(team_member: pk.TeamMember, out, inp, m: int):
    """Helpers given a team's scratch view and the kernel's views."""
    row: int = team_member.league_rank()
    s: pk.ScratchView1D[pk.double] = pk.ScratchView1D(team_member.team_scratch(0), m)

    def stage(i: int):
        stage_into(s, inp, row, i)

    pk.parallel_for(pk.TeamThreadRange(team_member, m), stage)
    team_member.team_barrier()

    def write(i: int):
        store_2d(out, row, i, read_back(s, m - 1 - i))

    pk.parallel_for(pk.TeamThreadRange(team_member, m), write)


@pytest.fixture(params=["release", "debug"])
def build(request):
    """Release builds, or debug builds (-O0 -g, bounds checks) forced by an observer."""
    observer = (
        observing(ForceDebugBuild()) if request.param == "debug" else contextlib.nullcontext()
    )
    with observer:
        yield request.param


def _range(space, n):
    return pk.RangePolicy(space, 0, n)


def test_helpers_read_views(space, build) -> None:
    rng = np.random.default_rng(1)
    x, m, y = rng.random(9), rng.random((9, 5)), rng.random(5)
    out = np.zeros(9)
    pk.parallel_for(_range(space, 9), k_read, x=x, m=m, y=y, out=out)
    expected = run_python(k_read, 9, x=x, m=m, y=y, out=np.zeros(9))["out"]
    np.testing.assert_array_equal(out, expected)


def test_helpers_read_strided_views(space, build) -> None:
    rng = np.random.default_rng(2)
    base = rng.random((5, 9))
    x, m, y = base[1], base[:, ::2].T, base[0, ::2]  # m, y and x[::-1]: strided
    assert not m.flags.c_contiguous
    out = np.zeros(len(x))
    pk.parallel_for(_range(space, 5), k_read, x=x[::-1], m=m, y=y, out=out)
    expected = run_python(k_read, 5, x=x[::-1], m=m, y=y, out=np.zeros(len(x)))["out"]
    np.testing.assert_array_equal(out, expected)


def test_helper_writes_a_view(space, build) -> None:
    x = np.arange(7, dtype=np.float64)
    out = np.zeros(7)
    pk.parallel_for(_range(space, 7), k_write, x=x, out=out)
    np.testing.assert_array_equal(out, x * 2.0 + 7)


def test_helper_atomics(space, build) -> None:
    x = np.random.default_rng(3).random(1000)
    hist = np.zeros(4, dtype=np.int64)
    pk.parallel_for(_range(space, 1000), k_hist, x=x, hist=hist)
    np.testing.assert_array_equal(hist, np.bincount((x * 4).astype(np.int64), minlength=4))


def test_helper_writes_in_a_loop(space, build) -> None:
    m = np.random.default_rng(4).random((6, 3))
    expected = m * 2.5
    pk.parallel_for(_range(space, 6), k_scale, m=m, f=2.5)
    np.testing.assert_array_equal(m, expected)


def test_recursive_and_mutually_recursive_helpers_write(space, build) -> None:
    out = np.zeros((4, 5))
    pk.parallel_for(_range(space, 4), k_recursive, out=out)
    expected = run_python(k_recursive, 4, out=np.zeros((4, 5)))["out"]
    np.testing.assert_array_equal(out, expected)
    u, w = np.zeros((3, 2)), np.zeros((3, 2))
    pk.parallel_for(_range(space, 3), k_ping_pong, u=u, w=w)
    ref = run_python(k_ping_pong, 3, u=np.zeros((3, 2)), w=np.zeros((3, 2)))
    np.testing.assert_array_equal(u, ref["u"])
    np.testing.assert_array_equal(w, ref["w"])
    assert w[:, 0].tolist() == [2.0, 2.0, 2.0]


def test_helper_in_a_reduce(space, build) -> None:
    x = np.arange(10, dtype=np.float64)
    total = pk.parallel_reduce(_range(space, 10), k_reduce, x=x)
    assert total == sum(sum(x[(i + k) % 10] for k in range(4)) for i in range(10))


@pytest.mark.parametrize("space, team", [(pk.OpenMP, 3), (pk.Serial, 1), (pk.Debug, 2)])
def test_helpers_in_a_team_kernel_with_scratch_views(space, team, build) -> None:
    league, m = 5, 7
    inp = np.random.default_rng(8).random((league, m))
    out = np.zeros_like(inp)
    scratch = pk.PerTeam(pk.ScratchView1D[pk.double].shmem_size(m))
    policy = pk.TeamPolicy(space, league, team).set_scratch_size(0, scratch)
    pk.parallel_for(policy, k_team_reverse, out=out, inp=inp, m=m)
    np.testing.assert_array_equal(out, inp[:, ::-1])


def test_aliased_views_with_a_helper_writing_one(space, build) -> None:
    """`b` is `a` itself: the kernel's loop stores into `a`, the helper into `b`."""
    a = np.ones((4, 3))
    pk.parallel_for(_range(space, 4), k_loop_store_and_helper, a=a, b=a)
    np.testing.assert_array_equal(a, np.full((4, 3), 6.0))


def _types(**arrays):
    return {name: argument_type(name, value) for name, value in arrays.items()}


def test_views_written_by_helpers_count_as_written_by_the_kernel() -> None:
    x = np.zeros(4)
    m = np.zeros((4, 3))
    entry = translate_workunit(k_write, "for", _types(x=x, out=x))
    assert entry.written_views == {"out"}
    entry = translate_workunit(k_read, "for", _types(x=x, m=m, y=x, out=x))
    assert entry.written_views == {"out"}
    # pong writes only through ping, which was still being lowered when pong was.
    entry = translate_workunit(k_ping_pong, "for", _types(u=m, w=m))
    assert entry.written_views == {"u", "w"}
    # The release build's overlap check covers the view the helper writes.
    entry = translate_workunit(k_loop_store_and_helper, "for", _types(a=m, b=m))
    assert entry.written_views == {"a", "b"}
    assert "pk_rt::overlap(pk_rt::span(a), pk_rt::span(b))" in entry.source
    # A helper's atomics share elements among indices: no restrict-qualified variant.
    entry = translate_workunit(k_hist, "for", _types(x=x, hist=np.zeros(4, dtype=np.int64)))
    assert "view_arg<true>" not in entry.source


def test_helpers_take_views_as_template_parameters_in_release_builds() -> None:
    entry = translate_workunit(k_write, "for", _types(x=np.zeros(4), out=np.zeros(4)))
    assert "PK_HELPER_TEMPLATE(typename PK_V0) static inline void pk_fn_put_(" in entry.source
    assert "PK_HELPER_VIEW(PK_V0, double, 1, 1) out" in entry.source


def test_read_only_array_written_by_a_helper_is_refused(native_space) -> None:
    x = np.arange(4.0)
    out = np.zeros(4)
    out.flags.writeable = False
    with pytest.raises(pk.DispatchError, match="out: the kernel writes to this array"):
        pk.parallel_for(_range(native_space, 4), k_write, x=x, out=out)


def test_helper_out_of_range_index_in_a_debug_build(native_space) -> None:
    x = np.arange(3.0)
    out = np.zeros(2)  # put(out, 2, ...) is out of range
    with observing(ForceDebugBuild()), pytest.raises(pk.KernelIndexError, match="'out'"):
        pk.parallel_for(_range(native_space, 3), k_write, x=x, out=out)


# ------------------------------------------------------------------ errors

BAD = """\
import pkernels as pk


@pk.function
def takes_2d(m: pk.View2D[pk.double], i: int) -> float:
    return m[i, 0]


@pk.function
def takes_float(v: float) -> float:
    return v


@pk.function
def takes_view(v: pk.View1D[pk.double]) -> float:
    return v[0]


@pk.function
def adds_view(v) -> float:
    return v + 1.0


@pk.workunit
def rank_mismatch(i, x, out):
    out[i] = takes_2d(x, i)


@pk.workunit
def view_for_float(i, x, out):
    out[i] = takes_float(x)


@pk.workunit
def float_for_view(i, x, out):
    out[i] = takes_view(x[i])


@pk.workunit
def view_arithmetic(i, x, out):
    out[i] = adds_view(x)
"""

CASES = [
    # kernel, text on the offending line, text the caret points at, message
    # Arguments that do not fit: at the call's argument, naming the helper's def line.
    ("rank_mismatch", "takes_2d(x, i)", "x, i)", "annotated View2D[float64] but the call "
     "passes a View1D[float64] (takes_2d is defined on line 5)"),
    ("view_for_float", "takes_float(x)", "x)", "'v' is annotated float64 but the call "
     "passes a view (takes_float is defined on line 10)"),
    ("float_for_view", "takes_view(x[i])", "x[i])", "'v' is annotated as a view but the "
     "call passes a float64 (takes_view is defined on line 15)"),
    ("view_arithmetic", "return v + 1.0", "v + 1.0", "view 'v' must be indexed here"),
]  # fmt: skip


@pytest.mark.parametrize("kernel, line_text, caret_text, message", CASES, ids=[c[0] for c in CASES])
def test_errors(make_module, kernel, line_text, caret_text, message) -> None:
    module = make_module(BAD)
    with pytest.raises(pk.TranslationError) as info:
        pk.parallel_for(
            _range(pk.OpenMP, 2), getattr(module, kernel), x=np.zeros(2), out=np.zeros(2)
        )
    err = info.value
    lines = BAD.splitlines()
    lineno = next(k for k, line in enumerate(lines, 1) if line_text in line)
    col = lines[lineno - 1].index(caret_text)
    assert message in err.reason
    assert (err.filename, err.lineno, err.col) == (module.__file__, lineno, col)
    text = str(err)
    assert text.startswith(f"{module.__file__}:{lineno}:{col + 1}: ")
    assert "\n    " + " " * col + "^" in text
