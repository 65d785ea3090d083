"""TeamPolicy kernels shared by the team tests of every space (test_teams.py: OpenMP,
Serial, Debug; test_teams_debug.py: the Debug space's Python teams; test_cuda.py: the
GPU)."""

import pkernels as pk


@pk.workunit
def team_yax(team_member: pk.TeamMember, acc: pk.Acc[float], cols: int, y, x, A):
    j: int = team_member.league_rank()

    def inner(i: int, inner_acc: pk.Acc[float]):
        inner_acc += A[j][i] * x[i]

    temp2: float = pk.parallel_reduce(pk.TeamThreadRange(team_member, cols), inner)
    if team_member.team_rank() == 0:
        acc += y[j] * temp2


@pk.workunit
def reverse_rows(team_member: pk.TeamMember, out, inp, m: int):
    row: int = team_member.league_rank()
    s: pk.ScratchView1D[pk.double] = pk.ScratchView1D(team_member.team_scratch(0), m)

    def stage(i: int):
        s[i] = inp[row, i]

    pk.parallel_for(pk.TeamThreadRange(team_member, m), stage)
    team_member.team_barrier()

    def write(i: int):
        out[row, i] = s[m - 1 - i]

    pk.parallel_for(pk.TeamThreadRange(team_member, m), write)


@pk.workunit
def row_prefix(team_member: pk.TeamMember, out, totals, inp):
    row: int = team_member.league_rank()

    def scan(i: int, partial: pk.Acc[pk.int64], last_pass: bool):
        partial += inp[row, i]
        if last_pass:
            out[row, i] = partial

    total: int = pk.parallel_scan(pk.TeamThreadRange(team_member, inp.extent(1)), scan)
    if team_member.team_rank() == 0:
        totals[row] = total


@pk.workunit
def box_fill_and_sum(team_member: pk.TeamMember, acc: pk.Acc[pk.int64], out):
    b: int = team_member.league_rank()

    def fill(i: int, j: int):
        out[b, i, j] = 100 * b + 10 * i + j

    pk.parallel_for(pk.TeamThreadMDRange(team_member, out.extent(1), out.extent(2)), fill)

    def add(i: int, j: int, part: pk.Acc[pk.int64]):
        part += 100 * b + 10 * i + j

    s: int = pk.parallel_reduce(
        pk.TeamThreadMDRange(team_member, out.extent(1), out.extent(2)), add
    )
    if team_member.team_rank() == 0:
        acc += s


@pk.workunit
def matrix_rows_vector(team_member: pk.TeamMember, out, A, x):
    """Rows of a block split among the team; each row's dot product a ThreadVectorRange."""
    block: int = team_member.league_rank()
    rows_per_team: int = out.extent(0) // team_member.league_size()

    def row(r: int):
        i: int = block * rows_per_team + r

        def dot(k: int, part: pk.Acc[float]):
            part += A[i, k] * x[k]

        out[i] = pk.parallel_reduce(pk.ThreadVectorRange(team_member, A.extent(1)), dot)

    pk.parallel_for(pk.TeamThreadRange(team_member, rows_per_team), row)


@pk.workunit
def once_per_team(team_member: pk.TeamMember, count, sizes):
    def mark():
        pk.atomic_add(count, [0], 1)
        sizes[team_member.league_rank()] = team_member.team_size()

    pk.single(pk.PerTeam(team_member), mark)


@pk.workunit
def row_totals_through_nonlocal(team_member: pk.TeamMember, acc: pk.Acc[pk.double], A, out):
    # The PyKokkos tutorials' team_vector_loop: `nonlocal acc` in the pk.single body adds
    # the team's total to the workunit's accumulator once per team.
    row: int = team_member.league_rank()
    total: float = 0.0
    count: int = 0

    def add(j: int):
        nonlocal total, count
        total = total + A[row, j]  # a plain assignment: the workunit's `total`
        count = count + 1

    pk.parallel_for(pk.ThreadVectorRange(team_member, A.extent(1)), add)

    def once():
        nonlocal acc
        acc += total

    pk.single(pk.PerTeam(team_member), once)
    if team_member.team_rank() == 0:
        out[row] = count


@pk.workunit
def own_scratch(team_member: pk.TeamMember, out, n: int):
    mine: pk.ScratchView1D[pk.int64] = pk.ScratchView1D(team_member.thread_scratch(0), n)
    r: int = team_member.team_rank()
    for k in range(n):
        mine[k] = r * 1000 + k
    team_member.team_barrier()
    total: int = 0
    for k in range(n):
        total += mine[k]
    out[team_member.league_rank(), r] = total


@pk.workunit
def pooled_scratch(team_member: pk.TeamMember, out, n: int):
    """A team piece, each thread's piece, then another team piece: one level-0 pool, as
    in Kokkos. out[league, rank] = 5 + the team's n sevens + this thread's own n values."""
    shared: pk.ScratchView1D[pk.int64] = pk.ScratchView1D(team_member.team_scratch(0), n)
    mine: pk.ScratchView1D[pk.int64] = pk.ScratchView1D(team_member.thread_scratch(0), n)
    last: pk.ScratchView1D[pk.int64] = pk.ScratchView1D(team_member.team_scratch(0), 1)
    r: int = team_member.team_rank()
    for k in range(n):
        mine[k] = r * 1000 + k
    if r == 0:
        for k in range(n):
            shared[k] = 7
        last[0] = 5
    team_member.team_barrier()
    total: int = last[0]
    for k in range(n):
        total += shared[k] + mine[k]
    out[team_member.league_rank(), r] = total


def pooled_scratch_expected(league: int, team: int, n: int):
    """What :func:`pooled_scratch` writes."""
    import numpy as np

    row = [5 + 7 * n + r * 1000 * n + n * (n - 1) // 2 for r in range(team)]
    return np.tile(np.array(row, dtype=np.int64), (league, 1))


@pk.workunit
def divergent_barrier_at_run_time(team_member: pk.TeamMember, tickets):
    ticket: int = pk.atomic_fetch_add(tickets, [team_member.league_rank()], 1)
    if ticket == 0:
        team_member.team_barrier()


@pk.workunit
def row_extremes(team_member: pk.TeamMember, A, largest, smallest, product, positive, bits):
    # Nested reduces with Kokkos' reducers, over each kind of team range.
    r: int = team_member.league_rank()

    def biggest(j: int, acc: pk.Acc[pk.double]):
        if A[r, j] > acc:
            acc = A[r, j]

    def least(j: int, acc: pk.Acc[pk.double]):
        acc = min(acc, A[r, j])

    def times(j: int, acc: pk.Acc[pk.double]):
        acc *= A[r, j]

    def all_positive(j: int, acc: pk.Acc[pk.bool]):
        acc = acc and A[r, j] > 0

    def bit_of(j: int, acc: pk.Acc[pk.int64]):
        acc |= 1 << (j % 60)

    n = A.extent(1)
    largest[r] = pk.parallel_reduce(pk.TeamThreadRange(team_member, n), biggest, reducer=pk.Max)
    smallest[r] = pk.parallel_reduce(pk.TeamVectorRange(team_member, n), least, reducer=pk.Min)
    p: float = pk.parallel_reduce(pk.ThreadVectorRange(team_member, n), times, reducer=pk.Prod)
    product[r] = p
    positive[r] = pk.parallel_reduce(
        pk.TeamThreadRange(team_member, n), all_positive, reducer=pk.LAnd
    )
    bits[r] = pk.parallel_reduce(pk.TeamThreadRange(team_member, n), bit_of, reducer=pk.BOr)


@pk.workunit
def team_extremes_where(team_member: pk.TeamMember, acc: pk.Acc[pk.double], A):
    row: int = team_member.league_rank()
    j: int = team_member.team_rank()
    while j < A.extent(1):
        if A[row, j] < acc.min_val:
            acc.min_val = A[row, j]
            acc.min_loc = row * A.extent(1) + j
        if A[row, j] > acc.max_val:
            acc.max_val = A[row, j]
            acc.max_loc = row * A.extent(1) + j
        j += team_member.team_size()
