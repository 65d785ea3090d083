"""The Cuda range fast path's C launcher (pkernels.runtime.cuda_fast, _cuda_launch.c) on
any machine: CuPy is stood in for (fake_cupy.py) and the CUDA driver by a small library
built here, which records what cuLaunchKernel is given and answers cuStreamQuery as
told. Checked: the C launcher hands the GPU the bytes the Python way hands CuPy, and it
gives every case it does not take back to the Python way (test_cuda.py's GPU tests run
the real driver)."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fake_cupy
import numpy as np
import pytest
from fake_cupy import STREAM, DriverError, FakeDeviceArray, slot_values
from launch_kernels import fill_cell, first_of_row, scale
from test_cuda import GPU_MISSING

import pkernels as pk
from pkernels.api.random_pools import RandomPool
from pkernels.errors import DispatchError
from pkernels.runtime import cuda_fast

FAKE_DRIVER = r"""
#include <stdint.h>
#include <string.h>
int params = 0, launches = 0, queries = 0, launch_status = 0, result_slot = -1;
int answers[16], n_answers = 0, later = 0; /* later: the answer after those */
int64_t taken[64], result_bits = 0;
unsigned dims[6], dims_shared;
void *function, *stream, *context = (void *)0x5eed;
int32_t *flag_to_set = 0; /* a team launch's fault flag, which the "kernel" sets */
int cuCtxGetCurrent(void **out) { *out = context; return 0; }
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned shared, void *s, void **args, void **extra) {
    unsigned d[6] = {gx, gy, gz, bx, by, bz};
    memcpy(dims, d, sizeof d);
    function = f; stream = s; dims_shared = shared; ++launches;
    for (int k = 0; k < params; ++k) memcpy(&taken[k], args[k], 8);
    if (result_slot >= 0) memcpy((void *)(intptr_t)taken[result_slot], &result_bits, 8);
    if (flag_to_set) *flag_to_set = 1;
    return launch_status;
}
int cuStreamQuery(void *s) { ++queries; return queries <= n_answers ? answers[queries - 1] : later; }
"""

needs_c_launcher = pytest.mark.skipif(
    cuda_fast._cuda_launch is None or shutil.which("gcc") is None,
    reason="the _cuda_launch extension is not built (or no gcc for the stand-in driver)",
)
pytestmark = needs_c_launcher


@pytest.fixture(scope="module")
def driver_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fake-driver")
    (folder / "driver.c").write_text(FAKE_DRIVER)
    path = folder / "libfakecuda.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(path), str(folder / "driver.c")],
                   check=True)  # fmt: skip
    return path


class Driver:
    """The stand-in driver's record (its globals, read through ctypes)."""

    def __init__(self, path: Path) -> None:
        self.lib = ctypes.CDLL(str(path))  # (the library the C launchers have: one state)
        for name in ("params", "launches", "queries", "launch_status", "n_answers", "later"):
            self.set(name, 0)
        self.set("result_slot", -1)
        ctypes.c_void_p.in_dll(self.lib, "context").value = 0x5EED
        ctypes.c_void_p.in_dll(self.lib, "flag_to_set").value = None

    def __getattr__(self, name: str) -> Any:
        return ctypes.c_int.in_dll(self.lib, name).value

    def set(self, name: str, value: int) -> None:
        kind = ctypes.c_int64 if name == "result_bits" else ctypes.c_int
        kind.in_dll(self.lib, name).value = value

    def answer(self, *statuses: int, later: int = 0) -> None:
        """cuStreamQuery's next answers, then ``later`` (0: CUDA_SUCCESS)."""
        self.set("queries", 0)
        self.set("later", later)
        self.set("n_answers", len(statuses))
        answers = (ctypes.c_int * 16).in_dll(self.lib, "answers")
        for k, status in enumerate(statuses):  # (at most 16)
            answers[k] = status

    def taken(self) -> tuple[bytes, ...]:
        """The 8 bytes of each argument of the last launch."""
        slots = (ctypes.c_int64 * 64).in_dll(self.lib, "taken")
        return tuple(int(slots[k]).to_bytes(8, "little", signed=True) for k in range(self.params))

    def shared(self) -> int:
        return ctypes.c_uint.in_dll(self.lib, "dims_shared").value

    def shape(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        dims = list((ctypes.c_uint * 6).in_dll(self.lib, "dims"))
        return tuple(dims[:3]), tuple(dims[3:])

    def pointer(self, name: str) -> int:
        return ctypes.c_void_p.in_dll(self.lib, name).value or 0


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch, driver_library: Path) -> Iterator[Any]:
    """The stand-in CuPy, with the stand-in driver loaded for the C launchers
    (``gpu.driver``); the real one (or none) is back after the test."""
    had_driver = list(cuda_fast._driver)
    for cp in fake_cupy.fake_gpu(
        monkeypatch, (scale, total, sum3, fill, fill_cell, first_of_row, copy_flag, count_odd)
    ):
        assert cuda_fast.use_driver(str(driver_library))
        cp.driver = Driver(driver_library)
        try:
            yield cp
        finally:
            cuda_fast._cuda_launch.load_driver(cuda_fast.DRIVER if had_driver == [True] else None)


@pk.workunit
def total(i, acc, x):
    acc += x[i]


@pk.workunit
def sum3(i, j, k, acc, A):
    acc += A[i][j][k]


@pk.workunit
def fill(i, out, n: pk.int32, pool, z: complex, f: pk.float32, flag: bool):
    out[i] = n


def _python_way(call: Any) -> None:
    """Run ``call`` with the C launchers launching the Python way."""
    old = cuda_fast.set_enabled(False)
    try:
        call()
    finally:
        cuda_fast.set_enabled(old)


def test_the_c_launcher_hands_the_gpu_what_the_python_way_hands_cupy(gpu):
    out, x = FakeDeviceArray(np.zeros(9)), FakeDeviceArray(np.arange(9.0))

    def launch() -> None:
        pk.parallel_for(pk.RangePolicy(pk.Cuda, 1, 8), scale, out=out, x=x, a=2.5)

    launch()  # built, launched the Python way (the C launcher is made after)
    assert gpu.driver.launches == 0 and len(gpu.calls) == 1
    gpu.driver.set("params", 2 + 7)  # the bounds, out's 3 slots, x's 3, a
    launch()
    assert gpu.driver.launches == 1 and len(gpu.calls) == 1  # in C, not through CuPy
    grid, block, python_args, shared = gpu.calls[0]
    assert gpu.driver.shape() == (grid, block) and shared == 0
    assert gpu.driver.taken() == python_args
    expected = (1, 8, out.data.ptr, 9, 1, x.data.ptr, 9, 1, 2.5)
    assert slot_values(gpu.driver.taken(), expected) == expected
    (kernel,) = scale.__pkernels__.specializations.values()
    assert gpu.driver.pointer("function") == kernel.function.kernel.ptr
    assert gpu.driver.pointer("stream") == STREAM.ptr  # CuPy's current stream
    _python_way(launch)
    assert gpu.driver.launches == 1 and gpu.calls[1] == gpu.calls[0]
    view = pk.View.wrapping(x)  # a pk.View: its array
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 1, 8), scale, out=out, x=view, a=2.5)
    assert gpu.driver.launches == 2 and gpu.driver.taken() == python_args


def test_a_reduce_gives_the_total_its_kernel_left_in_host_memory(gpu):
    x = FakeDeviceArray(np.arange(6.0))
    assert pk.parallel_reduce(pk.RangePolicy(pk.Cuda, 0, 6), total, x=x) == 0.0  # the fake's
    gpu.driver.set("params", 2 + 3 + 3)  # bounds, partials, ticket, result, x's 3
    gpu.driver.set("result_slot", 4)  # the "kernel" writes its total where slot 4 points
    gpu.driver.set("result_bits", int(np.float64(15.5).view(np.int64)))
    try:
        assert pk.parallel_reduce(pk.RangePolicy(pk.Cuda, 0, 6), total, x=x) == 15.5
    finally:
        gpu.driver.set("result_slot", -1)
    assert gpu.driver.launches == 1
    bounds = slot_values(gpu.driver.taken()[:2], (0, 0))
    python_lead = gpu.calls[0][2][2:5]
    # Its own scratch: another launch of the kernel at the same time has the other.
    assert bounds == (0, 6) and gpu.driver.taken()[2:5] != python_lead
    assert type(pk.parallel_reduce(pk.RangePolicy(pk.Cuda, 0, 6), total, x=x)) is float
    assert pk.parallel_reduce(pk.RangePolicy(pk.Cuda, 3, 3), total, x=x) == 0.0  # empty
    assert gpu.driver.launches == 2


def test_arguments_of_other_kinds_go_to_their_own_kernel(gpu):
    out, x = FakeDeviceArray(np.zeros(4)), FakeDeviceArray(np.arange(4.0))
    single = FakeDeviceArray(np.arange(4.0, dtype=np.float32))
    policy = pk.RangePolicy(pk.Cuda, 0, 4)
    gpu.driver.set("params", 9)
    pk.parallel_for(policy, scale, out=out, x=x, a=1.0)
    pk.parallel_for(policy, scale, out=out, x=x, a=1.0)
    assert (gpu.built, gpu.driver.launches) == (["release"], 1)
    pk.parallel_for(policy, scale, out=out, x=single, a=1.0)  # another build, the full path
    assert gpu.built == ["release", "release"] and len(gpu.calls) == 2
    pk.parallel_for(policy, scale, out=out, x=single, a=1.0)  # its C launcher, made now
    pk.parallel_for(policy, scale, out=out, x=single, a=1.0)
    assert gpu.driver.launches == 2 and len(gpu.calls) == 3
    pk.parallel_for(policy, scale, out=out, x=x, a=1.0)  # back: the Python way once
    pk.parallel_for(policy, scale, out=out, x=x, a=1.0)
    assert gpu.driver.launches == 3 and len(gpu.calls) == 4 and len(gpu.built) == 2
    pk.parallel_for(policy, scale, out=out, x=x, a=1)  # an int: another build
    assert len(gpu.built) == 3
    with pytest.raises(DispatchError, match="NumPy array"):  # the full path's check
        pk.parallel_for(policy, scale, out=out, x=np.zeros(4), a=1.0)
    with pytest.raises(DispatchError, match="missing x"):
        pk.parallel_for(policy, scale, out=out, a=1.0)


def test_a_box_reduce_of_rank_3_gives_its_total(gpu):
    A = FakeDeviceArray(np.arange(60, dtype=np.int64).reshape(3, 4, 5))
    box = pk.MDRangePolicy(pk.Cuda, [1, 0, 2], [3, 4, 5], [1, 2, 4])
    pk.parallel_reduce(box, sum3, A=A)  # the full path (the fake kernel leaves 0)
    gpu.driver.set("params", 6 + 3 + 7)  # 3 begins and ends, partials, ticket, result, A's
    gpu.driver.set("result_slot", 8)
    gpu.driver.set("result_bits", int(np.float64(-12345.5).view(np.int64)))  # (acc: float)
    assert pk.parallel_reduce(box, sum3, A=A) == -12345.5
    assert gpu.driver.taken()[9:] == gpu.calls[0][2][9:] and gpu.driver.launches == 1


def test_what_the_python_way_refuses_is_refused_with_its_message(gpu):
    out, x = FakeDeviceArray(np.zeros(4)), FakeDeviceArray(np.arange(4.0))
    policy = pk.RangePolicy(pk.Cuda, 0, 4)
    gpu.driver.set("params", 9)
    pk.parallel_for(policy, scale, out=out, x=x, a=1.0)
    odd = FakeDeviceArray(np.zeros(8, np.float64).view(np.uint8)[1:57].view(np.float64))
    odd.strides = (4,)  # not whole elements
    with pytest.raises(DispatchError, match=r"^x: array strides \(4,\) are not multiples"):
        pk.parallel_for(policy, scale, out=out, x=odd, a=1.0)
    assert gpu.driver.launches == 0
    pk.parallel_for(policy, scale, out=out, x=x, a=1.0)
    assert gpu.driver.launches == 1
    with pytest.raises(ValueError, match="outside the int64 range"):
        pk.parallel_for(2**70, scale, out=out, x=x, a=1.0)


def test_scalars_pools_and_their_bounds(gpu):
    out = FakeDeviceArray(np.zeros(3))
    pool = pk.Random_XorShift64_Pool(5, 64)
    kwargs = {"out": out, "n": -7, "pool": pool, "z": 1.5 - 2j, "f": 0.1, "flag": True}
    policy = pk.RangePolicy(pk.Cuda, 0, 3)
    pk.parallel_for(policy, fill, **kwargs)
    python_args = gpu.calls[0][2]
    gpu.driver.set("params", 2 + 3 + 6)
    pk.parallel_for(policy, fill, **kwargs)
    taken = gpu.driver.taken()
    assert pool.launches == 2 and gpu.driver.launches == 1
    keys = RandomPool(5, 64)
    first, second = keys.launch_key(), keys.launch_key()  # a key per launch, each new
    assert [int.from_bytes(a[6], "little") for a in (python_args, taken)] == [first, second]
    assert taken[:6] == python_args[:6] and taken[7:] == python_args[7:]
    with pytest.raises(DispatchError, match=r"^n: 2147483648 does not fit in int32$"):
        pk.parallel_for(policy, fill, **{**kwargs, "n": 2**31})
    assert pool.launches == 2 and gpu.driver.launches == 1  # refused: no key taken


def test_the_wait_after_the_spin_and_a_refused_launch_go_the_python_way(gpu):
    out, x = FakeDeviceArray(np.zeros(4)), FakeDeviceArray(np.arange(4.0))
    policy = pk.RangePolicy(pk.Cuda, 0, 4)
    pk.parallel_for(policy, scale, out=out, x=x, a=1.0)
    gpu.driver.set("params", 9)
    runtime = gpu.cuda.runtime
    before = runtime.queries
    gpu.driver.answer(later=600)  # still running when the C launcher's spin ends
    runtime.answers = [600, 600]  # then done at the wait's third query (it naps first)
    pk.parallel_for(policy, scale, out=out, x=x, a=1.0)
    assert gpu.driver.queries > 1 and runtime.queries == before + 3
    gpu.driver.answer(700)  # a failed kernel: the wait asks CuPy, which raises its error
    runtime.answers = [700]
    pk.parallel_for(policy, scale, out=out, x=x, a=1.0)
    assert runtime.queries == before + 4 and gpu.driver.queries == 1
    gpu.driver.set("launch_status", 1)  # CUDA_ERROR_INVALID_VALUE
    try:
        with pytest.raises(DriverError) as refused:
            pk.parallel_for(policy, scale, out=out, x=x, a=1.0)
    finally:
        gpu.driver.set("launch_status", 0)
    assert refused.value.status == 1
    pk.parallel_for(policy, scale, out=out, x=x, a=1.0)  # the launcher is free again
    assert gpu.driver.launches == 4


def test_a_box_is_launched_in_c_too_and_planned_again_for_another_box(gpu):
    A = FakeDeviceArray(np.zeros((6, 5)))
    policy = pk.MDRangePolicy(pk.Cuda, [1, 0], [6, 5], tiling=[2, 4])
    pk.parallel_for(policy, fill_cell, A=A, value=2.0)  # the full path
    gpu.driver.set("params", 4 + 5 + 1)  # two begins and ends, A's 5 slots, value
    pk.parallel_for(policy, fill_cell, A=A, value=2.0)
    assert gpu.driver.launches == 1 and len(gpu.calls) == 1
    grid, block, python_args, _ = gpu.calls[0]
    assert gpu.driver.shape() == (grid, block) and gpu.driver.taken() == python_args
    again = pk.MDRangePolicy(pk.Cuda, [1, 0], [6, 5], tiling=[1, 2])  # another block
    pk.parallel_for(again, fill_cell, A=A, value=2.0)
    assert gpu.driver.launches == 2 and gpu.driver.shape()[1] == (2, 1, 1)
    _python_way(lambda: pk.parallel_for(again, fill_cell, A=A, value=2.0))
    assert gpu.calls[-1][:3] == (*gpu.driver.shape(), gpu.driver.taken())
    with pytest.raises(DispatchError, match="tiling"):  # the Python way's check, at planning
        pk.parallel_for(pk.MDRangePolicy(pk.Cuda, [0, 0], [6, 5], tiling=[64, 64]), fill_cell,
                        A=A, value=2.0)  # fmt: skip
    pk.parallel_for(policy, fill_cell, A=A, value=2.0)
    assert gpu.driver.launches == 3


def test_a_team_launch_in_c_and_the_fault_it_flags(gpu):
    out = FakeDeviceArray(np.zeros(7))
    policy = pk.TeamPolicy(pk.Cuda, 3, 4).set_scratch_size(0, pk.PerTeam(64))
    pk.parallel_for(policy, first_of_row, out=out, value=2.0)  # the full path
    grid, block, python_args, shared = gpu.calls[0]
    gpu.driver.set("params", len(python_args))
    pk.parallel_for(policy, first_of_row, out=out, value=2.0)
    assert gpu.driver.launches == 1 and len(gpu.calls) == 1
    assert gpu.driver.shape() == ((*grid, 1, 1), (*block, 1, 1))  # (CuPy's: one axis)
    assert gpu.driver.taken() == python_args
    assert gpu.driver.shared() == shared > 0  # the team's level-0 scratch
    (kernel,) = first_of_row.__pkernels__.specializations.values()
    record = kernel.module.record  # what a kernel's first fault leaves in its record
    text = b"team scratch overflow (block 0, thread 1)"
    ctypes.memmove(record.ptr, np.array([1, 4], np.int32).tobytes(), 8)
    ctypes.memmove(record.ptr + 16, text + b"\0", len(text) + 1)
    flag = kernel.host_flag(gpu)
    ctypes.c_void_p.in_dll(gpu.driver.lib, "flag_to_set").value = flag.ctypes.data
    with pytest.raises(pk.KernelTeamError, match="team scratch overflow"):
        pk.parallel_for(policy, first_of_row, out=out, value=2.0)
    assert flag[0] == 0 and ctypes.string_at(record.ptr, 8) == bytes(8)  # cleared after
    ctypes.c_void_p.in_dll(gpu.driver.lib, "flag_to_set").value = None
    pk.parallel_for(policy, first_of_row, out=out, value=2.0)
    assert gpu.driver.launches == 3
    policy.set_scratch_size(0, pk.PerTeam(128))  # the same policy changed: planned anew
    pk.parallel_for(policy, first_of_row, out=out, value=2.0)
    assert gpu.driver.launches == 4 and gpu.driver.shared() > shared
    auto = pk.TeamPolicy(pk.Cuda, 3, pk.AUTO)  # sized by the arguments: the Python way
    pk.parallel_for(auto, first_of_row, out=out, value=2.0)
    pk.parallel_for(auto, first_of_row, out=out, value=2.0)
    assert gpu.driver.launches == 4 and len(gpu.calls) == 3


def test_pkernels_cuda_c_launch_0_turns_the_c_launchers_off():
    probe = "from pkernels.runtime import cuda_fast; print(cuda_fast._driver)"
    env = {**os.environ, cuda_fast.SWITCH: "0"}
    off = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert off.stdout.strip() == "[False]", off.stderr
    env[cuda_fast.SWITCH] = "1"
    on = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert on.stdout.strip() == "[]", on.stderr  # (the driver is looked for at a launch)


def test_a_forgotten_kernel_and_its_launcher_are_collected(gpu):
    import gc
    import weakref

    out, x = FakeDeviceArray(np.zeros(4)), FakeDeviceArray(np.arange(4.0))
    for _ in range(2):
        pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 4), scale, out=out, x=x, a=1.0)
    (kernel,) = scale.__pkernels__.specializations.values()
    assert type(kernel.c_launcher).__name__ == "Launcher"  # which holds the kernel
    gone = weakref.ref(kernel)
    del kernel
    scale.__pkernels__.specializations.clear()
    scale.__pkernels__.fast_paths.clear()
    gc.collect()
    assert gone() is None


def test_a_launch_from_another_thread_while_one_waits_goes_the_python_way(gpu):
    import threading

    out, x = FakeDeviceArray(np.zeros(4)), FakeDeviceArray(np.arange(4.0))
    policy = pk.RangePolicy(pk.Cuda, 0, 4)
    pk.parallel_for(policy, scale, out=out, x=x, a=1.0)
    gpu.driver.set("params", 9)
    gpu.driver.answer(later=600)  # each C launch spins its 200 us with the GIL released
    errors: list[BaseException] = []

    def launches() -> None:
        try:
            for _ in range(50):
                pk.parallel_for(policy, scale, out=out, x=x, a=1.0)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=launches) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    in_c, in_python = gpu.driver.launches, len(gpu.calls) - 1
    assert in_c + in_python == 150 and in_c > 0 and in_python > 0


def test_a_launch_is_planned_again_for_another_range_or_context(gpu, monkeypatch):
    from pkernels.runtime.cuda_launch import CudaKernel

    planned: list[tuple[int, int]] = []
    real = CudaKernel.range_recipe
    monkeypatch.setattr(
        CudaKernel,
        "range_recipe",
        lambda self, cp, policy, scratch: (
            planned.append((policy.begin, policy.end)) or real(self, cp, policy, scratch)
        ),
    )
    out, x = FakeDeviceArray(np.zeros(300)), FakeDeviceArray(np.arange(300.0))
    gpu.driver.set("params", 9)
    for begin, end in [(1, 5), (1, 5), (1, 5), (0, 300), (0, 300), (2, 2), (2, 2)]:
        pk.parallel_for(pk.RangePolicy(pk.Cuda, begin, end), scale, out=out, x=x, a=2.0)
    assert planned == [(1, 5), (0, 300), (2, 2)]  # the first launch is the Python way's
    assert gpu.driver.launches == 4  # (2, 2) is empty: nothing launched
    ctypes.c_void_p.in_dll(gpu.driver.lib, "context").value = 0x600D  # another GPU's
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 2, 2), scale, out=out, x=x, a=2.0)
    assert planned[-1] == (2, 2) and len(planned) == 4


# ---------------------------------------------------------------- on a GPU

gpu_only = pytest.mark.skipif(
    GPU_MISSING is not None, reason=f"needs CuPy and an NVIDIA GPU: {GPU_MISSING}"
)


@pk.workunit
def copy_flag(i, out, flag):
    out[i] = flag[0]


@pk.workunit
def count_odd(i, acc: pk.int32, x):
    if x[i] % 2 == 1:
        acc += 1


@gpu_only
def test_on_a_gpu_the_c_launchers_run_the_launches_after_the_first(monkeypatch):
    import cupy as cp

    from pkernels.backends.cuda import RangeLauncher

    python_way: list[int] = []
    real = RangeLauncher.launch
    monkeypatch.setattr(
        RangeLauncher, "launch", lambda self, *args: python_way.append(1) or real(self, *args)
    )
    n = 100_003
    x = cp.arange(n, dtype=cp.float64)
    out = cp.zeros(n)
    for a in (1.0, 2.0, 3.0):
        pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, n), scale, out=out, x=x, a=a)
        np.testing.assert_array_equal(out.get(), a * np.arange(n))
    assert python_way == []  # the first: the full path; the others in C
    (kernel,) = scale.__pkernels__.specializations.values()
    assert type(kernel.c_launcher).__name__ == "Launcher"
    sums = [pk.parallel_reduce(pk.RangePolicy(pk.Cuda, 0, n), total, x=x) for _ in range(3)]
    assert sums == [float(n * (n - 1) // 2)] * 3 and python_way == []
    ints = cp.arange(n, dtype=cp.int64)
    odd = [
        pk.parallel_reduce(pk.RangePolicy(pk.Cuda, b, n), count_odd, x=ints) for b in (0, 0, 1, 2)
    ]
    assert odd == [n // 2, n // 2, n // 2, n // 2 - 1] and all(type(v) is int for v in odd)
    _python_way(lambda: sums.append(pk.parallel_reduce(pk.RangePolicy(pk.Cuda, 0, n), total, x=x)))
    assert sums[-1] == sums[0] and python_way == [1]


@gpu_only
def test_on_a_gpu_the_c_launcher_launches_on_cupys_current_stream():
    """A kernel ordered after another on a non-blocking stream sees what that one wrote
    (on the legacy default stream it would run beside it and read the flag unset)."""
    import cupy as cp

    slow_kernel = cp.RawKernel(
        r"""extern "C" __global__ void slow_then_flag(double *flag) {
            long long start = clock64();
            while (clock64() - start < 200000000LL) {}
            flag[0] = 1.0;
        }""",
        "slow_then_flag",
    )
    flag, out = cp.zeros(1), cp.zeros(4)
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 4), copy_flag, out=out, flag=flag)  # built
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        slow_kernel((1,), (1,), (flag,))
        pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 4), copy_flag, out=out, flag=flag)
    assert out.get().tolist() == [1.0] * 4
    (kernel,) = copy_flag.__pkernels__.specializations.values()
    assert type(kernel.c_launcher).__name__ == "Launcher"


@gpu_only
def test_on_a_gpu_a_box_s_launches_after_the_first_are_the_c_launchers():
    import cupy as cp

    A = cp.zeros((300, 70))
    for value, tiling in [(1.0, None), (2.0, None), (3.0, [4, 32]), (4.0, [4, 32])]:
        policy = pk.MDRangePolicy(pk.Cuda, [1, 2], [300, 70], tiling=tiling)
        pk.parallel_for(policy, fill_cell, A=A, value=value)
        expected = np.zeros((300, 70))
        expected[1:, 2:] = value
        np.testing.assert_array_equal(A.get(), expected)
    (kernel,) = fill_cell.__pkernels__.specializations.values()
    assert type(kernel.c_launcher).__name__ == "Launcher"
    assert fill_cell.__pkernels__.fast_paths[("for", 2)][1] is kernel.c_launcher


@gpu_only
def test_on_a_gpu_a_team_s_launches_after_the_first_are_the_c_launchers_faults_too():
    import cupy as cp
    from team_kernels import pooled_scratch, pooled_scratch_expected

    def size(n: int) -> int:
        return pk.ScratchView1D[pk.int64].shmem_size(n)

    policy = (
        pk.TeamPolicy(pk.Cuda, 6, 4)
        .set_scratch_size(0, pk.PerTeam(size(4) + size(1)))
        .set_scratch_size(0, pk.PerThread(size(4)))
    )
    out = cp.zeros((6, 4), cp.int64)
    for _ in range(3):
        out[:] = 0
        pk.parallel_for(policy, pooled_scratch, out=out, n=4)
        np.testing.assert_array_equal(out.get(), pooled_scratch_expected(6, 4, 4))
    (kernel,) = pooled_scratch.__pkernels__.specializations.values()
    assert type(kernel.c_launcher).__name__ == "Launcher"
    with pytest.raises(pk.KernelTeamError, match="needs 40 bytes of level-0"):
        pk.parallel_for(policy, pooled_scratch, out=out, n=5)  # the C launcher's fault
    pk.parallel_for(policy, pooled_scratch, out=out, n=4)  # the flag and record cleared
    np.testing.assert_array_equal(out.get(), pooled_scratch_expected(6, 4, 4))
