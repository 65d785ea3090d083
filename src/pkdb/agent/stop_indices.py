"""Which indices of a launch can stop, decided before it runs from the breakpoints'
conditions (its fast path), and why gdb tests a condition at each thread otherwise."""

from __future__ import annotations

import os
from typing import Any

from .kernel_lines import index_names, kernel_spans


def index_only_stops(dispatch: Any, breakpoints: list[dict[str, Any]]) -> Any:
    """For a range launch (for or reduce, on the CPU) whose breakpoints all sit in the
    workunit itself under conditions on its index and scalar arguments only: the indices
    where one can stop (see :mod:`.index_conditions`). Otherwise None."""
    from pkernels.api.policies import RangePolicy

    policy = dispatch.policy
    if type(policy) is not RangePolicy or dispatch.operation not in ("for", "reduce"):
        return None
    workunit = dispatch.workunit
    file, first, last = kernel_spans(workunit)[0]  # the workunit's own, memoised
    if any(os.path.abspath(bp["file"]) != file or not first <= bp["line"] <= last
           for bp in breakpoints):  # fmt: skip
        return None  # a @pk.function's line: its names are not the kernel's
    from .index_conditions import debug_indices

    [index] = index_names(workunit, 1)
    conditions = [bp.get("condition") for bp in breakpoints]
    return debug_indices(conditions, index, dispatch.kwargs, policy.begin, policy.end)


def why_gdb_tests(dispatch: Any, breakpoints: list[dict[str, Any]], settings: Any) -> str:
    """Why pkdb could not evaluate the breakpoints' conditions for every index before
    the launch (its fast path; see :func:`index_only_stops`): gdb tests them instead."""
    from pkernels.api.policies import RangePolicy

    if not settings.get("fast_debug_builds"):
        return "'set fast_debug_builds off'"
    if type(dispatch.policy) is not RangePolicy or dispatch.operation not in ("for", "reduce"):
        return (
            "pkdb evaluates conditions before a launch only for a range parallel_for or "
            "parallel_reduce"
        )
    file, first, last = kernel_spans(dispatch.workunit)[0]
    if any(os.path.abspath(bp["file"]) != file or not first <= bp["line"] <= last
           for bp in breakpoints):  # fmt: skip
        return "a breakpoint is in a @pk.function, whose variables are not the workunit's"
    if not all(bp.get("condition") for bp in breakpoints):
        return "another breakpoint of this kernel has no condition: every index may stop"
    return "the condition reads more than the index and the scalar arguments"


def slow_conditions(dispatch: Any, kernel: Any) -> dict[str, str]:
    """The launch's breakpoints whose condition gdb tests each time a thread reaches the
    line, by number (a string: JSON's keys), with why pkdb could not test it before."""
    why = dispatch.extra.get("pkdb_slow_why")
    if why is None and dispatch.debug_indices is not None and dispatch.fast_build is None:
        # The conditions were evaluated, but the launch could not be proven unable to
        # fail a check: its debug build runs every index, and gdb tests them there.
        entry = kernel.entry
        if entry.converts_floats:
            why = (
                "the kernel converts a float to an integer, which pkernels cannot prove "
                "safe before the launch (its indices run in the debug build)"
            )
        elif entry.proof is None:
            why = (
                "pkernels cannot prove this kernel's indices in range before the launch "
                "(an index read from a view, say), so all of them run in the debug build"
            )
        else:
            why = (
                "pkernels could not prove this launch's indices in range before it, so "
                "all of them run in the debug build"
            )
    if why is None:
        return {}
    conditional = dispatch.extra.get("pkdb_breakpoints", [])
    return {str(bp["number"]): why for bp in conditional if bp.get("condition")}
