"""TeamPolicy kernels (hierarchical parallelism) on the native spaces, release and debug
builds: nested TeamThreadRange / ThreadVectorRange / TeamThreadMDRange bodies, team
reductions and scans, scratch memory, barriers, pk.single, and the errors of a wrong
team setup. Every result is checked against NumPy."""

from __future__ import annotations

import re

import numpy as np
import pytest
from pkt_support import ForceDebugBuild, observing
from team_kernels import (
    box_fill_and_sum,
    divergent_barrier_at_run_time,
    matrix_rows_vector,
    once_per_team,
    own_scratch,
    pooled_scratch,
    pooled_scratch_expected,
    reverse_rows,
    row_extremes,
    row_prefix,
    row_totals_through_nonlocal,
    team_yax,
)

import pkernels as pk

# (space, team size): the CPU spaces' teams. OpenMP teams are real threads, also more of
# them than this machine has cores; Serial runs teams of one.
TEAM_SETUPS = [
    (pk.OpenMP, pk.AUTO),
    (pk.OpenMP, 1),
    (pk.OpenMP, 3),
    (pk.OpenMP, 4),
    (pk.Serial, pk.AUTO),
]
BUILDS = ["release", "debug"]


def _run(build: str, fn, *args, **kwargs):
    if build == "debug":
        with observing(ForceDebugBuild()) as obs:
            result = fn(*args, **kwargs)
        assert obs.launched and all(k.debug for k in obs.launched)
        return result
    return fn(*args, **kwargs)


@pk.workunit
def early_return_body(team_member: pk.TeamMember, out):
    def body(i: int):
        if i % 2 == 1:
            return
        for k in range(3):
            if k == 1:
                return
            out[team_member.league_rank(), i] += 1 + k

    pk.parallel_for(pk.TeamThreadRange(team_member, out.extent(1)), body)


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("space,team", TEAM_SETUPS)
def test_tutorial_yax_with_a_team_per_row(space, team, build):
    rng = np.random.default_rng(1)
    rows, cols = 37, 29
    A, x, y = rng.random((rows, cols)), rng.random(cols), rng.random(rows)
    policy = pk.TeamPolicy(space, rows, team)
    result = _run(build, pk.parallel_reduce, policy, team_yax, cols=cols, y=y, x=x, A=A)
    assert isinstance(result, float)
    assert result == pytest.approx(y @ A @ x, rel=1e-12)


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("space,team", TEAM_SETUPS)
def test_scratch_and_barrier_reverse_each_row(space, team, build):
    rng = np.random.default_rng(2)
    league, m = 9, 13  # 13 is no multiple of 3 or 4: the last thread gets a short chunk
    inp = rng.random((league, m))
    out = np.zeros_like(inp)
    scratch = pk.ScratchView1D[pk.double].shmem_size(m)
    policy = pk.TeamPolicy(space, league, team).set_scratch_size(0, pk.PerTeam(scratch))
    _run(build, pk.parallel_for, policy, reverse_rows, out=out, inp=inp, m=m)
    np.testing.assert_array_equal(out, inp[:, ::-1])


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("space,team", TEAM_SETUPS)
def test_nested_scan_gives_each_row_its_prefix_sums(space, team, build):
    inp = np.arange(5 * 11, dtype=np.int64).reshape(5, 11) % 7 - 2
    out = np.zeros_like(inp)
    totals = np.zeros(5, dtype=np.int64)
    policy = pk.TeamPolicy(space, 5, team)
    _run(build, pk.parallel_for, policy, row_prefix, out=out, totals=totals, inp=inp)
    np.testing.assert_array_equal(out, np.cumsum(inp, axis=1))
    np.testing.assert_array_equal(totals, inp.sum(axis=1))


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("space,team", TEAM_SETUPS)
def test_team_thread_md_range_for_and_reduce(space, team, build):
    out = np.zeros((3, 4, 5), dtype=np.int64)
    total = _run(
        build, pk.parallel_reduce, pk.TeamPolicy(space, 3, team), box_fill_and_sum, out=out
    )
    b, i, j = np.indices(out.shape)
    np.testing.assert_array_equal(out, 100 * b + 10 * i + j)
    assert total == int(out.sum())


def _row_extremes(space, team, A):
    n = len(A)
    out = {
        "largest": np.zeros(n), "smallest": np.zeros(n), "product": np.zeros(n),
        "positive": np.zeros(n, bool), "bits": np.zeros(n, np.int64),
    }  # fmt: skip
    pk.parallel_for(pk.TeamPolicy(space, n, team), row_extremes, A=A, **out)
    return out


ROWS = np.random.default_rng(8).uniform(0.5, 1.5, (7, 37))
ROWS[2, 5] = -1.0


@pytest.mark.parametrize("build", [*BUILDS, "Debug space"])
@pytest.mark.parametrize("space,team", TEAM_SETUPS)
def test_nested_reduces_with_reducers(space, team, build):
    # Each thread starts from the reducer's identity; the team combines in rank order.
    if build == "Debug space":
        space, team = pk.Debug, 3 if team is pk.AUTO else team
    out = _run(build, _row_extremes, space, team, ROWS)
    assert out["largest"].tolist() == ROWS.max(axis=1).tolist()
    assert out["smallest"].tolist() == ROWS.min(axis=1).tolist()
    np.testing.assert_allclose(out["product"], ROWS.prod(axis=1), rtol=1e-13)
    assert out["positive"].tolist() == (ROWS > 0).all(axis=1).tolist()
    assert (out["bits"] == 2**37 - 1).all()


@pytest.mark.parametrize("space,team", TEAM_SETUPS)
def test_thread_vector_range_inside_a_team_thread_range(space, team):
    rng = np.random.default_rng(3)
    A, x = rng.random((12, 7)), rng.random(7)
    out = np.zeros(12)
    pk.parallel_for(pk.TeamPolicy(space, 4, team), matrix_rows_vector, out=out, A=A, x=x)
    np.testing.assert_allclose(out, A @ x, rtol=1e-13)


@pytest.mark.parametrize("space,team", TEAM_SETUPS)
def test_single_per_team_runs_once_per_team(space, team):
    count = np.zeros(1, dtype=np.int64)
    sizes = np.zeros(6, dtype=np.int64)
    pk.parallel_for(pk.TeamPolicy(space, 6, team), once_per_team, count=count, sizes=sizes)
    assert count[0] == 6
    expected = 1 if team is pk.AUTO else team
    np.testing.assert_array_equal(sizes, expected)


@pytest.mark.parametrize("build", BUILDS)
def test_thread_scratch_is_each_threads_own(build):
    n, team, league = 5, 3, 4
    out = np.zeros((league, team), dtype=np.int64)
    policy = pk.TeamPolicy(pk.OpenMP, league, team).set_scratch_size(
        0, pk.PerThread(pk.ScratchView1D[pk.int64].shmem_size(n))
    )
    _run(build, pk.parallel_for, policy, own_scratch, out=out, n=n)
    expected = np.array([r * 1000 * n + n * (n - 1) // 2 for r in range(team)])
    np.testing.assert_array_equal(out, np.tile(expected, (league, 1)))


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("team", [1, 3])
def test_team_and_thread_scratch_share_one_pool_per_level(build, team):
    # As in Kokkos: pieces are handed out in order from PerTeam + team_size x PerThread
    # bytes, so a team piece may use bytes reserved PerThread (PyKokkos' own scratch test
    # reserves PerThread and allocates team_scratch), and pieces never overlap.
    n, league = 4, 3
    size = pk.ScratchView1D[pk.int64].shmem_size
    out = np.zeros((league, team), dtype=np.int64)
    policy = (
        pk.TeamPolicy(pk.OpenMP, league, team)
        .set_scratch_size(0, pk.PerTeam(size(n) + size(1)))
        .set_scratch_size(0, pk.PerThread(size(n)))
    )
    _run(build, pk.parallel_for, policy, pooled_scratch, out=out, n=n)
    np.testing.assert_array_equal(out, pooled_scratch_expected(league, team, n))

    inp = np.arange(12.0).reshape(3, 4)
    reversed_ = np.zeros_like(inp)
    per_thread_only = pk.TeamPolicy(pk.OpenMP, 3, team).set_scratch_size(
        0, pk.PerThread(pk.ScratchView1D[pk.double].shmem_size(4))
    )
    _run(build, pk.parallel_for, per_thread_only, reverse_rows, out=reversed_, inp=inp, m=4)
    np.testing.assert_array_equal(reversed_, inp[:, ::-1])


@pytest.mark.parametrize("build", BUILDS)
def test_scratch_past_the_pool_names_what_is_left(build):
    # The pool is 8 (PerTeam) + 2 x 24 (PerThread) = 56 bytes: the team piece of 32 takes
    # 32, leaving 24, which is 8 per thread for a thread piece (wanted: 32 each).
    policy = (
        pk.TeamPolicy(pk.OpenMP, 1, 2)
        .set_scratch_size(0, pk.PerTeam(8))
        .set_scratch_size(0, pk.PerThread(24))
    )
    with pytest.raises(pk.KernelTeamError) as info:
        _run(build, pk.parallel_for, policy, pooled_scratch, out=np.zeros((1, 2), np.int64), n=4)
    message = str(info.value)
    assert (
        "ScratchView1D 'mine' needs 32 bytes of level-0 thread scratch but only 8 are left"
        in message
    )
    assert "set_scratch_size(0, pk.PerThread(...))" in message


@pytest.mark.parametrize("build", BUILDS)
def test_return_in_a_nested_body_ends_that_index_only(build):
    out = np.zeros((2, 9), dtype=np.int64)
    _run(build, pk.parallel_for, pk.TeamPolicy(pk.OpenMP, 2, 2), early_return_body, out=out)
    expected = np.where(np.arange(9) % 2 == 0, 1, 0)
    np.testing.assert_array_equal(out, np.tile(expected, (2, 1)))


def test_teams_larger_than_the_machine_still_run():
    rng = np.random.default_rng(4)
    inp = rng.random((3, 40))
    out = np.zeros_like(inp)
    scratch = pk.ScratchView1D[pk.double].shmem_size(40)
    policy = pk.TeamPolicy(pk.OpenMP, 3, 16).set_scratch_size(0, pk.PerTeam(scratch))
    pk.parallel_for(policy, reverse_rows, out=out, inp=inp, m=40)
    np.testing.assert_array_equal(out, inp[:, ::-1])


# ---------------------------------------------------------------- a wrong team setup


def test_team_size_zero_and_bad_vector_length_are_refused():
    with pytest.raises(ValueError, match="team_size must be at least 1, got 0"):
        pk.TeamPolicy(pk.OpenMP, 4, 0)
    with pytest.raises(ValueError, match="vector_length must be a power of two, got 3"):
        pk.TeamPolicy(pk.OpenMP, 4, 2, 3)
    with pytest.raises(ValueError, match="exceeds the limit of 1024"):
        pk.TeamPolicy(pk.OpenMP, 4, 2048)


def test_scratch_beyond_the_per_team_limit_is_refused():
    with pytest.raises(pk.DispatchError, match=r"scratch level 0 needs 40000 bytes .* 32768"):
        pk.TeamPolicy(pk.OpenMP, 4, 2).set_scratch_size(0, pk.PerTeam(40000))
    policy = pk.TeamPolicy(pk.OpenMP, 4, pk.AUTO).set_scratch_size(0, pk.PerThread(10000))
    policy.team_size = 4  # a PerThread size that fits one thread but not a team of four
    with pytest.raises(pk.DispatchError, match=r"4 threads x 10000 per thread"):
        pk.parallel_for(policy, reverse_rows, out=np.zeros((4, 2)), inp=np.zeros((4, 2)), m=2)


def test_serial_teams_have_one_thread():
    with pytest.raises(pk.DispatchError, match="Serial space runs teams of one thread"):
        pk.parallel_for(
            pk.TeamPolicy(pk.Serial, 2, 2), reverse_rows, out=np.zeros((2, 2)),
            inp=np.zeros((2, 2)), m=2,
        )  # fmt: skip


def test_scan_over_a_team_policy_is_refused():
    with pytest.raises(pk.DispatchError, match="parallel_scan over a TeamPolicy"):
        pk.parallel_scan(pk.TeamPolicy(pk.OpenMP, 2, 1), team_yax, cols=1, y=None, x=None, A=None)


@pytest.mark.parametrize("build", BUILDS)
def test_too_little_scratch_is_a_kernel_error_not_a_crash(build):
    inp = np.ones((2, 8))
    policy = pk.TeamPolicy(pk.OpenMP, 2, 2).set_scratch_size(0, pk.PerTeam(16))
    with pytest.raises(pk.KernelTeamError) as info:
        _run(build, pk.parallel_for, policy, reverse_rows, out=np.zeros_like(inp), inp=inp, m=8)
    message = str(info.value)
    assert (
        "ScratchView1D 's' needs 64 bytes of level-0 team scratch but only 16 are left" in message
    )
    assert "set_scratch_size(0, pk.PerTeam(...))" in message
    assert "team_kernels.py:" in message


@pytest.mark.parametrize("build", BUILDS)
def test_a_barrier_only_some_threads_reach_is_reported_not_a_hang(build):
    tickets = np.zeros(3, dtype=np.int64)
    with pytest.raises(pk.KernelTeamError) as info:
        _run(
            build, pk.parallel_for, pk.TeamPolicy(pk.OpenMP, 3, 2),
            divergent_barrier_at_run_time, tickets=tickets,
        )  # fmt: skip
    line = divergent_barrier_at_run_time.__code__.co_firstlineno + 4  # the barrier's line
    message = str(info.value)
    kernels = divergent_barrier_at_run_time.__code__.co_filename
    assert re.match(rf".*team_kernels.py:{line}: team_barrier\(\) mismatch in league \d", message)
    assert re.search(rf"team_rank [01] waits at {re.escape(kernels)}:{line}", message)
    assert "at the end of the workunit" in message


def _translation_error(make_module, source: str, policy_team: int = 2) -> pk.TranslationError:
    module = make_module("import pkernels as pk\n" + source)
    with pytest.raises(pk.TranslationError) as info:
        pk.parallel_for(pk.TeamPolicy(pk.OpenMP, 2, policy_team), module.k, out=np.zeros((2, 4)))
    return info.value


def test_barrier_under_a_team_rank_branch_is_refused_with_a_caret(make_module):
    err = _translation_error(
        make_module,
        """
@pk.workunit
def k(team_member: pk.TeamMember, out):
    r: int = team_member.team_rank()
    if r == 0:
        out[0, 0] = 1
        team_member.team_barrier()
""",
    )
    assert err.lineno == 8
    assert "team_barrier() under a condition on team_rank()" in str(err)
    assert err.col == 8
    assert "\n            team_member.team_barrier()\n            ^" in str(err)


def test_barrier_in_a_nested_body_and_nested_team_ranges_are_refused(make_module):
    err = _translation_error(
        make_module,
        """
@pk.workunit
def k(team_member: pk.TeamMember, out):
    def body(i: int):
        team_member.team_barrier()
    pk.parallel_for(pk.TeamThreadRange(team_member, 4), body)
""",
    )
    assert "team_barrier() inside a nested parallel body" in str(err) and err.lineno == 6
    err = _translation_error(
        make_module,
        """
@pk.workunit
def k(team_member: pk.TeamMember, out):
    def inner(j: int):
        out[0, j] = 1
    def outer(i: int):
        pk.parallel_for(pk.TeamThreadRange(team_member, 4), inner)
    pk.parallel_for(pk.TeamThreadRange(team_member, 4), outer)
""",
    )
    assert "a team-split range inside another one" in str(err)
    assert "ThreadVectorRange" in err.hint


def test_misused_team_member_and_bodies_get_clear_errors(make_module):
    err = _translation_error(
        make_module,
        """
@pk.workunit
def k(team_member: pk.TeamMember, out):
    out[0, 0] = team_member.team_id()
""",
    )
    assert "the team member has no method 'team_id'" in str(err)
    err = _translation_error(
        make_module,
        """
@pk.workunit
def k(team_member: pk.TeamMember, out):
    pk.parallel_for(pk.TeamThreadRange(team_member, 4), lambda i: None)
""",
    )
    assert "the body must be a nested def, not a lambda" in str(err)
    err = _translation_error(
        make_module,
        """
@pk.workunit
def k(team_member: pk.TeamMember, out):
    def body(i: int, j: int):
        out[i, j] = 1
    pk.parallel_for(pk.TeamThreadRange(team_member, 4), body)
""",
    )
    assert "body() is the body of a nested parallel_for over a team_thread range: it takes (i)" in (
        str(err)
    )
    err = _translation_error(
        make_module,
        """
@pk.workunit
def k(team_member: pk.TeamMember, out):
    s: pk.ScratchView1D[pk.double] = pk.ScratchView1D(team_member.team_scratch(2), 4)
""",
    )
    assert "level 0 or 1" in str(err)


def test_what_a_nested_reducer_cannot_be_is_refused(make_module):
    body = """
@pk.workunit
def k(team_member: pk.TeamMember, out):
    def body(j: int, acc: pk.Acc[pk.double]):
        acc = max(acc, out[0, j])
    out[0, 0] = pk.parallel_reduce(pk.TeamThreadRange(team_member, 4), body, reducer=REDUCER)
"""
    err = _translation_error(make_module, body.replace("REDUCER", "pk.MaxLoc"))
    assert "pk.MaxLoc reduces several values: it is for a whole dispatch" in str(err)
    err = _translation_error(make_module, body.replace("REDUCER", "max"))
    assert "reducer= of a nested parallel_reduce takes one of pk.Sum, pk.Prod" in str(err)
    err = _translation_error(make_module, body.replace("REDUCER", "pk.BAnd"))
    assert "pk.BAnd reduces integers (its accumulator is float64)" in str(err)
    assert "def body(j: int, acc: pk.Acc[pk.double]):" in str(err)  # at the accumulator
    err = _translation_error(
        make_module,
        """
@pk.workunit
def k(team_member: pk.TeamMember, out):
    def body(j: int):
        out[0, j] = 1
    pk.parallel_for(pk.TeamThreadRange(team_member, 4), body, reducer=pk.Max)
""",
    )
    assert "a nested pk.parallel_for takes (range, body)" in str(err)


def test_a_nested_body_shadows_the_workunits_names_as_python_does(make_module):
    module = make_module(
        """
import pkernels as pk

@pk.workunit
def k(team_member: pk.TeamMember, out):
    x: int = 7
    def body(i: int):
        x = i * 2          # the body's own x
        out[team_member.league_rank(), i] = x
    pk.parallel_for(pk.TeamThreadRange(team_member, out.extent(1)), body)
    out[team_member.league_rank(), 0] = x  # still the workunit's
"""
    )
    for space in (pk.OpenMP, pk.Serial, pk.Debug):
        out = np.zeros((3, 5), dtype=np.int64)
        pk.parallel_for(pk.TeamPolicy(space, 3, 1), module.k, out=out)
        expected = np.tile(np.arange(5) * 2, (3, 1))
        expected[:, 0] = 7
        np.testing.assert_array_equal(out, expected)


def test_nonlocal_in_a_nested_body_writes_the_workunits_variable():
    A = np.random.default_rng(5).random((6, 9))
    for space, team in [(pk.OpenMP, 2), (pk.OpenMP, pk.AUTO), (pk.Serial, 1), (pk.Debug, 2)]:
        out = np.zeros(6, dtype=np.int64)
        total = pk.parallel_reduce(
            pk.TeamPolicy(space, 6, team), row_totals_through_nonlocal, A=A, out=out
        )
        assert total == pytest.approx(A.sum(), rel=1e-13), space
        np.testing.assert_array_equal(out, 9)


def test_nonlocal_of_a_view_or_of_a_variable_outside_the_workunit_is_an_error(make_module):
    module = make_module(
        """
import pkernels as pk

def make(scale):
    @pk.workunit
    def k(team_member: pk.TeamMember, out):
        def once():
            nonlocal scale
            scale = 2
        pk.single(pk.PerTeam(team_member), once)
    return k

@pk.workunit
def k2(team_member: pk.TeamMember, out):
    def once():
        nonlocal out
        out = 1
    pk.single(pk.PerTeam(team_member), once)
"""
    )
    policy = pk.TeamPolicy(pk.OpenMP, 2, 1)
    with pytest.raises(pk.TranslationError, match="nonlocal 'scale' names a variable outside"):
        pk.parallel_for(policy, module.make(3), out=np.zeros(2))
    with pytest.raises(pk.TranslationError, match="'out' is a view: write its elements"):
        pk.parallel_for(policy, module.k2, out=np.zeros(2))
