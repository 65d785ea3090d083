"""``parallel_launch C1 ; C2 ; ...``: run several kernels at once on the live data and
show their results side by side (the PKDB paper's concurrent kernel launch, §III-D).

Each clause is ``[for|reduce|scan] KERNEL [SPACE] POLICY ARG ...`` with each ARG
``NAME=EXPR`` (isolated: the kernel gets a copy of an array), ``mut:NAME=EXPR`` (shared:
the kernel gets the program's own array) or ``mut:NAME`` (``mut:NAME=NAME``). Every
name and expression is evaluated in the live program first, copies are taken, then
every clause runs in a thread of its own: native kernels release the GIL, so they run
at the same time. A clause that fails (a bad argument, a translation error...) is
reported in its column; the others finish.

Clauses run checked release builds (``BuildMode.CHECKED``: an index out of range is the
clause's ``KernelIndexError``, reported in its column, not a crash of the program) and
are not seen by the rest of the debugger's dispatch logic: no hotswap rule applies to
them (they name their kernel), and they do not stop at kernel breakpoints.

The command is read by :mod:`.syntax`, its clauses prepared and run by :mod:`.running`,
and the results shown by :mod:`.report`.
"""

from __future__ import annotations

from collections.abc import Callable

from ..clause_thread import in_clause
from ..live_scope import LiveScope
from .report import format_report
from .running import (
    Clause,
    infer_operation,
    launch,
    prepare,
    pristine_originals,
)
from .syntax import (
    ClauseText,
    LaunchSyntaxError,
    parse_clause,
    parse_command,
    split_clauses,
    tokens,
)

__all__ = [
    "HELP",
    "Clause",
    "ClauseText",
    "LaunchSyntaxError",
    "format_report",
    "in_clause",
    "infer_operation",
    "launch",
    "parse_clause",
    "parse_command",
    "prepare",
    "run_command",
    "split_clauses",
    "tokens",
]

HELP = """parallel_launch CLAUSE ; CLAUSE ; ...
        Run the clauses' kernels concurrently on the live data and show
        their results side by side. A clause is
            [for|reduce|scan] KERNEL [pk.SPACE] POLICY ARG ...
        KERNEL a workunit (the operation is inferred when omitted: a
        second parameter named acc or annotated pk.Acc means reduce,
        a third named last_pass means scan); SPACE pk.OpenMP, pk.Serial,
        pk.Debug or pk.Cuda (overrides the policy's space); POLICY an
        expression such as N, pk.RangePolicy(0, N), an MDRangePolicy or a
        TeamPolicy; each ARG NAME=EXPR. Arrays are copied for each clause
        (on the GPU for a Cuda clause), unless written mut:NAME=EXPR (or
        mut:NAME): then the kernel writes the program's own array (a Cuda
        clause shares only CuPy arrays). An OpenMP clause next to a Cuda
        clause uses one thread fewer, leaving a core to drive the GPU.
        OpenMP and Serial clauses run checked release builds: an index out
        of range fails that clause (KernelIndexError), not the program.
        Shown per clause: status, time, return value, and for each array
        the clause wrote: shape, dtype, min/max, sum, first elements and
        the largest difference from the first clause's version.
        Example: parallel_launch force pk.OpenMP n x=x f=f ; force_fixed pk.Serial n x=x f=f"""


def run_command(
    arg: str, scope: LiveScope, keepalive: Callable[[], None] | None = None
) -> tuple[bool, str]:
    """Carry out ``parallel_launch ARG``; (success, the report)."""
    try:
        texts = parse_command(arg)
    except LaunchSyntaxError as exc:
        return False, str(exc)
    clauses = [prepare(text, scope) for text in texts]
    pristine = pristine_originals(clauses)
    wall = launch(clauses, keepalive)
    return True, format_report(clauses, wall, pristine)
