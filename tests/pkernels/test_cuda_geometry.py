"""The launch shapes of pk.Cuda range and MDRange kernels, without a GPU.

The index-to-thread mapping (pkernels.runtime.cuda_geometry) is checked against a Python
walk of the loops the generated kernels run (each thread's grid-stride loops, as
emit_cuda writes them): every index of the range or box is run exactly once, by the
thread the debugger's mapping names. The one-pass reduce and the 32-bit entries of the
generated CUDA compile with nvcc (when it is on the PATH; the GPU tests run them).
"""

from __future__ import annotations

import ctypes
import itertools
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_cuda import gpu

import pkernels as pk
from pkernels.build.compiler import GENERATED_PATH
from pkernels.build.runtime import include_option
from pkernels.runtime.cuda_compile import WIDE_OPTIONS
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
from pkernels.runtime.marshal import argument_type, struct_dtype
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
    # A 512^3 stencil: blocks 64 along the last index by 4 rows (as a hand-written
    # stencil tiles: the rows share their neighbours' loads), a block per (k, j, i) tile.
    shape = box_shape([0, 0, 0], [512, 512, 512], 256)
    assert shape == LaunchShape((8, 128, 512), (64, 4, 1), True, covers=True)
    geometry = {"kind": "box", **shape.as_geometry(), "begins": [0, 0, 0],
                "ends": [512, 512, 512]}  # fmt: skip
    # (i, j, k): block (k // 64, j // 4, i), thread (k % 64, j % 4).
    assert thread_of_box_index(geometry, [3, 7, 300]) == ((4, 1, 3), (44, 3, 0))
    # A box of two rows: the block is as wide as two rows let it be.
    assert box_shape([0, 0], [2, 4096], 256).block == (128, 2, 1)


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


def test_a_launch_covers_its_indices_unless_the_grid_is_capped():
    # Covering: one index per thread, so the 32-bit entry of a `for` runs no stride loop.
    assert range_shape(0, 10**6, 256).covers
    assert range_shape(5, 6, 256).covers
    assert not range_shape(0, 10**6, 256, max_blocks=132).covers  # a reduce's budget
    assert box_shape([1, 1, 1], [511, 511, 511], 256).covers
    assert not box_shape([0, 0], [10**8, 1], 256).covers  # y is capped at 65535 blocks
    assert not box_shape([0, 0, 0, 0], [50, 50, 50, 50], 256, max_blocks=1000).covers


# ---------------------------------------------------------------- generated code


@pk.workunit
def _fill_range(i, out, a: float):
    out[i] = a * i


@pk.workunit
def _sum_f64(i, acc: pk.Acc[pk.float64], x):
    acc += x[i]


@pk.workunit
def _row_sums(i, acc: pk.Acc[pk.float64], A):
    row: float = 0.0
    for k in range(A.extent(1)):  # a loop lanes can share (translate.lane_split)
        row += A[i, k]
    acc += row


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


def test_range_and_box_kernels_compile_with_nvcc_with_both_offset_widths(tmp_path):
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
    wide = {"range_for", "reduce_f64", "box3_for", "box4_reduce_max"}  # and their PK_WIDE
    procs = {}
    for name, source in sources.items():
        cu = tmp_path / f"{name}.cu"
        cu.write_text(source.replace(GENERATED_PATH, str(cu)))
        for build, options in (("release", []), ("wide", list(WIDE_OPTIONS))):
            if build == "wide" and name not in wide:
                continue
            procs[name, build] = subprocess.Popen(
                [nvcc, "-std=c++17", "-arch=sm_90", "--fmad=false", include_option(),
                 "--pre-include", str(stand_in), *options, "-cubin", "-x", "cu", str(cu),
                 "-o", str(tmp_path / f"{name}_{build}.cubin")],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            )  # fmt: skip
    failures = {}
    for key, proc in procs.items():
        output, _ = proc.communicate(timeout=600)
        if proc.returncode != 0:
            failures[key] = output[-3000:]
    assert not failures, failures
    for name, build in procs:
        source = sources[name]
        # Both entries in the source, one per build, and the reduce in one pass (no
        # per-block partials for the host).
        assert f"void __launch_bounds__(256) {ENTRY}(" in source, name
        assert f"void __launch_bounds__(256) {ENTRY_32}(" in source, name
        assert ("pk_rt::grid_reduce(" in source) == ("reduce" in name), name
        symbols = (tmp_path / f"{name}_{build}.cubin").read_bytes().split(b"\0")
        has = (ENTRY.encode() in symbols, ENTRY_32.encode() in symbols)
        assert has == ((False, True) if build == "release" else (True, False)), (name, build)
    # The box's innermost index runs along x, the outer ones (flattened) along z.
    box4 = sources["box4_for"]
    assert "const int64_t pk_i3 = pk_b3 + (int64_t)pk_x;" in box4
    assert "const int64_t pk_i1 = pk_b1 + (int64_t)(pk_o % pk_n1);" in box4


# ---------------------------------------------------------------- the host side, faked


class _FakeMemory:
    """Device memory of the fake CuPy: bytes at a made-up address."""

    next_address = 1 << 20

    def __init__(self, nbytes: int) -> None:
        self.bytes = bytearray(nbytes)
        self.nbytes = nbytes
        self.address = _FakeMemory.next_address
        _FakeMemory.next_address += nbytes + 4096
        self.data = _FakePointer(self, 0)


class _FakePointer:
    def __init__(self, memory: _FakeMemory, offset: int) -> None:
        self.memory, self.offset = memory, offset

    @property
    def ptr(self) -> int:
        return self.memory.address + self.offset

    def __add__(self, n: int) -> _FakePointer:
        return _FakePointer(self.memory, self.offset + n)

    def copy_to_host(self, destination, size: int) -> None:
        data = bytes(self.memory.bytes[self.offset : self.offset + size])
        ctypes.memmove(destination, data, size)


class _FakeKernel:
    """A loaded entry: records its launches; a reduce's launch stores ``result`` at the
    result address it was given (host memory, as the pinned result is), as the last
    block does."""

    max_threads_per_block = 256

    def __init__(self, cupy: _FakeCupy, name: str) -> None:
        self.cupy, self.name, self.ptr = cupy, name, id(self)

    @property
    def kernel(self) -> _FakeKernel:  # RawKernel.kernel: the Function the launcher calls
        return self

    def __call__(self, grid, block, args) -> None:
        self.cupy.launches.append((self.name, grid, block, args))
        if self.cupy.result is not None:
            address = int(args[-3 if self.cupy.result_last else 4])
            assert address in self.cupy.pinned, "the result goes to pinned host memory"
            ctypes.memmove(address, self.cupy.result, len(self.cupy.result))


class _FakeCPointer:
    """CuPy's CPointer (an argument passed by address): int() reads the 8 bytes there."""

    def __init__(self, address: int) -> None:
        self.address = address

    def __int__(self) -> int:
        return ctypes.c_uint64.from_address(self.address).value


class _FakeCupy:
    """What the launcher asks of CuPy for a range or box launch."""

    def __init__(self) -> None:
        self.launches: list = []
        self.allocations = 0
        self.memory: _FakeMemory | None = None
        self.result: bytes | None = None
        self.result_last = False
        self.pinned: dict[int, bytearray] = {}  # address -> pinned host memory
        fake = self

        class Driver:
            @staticmethod
            def occupancyMaxActiveBlocksPerMultiprocessor(handle, size, shared):  # noqa: N802
                return {256: 6, 128: 12, 64: 16, 32: 32}[size]  # 256 threads: 1536 a SM

        class Device:
            id = 1234
            attributes = {"MultiProcessorCount": 10, "MaxThreadsPerMultiProcessor": 2048}

        class Event:
            ptr = 0

            def __init__(self, **kwargs) -> None:
                pass

            def record(self) -> None:
                pass

            def synchronize(self) -> None:
                pass

        class Runtime:
            @staticmethod
            def getDevice():  # noqa: N802
                return 0

            @staticmethod
            def streamQuery(ptr):  # noqa: N802
                return 0  # done: the launches here run at once

        class Function:
            CPointer = _FakeCPointer

        class Cuda:
            driver = Driver
            runtime = Runtime
            function = Function

            def Device(self):  # noqa: N802
                return Device()

            def Event(self, **kwargs):  # noqa: N802
                return Event()

            @staticmethod
            def get_current_stream():
                return Event()  # what the wait reads of it: its ptr

            @staticmethod
            def alloc_pinned_memory(nbytes: int) -> bytearray:
                memory = bytearray(nbytes)
                fake.pinned[np.frombuffer(memory, np.uint8).ctypes.data] = memory
                return memory

        self.cuda = Cuda()

        def zeros(nbytes, dtype):
            assert dtype == np.uint8
            fake.allocations += 1
            fake.memory = _FakeMemory(nbytes)
            return fake.memory

        self.zeros = zeros


def _fake_kernel(workunit, operation: str, rank: int = 1, reducer=pk.Sum, **kwargs):
    from pkernels.runtime.cuda_launch import CudaKernel

    arg_types = {name: argument_type(name, value) for name, value in kwargs.items()}
    function, helpers = lower_workunit(workunit, operation, arg_types, rank, reducer)
    entry = emit_cuda_module(function, helpers, operation, function.params[0].type, rank, reducer)
    cupy = _FakeCupy()

    class Module:
        @staticmethod
        def get_function(name):
            return _FakeKernel(cupy, name)

    def load(wide: bool = False) -> CudaKernel:
        kernel = CudaKernel(
            name="k", operation=operation, filename="f.py", lines=range(1, 2), entry=entry,
            source=Path("kernel.cu"), code=entry.source,
            function=_FakeKernel(cupy, entry.symbol_in("release", wide)), module=Module(),
            wide=wide,
        )  # fmt: skip
        if kernel.narrow:
            kernel.widen = lambda: load(wide=True)
        return kernel

    return load(), cupy


def test_a_range_reduce_launch_reads_back_only_the_result_from_a_kept_scratch(monkeypatch):
    from pkernels.runtime import cuda_launch

    kernel, cupy = _fake_kernel(_sum_f64, "reduce", x=np.zeros(8))
    monkeypatch.setattr(cuda_launch, "_cupy", cupy)  # geometry() asks for CuPy itself
    cupy.result = np.float64(2.5).tobytes()
    total = kernel._launch_range(cupy, pk.RangePolicy(0, 1_000_000), [])
    assert total == 2.5 and type(total) is float
    # 256 threads (1536 resident a multiprocessor, as 128's 12 blocks); 6 blocks a
    # multiprocessor on 10 of them: 60 blocks, the 32-bit entry.
    ((name, grid, block, args),) = cupy.launches
    assert (name, grid, block) == (ENTRY_32, (60, 1, 1), (256, 1, 1))
    base = cupy.memory.address  # the ticket, then the partials; the result: host memory
    (pinned,) = cupy.pinned
    assert [int(a) for a in args] == [0, 1_000_000, base + 16, base, pinned]
    assert cupy.memory.nbytes >= 16 + 60 * 16
    assert kernel.geometry(pk.RangePolicy(0, 1_000_000), {}) == {
        "kind": "range", "blocks": 60, "threads": 256, "grid": [60, 1, 1],
        "block": [256, 1, 1], "begins": [0], "ends": [1_000_000],
    }  # fmt: skip
    # Again, past int32: the same scratch, the 32-bit entry (offsets from the begin).
    kernel._launch_range(cupy, pk.RangePolicy(2**31, 2**31 + 10**6), [])
    assert cupy.allocations == 1
    assert cupy.launches[1][:3] == (ENTRY_32, (60, 1, 1), (256, 1, 1))
    assert kernel._wide is None
    # More than 2^31 indices: the 64-bit build, made now, with its own scratch.
    kernel._launch_range(cupy, pk.RangePolicy(-5, 2**31), [])
    assert cupy.launches[2][:3] == (ENTRY, (60, 1, 1), (256, 1, 1))
    assert [int(a) for a in cupy.launches[2][3][:2]] == [-5 % 2**64, 2**31]  # (as uint64)
    assert kernel._wide.wide and cupy.allocations == 2


def test_a_short_range_of_a_sum_over_a_loop_runs_the_split_entry_on_the_fake_gpu():
    from pkernels.translate.emit_cuda import ENTRY_SPLIT

    kernel, cupy = _fake_kernel(_row_sums, "reduce", A=np.zeros((4, 4)))
    assert kernel.entry.splits
    cupy.result = np.float64(1.5).tobytes()
    # 1000 rows: blocks of 32 rows; 20 threads a row would fit the 10 multiprocessors
    # (20480 threads), the entry's 256-thread blocks take 8 warps.
    assert kernel._launch_range(cupy, pk.RangePolicy(0, 1000), []) == 1.5
    ((name, grid, block, args),) = cupy.launches
    assert (name, grid, block) == (ENTRY_SPLIT, (32, 1, 1), (256, 1, 1))
    assert [int(a) for a in args[:2]] == [0, 1000]
    # 4000 rows: room for 5 threads a row, 4 warps a block; a reduce's grid is the blocks
    # that run at once (12 of 128 threads on each of the 10), which then loop.
    kernel._launch_range(cupy, pk.RangePolicy(0, 4000), [])
    assert cupy.launches[1][:3] == (ENTRY_SPLIT, (120, 1, 1), (128, 1, 1))
    # 12000 rows leave no room for a second thread a row: the 32-bit entry.
    kernel._launch_range(cupy, pk.RangePolicy(0, 12000), [])
    assert cupy.launches[2][0] == ENTRY_32
    # The checked build has no split entry (nor the debug build: pkdb's).
    checked, cupy = _fake_kernel(_row_sums, "reduce", A=np.zeros((4, 4)))
    checked.build = "checked"
    cupy.result = np.float64(0.0).tobytes()
    checked._launch_range(cupy, pk.RangePolicy(0, 1000), [])
    assert cupy.launches[0][0] == ENTRY_32


def test_a_box_reduce_of_a_struct_and_a_for_launch_on_the_fake_gpu():
    kernel, cupy = _fake_kernel(_largest_where, "reduce", reducer=pk.MaxLoc, data=np.zeros(8))
    layout = struct_dtype(kernel.entry.acc_type)  # pk.float is float32: (val, loc) as C++ has it
    cupy.result = np.array([(7.0, 41)], dtype=layout).tobytes()
    found = kernel._launch_range(cupy, pk.RangePolicy(0, 100), [])
    assert found == (7.0, 41) and type(found) is pk.ValLocScalar
    # 100 indices spread over the 10 multiprocessors: blocks of 64 (spread_threads).
    assert cupy.launches[0][1:3] == ((2, 1, 1), (64, 1, 1))
    assert kernel._launch_range(cupy, pk.RangePolicy(5, 5), []) == (-math.inf, 2**63 - 1)
    assert len(cupy.launches) == 1  # an empty range launches nothing
    kernel, cupy = _fake_kernel(_fill3, "for", 3, out=np.zeros((3, 4, 5)))
    kernel._launch_range(cupy, pk.MDRangePolicy([0, 0, 0], [512, 512, 512]), [])
    ((name, grid, block, args),) = cupy.launches
    assert (name, grid, block) == (ENTRY_32, (8, 128, 512), (64, 4, 1))
    assert [int(a) for a in args] == [0, 512, 0, 512, 0, 512]  # no scratch for a for
    tiled = pk.MDRangePolicy([0, 0, 0], [8, 8, 8], tiling=(2, 4, 8))
    kernel._launch_range(cupy, tiled, [])
    assert cupy.launches[1][1:3] == ((1, 2, 4), (8, 4, 2))
    with pytest.raises(pk.DispatchError, match="at most 256 threads per block"):
        kernel._launch_range(cupy, pk.MDRangePolicy([0, 0, 0], [8, 8, 8], tiling=(1, 32, 32)), [])


# ---------------------------------------------------------------- on a GPU


@pk.workunit
def _fill_shifted(i, out, start: int):
    out[i - start] = i


@pytest.fixture
def cp():
    import cupy

    return cupy


@gpu
def test_one_pass_reduces_equal_numpy_and_repeat_bit_for_bit(cp):
    rng = np.random.default_rng(21)
    for n in (1, 31, 257, 100_000, 3_000_001):  # one block to many, grid-stride loops
        x = rng.random(n)
        policy = pk.RangePolicy(pk.Cuda, 0, n)
        first = pk.parallel_reduce(policy, _sum_f64, x=cp.asarray(x))
        assert first == pytest.approx(float(x.sum()), rel=1e-12)
        assert all(pk.parallel_reduce(policy, _sum_f64, x=cp.asarray(x)) == first for _ in range(3))
        v = rng.integers(-100, 101, n).astype(np.int32)
        assert pk.parallel_reduce(policy, _sum_i32, v=cp.asarray(v)) == int(v.sum())
        z = rng.random(n) + 1j * rng.random(n)
        total = pk.parallel_reduce(policy, _sum_c128, z=cp.asarray(z))
        assert total == pytest.approx(complex(z.sum()), rel=1e-12)
        ties = rng.integers(0, 50, n).astype(np.float64)  # the first index of the largest
        found = pk.parallel_reduce(policy, _largest_where, reducer=pk.MaxLoc, data=cp.asarray(ties))
        assert found == (ties.max(), int(ties.argmax()))


@pk.workunit
def _mark_every(i, out, step: int):
    if i % step == 0:
        out[i // step] = i


@pk.workunit
def _count_every(i, acc: pk.Acc[pk.int64], step: int):
    if i % step == 0:
        acc += 1


@gpu
def test_a_range_past_int32_runs_offsets_from_its_begin(cp):
    start = 2**31 - 5
    out = cp.zeros(10, dtype=cp.int64)
    pk.parallel_for(pk.RangePolicy(pk.Cuda, start, start + 10), _fill_shifted, out=out, start=start)
    assert out.get().tolist() == list(range(start, start + 10))
    kernel = next(iter(_fill_shifted.__pkernels__.specializations.values()))
    assert kernel.narrow and kernel._wide is None  # the 32-bit entry ran it


@gpu
def test_launches_too_large_for_32_bit_offsets_run_the_64_bit_build(cp):
    # More than 2^31 indices: a for and a reduce (2^31 + 2 threads' worth of work).
    out = cp.full(4, -1, dtype=cp.int64)
    policy = pk.RangePolicy(pk.Cuda, 5, 2**31 + 7)
    pk.parallel_for(policy, _mark_every, out=out, step=2**30)
    assert out.get().tolist() == [-1, 2**30, 2**31, -1]
    assert pk.parallel_reduce(policy, _count_every, step=2**30) == 2
    for workunit in (_mark_every, _count_every):
        (kernel,) = workunit.__pkernels__.specializations.values()
        assert kernel._wide is not None and kernel._wide.wide, workunit
    # A box taller than 65535 blocks of rows: a for's grid cannot cover it.
    rows = 2 * 10**7
    tall = cp.zeros((rows, 1), dtype=cp.int64)
    pk.parallel_for(pk.MDRangePolicy(pk.Cuda, [0, 0], [rows, 1]), _fill2, out=tall)
    assert bool((tall[:, 0] == cp.arange(rows)).all())


@gpu
@pytest.mark.parametrize("tiling", [None, (2, 4, 8), (3, 1, 5)])
def test_boxes_of_rank_3_and_4_with_and_without_tiling(cp, tiling):
    out3 = cp.zeros((5, 6, 9), dtype=cp.int64)
    pk.parallel_for(pk.MDRangePolicy(pk.Cuda, [1, 0, 2], [5, 6, 9], tiling), _fill3, out=out3)
    i, j, k = np.indices((5, 6, 9))
    expected = np.where((i >= 1) & (k >= 2), i * j - k, 0)
    np.testing.assert_array_equal(out3.get(), expected)
    A = np.random.default_rng(22).integers(-(2**40), 2**40, (7, 8, 40))
    box = pk.MDRangePolicy(pk.Cuda, [1, 2, 3], [7, 8, 40], tiling)
    assert pk.parallel_reduce(box, _sum3, A=cp.asarray(A)) == int(A[1:, 2:, 3:].sum())
    tiling4 = None if tiling is None else (1, *tiling)
    out4 = cp.zeros((3, 4, 5, 33))
    pk.parallel_for(
        pk.MDRangePolicy(pk.Cuda, [0, 1, 0, 0], [3, 4, 5, 33], tiling4), _fill4, out=out4
    )
    i, j, k, m = np.indices((3, 4, 5, 33))
    np.testing.assert_array_equal(out4.get(), np.where(j >= 1, i + j * k + m, 0))
    B = np.random.default_rng(23).normal(size=(3, 4, 5, 33))
    box4 = pk.MDRangePolicy(pk.Cuda, [0, 0, 0, 0], list(B.shape), tiling4)
    assert pk.parallel_reduce(box4, _largest4, reducer=pk.Max, A=cp.asarray(B)) == B.max()


@gpu
def test_a_tiling_past_the_block_limit_is_refused(cp):
    with pytest.raises(pk.DispatchError, match=r"tiling \(32, 32\) makes blocks of 1024 threads"):
        pk.parallel_for(pk.MDRangePolicy(pk.Cuda, [0, 0], [64, 64], (32, 32)), _fill2,
                        out=cp.zeros((64, 64)))  # fmt: skip


def test_a_short_range_spreads_over_the_multiprocessors_in_smaller_blocks():
    from pkernels.runtime.cuda_geometry import spread_threads

    assert spread_threads(8192, 256, 132) == 64  # yAx's rows: 128 blocks, not 32
    assert spread_threads(300, 256, 132) == 64  # never below 64 threads a block
    assert spread_threads(1 << 27, 256, 132) == 256  # a long range keeps its blocks
    assert spread_threads(132 * 256, 256, 132) == 256
    assert spread_threads(131 * 256, 256, 132) == 128
