"""The Cuda range fast path in one C call: :func:`c_launcher` makes, for a loaded release
kernel, the C ``Launcher`` (``_cuda_launch.c``) that checks and packs a dispatch's
arguments, launches through the CUDA driver on CuPy's current stream and polls it, where
the Python way (:class:`~pkernels.backends.cuda.RangeLauncher`) goes through the
signature key, the argument plan and CuPy's launch call.

Right after another library's host work (CuPy's own expressions) swept the CPU's caches,
every Python object on the Python way came back from memory, and a pk.Cuda call cost
some 150 us more than the same kernel launched through ``RawKernel``
(bench/bench_cuda_dispatch.py). The C launcher touches a few objects per argument.

It takes what the Python way takes, no more: a release build's ``for`` or ``reduce``
over a range or an MDRange box (a reduce of a number), or a ``for`` over a TeamPolicy
of an explicit team size without level-1 scratch; no ``print``; arguments of the kinds
the kernel was built for. It hands back everything else, each to the Python function
that does it today: other arguments (``other``); a range that is empty or needs the
64-bit build, a team launch of pk.AUTO (``slow``, the kernel's Python launch); a kernel
still running after :data:`~.cuda_wait.SPIN_SECONDS` (:func:`~.cuda_wait.wait_for_stream`,
which naps and raises a failed kernel's error); a launch the driver refuses (CuPy's
``CUDADriverError``); a team launch that flagged a fault (its ``Kernel*Error``).
Without the C extension or the driver, or with ``PKERNELS_CUDA_C_LAUNCH=0`` in the
environment, launches go the Python way.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

from ..api.policies import RangePolicy
from ..api.spaces import ExecutionSpace
from ..api.views import View
from ..translate.emit_cuda import TEAM
from ..translate.ir import StructType
from . import cuda_arguments as arguments
from .cuda_launch import CudaKernel, cupy_module
from .cuda_occupancy import ReduceScratch
from .cuda_wait import SPIN_SECONDS, wait_for_stream
from .marshal import signature_key, view_layout

# The C launcher, built at install where a C compiler and Python's headers are there;
# without it (or with one built from another version of _cuda_launch.c: an editable
# install not rebuilt since), launches go the Python way.
_C_INTERFACE = 2
try:
    from . import _cuda_launch as _built
except ImportError:  # pragma: no cover - not built
    _cuda_launch: Any = None
else:
    _cuda_launch = _built if getattr(_built, "INTERFACE", 0) == _C_INTERFACE else None

#: The CUDA driver library the launchers call (CuPy has it loaded already).
DRIVER = "libcuda.so.1"

#: A reduce's total as the C launcher reads it (the order of _cuda_launch.c's R_*).
RESULT_KINDS = {"float64": 1, "float32": 2, "int64": 3, "int32": 4, "int16": 5, "int8": 6,
                "uint64": 7, "uint32": 8, "uint16": 9, "uint8": 10, "bool": 11}  # fmt: skip

#: The policy attributes a box's or a team's launches are told apart by (a range's: its
#: begin and end).
KEY_NAMES = {
    2: ("begins", "ends", "tiling"), 3: ("begins", "ends", "tiling"),
    4: ("begins", "ends", "tiling"),
    TEAM: ("league_size", "team_size", "team_scratch", "thread_scratch"),
}  # fmt: skip

#: The environment variable that turns the C launchers off (``0``).
SWITCH = "PKERNELS_CUDA_C_LAUNCH"

# [whether load_driver found it], once tried ([False]: switched off)
_driver: list[bool] = [False] if os.environ.get(SWITCH, "").strip() == "0" else []


def use_driver(path: str | None) -> bool:
    """Make the C launchers call the CUDA driver at ``path`` (None: none, every launch
    goes the Python way); True where it has the functions they call."""
    _driver[:] = [_cuda_launch is not None and bool(_cuda_launch.load_driver(path))]
    return _driver[0]


def set_enabled(flag: bool) -> bool:
    """Whether C launchers launch in C (False: the Python way, as without the extension);
    returns the old value. For measuring one way against the other."""
    return bool(_cuda_launch.set_enabled(flag)) if _cuda_launch is not None else False


def c_launcher(
    kernel: CudaKernel,
    kwargs: dict[str, Any],
    slow: Callable[..., Any],
    other: Callable[..., Any],
) -> Any | None:
    """A C ``Launcher`` of ``kernel`` for arguments of the kinds in ``kwargs`` (the
    dispatch that found it), or None where the C way does not take this kernel. A range
    kernel's launches are ``launch(space, begin, end, kwargs)``, a box kernel's
    ``launch(policy, kwargs)``; ``slow(...)``: the kernel's Python launch, ``other(...)``:
    the launch of arguments of other kinds, each given the same arguments."""
    if _cuda_launch is None or not _takes(kernel):
        return None
    if not _driver and not use_driver(DRIVER):
        return None
    if not _driver[0]:
        return None
    steps = _steps(kernel, kwargs)
    if steps is None:
        return None
    cp = cupy_module()
    rank, fault = kernel.entry.rank, None
    if rank == TEAM:
        recipe: Callable[..., Any] = functools.partial(_team_recipe, kernel)
        fault = functools.partial(kernel.raise_flagged_fault, kernel.host_flag(cp))
    elif rank == 1:
        recipe = functools.partial(_range_recipe, kernel, ReduceScratch())
    else:
        recipe = functools.partial(_recipe, kernel, ReduceScratch())
    return _cuda_launch.Launcher(
        steps, View, recipe, slow, other, functools.partial(wait_for_stream, cp, spun=True),
        _launch_failed, cp.cuda.get_current_stream, SPIN_SECONDS, KEY_NAMES.get(rank, ()),
        fault,
    )  # fmt: skip


def _takes(kernel: CudaKernel) -> bool:
    """Whether the C way launches this kernel: a release range, box or team ``for``, or
    a range or box reduce of a number, without ``print`` (whose output needs a
    synchronisation, not a poll)."""
    entry = kernel.entry
    if kernel.build != "release" or entry.uses_print:
        return False
    if entry.operation == "for":
        return True
    if entry.rank == TEAM:
        return False
    acc = entry.acc_type
    return (
        entry.operation == "reduce"
        and acc is not None
        and not isinstance(acc, StructType)
        and acc.name in RESULT_KINDS
    )


def _steps(kernel: CudaKernel, kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], ...] | None:
    """The C launcher's steps: each parameter's name, kind and the type its argument had
    (``kwargs``' values, which found this kernel), with what packing it needs; None
    where an argument is not one the C way takes."""
    if sorted(p.name for p in kernel.entry.params) != sorted(kwargs):
        return None  # (a workunit parameter the kernel does not take: not seen)
    steps: list[tuple[Any, ...]] = []
    for name, kind, extra in kernel.argument_steps():
        value = kwargs[name]
        if kind == arguments.VIEW:
            array = value.data if type(value) is View else value
            key = signature_key(array)
            if not (isinstance(key, tuple) and key[0] == "device"):
                return None
            dtype, rank = array.dtype, array.ndim
            layout = int(view_layout(array.strides, array.itemsize))
            steps.append((name, kind, type(array), dtype, rank, layout, dtype.itemsize))
        elif kind in (arguments.INT64, arguments.INT):
            steps.append((name, kind, type(value), extra[0], extra[1]))
        elif kind == arguments.POOL_OR_INT:
            steps.append((name, kind, type(value), not isinstance(value, int)))
        elif kind == arguments.COMPLEX:
            steps.append((name, kind, type(value), extra is not None))
        else:
            steps.append((name, kind, type(value)))
    return tuple(steps)


def _range_recipe(
    kernel: CudaKernel, scratch: ReduceScratch, begin: int, end: int
) -> tuple[Any, ...] | None:
    """:func:`_recipe` of a launch over ``range(begin, end)``."""
    return _recipe(kernel, scratch, RangePolicy(ExecutionSpace.Cuda, begin, end))


def _recipe(kernel: CudaKernel, scratch: ReduceScratch, policy: Any) -> tuple[Any, ...] | None:
    """How the C launcher launches ``kernel`` over ``policy``'s range or box: (the
    CUfunction, grid, block, the values before the arguments, the address a reduce's
    total is left at, its kind), or None where the Python way launches it (an empty
    range, one that needs the 64-bit build)."""
    plan = kernel.range_recipe(cupy_module(), policy, scratch)
    if plan is None:
        return None
    function, shape, lead, result = plan
    kind = 0
    if result:
        acc = kernel.entry.acc_type
        assert acc is not None and not isinstance(acc, StructType)
        kind = RESULT_KINDS[acc.name]
    return int(function.kernel.ptr), shape.grid, shape.block, lead, result, kind


def _team_recipe(kernel: CudaKernel, policy: Any) -> tuple[Any, ...] | None:
    """:func:`_recipe` of a TeamPolicy launch, with its shared memory bytes and the host
    address of its fault flag; None where the Python way launches it (pk.AUTO, level-1
    scratch, an empty league)."""
    plan = kernel.team_recipe(cupy_module(), policy)
    if plan is None:
        return None
    grid, block, lead, shared, flag = plan
    function = int(kernel.function.kernel.ptr)
    return function, grid, block, lead, 0, 0, shared, int(flag.ctypes.data)


def _launch_failed(status: int) -> None:
    """The error CuPy raises where the driver refuses a launch."""
    raise cupy_module().cuda.driver.CUDADriverError(status)
