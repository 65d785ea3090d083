"""Kernels of the Cuda launch tests run on the stand-in CuPy (test_cuda_launch.py,
test_cuda_fast.py)."""

import pkernels as pk


@pk.workunit
def scale(i, out, x, a: float):
    out[i] = a * x[i]


@pk.workunit
def fill_rows(j, A, value: float):
    for i in range(A.extent(1)):
        A[j][i] = value


@pk.workunit
def fill_cell(i, j, A, value: float):
    A[i][j] = value


@pk.workunit
def first_of_row(team_member: pk.TeamMember, out, value: float):
    out[team_member.league_rank()] = value
