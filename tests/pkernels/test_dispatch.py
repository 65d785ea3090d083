"""The dispatch forms: parallel_for / parallel_reduce / parallel_scan, labels, policies,
default space, totals, empty ranges, and the errors of a bad call."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from pkt_support import ALL_SPACES

import pkernels as pk


@pk.workunit
def axpy(i, a, x, y):
    y[i] = a * x[i] + y[i]


@pk.workunit
def square_into(i, x, out):
    out[i] = x[i] * x[i]


@pk.workunit
def sum_of(i, acc, x):
    acc += x[i]


@pk.workunit
def count_positive(i, acc: pk.Acc[pk.int64], x):
    if x[i] > 0:
        acc += 1


@pk.workunit
def inclusive_scan(i, acc, last_pass, x, out):
    acc += x[i]
    if last_pass:
        out[i] = acc


@pk.workunit
def exclusive_scan(i, acc, last_pass, x, out):
    if last_pass:
        out[i] = acc
    acc += x[i]


@pk.workunit
def int_exclusive_scan(i, acc: pk.Acc[pk.int64], last_pass, x, out):
    if last_pass:
        out[i] = acc
    acc += x[i]


@pk.workunit
def mark(i, out):
    out[i] = i + 1


@pk.workunit
def atomic_count(i, hits):
    pk.atomic_add(hits, [0], 1.0)


def test_parallel_for_without_label(space):
    x = np.arange(10, dtype=np.float64)
    y = np.ones(10)
    result = pk.parallel_for(pk.RangePolicy(space, 0, 10), axpy, a=2.0, x=x, y=y)
    assert result is None
    np.testing.assert_array_equal(y, 2.0 * np.arange(10) + 1.0)


def test_parallel_for_with_label(space):
    x = np.linspace(-1, 1, 7)
    out = np.zeros(7)
    pk.parallel_for("squares", pk.RangePolicy(space, 0, 7), square_into, x=x, out=out)
    np.testing.assert_array_equal(out, x * x)


def test_parallel_reduce_returns_the_total(space):
    x = np.arange(1000, dtype=np.float64)
    total = pk.parallel_reduce(pk.RangePolicy(space, 0, 1000), sum_of, x=x)
    assert total == pytest.approx(x.sum())
    labelled = pk.parallel_reduce("sum", pk.RangePolicy(space, 0, 1000), sum_of, x=x)
    assert labelled == pytest.approx(x.sum())
    assert isinstance(total, float)


def test_reduce_over_a_sub_range(space):
    x = np.arange(100, dtype=np.float64)
    assert pk.parallel_reduce(pk.RangePolicy(space, 10, 20), sum_of, x=x) == sum(range(10, 20))


def test_int_accumulator_gives_an_int(space):
    x = np.array([1.0, -2.0, 3.0, 0.0, 5.0, -1.0, 7.0])
    count = pk.parallel_reduce(pk.RangePolicy(space, 0, len(x)), count_positive, x=x)
    assert count == 4
    assert type(count) is int


def test_inclusive_scan(space):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 10, 1001).astype(np.float64)
    out = np.zeros_like(x)
    total = pk.parallel_scan(pk.RangePolicy(space, 0, len(x)), inclusive_scan, x=x, out=out)
    np.testing.assert_array_equal(out, np.cumsum(x))
    assert total == x.sum()


def test_exclusive_scan(space):
    rng = np.random.default_rng(2)
    x = rng.integers(0, 10, 777).astype(np.float64)
    out = np.full_like(x, -1.0)
    total = pk.parallel_scan("excl", pk.RangePolicy(space, 0, len(x)), exclusive_scan, x=x, out=out)
    expected = np.concatenate([[0.0], np.cumsum(x)[:-1]])
    np.testing.assert_array_equal(out, expected)
    assert total == x.sum()


def test_int_scan_gives_an_int_total(space):
    x = np.arange(1, 51, dtype=np.int64)
    out = np.zeros_like(x)
    total = pk.parallel_scan(pk.RangePolicy(space, 0, 50), int_exclusive_scan, x=x, out=out)
    assert total == 50 * 51 // 2
    assert type(total) is int
    np.testing.assert_array_equal(out, np.concatenate([[0], np.cumsum(x)[:-1]]))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 17])
def test_scan_of_short_ranges(native_space, n):
    # Fewer iterations than, or not a multiple of, the number of threads.
    x = np.arange(1, n + 1, dtype=np.float64)
    out = np.zeros(n)
    total = pk.parallel_scan(pk.RangePolicy(native_space, 0, n), inclusive_scan, x=x, out=out)
    np.testing.assert_array_equal(out, np.cumsum(x))
    assert total == x.sum()


def test_scan_over_a_sub_range(space):
    x = np.arange(20, dtype=np.float64)
    out = np.zeros(20)
    total = pk.parallel_scan(pk.RangePolicy(space, 5, 15), inclusive_scan, x=x, out=out)
    assert total == sum(range(5, 15))
    np.testing.assert_array_equal(out[5:15], np.cumsum(x[5:15]))
    assert not out[:5].any() and not out[15:].any()


@pytest.mark.parametrize("begin, end", [(0, 0), (5, 5), (7, 3)])
def test_empty_ranges(space, begin, end):
    x = np.ones(10)
    out = np.zeros(10)
    pk.parallel_for(pk.RangePolicy(space, begin, end), mark, out=out)
    assert not out.any()
    assert pk.parallel_reduce(pk.RangePolicy(space, begin, end), sum_of, x=x) == 0
    assert pk.parallel_reduce(pk.RangePolicy(space, begin, end), count_positive, x=x) == 0
    assert pk.parallel_scan(pk.RangePolicy(space, begin, end), inclusive_scan, x=x, out=out) == 0
    assert not out.any()


def test_int_policy_runs_zero_to_n_on_the_default_space(space):
    pk.set_default_space(space)
    assert pk.get_default_space() is space
    out = np.zeros(6)
    pk.parallel_for(4, mark, out=out)
    np.testing.assert_array_equal(out, [1, 2, 3, 4, 0, 0])
    out[:] = 0
    pk.parallel_for("labelled", 3, mark, out=out)
    np.testing.assert_array_equal(out, [1, 2, 3, 0, 0, 0])
    assert pk.parallel_reduce(6, sum_of, x=np.arange(6.0)) == 15.0
    assert pk.parallel_reduce("r", 6, sum_of, x=np.arange(6.0)) == 15.0
    scanned = np.zeros(6)
    assert pk.parallel_scan(6, inclusive_scan, x=np.ones(6), out=scanned) == 6.0
    np.testing.assert_array_equal(scanned, np.arange(1.0, 7.0))
    assert pk.parallel_scan("s", 0, inclusive_scan, x=np.ones(6), out=scanned) == 0.0


def test_range_policy_without_space_uses_the_default(space):
    pk.set_default_space(space)
    policy = pk.RangePolicy(2, 5)
    assert policy.space is space
    assert (policy.begin, policy.end) == (2, 5)
    out = np.zeros(6)
    pk.parallel_for(policy, mark, out=out)
    np.testing.assert_array_equal(out, [0, 0, 3, 4, 5, 0])


def test_default_space_is_openmp_and_observable():
    assert pk.get_default_space() is pk.OpenMP
    assert pk.RangePolicy(0, 3).space is pk.OpenMP
    assert pk.RangePolicy(pk.Default, 0, 3).space is pk.OpenMP
    assert pk.ExecutionSpace.Default is pk.Default


def test_debug_default_space_really_runs_python():
    # With Debug as the default the kernel body runs as Python: a Python-level spy sees it.
    pk.set_default_space(pk.Debug)
    seen = []
    out = np.zeros(3)

    class Spy(np.ndarray):
        def __setitem__(self, key, value):
            seen.append(key)
            super().__setitem__(key, value)

    pk.parallel_for(3, mark, out=out.view(Spy))
    assert sorted(seen) == [0, 1, 2]
    np.testing.assert_array_equal(out, [1, 2, 3])


def test_set_default_space_rejects_non_spaces():
    with pytest.raises(ValueError):
        pk.set_default_space(pk.Default)
    with pytest.raises(ValueError):
        pk.set_default_space("OpenMP")  # type: ignore[arg-type]


def test_range_policy_rejects_bad_bounds():
    with pytest.raises(TypeError):
        pk.RangePolicy(0.0, 5)
    with pytest.raises(TypeError):
        pk.RangePolicy(pk.OpenMP, 5)
    assert pk.RangePolicy(np.int32(1), np.int64(4)).end == 4


def test_policy_with_numpy_integers(space):
    out = np.zeros(4)
    pk.parallel_for(pk.RangePolicy(space, np.int64(0), np.int32(4)), mark, out=out)
    np.testing.assert_array_equal(out, [1, 2, 3, 4])


# ------------------------------------------------------------------ dispatch errors


@pytest.mark.parametrize("space", ALL_SPACES, ids=lambda s: s.name)
def test_missing_keyword_argument(space):
    with pytest.raises(pk.DispatchError, match=r"missing y"):
        pk.parallel_for(pk.RangePolicy(space, 0, 3), axpy, a=1.0, x=np.zeros(3))


@pytest.mark.parametrize("space", ALL_SPACES, ids=lambda s: s.name)
def test_extra_keyword_argument(space):
    with pytest.raises(pk.DispatchError, match=r"unexpected z"):
        pk.parallel_for(pk.RangePolicy(space, 0, 3), axpy, a=1.0, x=np.zeros(3), y=np.zeros(3), z=1)


@pk.workunit
def with_default(i, out, scale=2.0):
    out[i] = scale


@pk.workunit
def keyword_only(i, out, *, scale):
    out[i] = scale


@pk.workunit
def any_keywords(i, out, **extra):
    out[i] = 1.0


@pk.workunit
def any_values(i, *values):
    pass


@pk.workunit
def positional_only(i, /, out):
    out[i] = 1.0


class WithDefault:
    @pk.workunit
    def fill(self, i, scale=1.5):
        self.out[i] = scale


@pytest.mark.parametrize("space", ALL_SPACES, ids=lambda s: s.name)
@pytest.mark.parametrize(
    "kernel, kwargs, message",
    [
        (
            with_default,
            {},
            r"parameters with a default value \(scale=2\.0\) are not supported; "
            r".* write `def with_default\(i, out, scale\)` and pass scale=2\.0 to parallel_for$",
        ),
        # Passing the value too: still refused (the Debug space would have run it).
        (with_default, {"scale": 3.0}, r"write `def with_default\(i, out, scale\)` and pass"),
        (
            keyword_only,
            {"scale": 3.0},
            r"the `\*` marker before scale is not supported; .* "
            r"write `def keyword_only\(i, out, scale\)`$",
        ),
        (
            any_keywords,
            {},
            r"\*\*extra takes any keyword argument; .* write "
            r"`def any_keywords\(i, out\)`, naming each value the kernel uses$",
        ),
        (any_values, {}, r"\*values takes any number of values"),
        (
            positional_only,
            {},
            r"the `/` marker is not supported; .*`def positional_only\(i, "
            r"out\)`$",
        ),
    ],  # fmt: skip
    ids=["default", "default-passed", "keyword-only", "kwargs", "args", "positional-only"],
)
def test_parameters_that_are_not_plain_names_say_what_to_write(space, kernel, kwargs, message):
    out = np.zeros(3)
    with pytest.raises(pk.DispatchError, match=message) as info:
        pk.parallel_for(pk.RangePolicy(space, 0, 3), kernel, out=out, **kwargs)
    assert info.value.args[0].startswith(f"parallel_for of {kernel.__name__}: ")
    assert not out.any()


@pytest.mark.parametrize("space", ALL_SPACES, ids=lambda s: s.name)
def test_a_functor_method_with_a_default_says_what_to_write(space):
    functor = pk.functor(WithDefault)()
    functor.out = np.zeros(2)
    with pytest.raises(pk.DispatchError, match=r"write `def fill\(i, scale\)` and pass scale=1\.5"):
        pk.parallel_for(pk.RangePolicy(space, 0, 2), functor.fill)


def test_a_compiled_kernel_checks_its_arguments_as_at_the_first_dispatch(native_space):
    # Once a kernel is compiled, dispatches take a shorter path; a call that does not
    # fit must still fail with the full path's message, not run.
    policy = pk.RangePolicy(native_space, 0, 3)
    y = np.zeros(3)
    pk.parallel_for(policy, axpy, a=2.0, x=np.ones(3), y=y)
    np.testing.assert_array_equal(y, [2.0, 2.0, 2.0])
    with pytest.raises(pk.DispatchError, match=r"missing y"):
        pk.parallel_for(policy, axpy, a=1.0, x=np.zeros(3))
    with pytest.raises(pk.DispatchError, match=r"unexpected z"):
        pk.parallel_for(policy, axpy, a=1.0, x=np.zeros(3), y=y, z=1)
    with pytest.raises(pk.DispatchError, match=r"y.*read-only"):
        pk.parallel_for(policy, axpy, a=1.0, x=np.zeros(3), y=np.broadcast_to(np.zeros(1), (3,)))
    np.testing.assert_array_equal(y, [2.0, 2.0, 2.0])


def test_dispatch_error_is_a_type_error():
    assert issubclass(pk.DispatchError, TypeError)
    assert issubclass(pk.DispatchError, pk.PkernelsError)


@pytest.mark.parametrize(
    "bad",
    [[1.0, 2.0, 3.0], "abc", np.zeros(3, dtype=np.float16), np.zeros((1,) * 9), None],
    ids=["list", "str", "float16", "rank9", "None"],
)
def test_unsupported_argument_types(native_space, bad):
    with pytest.raises(pk.DispatchError, match="x"):
        pk.parallel_for(pk.RangePolicy(native_space, 0, 3), square_into, x=bad, out=np.zeros(3))


def test_not_a_workunit(space):
    def plain(i, out):
        out[i] = 1

    with pytest.raises(pk.DispatchError, match="workunit"):
        pk.parallel_for(pk.RangePolicy(space, 0, 3), plain, out=np.zeros(3))


def test_wrong_number_of_positional_arguments():
    with pytest.raises(pk.DispatchError):
        pk.parallel_for(3, mark)  # type: ignore[call-arg]
    with pytest.raises(pk.DispatchError):
        pk.parallel_for("label", 3, mark, np.zeros(3))


@pytest.mark.parametrize("policy", [3.0, "3", None])
def test_bad_policy_is_a_dispatch_error(policy):
    with pytest.raises(pk.DispatchError, match="policy"):
        pk.parallel_for(policy, mark, out=np.zeros(3))


def test_cuda_space_is_reported_unavailable():
    with pytest.raises(pk.DispatchError, match="Cuda"):
        pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 3), mark, out=np.zeros(3))


def test_reduce_and_scan_workunits_need_their_parameters(native_space):
    # A for-style workunit dispatched as a reduce lacks the accumulator.
    with pytest.raises(pk.DispatchError, match="unexpected out"):
        pk.parallel_reduce(pk.RangePolicy(native_space, 0, 3), mark, out=np.zeros(3))


def test_read_only_arrays_that_the_kernel_writes_are_refused(native_space):
    frozen = np.frombuffer(bytes(8 * 4), dtype=np.float64)  # memory of an immutable bytes
    with pytest.raises(pk.DispatchError, match="out.*read-only"):
        pk.parallel_for(pk.RangePolicy(native_space, 0, 4), mark, out=frozen)
    assert not frozen.any()
    broadcast = np.broadcast_to(np.zeros(1), (4,))
    with pytest.raises(pk.DispatchError, match="read-only"):
        pk.parallel_for(pk.RangePolicy(native_space, 0, 4), mark, out=broadcast)
    # Atomics write too.
    with pytest.raises(pk.DispatchError, match="read-only"):
        pk.parallel_for(pk.RangePolicy(native_space, 0, 4), atomic_count, hits=broadcast)


def test_read_only_arrays_that_the_kernel_only_reads_are_fine(space):
    x = np.broadcast_to(np.array([2.0]), (5,))  # read-only, stride 0
    out = np.zeros(5)
    pk.parallel_for(pk.RangePolicy(space, 0, 5), square_into, x=x, out=out)
    np.testing.assert_array_equal(out, np.full(5, 4.0))


def test_the_debug_space_refuses_read_only_writes_as_numpy_does():
    with pytest.raises(ValueError, match="read-only"):
        pk.parallel_for(pk.RangePolicy(pk.Debug, 0, 2), mark, out=np.broadcast_to(0.0, (2,)))


def test_arrays_kernels_cannot_address(native_space):
    records = np.zeros(4, dtype=[("a", np.float64), ("b", np.int32)])
    with pytest.raises(pk.DispatchError, match="strides"):
        pk.parallel_for(pk.RangePolicy(native_space, 0, 4), mark, out=records["a"])
    swapped = np.zeros(4, dtype=">f8")
    with pytest.raises(pk.DispatchError, match="out"):
        pk.parallel_for(pk.RangePolicy(native_space, 0, 4), mark, out=swapped)


@pk.workunit
def store_scalar(i, n, out):
    out[i] = n


@pk.workunit
def store_int32(i, n: pk.int32, out):
    out[i] = n


@pytest.mark.parametrize("value", [2**63, 2**70, -(2**63) - 1])
def test_python_ints_beyond_int64_are_refused(native_space, value):
    out = np.zeros(2)
    pk.parallel_for(pk.RangePolicy(native_space, 0, 2), store_scalar, n=2**62, out=out)
    assert out[0] == 2.0**62
    with pytest.raises(pk.DispatchError, match=f"n: {value} does not fit in int64"):
        pk.parallel_for(pk.RangePolicy(native_space, 0, 2), store_scalar, n=value, out=out)


def test_ints_beyond_an_annotated_width_are_refused(native_space):
    out = np.zeros(2)
    pk.parallel_for(pk.RangePolicy(native_space, 0, 2), store_int32, n=-(2**31), out=out)
    assert out.tolist() == [-(2.0**31)] * 2
    with pytest.raises(pk.DispatchError, match="does not fit in int32"):
        pk.parallel_for(pk.RangePolicy(native_space, 0, 2), store_int32, n=2**31, out=out)


def test_yax_example_runs(capsys):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "yax.py"
    spec = importlib.util.spec_from_file_location("yax_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.run(16, 40)
    rng = np.random.default_rng(0)
    y, x, a = rng.random(16), rng.random(40), rng.random((16, 40))
    assert result == pytest.approx(y @ a @ x, rel=1e-12)
    assert "yAx = " in capsys.readouterr().out


@pk.workunit
def read_shifted(i, acc, x, k: int):
    acc += x[i - k]


@pk.workunit
def write_shifted(i, x, k: int):
    x[i - k] = 1.0


def test_the_debug_space_does_not_count_negative_indices_from_the_end():
    # As in a debug build: views do not count from the end, where NumPy would.
    x = np.arange(1.0, 6.0)
    message = "index -2 is out of range for axis 0 of a view of extent 5"
    with pytest.raises(pk.KernelIndexError, match=message):
        pk.parallel_reduce(pk.RangePolicy(pk.Debug, 0, 5), read_shifted, x=x, k=2)
    with pytest.raises(IndexError, match="kernel views do not count from the end"):
        pk.parallel_for(pk.RangePolicy(pk.Debug, 0, 5), write_shifted, x=x, k=1)
    assert x.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]  # nothing written at x[-1]
    assert pk.parallel_reduce(pk.RangePolicy(pk.Debug, 2, 5), read_shifted, x=x, k=2) == 6.0


@pk.workunit
def touch_view(i, x):
    x[i] = x[i] + 0.0


def test_the_debug_space_shows_a_view_as_its_array():
    # NumPy's printing indexes from the end; the view is still shown (`p x` at a stop, a
    # traceback's locals): read here as a debugger's trace function reads it.
    shown = []

    def trace(frame, event, arg):
        if frame.f_code.co_name != "touch_view":
            return None
        if event == "line":
            x = frame.f_locals["x"]
            shown.append((str(x), repr(x)))
        return trace

    sys.settrace(trace)
    try:
        pk.parallel_for(pk.RangePolicy(pk.Debug, 0, 1), touch_view, x=np.arange(12.0))
    finally:
        sys.settrace(None)
    assert shown == [(str(np.arange(12.0)), repr(np.arange(12.0)))]


@pk.workunit
def reduce_shaped(i, acc, x):
    acc += x[i]


@pk.workunit
def for_shaped(i, x):
    x[i] = i


@pk.workunit
def team_shaped(tm: pk.TeamMember, x):
    x[tm.league_rank()] = 1


def test_a_body_dispatched_as_another_operation_or_policy_is_named_as_such():
    x = np.ones(5)
    with pytest.raises(pk.DispatchError) as info:
        pk.parallel_scan(5, reduce_shaped, x=x)
    assert "are those of a parallel_reduce body; a parallel_scan body takes (i, acc, " in str(
        info.value
    )
    with pytest.raises(pk.DispatchError, match=r"a parallel_reduce body takes \(i, acc, \.\.\.\)"):
        pk.parallel_reduce(5, for_shaped, x=x)
    with pytest.raises(pk.TranslationError, match="'tm' is a team member, but this dispatch"):
        pk.parallel_for(5, team_shaped, x=x)
    with pytest.raises(pk.TranslationError, match="a workunit written for an index runs over"):
        pk.parallel_for(pk.TeamPolicy(pk.OpenMP, 5, 1), for_shaped, x=x)


@pk.workunit
def fill_with(i, x, n: int):
    x[i] = n


@pk.workunit
def set_index(i, x):
    x[i] = i


@pk.workunit
def fill_small(i, x, n: pk.uint8):
    x[i] = n


@pk.workunit
def fill_float(i, x, v: float):
    x[i] = v


@pytest.mark.parametrize("space", [pk.OpenMP, pk.Debug], ids=["OpenMP", "Debug"])
def test_the_debug_space_refuses_the_arguments_compiled_spaces_refuse(space):
    # A program checked on Debug must not fail on OpenMP for its arguments.
    policy = pk.RangePolicy(space, 0, 3)
    with pytest.raises(pk.ArgumentTypeError, match="'n' is annotated int64 but receives a float"):
        pk.parallel_for(policy, fill_with, x=np.zeros(3), n=2.5)
    with pytest.raises(pk.DispatchError, match="kernels take NumPy arrays and numbers, not list"):
        pk.parallel_for(policy, set_index, x=[0.0, 0.0, 0.0])
    with pytest.raises(pk.DispatchError, match="float16 cannot be kernel views"):
        pk.parallel_for(policy, set_index, x=np.zeros(3, np.float16))
    with pytest.raises(pk.DispatchError, match="does not fit in int64"):
        pk.parallel_for(policy, fill_with, x=np.zeros(3), n=2**70)
    with pytest.raises(pk.DispatchError, match="300 does not fit in uint8"):
        pk.parallel_for(policy, fill_small, x=np.zeros(3), n=300)
    with pytest.raises(pk.DispatchError, match="18446744073709551615 does not fit in int64"):
        pk.parallel_for(policy, fill_with, x=np.zeros(3), n=np.uint64(2**64 - 1))
    x = np.zeros(3)
    pk.parallel_for(policy, fill_with, x=x, n=7)
    assert x.tolist() == [7.0, 7.0, 7.0]
    pk.parallel_for(policy, fill_float, x=x, v=10**20)  # an int for a float: converted
    assert x.tolist() == [1e20, 1e20, 1e20]
