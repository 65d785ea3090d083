"""Ewald summation of the Coulomb energy of charges in a periodic box, in the spirit of
the PKDB paper's Ewald case study (Section IV-F): real-space pairs within a cutoff over a
cell list, particle-to-grid spreading with atomics, an FFT (NumPy; CuPy on the GPU), a
convolution in Fourier space, and grid-to-particle interpolation (the spectral Ewald
method: Gaussian windows truncated to P^3 grid points).

    E = E_real + E_recip + E_self
    E_real  = 1/2 sum_i sum_{j != i, |r_ij| < rc} q_i q_j erfc(xi r_ij) / r_ij
    E_recip = 1/2 sum_i q_i phi_k(x_i),  phi_k = (4 pi / V) sum_{k != 0}
              exp(-k^2 / (4 xi^2)) / k^2 sum_j q_j exp(i k.(x_i - x_j))
    E_self  = -xi / sqrt(pi) sum_i q_i^2

``--check`` compares E with the same sums done directly with NumPy (every pair, every
wave vector: no cell list, no grid).

Run it:    python examples/ewald.py [N] [--space openmp|serial|debug|cuda] [--check]

The particles are random charges (neutral in total). One of them sits exactly on the
upper edge of the box, x = L, as wrapping a position into the box does to a particle a
rounding error below 0 (``x - L * floor(x / L)`` of -1e-17 is L). ``cell_of`` sends it
to cell 0; with ``--edge-bug`` it keeps the paper's bug, cell ``ncells``, one past the
end of ``counter`` (the OpenMP run then writes past the array: a silent corruption or a
crash, as in the paper). pkdb finds it in one ``continue``:

    pkdb --debug-all-kernels examples/ewald.py 64 --edge-bug
    (pkdb) continue
    > .../examples/ewald.py(66)bin_particles()
    OpenMP thread 1 (i=63) stopped by a failed check: index 3 is out of range for axis 0
        of view 'counter' with extent 3
    -> pk.atomic_add(counter, [cx, cy, cz], 1)
    (pkdb-openmp) p x[i], x[i][0] / cell_size
    (array([10.5 ,  5.25,  5.25]), np.float64(3.0))

(Without ``--debug-all-kernels`` the same ``continue`` stops there too, in the kernel's
checked release build, which has no variables to show; ``PKERNELS_CHECKS=1 python
examples/ewald.py --edge-bug`` raises the same error.)
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

import pkernels as pk

SPACES = {"openmp": pk.OpenMP, "serial": pk.Serial, "debug": pk.Debug, "cuda": pk.Cuda}


@pk.function
def cell_of(x: float, cell_size: float, ncells: int, wrap: bool) -> int:
    c: int = int(x / cell_size)
    if wrap and c >= ncells:
        c -= ncells  # x == L is x == 0 in a periodic box
    return c


@pk.workunit
def bin_particles(i, x, cell_size, ncells, wrap, cell, counter):
    cx = cell_of(x[i][0], cell_size, ncells, wrap)
    cy = cell_of(x[i][1], cell_size, ncells, wrap)
    cz = cell_of(x[i][2], cell_size, ncells, wrap)
    cell[i][0] = cx
    cell[i][1] = cy
    cell[i][2] = cz
    pk.atomic_add(counter, [cx, cy, cz], 1)


@pk.workunit
def fill_cells(i, cell, start, filled, order):
    cx = cell[i][0]
    cy = cell[i][1]
    cz = cell[i][2]
    slot = pk.atomic_fetch_add(filled, [cx, cy, cz], 1)
    order[start[cx][cy][cz] + slot] = i


@pk.workunit
def real_space(i, acc, ncells, box, rc2, xi, x, q, cell, start, counter, order):
    for ox in range(-1, 2):
        cx = (cell[i][0] + ox) % ncells
        for oy in range(-1, 2):
            cy = (cell[i][1] + oy) % ncells
            for oz in range(-1, 2):
                cz = (cell[i][2] + oz) % ncells
                first = start[cx][cy][cz]
                for s in range(first, first + counter[cx][cy][cz]):
                    j = order[s]
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
                        r = math.sqrt(r2)
                        acc += 0.5 * q[i] * q[j] * math.erfc(xi * r) / r


@pk.workunit
def spread(i, m, h, support, c, norm, x, q, grid):
    gx = int(math.floor(x[i][0] / h)) - support // 2 + 1
    gy = int(math.floor(x[i][1] / h)) - support // 2 + 1
    gz = int(math.floor(x[i][2] / h)) - support // 2 + 1
    for a in range(support):
        dx = (gx + a) * h - x[i][0]
        wx = norm * q[i] * math.exp(-c * dx * dx)
        for b in range(support):
            dy = (gy + b) * h - x[i][1]
            wxy = wx * math.exp(-c * dy * dy)
            for e in range(support):
                dz = (gz + e) * h - x[i][2]
                w = wxy * math.exp(-c * dz * dz)
                pk.atomic_add(grid, [(gx + a) % m, (gy + b) % m, (gz + e) % m], w)


@pk.workunit
def scale_spectrum(i, m, green, spectrum):
    for j in range(m):
        for k in range(m):
            spectrum[i][j][k][0] *= green[i][j][k]
            spectrum[i][j][k][1] *= green[i][j][k]


@pk.workunit
def interpolate(i, m, h, support, c, norm, x, potential, phi):
    gx = int(math.floor(x[i][0] / h)) - support // 2 + 1
    gy = int(math.floor(x[i][1] / h)) - support // 2 + 1
    gz = int(math.floor(x[i][2] / h)) - support // 2 + 1
    total: float = 0.0
    for a in range(support):
        dx = (gx + a) * h - x[i][0]
        wx = math.exp(-c * dx * dx)
        for b in range(support):
            dy = (gy + b) * h - x[i][1]
            wxy = wx * math.exp(-c * dy * dy)
            for e in range(support):
                dz = (gz + e) * h - x[i][2]
                w = wxy * math.exp(-c * dz * dz)
                total += w * potential[(gx + a) % m][(gy + b) % m][(gz + e) % m]
    phi[i] = norm * h * h * h * total


class Params:
    """The method's parameters for a box of side ``box``: splitting ``xi``, cutoff
    ``rc``, grid ``m``^3, window of ``support``^3 points and its Gaussian's shape."""

    def __init__(self, box: float, rc: float, xi: float, m: int, support: int = 8) -> None:
        self.box, self.rc, self.xi, self.m, self.support = box, rc, xi, m, support
        self.ncells = int(box / rc)
        if self.ncells < 3:
            raise ValueError(f"box {box} / cutoff {rc} < 3 cells: the 27-cell stencil repeats")
        self.cell_size = box / self.ncells
        self.h = box / m
        # Lindbo & Tornberg's choice: the Gaussian falls to exp(-shape^2 / 2) at the
        # window's edge, shape = 0.95 sqrt(pi P); eta splits exp(-k^2 / (4 xi^2)).
        width = support * self.h / 2
        shape = 0.95 * math.sqrt(math.pi * support)
        self.eta = (2 * width * xi / shape) ** 2
        if self.eta >= 1:
            raise ValueError("grid too coarse for xi: eta >= 1 (raise m or support)")
        self.c = 2 * xi * xi / self.eta
        self.norm = (self.c / math.pi) ** 1.5


def green_function(p: Params, xp: object) -> object:
    """4 pi / k^2 exp(-(1 - eta) k^2 / (4 xi^2)) on the FFT's wave vectors (0 at k = 0),
    with the FFT's scalings folded in: the result times the spectrum of the spread grid,
    transformed back, is the potential on the grid."""
    k = 2 * math.pi * xp.fft.fftfreq(p.m, d=p.h)
    k2 = k[:, None, None] ** 2 + k[None, :, None] ** 2 + k[None, None, :] ** 2
    k2[0, 0, 0] = 1.0
    green = 4 * math.pi / k2 * xp.exp(-(1 - p.eta) * k2 / (4 * p.xi**2))
    green[0, 0, 0] = 0.0
    volume = p.box**3
    return xp.ascontiguousarray(green * (p.h**3 * p.m**3 / volume))


def cell_list(space: object, p: Params, x: object, xp: object, wrap: bool) -> tuple:
    """(cell of each particle, first slot of each cell, particles per cell, particles
    ordered by cell)."""
    n = len(x)
    cell = xp.zeros((n, 3), dtype=xp.int64)
    counter = xp.zeros((p.ncells,) * 3, dtype=xp.int64)
    policy = pk.RangePolicy(space, 0, n)
    pk.parallel_for(policy, bin_particles, x=x, cell_size=p.cell_size, ncells=p.ncells,
                    wrap=wrap, cell=cell, counter=counter)  # fmt: skip
    if int(counter.sum()) != n:
        raise RuntimeError(f"the cell list holds {int(counter.sum())} of {n} particles")
    start = xp.zeros_like(counter)
    start.reshape(-1)[1:] = xp.cumsum(counter.reshape(-1))[:-1]
    filled = xp.zeros_like(counter)
    order = xp.zeros(n, dtype=xp.int64)
    pk.parallel_for(policy, fill_cells, cell=cell, start=start, filled=filled, order=order)
    return cell, start, counter, order


def ewald_energy(space: object, p: Params, x: object, q: object, wrap: bool = True) -> dict:
    """E_real, E_recip, E_self and their sum, computed by the kernels on ``space``."""
    xp = array_module(space)
    n = len(x)
    policy = pk.RangePolicy(space, 0, n)
    cell, start, counter, order = cell_list(space, p, x, xp, wrap)
    real = pk.parallel_reduce(policy, real_space, ncells=p.ncells, box=p.box, rc2=p.rc**2,
                              xi=p.xi, x=x, q=q, cell=cell, start=start, counter=counter,
                              order=order)  # fmt: skip
    grid = xp.zeros((p.m,) * 3)
    window = dict(m=p.m, h=p.h, support=p.support, c=p.c, norm=p.norm, x=x)
    pk.parallel_for(policy, spread, q=q, grid=grid, **window)
    spectrum = xp.fft.fftn(grid)
    pk.parallel_for(pk.RangePolicy(space, 0, p.m), scale_spectrum, m=p.m,
                    green=green_function(p, xp), spectrum=spectrum.view(xp.float64).reshape(
                        (p.m,) * 3 + (2,)))  # fmt: skip
    potential = xp.ascontiguousarray(xp.fft.ifftn(spectrum).real)
    phi = xp.zeros(n)
    pk.parallel_for(policy, interpolate, potential=potential, phi=phi, **window)
    recip = 0.5 * float(xp.dot(q, phi))
    self_energy = -p.xi / math.sqrt(math.pi) * float(xp.dot(q, q))
    return {"real": float(real), "recip": recip, "self": self_energy,
            "total": float(real) + recip + self_energy}  # fmt: skip


def direct_energy(p: Params, x: np.ndarray, q: np.ndarray, kmax: int = 0) -> dict:
    """The same three sums done directly with NumPy: every pair (minimum image) and every
    wave vector up to ``kmax`` (default: where exp(-k^2 / (4 xi^2)) < 1e-16)."""
    d = x[:, None, :] - x[None, :, :]
    d -= p.box * np.floor(d / p.box + 0.5)
    r = np.sqrt((d**2).sum(-1))
    np.fill_diagonal(r, np.inf)
    erfc = np.vectorize(math.erfc)
    pairs = np.where(r < p.rc, q[:, None] * q[None, :] * erfc(p.xi * r) / r, 0.0)
    real = 0.5 * pairs.sum()
    kmax = kmax or math.ceil(2 * p.xi * math.sqrt(16 * math.log(10)) * p.box / (2 * math.pi))
    ints = np.arange(-kmax, kmax + 1)
    recip = 0.0
    for mx in ints:  # one plane of wave vectors at a time: N x (2 kmax + 1)^2 phases
        m = np.stack(np.meshgrid([mx], ints, ints, indexing="ij"), -1).reshape(-1, 3)
        k = 2 * math.pi * m / p.box
        k2 = (k**2).sum(-1)
        keep = k2 > 0
        k, k2 = k[keep], k2[keep]
        s = np.exp(1j * x @ k.T).T @ q  # structure factors S(k)
        recip += (4 * math.pi / k2 * np.exp(-k2 / (4 * p.xi**2)) * np.abs(s) ** 2).sum()
    recip *= 0.5 / p.box**3
    self_energy = -p.xi / math.sqrt(math.pi) * float(q @ q)
    return {"real": real, "recip": recip, "self": self_energy,
            "total": real + recip + self_energy}  # fmt: skip


def array_module(space: object) -> object:
    """NumPy, or CuPy for the GPU (imported only then)."""
    if space is pk.Cuda:
        import cupy

        return cupy
    return np


def particles(n: int, box: float, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """``n`` random positions in the box (the last one exactly on its upper x edge) and
    charges +-1 of total 0 (``n`` even)."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, 3)) * box
    x[-1] = (-1e-17, 0.5 * box, 0.5 * box)  # a rounding error below 0 ...
    x -= box * np.floor(x / box)  # ... wrapped into the box: x = L exactly
    q = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    return x, q


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", nargs="?", type=int, default=2000, help="particles (even)")
    parser.add_argument("--space", choices=SPACES, default="openmp")
    parser.add_argument("--box", type=float, default=0.0, help="side (default: density 1)")
    parser.add_argument("--grid", type=int, default=0, help="grid points per side")
    parser.add_argument("--check", action="store_true", help="compare with direct sums")
    parser.add_argument("--edge-bug", action="store_true", help="the paper's cell-index bug")
    args = parser.parse_args(argv)
    box = args.box or max(10.5, args.n ** (1 / 3))
    xi, rc = 1.0, 3.5  # erfc(xi rc) ~ 7e-7
    m = args.grid or 2 * math.ceil(7 * xi * box / (2 * math.pi))  # exp(-k_max^2/4xi^2) ~ 5e-6
    p = Params(box, rc, xi, m)
    x, q = particles(args.n, box)
    space = SPACES[args.space]
    xp = array_module(space)
    energy = ewald_energy(space, p, xp.asarray(x), xp.asarray(q), wrap=not args.edge_bug)
    print(f"{args.n} charges, box {box:.3f}, {p.ncells}^3 cells, grid {m}^3, "
          f"{args.space}: E = {energy['total']:.10f} (real {energy['real']:.6f}, "
          f"recip {energy['recip']:.6f}, self {energy['self']:.6f})")  # fmt: skip
    if args.check:
        direct = direct_energy(p, x, q)
        error = abs(energy["total"] - direct["total"]) / abs(direct["total"])
        print(f"direct sums: E = {direct['total']:.10f}, relative difference {error:.1e}")
    return energy["total"]


if __name__ == "__main__":
    main(sys.argv[1:])
