"""bounds_proof: a launch proven in advance never fails a debug build's checks (view
indices in range, integer divisors nonzero, integer exponents not negative, no float
converted to an integer), so the debugger may run release code for it.

Most tests lower real kernels and ask the proof about real arrays (no compile). The
property test compiles random kernels' debug builds and checks the proof is sound
(proven launches never fault) and not trivially False.
"""

from __future__ import annotations

import random
import time

import numpy as np
import pytest
from heat_kernels import diffuse, laplacian_2d
from pkt_support import ForceDebugBuild, load_module, observing

import pkernels as pk
from pkernels.backends.specialise import argument_names
from pkernels.runtime.marshal import argument_type
from pkernels.translate.bounds_proof import LaunchProof, launch_proof
from pkernels.translate.kernel import TEAM, lower_workunit, translate_workunit


def proof_of(workunit, operation="for", rank=1, **kwargs) -> LaunchProof | None:
    """The proof for ``workunit`` lowered as the runtime lowers it for these arguments
    (``rank`` > 1: for an MDRangePolicy box of that rank)."""
    names = argument_names(workunit, operation, rank)
    types = {name: argument_type(name, kwargs[name]) for name in names}
    kernel, helpers = lower_workunit(workunit, operation, types, rank)
    return launch_proof(kernel, helpers, operation, rank)


def proven(workunit, begin, end, operation="for", **kwargs) -> bool:
    proof = proof_of(workunit, operation, **kwargs)
    assert proof is not None
    return proof.holds(begin, end, kwargs)


# ---------------------------------------------------------------- kernels


@pk.workunit
def stencil7(i, n, u, out):
    for j in range(1, u.extent(1) - 1):
        for k in range(1, n - 1):
            out[i, j, k] = (
                u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k] + u[i, j + 1, k]
                + u[i, j, k - 1] + u[i, j, k + 1] - 6.0 * u[i, j, k]
            )  # fmt: skip


@pk.workunit
def yAx(j, acc, N, M, y, x, A):
    temp2: float = 0
    for i in range(M):
        temp2 += A[j][i] * x[i]
    acc += y[j] * temp2


@pk.workunit
def shift_right(i, x, out):
    out[i + 1] = x[i]


@pk.workunit
def gather(i, idx, x, out):
    out[i] = x[idx[i]]


@pk.workunit
def guarded_gather(i, idx, x, out):
    k = idx[i]
    if 0 <= k < len(x):
        out[i] = x[k]


@pk.workunit
def floor_by(i, k, d, out):
    out[i] = 1.0 * (k // d)


@pk.workunit
def doubled_loop_var(i, m, a, b):
    for j in range(m):
        a[j] += 1.0  # j is the counter's value here, whatever the body writes below
        j = j * 2
        b[j] += 1.0


@pk.workunit
def while_counts(i, n, x, out):
    k = n
    while k > 1:
        k = k // 2
        out[i] += 1.0
    out[i] += x[i]


@pk.workunit
def while_indexes(i, n, out):
    k = 0
    while k < n:
        out[k] += 1.0
        k += 1


@pk.workunit
def branch_index(i, n, out):
    if i < n - 1:
        k = i + 1
    else:
        k = 0
    out[k] += 1.0
    if i > 0 and i < n - 1:
        out[i - 1] += out[i + 1]


@pk.workunit
def divide_by(i, d, x, out):
    out[i] = x[i // d] + i % d


@pk.workunit
def divide_by_two(i, x, out):
    out[i] = x[i // 2] + i % 3


@pk.function
def clamp(k: int, n: int) -> int:
    return max(0, min(k, n - 1))


@pk.function
def read_at(v: pk.View1D[pk.double], k: int) -> float:
    return v[k]


@pk.function
def div(a: int, b: int) -> int:
    return a // b


@pk.workunit
def calls_clamp(i, n, out):
    out[i] = clamp(i + 5, n) * 1.0


@pk.workunit
def indexes_with_helper(i, n, out):
    out[clamp(i, n)] = 1.0


@pk.workunit
def passes_view(i, x, out):
    out[i] = read_at(x, i)


@pk.workunit
def calls_div(i, out):
    out[i] = div(i, 2) * 1.0


@pk.workunit
def sums_by_len(i, x, out):
    for j in range(len(x)):
        out[i] += x[j]
    for j in range(x.shape[0] - 1):
        out[i] += x[j + 1]


@pk.workunit
def reversed_copy(i, n, x, out):
    for j in range(n - 1, -1, -1):
        out[i] += x[j]
    for j in range(n - 1, 0, -2):
        out[i] += x[j - 1]


@pk.workunit
def reversed_too_far(i, n, x, out):
    for j in range(n, -1, -1):
        out[i] += x[j]


@pk.workunit
def empty_inner(i, n, m, out):
    for j in range(n, 0):
        out[j + 100] = 1.0
    for j in range(m):
        out[j + 100] = 1.0
    out[i] = 2.0


@pk.workunit
def min_max(i, n, x, out):
    out[i] = x[min(i + 1, n - 1)] - x[max(i - 1, 0)] + x[abs(i - n + 1)]


@pk.workunit
def small_ints(i, k, out):
    out[k + 27] = 1.0


@pk.workunit
def small_ints_wrap(i, k, out):
    out[k + 28] = 1.0  # int8: 100 + 28 wraps to -128


@pk.workunit
def team_kernel(team_member, out):
    out[team_member.league_rank()] = 1.0


@pk.workunit
def truncate(i, x, out):
    out[i] = int(x[i])


@pk.workunit
def store_floats(i, x, out):
    out[i] = x[i]  # into an integer view: a conversion too


@pk.workunit
def powers(i, n, out):
    out[i] = i**n


# ---------------------------------------------------------------- tests


def test_a_float_converted_to_an_integer_is_never_proven():
    # NaN, infinities and floats past int64 fail the debug build's check, and the
    # intervals do not follow float values: no launch of such a kernel is proven.
    def proof(workunit, **kwargs):
        names = argument_names(workunit, "for", 1)
        types = {name: argument_type(name, kwargs[name]) for name in names}
        return translate_workunit(workunit, "for", types).proof

    floats, ints = np.zeros(4), np.zeros(4, np.int64)
    assert proof(truncate, x=floats, out=ints) is None
    assert proof(store_floats, x=floats, out=ints) is None
    assert proof(store_floats, x=floats, out=floats) is not None  # no conversion


def test_an_integer_power_needs_an_exponent_proven_not_negative():
    out = np.zeros(4, np.int64)
    assert proven(powers, 0, 4, n=2, out=out)
    assert not proven(powers, 0, 4, n=-1, out=out)  # Python's i ** -1 is a float


def test_heat_kernel_interior_policy_is_proven():
    n = 12
    u, u_new = np.random.rand(n, n), np.zeros((n, n))
    args = dict(n=n, alpha=0.1, u=u, u_new=u_new)
    proof = proof_of(diffuse, **args)
    assert proof is not None
    assert proof.holds(1, n - 1, args)
    assert not proof.holds(0, n - 1, args)  # u[i - 1] at i = 0
    assert not proof.holds(1, n, args)  # u[i + 1] at i = n - 1
    assert not proof.holds(1, n - 1, {**args, "n": n + 1})  # u[i][j + 1] at j = n - 1
    assert proof.holds(1, n - 1, {**args, "n": n - 3})  # a shorter inner loop still fits
    assert proof.holds(5, 5, args)  # empty range


def test_heat_kernel_verdicts_agree_with_the_debug_build():
    n = 10
    args = dict(n=n, alpha=0.1, u=np.random.rand(n, n), u_new=np.zeros((n, n)))
    with observing(ForceDebugBuild()):
        pk.parallel_for(pk.RangePolicy(pk.Serial, 1, n - 1), diffuse, **args)
        with pytest.raises(pk.KernelIndexError):
            pk.parallel_for(pk.RangePolicy(pk.Serial, 0, n - 1), diffuse, **args)


def test_3d_seven_point_stencil():
    n = 8
    args = dict(n=n, u=np.zeros((n, n, n)), out=np.zeros((n, n, n)))
    assert proven(stencil7, 1, n - 1, **args)
    assert not proven(stencil7, 0, n - 1, **args)
    assert not proven(stencil7, 1, n - 1, **{**args, "out": np.zeros((n, n, n - 2))})
    # The middle axis is bounded by u's extent, the last by n.
    narrow = {**args, "u": np.zeros((n, 5, n)), "out": np.zeros((n, 5, n))}
    assert proven(stencil7, 1, n - 1, **narrow)
    assert not proven(stencil7, 1, n - 1, **{**args, "u": np.zeros((n, n, n - 1))})


def test_yax_reduce():
    N, M = 6, 9
    args = dict(N=N, M=M, y=np.ones(N), x=np.ones(M), A=np.ones((N, M)))
    assert proven(yAx, 0, N, "reduce", **args)
    assert not proven(yAx, 0, N + 1, "reduce", **args)
    assert not proven(yAx, 0, N, "reduce", **{**args, "M": M + 1})
    assert not proven(yAx, 0, N, "reduce", **{**args, "x": np.ones(M - 1)})


def test_off_by_one():
    args = dict(x=np.ones(10), out=np.zeros(10))
    assert not proven(shift_right, 0, 10, **args)
    assert proven(shift_right, 0, 9, **args)
    assert not proven(shift_right, -1, 9, **args)  # negative indices fault, no wrap-around


def test_indirect_index_is_never_proven():
    args = dict(idx=np.zeros(4, np.int64), x=np.ones(4), out=np.zeros(4))
    assert proof_of(gather, **args) is None


def test_a_guard_bounds_a_data_dependent_index():
    args = dict(idx=np.array([3, -1, 9, 0]), x=np.ones(4), out=np.zeros(4))
    assert proven(guarded_gather, 0, 4, **args)
    assert not proven(guarded_gather, 0, 5, **args)


def test_min_int_floor_divided_by_minus_one_is_not_proven():
    out = np.zeros(1)
    assert proven(floor_by, 0, 1, k=5, d=-1, out=out)
    assert not proven(floor_by, 0, 1, k=-(2**63), d=-1, out=out)  # traps, unchecked
    assert not proven(floor_by, 0, 1, k=5, d=0, out=out)


def test_loop_variable_written_in_its_body():
    m = 5
    args = dict(m=m, a=np.zeros(m), b=np.zeros(2 * m - 1))
    assert proven(doubled_loop_var, 0, 3, **args)
    assert not proven(doubled_loop_var, 0, 3, **{**args, "b": np.zeros(2 * m - 2)})
    assert not proven(doubled_loop_var, 0, 3, **{**args, "a": np.zeros(m - 1)})


def test_while_loop():
    args = dict(n=100, x=np.ones(4), out=np.zeros(4))
    assert proven(while_counts, 0, 4, **args)
    assert not proven(while_counts, 0, 5, **args)
    # A local the loop writes is unknown in it: sound, if imprecise.
    assert not proven(while_indexes, 0, 4, n=4, out=np.zeros(4))


def test_if_else_joins_and_conditions_narrow():
    n = 7
    assert proven(branch_index, 0, n, n=n, out=np.zeros(n))
    assert not proven(branch_index, 0, n + 1, n=n + 1, out=np.zeros(n))


def test_integer_division_by_a_parameter():
    args = dict(x=np.ones(10), out=np.zeros(10))
    assert not proven(divide_by, 0, 10, d=0, **args)
    assert proven(divide_by, 0, 10, d=3, **args)
    assert proven(divide_by, 0, 10, d=1, **args)
    assert not proven(divide_by, 0, 10, d=-1, **args)  # i // -1 is negative
    assert proven(divide_by_two, 0, 10, **args)
    assert not proven(divide_by_two, 0, 10, x=np.ones(4), out=np.zeros(10))


def test_helpers():
    out = np.zeros(6)
    assert proven(calls_clamp, 0, 6, n=3, out=out)
    assert not proven(calls_clamp, 0, 7, n=3, out=out)
    # A helper's result is not tracked, a view passed to one is not analysed, a helper
    # that may divide by zero is refused: none of these is ever proven.
    assert proof_of(indexes_with_helper, n=6, out=out) is None
    assert proof_of(passes_view, x=np.ones(6), out=out) is None
    assert proof_of(calls_div, out=out) is None


def test_len_and_shape_bound_loops():
    assert proven(sums_by_len, 0, 3, x=np.ones(5), out=np.zeros(3))
    assert proven(sums_by_len, 0, 3, x=np.ones(0), out=np.zeros(3))
    assert not proven(sums_by_len, 0, 4, x=np.ones(5), out=np.zeros(3))


def test_negative_step_ranges():
    args = dict(x=np.ones(5), out=np.zeros(2))
    assert proven(reversed_copy, 0, 2, n=5, **args)
    assert not proven(reversed_copy, 0, 2, n=6, **args)
    assert not proven(reversed_too_far, 0, 2, n=5, **args)
    assert proven(reversed_too_far, 0, 2, n=4, **args)


def test_empty_inner_range_is_unreachable():
    out = np.zeros(4)
    assert proven(empty_inner, 0, 4, n=3, m=0, out=out)
    assert not proven(empty_inner, 0, 4, n=3, m=1, out=out)
    assert not proven(empty_inner, 0, 4, n=-1, m=0, out=out)  # range(-1, 0) runs once


def test_min_max_abs():
    n = 6
    args = dict(n=n, x=np.ones(n), out=np.zeros(n))
    assert proven(min_max, 0, n, **args)
    assert not proven(min_max, 0, n + 1, **args)  # abs(i - n + 1) = 1 is fine, out[n] not
    assert not proven(min_max, 0, n, **{**args, "n": n + 1})


def test_small_integer_wrap_around_is_not_proven():
    out = np.zeros(200)
    k = np.int8(100)
    assert proven(small_ints, 0, 1, k=k, out=out)
    assert not proven(small_ints_wrap, 0, 1, k=k, out=out)
    with observing(ForceDebugBuild()):
        with pytest.raises(pk.KernelIndexError, match="index -128"):
            pk.parallel_for(pk.RangePolicy(pk.Serial, 0, 1), small_ints_wrap, k=k, out=out)


@pk.workunit
def box_sum(i, j, k, acc, a):
    acc += a[i][j][k] * a[k][j][i]


def test_mdrange_boxes():
    n = 12
    args = dict(u=np.zeros((n, n)), out=np.zeros((n, n)))
    proof = proof_of(laplacian_2d, rank=2, **args)
    assert proof is not None
    assert proof.holds((1, 1), (n - 1, n - 1), args)
    assert not proof.holds((0, 1), (n - 1, n - 1), args)  # u[i - 1] at i = 0
    assert not proof.holds((1, 1), (n - 1, n), args)  # u[i][j + 1] at j = n - 1
    assert proof.holds((5, 1), (5, n - 1), args)  # empty: no index runs
    assert not proof.holds(1, n - 1, args)  # a range where a box was expected
    cube = dict(a=np.zeros((n, 5, n)))
    proof = proof_of(box_sum, "reduce", rank=3, **cube)
    assert proof.holds((0, 0, 0), (n, 5, n), cube)
    assert not proof.holds((0, 0, 0), (n, 6, n), cube)


def test_unsupported_policies_and_teams():
    out = np.zeros(4)
    types = {"out": argument_type("out", out)}
    kernel, helpers = lower_workunit(team_kernel, "for", types, TEAM)
    assert launch_proof(kernel, helpers, "for", TEAM) is None
    kernel, helpers = lower_workunit(shift_right, "for", {**types, "x": types["out"]})
    assert launch_proof(kernel, helpers, "for", 2) is None


def test_results_are_cached():
    n = 64
    args = dict(n=n, alpha=0.5, u=np.zeros((n, n)), u_new=np.zeros((n, n)))
    proof = proof_of(diffuse, **args)
    assert proof.holds(1, n - 1, args)
    start = time.perf_counter()
    for k in range(10_000):
        assert proof.holds(1, n - 1, {**args, "alpha": k * 0.5})  # floats are no part of it
    assert time.perf_counter() - start < 0.5  # a few microseconds each
    assert not proof.holds(1, n - 1, {**args, "u": np.zeros((n, n - 1))})
    assert not proof.holds(1, n - 1, {**args, "u": np.zeros(n)})  # wrong rank
    assert not proof.holds(1, n - 1, {"n": n})  # missing arguments


# ---------------------------------------------------------------- soundness property

# Statement templates of random kernels over (i, n, m, d, x, y, out); {u} makes local
# names unique, the other fields are small random integers.
TEMPLATES = [
    "out[{p} * i + {a}] = x[i + {b}]",
    "for j{u} in range({a}, n + {b}, {s}):\n    out[i] += x[j{u} + {c}]",
    "for j{u} in range(n + {b}, {a}, -{s}):\n    out[i] += x[j{u} + {c}]",
    "out[i] = x[(i + {a}) // d] + x[(i + {b}) % {s}]",
    "out[(i + {a}) // {s}] += 1.0",
    "if i < n + {a}:\n    k{u} = i + {b}\nelse:\n    k{u} = {c}\nout[k{u}] = 1.0",
    "out[min(i + {a}, n + {b})] = x[max(i + {c}, {e})] + x[abs(i + {e})]",
    "for j{u} in range(m + {a}):\n    y[i + {b}, j{u} + {c}] = 1.0",
    "for j{u} in range(y.extent(1) + {a}):\n    y[i, j{u}] += x[j{u} + {b}]",
    "k{u} = n\nwhile k{u} > {a}:\n    k{u} = k{u} - {s}\n    out[i] += 1.0\nout[i + {b}] += 1.0",
    "for j{u} in range(len(x) + {a}):\n    out[i] += x[j{u}]",
    "for j{u} in range(m):\n    j{u} = j{u} * {p} + {a}\n    out[j{u}] = 1.0",
    "for j{u} in range(n, n + {a}):\n    out[j{u} + 100] = 1.0",
    "if i > {a} and i < n + {b}:\n    out[i + {c}] = x[i - 1]",
    "out[i] = 1.0 * (i % d) + x[i * {p} + {a}]",
    "out[i] = x[i + {a}] if i < n + {b} else x[{c}]",
    "k{u} = i - {a}\nif 0 <= k{u} < n:\n    out[k{u}] = x[k{u}]",
    "k{u} = i + {a}\nk{u} //= {s}\nk{u} %= d\nout[k{u}] = 1.0",
    "out[(i >> 1) & {s}] = x[-(-i) + {a}] + x[{s} - 1 - i % {s}]",
    "if not (i >= n + {a}) or i == {b}:\n    out[i] = 1.0\nelif i != {c}:\n    out[i - {c}] = 1.0",
    "y[i % {s}, (i + {a}) // {s}] = x[int(i * {p})]",
]


def random_kernel_source(rng: random.Random, count: int) -> str:
    lines = ["import pkernels as pk", ""]
    for k in range(count):
        lines += ["", "@pk.workunit", f"def kern{k}(i, n, m, d, x, y, out):"]
        for u in range(rng.choice([1, 1, 2])):
            fields = dict(
                u=u,
                a=rng.randint(-2, 2),
                b=rng.randint(-2, 2),
                c=rng.randint(-1, 1),
                e=rng.randint(-1, 1),
                p=rng.choice([1, 1, 2, -1]),
                s=rng.choice([1, 2, 3]),
            )
            body = rng.choice(TEMPLATES).format(**fields)
            lines += ["    " + line for line in body.splitlines()]
    return "\n".join(lines) + "\n"


def random_launch(rng: random.Random) -> tuple[int, int, dict]:
    size = rng.randint(0, 9)
    x_len = rng.choice([size, size, size + 1, rng.randint(0, 9)])
    rows, cols = rng.choice([size, size + 1, rng.randint(0, 6)]), rng.randint(0, 6)
    n = rng.choice([size, x_len, size - 1, rng.randint(-1, 9)])
    args = dict(
        n=n,
        m=rng.choice([cols, cols - 1, cols + 1, 0]),
        d=rng.choice([1, 2, 3, -1, 0]),
        x=np.ones(x_len),
        y=np.zeros((rows, cols)),
        out=np.zeros(rng.choice([size, size, size + 2, x_len])),
    )
    begin = rng.choice([0, 0, 0, 1, -1])
    end = rng.choice([size, size, size - 1, size + 1, n])
    return begin, end, args


def test_random_kernels_proofs_are_sound(tmp_path):
    rng = random.Random(20240611)
    kernels_count, launches = 36, 12
    module = load_module(tmp_path, random_kernel_source(rng, kernels_count))
    proven_count = safe_count = fault_count = 0
    with observing(ForceDebugBuild()):
        for k in range(kernels_count):
            kern = getattr(module, f"kern{k}")
            proof = proof_of(kern, **random_launch(rng)[2])  # every launch: one signature
            for _ in range(launches):
                begin, end, args = random_launch(rng)
                if end <= begin:
                    continue
                holds = proof is not None and proof.holds(begin, end, args)
                try:
                    pk.parallel_for(pk.RangePolicy(pk.Serial, begin, end), kern, **args)
                    faulted = False
                except (pk.KernelIndexError, pk.KernelZeroDivisionError):
                    faulted = True
                assert not (holds and faulted), (
                    f"proven but faulted: kern{k} over [{begin}, {end}) with "
                    f"{ {n: getattr(v, 'shape', v) for n, v in args.items()} }"
                )
                proven_count += holds
                safe_count += not faulted
                fault_count += faulted
    # Not trivially False: most launches the debug build runs cleanly are proven.
    assert fault_count > 20
    assert proven_count >= 0.5 * safe_count, (proven_count, safe_count)
