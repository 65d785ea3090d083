"""A stand-in for CuPy, for the Cuda launch tests on any machine (test_cuda_launch.py,
test_cuda_fast.py): it records what a launch hands to the GPU (the kernel's arguments,
its grid) and answers stream queries as a GPU would."""

from __future__ import annotations

import ctypes
import struct
import types
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from pkernels.runtime import cuda_compile, cuda_fast, cuda_launch, cuda_wait


class _Memory:
    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    def memset_async(self, value: int, size: int) -> None:
        ctypes.memset(self.ptr, value, size)

    def copy_to_host(self, destination: Any, size: int) -> None:
        ctypes.memmove(destination, self.ptr, size)

    def copy_from_host(self, source: Any, size: int) -> None:
        ctypes.memmove(self.ptr, source, size)


class FakeDeviceArray:
    """A "GPU" array over host memory, with what pkernels reads of a CuPy array."""

    __module__ = "cupy"

    def __init__(self, host: np.ndarray) -> None:
        self.host = host
        self.shape, self.strides, self.dtype = host.shape, host.strides, host.dtype
        self.itemsize, self.ndim, self.size, self.flags = (
            host.itemsize, host.ndim, host.size, host.flags
        )  # fmt: skip
        self.data = _Memory(host.__array_interface__["data"][0])

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": self.shape, "typestr": self.dtype.str, "version": 3,
                "data": (self.data.ptr, False), "strides": self.strides}  # fmt: skip

    def get(self) -> np.ndarray:
        return self.host.copy()

    def __getitem__(self, key: Any) -> FakeDeviceArray:
        return FakeDeviceArray(self.host[key])

    def __setitem__(self, key: Any, value: Any) -> None:
        self.host[key] = value.host if isinstance(value, FakeDeviceArray) else value


class FakeCPointer:
    """CuPy's ``CPointer``: the address of an argument's value, passed as it is."""

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


class _Function:
    def __init__(self, calls: list[tuple[Any, ...]]) -> None:
        self.calls = calls
        self.max_threads_per_block = 1024
        self.ptr = id(self)  # its CUfunction, as the C launcher takes it

    def __call__(self, grid: tuple, block: tuple, args: tuple, shared: int = 0) -> None:
        # What the driver would copy at the launch: the 8 bytes at each CPointer.
        taken = tuple(
            ctypes.string_at(a.ptr, 8) if isinstance(a, FakeCPointer) else a for a in args
        )
        self.calls.append((grid, block, taken, shared))


def slot_values(args: tuple[Any, ...], examples: tuple[Any, ...]) -> tuple[Any, ...]:
    """A launch's arguments, each slot's bytes read as the type of its example's value."""
    formats = {float: "<d", int: "<q", bool: "<?", np.float32: "<f", np.int32: "<i"}
    out = []
    for arg, example in zip(args, examples, strict=True):
        if isinstance(arg, bytes):
            code = formats[type(example)]
            arg = type(example)(struct.unpack_from(code, arg)[0])
        out.append(arg)
    return tuple(out)


class _RawKernel:
    """What build_cuda hands back: its ``kernel`` is the Function for this GPU."""

    max_threads_per_block = 1024

    def __init__(self, calls: list[tuple[Any, ...]]) -> None:
        self.kernel = _Function(calls)


class _Module:
    def __init__(self, calls: list[tuple[Any, ...]]) -> None:
        # The fault record (cuda.hpp's pk_rt::Fault: 1024 bytes), and the global that
        # holds the host flag's address (their arrays kept: the memory is theirs).
        self.arrays = [FakeDeviceArray(np.zeros(size, np.uint8)) for size in (1024, 8)]
        self.globals = {
            "pk_fault_record": self.arrays[0].data,
            "pk_fault_host_flag": self.arrays[1].data,
        }
        self.record = self.globals["pk_fault_record"]
        self.calls = calls

    def get_function(self, name: str) -> _RawKernel:  # the 32-bit entry
        return _RawKernel(self.calls)

    def get_global(self, name: str) -> _Memory:
        return self.globals[name]


class FakeEvent:
    made = 0

    def __init__(self, block: bool = False, disable_timing: bool = False) -> None:
        assert block and disable_timing  # a blocking-sync event, no timing
        FakeEvent.made += 1
        self.ptr, self.records, self.synchronized = FakeEvent.made, 0, 0

    def record(self) -> None:
        self.records += 1

    def synchronize(self) -> None:
        self.synchronized += 1


class FakeRuntime:
    """cudaStreamQuery's answers, in order (then cudaSuccess), and the current GPU."""

    def __init__(self) -> None:
        self.answers: list[int] = []
        self.device = 0
        self.queries = 0

    def getDevice(self) -> int:  # noqa: N802 - CuPy's name
        return self.device

    def getDeviceCount(self) -> int:  # noqa: N802 - CuPy's name
        return 1

    def streamQuery(self, ptr: int) -> int:  # noqa: N802 - CuPy's name
        assert ptr == STREAM.ptr  # the current stream's
        self.queries += 1
        return self.answers.pop(0) if self.answers else 0


STREAM = types.SimpleNamespace(ptr=77)  # the current stream


class DriverError(Exception):
    """CuPy's CUDADriverError: a launch the driver refused (its status)."""

    def __init__(self, status: int) -> None:
        super().__init__(f"CUDA driver error {status}")
        self.status = status


class _Device:
    id = 0
    attributes = {"MultiProcessorCount": 4}

    def __init__(self, index: int | None = None) -> None:
        pass


def _fake_cupy(calls: list[tuple[Any, ...]]) -> types.SimpleNamespace:
    def zeros(shape: Any, dtype: Any = np.float64, order: str = "C") -> FakeDeviceArray:
        return FakeDeviceArray(np.zeros(shape, dtype=dtype, order=order))

    def asarray(value: Any) -> FakeDeviceArray:
        if isinstance(value, FakeDeviceArray):
            return value
        face = value.__cuda_array_interface__  # what CuPy reads: the memory, no copy
        dtype, shape = np.dtype(face["typestr"]), face["shape"]
        strides = face["strides"] or np.empty(shape, dtype).strides  # None: C order
        span = sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) + dtype.itemsize
        memory = (ctypes.c_char * span).from_address(face["data"][0])
        return FakeDeviceArray(np.ndarray(shape, dtype, buffer=memory, strides=strides))

    cuda = types.SimpleNamespace(
        runtime=FakeRuntime(), Event=FakeEvent, Device=_Device,
        function=types.SimpleNamespace(CPointer=FakeCPointer), get_current_stream=lambda: STREAM,
        alloc_pinned_memory=bytearray, driver=types.SimpleNamespace(CUDADriverError=DriverError),
    )  # fmt: skip
    return types.SimpleNamespace(
        cuda=cuda, zeros=zeros, empty=zeros, asarray=asarray, ndarray=FakeDeviceArray
    )


def fake_gpu(monkeypatch: pytest.MonkeyPatch, workunits: tuple[Any, ...]) -> Iterator[Any]:
    """CuPy stood in for (a fixture's body): ``.calls`` holds each kernel launch's (grid,
    block, args, shared memory); the kernels are translated for real, not compiled; the
    C launchers find no driver (test_cuda_fast.py gives them one). ``workunits``: those
    the test launches, whose fake kernels are forgotten after it."""
    calls: list[tuple[Any, ...]] = []
    cp = _fake_cupy(calls)
    built: list[str] = []

    def build_cuda(entry: Any, label: str, build: str = "release", wide: bool = False) -> tuple:
        built.append(f"{build} (64-bit)" if wide else build)
        from pathlib import Path

        return Path("kernel.cu"), entry.source, _RawKernel(calls), _Module(calls)

    monkeypatch.setattr(cuda_launch, "_cupy", cp)
    monkeypatch.setattr(cuda_compile, "build_cuda", build_cuda)
    monkeypatch.setattr(cuda_wait, "_events", cuda_wait._ThreadEvents())
    monkeypatch.setattr(cuda_fast, "_driver", [False])
    cp.calls, cp.built = calls, built
    yield cp
    for workunit in workunits:  # no fake kernel outlives the test
        workunit.__pkernels__.specializations.clear()
        workunit.__pkernels__.fast_paths.clear()
