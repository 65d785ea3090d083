"""The launch loops of a C++ kernel module (:mod:`.emit_launch`): the debug build's, which
call the body once per index, and the release build's (:class:`ReleaseLaunch`): the body
inlined, restrict-qualified when a launch-time check finds that no view the kernel writes
overlaps another (:func:`_no_alias_condition`), one contiguous block of a parallel_for's
indices per thread (``schedule(static)``), eligible reductions run several indices at a
time (:func:`~.interleave.interleaved_lanes`); none of it changes a result's bits.
"""

from __future__ import annotations

from collections.abc import Callable

from ..api.types import DataType
from . import ir
from .emit_exprs import KERNEL_NAMESPACE, c_string, cpp_name
from .interleave import LANES, interleaved_name
from .ir import ViewType


class ReleaseLaunch:
    """The launch loops of a release build: views passed by value, restrict-qualified
    (``<true>``) when a check at launch finds that no view the kernel writes overlaps
    another view, the plain body (``<false>``) otherwise; reduce through the interleaved
    body when :func:`~.interleave.interleaved_lanes` allows it; parallel_for in one block per
    thread."""

    def __init__(
        self,
        kernel: ir.Function,
        marshalled: list[ir.Param],
        kname: str,
        idx: str,
        acc: DataType | None,
        lane_vars: frozenset[str] | None,
        rank: int = 1,
    ) -> None:
        self.kernel, self.marshalled, self.kname, self.idx = kernel, marshalled, kname, idx
        self.acc, self.lane_vars, self.rank = acc, lane_vars, rank
        views = [p for p in marshalled if isinstance(p.type, ViewType)]
        self.no_alias = _no_alias_condition(kernel, views)

    def body(self, operation: str, parallel: bool | str) -> list[str]:
        """``parallel``: True, False or the name of a bool (``omp ... if(name)``)."""
        return [
            "    pk_fault_clear();",
            *self.per_variant(lambda na, args: self._loops(operation, parallel, na, args)),
        ]

    def _loops(self, operation: str, parallel: bool | str, na: str, args: str) -> list[str]:
        kname = f"{self.kname}<{na}>"
        if self.rank > 1:
            return md_launch_body(operation, parallel, self.rank, kname, self.idx, args, self.acc)
        if operation == "reduce" and self.lane_vars is not None:
            lanes = f"{KERNEL_NAMESPACE}::{interleaved_name(self.kernel)}<{na}>"
            return _interleaved_reduce_body(parallel, kname, lanes, self.idx, args, self.acc)
        # parallel_for: one contiguous block of indices per thread (schedule(static), as
        # Kokkos' default): neighbouring indices share data (a stencil's planes, a row's
        # cache lines) that chunks dealt out in turn (schedule(dynamic)) split between
        # threads. Measured with bench_kernels.py on 2 cores: stencil7 +2-3%, LJ +3%.
        if isinstance(parallel, str):
            body = launch_body(operation, True, kname, self.idx, args, self.acc)
            return [_omp_if(line, parallel) for line in body]
        return launch_body(operation, parallel, kname, self.idx, args, self.acc)

    def wide_loops(self, c_names: list[str]) -> list[str]:
        """The OpenMP for loops of ``pk_run_wide``: the restrict-qualified variant only;
        views that overlap run the plain ``pk_run`` (each variant compiled anew is
        another copy of the body for g++ to optimise, and overlapping views are rare)."""
        lines = ["    pk_fault_clear();"]
        loops = self._loops("for", True, "true", self.call_args("true"))
        if self.no_alias == "true":
            return lines + loops
        return [
            *lines,
            f"    if (!({self.no_alias})) {{",
            f"        pk_run(true, {', '.join(c_names)});",
            "        return;",
            "    }",
            *loops,
        ]

    def call_args(self, na: str) -> str:
        """The arguments after the index of a call of the body's ``<na>`` variant."""
        return "".join(
            f", pk_rt::view_arg<{na}>({cpp_name(p.name)})"
            if isinstance(p.type, ViewType)
            else f", {cpp_name(p.name)}"
            for p in self.marshalled
        )

    def per_variant(self, body_of: Callable[[str, str], list[str]], indent: str = "") -> list[str]:
        """``body_of(na, call_args(na))`` for the alias variant known in advance, or for
        both, behind the launch-time overlap check."""
        if self.no_alias in ("true", "false"):
            na = self.no_alias
            return [indent + line for line in body_of(na, self.call_args(na))]
        lines = []
        for na in ("true", "false"):
            lines.append(
                indent + (f"    if ({self.no_alias}) {{" if na == "true" else "    } else {")
            )
            lines += [indent + "    " + line for line in body_of(na, self.call_args(na))]
        lines.append(indent + "    }")
        return lines


def _omp_if(line: str, condition: str) -> str:
    """``line`` with an ``if(condition)`` clause when it is an OpenMP parallel directive."""
    if line.strip().startswith("#pragma omp parallel"):
        return f"{line} if({condition})"
    return line


def _stores_in_loops(fn: ir.Function) -> bool:
    """Whether the body stores into a view inside one of its loops. (The launcher's loop
    over the indices gains nothing: restrict holds within one call of the body, one
    index, so g++ still checks for overlap across indices there.)"""
    loops = [s for s in ir.statements(fn.body) if isinstance(s, ir.ForRange | ir.While)]
    return any(
        isinstance(s, ir.Assign | ir.AugAssign) and isinstance(s.target, ir.ViewAccess)
        for loop in loops
        for s in ir.statements(loop.body)
    )


def has_atomics(fn: ir.Function) -> bool:
    """Whether the function updates a view element atomically (its indices share it)."""
    return any(
        isinstance(e, ir.AtomicOp)
        for s in ir.statements(fn.body)
        for top in ir.read_expressions(s)
        for e in ir.subexpressions(top)
    )


def _no_alias_condition(kernel: ir.Function, views: list[ir.Param]) -> str:
    """A C++ condition under which no view the kernel writes overlaps another view: then
    its data pointer may be ``__restrict__``. "true" / "false" when known in advance."""
    if has_atomics(kernel):
        return "false"  # atomics are how indices share elements: keep every access plain
    if not _stores_in_loops(kernel):
        # The check pays where stores sit in a loop of the body that g++ can vectorise;
        # elsewhere (a force loop writing its result after its loop) it gains nothing,
        # and each variant is another copy of the body to compile.
        return "false"
    written = [p for p in views if p.name in kernel.written_views]
    checks = []
    for k, w in enumerate(written):
        for v in views:
            if v is w or (v in written and written.index(v) < k):
                continue
            checks.append(
                f"!pk_rt::overlap(pk_rt::span({cpp_name(w.name)}), pk_rt::span({cpp_name(v.name)}))"
            )
    return " && ".join(checks) if checks else "true"


def _interleaved_reduce_body(
    parallel: bool | str, kname: str, lanes: str, idx: str, args: str, acc: DataType | None
) -> list[str]:
    """A reduce launcher that runs each thread's indices ``LANES`` at a time. Each thread
    walks the chunk ``schedule(static)`` would give it, adding to its partial sum in index
    order, so the total is the one the plain launcher computes."""
    assert acc is not None
    T = acc.ctype
    lines = [f"    {T} pk_total = PK_REDUCE_INIT;"]
    if parallel is not False:
        clause = f" if({parallel})" if isinstance(parallel, str) else ""
        lines += [f"    #pragma omp parallel reduction(PK_REDUCE:pk_total){clause}", "    {"]
    lines += [
        "        int64_t pk_lo = pk_begin, pk_hi = pk_end;",
        "        pk_rt::static_chunk(pk_begin, pk_end, &pk_lo, &pk_hi);" if parallel else "",
        "        int64_t pk_i = pk_lo;",
        f"        for (; pk_hi - pk_i >= {LANES}; pk_i += {LANES}) {lanes}(pk_i, pk_total{args});",
        f"        for (; pk_i < pk_hi; ++pk_i) {kname}({idx}, pk_total{args});",
    ]
    if parallel is not False:
        lines.append("    }")
    lines.append(f"    *({T}*)pk_result = pk_total;")
    return [line for line in lines if line]


def md_launch_body(
    operation: str,
    parallel: bool | str,
    rank: int,
    kname: str,
    idx: str,
    args: str,
    acc: DataType | None,
) -> list[str]:
    """The launch loops of an MDRangePolicy box (for and reduce): ``rank`` nested loops,
    ``collapse``d into one OpenMP loop. ``parallel``: True, False or the name of a bool
    (``omp ... if(name)``). Debug builds call the body on a line of its own, below the
    innermost loop header, as the one-dimensional launcher does."""
    lines = [
        f"    const int64_t pk_b{k} = pk_begins[{k}], "
        f"pk_e{k} = pk_ends[{k}] > pk_b{k} ? pk_ends[{k}] : pk_b{k};"
        for k in range(rank)
    ]
    clause = f" if({parallel})" if isinstance(parallel, str) else ""
    if operation == "for":
        call = f"{kname}({idx}{args});"
        # One block per thread, as a range's parallel_for (see ReleaseLaunch._loops).
        pragma = f"    #pragma omp parallel for collapse({rank}) schedule(static){clause}"
    else:
        assert operation == "reduce" and acc is not None
        call = f"{kname}({idx}, pk_total{args});"
        lines.append(f"    {acc.ctype} pk_total = PK_REDUCE_INIT;")
        pragma = (
            f"    #pragma omp parallel for collapse({rank}) schedule(static) "
            f"reduction(PK_REDUCE:pk_total){clause}"
        )
    if parallel is not False:
        lines.append(pragma)
    for k in range(rank):
        lines.append(
            "    " * (k + 1) + f"for (int64_t pk_i{k} = pk_b{k}; pk_i{k} < pk_e{k}; ++pk_i{k})"
        )
    lines.append("    " * (rank + 1) + call)
    if operation == "reduce":
        lines.append(f"    *({acc.ctype}*)pk_result = pk_total;")
    return lines


def team_launch_body(
    parallel: bool, kname: str, args: str, acc: DataType | None, filename: str
) -> list[str]:
    """The launch of a TeamPolicy workunit: ``team_size`` threads per team, as many teams
    at once as the threads allow, each running its share of the league (TEAM_PRELUDE).
    Debug builds call the body on a line of its own, below the loop header."""
    file = c_string(filename)
    call = f"{kname}(pk_tm{', pk_total' if acc is not None else ''}{args});"
    lines = [f"    pk_rt::TeamLaunch pk_tl(pk_team, {'true' if parallel else 'false'}, {file});"]
    if acc is not None:
        lines.append(f"    {acc.ctype} pk_total = PK_REDUCE_INIT;")
    if parallel:
        reduction = " reduction(PK_REDUCE:pk_total)" if acc is not None else ""
        lines.append(f"    #pragma omp parallel num_threads(pk_tl.threads()){reduction}")
        member = "omp_get_thread_num(), omp_get_num_threads()"
    else:
        member = "0, 1"
    lines += [
        "    {",
        "        pk_rt::TeamMember pk_tm;",
        "        int64_t pk_lo, pk_hi;",
        f"        if (pk_tl.member({member}, &pk_tm, &pk_lo, &pk_hi))",
        "            for (int64_t pk_l = pk_lo; pk_l < pk_hi; ++pk_l) {",
        "                pk_rt::TeamLaunch::start(pk_tm, pk_l);",
        f"                {call}",
        f"                pk_rt::team_barrier(pk_tm, {file}, pk_rt::TEAM_END_OF_WORKUNIT);",
        "            }",
        "    }",
    ]
    if acc is not None:
        lines.append(f"    *({acc.ctype}*)pk_result = pk_total;")
    return lines


def launch_body(
    operation: str, parallel: bool, kname: str, idx: str, args: str, acc: DataType | None
) -> list[str]:
    """The launch loop of a range (for, reduce, scan): the body ``kname`` called with each
    index ``idx`` and ``args``; over OpenMP's threads where ``parallel``."""
    omp = "    #pragma omp parallel for schedule(static)" if parallel else ""
    # The loop header and the call are on separate lines: a debugger stepping out of one
    # iteration stops on the header, and `step` from there enters the next iteration.
    loop = "    for (int64_t pk_i = pk_begin; pk_i < pk_end; ++pk_i)"
    if operation == "for":
        return [omp, loop, f"        {kname}({idx}{args});"]
    assert acc is not None
    T = acc.ctype
    if operation == "reduce":
        red = (
            "    #pragma omp parallel for schedule(static) reduction(PK_REDUCE:pk_total)"
            if parallel
            else ""
        )
        return [
            f"    {T} pk_total = PK_REDUCE_INIT;",
            red,
            loop,
            f"        {kname}({idx}, pk_total{args});",
            f"    *({T}*)pk_result = pk_total;",
        ]
    if not parallel:
        return [
            f"    {T} pk_acc = 0;",
            loop,
            f"        {kname}({idx}, pk_acc, true{args});",
            f"    *({T}*)pk_result = pk_acc;",
        ]
    # Two-pass parallel scan: per-thread chunk totals, their exclusive prefix, final pass.
    return [
        "    const int pk_max_threads = omp_get_max_threads();",
        f"    {T}* pk_partial = new {T}[pk_max_threads + 1]();",
        "    int pk_nthreads = 1;",
        "    #pragma omp parallel",
        "    {",
        "        const int pk_tid = omp_get_thread_num();",
        "        const int pk_n = omp_get_num_threads();",
        "        const int64_t pk_len = pk_end > pk_begin ? pk_end - pk_begin : 0;",
        "        const int64_t pk_chunk = (pk_len + pk_n - 1) / pk_n;",
        "        const int64_t pk_lo = pk_begin + pk_tid * pk_chunk;",
        "        const int64_t pk_hi = pk_lo + pk_chunk < pk_end ? pk_lo + pk_chunk : pk_end;",
        f"        {T} pk_acc = 0;",
        "        for (int64_t pk_i = pk_lo; pk_i < pk_hi; ++pk_i)",
        f"            {kname}({idx}, pk_acc, false{args});",
        "        pk_partial[pk_tid + 1] = pk_acc;",
        "        #pragma omp barrier",
        "        #pragma omp single",
        "        {",
        "            pk_nthreads = pk_n;",
        "            for (int k = 1; k <= pk_n; ++k) pk_partial[k] += pk_partial[k - 1];",
        "        }",
        "        pk_acc = pk_partial[pk_tid];",
        "        for (int64_t pk_i = pk_lo; pk_i < pk_hi; ++pk_i)",
        f"            {kname}({idx}, pk_acc, true{args});",
        "    }",
        f"    *({T}*)pk_result = pk_partial[pk_nthreads];",
        "    delete[] pk_partial;",
    ]
