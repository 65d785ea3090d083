"""The OpenMP and Serial spaces: workunits translated to C++, compiled by g++ into a
shared library (one per build mode, through the on-disk cache) and launched through the
C marshaller or ctypes (:mod:`pkernels.runtime.launch`).

Build modes: RELEASE, CHECKED (``-DPK_CHECKS=1``), DEBUG (``-O0 -g3``, for gdb),
GUARDED (RELEASE where the translation proves a launch cannot fail a check, else
CHECKED) and HYBRID (the release loop, handing threads to the debug build when a
debugger asks; where no proof holds, the debug build)."""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..api.decorators import KernelMarker
from ..api.policies import RangePolicy
from ..api.reducers import Reducer, Sum
from ..api.spaces import ExecutionSpace
from ..build.compiler import CHECKS_DEFINE, build
from ..errors import DispatchError, KernelError
from ..runtime import hooks
from ..runtime.compile_notice import compile_notice
from ..runtime.hooks import BuildMode
from ..runtime.launch import CompiledKernel, box_bounds
from ..runtime.marshal import argument_type
from ..translate.emit_hybrid import has_hybrid_launch
from ..translate.kernel import TEAM, translate_workunit
from .faults import FAULT_ERRORS
from .protocol import Launch
from .specialise import line_span, loaded_kernel, proof_bounds, specialization_key

# Enum members held as module constants: on Python 3.11 reading ``BuildMode.HYBRID`` goes
# through EnumType.__getattr__ (~80 ns), several times a launch on the full path.
_RELEASE, _CHECKED, _DEBUG = BuildMode.RELEASE, BuildMode.CHECKED, BuildMode.DEBUG
_GUARDED, _HYBRID = BuildMode.GUARDED, BuildMode.HYBRID
_SERIAL = ExecutionSpace.Serial


class HostBackend:
    """The :class:`~.protocol.Backend` of the spaces compiled for the CPU (one C++ build
    serves both: its library has a launcher per space)."""

    spaces: tuple[ExecutionSpace, ...] = (ExecutionSpace.OpenMP, ExecutionSpace.Serial)
    faults: Mapping[int, type[KernelError]] = FAULT_ERRORS

    def build_mode(self, launch: Launch) -> BuildMode:
        mode = launch.build
        if mode is _GUARDED:
            return _guarded_build(launch)
        if mode is _HYBRID and not has_hybrid_launch(launch.operation, launch.rank):
            return _DEBUG  # no fast path for this launch
        return mode

    def kernel(self, launch: Launch) -> CompiledKernel:
        build = launch.build
        if build is _HYBRID:
            return _hybrid_kernels(launch)
        if launch.built is not None:
            return launch.built  # type: ignore[no-any-return]
        rank = launch.rank
        if rank == TEAM and launch.team_size != 1 and launch.policy.space is _SERIAL:
            raise DispatchError(
                f"the Serial space runs teams of one thread, but this TeamPolicy asks for "
                f"{launch.team_size}: use pk.AUTO (or OpenMP, whose teams are real threads)"
            )
        workunit, operation, kwargs = launch.workunit, launch.operation, launch.kwargs
        reducer = launch.reducer
        key = specialization_key(workunit, operation, kwargs, rank, build, reducer)[0]
        kernel = launch.marker.specializations.get(key)
        if kernel is None:  # translated and compiled (or loaded from the disk cache)
            kernel = compiled_kernel(
                workunit, launch.marker, operation, kwargs, build, rank, reducer
            )
        return kernel  # type: ignore[no-any-return]

    def launch(self, kernel: CompiledKernel, launch: Launch) -> Any:
        policy = launch.policy
        if type(policy) is RangePolicy:
            begin, end = policy.begin, policy.end
        elif launch.rank == TEAM:
            spec = box_bounds(tuple(policy.launch_spec(launch.team_size)))
            return kernel.launch(policy.space, spec, None, launch.kwargs)
        else:
            begin, end = box_bounds(policy.begins), box_bounds(policy.ends)
        if launch.replay is not None:
            return _checked_then_debug(kernel, launch, begin, end)
        fast = launch.companion  # the release half of a HYBRID launch, or None
        if fast is None:
            return kernel.launch(policy.space, begin, end, launch.kwargs)
        dispatch = launch.dispatch
        request = dispatch.debug_request if dispatch is not None else ctypes.c_int(0)
        mask = dispatch.debug_indices if dispatch is not None else None
        return fast.launch_hybrid(policy.space, begin, end, launch.kwargs, request, kernel, mask)

    # The release (or checked) build of the commonest dispatch, when loaded already: the
    # shared look-up itself, not a method calling it (one call frame less on the fast path).
    cached_range_kernel = staticmethod(loaded_kernel)

    def cached_policy_kernel(self, *args: Any) -> None:
        return None  # host team and box launches take the full path (which shapes them)

    def observed_range_kernel(
        self, operation: str, workunit: Any, kwargs: dict[str, Any], build: BuildMode,
        begin: Any, end: Any,
    ) -> Any | None:  # fmt: skip
        """The kernel of the commonest observed dispatch (a plain @pk.workunit function
        over a range, no reducer) in the ``build`` its observers chose, RELEASE, CHECKED
        or GUARDED (resolved as :meth:`build_mode` does), when this process has it loaded
        already; else None: the full path runs (and builds)."""
        if build is _GUARDED:
            # Whichever build is loaded has the translation's proof (see _guarded_build).
            release = loaded_kernel(operation, workunit, kwargs, _RELEASE)
            if release is not None:
                if _proven(release, begin, end, kwargs):
                    return release
                return loaded_kernel(operation, workunit, kwargs, _CHECKED)
            checked = loaded_kernel(operation, workunit, kwargs, _CHECKED)
            if checked is None or _proven(checked, begin, end, kwargs):
                return None  # the full path builds the release build a proven launch runs
            return checked
        if build is not _RELEASE and build is not _CHECKED:
            return None
        return loaded_kernel(operation, workunit, kwargs, build)


def _guarded_build(launch: Launch) -> BuildMode:
    """What a BuildMode.GUARDED launch runs: RELEASE when a range or box launch is proven
    unable to fail a check, else CHECKED."""
    if launch.rank == TEAM:
        return _CHECKED
    workunit, operation, kwargs = launch.workunit, launch.operation, launch.kwargs
    rank, reducer = launch.rank, launch.reducer
    begin, end = proof_bounds(launch.policy)
    # The proof is the translation's: whichever build of these arguments is loaded has
    # it (the release build first: one look-up where the proof holds, the common case);
    # else the release build is compiled first (what a proven launch runs).
    kernel, mode = None, _RELEASE
    for mode in (_RELEASE, _CHECKED):
        key = specialization_key(workunit, operation, kwargs, rank, mode, reducer)[0]
        kernel = launch.marker.specializations.get(key)
        if kernel is not None:
            break
    if kernel is None:
        mode = _RELEASE
        kernel = compiled_kernel(workunit, launch.marker, operation, kwargs, mode, rank, reducer)
    chosen = _RELEASE if _proven(kernel, begin, end, kwargs) else _CHECKED
    if chosen is mode:
        launch.built = kernel  # what kernel() returns: no second look-up
    return chosen


def _proven(kernel: CompiledKernel, begin: Any, end: Any, kwargs: dict[str, Any]) -> bool:
    """Whether ``kernel``'s bounds proof shows this launch unable to fail a check."""
    proof = kernel.entry.proof
    return proof is not None and bool(proof.holds(begin, end, kwargs))


def _hybrid_kernels(launch: Launch) -> CompiledKernel:
    """The debug build of a HYBRID launch (what observers see), with its release half in
    ``launch.companion`` where the launch is proven unable to fail a check (else None:
    the debug build runs it all)."""
    begin, end = proof_bounds(launch.policy)
    # Both builds at once at the first launch: it most likely holds its proof.
    modes = (BuildMode.DEBUG, BuildMode.HYBRID)
    debug, fast = compiled_kernels(
        launch.workunit,
        launch.marker,
        launch.operation,
        launch.kwargs,
        modes,
        launch.rank,
        launch.reducer,
    )
    assert debug is not None
    if fast is not None and not debug.entry.proof.holds(begin, end, launch.kwargs):
        fast = None
    dispatch = launch.dispatch
    mask = dispatch.debug_indices if dispatch is not None else None
    if mask is not None and launch.rank != 1:
        fast = None  # per-index debug code is for ranges: the debug build runs it all
    if dispatch is not None:
        dispatch.fast_build = fast
        if fast is None and mask is None and dispatch.check_first:
            checked = _checked_first(launch, debug)
            if checked is not None:
                launch.replay = debug
                return checked
    launch.companion = fast
    return debug


#: What a ``check_first`` launch may take besides arrays: numbers, which it cannot change.
_NUMBERS = (int, float, complex, np.generic)


def _checked_first(launch: Launch, debug: CompiledKernel) -> CompiledKernel | None:
    """The checked build a ``Dispatch.check_first`` launch runs first, or None where that
    run could differ from the debug build's beyond a failed check or could not be run
    again from the same inputs: a kernel that prints (it would print twice), one with
    recursive helpers (-O3 may loop where -O0 overflows its stack), an argument that is
    neither an array nor a number (a random pool's state, a classtype)."""
    entry = debug.entry
    kwargs = launch.kwargs
    if entry.uses_print or entry.recursive_helpers:
        return None
    if any(name not in kwargs for name in entry.written_views):
        return None
    for value in kwargs.values():
        if type(value) is not np.ndarray and not isinstance(value, _NUMBERS):
            return None
    return compiled_kernel(
        launch.workunit,
        launch.marker,
        launch.operation,
        kwargs,
        _CHECKED,
        launch.rank,
        launch.reducer,
    )


def _checked_then_debug(checked: CompiledKernel, launch: Launch, begin: Any, end: Any) -> Any:
    """Run a ``check_first`` launch: its checked build, on copies of the views it writes
    kept aside; if a check fails, the views put back and the launch run again in the
    debug build (announced to observers), whose own failed check is what is raised."""
    debug, kwargs, space = launch.replay, launch.kwargs, launch.policy.space
    written = [kwargs[name] for name in checked.entry.written_views]
    kept = [array.copy() for array in written]
    checked.quiet_faults(True)
    try:
        return checked.launch(space, begin, end, kwargs)
    except KernelError:
        pass  # run again below, from the same inputs
    finally:
        checked.quiet_faults(False)
    for array, copy in zip(written, kept, strict=True):
        np.copyto(array, copy)
    if launch.dispatch is not None:
        hooks.notify("before_launch", launch.dispatch, debug)
    return debug.launch(space, begin, end, kwargs)


def compiled_kernel(
    workunit: Callable[..., Any],
    marker: KernelMarker,
    operation: str,
    kwargs: dict[str, Any],
    build_mode: BuildMode,
    rank: int = 1,
    reducer: Reducer = Sum,
) -> CompiledKernel:
    """The loaded build of ``workunit`` for these arguments (translated on first use);
    ``rank`` > 1: for an MDRangePolicy of that rank."""
    modes = (build_mode,)
    kernel = compiled_kernels(workunit, marker, operation, kwargs, modes, rank, reducer)[0]
    assert kernel is not None
    return kernel


def compiled_kernels(
    workunit: Callable[..., Any],
    marker: KernelMarker,
    operation: str,
    kwargs: dict[str, Any],
    modes: tuple[BuildMode, ...],
    rank: int = 1,
    reducer: Reducer = Sum,
) -> list[CompiledKernel | None]:
    """:func:`compiled_kernel` for several build modes of one specialisation: the missing
    ones are translated once and compiled side by side (each g++ on a core of its own).
    A HYBRID build is None where no launch could use it (no bounds proof is possible)."""
    found: dict[BuildMode, CompiledKernel | None] = {}
    missing = []
    names: tuple[str, ...] = ()
    for mode in modes:
        key, names = specialization_key(workunit, operation, kwargs, rank, mode, reducer)
        if key in marker.specializations:
            found[mode] = marker.specializations[key]
        else:
            missing.append((mode, key))
    known = next((k for k in found.values() if k is not None), None)
    if known is not None and known.entry.proof is None:
        _drop_hybrid(missing, found)  # seen at an earlier launch: no launch could use it
    if missing:
        arg_types = {n: argument_type(n, kwargs[n]) for n in names}
        entry = translate_workunit(workunit, operation, arg_types, rank, reducer)
        if entry.proof is None:
            _drop_hybrid(missing, found)
        label = f"workunit {workunit.__qualname__}"

        def compile_one(mode: BuildMode) -> Any:
            defines = _BUILD_DEFINES.get(mode, ())
            what = f"the {mode.value} build of {workunit.__qualname__}"
            return build(
                entry.source,
                mode is BuildMode.DEBUG,
                label,
                defines,
                while_compiling=lambda: compile_notice(what),
            )

        if len(missing) > 1:
            with ThreadPoolExecutor(len(missing)) as pool:
                modules = list(pool.map(compile_one, [mode for mode, _ in missing]))
        else:
            modules = [compile_one(mode) for mode, _ in missing]
        for (mode, key), module in zip(missing, modules, strict=True):
            kernel = CompiledKernel(
                workunit.__name__,
                operation,
                workunit.__code__.co_filename,
                line_span(workunit),
                module,
                entry,
            )
            kernel.load()
            marker.specializations[key] = found[mode] = kernel
    return [found[mode] for mode in modes]


#: What a build mode adds to the compiler's command line (besides debug's flags).
_BUILD_DEFINES = {BuildMode.HYBRID: ("PK_HYBRID=1",), BuildMode.CHECKED: (CHECKS_DEFINE,)}


def _drop_hybrid(missing: list[tuple[BuildMode, Any]], found: dict[BuildMode, Any]) -> None:
    """No bounds proof is possible for this kernel: its HYBRID build would never run."""
    for mode, key in [m for m in missing if m[0] is BuildMode.HYBRID]:
        missing.remove((mode, key))
        found[mode] = None
