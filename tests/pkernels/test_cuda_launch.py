"""The Cuda space's launch path, on any machine: a stand-in for CuPy records what a
launch hands to the GPU (the kernel's arguments, its grid) and answers event queries as
a GPU would, so the argument forms, the dispatch's fast path, the wait after a launch,
the views' layouts and ``__cuda_array_interface__`` objects are checked without a GPU
(test_cuda.py runs the same on one)."""

from __future__ import annotations

import ctypes
import threading
import types
from typing import Any

import fake_cupy
import numpy as np
import pytest
from fake_cupy import FakeCPointer, FakeDeviceArray, FakeEvent, slot_values
from launch_kernels import fill_cell, fill_rows, first_of_row, scale

import pkernels as pk
from pkernels.api.random_pools import RandomPool
from pkernels.api.types import bool_, complex64, complex128, float32, float64, int32, int64
from pkernels.api.types import uint64 as uint64_type
from pkernels.backends.cuda import CudaBackend
from pkernels.errors import DispatchError
from pkernels.runtime import cuda_wait
from pkernels.runtime.cuda_arguments import CudaArgumentPlan
from pkernels.translate.ir import Param, ViewType


def full_paths(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one at each dispatch that takes the full path (asks the Cuda
    backend for its kernel)."""
    kernels: list[int] = []
    real_kernel = CudaBackend.kernel
    monkeypatch.setattr(
        CudaBackend, "kernel", lambda self, launch: kernels.append(1) or real_kernel(self, launch)
    )
    return kernels


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> Any:
    """CuPy stood in for (see fake_cupy.fake_gpu)."""
    yield from fake_cupy.fake_gpu(monkeypatch, (scale, fill_rows, fill_cell, first_of_row))


# ---------------------------------------------------------------- the argument plan


def _params(**types_: Any) -> list[Param]:
    return [Param(name, t) for name, t in types_.items()]


def test_views_pass_pointer_extents_and_strides_in_elements_as_python_ints():
    host = np.zeros((4, 6), order="F")[:, ::-2]  # column-major, every other column reversed
    A = FakeDeviceArray(host)
    plan = CudaArgumentPlan(_params(A=ViewType(float64, 2)))
    args = plan.marshal({"A": A})
    assert args == [A.data.ptr, 4, 3, 1, -8]
    assert all(type(a) is int for a in args)  # CuPy packs a Python int as 8 bytes
    view = pk.View.wrapping(A)
    assert plan.marshal({"A": view}) == args  # a pk.View: its array


def test_scalars_take_their_parameters_types():
    plan = CudaArgumentPlan(
        _params(d=float64, f=float32, i=int32, n=int64, b=bool_, z=complex128, w=complex64)
    )
    args = plan.marshal({"d": 2, "f": 0.1, "i": np.int64(-7), "n": 2**40, "b": 3, "z": 1 + 2j,
                         "w": np.complex64(3 - 4j)})  # fmt: skip
    assert args == [2.0, np.float32(0.1), -7, 2**40, True, 1.0, 2.0, 3.0, -4.0]
    kinds = [type(a) for a in args]
    assert kinds == [float, np.float32, np.int32, int, bool, float, float,
                     np.float32, np.float32]  # fmt: skip


def _bytes_cupy_packs(value: Any) -> bytes:
    """The bytes CuPy's CScalar holds for a value (cupy/_core/_scalar.pyx): a Python int
    as an int64 (a uint64 from 2**63), a float as a float64, a bool as NumPy's bool, a
    NumPy scalar as its own type."""
    if type(value) is int:
        return np.array(value, np.uint64 if value >= 2**63 else np.int64).tobytes()
    if type(value) in (float, bool):
        return np.array(value).tobytes()
    return np.asarray(value).tobytes()


def test_the_packed_slots_hold_what_cupy_would_pack_of_the_values():
    A = FakeDeviceArray(np.zeros((3, 4), order="F"))
    plan = CudaArgumentPlan(
        _params(A=ViewType(float64, 2), d=float64, f=float32, i=int32, u=uint64_type, b=bool_,
                small=pk.int8, w=complex64, n=int64)
    )  # fmt: skip
    kwargs = {"A": A, "d": -1.5, "f": 3.25, "i": -9, "u": 2**64 - 2, "b": True, "small": -3,
              "w": 1.5 - 2.5j, "n": -(2**63)}  # fmt: skip
    cp = types.SimpleNamespace(cuda=types.SimpleNamespace(function=types.SimpleNamespace(
        CPointer=FakeCPointer)))  # fmt: skip
    pointers = plan.packed(kwargs, cp)
    values = plan.marshal(kwargs)
    assert len(pointers) == len(values) == 5 + 9
    for pointer, value in zip(pointers, values, strict=True):
        expected = _bytes_cupy_packs(value)
        assert ctypes.string_at(pointer.ptr, len(expected)) == expected, value
    assert plan.packed(kwargs, cp) is pointers  # made once: the buffer is rewritten


def test_bad_arguments_are_refused_by_name_before_a_pool_key_is_taken():
    pool = pk.Random_XorShift64_Pool(5, 64)
    plan = CudaArgumentPlan(_params(p=uint64_type, small=int32))
    with pytest.raises(DispatchError, match=r"^small: 2147483648 does not fit in int32$"):
        plan.marshal({"p": pool, "small": 2**31})
    assert pool.launches == 0  # nothing was refused after the key: none taken
    first = plan.marshal({"p": pool, "small": 1})
    assert first[0] == RandomPool(5, 64).launch_key() and pool.launches == 1
    assert plan.marshal({"p": 2**64 - 1, "small": 0})[0] == 2**64 - 1  # a uint64 number
    x = FakeDeviceArray(np.zeros(8, np.float64).view(np.uint8)[1:57].view(np.float64))
    x.strides = (4,)  # not whole elements
    with pytest.raises(DispatchError, match=r"^x: array strides \(4,\) are not multiples"):
        CudaArgumentPlan(_params(x=ViewType(float64, 1))).marshal({"x": x})


# ---------------------------------------------------------------- launches


def test_the_fast_path_launches_what_the_full_path_does(fake_gpu, monkeypatch):
    out, x = FakeDeviceArray(np.zeros(5)), FakeDeviceArray(np.arange(5.0))
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 1, 5), scale, out=out, x=x, a=2.0)
    kernels = full_paths(monkeypatch)
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 1, 5), scale, out=out, x=x, a=2.0)
    pk.set_default_space(pk.Cuda)
    pk.parallel_for(5, scale, out=out, x=x, a=2.0)  # an int policy: RangePolicy(0, 5)
    assert not kernels  # neither took the full path
    assert fake_gpu.built == ["release"]
    full, fast, from_int = (call[2] for call in fake_gpu.calls)
    # The kernel's own arguments come last (the launch's bounds first: 1, 5 or 0, 5).
    expected = (out.data.ptr, 5, 1, x.data.ptr, 5, 1, 2.0)
    assert full == fast and slot_values(full[-7:], expected) == expected
    assert from_int[-7:] == full[-7:] and from_int != full
    (kernel,) = scale.__pkernels__.specializations.values()
    with kernel._plan.buffer_lock:  # another thread launching it: the values go to CuPy
        pk.parallel_for(pk.RangePolicy(pk.Cuda, 1, 5), scale, out=out, x=x, a=2.0)
    assert fake_gpu.calls[-1][2][-7:] == expected
    assert [type(a) for a in fake_gpu.calls[-1][2][-7:]] == [int] * 6 + [float]
    with pytest.raises(DispatchError, match="NumPy array"):  # another key: the full path's check
        pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 5), scale, out=np.zeros(5), x=x, a=2.0)
    with pytest.raises(ValueError, match="outside the int64 range"):
        pk.parallel_for(2**70, scale, out=out, x=x, a=2.0)


def test_a_team_dispatch_again_takes_the_fast_path_and_launches_what_the_first_did(
    fake_gpu, monkeypatch
):
    out = FakeDeviceArray(np.zeros(7))
    policy = pk.TeamPolicy(pk.Cuda, 3, 4)
    pk.parallel_for(policy, first_of_row, out=out, value=2.0)
    kernels = full_paths(monkeypatch)
    pk.parallel_for(policy, first_of_row, out=out, value=2.0)
    pk.parallel_for(pk.TeamPolicy(pk.Cuda, 7, 4), first_of_row, out=out, value=2.0)
    assert not kernels and fake_gpu.built == ["release"]  # loaded once, then the fast path
    first, again, seven = fake_gpu.calls
    assert first == again
    # A block per team (a for without level-1 scratch), 4 threads each; the league first.
    assert (first[0], first[1], seven[0]) == ((3,), (4,), (7,))
    assert slot_values(first[2][:1], (0,)) == (3,) and slot_values(seven[2][:1], (0,)) == (7,)
    # A NumPy array is no loaded kernel's argument: the full path refuses it.
    with pytest.raises(DispatchError, match="NumPy array"):
        pk.parallel_for(policy, first_of_row, out=np.zeros(7), value=2.0)
    assert kernels == [1]


def test_an_mdrange_dispatch_again_takes_the_fast_path_and_launches_what_the_first_did(
    fake_gpu, monkeypatch
):
    A = FakeDeviceArray(np.zeros((6, 5)))
    policy = pk.MDRangePolicy(pk.Cuda, [1, 0], [6, 5], tiling=[2, 4])
    pk.parallel_for(policy, fill_cell, A=A, value=2.0)
    kernels = full_paths(monkeypatch)
    pk.parallel_for(policy, fill_cell, A=A, value=2.0)
    pk.parallel_for(pk.MDRangePolicy(pk.Cuda, [0, 0], [6, 5]), fill_cell, A=A, value=2.0)
    assert not kernels and fake_gpu.built == ["release"]  # loaded once, then the fast path
    first, again, whole = fake_gpu.calls
    assert first == again and first[1] == (4, 2, 1)  # the tiling as the block (x: j)
    assert slot_values(first[2][:4], (0,) * 4) == (1, 6, 0, 5)  # each axis' begin, end
    assert slot_values(whole[2][:4], (0,) * 4) == (0, 6, 0, 5) and whole[2][4:] == first[2][4:]
    with pytest.raises(DispatchError, match="tiling"):  # the launch's own check
        pk.parallel_for(pk.MDRangePolicy(pk.Cuda, [0, 0], [6, 5], tiling=[64, 64]), fill_cell,
                        A=A, value=2.0)  # fmt: skip
    with pytest.raises(DispatchError, match="NumPy array"):  # no loaded kernel's: full path
        pk.parallel_for(policy, fill_cell, A=np.zeros((6, 5)), value=2.0)
    assert kernels == [1]


def test_a_range_launched_again_is_shaped_once_and_another_range_anew(fake_gpu, monkeypatch):
    """The grid, block and bounds of the last range a kernel ran are kept for the next
    launch over it; a launch over another range, or an empty one, is shaped for itself."""
    from pkernels.runtime import cuda_launch as launching

    shaped: list[tuple[int, int]] = []
    real_shape = launching.range_shape
    monkeypatch.setattr(
        launching,
        "range_shape",
        lambda begin, end, *rest: shaped.append((begin, end)) or real_shape(begin, end, *rest),
    )
    out, x = FakeDeviceArray(np.zeros(300)), FakeDeviceArray(np.arange(300.0))
    for begin, end in [(1, 5), (1, 5), (1, 5), (0, 300), (1, 5), (3, 3)]:
        pk.parallel_for(pk.RangePolicy(pk.Cuda, begin, end), scale, out=out, x=x, a=2.0)
    assert shaped == [(1, 5), (0, 300), (1, 5)]  # (3, 3) is empty: nothing launched
    bounds = [call[2][:2] for call in fake_gpu.calls]
    assert [slot_values(pair, (0, 0)) for pair in bounds] == [(1, 5)] * 3 + [(0, 300), (1, 5)]
    assert fake_gpu.calls[0][:2] == fake_gpu.calls[2][:2]  # the same grid and block


@pytest.mark.skipif(cuda_wait._PRCTL is None, reason="the timer slack is Linux's (prctl)")
def test_naps_have_a_timer_slack_of_1_us_and_leave_the_thread_s_as_it_was(fake_gpu, monkeypatch):
    # Linux wakes a sleeper up to its timer slack late (50 us by default): a nap of 10 us
    # lasted some 70, and a kernel's end was seen that much later.
    def slack() -> int:
        return cuda_wait._PRCTL(cuda_wait._PR_GET_TIMERSLACK, 0, 0, 0, 0)

    runtime = fake_gpu.cuda.runtime
    seen: list[int] = []
    query = runtime.streamQuery
    monkeypatch.setattr(runtime, "streamQuery", lambda ptr: seen.append(slack()) or query(ptr))
    monkeypatch.setattr(cuda_wait, "SPIN_SECONDS", 0.0)
    before = slack()
    runtime.answers = [600] * 3  # the first poll, then two naps, done at the third
    cuda_wait.wait_for_stream(fake_gpu)
    assert seen == [before, 1000, 1000, 1000]
    assert slack() == before


def test_a_launch_polls_its_stream_naps_between_polls_then_sleeps_on_an_event(
    fake_gpu, monkeypatch
):
    runtime = fake_gpu.cuda.runtime
    first = FakeEvent.made
    runtime.answers = [600, 600]  # not ready twice, then done: polled, no event at all
    cuda_wait.wait_for_stream(fake_gpu)
    assert (runtime.queries, FakeEvent.made) == (3, first)
    monkeypatch.setattr(cuda_wait, "SPIN_SECONDS", 0.0)
    runtime.answers = [600] * 3  # done after three naps: still no event
    cuda_wait.wait_for_stream(fake_gpu)
    assert (runtime.queries, FakeEvent.made) == (7, first)
    monkeypatch.setattr(cuda_wait, "NAP_SECONDS", 0.0)
    runtime.answers = [600, 600]  # still running when the polling ends: sleep on an event
    cuda_wait.wait_for_stream(fake_gpu)
    (event,) = cuda_wait._events.by_device.values()
    assert (event.records, event.synchronized) == (1, 1)
    runtime.answers = [700]  # a failed kernel: synchronize raises CUDA's error
    cuda_wait.wait_for_stream(fake_gpu)
    assert (event.records, event.synchronized) == (2, 2)
    made = FakeEvent.made
    runtime.answers = [700]
    cuda_wait.wait_for_stream(fake_gpu)
    runtime.device = 1  # another GPU: an event of its own
    runtime.answers = [700]
    cuda_wait.wait_for_stream(fake_gpu)
    runtime.answers = [700]
    other = threading.Thread(target=cuda_wait.wait_for_stream, args=(fake_gpu,))
    other.start()
    other.join()
    assert FakeEvent.made == made + 2  # one per (thread, GPU), reused after


def test_a_printing_kernels_wait_synchronises_so_its_lines_come_out(fake_gpu):
    """Device printf's lines reach stdout at a synchronisation, not when a query finds
    the kernel done: a kernel that prints is waited for by synchronising."""
    runtime = fake_gpu.cuda.runtime
    runtime.answers = []  # done at once
    cuda_wait.wait_for_stream(fake_gpu, prints=True)
    (event,) = cuda_wait._events.by_device.values()
    assert (event.records, event.synchronized, runtime.queries) == (1, 1, 0)


# ---------------------------------------------------------------- layouts


def test_views_on_the_gpu_are_layout_left_by_default(fake_gpu):
    A = pk.View([3, 4], pk.double, space=pk.CudaSpace)
    assert A.data.host.flags.f_contiguous and A.layout is pk.LayoutLeft
    assert pk.get_default_layout(pk.CudaSpace) is pk.LayoutLeft
    column = pk.View([3, 1], pk.double, space=pk.CudaSpace)  # both orders: as made
    assert column.layout is pk.LayoutLeft
    right = pk.View([3, 4], pk.double, space=pk.CudaSpace, layout=pk.LayoutRight)
    assert right.data.host.flags.c_contiguous and right.layout is pk.LayoutRight
    assert pk.View([3, 1], pk.double).layout is pk.LayoutRight  # the host's default
    assert pk.View([3, 4], pk.double).data.flags.c_contiguous
    pk.set_default_space(pk.Cuda)
    B = pk.View([3, 4], pk.double)
    assert B.layout is pk.LayoutLeft and isinstance(B.data, FakeDeviceArray)
    B.resize(0, 5)
    assert B.data.host.flags.f_contiguous and B.shape == (5, 4)
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 5), fill_rows, A=B, value=1.0)
    expected = (B.data.data.ptr, 5, 4, 1, 5, 1.0)  # the strides of F order
    assert slot_values(fake_gpu.calls[-1][2][-len(expected) :], expected) == expected


# ---------------------------------------------------------------- other GPU arrays


class CudaArrayInterface:
    """An object of another library with GPU memory: only ``__cuda_array_interface__``
    (version 2: strides None when C-contiguous)."""

    def __init__(self, array: FakeDeviceArray) -> None:
        self._array = array

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        face = dict(self._array.__cuda_array_interface__, version=2)
        if self._array.host.flags.c_contiguous:
            face["strides"] = None
        return face


def test_cuda_array_interface_objects_are_views_of_cuda_kernels(fake_gpu):
    host_out = np.zeros(5)
    out = CudaArrayInterface(FakeDeviceArray(host_out))
    x = CudaArrayInterface(FakeDeviceArray(np.arange(10.0)[::2]))
    pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 5), scale, out=out, x=x, a=3.0)
    expected = (host_out.ctypes.data, 5, 1, x._array.data.ptr, 5, 2, 3.0)
    assert slot_values(fake_gpu.calls[-1][2][-len(expected) :], expected) == expected
    view = pk.array(out)
    assert isinstance(view.data, FakeDeviceArray) and view.data.data.ptr == host_out.ctypes.data


def test_a_gpu_array_given_to_a_cpu_space_is_refused_by_name():
    x = CudaArrayInterface(FakeDeviceArray(np.zeros(3)))
    with pytest.raises(
        DispatchError, match=r"^x: a CuPy array \(GPU memory\) cannot be used by a CPU"
    ):
        pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 3), scale, out=np.zeros(3), x=x, a=1.0)
