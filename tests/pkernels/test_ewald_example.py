"""examples/ewald.py on a small system: its energy against the direct sums, on every CPU
space, and its cell list keeping the particle on the box's upper edge."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from pkt_support import ALL_SPACES

import pkernels as pk

PATH = Path(__file__).resolve().parents[2] / "examples" / "ewald.py"
N = 32  # particles: the Debug space runs the kernels as Python loops


@pytest.fixture(scope="module")
def ewald() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ewald_example", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def system(ewald: ModuleType) -> tuple:
    params = ewald.Params(box=10.5, rc=3.5, xi=1.0, m=24)
    x, q = ewald.particles(N, params.box)
    return params, x, q, ewald.direct_energy(params, x, q)


@pytest.mark.parametrize("space", ALL_SPACES, ids=lambda s: s.name)
def test_energy_matches_the_direct_sums(ewald: ModuleType, system: tuple, space) -> None:
    params, x, q, direct = system
    energy = ewald.ewald_energy(space, params, x.copy(), q.copy())
    # the cell list finds exactly the pairs within the cutoff: the same sum
    assert energy["real"] == pytest.approx(direct["real"], rel=1e-12)
    # the grid (24^3, Gaussian windows of 8^3 points) against every wave vector
    assert energy["recip"] == pytest.approx(direct["recip"], rel=1e-4)
    assert energy["total"] == pytest.approx(direct["total"], rel=5e-5)


def test_the_spaces_agree(ewald: ModuleType, system: tuple) -> None:
    params, x, q, _ = system
    totals = [ewald.ewald_energy(s, params, x.copy(), q.copy())["total"] for s in ALL_SPACES]
    assert totals[1] == pytest.approx(totals[0], rel=1e-12)
    assert totals[2] == pytest.approx(totals[0], rel=1e-12)


def test_a_particle_on_the_upper_edge_is_in_cell_zero(ewald: ModuleType, system: tuple) -> None:
    params, x, _, _ = system
    assert x[-1, 0] == params.box  # the wrapped rounding error: exactly on the edge
    cell, start, counter, order = ewald.cell_list(pk.OpenMP, params, x, np, wrap=True)
    assert tuple(cell[-1]) == (0, params.ncells // 2, params.ncells // 2)
    assert counter.sum() == N and sorted(order) == list(range(N))


def test_the_edge_bug_indexes_one_cell_past_the_end(ewald: ModuleType, system: tuple) -> None:
    params, x, _, _ = system
    # the Debug space runs the kernel on the NumPy arrays: NumPy's IndexError
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        ewald.cell_list(pk.Debug, params, x, np, wrap=False)


def test_main_prints_the_check(ewald: ModuleType, capsys: pytest.CaptureFixture) -> None:
    total = ewald.main(["16", "--check", "--space", "serial"])
    out = capsys.readouterr().out
    assert "16 charges" in out and "direct sums: E = " in out
    assert np.isfinite(total)
