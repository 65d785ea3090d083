"""Where a kernel's code is: the source lines of a workunit and of the ``@pk.function``s
it calls, the pdb breakpoints on them, and the names of its index parameters."""

from __future__ import annotations

import bdb
import functools
import os
import types
from collections.abc import Callable
from typing import Any


def function_span(func: Callable[..., Any]) -> tuple[str, int, int]:
    """(absolute file, first line, last line) of a function's source."""
    code = func.__code__
    last = max((line for _, _, line in code.co_lines() if line is not None), default=0)
    return os.path.abspath(code.co_filename), code.co_firstlineno, max(last, code.co_firstlineno)


_spans_cache: dict[Any, list[tuple[str, int, int]]] = {}


def kernel_spans(workunit: Callable[..., Any]) -> list[tuple[str, int, int]]:
    """Line spans of a workunit and of every ``@pk.function`` it may call (transitively).

    Memoised per code object: this runs at every dispatch, and a function's code (hence
    its lines) never changes; a redefined function is a new code object.
    """
    key = (workunit.__code__, id(workunit.__globals__))
    spans = _spans_cache.get(key)
    if spans is None:
        spans = _spans_cache[key] = _collect_spans(workunit)
    return spans


def _collect_spans(workunit: Callable[..., Any]) -> list[tuple[str, int, int]]:
    from pkernels.api.decorators import marker_of

    spans: list[tuple[str, int, int]] = []
    seen: set[Any] = set()
    todo: list[Any] = [workunit]  # the workunit's span first
    while todo:
        func = todo.pop()
        if func in seen:
            continue
        seen.add(func)
        spans.append(function_span(func))
        for name in func.__code__.co_names:
            target = func.__globals__.get(name)
            marker = marker_of(target)
            if marker is not None and marker.kind == "function":
                todo.append(target)
    return spans


def breakpoints_in(spans: list[tuple[str, int, int]]) -> list[dict[str, Any]]:
    """The enabled pdb breakpoints on a line of ``spans``, as :func:`breakpoint_dict`\\ s."""
    found: list[dict[str, Any]] = []
    if not bdb.Breakpoint.bplist:
        return found
    for bp in bdb.Breakpoint.bpbynumber:  # loops, no generator: this runs at every dispatch
        if bp is None or not bp.enabled:
            continue
        file, line = _absolute(bp.file), bp.line
        for f, first, last in spans:
            if file == f and first <= line <= last:
                found.append(breakpoint_dict(bp))
                break
    return found


#: os.path.abspath, remembered: breakpoints_in runs at every dispatch, over every
#: breakpoint, and a breakpoint's file name never changes.
_absolute = functools.lru_cache(maxsize=256)(os.path.abspath)


def breakpoint_dict(bp: bdb.Breakpoint) -> dict[str, Any]:
    return {
        "number": bp.number,
        "file": os.path.abspath(bp.file),
        "line": bp.line,
        "condition": bp.cond,
        "temporary": bool(bp.temporary),
        "enabled": bool(bp.enabled),
        "ignore": int(bp.ignore),
    }


def index_names(workunit: Any, rank: int) -> tuple[str, ...]:
    """The workunit's index parameters (after ``self`` for a workload method)."""
    first = 1 if isinstance(workunit, types.MethodType) else 0
    names: tuple[str, ...] = workunit.__code__.co_varnames[first : first + rank]
    return names
