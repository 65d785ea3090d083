"""examples/md.py's time loop on the GPU: its kernels, dispatched on pk.Cuda over CuPy
arrays (md.py itself makes NumPy arrays, which pk.Cuda refuses).

    python _md_gpu.py [CELLS] [STEPS]

The GPU rows of the paper report's part (b); needs CuPy and an NVIDIA GPU.
"""

import importlib.util
import math
import sys
from pathlib import Path

import cupy as cp
import numpy as np

import pkernels as pk

_spec = importlib.util.spec_from_file_location(
    "md", Path(__file__).resolve().parents[2] / "examples" / "md.py"
)
md = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(md)


def run(cells: int = 5, steps: int = 100, dt: float = 0.004) -> float:
    x_host, box = md.fcc_lattice(cells, density=0.8442)
    n = len(x_host)
    rng = np.random.default_rng(7)
    v_host = rng.normal(0.0, math.sqrt(1.44), (n, 3))
    v_host -= v_host.mean(axis=0)
    x, v, f = cp.asarray(x_host), cp.asarray(v_host), cp.zeros((n, 3))
    rc2 = 2.5**2
    policy = pk.RangePolicy(pk.Cuda, 0, n)
    pk.parallel_for(policy, md.compute_forces, n=n, box=box, rc2=rc2, x=x, f=f)
    for _ in range(steps):
        pk.parallel_for(policy, md.initial_integrate, dt=dt, box=box, x=x, v=v, f=f)
        pk.parallel_for(policy, md.compute_forces, n=n, box=box, rc2=rc2, x=x, f=f)
        pk.parallel_for(policy, md.final_integrate, dt=dt, v=v, f=f)
    kinetic = pk.parallel_reduce(policy, md.kinetic_energy, v=v)
    potential = pk.parallel_reduce(policy, md.potential_energy, n=n, box=box, rc2=rc2, x=x)
    total = kinetic + potential
    print(f"{n} atoms, {steps} steps on the GPU: E {total / n:.6f} per atom")
    return total


if __name__ == "__main__":
    run(*(int(a) for a in sys.argv[1:3]))
