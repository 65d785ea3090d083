"""The Cuda space: workunits translated to CUDA C++, compiled by NVRTC (nvcc where NVRTC
cannot run) and launched on CuPy arrays (:mod:`pkernels.runtime.cuda_launch`, imported at
the first Cuda dispatch: it brings CuPy, which CPU-only installs never need).

Three builds of each kernel, as on the CPU: release, checked and debug (``-G``, for
cuda-gdb); GUARDED runs the checked build (no bounds proofs on the GPU yet) and HYBRID
the debug build (no release half on the GPU)."""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..api.decorators import KernelMarker
from ..api.spaces import ExecutionSpace
from ..api.types import DataType, int64
from ..api.views import cupy_array_of, is_foreign_device_array
from ..errors import DispatchError, KernelError
from ..runtime.hooks import DEFAULT_BUILD, BuildMode
from ..runtime.marshal import argument_type
from ..translate.kernel import check_reducer, lower_workunit
from .faults import FAULT_ERRORS
from .protocol import Launch
from .specialise import line_span, specialization_key

#: The GPU build of each build mode (see ``cuda_launch.BUILD_OPTIONS``).
_CUDA_BUILDS = {
    BuildMode.RELEASE: "release",
    BuildMode.CHECKED: "checked",
    BuildMode.DEBUG: "debug",
}


def _cuda_mode(mode: BuildMode) -> BuildMode:
    """The build mode the GPU runs for a dispatch's ``mode``: GUARDED and HYBRID have no
    GPU builds of their own."""
    if mode is BuildMode.GUARDED:
        return BuildMode.CHECKED
    if mode is BuildMode.HYBRID:
        return BuildMode.DEBUG
    return mode


#: The memo key part of the build the dispatch's fast path runs.
_DEFAULT_CUDA_BUILD = ("cuda", _CUDA_BUILDS[_cuda_mode(DEFAULT_BUILD)])


class CudaBackend:
    """The :class:`~.protocol.Backend` of the Cuda space."""

    spaces: tuple[ExecutionSpace, ...] = (ExecutionSpace.Cuda,)
    faults: Mapping[int, type[KernelError]] = FAULT_ERRORS

    def build_mode(self, launch: Launch) -> BuildMode:
        return _cuda_mode(launch.build)

    def kernel(self, launch: Launch) -> Any:
        from ..runtime.cuda_launch import cupy_module

        cupy_module()  # a clear error without CuPy or a GPU
        for name, value in launch.kwargs.items():
            if isinstance(value, np.ndarray):
                raise DispatchError(
                    f"{name}: the Cuda execution space runs on GPU memory, but this is a "
                    f"NumPy array: pass cupy.asarray({name}) (and read results back with "
                    ".get())"
                )
            if is_foreign_device_array(value):
                launch.kwargs = _with_cupy_arrays(launch.kwargs)
                break
        return cuda_kernel(launch, _CUDA_BUILDS[launch.build])

    def launch(self, kernel: Any, launch: Launch) -> Any:
        return kernel.launch(launch.policy, launch.kwargs)

    def cached_range_kernel(
        self, operation: str, workunit: Any, kwargs: dict[str, Any]
    ) -> Any | None:
        """The kernel of a range launch of the commonest dispatch (as the host's: a plain
        @pk.workunit function, the default build, arguments that fit it) when this process
        has loaded it already, as its ``range_launcher``; None for anything else, which
        the full path then handles and checks (a PyTorch tensor, say: its key is no
        kernel's)."""
        if type(workunit) is not types.FunctionType:  # a @pk.workload method, a non-kernel
            return None
        marker = getattr(workunit, "__pkernels__", None)
        if type(marker) is not KernelMarker or marker.kind != "workunit":
            return None
        try:
            key, _ = specialization_key(workunit, operation, kwargs, 1, _DEFAULT_CUDA_BUILD)
        except (KeyError, DispatchError):
            return None  # the full path reports what does not fit
        kernel = marker.specializations.get(key)
        return None if kernel is None else kernel.range_launcher


def _with_cupy_arrays(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with each GPU array of another library (``__cuda_array_interface__``)
    as a CuPy array over its memory (the caller's object sees the kernel's writes)."""
    out = {}
    for name, value in kwargs.items():
        if is_foreign_device_array(value):
            try:
                value = cupy_array_of(value)
            except TypeError as exc:
                raise DispatchError(f"{name}: {exc}") from None
        out[name] = value
    return out


def cuda_kernel(launch: Launch, build: str) -> Any:
    """The loaded CUDA build (``build``: "release", "checked" or "debug") of the launch's
    workunit for these arguments (translated and compiled on first use, then kept in the
    workunit's memo)."""
    from ..runtime.cuda_launch import CudaKernel, build_cuda
    from ..translate.emit_cuda import emit_cuda_module

    workunit, operation, kwargs = launch.workunit, launch.operation, launch.kwargs
    rank, reducer = launch.rank, launch.reducer
    key, names = specialization_key(workunit, operation, kwargs, rank, ("cuda", build), reducer)
    kernel = launch.marker.specializations.get(key)
    if kernel is None:
        arg_types = {n: argument_type(n, kwargs[n], device=True) for n in names}
        function, helpers = lower_workunit(workunit, operation, arg_types, rank, reducer)
        index = function.params[0].type
        if not isinstance(index, DataType):
            index = int64  # a TeamPolicy module has no index
        check_reducer(workunit, function, reducer)
        entry = emit_cuda_module(function, helpers, operation, index, rank, reducer)
        path, code, compiled, module = build_cuda(entry, f"workunit {workunit.__qualname__}", build)
        kernel = CudaKernel(
            workunit.__name__,
            operation,
            workunit.__code__.co_filename,
            line_span(workunit),
            entry,
            path,
            code,
            compiled,
            module,
            build=build,
            debug=build == "debug",
        )
        launch.marker.specializations[key] = kernel
    return kernel
