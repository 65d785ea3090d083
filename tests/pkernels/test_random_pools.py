"""Random pools: pk.rand(T) draws in kernels, reproducible in every space (api.random_pools)."""

from __future__ import annotations

import copy
import ctypes
import ctypes.util

import numpy as np
import pytest
from pkt_support import ForceDebugBuild, observing

import pkernels as pk
from pkernels.runtime.hooks import BuildMode

N = 4096


@pk.workunit
def draw_each_type(i, f64, f32, i32, i64, u32, u64, i8, pool):
    f64[i] = pk.rand(pk.double)
    f32[i] = pk.rand(pk.float)
    i32[i] = pk.rand(pk.int32)
    i64[i] = pk.rand(pk.int64)
    u32[i] = pk.rand(pk.uint32)
    u64[i] = pk.rand(pk.uint64)
    i8[i] = pk.rand(pk.int8)


@pk.workunit
def draw_a_few(i, out, pool: pk.Random_XorShift64_Pool):
    # A count of draws that differs by index, from one call site, and one expression
    # drawing twice (C++ may evaluate its operands in either order).
    for k in range(i % 4):
        out[i, k] = pk.rand(pk.double)
    out[i, 4] = pk.rand(pk.double) - 2.0 * pk.rand(pk.double)


@pk.workunit
def count_inside(i, acc, pool):
    x = pk.rand(pk.double)
    y = pk.rand(pk.double)
    if x * x + y * y < 1.0:
        acc += 1.0


@pk.workunit
def team_draws(m: pk.TeamMember, out, pool):
    out[m.league_rank(), m.team_rank()] = pk.rand(pk.double)


@pk.workload
class Walkers:
    """PyKokkos' way: the pool is a field, pk.rand(T) in a workunit names none."""

    def __init__(self, n: int, seed: int) -> None:
        self.n = n
        self.steps: pk.View1D[pk.double] = pk.View([n], pk.double)
        self.pool: pk.Random_XorShift64_Pool = pk.Random_XorShift64_Pool(seed, 16)

    @pk.main
    def run(self) -> None:
        pk.parallel_for(self.n, self.step)

    @pk.workunit
    def step(self, i: int) -> None:
        self.steps[i] = pk.rand(pk.double) - 0.5


def _each_type(space, seed=2026, n=N):
    views = {
        "f64": np.zeros(n), "f32": np.zeros(n, np.float32), "i32": np.zeros(n, np.int32),
        "i64": np.zeros(n, np.int64), "u32": np.zeros(n, np.uint32),
        "u64": np.zeros(n, np.uint64), "i8": np.zeros(n, np.int8),
    }  # fmt: skip
    pool = pk.Random_XorShift64_Pool(seed, 64)
    pk.parallel_for(pk.RangePolicy(space, 0, n), draw_each_type, pool=pool, **views)
    return views


def _few(space, pool):
    out = np.full((64, 5), -1.0)
    pk.parallel_for(pk.RangePolicy(space, 0, 64), draw_a_few, out=out, pool=pool)
    return out


@pytest.fixture(scope="module")
def openmp_draws():
    return _each_type(pk.OpenMP)


def test_every_space_and_thread_count_draws_the_same_bits(openmp_draws, space) -> None:
    if space is pk.OpenMP:
        # The OpenMP runtime the kernel libraries run on (libgomp, one per process).
        gomp = ctypes.CDLL(ctypes.util.find_library("gomp") or "libgomp.so.1")
        before = gomp.omp_get_max_threads()
        try:
            for threads in (1, 3, 7):
                gomp.omp_set_num_threads(threads)
                again = _each_type(pk.OpenMP)
                for name, values in openmp_draws.items():
                    np.testing.assert_array_equal(again[name], values, err_msg=name)
        finally:
            gomp.omp_set_num_threads(before)
        return
    drawn = _each_type(space, n=N if space is not pk.Debug else 512)
    for name, values in drawn.items():
        np.testing.assert_array_equal(values, openmp_draws[name][: len(values)], err_msg=name)


def test_each_type_draws_its_range_uniformly(openmp_draws) -> None:
    f64, f32 = openmp_draws["f64"], openmp_draws["f32"].astype(np.float64)
    for floats in (f64, f32):
        assert floats.min() >= 0.0 and floats.max() < 1.0
        assert abs(floats.mean() - 0.5) < 0.02 and abs(floats.var() - 1 / 12) < 0.01
    assert len(set(f64.tolist())) == N  # 53 random bits: no repeats in 4096
    scaled = {
        "i32": 2.0**31, "i64": 2.0**63, "u32": 2.0**32, "u64": 2.0**64, "i8": 128.0,
    }  # fmt: skip
    for name, top in scaled.items():
        values = openmp_draws[name]
        assert values.min() >= 0, name  # signed types: the type's non-negative values
        assert abs(values.astype(np.float64).mean() / top - 0.5) < 0.02, name
    assert set(openmp_draws["i8"].tolist()) == set(range(128))
    for name in ("i32", "u32", "u64"):  # the low bits are random too
        low = openmp_draws[name].astype(np.uint64) & np.uint64(0xFF)
        ones = [(low >> np.uint64(b) & np.uint64(1)).mean() for b in range(8)]
        assert all(abs(p - 0.5) < 0.04 for p in ones), (name, ones)
    assert abs(np.corrcoef(f64, openmp_draws["i64"].astype(np.float64))[0, 1]) < 0.05


def test_a_launch_advances_the_pool_and_a_program_repeats_exactly(space) -> None:
    pool = pk.Random_XorShift64_Pool(7, 4)
    first, second = _few(space, pool), _few(space, pool)
    assert not np.array_equal(first, second)
    fresh = pk.Random_XorShift64_Pool(7, 4)
    np.testing.assert_array_equal(_few(space, fresh), first)
    np.testing.assert_array_equal(_few(space, fresh), second)
    assert pool.launches == 2
    copied = copy.deepcopy(pool)  # a copy goes on from the same launch
    np.testing.assert_array_equal(_few(space, copied), _few(space, fresh))
    other_seed = _few(space, pk.Random_XorShift64_Pool(8, 4))
    assert not np.isin(other_seed[:, 4], first[:, 4]).any()
    # each call site and each draw of one has its own number
    assert len(set(first[:, :3][first[:, :3] >= 0].tolist())) == int((first[:, :3] >= 0).sum())
    # num_states is Kokkos' thread count of states: the numbers do not depend on it
    np.testing.assert_array_equal(_few(space, pk.Random_XorShift1024_Pool(7, 1000)), first)


def test_reduce_teams_and_debug_builds_draw_the_same(native_space) -> None:
    def inside(space, pool):
        return pk.parallel_reduce(pk.RangePolicy(space, 0, 20000), count_inside, pool=pool)

    hits = inside(native_space, pk.Random_XorShift64_Pool(11, 1))
    assert hits == inside(pk.Debug, pk.Random_XorShift64_Pool(11, 1))
    assert abs(4 * hits / 20000 - np.pi) < 0.05
    with observing(ForceDebugBuild(BuildMode.DEBUG)):
        assert inside(native_space, pk.Random_XorShift64_Pool(11, 1)) == hits
    if native_space is pk.OpenMP:  # the Serial space runs teams of one thread
        outs = []
        for space in (pk.OpenMP, pk.Debug):
            out = np.zeros((5, 3))
            pool = pk.Random_XorShift64_Pool(3, 8)
            pk.parallel_for(pk.TeamPolicy(space, 5, 3), team_draws, out=out, pool=pool)
            outs.append(out)
        np.testing.assert_array_equal(outs[0], outs[1])
        assert len(set(outs[0].ravel().tolist())) == 15


def test_a_workload_pool_field_as_pykokkos_has_it(space) -> None:
    pk.set_default_space(space)
    walkers = Walkers(100, seed=5)
    pk.execute(space, walkers)
    first = np.array(walkers.steps).copy()
    assert -0.5 <= first.min() and first.max() < 0.5 and len(set(first.tolist())) == 100
    pk.execute(space, walkers)
    assert not np.array_equal(first, np.array(walkers.steps))
    again = Walkers(100, seed=5)
    pk.execute(pk.Serial if space is not pk.Serial else pk.OpenMP, again)
    np.testing.assert_array_equal(np.array(again.steps), first)


def test_draws_without_a_pool_or_of_a_wrong_type_say_what_to_write(make_module) -> None:
    module = make_module(
        """
import pkernels as pk

@pk.workunit
def no_pool(i, out):
    out[i] = pk.rand(pk.double)

@pk.function
def helper(x: float) -> float:
    return x * pk.rand(pk.double)

@pk.workunit
def in_helper(i, out, pool):
    out[i] = helper(1.0)

@pk.workunit
def of_bool(i, out, pool):
    out[i] = pk.rand(pk.bool)

@pk.workunit
def two(i, out, a, b):
    out[i] = pk.rand(pk.double)
"""
    )
    out, pool = np.zeros(2), pk.Random_XorShift64_Pool(1, 1)
    with pytest.raises(pk.TranslationError, match="needs a random pool") as info:
        pk.parallel_for(2, module.no_pool, out=out)
    message = str(info.value)
    assert info.value.lineno == 6 and "self.pool: pk.Random_XorShift64_Pool" in message
    assert "pool=pk.Random_XorShift64_Pool(seed, num_states)" in message
    assert "pk.rand(seed, i)" in message and "^" in message
    with pytest.raises(pk.TranslationError, match="a @pk.function") as info:
        pk.parallel_for(2, module.in_helper, out=out, pool=pool)
    assert info.value.lineno == 10
    with pytest.raises(pk.TranslationError, match="draws numbers of types float64"):
        pk.parallel_for(2, module.of_bool, out=out, pool=pool)
    with pytest.raises(pk.TranslationError, match=r"it has 2 \(a, b\)"):
        pk.parallel_for(2, module.two, out=out, a=pool, b=pk.Random_XorShift64_Pool(2, 1))
    with pytest.raises(TypeError, match="draws from the random pool of a workunit"):
        pk.rand(pk.double)
    assert pool.launches == 0  # nothing launched
