"""A 1D halo exchange over MPI ranks, one OpenMP kernel per rank: a run for pkdb --np.

Each rank owns N cells of a rod (plus one ghost cell at each end), swaps its edge
cells with its neighbours, then smooths its cells with a kernel. Rank 0 prints the
rod's total at the end.

Run it:    mpirun -n 4 python examples/halo_mpi.py [N] [STEPS]
Debug it:  pkdb --np 4 examples/halo_mpi.py [N] [STEPS]
"""

import sys

import numpy as np
from mpi4py import MPI

import pkernels as pk


@pk.workunit
def smooth(i, u, v):
    left = u[i - 1]
    right = u[i + 1]
    v[i] = 0.5 * u[i] + 0.25 * (left + right)


def exchange(comm, u, left, right):
    """Fill the ghost cells u[0] and u[-1] with the neighbours' edge cells."""
    comm.Sendrecv(u[1:2], dest=left, recvbuf=u[-1:], source=right)
    comm.Sendrecv(u[-2:-1], dest=right, recvbuf=u[0:1], source=left)


def main(n: int = 8, steps: int = 3) -> float:
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    left = rank - 1 if rank > 0 else MPI.PROC_NULL
    right = rank + 1 if rank < size - 1 else MPI.PROC_NULL
    u = np.zeros(n + 2)
    u[1:-1] = rank * n + np.arange(n, dtype=float)
    v = u.copy()
    policy = pk.RangePolicy(pk.OpenMP, 1, n + 1)
    for _ in range(steps):
        exchange(comm, u, left, right)
        pk.parallel_for(policy, smooth, u=u, v=v)
        u, v = v, u
    total = comm.allreduce(float(u[1:-1].sum()))
    if rank == 0:
        print(f"total {total:.6f} over {size} ranks")
    return total


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
