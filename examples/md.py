"""Lennard-Jones molecular dynamics (velocity Verlet), the program of the hotswap
benchmark (bench/bench_hotswap.py, the PKDB paper's Table VI).

``compute_forces`` has a bug: its force prefactor is 24 where the derivative of
4 (r^-12 - r^-6) gives 48, so the atoms move in half the potential and the total
energy (kinetic + the true potential) is not conserved. ``compute_forces_fixed`` is
the corrected kernel.
Swap it in without restarting:

    pkdb examples/md.py
    (pkdb) break 144, step == 200
    (pkdb) continue
    (pkdb) hotswap compute_forces compute_forces_fixed
    (pkdb) clear 1
    (pkdb) continue

Run it:   python examples/md.py [CELLS] [STEPS]   (4 * CELLS**3 atoms, fcc lattice)
"""

import math
import sys

import numpy as np

import pkernels as pk


@pk.workunit
def initial_integrate(i, dt, box, x, v, f):
    for d in range(3):
        v[i][d] += 0.5 * dt * f[i][d]
        x[i][d] += dt * v[i][d]
        x[i][d] -= box * math.floor(x[i][d] / box)


@pk.workunit
def compute_forces(i, n, box, rc2, x, f):
    fx: float = 0.0
    fy: float = 0.0
    fz: float = 0.0
    for j in range(n):
        if j == i:
            continue
        dx = x[i][0] - x[j][0]
        dy = x[i][1] - x[j][1]
        dz = x[i][2] - x[j][2]
        dx -= box * math.floor(dx / box + 0.5)
        dy -= box * math.floor(dy / box + 0.5)
        dz -= box * math.floor(dz / box + 0.5)
        r2 = dx * dx + dy * dy + dz * dz
        if r2 < rc2:
            r2i = 1.0 / r2
            r6i = r2i * r2i * r2i
            fr = 24.0 * r2i * r6i * (r6i - 0.5)
            fx += fr * dx
            fy += fr * dy
            fz += fr * dz
    f[i][0] = fx
    f[i][1] = fy
    f[i][2] = fz


@pk.workunit
def compute_forces_fixed(i, n, box, rc2, x, f):
    fx: float = 0.0
    fy: float = 0.0
    fz: float = 0.0
    for j in range(n):
        if j == i:
            continue
        dx = x[i][0] - x[j][0]
        dy = x[i][1] - x[j][1]
        dz = x[i][2] - x[j][2]
        dx -= box * math.floor(dx / box + 0.5)
        dy -= box * math.floor(dy / box + 0.5)
        dz -= box * math.floor(dz / box + 0.5)
        r2 = dx * dx + dy * dy + dz * dz
        if r2 < rc2:
            r2i = 1.0 / r2
            r6i = r2i * r2i * r2i
            fr = 48.0 * r2i * r6i * (r6i - 0.5)
            fx += fr * dx
            fy += fr * dy
            fz += fr * dz
    f[i][0] = fx
    f[i][1] = fy
    f[i][2] = fz


@pk.workunit
def final_integrate(i, dt, v, f):
    for d in range(3):
        v[i][d] += 0.5 * dt * f[i][d]


@pk.workunit
def kinetic_energy(i, acc, v):
    acc += 0.5 * (v[i][0] * v[i][0] + v[i][1] * v[i][1] + v[i][2] * v[i][2])


@pk.workunit
def potential_energy(i, acc, n, box, rc2, x):
    for j in range(i + 1, n):
        dx = x[i][0] - x[j][0]
        dy = x[i][1] - x[j][1]
        dz = x[i][2] - x[j][2]
        dx -= box * math.floor(dx / box + 0.5)
        dy -= box * math.floor(dy / box + 0.5)
        dz -= box * math.floor(dz / box + 0.5)
        r2 = dx * dx + dy * dy + dz * dz
        if r2 < rc2:
            r6i = 1.0 / (r2 * r2 * r2)
            acc += 4.0 * r6i * (r6i - 1.0)


def fcc_lattice(cells: int, density: float) -> tuple[np.ndarray, float]:
    """4 * cells**3 atoms on an fcc lattice at ``density``; (positions, box length)."""
    a = (4.0 / density) ** (1.0 / 3.0)
    basis = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    grid = np.stack(np.meshgrid(*[np.arange(cells)] * 3, indexing="ij"), -1).reshape(-1, 1, 3)
    return ((grid + basis).reshape(-1, 3) * a).astype(np.float64), cells * a


def energies(n, box, rc2, x, v):
    kinetic = pk.parallel_reduce(n, kinetic_energy, v=v)
    potential = pk.parallel_reduce(n, potential_energy, n=n, box=box, rc2=rc2, x=x)
    return kinetic, potential


def run(cells: int = 5, steps: int = 400, dt: float = 0.004, every: int = 50) -> float:
    x, box = fcc_lattice(cells, density=0.8442)
    n = len(x)
    rng = np.random.default_rng(7)
    v = rng.normal(0.0, math.sqrt(1.44), (n, 3))
    v -= v.mean(axis=0)
    f = np.zeros((n, 3))
    rc2 = 2.5**2
    pk.parallel_for(n, compute_forces, n=n, box=box, rc2=rc2, x=x, f=f)
    kinetic, potential = energies(n, box, rc2, x, v)
    start = kinetic + potential
    print(f"{n} atoms, box {box:.3f}, {steps} steps: E0 = {start / n:.6f} per atom")
    for step in range(1, steps + 1):
        pk.parallel_for(n, initial_integrate, dt=dt, box=box, x=x, v=v, f=f)
        pk.parallel_for(n, compute_forces, n=n, box=box, rc2=rc2, x=x, f=f)
        pk.parallel_for(n, final_integrate, dt=dt, v=v, f=f)
        if step % every == 0:
            kinetic, potential = energies(n, box, rc2, x, v)
            total = kinetic + potential
            print(f"step {step:5d}  T {2 * kinetic / (3 * n):.4f}  E {total / n:.6f}")
    kinetic, potential = energies(n, box, rc2, x, v)
    drift = (kinetic + potential - start) / abs(start)
    print(f"relative energy drift {drift:.2e}")
    return drift


if __name__ == "__main__":
    run(*(int(a) for a in sys.argv[1:3]))
