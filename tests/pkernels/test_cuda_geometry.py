"""The launch shapes of pk.Cuda range and MDRange kernels, without a GPU.

The index-to-thread mapping (pkernels.runtime.cuda_geometry) is checked against a Python
walk of the loops the generated kernels run (each thread's grid-stride loops, as
emit_cuda writes them): every index of the range or box is run exactly once, by the
thread the debugger's mapping names. The one-pass reduce and the 32-bit entries of the
generated CUDA compile with nvcc (when it is on the PATH; the GPU tests run them).
"""

from __future__ import annotations

import itertools
import math
import shutil
import subprocess

import numpy as np
import pytest

import pkernels as pk
from pkernels.build.compiler import GENERATED_PATH
from pkernels.build.runtime import include_option
from pkernels.runtime.cuda_geometry import (
    INT32_MAX,
    MAX_GRID_YZ,
    LaunchShape,
    box_shape,
    range_shape,
    thread_number,
    thread_of_box_index,
    thread_of_number,
)
from pkernels.runtime.marshal import argument_type
from pkernels.translate.emit_cuda import ENTRY, ENTRY_32, emit_cuda_module
from pkernels.translate.kernel import lower_workunit


def _walk(shape: LaunchShape, begins: list[int], ends: list[int]):
    """(index, block, thread) for every index each thread runs, in the generated loops'
    order: z over the outer indices flattened, y over the one before the last, x over
    the last (a range: x alone)."""
    counts = [max(0, e - b) for b, e in zip(begins, ends, strict=True)]
    (gx, gy, gz), (bx, by, bz) = shape.grid, shape.block
    for block in itertools.product(range(gx), range(gy), range(gz)):
        for thread in itertools.product(range(bx), range(by), range(bz)):
            first = [block[a] * shape.block[a] + thread[a] for a in range(3)]
            strides = [shape.grid[a] * shape.block[a] for a in range(3)]
            if len(counts) == 1:
                for x in range(first[0], counts[0], strides[0]):
                    yield (begins[0] + x,), block, thread
                continue
            outer_counts = counts[:-2]
            for o in range(first[2], math.prod(outer_counts), strides[2]):
                outer = np.unravel_index(o, outer_counts) if outer_counts else ()
                outer = tuple(int(b + v) for b, v in zip(begins, outer, strict=False))
                for y in range(first[1], counts[-2], strides[1]):
                    for x in range(first[0], counts[-1], strides[0]):
                        index = (*outer, begins[-2] + y, begins[-1] + x)
                        yield index, block, thread


def _check_mapping(kind: str, shape: LaunchShape, begins: list[int], ends: list[int]) -> None:
    geometry = {"kind": kind, **shape.as_geometry(), "begins": begins, "ends": ends}
    seen = {}
    for index, block, thread in _walk(shape, begins, ends):
        assert index not in seen, f"{index} runs twice"
        seen[index] = (block, thread)
        assert thread_of_box_index(geometry, list(index)) == (block, thread), index
        number = thread_number(geometry, block, thread)
        assert thread_of_number(geometry, number) == (block, thread)
    every = set(itertools.product(*(range(b, e) for b, e in zip(begins, ends, strict=True))))
    assert set(seen) == every


@pytest.mark.parametrize(
    ("begin", "end", "max_blocks"), [(0, 1000, None), (-7, 3000, 3), (5, 6, None), (0, 513, 1)]
)
def test_a_range_runs_each_index_once_in_the_thread_the_mapping_names(begin, end, max_blocks):
    shape = range_shape(begin, end, 128, max_blocks)
    if max_blocks is None:  # a for: one index per thread
        assert shape.blocks == -(-(end - begin) // 128)
    else:
        assert shape.blocks <= max_blocks
    _check_mapping("range", shape, [begin], [end])


@pytest.mark.parametrize(
    ("begins", "ends", "tiling", "max_blocks"),
    [
        ([0, 0], [37, 70], None, None),
        ([-3, 2], [40, 9], (4, 16), None),
        ([0, 0], [100, 30], None, 4),
        ([1, 0, 2], [6, 9, 45], None, None),
        ([0, 0, 0], [5, 9, 45], (2, 4, 8), 3),
        ([0, 1, 0, 3], [3, 5, 6, 20], None, None),
        ([0, 0, 0, 0], [3, 4, 5, 7], (2, 2, 2, 4), 2),
        ([0, 0, 0, 0], [3, 4, 5, 7], (3, 1, 1, 5), None),  # 15 threads: a partial warp
    ],
)
def test_a_box_runs_each_index_once_in_the_thread_the_mapping_names(
    begins, ends, tiling, max_blocks
):
    shape = box_shape(begins, ends, 64, tiling, max_blocks)
    counts = [e - b for b, e in zip(begins, ends, strict=True)]
    if tiling is not None:  # the tile is the block: last entry along x, then y, then z
        assert shape.block == (tiling[-1], tiling[-2], math.prod(tiling[:-2]))
    else:  # x first, then y, then z; powers of two no larger than the box
        assert shape.block[0] == min(64, 1 << (counts[-1] - 1).bit_length())
        assert shape.threads <= 64
    if max_blocks is not None:
        assert shape.blocks <= max_blocks
    _check_mapping("box", shape, begins, ends)


def test_the_innermost_index_runs_along_x_one_index_per_thread():
    # A 512^3 stencil: blocks of 256 threads along the last index, a block per (i, j).
    shape = box_shape([0, 0, 0], [512, 512, 512], 256)
    assert shape == LaunchShape((2, 512, 512), (256, 1, 1), True)
    geometry = {"kind": "box", **shape.as_geometry(), "begins": [0, 0, 0],
                "ends": [512, 512, 512]}  # fmt: skip
    # (i, j, k): block (k // 256, j, i), thread k % 256.
    assert thread_of_box_index(geometry, [3, 7, 300]) == ((1, 7, 3), (44, 0, 0))


def test_grids_keep_to_cuda_limits_and_32_bit_indices_only_where_they_fit():
    tall = box_shape([0, 0], [10**8, 1], 256)
    assert tall.block == (1, 256, 1) and tall.grid == (1, MAX_GRID_YZ, 1)
    assert tall.index32
    assert range_shape(0, 10**6, 256).index32
    assert not range_shape(0, INT32_MAX - 10, 256).index32  # the last stride passes 2^31
    assert not range_shape(-(2**31) - 1, 0, 256).index32
    assert not range_shape(0, 3 * 2**31, 256).index32
    assert not range_shape(-(2**31), -100, 256).index32  # the grid's span passes 2^31 - 1
    assert range_shape(-(2**31), -(2**30), 256).index32
    assert not box_shape([0, 0], [2**31 - 1, 2], 256).index32
    assert not box_shape([-(2**31) - 1, 0], [0, 2], 256).index32
    assert box_shape([0, 0, 0, 0], [50, 50, 50, 50], 256, max_blocks=1000).index32


# ---------------------------------------------------------------- generated code


@pk.workunit
def _fill_range(i, out, a: float):
    out[i] = a * i


@pk.workunit
def _sum_f64(i, acc: pk.Acc[pk.float64], x):
    acc += x[i]


@pk.workunit
def _sum_i32(i, acc: pk.Acc[pk.int32], v):
    acc += v[i]


@pk.workunit
def _sum_c128(i, acc: pk.Acc[pk.complex128], z):
    acc += z[i]


@pk.workunit
def _largest_where(i: int, acc: pk.Acc[pk.float], data):
    if data[i] > acc.val:
        acc.val = data[i]
        acc.loc = i


@pk.workunit
def _fill2(i, j, out):
    out[i, j] = i + j


@pk.workunit
def _fill3(i, j, k, out):
    out[i, j, k] = i * j - k


@pk.workunit
def _fill4(i, j, k, m, out):
    out[i, j, k, m] = i + j * k + m


@pk.workunit
def _sum2(i, j, acc: pk.Acc[float], A):
    acc += A[i, j]


@pk.workunit
def _sum3(i, j, k, acc: pk.Acc[pk.int64], A):
    acc += A[i, j, k]


@pk.workunit
def _largest4(i, j, k, m, acc: pk.Acc[float], A):
    acc = max(acc, A[i, j, k, m])


def _source(workunit, operation: str, rank: int = 1, reducer=pk.Sum, **kwargs) -> str:
    arg_types = {name: argument_type(name, value) for name, value in kwargs.items()}
    function, helpers = lower_workunit(workunit, operation, arg_types, rank, reducer)
    index = function.params[0].type
    return emit_cuda_module(function, helpers, operation, index, rank, reducer).source


def test_range_and_box_kernels_compile_with_nvcc_with_both_index_widths(tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on the PATH")
    v = np.zeros(8)
    sources = {
        "range_for": _source(_fill_range, "for", out=v, a=2.0),
        "reduce_f64": _source(_sum_f64, "reduce", x=v),
        "reduce_i32": _source(_sum_i32, "reduce", v=np.zeros(8, np.int32)),
        "reduce_c128": _source(_sum_c128, "reduce", z=np.zeros(8, np.complex128)),
        "reduce_maxloc": _source(_largest_where, "reduce", reducer=pk.MaxLoc, data=v),
        "box2_for": _source(_fill2, "for", 2, out=np.zeros((3, 4))),
        "box3_for": _source(_fill3, "for", 3, out=np.zeros((3, 4, 5))),
        "box4_for": _source(_fill4, "for", 4, out=np.zeros((2, 3, 4, 5))),
        "box2_reduce": _source(_sum2, "reduce", 2, A=np.zeros((3, 4)).T),
        "box3_reduce": _source(_sum3, "reduce", 3, A=np.zeros((3, 4, 5), np.int64)),
        "box4_reduce_max": _source(
            _largest4, "reduce", 4, reducer=pk.Max, A=np.zeros((2, 3, 4, 5))
        ),
    }
    stand_in = tmp_path / "nvrtc_builtins.h"  # NVRTC declares printf; nvcc needs <cstdio>
    stand_in.write_text("#include <cstdio>\n")
    procs = {}
    for name, source in sources.items():
        cu = tmp_path / f"{name}.cu"
        cu.write_text(source.replace(GENERATED_PATH, str(cu)))
        procs[name] = subprocess.Popen(
            [nvcc, "-std=c++17", "-arch=sm_90", "--fmad=false", include_option(),
             "--pre-include", str(stand_in), "-cubin", "-x", "cu", str(cu),
             "-o", str(tmp_path / f"{name}.cubin")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
    failures = {}
    for name, proc in procs.items():
        output, _ = proc.communicate(timeout=600)
        if proc.returncode != 0:
            failures[name] = output[-3000:]
    assert not failures, failures
    for name, source in sources.items():
        # Both entries, and the reduce in one pass (no per-block partials for the host).
        assert f"void __launch_bounds__(256) {ENTRY}(" in source, name
        assert f"void __launch_bounds__(256) {ENTRY_32}(" in source, name
        assert ("pk_rt::grid_reduce(" in source) == ("reduce" in name), name
        cubin = (tmp_path / f"{name}.cubin").read_bytes()
        assert ENTRY.encode() in cubin and ENTRY_32.encode() in cubin, name
    # The box's innermost index runs along x, the outer ones (flattened) along z.
    box4 = sources["box4_for"]
    assert "const PkI pk_i3 = (PkI)pk_b3 + pk_x;" in box4
    assert "const PkI pk_i1 = (PkI)pk_b1 + pk_o % pk_n1;" in box4
