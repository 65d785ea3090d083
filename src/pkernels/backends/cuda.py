"""The Cuda space: workunits translated to CUDA C++, compiled by NVRTC (nvcc where NVRTC
cannot run) and launched on CuPy arrays (:mod:`pkernels.runtime.cuda_launch`, imported at
the first Cuda dispatch: it brings CuPy, which CPU-only installs never need).

Three builds of each kernel, as on the CPU: release, checked and debug (``-G``, for
cuda-gdb). A launch the translation's bounds proof (:mod:`pkernels.translate.bounds_proof`)
shows unable to fail a check runs the release build under GUARDED and HYBRID; otherwise
GUARDED runs the checked build and HYBRID the debug build (a GPU launch has no release
half to hand indices over from: it runs as a whole in one build)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..api.decorators import KernelMarker
from ..api.policies import RangePolicy
from ..api.spaces import ExecutionSpace
from ..api.types import DataType, int64
from ..api.views import cupy_array_of, is_foreign_device_array
from ..errors import DispatchError, KernelError
from ..runtime.hooks import DEFAULT_BUILD, BuildMode
from ..runtime.marshal import argument_type
from ..translate.bounds_proof import launch_proof
from ..translate.kernel import TEAM, check_reducer, lower_workunit
from .faults import FAULT_ERRORS
from .protocol import NOT_LAUNCHED, Launch
from .specialise import line_span, loaded_kernel, proof_bounds, specialization_key

#: The GPU build of each build mode (see ``cuda_compile.BUILD_OPTIONS``).
_CUDA_BUILDS = {
    BuildMode.RELEASE: "release",
    BuildMode.CHECKED: "checked",
    BuildMode.DEBUG: "debug",
}


#: The memo key part of the build the dispatch's fast path runs (DEFAULT_BUILD is
#: RELEASE or CHECKED: a build of its own on the GPU, no proof to look at).
_DEFAULT_CUDA_BUILD = ("cuda", _CUDA_BUILDS[DEFAULT_BUILD])


class CudaBackend:
    """The :class:`~.protocol.Backend` of the Cuda space."""

    spaces: tuple[ExecutionSpace, ...] = (ExecutionSpace.Cuda,)
    faults: Mapping[int, type[KernelError]] = FAULT_ERRORS

    def build_mode(self, launch: Launch) -> BuildMode:
        mode = launch.build
        if mode is BuildMode.GUARDED or mode is BuildMode.HYBRID:
            if _proven(launch):
                return BuildMode.RELEASE
            return BuildMode.CHECKED if mode is BuildMode.GUARDED else BuildMode.DEBUG
        return mode

    def kernel(self, launch: Launch) -> Any:
        _cuda_ready()
        _take_device_arguments(launch)
        return cuda_kernel(launch, _CUDA_BUILDS[launch.build])

    def launch(self, kernel: Any, launch: Launch) -> Any:
        return kernel.launch(launch.policy, launch.kwargs)

    def cached_range_kernel(
        self, operation: str, workunit: Any, kwargs: dict[str, Any]
    ) -> Any | None:
        """The launcher of a range launch of the commonest dispatch (as the host's: a
        plain @pk.workunit function, the default build) when this process has loaded a
        kernel for it: the C launcher this workunit's last such launch ran (which checks
        the arguments itself: :mod:`pkernels.runtime.cuda_fast`), else the kernel's
        ``range_launcher`` where the arguments fit it; None for anything else, which the
        full path then handles and checks (a PyTorch tensor, say: its key is no
        kernel's)."""
        kept = _kept_launcher(workunit, operation)
        if kept is not None:
            return kept
        kernel = loaded_kernel(operation, workunit, kwargs, _DEFAULT_CUDA_BUILD)
        if kernel is None:
            return None
        return _launcher(kernel, operation, workunit, kwargs, 1)

    def cached_policy_kernel(
        self, operation: str, workunit: Any, kwargs: dict[str, Any], rank: int
    ) -> Any | None:
        """The loaded kernel of a TeamPolicy (``rank`` TEAM) or MDRangePolicy launch of
        the commonest dispatch (as :meth:`cached_range_kernel`'s), whose ``launch(policy,
        kwargs)`` checks a team's size and scratch, a box's tiling, itself; its C
        launcher where it has one (made as a range's)."""
        kept = _kept_launcher(workunit, (operation, rank))
        if kept is not None:
            return kept
        kernel = loaded_kernel(operation, workunit, kwargs, _DEFAULT_CUDA_BUILD, rank)
        if kernel is None:
            return None
        return _launcher(kernel, operation, workunit, kwargs, rank)

    def observed_range_kernel(self, *args: Any) -> None:
        return None  # an observed Cuda dispatch takes the full path


def _kept_launcher(workunit: Any, key: Any) -> Any | None:
    """The C launcher ``workunit``'s last fast-path launch of ``key`` (its operation, or
    (operation, rank) for a box or team) ran, kept in its marker; None for none."""
    marker = getattr(workunit, "__pkernels__", None)
    if type(marker) is KernelMarker:
        kept = marker.fast_paths.get(key)
        if kept is not None and kept[0] is workunit:
            return kept[1]
    return None


def _launcher(kernel: Any, operation: str, workunit: Any, kwargs: dict[str, Any], rank: int) -> Any:
    """The kernel's C launcher where it has one (made now for the kinds of ``kwargs``,
    and kept as the workunit's fast path for ``operation`` over ``rank``), else its
    Python one: a range's ``range_launcher``, a box's or team's kernel itself."""
    python = _python_launch(kernel, rank)
    if kernel.c_launcher is None:
        kernel.c_launcher = False  # (tried: False where the C way does not take it)
        if workunit.__closure__ is None:  # (a closure's key holds its captured code)
            from ..runtime.cuda_fast import c_launcher

            other = functools.partial(_other_arguments, operation, workunit, rank)
            kernel.c_launcher = c_launcher(kernel, kwargs, python, other) or False
    if kernel.c_launcher is False:
        return python.__self__  # (the RangeLauncher, or the kernel)
    key = operation if rank == 1 else (operation, rank)
    workunit.__pkernels__.fast_paths[key] = (workunit, kernel.c_launcher)
    return kernel.c_launcher


def _python_launch(kernel: Any, rank: int) -> Any:
    """The kernel's launch the Python way: a range's ``launch(space, begin, end,
    kwargs)``, a box's or team's ``launch(policy, kwargs)``."""
    if rank != 1:
        return kernel.launch
    if kernel.range_launcher is None:
        kernel.range_launcher = RangeLauncher(kernel)
    return kernel.range_launcher.launch


def _other_arguments(operation: str, workunit: Any, rank: int, *args: Any) -> Any:
    """A C launcher's launch of arguments that are not its kernel's (``args``: its own,
    the keyword arguments last): the kernel loaded for them (its C launcher now the
    workunit's fast path) launched the Python way this time; :data:`NOT_LAUNCHED` where
    none is loaded (the full path builds it)."""
    kwargs = args[-1]
    kernel = loaded_kernel(operation, workunit, kwargs, _DEFAULT_CUDA_BUILD, rank)
    if kernel is None:
        return NOT_LAUNCHED
    _launcher(kernel, operation, workunit, kwargs, rank)
    return _python_launch(kernel, rank)(*args)


class RangeLauncher:
    """A Cuda kernel as the dispatch's range fast path takes it (see
    ``CudaBackend.cached_range_kernel``): ``launch(space, begin, end, kwargs)``."""

    __slots__ = ("kernel", "_policy")

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self._policy: Any = None  # the last launch's RangePolicy (frozen: reused as it is)

    def launch(self, space: Any, begin: int, end: int, kwargs: dict[str, Any]) -> Any:
        policy = self._policy
        if (
            policy is None
            or policy.end != end
            or policy.begin != begin
            or policy.space is not space
        ):
            policy = self._policy = _range_policy(space, begin, end)
        return self.kernel.launch(policy, kwargs)


def _range_policy(space: Any, begin: int, end: int) -> RangePolicy:
    """``RangePolicy(space, begin, end)`` for the fast path, whose bounds are a checked
    policy's or 0 and an int: only an int outside the int64 range needs the checks."""
    if not _INT64_MIN <= end <= _INT64_MAX:  # parallel_for(2**70, ...): the policy's error
        return RangePolicy(space, begin, end)
    policy = object.__new__(RangePolicy)
    object.__setattr__(policy, "space", space)
    object.__setattr__(policy, "begin", begin)
    object.__setattr__(policy, "end", end)
    return policy


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _take_device_arguments(launch: Launch) -> None:
    """Refuse NumPy arrays; make GPU arrays of other libraries CuPy arrays over their
    memory in ``launch.kwargs`` (what the kernel is specialised for and launched on)."""
    for name, value in launch.kwargs.items():
        if isinstance(value, np.ndarray):
            raise DispatchError(
                f"{name}: the Cuda execution space runs on GPU memory, but this is a "
                f"NumPy array: pass cupy.asarray({name}) (and read results back with "
                ".get())"
            )
        if is_foreign_device_array(value):
            launch.kwargs = _with_cupy_arrays(launch.kwargs)
            return


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


def _cuda_ready() -> None:
    from ..runtime.cuda_launch import cupy_module

    cupy_module()  # a clear error without CuPy or a GPU


def _proven(launch: Launch) -> bool:
    """Whether this range or box launch is proven unable to fail a check (the release
    build's proof, compiled first if need be: a proven launch runs it)."""
    if launch.rank == TEAM:
        return False  # no proofs for teams
    _cuda_ready()
    _take_device_arguments(launch)
    proof = cuda_kernel(launch, "release").proof
    if proof is None:
        return False
    begin, end = proof_bounds(launch.policy)
    return bool(proof.holds(begin, end, launch.kwargs))


def cuda_kernel(launch: Launch, build: str) -> Any:
    """The loaded CUDA build (``build``: "release", "checked" or "debug") of the launch's
    workunit for these arguments (translated and compiled on first use, then kept in the
    workunit's memo)."""
    workunit, operation, kwargs = launch.workunit, launch.operation, launch.kwargs
    rank, reducer = launch.rank, launch.reducer
    key, names = specialization_key(workunit, operation, kwargs, rank, ("cuda", build), reducer)
    kernel = launch.marker.specializations.get(key)
    if kernel is None:  # (imported here: a function's import costs every dispatch)
        from ..runtime.cuda_compile import build_cuda
        from ..runtime.cuda_launch import CudaKernel
        from ..translate.emit_cuda import emit_cuda_module

        arg_types = {n: argument_type(n, kwargs[n], device=True) for n in names}
        function, helpers = lower_workunit(workunit, operation, arg_types, rank, reducer)
        index = function.params[0].type
        if not isinstance(index, DataType):
            index = int64  # a TeamPolicy module has no index
        check_reducer(workunit, function, reducer)
        entry = emit_cuda_module(function, helpers, operation, index, rank, reducer)
        proof = launch_proof(function, helpers, operation, rank)
        label = f"workunit {workunit.__qualname__}"

        def load(wide: bool = False) -> Any:
            """The build compiled and loaded (``wide``: the 64-bit build of a range or box
            module, made for the launches the 32-bit one cannot run)."""
            path, code, compiled, module = build_cuda(entry, label, build, wide)
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
                proof=proof,
                wide=wide,
            )
            if kernel.narrow:
                kernel.widen = functools.partial(load, True)
            return kernel

        kernel = load()
        launch.marker.specializations[key] = kernel
    return kernel
