"""The wide-vector twin of a parallel_for's release loops (emit_launch.has_wide_variant) and
the timing that picks one of the two (runtime.width_tuning): which kernels have it, that
both give the same bits, and how the choice is made from the launches' times."""

from __future__ import annotations

import functools
import subprocess

import numpy as np
import pytest

import pkernels as pk
from pkernels.build.toolchain import host_toolchain
from pkernels.runtime import width_tuning
from pkernels.runtime.width_tuning import BLOCKS, PLAIN, WIDE, WidthTuner


@functools.cache
def native_avx512() -> bool:
    """Whether g++ -march=native targets AVX-512 here (then release builds hold both)."""
    macros = subprocess.run(
        [host_toolchain().path, "-march=native", "-dM", "-E", "-x", "c++", "/dev/null"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return "__AVX512F__" in macros


needs_avx512 = pytest.mark.skipif(not native_avx512(), reason="no AVX-512 on this machine")


def stencil_workunit():
    """A fresh 7-point stencil workunit (its own builds, its own timing)."""

    @pk.workunit
    def stencil(i, u, out):
        if i > 0 and i < u.extent(0) - 1:
            for j in range(1, u.extent(1) - 1):
                for k in range(1, u.extent(2) - 1):
                    out[i, j, k] = 0.5 * u[i, j, k] + 0.1 * (
                        u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k]
                        + u[i, j + 1, k] + u[i, j, k - 1] + u[i, j, k + 1]
                    )  # fmt: skip

    return stencil


def numpy_stencil(u: np.ndarray) -> np.ndarray:
    out = np.zeros_like(u)
    c = (slice(1, -1),) * 3
    lo, hi = slice(None, -2), slice(2, None)
    # Left to right, as the kernel adds.
    near = u[lo, c[1], c[2]] + u[hi, c[1], c[2]] + u[c[0], lo, c[2]] + u[c[0], hi, c[2]]
    out[c] = 0.5 * u[c] + 0.1 * (near + u[c[0], c[1], lo] + u[c[0], c[1], hi])
    return out


def the_build(workunit):
    (build,) = workunit.__pkernels__.specializations.values()
    return build


@needs_avx512
def test_a_stencil_times_both_widths_then_keeps_one_and_every_launch_gives_numpys_bits():
    u = np.random.default_rng(3).random((40, 36, 70))
    out = np.zeros_like(u)
    stencil = stencil_workunit()
    expected = numpy_stencil(u)
    launches = 2 + 4 * BLOCKS
    widths = []
    for _ in range(launches + 3):
        out[...] = 0
        pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, u.shape[0]), stencil, u=u, out=out)
        assert np.array_equal(out, expected)
        widths.append(the_build(stencil).vector_width)
    assert widths[0] == "timing"
    # Launches this short (tens of µs) keep the plain loops after the first block;
    # longer ones time all blocks. Either way the choice is made by then and stays.
    assert widths[launches - 1] in ("256", "512")
    assert len(set(widths[launches - 1 :])) == 1


@needs_avx512
@pytest.mark.parametrize("width", ["256", "512"])
def test_the_environment_fixes_the_width(monkeypatch, width):
    monkeypatch.setenv("PKERNELS_VECTOR_WIDTH", width)
    u = np.random.default_rng(4).random((20, 24, 40))
    out = np.zeros_like(u)
    stencil = stencil_workunit()
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, u.shape[0]), stencil, u=u, out=out)
    assert the_build(stencil).vector_width == width
    assert np.array_equal(out, numpy_stencil(u))


def test_a_bad_width_in_the_environment_is_named(monkeypatch):
    monkeypatch.setenv("PKERNELS_VECTOR_WIDTH", "1024")
    with pytest.raises(ValueError, match="PKERNELS_VECTOR_WIDTH must be 256, 512 or auto"):
        width_tuning.forced_width()


@pk.workunit
def scale(i, x, y):
    y[i] = 2.0 * x[i]


@pk.workunit
def total(i, acc, x):
    acc += x[i]


def test_kernels_without_stores_in_loops_and_reductions_have_one_width():
    x = np.arange(64.0)
    y = np.zeros_like(x)
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 64), scale, x=x, y=y)
    assert pk.parallel_reduce(pk.RangePolicy(pk.OpenMP, 0, 64), total, x=x) == x.sum()
    assert the_build(scale).vector_width is None
    assert the_build(total).vector_width is None
    assert "pk_run_wide" not in the_build(total).source.read_text()
    stencil = stencil_workunit()
    u = np.ones((4, 4, 4))
    pk.parallel_for(pk.RangePolicy(pk.Serial, 0, 4), stencil, u=u, out=np.zeros_like(u))
    source = the_build(stencil).source.read_text()
    assert "pk_run_wide" in source and 'target("prefer-vector-width=512")' in source


def feed(tuner: WidthTuner, plain: float, wide: float, limit: int = 100) -> tuple[int, int]:
    """Launch times until the tuner chooses: (its choice, how many launches it took)."""
    for n in range(1, limit + 1):
        variant = tuner.next_variant()
        choice = tuner.record(variant, plain if variant == PLAIN else wide)
        if choice is not None:
            return choice, n
    raise AssertionError("no choice made")


def test_the_tuner_keeps_the_wide_loops_only_when_they_win_clearly():
    assert feed(WidthTuner(), plain=1.10e-3, wide=1.00e-3) == (WIDE, 2 + 4 * BLOCKS)
    assert feed(WidthTuner(), plain=1.02e-3, wide=1.00e-3) == (PLAIN, 2 + 4 * BLOCKS)
    assert feed(WidthTuner(), plain=1.00e-3, wide=1.20e-3) == (PLAIN, 2 + 4 * BLOCKS)
    # Short launches: one timed block, then the plain loops.
    assert feed(WidthTuner(), plain=10e-6, wide=5e-6) == (PLAIN, 6)


def test_the_tuner_alternates_which_variant_goes_first():
    tuner = WidthTuner()
    order = []
    for _ in range(10):
        order.append(tuner.next_variant())
        tuner.record(order[-1], 1e-3)
    assert order == [PLAIN, WIDE, PLAIN, WIDE, WIDE, PLAIN, PLAIN, WIDE, WIDE, PLAIN]


def test_one_slow_block_does_not_make_the_choice():
    """A burst of load from another process during one block: the wide loops win the
    other blocks by 10 %, so they are kept; losing two blocks, they are not."""
    tuner = WidthTuner()
    times = iter([1.0, 1.0] + [1.1, 1.0, 1.0, 1.1] * (BLOCKS - 1) + [1.0, 3.0, 3.0, 1.0])
    choice = None
    while choice is None:
        variant = tuner.next_variant()
        choice = tuner.record(variant, next(times) * 1e-3)
    assert choice == WIDE
    tuner = WidthTuner()
    times = iter([1.0, 1.0] + [1.1, 1.0, 1.0, 1.1] * (BLOCKS - 2) + [1.0, 3.0, 3.0, 1.0] * 2)
    choice = None
    while choice is None:
        variant = tuner.next_variant()
        choice = tuner.record(variant, next(times) * 1e-3)
    assert choice == PLAIN


@needs_avx512
def test_the_wide_loops_of_views_that_overlap_run_the_plain_ones(monkeypatch):
    """The wide loops are the restrict-qualified variant only: a view written in place
    (``out`` is ``a``) takes the plain loops, which keep every access in order: here each
    element is computed from the one the previous iteration wrote."""
    monkeypatch.setenv("PKERNELS_VECTOR_WIDTH", "512")

    @pk.workunit
    def shift_rows(i, a, out):
        for j in range(a.extent(1) - 1):
            out[i, j + 1] = a[i, j] * 0.5 + 1.0

    a = np.arange(5.0 * 40).reshape(5, 40)
    expected = a.copy()
    for j in range(39):
        expected[:, j + 1] = expected[:, j] * 0.5 + 1.0
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 5), shift_rows, a=a, out=a)
    assert the_build(shift_rows).vector_width == "512"
    assert np.array_equal(a, expected)
