"""``parallel_for`` / ``parallel_reduce`` / ``parallel_scan``: the dispatch front door.

A dispatch is checked against its policy and workunit here (lambdas, closures and
workload methods put in the form kernels take), then run by the backend of the
policy's space (:mod:`pkernels.backends`: OpenMP and Serial, Cuda, Debug), through one
protocol. Fast path for a kernel already compiled in this process: the backend looks
the argument signature up in the workunit's memo and the C arguments are built and
passed; hooks cost nothing when no observer is registered.
"""

from __future__ import annotations

import inspect
import reprlib
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from ..api.decorators import marker_of
from ..api.policies import MDRangePolicy, RangePolicy, as_policy
from ..api.reducers import REDUCERS, Reducer, Sum
from ..api.spaces import get_default_space
from ..api.teams import NestedRange, TeamPolicy
from ..api.views import View, is_tensor, unwrap
from ..backends import BACKENDS, NOT_LAUNCHED, Launch, backend_for
from ..errors import DispatchError
from ..translate.closures import captured_values, closure_form
from ..translate.kernel import ROLES, TEAM
from ..translate.lambdas import VIEW as LAMBDA_VIEW
from ..translate.lambdas import is_lambda, lambda_form
from ..translate.methods import method_form
from . import hooks
from .hooks import (
    DEFAULT_BUILD,
    OBSERVERS,
    BuildMode,
    Dispatch,
)
from .python_teams import run_nested_in_python
from .python_values import start_and_type
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
    if len(args) == 2 and reducer is Sum and not OBSERVERS:
        policy = args[0]
        if type(policy) is int:  # parallel_for(n, ...): RangePolicy(0, n), default space
            space, begin, end = get_default_space(), 0, policy
        elif type(policy) is RangePolicy:
            space, begin, end = policy.space, policy.begin, policy.end
        elif type(policy) is TeamPolicy or type(policy) is MDRangePolicy:
            backend = BACKENDS.get(policy.space)
            rank = TEAM if type(policy) is TeamPolicy else policy.rank
            if backend is not None:
                kernel = backend.cached_policy_kernel(operation, args[1], kwargs, rank)
                if kernel is not None:
                    result = kernel.launch(policy, kwargs)
                    if result is not NOT_LAUNCHED:
                        return result
            space = None
        else:
            space = None
        backend = BACKENDS.get(space)  # type: ignore[arg-type]
        if backend is not None:
            kernel = backend.cached_range_kernel(operation, args[1], kwargs)
            if kernel is not None:
                result = kernel.launch(space, begin, end, kwargs)
                if result is not NOT_LAUNCHED:
                    return result
    label: str | None = None
    if args and isinstance(args[0], str):
        label, args = args[0], args[1:]
    # isinstance with a tuple of types, here and in _run: half the time of `list | tuple`
    if len(args) == 2 and isinstance(args[1], (list, tuple)):
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
        # workunit the Debug space runs as Python (compiled kernels never get here): the
        # program's own Python, traced as the rest of it (see hooks.untraced_dispatches).
        hooks.resume_tracing()
        return run_nested_in_python(operation, args[0], args[1], kwargs, reducer)
    # Until an observer's dispatch_started, a debugger's tracer sees every call made
    # here (pdb and pkdb both: ~0.6 us each): the commonest cases take none.
    policy = args[0]
    if type(policy) is not RangePolicy:
        policy = as_policy(policy)
    workunit = args[1]
    if type(workunit) is not types.FunctionType or workunit not in _PLAIN_FUNCTIONS:
        _check_plain_parameters(operation, workunit)
    if type(workunit) is types.FunctionType and workunit.__name__ == "<lambda>":
        # PyKokkos' lambdas in @pk.main: see translate.lambdas
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
    for value in kwargs.values():  # arrays_of_views, inline (see above)
        if type(value) not in _PLAIN_ARGUMENTS:
            kwargs = arrays_of_views(kwargs)
            break
    if OBSERVERS:
        dispatch = Dispatch(
            operation, label, policy, workunit, kwargs, sys._getframe(2), original_workunit=workunit
        )
        if operation == "reduce":
            dispatch.reducer = reducer
        hooks.notify("dispatch_started", dispatch)
        try:
            result = _run_observed(dispatch, operation, policy, kwargs, reducer)
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


def arrays_of_views(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with each ``pk.View`` (or PyTorch tensor) replaced by its array (what
    the rest of a dispatch, its observers and the Debug space see): the view's array at
    this dispatch, whatever size a ``resize`` gave it."""
    for value in kwargs.values():
        if type(value) not in _PLAIN_ARGUMENTS and (isinstance(value, View) or is_tensor(value)):
            return {name: unwrap(value) for name, value in kwargs.items()}
    return kwargs


#: The argument types most dispatches pass, which are neither views nor tensors (told
#: apart by one set look-up, where is_tensor reads the type's module).
_PLAIN_ARGUMENTS = frozenset({np.ndarray, int, float, bool})


def _check_plain_parameters(operation: str, workunit: object) -> None:
    """Refuse a workunit whose parameters are not plain names, in every space: a kernel
    takes each value after the index (and accumulator) as a keyword argument of every
    dispatch, so a default, ``*``, ``/``, ``*args`` or ``**kwargs`` has no meaning in
    compiled code (and the Debug space would run what the others refuse)."""
    func = getattr(workunit, "__func__", workunit)  # a workload method: its def
    if type(func) is not types.FunctionType:
        return
    code = func.__code__
    if not (
        func.__defaults__
        or code.co_kwonlyargcount
        or code.co_posonlyargcount
        or code.co_flags & _STARS
    ):
        if func is workunit and len(_PLAIN_FUNCTIONS) < _PLAIN_FUNCTIONS_SIZE:
            _PLAIN_FUNCTIONS.add(func)  # its next dispatch skips this call
        return  # plain names: what every dispatch of a kernel meets
    if (
        hasattr(workunit, "__wrapped__")  # _run says what to do about the wrapper
        or is_lambda(func)
        or marker_of(workunit) is None
    ):
        return
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
#: Workunit functions whose parameters were found plain names (by identity; a workload
#: method is a new bound method at each dispatch and is checked each time).
_PLAIN_FUNCTIONS: set[Any] = set()
_PLAIN_FUNCTIONS_SIZE = 4096


def not_a_workunit(operation: str, workunit: object) -> str:
    """What to write instead of dispatching ``workunit``, which is no @pk.workunit."""
    text = f"parallel_{operation} needs a @pk.workunit, got {workunit!r}"
    if callable(workunit) and marker_of(workunit) is None:
        return f"{text}: decorate it with @pk.workunit"
    return text


def _run_observed(
    dispatch: Dispatch,
    operation: str,
    policy: Any,
    kwargs: dict[str, Any],
    reducer: Reducer,
) -> Any:
    """An observed dispatch once its observers chose the build: the commonest (a plain
    workunit over a range, no reducer, a build loaded already) straight to its kernel, as
    the unobserved fast path does; any other through :func:`_run`. (A debugger observes
    every dispatch: this is its per-dispatch cost.)"""
    if type(policy) is RangePolicy and reducer is Sum:
        space = policy.space
        backend = BACKENDS.get(space)
        if backend is not None:
            begin, end = policy.begin, policy.end
            kernel = backend.observed_range_kernel(
                operation, dispatch.workunit, kwargs, dispatch.build, begin, end
            )
            if kernel is not None:
                hooks.notify("before_launch", dispatch, kernel)
                return kernel.launch(space, begin, end, kwargs)
    return _run(dispatch.workunit, operation, policy, kwargs, dispatch.build, dispatch, reducer)


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
    # functools.wraps and lru_cache copy the marker onto their wrapper. (`__wrapped__` is
    # looked up in the function's own attributes: hasattr's miss costs an exception.)
    if (
        not isinstance(workunit, (types.FunctionType, types.MethodType))
        or "__wrapped__" in workunit.__dict__
    ):
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
    rank, team_size = _checked_shape(workunit, operation, policy)
    backend = backend_for(policy.space)
    launch = Launch(
        workunit, marker, operation, policy, kwargs, build_mode, dispatch, reducer, rank, team_size
    )
    launch.build = backend.build_mode(launch)
    kernel = backend.kernel(launch)
    if dispatch is not None and kernel is not None:
        hooks.notify("before_launch", dispatch, kernel)
    return backend.launch(kernel, launch)


def _checked_shape(
    workunit: Callable[..., Any], operation: str, policy: RangePolicy | MDRangePolicy | TeamPolicy
) -> tuple[int, int]:
    """The launch's rank (1, an MDRangePolicy's rank, or TEAM) and team size (1 but for
    a TeamPolicy), once the workunit is known to take what the policy passes."""
    if isinstance(policy, TeamPolicy):
        if operation == "scan":
            raise DispatchError(
                "parallel_scan over a TeamPolicy is not supported (nor in Kokkos): scan over a "
                "RangePolicy, or use a nested pk.parallel_scan(pk.TeamThreadRange(...), ...)"
            )
        _check_team_parameters(workunit, operation)
        team_size = policy.resolved_team_size()
        policy.check_scratch(team_size)
        return TEAM, team_size
    if type(policy) is not RangePolicy and isinstance(policy, MDRangePolicy):
        if operation == "scan":
            raise DispatchError(
                "parallel_scan over an MDRangePolicy is not supported: a scan needs one order "
                "of its indices; use a RangePolicy over the flattened index"
            )
        _check_index_parameters(workunit, operation, policy.rank)
        return policy.rank, 1
    return 1, 1


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
    start, kind = start_and_type(reducer, workunit, position)
    if reducer.parts or value != start:
        start = reducer.value_of(start, kind)  # Python numbers, for the message
        raise DispatchError(
            f"parallel_reduce of {workunit.__name__}: {name}={value!r} would start the "
            f"reduction; every thread starts from {reducer!r}'s identity ({start!r}), as in "
            f"Kokkos: leave {name}= out and combine {value!r} with the result"
        )
    return {key: v for key, v in kwargs.items() if key != name}
