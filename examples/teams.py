"""Hierarchical parallelism with pkernels: the Kokkos tutorial's yAx with a team per row
and a TeamThreadRange reduction over its columns, and a kernel that stages each row in
team scratch memory, synchronises with a barrier and writes it back reversed.

    python examples/teams.py            # OpenMP, teams of 2 threads
    pkdb examples/teams.py              # the same under the debugger
"""

import sys

import numpy as np

import pkernels as pk


@pk.workunit
def yAx(team_member: pk.TeamMember, acc: pk.Acc[float], cols: int, y, x, A):
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


def main(space: pk.ExecutionSpace = pk.OpenMP, team_size: object = 2) -> None:
    rows, cols = 6, 8
    A = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols) / 10
    x = np.ones(cols)
    y = np.linspace(1.0, 2.0, rows)
    policy = pk.TeamPolicy(space, rows, team_size)
    result = pk.parallel_reduce(policy, yAx, cols=cols, y=y, x=x, A=A)
    print(f"yAx = {result:.4f} (NumPy: {y @ A @ x:.4f})")

    out = np.zeros_like(A)
    scratch = pk.ScratchView1D[pk.double].shmem_size(cols)
    policy = pk.TeamPolicy(space, rows, team_size).set_scratch_size(0, pk.PerTeam(scratch))
    pk.parallel_for(policy, reverse_rows, out=out, inp=A, m=cols)
    print("rows reversed:", bool(np.array_equal(out, A[:, ::-1])))


if __name__ == "__main__":
    chosen = getattr(pk, sys.argv[1]) if len(sys.argv) > 1 else pk.OpenMP
    main(chosen, pk.AUTO if chosen is pk.Serial else 2)
