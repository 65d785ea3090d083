"""yAx: y^T A x, the example of Figure 1 of the PKDB paper, on OpenMP threads.

Run it:   python examples/yax.py [N] [M]
Debug it: pkdb examples/yax.py
"""

import sys

import numpy as np

import pkernels as pk


@pk.workunit
def yAx(j, acc, cols, y_view, x_view, A_view):
    temp2: float = 0
    for i in range(cols):
        temp2 += A_view[j][i] * x_view[i]

    acc += y_view[j] * temp2


def run(N: int = 256, M: int = 1024) -> float:
    rng = np.random.default_rng(0)
    y = rng.random(N)
    x = rng.random(M)
    A = rng.random((N, M))

    space = pk.RangePolicy(pk.ExecutionSpace.OpenMP, 0, N)
    result = pk.parallel_reduce(space, yAx, cols=M, y_view=y, x_view=x, A_view=A)
    expected = y @ A @ x
    print(f"yAx = {result:.6f} (NumPy: {expected:.6f})")
    return result


if __name__ == "__main__":
    run(*(int(a) for a in sys.argv[1:3]))
