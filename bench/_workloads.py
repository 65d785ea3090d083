"""The three benchmark kernels: data, the pkernels workunits, and every variant's call.

Each workload builds its data once and hands out zero-argument callables, one per
variant (pkernels OpenMP, hand-written C++, Numba, NumPy), each writing into its own
output array, plus a reduced pkernels ``Debug`` run whose time is extrapolated to the
full problem by the fraction of the work it did. ``error(result)`` is the variant's
relative disagreement with the NumPy reference; it must stay under ``tolerance``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import numpy as np

import pkernels as pk
from pkernels.translate.emit_launch import WIDE_SYMBOL

Call = Callable[[], Any]

# ---------------------------------------------------------------- pkernels workunits


@pk.workunit
def yAx(j, acc, cols, y_view, x_view, A_view):
    temp2: float = 0
    for i in range(cols):
        temp2 += A_view[j][i] * x_view[i]

    acc += y_view[j] * temp2


@pk.workunit
def stencil7(i, n1, n2, c0, c1, u, out):
    for j in range(1, n1 - 1):
        for k in range(1, n2 - 1):
            out[i, j, k] = c0 * u[i, j, k] + c1 * (
                u[i - 1, j, k]
                + u[i + 1, j, k]
                + u[i, j - 1, k]
                + u[i, j + 1, k]
                + u[i, j, k - 1]
                + u[i, j, k + 1]
            )


@pk.workunit
def lj_force(i, cutsq, x, neigh, counts, f):
    xi: float = x[i, 0]
    yi: float = x[i, 1]
    zi: float = x[i, 2]
    fx: float = 0.0
    fy: float = 0.0
    fz: float = 0.0
    for k in range(counts[i]):
        j = neigh[i, k]
        dx = xi - x[j, 0]
        dy = yi - x[j, 1]
        dz = zi - x[j, 2]
        r2 = dx * dx + dy * dy + dz * dz
        if r2 < cutsq:
            sr2 = 1.0 / r2
            sr6 = sr2 * sr2 * sr2
            fpair = 48.0 * sr6 * (sr6 - 0.5) * sr2
            fx += dx * fpair
            fy += dy * fpair
            fz += dz * fpair
    f[i, 0] = fx
    f[i, 1] = fy
    f[i, 2] = fz


@pk.workunit
def noop(i, out):
    out[i] += 1.0


# ---------------------------------------------------------------- helpers


def _ptr(a: np.ndarray) -> int:
    return a.ctypes.data


def launch_only(
    workunit: Any, operation: str, policy: pk.RangePolicy, kwargs: dict[str, Any]
) -> Callable[[], Any]:
    """The compiled kernel's launch symbol called straight through ctypes, with its
    arguments marshalled once: the kernel's own time, without pkernels' Python dispatch
    (a diagnostic for the benchmark, not a way to call kernels). Returns a call that
    returns the reduction's total, or None."""
    import ctypes

    from pkernels.runtime.marshal import c_argtypes, c_arguments, result_buffer

    dispatch = pk.parallel_reduce if operation == "reduce" else pk.parallel_for
    dispatch(policy, workunit, **kwargs)  # compiles (or finds) this specialisation
    kernel = next(
        k
        for k in workunit.__pkernels__.specializations.values()
        if k.operation == operation and not k.debug
    )
    space = "serial" if policy.space is pk.Serial else "openmp"
    symbol = kernel.entry.symbols[space]
    if space == "openmp" and kernel.vector_width is not None:
        # A kernel with 512-bit twin loops: launch it until it has chosen (runtime/
        # width_tuning.py), then call the loops it kept.
        while kernel.vector_width == "timing":
            dispatch(policy, workunit, **kwargs)
        if kernel.vector_width == "512":
            symbol = WIDE_SYMBOL
    fn = getattr(ctypes.CDLL(str(kernel.library)), symbol)
    fn.argtypes = c_argtypes(kernel.entry.params)
    fn.restype = None
    args = c_arguments(kernel.entry.params, kwargs)
    total = result_buffer(kernel.entry.acc_type) if kernel.entry.acc_type is not None else None
    where = ctypes.addressof(total) if total is not None else None
    begin, end = policy.begin, policy.end

    def call() -> Any:
        fn(begin, end, where, *args)
        return total.value if total is not None else None

    return call


def _max_rel_error(result: np.ndarray, reference: np.ndarray) -> float:
    scale = float(np.max(np.abs(reference))) or 1.0
    return float(np.max(np.abs(result - reference))) / scale


class Workload:
    """One kernel at one size; subclasses fill in the variants."""

    name = ""
    operation = ""
    tolerance = 0.0
    workunit: Any = None

    size = ""
    reference: Any = None

    def pkernels(self, space: pk.ExecutionSpace) -> Call:
        raise NotImplementedError

    def pkernels_launch_only(self, space: pk.ExecutionSpace) -> Call:
        """The pkernels kernel without the Python dispatch (see :func:`launch_only`)."""
        raise NotImplementedError

    def hand(self, fn: Any) -> Call:
        raise NotImplementedError

    def numba(self, mod: ModuleType) -> Call:
        raise NotImplementedError

    def numpy(self) -> Call:
        raise NotImplementedError

    def dispatch_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of the pkernels dispatch (they fix the specialisation)."""
        raise NotImplementedError

    def debug(self) -> tuple[Call, Callable[[Any], float], float, str]:
        """The reduced Debug-space run: (call, its error function, fraction of the full
        work it does, a note saying what was run)."""
        raise NotImplementedError

    def error(self, result: Any) -> float:
        return _max_rel_error(np.asarray(result), np.asarray(self.reference))

    def poison_output(self) -> None:
        """Fill the output the variants share with NaN where a kernel must write, so that
        checking a variant right after calling it shows what that variant wrote."""


# ---------------------------------------------------------------- yAx


class YAx(Workload):
    name = "yAx"
    operation = "reduce"
    tolerance = 1e-10
    workunit = yAx

    def __init__(self, N: int, M: int) -> None:
        rng = np.random.default_rng(0)
        self.N, self.M = N, M
        self.y = rng.random(N)
        self.x = rng.random(M)
        self.A = rng.random((N, M))
        self.size = f"N={N}, M={M}"
        self.reference = float(self.y @ (self.A @ self.x))

    def dispatch_kwargs(self) -> dict[str, Any]:
        return {"cols": self.M, "y_view": self.y, "x_view": self.x, "A_view": self.A}

    def pkernels(self, space: pk.ExecutionSpace) -> Call:
        policy = pk.RangePolicy(space, 0, self.N)
        kwargs = self.dispatch_kwargs()
        return lambda: pk.parallel_reduce(policy, yAx, **kwargs)

    def pkernels_launch_only(self, space: pk.ExecutionSpace) -> Call:
        policy = pk.RangePolicy(space, 0, self.N)
        return launch_only(yAx, "reduce", policy, self.dispatch_kwargs())

    def hand(self, fn: Any) -> Call:
        args = (self.N, self.M, _ptr(self.y), _ptr(self.x), _ptr(self.A))
        return lambda: fn(*args)

    def numba(self, mod: ModuleType) -> Call:
        return lambda: mod.yax(self.y, self.x, self.A)

    def numpy(self) -> Call:
        return lambda: float(self.y @ (self.A @ self.x))

    def debug(self) -> tuple[Call, Callable[[Any], float], float, str]:
        rows = min(self.N, 8)
        policy = pk.RangePolicy(pk.Debug, 0, rows)
        kwargs = self.dispatch_kwargs()
        expected = float(self.y[:rows] @ (self.A[:rows] @ self.x))

        def error(result: Any) -> float:
            return abs(result - expected) / abs(expected)

        call = lambda: pk.parallel_reduce(policy, yAx, **kwargs)  # noqa: E731
        return call, error, rows / self.N, f"{rows} of {self.N} rows"


# ---------------------------------------------------------------- 7-point stencil


class Stencil7(Workload):
    name = "stencil7"
    operation = "for"
    tolerance = 1e-12
    workunit = stencil7
    c0, c1 = -6.0 / 7.0, 1.0 / 7.0

    def __init__(self, n: int) -> None:
        rng = np.random.default_rng(1)
        self.n = n
        self.u = rng.random((n, n, n))
        self.size = f"{n}^3 (interior {n - 2}^3)"
        self._shared: np.ndarray | None = None
        self.reference = self.numpy()().copy()

    def _out(self) -> np.ndarray:
        # One output for every variant: where a large array lands (its pages, huge pages
        # or not) changes a memory-bound kernel's time by up to 10% here, so each variant
        # writing its own array would time the arrays as much as the code.
        if self._shared is None:
            self._shared = np.zeros_like(self.u)
        return self._shared

    def poison_output(self) -> None:
        self._out()[1:-1, 1:-1, 1:-1] = np.nan  # the boundary stays 0, as in the reference

    def dispatch_kwargs(self, out: np.ndarray | None = None) -> dict[str, Any]:
        out = self._out() if out is None else out
        return {"n1": self.n, "n2": self.n, "c0": self.c0, "c1": self.c1, "u": self.u, "out": out}

    def pkernels(self, space: pk.ExecutionSpace) -> Call:
        out = self._out()
        policy = pk.RangePolicy(space, 1, self.n - 1)
        kwargs = self.dispatch_kwargs(out)

        def call() -> np.ndarray:
            pk.parallel_for(policy, stencil7, **kwargs)
            return out

        return call

    def pkernels_launch_only(self, space: pk.ExecutionSpace) -> Call:
        out = self._out()
        policy = pk.RangePolicy(space, 1, self.n - 1)
        launch = launch_only(stencil7, "for", policy, self.dispatch_kwargs(out))

        def call() -> np.ndarray:
            launch()
            return out

        return call

    def hand(self, fn: Any) -> Call:
        out = self._out()
        n = self.n
        args = (n, n, n, _ptr(self.u), _ptr(out), self.c0, self.c1)

        def call() -> np.ndarray:
            fn(*args)
            return out

        return call

    def numba(self, mod: ModuleType) -> Call:
        out = self._out()

        def call() -> np.ndarray:
            mod.stencil7(self.u, out, self.c0, self.c1)
            return out

        return call

    def numpy(self) -> Call:
        out = self._out()
        u, c0, c1 = self.u, self.c0, self.c1

        def call() -> np.ndarray:
            out[1:-1, 1:-1, 1:-1] = c0 * u[1:-1, 1:-1, 1:-1] + c1 * (
                u[:-2, 1:-1, 1:-1]
                + u[2:, 1:-1, 1:-1]
                + u[1:-1, :-2, 1:-1]
                + u[1:-1, 2:, 1:-1]
                + u[1:-1, 1:-1, :-2]
                + u[1:-1, 1:-1, 2:]
            )
            return out

        return call

    def debug(self) -> tuple[Call, Callable[[Any], float], float, str]:
        planes = 1
        lo = self.n // 2
        out = np.zeros_like(self._out())  # its own: a slice, after the timing
        policy = pk.RangePolicy(pk.Debug, lo, lo + planes)
        kwargs = self.dispatch_kwargs(out)

        def call() -> np.ndarray:
            pk.parallel_for(policy, stencil7, **kwargs)
            return out

        def error(result: Any) -> float:
            return _max_rel_error(result[lo : lo + planes], self.reference[lo : lo + planes])

        return call, error, planes / (self.n - 2), f"{planes} of {self.n - 2} i-planes"


# ---------------------------------------------------------------- Lennard-Jones


def lj_lattice(
    side: int, rlist: float, density: float = 0.8442, jitter: float = 0.1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Atoms on a jittered simple-cubic lattice of ``side``³ sites at ``density``, in an
    open box, and their full neighbour list within ``rlist``, found through lattice offsets
    (what a cell list does on a lattice): positions (n, 3) float64, neighbours (n, maxn)
    int32 padded with the atom's own index, counts (n,) int32 (C order)."""
    a = (1.0 / density) ** (1 / 3)
    rng = np.random.default_rng(2)
    grid = np.stack(np.meshgrid(*(np.arange(side),) * 3, indexing="ij"), axis=-1)
    cells = grid.reshape(-1, 3)
    x = (cells + rng.uniform(-jitter, jitter, cells.shape)) * a
    x = np.ascontiguousarray(x)
    reach = int(np.ceil(rlist / a + 2 * jitter * np.sqrt(3)))
    rlist2 = rlist**2
    js, oks = [], []
    for ox in range(-reach, reach + 1):
        for oy in range(-reach, reach + 1):
            for oz in range(-reach, reach + 1):
                o = np.array([ox, oy, oz])
                if (ox, oy, oz) == (0, 0, 0):
                    continue
                if (np.linalg.norm(o) - 2 * jitter * np.sqrt(3)) * a > rlist:
                    continue
                c = cells + o
                inside = np.all((c >= 0) & (c < side), axis=1)
                j = np.where(inside, (c[:, 0] * side + c[:, 1]) * side + c[:, 2], 0)
                d = x - x[j]
                ok = inside & (np.einsum("ij,ij->i", d, d) < rlist2)
                js.append(j)
                oks.append(ok)
    J = np.stack(js, axis=1)
    OK = np.stack(oks, axis=1)
    counts = OK.sum(axis=1).astype(np.int32)
    maxn = int(counts.max())
    order = np.argsort(~OK, axis=1, kind="stable")[:, :maxn]
    neigh = np.take_along_axis(J, order, axis=1).astype(np.int32)
    pad = np.arange(maxn)[None, :] >= counts[:, None]
    neigh[pad] = np.broadcast_to(np.arange(side**3, dtype=np.int32)[:, None], neigh.shape)[pad]
    return x, np.ascontiguousarray(neigh), counts


class LennardJones(Workload):
    """LJ forces (epsilon = sigma = 1, cutoff 2.1) over a full neighbour list.

    Atoms sit on a jittered simple-cubic lattice at reduced density 0.8442 (miniMD's),
    in an open box; the neighbour list holds every atom within 2.1 + 0.25 skin, found
    once through lattice offsets (a cell list on a lattice), ~40 per atom, in (n, maxn)
    int32 padded with the atom's own index, with counts (n,) int32.
    """

    name = "lj"
    operation = "for"
    tolerance = 1e-10
    workunit = lj_force
    cutoff, skin, density, jitter = 2.1, 0.25, 0.8442, 0.1

    def __init__(self, n: int) -> None:
        side = round(n ** (1 / 3))
        if side**3 != n:
            raise ValueError(f"lj: n must be a cube, got {n}")
        self.n = n
        self.cutsq = self.cutoff**2
        self.x, self.neigh, self.counts = lj_lattice(
            side, self.cutoff + self.skin, self.density, self.jitter
        )
        self.size = (
            f"n={n}, {self.counts.mean():.1f} neighbours/atom (max {self.neigh.shape[1]}), "
            f"{int(self._pairs_in_cutoff())} pairs in cutoff"
        )
        self._shared: np.ndarray | None = None
        self.reference = self.numpy()().copy()

    def _pairs_in_cutoff(self) -> int:
        d = self.x[:, None, :] - self.x[self.neigh]
        r2 = np.einsum("ijk,ijk->ij", d, d)
        valid = np.arange(self.neigh.shape[1])[None, :] < self.counts[:, None]
        return int(np.count_nonzero(valid & (r2 < self.cutsq)))

    def _out(self) -> np.ndarray:
        if self._shared is None:  # one output for every variant (see Stencil7._out)
            self._shared = np.zeros_like(self.x)
        return self._shared

    def poison_output(self) -> None:
        self._out()[:] = np.nan

    def dispatch_kwargs(self, out: np.ndarray | None = None) -> dict[str, Any]:
        f = self._out() if out is None else out
        return {
            "cutsq": self.cutsq,
            "x": self.x,
            "neigh": self.neigh,
            "counts": self.counts,
            "f": f,
        }

    def pkernels(self, space: pk.ExecutionSpace) -> Call:
        f = self._out()
        policy = pk.RangePolicy(space, 0, self.n)
        kwargs = self.dispatch_kwargs(f)

        def call() -> np.ndarray:
            pk.parallel_for(policy, lj_force, **kwargs)
            return f

        return call

    def pkernels_launch_only(self, space: pk.ExecutionSpace) -> Call:
        f = self._out()
        policy = pk.RangePolicy(space, 0, self.n)
        launch = launch_only(lj_force, "for", policy, self.dispatch_kwargs(f))

        def call() -> np.ndarray:
            launch()
            return f

        return call

    def hand(self, fn: Any) -> Call:
        f = self._out()
        args = (
            self.n,
            self.neigh.shape[1],
            _ptr(self.x),
            _ptr(self.neigh),
            _ptr(self.counts),
            _ptr(f),
            self.cutsq,
        )

        def call() -> np.ndarray:
            fn(*args)
            return f

        return call

    def numba(self, mod: ModuleType) -> Call:
        f = self._out()

        def call() -> np.ndarray:
            mod.lj(self.x, self.neigh, self.counts, f, self.cutsq)
            return f

        return call

    def numpy(self) -> Call:
        x, neigh, counts, cutsq = self.x, self.neigh, self.counts, self.cutsq
        slots = np.arange(neigh.shape[1])[None, :]

        def call() -> np.ndarray:
            d = x[:, None, :] - x[neigh]
            r2 = np.einsum("ijk,ijk->ij", d, d)
            valid = (slots < counts[:, None]) & (r2 < cutsq)
            sr2 = np.where(valid, 1.0 / np.where(valid, r2, 1.0), 0.0)
            sr6 = sr2 * sr2 * sr2
            fpair = 48.0 * sr6 * (sr6 - 0.5) * sr2
            return np.einsum("ijk,ij->ik", d, fpair)

        return call

    def debug(self) -> tuple[Call, Callable[[Any], float], float, str]:
        atoms = min(self.n, 256)
        lo = self.n // 2
        f = np.zeros_like(self._out())  # its own: a slice, after the timing
        policy = pk.RangePolicy(pk.Debug, lo, lo + atoms)
        kwargs = self.dispatch_kwargs(f)

        def call() -> np.ndarray:
            pk.parallel_for(policy, lj_force, **kwargs)
            return f

        def error(result: Any) -> float:
            return _max_rel_error(result[lo : lo + atoms], self.reference[lo : lo + atoms])

        fraction = float(self.counts[lo : lo + atoms].sum()) / float(self.counts.sum())
        return call, error, fraction, f"{atoms} of {self.n} atoms, scaled by neighbour count"


def workloads(quick: bool) -> Iterator[Workload]:
    """The three kernels at benchmark size, built one at a time (their arrays are large)."""
    if quick:
        yield from (YAx(512, 512), Stencil7(48), LennardJones(16**3))
        return
    yield YAx(4096, 4096)
    yield Stencil7(192)
    yield LennardJones(32**3)


def tiny_workloads() -> list[Workload]:
    """The same kernels on a handful of elements: the same argument types, hence the same
    specialisations and cache keys as the full-size ones (for compile, load and dispatch
    measurements, where the kernel's own run time must not count)."""
    return [YAx(4, 4), Stencil7(4), LennardJones(8)]
