"""A PyKokkos-style program: the Kokkos tutorial's yAx written as a functor class whose
workunit takes a subview of its row (`row = self.A[j, :]`), timed with pk.Timer.

    python examples/functor_subview.py            # OpenMP
    pkdb examples/functor_subview.py              # under the debugger: `p row` at a stop
"""

import numpy as np

import pkernels as pk


@pk.functor(A=pk.ViewTypeInfo(layout=pk.LayoutRight))
class YAx:
    def __init__(self, rows: int, cols: int) -> None:
        rng = np.random.default_rng(0)
        self.y = pk.array(rng.random(rows))
        self.x = pk.array(rng.random(cols))
        self.A = pk.array(rng.random((rows, cols)))

    @pk.workunit
    def row_product(self, j: int, acc: pk.Acc[pk.double]):
        row = self.A[j, :]
        temp2: float = 0.0
        for i in range(len(row)):
            temp2 += row[i] * self.x[i]
        acc += self.y[j] * temp2


def run() -> None:
    rows, cols = 512, 1024
    work = YAx(rows, cols)
    timer = pk.Timer()
    total = pk.parallel_reduce(pk.RangePolicy(pk.OpenMP, 0, rows), work.row_product)
    seconds = timer.seconds()
    expected = work.y @ (work.A @ work.x)
    agrees = abs(total - expected) <= 1e-9 * abs(expected)
    print(f"yAx = {total:.6f} (NumPy: {expected:.6f}, {'matches' if agrees else 'DIFFERS'})")
    print(f"first call (compile + run): {seconds:.3f} s")


if __name__ == "__main__":
    run()
