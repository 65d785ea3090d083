"""pk.BinOp1D / pk.BinOp3D / pk.BinSort: Kokkos' bin sort as host code, checked against
Kokkos' binning written out as plain loops (``kokkos_bins``), and used by kernels as
ExaMiniMD uses it (cells of atoms read through the permutation and bin offsets)."""

from __future__ import annotations

import numpy as np
import pytest

import pkernels as pk


def kokkos_bins_1d(keys, max_bins, lo, hi):
    """Kokkos' BinOp1D::bin, one key at a time, as its C++ computes it."""
    integral = np.dtype(keys.dtype).kind in "iu"
    mul = 1.0 if integral and hi - lo <= max_bins else max_bins / (float(hi) - float(lo))
    return [int(mul * (float(k) - float(lo))) for k in keys]  # int(): toward zero, as C


def kokkos_bins_3d(x, nbins, lo, hi):
    mul = [nbins[d] / (hi[d] - lo[d]) for d in range(3)]
    return [
        (int(mul[0] * (p[0] - lo[0])) * nbins[1] + int(mul[1] * (p[1] - lo[1]))) * nbins[2]
        + int(mul[2] * (p[2] - lo[2]))
        for p in x
    ]


def counting_sort(bins, nbins):
    """Counts, exclusive offsets and the permutation (index order within a bin)."""
    count = [0] * nbins
    for b in bins:
        count[b] += 1
    offsets = [sum(count[:b]) for b in range(nbins)]
    permute, filled = [0] * len(bins), [0] * nbins
    for i, b in enumerate(bins):
        permute[offsets[b] + filled[b]] = i
        filled[b] += 1
    return count, offsets, permute


def test_pykokkos_binsort_example_bins_ten_integer_keys_into_six_bins():
    # PyKokkos' examples/pykokkos/binsort.py: keys 10..19, BinOp1D(keys, 5, 10, 19)
    keys = pk.View([10], pk.int32)
    keys[:] = np.arange(10, 20)
    sorter = pk.BinSort(keys, pk.BinOp1D(keys, 5, 10, 19))
    sorter.create_permute_vector()
    np.testing.assert_array_equal(sorter.get_bin_count(), [2, 2, 2, 2, 1, 1])
    np.testing.assert_array_equal(sorter.get_bin_offsets(), [0, 2, 4, 6, 8, 9])
    np.testing.assert_array_equal(sorter.get_permute_vector(), np.arange(10))
    assert sorter.get_bin_count().dtype == np.int32
    assert sorter.get_permute_vector().dtype == np.int64
    assert isinstance(sorter.get_permute_vector(), pk.View)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32])
def test_1d_bins_counts_offsets_and_permutation_are_kokkos(dtype):
    rng = np.random.default_rng(3)
    keys = (rng.random(500) * 90 + 5).astype(dtype)
    lo, hi, max_bins = keys.min(), keys.max(), 17
    sorter = pk.BinSort(keys, pk.BinOp1D(keys, max_bins, lo, hi))
    sorter.create_permute_vector()
    count, offsets, permute = counting_sort(kokkos_bins_1d(keys, max_bins, lo, hi), max_bins + 1)
    np.testing.assert_array_equal(sorter.get_bin_count(), count)
    np.testing.assert_array_equal(sorter.get_bin_offsets(), offsets)
    np.testing.assert_array_equal(sorter.get_permute_vector(), permute)


def test_integer_keys_spanning_fewer_values_than_bins_get_a_bin_each():
    keys = np.array([4, 2, 7, 2, 3], dtype=np.int32)
    sorter = pk.BinSort(keys, pk.BinOp1D(keys, 10, 2, 7))  # 6 values, 11 bins
    sorter.create_permute_vector()
    assert sorter.get_bin_count().tolist() == [2, 1, 1, 0, 0, 1] + [0] * 5
    assert sorter.get_permute_vector().tolist() == [1, 3, 4, 0, 2]


def test_sort_within_bins_orders_1d_keys_ascending_and_sort_moves_values():
    rng = np.random.default_rng(5)
    keys = rng.random(300)
    velocities = rng.random((300, 3))
    ids = np.arange(300, dtype=np.int32)
    sorter = pk.BinSort(keys, pk.BinOp1D(keys, 8, 0.0, 1.0), True)
    sorter.create_permute_vector()
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(sorter.get_permute_vector(), order)
    before = velocities.copy()
    sorter.sort(velocities)
    sorter.sort(ids)
    sorter.sort(keys)
    np.testing.assert_array_equal(velocities, before[order])
    np.testing.assert_array_equal(ids, order)
    assert np.all(np.diff(keys) >= 0)


def test_3d_bins_follow_kokkos_numbering_and_sort_within_bins_is_descending():
    rng = np.random.default_rng(7)
    x = rng.random((400, 3)) * [4.0, 3.0, 2.0]
    nbins, lo, hi = [4, 3, 2], [0.0, 0.0, 0.0], [4.0001, 3.0001, 2.0001]
    sorter = pk.BinSort(x, pk.BinOp3D(x, nbins, lo, hi))
    sorter.create_permute_vector()
    bins = kokkos_bins_3d(x, nbins, lo, hi)
    count, offsets, permute = counting_sort(bins, 24)
    np.testing.assert_array_equal(sorter.get_bin_count(), count)
    np.testing.assert_array_equal(sorter.get_bin_offsets(), offsets)
    np.testing.assert_array_equal(sorter.get_permute_vector(), permute)

    within = pk.BinSort(x, pk.BinOp3D(x, nbins, lo, hi), sort_within_bins=True)
    within.create_permute_vector()
    perm = within.get_permute_vector()
    for b in range(24):
        members = x[perm[offsets[b] : offsets[b] + count[b]]]
        assert {tuple(p) for p in members} == {
            tuple(x[i]) for i in np.flatnonzero(np.array(bins) == b)
        }
        # Kokkos' BinOp3D comparison: larger x first, then y, then z
        assert [tuple(p) for p in members] == sorted(map(tuple, members), reverse=True)


def test_range_form_bins_a_part_of_the_keys_and_sorts_those_rows():
    keys = np.array([9.0, 3.0, 1.0, 2.0, 0.5, 7.0])
    sorter = pk.BinSort(keys, 1, 5, pk.BinOp1D(keys, 3, 0.0, 3.0))  # keys[1:5]
    sorter.create_permute_vector()
    # bins of 3, 1, 2, 0.5: 3, 1, 2, 0 -> indices (absolute) 4, 2, 3, 1
    assert sorter.get_permute_vector().tolist() == [4, 2, 3, 1]
    values = np.array([90, 30, 10, 20, 5, 70])
    # Kokkos' rule: row range_begin + i <- old row values_range_begin - range_begin +
    # permute[i]; by default values_range_begin is 0 (values aligned with the range)
    sorter.sort(values)
    assert values.tolist() == [90, 20, 30, 10, 90, 70]
    values = np.array([90, 30, 10, 20, 5, 70])
    sorter.sort(values, 1, 5)  # Kokkos: rows 1..4 from the matching rows 1..4
    assert values.tolist() == [90, 5, 10, 20, 30, 70]


@pk.workunit
def cell_sums(cell, out, values, permute, offsets, counts):
    total: float = 0.0
    for k in range(counts[cell]):
        total += values[permute[offsets[cell] + k]]
    out[cell] = total


def test_kernels_read_cells_through_the_permutation(space):
    rng = np.random.default_rng(11)
    keys = rng.random(1000) * 10
    values = rng.random(1000)
    sorter = pk.BinSort(keys, pk.BinOp1D(keys, 9, 0.0, 10.0))
    sorter.create_permute_vector()
    out = np.zeros(10)
    pk.parallel_for(
        pk.RangePolicy(space, 0, 10),
        cell_sums,
        out=out,
        values=values,
        permute=sorter.get_permute_vector(),
        offsets=sorter.get_bin_offsets(),
        counts=sorter.get_bin_count(),
    )
    expected = [values[(keys * 0.9).astype(int) == c].sum() for c in range(10)]
    np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_a_key_outside_the_bins_is_named():
    keys = np.array([0.5, 1.5, 12.0, 2.0])
    sorter = pk.BinSort(keys, pk.BinOp1D(keys, 4, 0.0, 4.0))
    with pytest.raises(
        ValueError, match=r"keys\[2\] = 12.0 falls outside the bins 0..4 of BinOp1D"
    ):
        sorter.create_permute_vector()
    x = np.array([[0.5, 0.5, 0.5], [0.5, 2.5, 0.5]])
    sorter = pk.BinSort(x, pk.BinOp3D(x, [2, 2, 2], [0, 0, 0], [2, 2, 2]))
    with pytest.raises(ValueError, match=r"keys\[1, 1\] = 2.5 .* 0..1 along axis 1"):
        sorter.create_permute_vector()
    nan_keys = np.array([0.5, np.nan])
    with pytest.raises(ValueError, match=r"keys\[1\] = nan"):
        pk.BinSort(nan_keys, pk.BinOp1D(nan_keys, 2, 0.0, 1.0)).create_permute_vector()


def test_misuse_gets_clear_errors():
    keys = np.arange(5.0)
    op = pk.BinOp1D(keys, 4, 0.0, 4.0)
    sorter = pk.BinSort(keys, op)
    with pytest.raises(RuntimeError, match=r"get_permute_vector\(\) needs create_permute_vector"):
        sorter.get_permute_vector()
    with pytest.raises(TypeError, match="BinSort takes"):
        pk.BinSort(keys, 4)
    with pytest.raises(ValueError, match="not within the 5 keys"):
        pk.BinSort(keys, 2, 9, op)
    with pytest.raises(ValueError, match="max must be above its min"):
        pk.BinOp1D(keys, 4, 3.0, 3.0)
    with pytest.raises(ValueError, match="max_bins must be a positive integer"):
        pk.BinOp1D(keys, 0, 0.0, 1.0)
    with pytest.raises(ValueError, match="three values"):
        pk.BinOp3D(keys, [2, 2], [0, 0], [1, 1])
    with pytest.raises(ValueError, match=r"keys of shape \(n, 3\)"):
        pk.BinSort(keys, pk.BinOp3D(keys, [2, 2, 2], [0] * 3, [1] * 3)).create_permute_vector()
    sorter.create_permute_vector()
    with pytest.raises(ValueError, match="values has 3 rows"):
        sorter.sort(np.zeros(3))
    with pytest.raises(ValueError, match="has 2 rows, the keys 5"):
        sorter.sort(np.zeros(9), 0, 2)


class KeysView(pk.View):
    def __init__(self, n: int, data_type: pk.DataTypeClass = pk.int32):
        super().__init__([n], data_type)


@pk.workload
class BinSortWorkload:
    """PyKokkos' examples/pykokkos/binsort.py, as written for PyKokkos."""

    def __init__(self, total_threads: int):
        self.total_threads: int = total_threads
        self.view: pk.View1D[pk.int32] = KeysView(total_threads, data_type=pk.int32)
        self.permute_vector: pk.View1D[pk.int32] = pk.View([total_threads], pk.int32)
        self.bin_offsets: pk.View1D[pk.int32] = pk.View([6], pk.int32)
        self.bin_count: pk.View1D[pk.int32] = pk.View([6], pk.int32)

    @pk.main
    def run(self) -> None:
        pk.parallel_for(self.total_threads, self.work)
        bin_op = pk.BinOp1D(
            self.view, (self.total_threads // 2), self.total_threads, self.total_threads * 2 - 1
        )
        bin_sort = pk.BinSort(self.view, bin_op)
        bin_sort.create_permute_vector()
        self.permute_vector = bin_sort.get_permute_vector()
        self.bin_offsets = bin_sort.get_bin_offsets()
        self.bin_count = bin_sort.get_bin_count()
        bin_sort.sort(self.view)

    @pk.workunit
    def work(self, i: int) -> None:
        self.view[i] = 2 * i + self.total_threads - i


def test_pykokkos_binsort_workload_runs_in_its_main(space):
    workload = BinSortWorkload(10)
    pk.execute(space, workload)
    assert workload.view.tolist() == list(range(10, 20))
    assert workload.permute_vector.tolist() == list(range(10))
    assert workload.bin_offsets.tolist() == [0, 2, 4, 6, 8, 9]
    assert workload.bin_count.tolist() == [2, 2, 2, 2, 1, 1]


def test_integer_keys_take_the_bounds_in_their_type_as_kokkos():
    keys = np.arange(11, dtype=np.int32)  # bounds 0.5 and 10.7 are 0 and 10 for int keys
    sorter = pk.BinSort(keys, pk.BinOp1D(keys, 10, 0.5, 10.7))
    sorter.create_permute_vector()
    assert sorter.get_bin_count().tolist() == [1] * 11
