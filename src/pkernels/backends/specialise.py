"""Which keyword arguments a workunit takes, and the memo key of its build for a
dispatch's arguments (shared by every backend: a workunit's ``specializations`` hold
the builds of all spaces, told apart by the key's ``build`` part)."""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

from ..api.decorators import KernelMarker
from ..api.policies import RangePolicy
from ..api.reducers import Reducer, Sum
from ..errors import DispatchError
from ..runtime.hooks import DEFAULT_BUILD
from ..runtime.marshal import signature_key
from ..translate.kernel import ROLES
from ..translate.source import closure_of


def argument_names(workunit: Callable[..., Any], operation: str, rank: int = 1) -> tuple[str, ...]:
    """The names of the keyword arguments a dispatch of ``workunit`` passes."""
    return keyword_names(workunit.__code__, operation, rank)


@functools.lru_cache(maxsize=1024)
def keyword_names(code: types.CodeType, operation: str, rank: int) -> tuple[str, ...]:
    return code.co_varnames[leading_parameters(operation, rank) : code.co_argcount]


def leading_parameters(operation: str, rank: int) -> int:
    """How many leading parameters the policy fills: the index (``rank`` of them for an
    MDRangePolicy, the team member for a TeamPolicy) and the accumulator, last_pass."""
    return len(ROLES[operation]) + max(rank, 1) - 1


def _check_arguments(
    workunit: Callable[..., Any], operation: str, kwargs: dict[str, Any], rank: int = 1
) -> None:
    names = argument_names(workunit, operation, rank)
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
            leading = workunit.__code__.co_varnames[: leading_parameters(operation, rank)]
            note = (
                f"; an MDRangePolicy of rank {rank} passes ({', '.join(leading)}) "
                "positionally: the indices first"
            )
        raise DispatchError(
            f"parallel_{operation} of {workunit.__name__}: {'; '.join(parts)} "
            f"(the workunit takes {', '.join(names) or 'no keyword arguments'}{note})"
            + _operation_hint(workunit, operation, kwargs, rank)
            + _scan_reducer_hint(operation, kwargs, extra)
        )


def _scan_reducer_hint(operation: str, kwargs: dict[str, Any], extra: list[str]) -> str:
    """A scan given ``reducer=pk.Prod`` (say): what a scan computes instead."""
    if operation == "scan" and "reducer" in extra and isinstance(kwargs["reducer"], Reducer):
        return (
            ". A scan's running total is a sum: parallel_scan takes no reducer= "
            "(parallel_reduce does)"
        )
    return ""


def _operation_hint(
    workunit: Callable[..., Any], operation: str, kwargs: dict[str, Any], rank: int
) -> str:
    """When the arguments fit the workunit as the body of another operation (a reduce
    body, with its accumulator, dispatched by parallel_scan, say): what each expects."""
    for other in ("for", "reduce", "scan"):
        if other != operation and set(argument_names(workunit, other, rank)) == set(kwargs):
            leading = workunit.__code__.co_varnames[: leading_parameters(other, rank)]
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
    names = keyword_names(workunit.__code__, operation, rank)
    try:
        # A loop, not a list comprehension: on Python 3.11 a comprehension makes and calls
        # a function object, ~0.2 us of the ~2.8 us fast path (every dispatch runs this).
        keys = []
        for name in names:
            keys.append(signature_key(kwargs[name]))
        signature = tuple(keys)
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


def loaded_kernel(
    operation: str,
    workunit: Any,
    kwargs: dict[str, Any],
    build: Any = DEFAULT_BUILD,
    rank: int = 1,
) -> Any | None:
    """The loaded ``build`` (by default the default build: release or checked) of a
    launch of ``rank`` (1: a range; an MDRangePolicy's rank; a TeamPolicy's, TEAM) of
    the commonest dispatch (a plain @pk.workunit function, arguments that fit it) when
    this process has it already, else None: the backends' ``cached_range_kernel`` and
    ``cached_policy_kernel``; the full path handles and checks anything else.

    Dispatches often follow a kernel that swept the caches; then each Python object on
    the way costs a miss, and this path touches about half of what the full one does."""
    if type(workunit) is not types.FunctionType:  # a @pk.workload method, a non-kernel
        return None
    marker = getattr(workunit, "__pkernels__", None)
    if type(marker) is not KernelMarker or marker.kind != "workunit":
        return None
    try:
        key, _ = specialization_key(workunit, operation, kwargs, rank, build)
    except (KeyError, DispatchError):
        return None  # the full path reports what does not fit
    return marker.specializations.get(key)


def proof_bounds(policy: Any) -> tuple[Any, Any]:
    """(begin, end) of a range, or a box's begins and ends, as bounds proofs take them."""
    if type(policy) is RangePolicy:
        return policy.begin, policy.end
    return policy.begins, policy.ends


def _captured_code(workunit: Callable[..., Any]) -> tuple[Any, ...]:
    """The functions, classes and modules a workunit defined in a function captured (a
    cell rebound to another helper needs another translation)."""
    return tuple(
        (name, value)
        for name, value in closure_of(workunit).items()
        if isinstance(value, types.FunctionType | type | types.ModuleType)
    )


def line_span(workunit: Callable[..., Any]) -> range:
    """The Python lines of the workunit, its nested bodies (a team kernel's) included."""
    code = workunit.__code__
    return range(code.co_firstlineno, max(_last_line(code), code.co_firstlineno) + 1)


def _last_line(code: types.CodeType) -> int:
    last = max((line for _, _, line in code.co_lines() if line is not None), default=0)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            last = max(last, _last_line(const))
    return last
