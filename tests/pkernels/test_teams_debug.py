"""TeamPolicy in the Debug space: team kernels as Python, a team as Python threads.

Nested ranges are split among the members as the compiled spaces split them (chunks of
ceil(n / team_size) indices, partial sums combined in member order), so the expected
values below are computed in that order and compared exactly.
"""

from __future__ import annotations

import inspect
import os
import re
import threading

import numpy as np
import pytest
from team_kernels import pooled_scratch, pooled_scratch_expected, reverse_rows, team_yax

import pkernels as pk

# -- kernels ---------------------------------------------------------------------------


@pk.workunit
def scratch_types(team_member: pk.TeamMember, out_i, out_f, n0: int, n1: int):
    ints: pk.ScratchView1D[pk.int32] = pk.ScratchView1D(team_member.team_scratch(0), n0)
    grid: pk.ScratchView2D[pk.double] = pk.ScratchView2D(team_member.team_scratch(0), n0, n1)
    plain = pk.ScratchView1D(team_member.team_scratch(0), 1)
    r: int = team_member.team_rank()
    if r == 0:
        ints[0] = 2.75  # truncated: an integer element
        grid[0, 0] = 0.1  # stays 0.1 in double, would round in float32
        plain[0] = 0.1
        out_i[0] = ints[0]
        out_i[1] = grid[0, 0] == 0.1
        out_i[2] = plain[0] == 0.1
        out_i[3] = ints.extent(0)
        out_i[4] = grid.extent(1)
    team_member.team_barrier()

    def fill(i: int, j: int):
        grid[i, j] = i * 10 + j

    pk.parallel_for(pk.TeamThreadMDRange(team_member, n0, n1), fill)
    team_member.team_barrier()
    if r == team_member.team_size() - 1:
        for i in range(n0):
            for j in range(n1):
                out_f[i, j] = grid[i, j]


@pk.workunit
def row_prefix(team_member: pk.TeamMember, out, totals, inp, n: int):
    r: int = team_member.league_rank()

    def step(i: int, acc: pk.Acc[pk.double], last_pass: bool):
        acc += inp[r, i]
        if last_pass:
            out[r, i] = acc

    total: float = pk.parallel_scan(pk.TeamThreadRange(team_member, n), step)
    totals[r, team_member.team_rank()] = total


@pk.workunit
def exclusive_prefix(team_member: pk.TeamMember, out, inp, n: int):
    r: int = team_member.league_rank()

    def step(i: int, acc: pk.Acc[int], last_pass: bool):
        if last_pass:
            out[r, i] = acc
        acc += inp[r, i]

    pk.parallel_scan(pk.ThreadVectorRange(team_member, n), step)


@pk.workunit
def box_fill(team_member: pk.TeamMember, out, owner, n0: int, n1: int):
    league: int = team_member.league_rank()

    def body(i: int, j: int):
        out[league, i, j] = league * 100 + i * 10 + j
        owner[league, i, j] = team_member.team_rank()

    pk.parallel_for(pk.TeamThreadMDRange(team_member, n0, n1), body)


@pk.workunit
def box_sum(team_member: pk.TeamMember, acc: pk.Acc[float], sums, inp, n0: int, n1: int, n2: int):
    league: int = team_member.league_rank()

    def body(i: int, j: int, k: int, part: pk.Acc[float]):
        part += inp[league, i, j, k]

    total: float = pk.parallel_reduce(pk.TeamThreadMDRange(team_member, n0, n1, n2), body)
    sums[league, team_member.team_rank()] = total
    if team_member.team_rank() == 0:
        acc += total


@pk.workunit
def row_sums(team_member: pk.TeamMember, out, A, m: int):
    def row(i: int):
        def col(k: int, s: pk.Acc[float]):
            s += A[i, k]

        out[i] = pk.parallel_reduce(pk.ThreadVectorRange(team_member, m), col)

    first: int = team_member.league_rank() * team_member.league_size()
    pk.parallel_for(pk.TeamThreadRange(team_member, first, first + team_member.league_size()), row)


@pk.workunit
def count_singles(team_member: pk.TeamMember, once, per_thread):
    league: int = team_member.league_rank()

    def team_once():
        once[league] += 1

    def each_thread():
        per_thread[league, team_member.team_rank()] += 1

    pk.single(pk.PerTeam(team_member), team_once)
    pk.single(pk.PerThread(team_member), each_thread)


@pk.workunit
def own_scratch(team_member: pk.TeamMember, out, m: int):
    shared: pk.ScratchView1D[pk.int64] = pk.ScratchView1D(team_member.team_scratch(0), 1)
    mine: pk.ScratchView1D[pk.int64] = pk.ScratchView1D(team_member.thread_scratch(0), m)
    r: int = team_member.team_rank()
    if r == 0:
        shared[0] = team_member.league_rank()
    for i in range(m):
        mine[i] = r * 1000 + i
    team_member.team_barrier()
    for i in range(m):
        out[team_member.league_rank(), r, i] = mine[i] + shared[0] * 100000


@pk.workunit
def team_count(team_member: pk.TeamMember, acc: pk.Acc[int]):
    acc += team_member.league_rank() * 10 + team_member.team_rank()


@pk.workunit
def diverging_barrier(team_member: pk.TeamMember, out):
    if team_member.team_rank() == 0:
        team_member.team_barrier()
    out[team_member.team_rank()] = 1


# The kernels below branch on the team rank through thread scratch, which the
# translator's check of collectives does not follow (it refuses the plain form above):
# the Debug space's barriers report the mismatch when it happens (compiled, the team
# would wait forever).


@pk.workunit
def hidden_diverging_barrier(team_member: pk.TeamMember, out):
    rank: pk.ScratchView1D[pk.int64] = pk.ScratchView1D(team_member.thread_scratch(0), 1)
    rank[0] = team_member.team_rank()
    if rank[0] == 0:
        team_member.team_barrier()
    out[team_member.team_rank()] = 1


@pk.workunit
def skipped_by_rank_0(team_member: pk.TeamMember, out):
    rank: pk.ScratchView1D[pk.int64] = pk.ScratchView1D(team_member.thread_scratch(0), 1)
    rank[0] = team_member.team_rank()
    if rank[0] != 0:
        team_member.team_barrier()
    out[team_member.team_rank()] = 1


@pk.workunit
def diverging_reduce(team_member: pk.TeamMember, out, n: int):
    def body(i: int, a: pk.Acc[float]):
        a += i

    rank: pk.ScratchView1D[pk.int64] = pk.ScratchView1D(team_member.thread_scratch(0), 1)
    rank[0] = team_member.team_rank()
    if rank[0] != 1:
        out[team_member.team_rank()] = pk.parallel_reduce(pk.TeamThreadRange(team_member, n), body)
    team_member.team_barrier()


def with_rank_scratch(policy: pk.TeamPolicy) -> pk.TeamPolicy:
    """``policy`` with the thread scratch the hidden-rank kernels above use."""
    return policy.set_scratch_size(0, pk.PerThread(pk.ScratchView1D[pk.int64].shmem_size(1)))


@pk.workunit
def too_much_scratch(team_member: pk.TeamMember, m: int):
    s: pk.ScratchView1D[pk.double] = pk.ScratchView1D(team_member.team_scratch(0), m)
    s[0] = 1.0


@pk.workunit
def too_much_thread_scratch(team_member: pk.TeamMember, m: int):
    s: pk.ScratchView1D[pk.int32] = pk.ScratchView1D(team_member.thread_scratch(1), m)
    s[0] = 1


@pk.workunit
def fails_in_one_member(team_member: pk.TeamMember, out):
    if team_member.team_rank() == 1:
        out[len(out)] = 1.0  # one past the end: IndexError in member 1 only
    team_member.team_barrier()
    out[team_member.team_rank()] = 2.0


@pk.workload
class RowNorms:
    """A workload whose TeamPolicy kernel reads its fields (``self.a``, ``self.out``)."""

    def __init__(self, a: np.ndarray, team_size: int) -> None:
        self.a = a
        self.rows, self.cols = a.shape
        self.team_size = team_size
        self.out = np.zeros(self.rows)
        self.total = 0.0

    @pk.main
    def run(self) -> None:
        policy = pk.TeamPolicy(self.rows, self.team_size)
        self.total = pk.parallel_reduce(policy, self.k, m=self.cols)

    @pk.workunit
    def k(self, team_member: pk.TeamMember, acc: pk.Acc[float], m: int):
        j: int = team_member.league_rank()

        def inner(i: int, s: pk.Acc[float]):
            s += self.a[j, i] * self.a[j, i]

        row: float = pk.parallel_reduce(pk.TeamThreadRange(team_member, m), inner)
        if team_member.team_rank() == 0:
            self.out[j] = row
            acc += row


# -- helpers ---------------------------------------------------------------------------


def chunks(n: int, team_size: int) -> list[range]:
    chunk = -(-n // team_size) if n > 0 else 0
    return [range(r * chunk, min(n, r * chunk + chunk)) for r in range(team_size)]


def line_of(func, text: str) -> int:
    lines, first = inspect.getsourcelines(func)
    return first + next(k for k, line in enumerate(lines) if text in line)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


# -- results ---------------------------------------------------------------------------


@pytest.mark.parametrize("team_size", [1, 3, pk.AUTO])
def test_yax_matches_numpy_bit_for_bit(team_size, rng) -> None:
    rows, cols = 7, 11
    y, x, A = rng.random(rows), rng.random(cols), rng.random((rows, cols))
    policy = pk.TeamPolicy(pk.Debug, rows, team_size)
    total = pk.parallel_reduce(policy, team_yax, cols=cols, y=y, x=x, A=A)

    size = 1 if team_size is pk.AUTO else team_size
    expected = 0.0
    for j in range(rows):
        temp2 = 0.0
        for part in chunks(cols, size):
            partial = 0.0
            for i in part:
                partial += A[j, i] * x[i]
            temp2 += partial
        expected += y[j] * temp2
    assert type(total) is float
    assert total == expected
    assert total == pytest.approx(float(y @ (A @ x)))


@pytest.mark.parametrize("team_size", [3, 4])
@pytest.mark.parametrize("m", [10, 12, 2])
def test_scratch_and_barrier_reverse_rows(team_size, m, rng) -> None:
    league = 5
    inp = rng.random((league, m))
    out = np.zeros_like(inp)
    policy = pk.TeamPolicy(pk.Debug, league, team_size).set_scratch_size(
        0, pk.PerTeam(pk.ScratchView1D[pk.double].shmem_size(m))
    )
    pk.parallel_for(policy, reverse_rows, out=out, inp=inp, m=m)
    np.testing.assert_array_equal(out, inp[:, ::-1])


def test_scratch_element_types_from_annotations() -> None:
    n0, n1 = 3, 5
    out_i = np.zeros(5, np.int64)
    out_f = np.zeros((n0, n1))
    size = (
        pk.ScratchView1D[pk.int32].shmem_size(n0)
        + pk.ScratchView2D[pk.double].shmem_size(n0, n1)
        + pk.ScratchView1D[pk.double].shmem_size(1)
    )
    policy = pk.TeamPolicy(pk.Debug, 2, 4).set_scratch_size(0, pk.PerTeam(size))
    pk.parallel_for(policy, scratch_types, out_i=out_i, out_f=out_f, n0=n0, n1=n1)
    # int32 and double from the annotations (the exact scratch size holds no wider
    # elements), float64 for the unannotated view
    assert out_i.tolist() == [2, 1, 1, n0, n1]
    np.testing.assert_array_equal(out_f, np.add.outer(np.arange(n0) * 10, np.arange(n1)))


@pytest.mark.parametrize("team_size", [1, 3])
def test_nested_team_scan_gives_row_prefix_sums(team_size, rng) -> None:
    league, n = 4, 10
    inp = rng.integers(-50, 50, (league, n)).astype(np.float64)
    out = np.zeros_like(inp)
    totals = np.zeros((league, team_size))
    policy = pk.TeamPolicy(pk.Debug, league, team_size)
    pk.parallel_for(policy, row_prefix, out=out, totals=totals, inp=inp, n=n)
    np.testing.assert_array_equal(out, np.cumsum(inp, axis=1))
    # every member gets the team's total
    np.testing.assert_array_equal(totals, np.repeat(inp.sum(axis=1)[:, None], team_size, 1))


def test_nested_thread_vector_scan_exclusive(rng) -> None:
    league, n = 3, 9
    inp = rng.integers(0, 100, (league, n))
    out = np.zeros_like(inp)
    pk.parallel_for(pk.TeamPolicy(pk.Debug, league, 2), exclusive_prefix, out=out, inp=inp, n=n)
    expected = np.cumsum(inp, axis=1) - inp
    np.testing.assert_array_equal(out, expected)


def test_team_thread_md_range_for_splits_the_box_row_major() -> None:
    league, n0, n1, team_size = 2, 3, 4, 5
    out = np.zeros((league, n0, n1), np.int64)
    owner = np.full((league, n0, n1), -1, np.int64)
    pk.parallel_for(
        pk.TeamPolicy(pk.Debug, league, team_size), box_fill, out=out, owner=owner, n0=n0, n1=n1
    )
    grid = np.arange(league)[:, None, None] * 100 + np.add.outer(np.arange(n0) * 10, np.arange(n1))
    np.testing.assert_array_equal(out, grid)
    flat_owner = np.concatenate([np.full(len(c), r) for r, c in enumerate(chunks(n0 * n1, 5))])
    np.testing.assert_array_equal(owner, np.broadcast_to(flat_owner.reshape(n0, n1), owner.shape))


@pytest.mark.parametrize("team_size", [1, 4])
def test_team_thread_md_range_reduce(team_size, rng) -> None:
    league, n0, n1, n2 = 3, 2, 3, 5
    inp = rng.random((league, n0, n1, n2))
    sums = np.zeros((league, team_size))
    policy = pk.TeamPolicy(pk.Debug, league, team_size)
    total = pk.parallel_reduce(policy, box_sum, sums=sums, inp=inp, n0=n0, n1=n1, n2=n2)

    expected_rows = []
    for league_rank in range(league):
        flat = inp[league_rank].ravel()
        row = 0.0
        for part in chunks(flat.size, team_size):
            partial = 0.0
            for f in part:
                partial += flat[f]
            row += partial
        expected_rows.append(row)
    np.testing.assert_array_equal(sums, np.repeat(np.array(expected_rows)[:, None], team_size, 1))
    assert total == sum(expected_rows, 0.0)
    np.testing.assert_allclose(sums[:, 0], inp.reshape(league, -1).sum(axis=1))


def test_thread_vector_reduce_inside_team_thread_range(rng) -> None:
    league, m = 3, 6
    A = rng.random((league * league, m))
    out = np.zeros(league * league)
    pk.parallel_for(pk.TeamPolicy(pk.Debug, league, 2), row_sums, out=out, A=A, m=m)
    expected = [sum(A[i], 0.0) for i in range(league * league)]  # in index order
    assert out.tolist() == expected


def test_single_per_team_and_per_thread() -> None:
    league, team_size = 4, 3
    once = np.zeros(league, np.int64)
    per_thread = np.zeros((league, team_size), np.int64)
    policy = pk.TeamPolicy(pk.Debug, league, team_size)
    pk.parallel_for(policy, count_singles, once=once, per_thread=per_thread)
    assert once.tolist() == [1] * league
    assert per_thread.tolist() == [[1] * team_size] * league


def test_thread_scratch_is_private_team_scratch_shared() -> None:
    league, team_size, m = 3, 4, 5
    out = np.zeros((league, team_size, m), np.int64)
    policy = (
        pk.TeamPolicy(pk.Debug, league, team_size)
        .set_scratch_size(0, pk.PerTeam(pk.ScratchView1D[pk.int64].shmem_size(1)))
        .set_scratch_size(0, pk.PerThread(pk.ScratchView1D[pk.int64].shmem_size(m)))
    )
    pk.parallel_for(policy, own_scratch, out=out, m=m)
    expected = (
        np.arange(league)[:, None, None] * 100000
        + np.arange(team_size)[None, :, None] * 1000
        + np.arange(m)[None, None, :]
    )
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("team_size", [1, 2, 5])
def test_team_reduce_adds_every_member_in_order(team_size) -> None:
    league = 6
    total = pk.parallel_reduce(pk.TeamPolicy(pk.Debug, league, team_size), team_count)
    assert type(total) is int
    assert total == sum(lr * 10 + tr for lr in range(league) for tr in range(team_size))


@pytest.mark.parametrize("team_size", [1, 3])
def test_workload_team_kernel_reads_fields(team_size, rng) -> None:
    a = rng.random((5, 7))
    work = RowNorms(a, team_size)
    pk.execute(pk.Debug, work)
    expected = []
    for j in range(a.shape[0]):
        row = 0.0
        for part in chunks(a.shape[1], team_size):
            partial = 0.0
            for i in part:
                partial += a[j, i] * a[j, i]
            row += partial
        expected.append(row)
    assert work.out.tolist() == expected
    assert work.total == sum(expected, 0.0)
    np.testing.assert_allclose(work.out, (a * a).sum(axis=1))


def test_keyword_arguments_are_checked() -> None:
    with pytest.raises(pk.DispatchError, match="missing y"):
        pk.parallel_reduce(pk.TeamPolicy(pk.Debug, 2, 2), team_yax, cols=1, x=1, A=1)


# -- errors ----------------------------------------------------------------------------


@pytest.mark.parametrize("space", [pk.Debug, pk.OpenMP], ids=["Debug", "OpenMP"])
def test_barrier_under_a_rank_condition_is_refused_as_translation(space) -> None:
    out = np.zeros(2)
    with pytest.raises(pk.TranslationError) as info:
        pk.parallel_for(pk.TeamPolicy(space, 3, 2), diverging_barrier, out=out)
    assert info.value.reason.startswith("team_barrier() under a condition on team_rank()")
    assert info.value.lineno == line_of(diverging_barrier, "team_member.team_barrier()")
    assert out.tolist() == [0.0, 0.0]


def test_barrier_in_a_branch_is_a_team_error() -> None:
    out = np.zeros(2)
    before = threading.active_count()
    with pytest.raises(pk.KernelTeamError) as info:
        policy = with_rank_scratch(pk.TeamPolicy(pk.Debug, 3, 2))
        pk.parallel_for(policy, hidden_diverging_barrier, out=out)
    filename = os.path.abspath(hidden_diverging_barrier.__code__.co_filename)
    line = line_of(hidden_diverging_barrier, "team_member.team_barrier()")
    assert str(info.value) == (
        f"team_barrier() mismatch in league 0: team_rank 0 waits at {filename}:{line}, "
        "team_rank 1 at the end of the workunit"
    )
    assert threading.active_count() == before


def test_barrier_skipped_by_rank_0_is_a_team_error() -> None:
    out = np.zeros(4)
    with pytest.raises(pk.KernelTeamError) as info:
        pk.parallel_for(
            with_rank_scratch(pk.TeamPolicy(pk.Debug, 1, 4)), skipped_by_rank_0, out=out
        )
    filename = os.path.abspath(skipped_by_rank_0.__code__.co_filename)
    line = line_of(skipped_by_rank_0, "team_member.team_barrier()")
    assert str(info.value) == (
        "team_barrier() mismatch in league 0: team_rank 0 at the end of the workunit, "
        f"team_rank 1 waits at {filename}:{line}"
    )


def test_nested_reduce_in_some_members_is_a_team_error() -> None:
    out = np.zeros(3)
    policy = with_rank_scratch(pk.TeamPolicy(pk.Debug, 1, 3))
    with pytest.raises(pk.KernelTeamError) as info:
        pk.parallel_for(policy, diverging_reduce, out=out, n=4)
    filename = os.path.abspath(diverging_reduce.__code__.co_filename)
    reduce_line = line_of(diverging_reduce, "pk.parallel_reduce(")
    barrier_line = line_of(diverging_reduce, "team_member.team_barrier()")
    assert str(info.value) == (
        f"team_barrier() mismatch in league 0: team_rank 0 waits at {filename}:{reduce_line}, "
        f"team_rank 1 waits at {filename}:{barrier_line}"
    )


def test_barrier_with_one_member_is_fine() -> None:
    out = np.zeros(1)
    policy = with_rank_scratch(pk.TeamPolicy(pk.Debug, 2, pk.AUTO))
    pk.parallel_for(policy, hidden_diverging_barrier, out=out)
    assert out.tolist() == [1.0]


def test_scratch_overflow_is_a_team_error() -> None:
    policy = pk.TeamPolicy(pk.Debug, 2, 2).set_scratch_size(0, pk.PerTeam(64))
    message = (
        "ScratchView1D needs 128 bytes of level-0 team scratch but only 64 are left: "
        "reserve more with policy.set_scratch_size(0, pk.PerTeam(...))"
    )
    with pytest.raises(pk.KernelTeamError, match=re.escape(message)):
        pk.parallel_for(policy, too_much_scratch, m=16)
    pk.parallel_for(policy, too_much_scratch, m=8)  # 64 bytes fit


def test_thread_scratch_overflow_names_per_thread() -> None:
    policy = pk.TeamPolicy(pk.Debug, 1, pk.AUTO).set_scratch_size(1, pk.PerThread(8))
    message = (
        "ScratchView1D needs 16 bytes of level-1 thread scratch but only 8 are left: "
        "reserve more with policy.set_scratch_size(1, pk.PerThread(...))"
    )
    with pytest.raises(pk.KernelTeamError, match=re.escape(message)):
        pk.parallel_for(policy, too_much_thread_scratch, m=3)


@pytest.mark.parametrize("team_size", [1, 3])
def test_team_and_thread_scratch_share_one_pool_per_level(team_size) -> None:
    # As the compiled spaces (and Kokkos): PerTeam + team_size x PerThread bytes, handed
    # out in order; a team piece may use bytes reserved PerThread.
    n, league = 4, 3
    size = pk.ScratchView1D[pk.int64].shmem_size
    out = np.zeros((league, team_size), dtype=np.int64)
    policy = (
        pk.TeamPolicy(pk.Debug, league, team_size)
        .set_scratch_size(0, pk.PerTeam(size(n) + size(1)))
        .set_scratch_size(0, pk.PerThread(size(n)))
    )
    pk.parallel_for(policy, pooled_scratch, out=out, n=n)
    np.testing.assert_array_equal(out, pooled_scratch_expected(league, team_size, n))

    inp = np.arange(12.0).reshape(3, 4)
    reversed_ = np.zeros_like(inp)
    per_thread_only = pk.TeamPolicy(pk.Debug, 3, team_size).set_scratch_size(
        0, pk.PerThread(pk.ScratchView1D[pk.double].shmem_size(4))
    )
    pk.parallel_for(per_thread_only, reverse_rows, out=reversed_, inp=inp, m=4)
    np.testing.assert_array_equal(reversed_, inp[:, ::-1])

    tight = (
        pk.TeamPolicy(pk.Debug, 1, 2)
        .set_scratch_size(0, pk.PerTeam(8))
        .set_scratch_size(0, pk.PerThread(24))
    )
    message = "ScratchView1D needs 32 bytes of level-0 thread scratch but only 8 are left"
    with pytest.raises(pk.KernelTeamError, match=re.escape(message)):
        pk.parallel_for(tight, pooled_scratch, out=np.zeros((1, 2), np.int64), n=4)


def test_exception_in_one_member_is_reraised_and_threads_end() -> None:
    out = np.zeros(3)
    before = threading.active_count()
    with pytest.raises(IndexError) as info:
        pk.parallel_for(pk.TeamPolicy(pk.Debug, 2, 3), fails_in_one_member, out=out)
    assert threading.active_count() == before
    # The innermost frame of the program is the kernel's line (below it: the view class).
    last = [e for e in info.traceback if not str(e.path).startswith(os.path.dirname(pk.__file__))]
    assert os.path.samefile(str(last[-1].path), fails_in_one_member.__code__.co_filename)
    assert last[-1].lineno + 1 == line_of(fails_in_one_member, "out[len(out)] = 1.0")
    assert out.tolist() == [0.0, 0.0, 0.0]  # the others stopped at the barrier
