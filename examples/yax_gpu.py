"""yAx on the GPU (pk.Cuda): the session of Figure 2 of the PKDB paper. Run it:
python examples/yax_gpu.py [N] [M] [repeats]; debug it: pkdb examples/yax_gpu.py, then
    (pkdb) break 24 if j == 10
    (pkdb) continue
    > .../yax_gpu.py(24)yAx()
    CUDA block 0, thread 10 (j=10) hit breakpoint 1
    -> temp2 += A_view[j][i] * x_view[i]
    (pkdb-cuda) p y_view[0:2]
Needs CuPy, an NVIDIA GPU and, to stop in the kernel, cuda-gdb.
"""

import sys

import cupy as cp
import numpy as np

import pkernels as pk


@pk.workunit
def yAx(j, acc, cols, y_view, x_view, A_view):
    temp2: float = 0
    for i in range(cols):
        temp2 += A_view[j][i] * x_view[i]

    acc += y_view[j] * temp2


@pk.workunit
def scale(i, out, a: float):
    out[i] = a * out[i]


def run(N: int = 256, M: int = 1024, repeats: int = 1) -> float:
    rng = np.random.default_rng(0)
    y = cp.asarray(rng.random(N))
    x = cp.asarray(rng.random(M))
    A = cp.asarray(rng.random((N, M)))

    policy = pk.RangePolicy(pk.Cuda, 0, N)
    result = 0.0
    for _ in range(repeats):
        result = pk.parallel_reduce(policy, yAx, cols=M, y_view=y, x_view=x, A_view=A)
    expected = float(y @ A @ x)
    print(f"yAx = {result:.6f} (CuPy: {expected:.6f})")
    return result


if __name__ == "__main__":
    run(*(int(a) for a in sys.argv[1:4]))
