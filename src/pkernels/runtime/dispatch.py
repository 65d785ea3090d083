"""``parallel_for`` / ``parallel_reduce`` / ``parallel_scan``: the dispatch path.

Fast path for a kernel already compiled in this process: the argument signature is
looked up in the workunit's memo and the C arguments are built and passed; hooks
cost nothing when no observer is registered.
"""

from __future__ import annotations

import ctypes
import functools
import inspect
import itertools
import reprlib
import sys
import types
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NoReturn

import numpy as np

from ..api.decorators import KernelMarker, marker_of
from ..api.policies import MDRangePolicy, RangePolicy, as_policy
from ..api.reducers import REDUCERS, Reducer, Sum
from ..api.spaces import ExecutionSpace, get_default_space
from ..api.teams import NestedRange, TeamPolicy
from ..api.types import AccAnnotation, DataType, float64, to_datatype
from ..api.views import View, is_tensor, unwrap
from ..build.compiler import CHECKS_DEFINE, build
from ..errors import DispatchError, KernelIndexError
from ..translate.closures import captured_values, closure_form
from ..translate.emit_cpp import has_hybrid_launch
from ..translate.kernel import ROLES, TEAM, translate_workunit
from ..translate.lambdas import VIEW as LAMBDA_VIEW
from ..translate.lambdas import is_lambda, lambda_form
from ..translate.methods import method_form
from ..translate.pyexec import accumulator_form, python_form
from ..translate.source import KernelSource, closure_of
from . import hooks
from .compile_notice import compile_notice
from .hooks import DEFAULT_BUILD, BuildMode, Dispatch
from .launch import CompiledKernel, box_bounds
from .marshal import argument_type, signature_key
from .python_arguments import check_argument_values
from .python_forms import checked_form
from .python_teams import run_nested_in_python, run_team_in_python
from .tracebacks import api_boundary


def parallel_for(*args: Any, **kwargs: Any) -> None:
    """``parallel_for([label,] policy, workunit, **kwargs)``: run ``workunit(i, ...)``
    for every index of ``policy`` (an int ``n`` means ``RangePolicy(0, n)``)."""
    _dispatch("for", args, kwargs)


def parallel_reduce(*args: Any, reducer: Reducer | None = None, **kwargs: Any) -> Any:
    """``parallel_reduce([label,] policy, workunit, [reducer=pk.Max,] **kwargs)``: sum of
    what every ``workunit(i, acc, ...)`` adds to ``acc``; returns the total. With a
    ``reducer`` (``pk.Sum``, ``pk.Prod``, ``pk.Min``, ``pk.Max``, ``pk.LAnd``, ``pk.LOr``,
    ``pk.BAnd``, ``pk.BOr``) the workunit updates ``acc`` as the reducer means it (``acc
    *= x[i]``, ``if x[i] > acc: acc = x[i]``), starting from the reducer's identity, and
    the threads' results are combined with its operation (every space and policy).
    ``pk.MaxLoc``, ``pk.MinLoc``, ``pk.MinMax`` and ``pk.MinMaxLoc`` give ``acc`` fields
    (``if x[i] > acc.val: acc.val = x[i]; acc.loc = i``) and return a named tuple
    (``pk.ValLocScalar(val, loc)`` ...), a location being the first index found."""
    if reducer is None or reducer is Sum:
        return _dispatch("reduce", args, kwargs)
    if not isinstance(reducer, Reducer):
        names = ", ".join(repr(r) for r in REDUCERS)
        raise DispatchError(f"reducer= takes one of {names}, not {reducer!r}")
    return _dispatch("reduce", args, kwargs, reducer)


def parallel_scan(*args: Any, **kwargs: Any) -> Any:
    """``parallel_scan([label,] policy, workunit, **kwargs)``: prefix scan; the workunit
    ``(i, acc, last_pass, ...)`` sees the exclusive prefix in ``acc`` before adding its
    own contribution, and writes results when ``last_pass`` is true. Returns the total."""
    return _dispatch("scan", args, kwargs)


# What users call: a pkernels error raised inside reaches them with their own line as
# the innermost frame (runtime.tracebacks).
parallel_for = api_boundary(parallel_for)
parallel_reduce = api_boundary(parallel_reduce)
parallel_scan = api_boundary(parallel_scan)


def _dispatch(
    operation: str, args: tuple[Any, ...], kwargs: dict[str, Any], reducer: Reducer = Sum
) -> Any:
    if len(args) == 2 and reducer is Sum and not hooks.observed():
        policy = args[0]
        if type(policy) is int:  # parallel_for(n, ...): RangePolicy(0, n), default space
            space, begin, end = get_default_space(), 0, policy
        elif type(policy) is RangePolicy:
            space, begin, end = policy.space, policy.begin, policy.end
        else:
            space = None
        if space in _NATIVE_SPACES:
            kernel = _compiled_range_kernel(operation, args[1], kwargs)
            if kernel is not None:
                return kernel.launch(space, begin, end, kwargs)
    label: str | None = None
    if args and isinstance(args[0], str):
        label, args = args[0], args[1:]
    if len(args) == 2 and isinstance(args[1], list | tuple):
        return _fused(operation, label, args[0], args[1], kwargs)
    if operation == "for" and len(args) == 3 and is_lambda(args[1]):
        # PyKokkos' parallel_for(n, lambda i: value, view): view[i] = value
        kwargs = {**kwargs, LAMBDA_VIEW: args[2]}
        args = args[:2]
    if len(args) != 2:
        raise DispatchError(
            f"parallel_{operation} takes ([label,] policy, workunit, **kwargs), "
            f"got {len(args)} positional arguments after the label"
        )
    if isinstance(args[0], NestedRange):
        # pk.parallel_for(pk.TeamThreadRange(team_member, n), body) inside a team
        # workunit the Debug space runs as Python (compiled kernels never get here).
        return run_nested_in_python(operation, args[0], args[1], kwargs, reducer)
    policy = as_policy(args[0])
    workunit = args[1]
    _check_plain_parameters(operation, workunit)
    if is_lambda(workunit):  # PyKokkos' lambdas in @pk.main: see translate.lambdas
        workunit, captured = lambda_form(workunit, operation, LAMBDA_VIEW in kwargs)
        kwargs = {**kwargs, **captured}
    elif type(workunit) is types.FunctionType and workunit.__closure__:
        # A workunit made in a function, reading its numbers or arrays: translate.closures
        captured = captured_values(workunit)
        if captured:
            both = sorted(set(captured) & set(kwargs))
            if both:
                raise DispatchError(
                    f"{workunit.__name__} reads {', '.join(both)} from its enclosing function, "
                    f"so {'they are' if len(both) > 1 else 'it is'} not a parameter: leave "
                    f"{', '.join(f'{n}=' for n in both)} out of the dispatch"
                )
            workunit = closure_form(workunit, captured)
            kwargs = {**kwargs, **captured}
    kwargs = arrays_of_views(kwargs)
    if hooks.observers():
        dispatch = Dispatch(
            operation, label, policy, workunit, kwargs, sys._getframe(2), original_workunit=workunit
        )
        if operation == "reduce":
            dispatch.reducer = reducer
        hooks.notify("dispatch_started", dispatch)
        try:
            result = _run(
                dispatch.workunit, operation, policy, kwargs, dispatch.build, dispatch, reducer
            )
        except BaseException as exc:
            hooks.notify("dispatch_finished", dispatch, None, exc)
            raise
        hooks.notify("dispatch_finished", dispatch, result, None)
        return result
    return _run(workunit, operation, policy, kwargs, DEFAULT_BUILD, None, reducer)


def _fused(
    operation: str, label: str | None, policy: Any, workunits: Any, kwargs: dict[str, Any]
) -> None:
    """PyKokkos' kernel fusion, ``parallel_for(policy, [wu0, wu1, ...], args_0={...},
    args_1={...}, ...)``: every workunit runs over the policy with its own arguments, one
    after the other. For workunits that do not read what another index of another
    workunit writes (anything else races in the fused loop) that is what the fused loop
    computes."""
    if operation != "for":
        raise DispatchError(
            f"parallel_{operation} takes one workunit; a list of workunits (kernel fusion) "
            "is for parallel_for"
        )
    names = [f"args_{k}" for k in range(len(workunits))]
    unknown = sorted(set(kwargs) - set(names))
    missing = [name for name in names if not isinstance(kwargs.get(name), dict)]
    if unknown or missing or not workunits:
        raise DispatchError(
            f"parallel_for of {len(workunits)} fused workunits takes each one's arguments as "
            f"a dict: {', '.join(f'{n}={{...}}' for n in names) or 'args_0={...}'}"
            + (f" (not {', '.join(unknown)})" if unknown else "")
        )
    head = (label,) if label is not None else ()
    for workunit, name in zip(workunits, names, strict=True):
        _dispatch(operation, (*head, policy, workunit), dict(kwargs[name]))


_NATIVE_SPACES = (ExecutionSpace.OpenMP, ExecutionSpace.Serial)
_FAST_LOOKUP_BUILDS = (BuildMode.RELEASE, BuildMode.CHECKED)


def _compiled_range_kernel(
    operation: str, workunit: Any, kwargs: dict[str, Any], build_mode: BuildMode = DEFAULT_BUILD
) -> CompiledKernel | None:
    """The release (or checked) build of a range launch for the commonest dispatch, when
    this process has it already: a plain @pk.workunit function, arguments that fit it. None for
    anything else, which :func:`_run` then handles (and checks) in full.

    Dispatches often follow a kernel that swept the caches; then each Python object on
    the way costs a miss, and this path touches about half of what the full one does."""
    if type(workunit) is not types.FunctionType:  # a @pk.workload method, a non-kernel
        return None
    marker = getattr(workunit, "__pkernels__", None)
    if type(marker) is not KernelMarker or marker.kind != "workunit":
        return None
    try:
        key, _ = specialization_key(workunit, operation, kwargs, 1, build_mode)
    except (KeyError, DispatchError):
        return None  # the full path reports what does not fit
    return marker.specializations.get(key)


def arrays_of_views(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with each ``pk.View`` (or PyTorch tensor) replaced by its array (what
    the rest of a dispatch, its observers and the Debug space see): the view's array at
    this dispatch, whatever size a ``resize`` gave it."""
    for value in kwargs.values():
        if isinstance(value, View) or is_tensor(value):
            return {name: unwrap(value) for name, value in kwargs.items()}
    return kwargs


def _check_plain_parameters(operation: str, workunit: object) -> None:
    """Refuse a workunit whose parameters are not plain names, in every space: a kernel
    takes each value after the index (and accumulator) as a keyword argument of every
    dispatch, so a default, ``*``, ``/``, ``*args`` or ``**kwargs`` has no meaning in
    compiled code (and the Debug space would run what the others refuse)."""
    func = getattr(workunit, "__func__", workunit)  # a workload method: its def
    if (
        type(func) is not types.FunctionType
        or hasattr(workunit, "__wrapped__")  # _run says what to do about the wrapper
        or is_lambda(func)
        or marker_of(workunit) is None
    ):
        return
    code = func.__code__
    if not (
        func.__defaults__
        or code.co_kwonlyargcount
        or code.co_posonlyargcount
        or code.co_flags & _STARS
    ):
        return  # plain names: what every dispatch of a kernel meets
    names = list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
    positional = names[: code.co_argcount]
    defaults = dict(zip(reversed(positional), reversed(func.__defaults__ or ()), strict=False))
    defaults = dict(reversed(defaults.items())) | (func.__kwdefaults__ or {})
    passed = ", ".join(f"{name}={reprlib.repr(value)}" for name, value in defaults.items())
    star = code.co_argcount + code.co_kwonlyargcount  # where *args, then **kwargs, are
    if code.co_flags & inspect.CO_VARARGS:
        problem = f"*{code.co_varnames[star]} takes any number of values"
    elif code.co_flags & inspect.CO_VARKEYWORDS:
        problem = f"**{code.co_varnames[star]} takes any keyword argument"
    elif defaults:
        problem = f"parameters with a default value ({passed}) are not supported"
    elif code.co_kwonlyargcount:
        problem = f"the `*` marker before {', '.join(names[code.co_argcount :])} is not supported"
    elif code.co_posonlyargcount:
        problem = "the `/` marker is not supported"
    else:
        return
    if isinstance(workunit, types.MethodType):
        names = names[1:]  # self
    raise DispatchError(
        f"parallel_{operation} of {func.__name__}: {problem}; a workunit's parameters are "
        "plain names, each one after the index a keyword argument of every dispatch: write "
        f"`def {func.__name__}({', '.join(names)})`"
        + (f" and pass {passed} to parallel_{operation}" if defaults else "")
        + (", naming each value the kernel uses" if code.co_flags & _STARS else "")
    )


_STARS = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


def not_a_workunit(operation: str, workunit: object) -> str:
    """What to write instead of dispatching ``workunit``, which is no @pk.workunit."""
    text = f"parallel_{operation} needs a @pk.workunit, got {workunit!r}"
    if callable(workunit) and marker_of(workunit) is None:
        return f"{text}: decorate it with @pk.workunit"
    return text


def _run(
    workunit: Callable[..., Any],
    operation: str,
    policy: RangePolicy | MDRangePolicy,
    kwargs: dict[str, Any],
    build_mode: BuildMode,
    dispatch: Dispatch | None,
    reducer: Reducer = Sum,
) -> Any:
    marker = marker_of(workunit)
    if marker is None or marker.kind != "workunit":
        raise DispatchError(not_a_workunit(operation, workunit))
    if not isinstance(workunit, types.FunctionType | types.MethodType) or hasattr(
        workunit, "__wrapped__"
    ):  # functools.wraps and lru_cache copy the marker onto their wrapper
        raise DispatchError(
            f"parallel_{operation} of {getattr(workunit, '__name__', workunit)!r}: the workunit "
            "is wrapped by another decorator; a kernel is translated from its own def, so "
            "use @pk.workunit alone on it"
        )
    if isinstance(workunit, types.MethodType):  # a @pk.workload method: self.x are fields
        workunit, fields = method_form(workunit)
        kwargs = arrays_of_views({**kwargs, **fields})
    if operation == "reduce" and kwargs:
        kwargs = _without_start_value(workunit, policy, kwargs, reducer)
    if build_mode is BuildMode.GUARDED:
        build_mode = _guarded_build(workunit, marker, operation, policy, kwargs, reducer)
    if build_mode is BuildMode.HYBRID:
        rank = TEAM
        if type(policy) is RangePolicy:
            rank = 1
        elif isinstance(policy, MDRangePolicy):
            rank = policy.rank
        native = policy.space in (ExecutionSpace.OpenMP, ExecutionSpace.Serial)
        if native and has_hybrid_launch(operation, rank):
            return _run_hybrid(workunit, marker, operation, policy, kwargs, dispatch, reducer)
        build_mode = BuildMode.DEBUG  # no fast path for this launch
    if isinstance(policy, TeamPolicy):
        return _run_team(workunit, marker, operation, policy, kwargs, build_mode, dispatch, reducer)
    if type(policy) is not RangePolicy and isinstance(policy, MDRangePolicy):
        return _run_box(workunit, marker, operation, policy, kwargs, build_mode, dispatch, reducer)
    space = policy.space
    if space is ExecutionSpace.Debug:
        return run_in_python(workunit, operation, policy, kwargs, reducer)
    if space is ExecutionSpace.Cuda:
        from .cuda_launch import run_cuda  # imports CuPy: only when a GPU is asked for

        return run_cuda(workunit, marker, operation, policy, kwargs, build_mode, dispatch, reducer)
    kernel = None
    # The short look-up of _dispatch, for what reaches here: a labelled or observed
    # dispatch, an int policy of another type (or a kernel not compiled yet).
    if build_mode in _FAST_LOOKUP_BUILDS and reducer is Sum:
        kernel = _compiled_range_kernel(operation, workunit, kwargs, build_mode)
    if kernel is None:
        kernel = compiled_kernel(workunit, marker, operation, kwargs, build_mode, 1, reducer)
    if dispatch is not None:
        hooks.notify("before_launch", dispatch, kernel)
    return kernel.launch(space, policy.begin, policy.end, kwargs)


def _guarded_build(
    workunit: Callable[..., Any],
    marker: KernelMarker,
    operation: str,
    policy: RangePolicy | MDRangePolicy | TeamPolicy,
    kwargs: dict[str, Any],
    reducer: Reducer,
) -> BuildMode:
    """What a BuildMode.GUARDED launch runs: RELEASE when a range or box launch on the
    CPU is proven unable to fail a check, else CHECKED."""
    if policy.space not in _NATIVE_SPACES or isinstance(policy, TeamPolicy):
        return BuildMode.CHECKED
    if type(policy) is RangePolicy:
        rank, begin, end = 1, policy.begin, policy.end
    else:
        _check_index_parameters(workunit, operation, policy.rank)
        rank, begin, end = policy.rank, policy.begins, policy.ends
    # The proof is the translation's: whichever build of these arguments is loaded has
    # it (the release build first: one look-up where the proof holds, the common case);
    # else the release build is compiled first (what a proven launch runs).
    kernel = None
    for mode in (BuildMode.RELEASE, BuildMode.CHECKED):
        key = specialization_key(workunit, operation, kwargs, rank, mode, reducer)[0]
        kernel = marker.specializations.get(key)
        if kernel is not None:
            break
    if kernel is None:
        kernel = compiled_kernel(
            workunit, marker, operation, kwargs, BuildMode.RELEASE, rank, reducer
        )
    proof = kernel.entry.proof
    if proof is not None and proof.holds(begin, end, kwargs):
        return BuildMode.RELEASE
    return BuildMode.CHECKED


def _run_hybrid(
    workunit: Callable[..., Any],
    marker: KernelMarker,
    operation: str,
    policy: RangePolicy | MDRangePolicy,
    kwargs: dict[str, Any],
    dispatch: Dispatch | None,
    reducer: Reducer = Sum,
) -> Any:
    """A range for/reduce or a box for under BuildMode.HYBRID: release code when the
    launch is proven unable to fail a check, else the debug build."""
    if type(policy) is RangePolicy:
        rank, begin, end = 1, policy.begin, policy.end
        bounds = (begin, end)
    else:
        _check_index_parameters(workunit, operation, policy.rank)
        rank, begin, end = policy.rank, policy.begins, policy.ends
        bounds = (box_bounds(begin), box_bounds(end))
    # Both builds at once at the first launch: it most likely holds its proof.
    modes = (BuildMode.DEBUG, BuildMode.HYBRID)
    debug, fast = compiled_kernels(workunit, marker, operation, kwargs, modes, rank, reducer)
    assert debug is not None
    if fast is not None and not debug.entry.proof.holds(begin, end, kwargs):
        fast = None
    mask = dispatch.debug_indices if dispatch is not None else None
    if mask is not None and rank != 1:
        fast = None  # per-index debug code is for ranges: the debug build runs it all
    if dispatch is not None:
        dispatch.fast_build = fast
        hooks.notify("before_launch", dispatch, debug)
    if fast is None:
        return debug.launch(policy.space, *bounds, kwargs)
    request = dispatch.debug_request if dispatch is not None else ctypes.c_int(0)
    return fast.launch_hybrid(policy.space, *bounds, kwargs, request, debug, mask)


def _run_box(
    workunit: Callable[..., Any],
    marker: KernelMarker,
    operation: str,
    policy: MDRangePolicy,
    kwargs: dict[str, Any],
    build_mode: BuildMode,
    dispatch: Dispatch | None,
    reducer: Reducer = Sum,
) -> Any:
    """:func:`_run` for an MDRangePolicy: the launchers take its begins and ends as arrays."""
    rank = policy.rank
    if operation == "scan":
        raise DispatchError(
            "parallel_scan over an MDRangePolicy is not supported: a scan needs one order of "
            "its indices; use a RangePolicy over the flattened index"
        )
    _check_index_parameters(workunit, operation, rank)
    space = policy.space
    if space is ExecutionSpace.Debug:
        return run_in_python(workunit, operation, policy, kwargs, reducer)
    if space is ExecutionSpace.Cuda:
        from .cuda_launch import run_cuda  # imports CuPy: only when a GPU is asked for

        return run_cuda(workunit, marker, operation, policy, kwargs, build_mode, dispatch, reducer)
    kernel = compiled_kernel(workunit, marker, operation, kwargs, build_mode, rank, reducer)
    if dispatch is not None:
        hooks.notify("before_launch", dispatch, kernel)
    return kernel.launch(space, box_bounds(policy.begins), box_bounds(policy.ends), kwargs)


def _run_team(
    workunit: Callable[..., Any],
    marker: KernelMarker,
    operation: str,
    policy: TeamPolicy,
    kwargs: dict[str, Any],
    build_mode: BuildMode,
    dispatch: Dispatch | None,
    reducer: Reducer = Sum,
) -> Any:
    """:func:`_run` for a TeamPolicy: the launchers take the league, team size and
    scratch sizes as one int64 array (:meth:`TeamPolicy.launch_spec`)."""
    if operation == "scan":
        raise DispatchError(
            "parallel_scan over a TeamPolicy is not supported (nor in Kokkos): scan over a "
            "RangePolicy, or use a nested pk.parallel_scan(pk.TeamThreadRange(...), ...)"
        )
    _check_team_parameters(workunit, operation)
    space = policy.space
    team_size = policy.resolved_team_size()
    policy.check_scratch(team_size)
    if space is ExecutionSpace.Debug:
        return run_team_in_python(workunit, operation, policy, kwargs, reducer)
    if space is ExecutionSpace.Cuda:
        from .cuda_launch import run_cuda  # imports CuPy: only when a GPU is asked for

        return run_cuda(workunit, marker, operation, policy, kwargs, build_mode, dispatch, reducer)
    if space is ExecutionSpace.Serial and team_size != 1:
        raise DispatchError(
            f"the Serial space runs teams of one thread, but this TeamPolicy asks for "
            f"{team_size}: use pk.AUTO (or OpenMP, whose teams are real threads)"
        )
    kernel = compiled_kernel(workunit, marker, operation, kwargs, build_mode, TEAM, reducer)
    if dispatch is not None:
        hooks.notify("before_launch", dispatch, kernel)
    return kernel.launch(space, box_bounds(tuple(policy.launch_spec(team_size))), None, kwargs)


def _check_team_parameters(workunit: Callable[..., Any], operation: str) -> None:
    """A TeamPolicy passes the team member (then the accumulator) first."""
    code = workunit.__code__
    needed = 2 if operation == "reduce" else 1
    if code.co_argcount < needed:
        wanted = "team_member, acc, ..." if operation == "reduce" else "team_member, ..."
        raise DispatchError(
            f"parallel_{operation} of {workunit.__name__} over a TeamPolicy: the workunit "
            f"needs the team member first{' and the accumulator' * (operation == 'reduce')}, "
            f"e.g. ({wanted})"
        )


def _check_index_parameters(workunit: Callable[..., Any], operation: str, rank: int) -> None:
    """An MDRangePolicy of ``rank`` passes ``rank`` indices (then the accumulator): the
    workunit must have parameters for them."""
    code = workunit.__code__
    needed = len(ROLES[operation]) + rank - 1
    if code.co_argcount < needed:
        names = ", ".join(code.co_varnames[: code.co_argcount])
        wanted = ", ".join([*"ijkl"[:rank], *(["acc"] if operation == "reduce" else [])])
        raise DispatchError(
            f"parallel_{operation} of {workunit.__name__} over an MDRangePolicy of rank {rank}: "
            f"the workunit takes ({names}), but needs {rank} index parameters"
            + (" and the accumulator" if operation == "reduce" else "")
            + f" first, e.g. ({wanted}, ...)"
        )


def _argument_names(workunit: Callable[..., Any], operation: str, rank: int = 1) -> tuple[str, ...]:
    return _keyword_names(workunit.__code__, operation, rank)


@functools.lru_cache(maxsize=1024)
def _keyword_names(code: types.CodeType, operation: str, rank: int) -> tuple[str, ...]:
    return code.co_varnames[_leading(operation, rank) : code.co_argcount]


def _leading(operation: str, rank: int) -> int:
    """How many leading parameters the policy fills: the index (``rank`` of them for an
    MDRangePolicy, the team member for a TeamPolicy) and the accumulator, last_pass."""
    return len(ROLES[operation]) + max(rank, 1) - 1


def _check_arguments(
    workunit: Callable[..., Any], operation: str, kwargs: dict[str, Any], rank: int = 1
) -> None:
    names = _argument_names(workunit, operation, rank)
    missing = [n for n in names if n not in kwargs]
    extra = [n for n in kwargs if n not in names]
    if missing or extra:
        parts = []
        if missing:
            parts.append("missing " + ", ".join(missing))
        if extra:
            parts.append("unexpected " + ", ".join(extra))
        note = ""
        if rank > 1:
            leading = workunit.__code__.co_varnames[: _leading(operation, rank)]
            note = (
                f"; an MDRangePolicy of rank {rank} passes ({', '.join(leading)}) "
                "positionally: the indices first"
            )
        raise DispatchError(
            f"parallel_{operation} of {workunit.__name__}: {'; '.join(parts)} "
            f"(the workunit takes {', '.join(names) or 'no keyword arguments'}{note})"
            + _operation_hint(workunit, operation, kwargs, rank)
        )


def _operation_hint(
    workunit: Callable[..., Any], operation: str, kwargs: dict[str, Any], rank: int
) -> str:
    """When the arguments fit the workunit as the body of another operation (a reduce
    body, with its accumulator, dispatched by parallel_scan, say): what each expects."""
    for other in ("for", "reduce", "scan"):
        if other != operation and set(_argument_names(workunit, other, rank)) == set(kwargs):
            leading = workunit.__code__.co_varnames[: _leading(other, rank)]
            wanted = _LEADING_SHAPES[operation]
            return (
                f". Its parameters ({', '.join(leading)}, ...) are those of a parallel_{other} "
                f"body; a parallel_{operation} body takes ({wanted}, ...)"
            )
    return ""


_LEADING_SHAPES = {"for": "i", "reduce": "i, acc", "scan": "i, acc, last_pass"}


def specialization_key(
    workunit: Callable[..., Any],
    operation: str,
    kwargs: dict[str, Any],
    rank: int,
    build: Any,
    reducer: Reducer = Sum,
) -> tuple[tuple[Any, ...], tuple[str, ...]]:
    """The memo key of ``workunit``'s build for these arguments (``build``: what else
    tells builds apart, e.g. the BuildMode), and the names of its keyword parameters.
    Arguments that do not fit the workunit raise DispatchError."""
    names = _keyword_names(workunit.__code__, operation, rank)
    try:
        signature = tuple([signature_key(kwargs[name]) for name in names])
        if len(kwargs) != len(names):
            raise KeyError
    except KeyError:
        _check_arguments(workunit, operation, kwargs, rank)
        raise
    if workunit.__closure__:  # the helpers and classtypes it captured are part of it
        signature += (_captured_code(workunit),)
    if reducer is not Sum:  # another combination: another build
        return (operation, build, rank, signature, reducer.name), names
    return (operation, build, rank, signature), names


def _captured_code(workunit: Callable[..., Any]) -> tuple[Any, ...]:
    """The functions, classes and modules a workunit defined in a function captured (a
    cell rebound to another helper needs another translation)."""
    return tuple(
        (name, value)
        for name, value in closure_of(workunit).items()
        if isinstance(value, types.FunctionType | type | types.ModuleType)
    )


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
            with compile_notice(f"the {mode.value} build of {workunit.__qualname__}"):
                return build(entry.source, mode is BuildMode.DEBUG, label, defines)

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
                _line_span(workunit),
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


def _line_span(workunit: Callable[..., Any]) -> range:
    """The Python lines of the workunit, its nested bodies (a team kernel's) included."""
    code = workunit.__code__
    return range(code.co_firstlineno, max(_last_line(code), code.co_firstlineno) + 1)


def _last_line(code: types.CodeType) -> int:
    last = max((line for _, _, line in code.co_lines() if line is not None), default=0)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            last = max(last, _last_line(const))
    return last


def run_in_python(
    workunit: Callable[..., Any],
    operation: str,
    policy: RangePolicy | MDRangePolicy,
    kwargs: dict[str, Any],
    reducer: Reducer = Sum,
) -> Any:
    """The ``Debug`` space: the body as plain Python, index by index (an MDRangePolicy's
    index tuples in row-major order), after the translator's checks (python_forms); a
    reduce's accumulator starts at the reducer's identity (one accumulator: the body's
    own updates are the reduction)."""
    rank = policy.rank if isinstance(policy, MDRangePolicy) else 1
    if operation == "for":
        make_form = functools.partial(python_form, workunit)  # (local_types) -> form
    else:
        make_form = functools.partial(accumulator_form, workunit, rank)
    body = checked_form(workunit, operation, kwargs, rank, reducer, make_form)
    check_argument_values(workunit, kwargs)
    kwargs = {name: _as_view(value) for name, value in kwargs.items()}
    if isinstance(policy, MDRangePolicy):
        boxes = itertools.product(*map(range, policy.begins, policy.ends))
        if operation == "for":
            for index in boxes:
                body(*index, **kwargs)
            return None
        assert operation == "reduce"
        start, kind = _start_and_type(reducer, workunit, rank)
        acc = debug_cell(reducer, start)
        for index in boxes:
            body(*index, acc[0], __pk_acc=acc, **kwargs)
        return reducer.value_of(acc[0], kind)
    indices: Any = range(policy.begin, policy.end)
    if _index_is_float(workunit):
        indices = map(float, indices)
    if operation == "for":
        for i in indices:
            body(i, **kwargs)
        return None
    start, kind = _start_and_type(reducer, workunit, 1)
    acc = debug_cell(reducer, start)
    scan = (True,) if operation == "scan" else ()
    for i in indices:
        body(i, acc[0], *scan, __pk_acc=acc, **kwargs)
    # The compiled spaces return a Python int/float/bool; so does this one (not a NumPy
    # scalar picked up from a view element).
    return reducer.value_of(acc[0], kind)


_WIDE = (np.dtype(np.float64), np.dtype(np.bool_))
_MASK64 = (1 << 64) - 1


def debug_cell(reducer: Reducer, start: Any) -> AccumulatorCell:
    """The cell a Debug-space body's accumulator lives in (the body gets ``cell[0]`` as
    its ``acc`` and stores each new value with ``cell.put``), starting at ``start``. A
    float32 or integer accumulator computes as a float64 or int64 there (an int8 acc +
    an element of 300, a float32 acc + a float64) and each store converts it as a
    compiled kernel stores into it (C's conversion, integers wrapping): `acc += x[i]`
    gives the compiled result. The fields of a reducer to several values (``acc.val =
    x[i]``) are converted at each store to their C type too. Float64 and bool
    accumulators are kept as they are."""
    if reducer.parts:
        fields = start._asdict()
        converters = {name: _c_store(type(value))[1] for name, value in fields.items()}
        return AccumulatorCell(_StoringFields(converters, fields))
    if not isinstance(start, np.generic) or start.dtype in _WIDE:
        return AccumulatorCell(reducer.accumulator(start))
    wide, stored = _c_store(type(start))
    return AccumulatorCell(wide(start), stored)


def _c_store(kind: type[np.generic]) -> tuple[type, Callable[[Any], Any]]:
    """How the Debug space holds a value of C type ``kind``: the wide type it computes in
    (float64, int64 or uint64) and the conversion a C store into ``kind`` makes, giving
    the stored value in that wide type (integers wrap; float32 rounds)."""
    is_float = np.dtype(kind).kind == "f"
    wide = np.float64 if is_float else np.uint64 if kind is np.uint64 else np.int64

    def stored(value: Any) -> Any:
        if isinstance(value, int):  # a Python int (an int64 element): wrap as C does
            return wide(np.uint64(value & _MASK64).astype(kind))
        with np.errstate(all="ignore"):
            return wide(np.asarray(value).astype(kind)[()])

    return wide, stored


class AccumulatorCell(list):
    """A one-element list holding a Debug-space accumulator; stores go through
    ``convert`` (see :func:`debug_cell`)."""

    __slots__ = ("_convert",)

    def __init__(self, value: Any, convert: Callable[[Any], Any] | None = None) -> None:
        super().__init__([value])
        self._convert = convert

    def __setitem__(self, index: Any, value: Any) -> None:
        super().__setitem__(index, value if self._convert is None else self._convert(value))

    def put(self, value: Any) -> Any:
        """Store ``value`` (what the body assigned its ``acc``); the stored value is
        what the body's ``acc`` holds from then on."""
        self[0] = value
        return self[0]


class _StoringFields(types.SimpleNamespace):
    """The accumulator of a reducer to several values in the Debug space (``acc.val``,
    ``acc.loc``): each field store converts as a store into Kokkos' struct field does."""

    def __init__(self, converters: dict[str, Callable[[Any], Any]], fields: dict[str, Any]):
        object.__setattr__(self, "_converters", converters)
        for name, value in fields.items():
            setattr(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        convert = self._converters.get(name)
        object.__setattr__(self, name, value if convert is None else convert(value))

    def __repr__(self) -> str:  # the fields only (a debugger's `p acc`)
        values = {name: getattr(self, name) for name in self._converters}
        fields = (
            f"{k}={v.item() if isinstance(v, np.generic) else v!r}" for k, v in values.items()
        )
        return f"acc({', '.join(fields)})"


class _PythonView(np.ndarray):
    """How the Debug space shows an array to a kernel body: the same memory (no copy),
    with ``extent()`` as on a :class:`pk.View`, and elements of int64 and bool arrays
    read as Python ints and bools. Their arithmetic is what compiled kernels implement
    (``True + True == 2``, ``n ** -1 == 1 / n``); NumPy's scalars differ there."""

    # A negative index is out of range, as in the compiled spaces (NumPy would count it
    # from the end); a slice keeps Python's rules, as a kernel's subview does. The checks
    # are inline and cheap first (min() of an index tuple): every view access runs them.
    def __getitem__(self, key: Any) -> Any:
        if key.__class__ is tuple:
            try:
                if min(key) < 0:
                    _negative_index(self, key)
            except TypeError:  # slices in it
                _check_each(self, key)
        elif key.__class__ is int:
            if key < 0:
                _negative_index(self, key)
        else:
            _check_each(self, (key,))
        value = super().__getitem__(key)
        return value.item() if type(value) in _AS_PYTHON else value

    def __setitem__(self, key: Any, value: Any) -> None:
        if key.__class__ is tuple:
            try:
                if min(key) < 0:
                    _negative_index(self, key)
            except TypeError:
                _check_each(self, key)
        elif key.__class__ is int:
            if key < 0:
                _negative_index(self, key)
        else:
            _check_each(self, (key,))
        super().__setitem__(key, value)

    def extent(self, axis: int) -> int:
        """Length of ``axis`` (Kokkos' spelling of ``shape[axis]``)."""
        return int(self.shape[axis])

    # NumPy's printing indexes from the end, which __getitem__ refuses: shown as the
    # array it is (a debugger's `p view`, a traceback's locals, print in a Debug run).
    def __repr__(self) -> str:
        return repr(self.view(np.ndarray))

    def __str__(self) -> str:
        return str(self.view(np.ndarray))


def _check_each(view: np.ndarray, key: tuple[Any, ...]) -> None:
    for k in key:
        if isinstance(k, int | np.integer) and k < 0:
            _negative_index(view, key)


def _negative_index(view: np.ndarray, key: Any) -> NoReturn:
    for axis, k in enumerate(key if type(key) is tuple else (key,)):
        if isinstance(k, int | np.integer) and k < 0:
            raise KernelIndexError(
                f"index {k} is out of range for axis {axis} of a view of extent "
                f"{view.shape[axis]}: kernel views do not count from the end"
            )
    raise AssertionError(key)


_AS_PYTHON = (np.int64, np.bool_)


def as_kernel_view(array: np.ndarray) -> Any:
    """``array`` as the Debug space shows a view to a kernel body (a list local's too)."""
    return array.view(_PythonView)


def _as_view(value: Any) -> Any:
    """A dispatch argument as the Debug space passes it to the kernel body: arrays as
    views, a NumPy bool as Python's; a NumPy number keeps its type (an np.int64 next to an
    np.int32 computes in int64, as compiled; a Python int would take int32)."""
    if type(value) is np.ndarray:  # a subclass keeps its own behaviour
        return value.view(_PythonView)
    return value.item() if type(value) is np.bool_ else value


def _without_start_value(
    workunit: Callable[..., Any], policy: Any, kwargs: dict[str, Any], reducer: Reducer
) -> dict[str, Any]:
    """``kwargs`` without the accumulator, which PyKokkos programs may pass by name
    (``acc=0.0``). Taken when it is the reducer's identity, where every thread starts in
    Kokkos (so both readings agree); another value is refused rather than guessed at."""
    position = policy.rank if isinstance(policy, MDRangePolicy) else 1
    code = workunit.__code__
    name = code.co_varnames[position] if code.co_argcount > position else None
    value = kwargs.get(name) if name is not None else None
    if not isinstance(value, int | float | np.number | np.bool_):
        return kwargs  # not given, or an array: not a start value (a misplaced argument)
    start, kind = _start_and_type(reducer, workunit, position)
    if reducer.parts or value != start:
        start = reducer.value_of(start, kind)  # Python numbers, for the message
        raise DispatchError(
            f"parallel_reduce of {workunit.__name__}: {name}={value!r} would start the "
            f"reduction; every thread starts from {reducer!r}'s identity ({start!r}), as in "
            f"Kokkos: leave {name}= out and combine {value!r} with the result"
        )
    return {key: v for key, v in kwargs.items() if key != name}


def _start(reducer: Reducer, workunit: Callable[..., Any], position: int) -> Any:
    """The accumulator's first value: the reducer's identity for its type, as the Python
    type the result has (a named tuple for a reducer to several values)."""
    return _start_and_type(reducer, workunit, position)[0]


def _start_and_type(
    reducer: Reducer, workunit: Callable[..., Any], position: int
) -> tuple[Any, type]:
    """:func:`_start` and the Python type of the accumulator's value, from one reading of
    its annotation."""
    dtype = _acc_type(workunit, position)
    kind = _kind_of(dtype)
    if reducer is Sum:
        return dtype.np_dtype.type(0), kind
    try:
        reducer.check(dtype)
    except TypeError as exc:  # at the parameter, as the compiled spaces report it
        source = KernelSource.of(workunit)
        source.error(source.tree.args.args[position], str(exc))
    start = reducer.value_of(reducer.identity(dtype), kind)
    # NumPy scalars of the accumulator's type: `acc += f32[i]` then computes in the
    # type the compiled spaces use (a Python float would take float32: NumPy's weak
    # scalars), and debug_cell knows the C type each store converts to.
    if reducer.parts:
        fields = start._asdict()
        for name in fields:
            np_type = np.int64 if reducer.field_is_location(name) else dtype.np_dtype.type
            fields[name] = np_type(fields[name])
        return type(start)(**fields), kind
    return dtype.np_dtype.type(start), kind


def _index_is_float(workunit: Callable[..., Any]) -> bool:
    """Whether the index parameter is annotated a float type (PyKokkos' ``i: float``),
    which compiled kernels declare it as."""
    code = workunit.__code__
    if not code.co_argcount:
        return False
    try:
        ann = inspect.get_annotations(workunit, eval_str=True).get(code.co_varnames[0])
        return ann is not None and to_datatype(ann).is_float
    except Exception:  # noqa: BLE001 - not a type: the translator said what is wrong
        return False


def _python_type(workunit: Callable[..., Any], position: int = 1) -> type:
    """The Python type of the accumulator's value (the parameter at ``position``)."""
    return _kind_of(_acc_type(workunit, position))


def _kind_of(dtype: DataType) -> type:
    return int if dtype.kind in ("int", "uint") else bool if dtype.kind == "bool" else float


def _acc_type(workunit: Callable[..., Any], position: int = 1) -> DataType:
    """The accumulator's type, read as the translator reads it (float64 if unannotated).

    Annotations are evaluated, so modules using ``from __future__ import annotations``
    (where ``__annotations__`` holds strings) get the same type as in compiled spaces.
    """
    name = workunit.__code__.co_varnames[position]
    try:
        ann = inspect.get_annotations(workunit, eval_str=True).get(name)
    except Exception:  # noqa: BLE001 - an annotation Python cannot evaluate: the default
        ann = None
    if isinstance(ann, AccAnnotation):
        return ann.dtype
    try:
        return float64 if ann is None else to_datatype(ann)
    except TypeError:
        return float64
