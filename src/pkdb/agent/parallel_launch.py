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
"""

from __future__ import annotations

import inspect
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .clause_thread import clause_thread as _clause_thread
from .clause_thread import in_clause  # noqa: F401 - part of this module's interface
from .live_scope import LiveScope

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

OPERATIONS = ("for", "reduce", "scan")
SPACE_NAMES = ("OpenMP", "Serial", "Debug", "Cuda", "Default")
_SPACE_WORD = re.compile(
    r"^(?:pk\.|pkernels\.)?(?:ExecutionSpace\.)?(?P<name>" + "|".join(SPACE_NAMES) + r")$"
)
_ARGUMENT = re.compile(r"^(?P<mut>mut:)?(?P<name>[A-Za-z_]\w*)(?:=(?P<expr>.*))?$", re.S)
_OPERATOR_CHARS = set("+-*/%<>=!&|^@~,")
_CELL_WIDTH = 36
#: In kernel mode the front end waits for the agent's reply; say we are alive this often.
KEEPALIVE_SECONDS = 2.0


class LaunchSyntaxError(Exception):
    """The command line cannot be read as clauses."""


# -- reading the command ------------------------------------------------------------------


@dataclass
class Argument:
    name: str
    expr: str
    mut: bool


@dataclass
class ClauseText:
    number: int
    text: str
    operation: str | None
    kernel: str
    space: str | None
    policy: str
    arguments: list[Argument]


def _split_top_level(text: str, separator: Callable[[str, int], int]) -> list[str]:
    """Cut ``text`` where ``separator(text, i)`` returns the separator's length (> 0),
    never inside brackets or string literals."""
    parts, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0:
            width = separator(text, i)
            if width:
                parts.append(text[start:i])
                i += width
                start = i
                continue
        i += 1
    parts.append(text[start:])
    return parts


def split_clauses(arg: str) -> list[str]:
    """The clauses of the command (``;``-separated; pdb already took ``;;``)."""
    clauses = [c.strip() for c in _split_top_level(arg, lambda t, i: 1 if t[i] == ";" else 0)]
    return [c for c in clauses if c]


def _whitespace(text: str, i: int) -> int:
    j = i
    while j < len(text) and text[j].isspace():
        j += 1
    return j - i


def tokens(clause: str) -> list[str]:
    """Words of a clause, split at top-level blanks; ``name = expr`` is one word, and so
    is an expression whose blanks sit next to an operator (``N // 2``, ``x * 2``)."""
    if "'" not in clause and '"' not in clause:
        clause = re.sub(r"(?<=[\w\]\)])\s*(?<![=!<>])=(?!=)\s*", "=", clause)
    words = [w for w in _split_top_level(clause, _whitespace) if w]
    merged: list[str] = []
    for word in words:
        if merged and (
            merged[-1][-1] in _OPERATOR_CHARS
            or word[0] in _OPERATOR_CHARS
            or word in ("if", "else", "and", "or", "not", "in", "is")
            or merged[-1].split()[-1] in ("if", "else", "and", "or", "not", "in", "is")
        ):
            merged[-1] = f"{merged[-1]} {word}"
        else:
            merged.append(word)
    return merged


def parse_clause(number: int, text: str) -> ClauseText:
    words = tokens(text)
    head: list[str] = []
    arguments: list[Argument] = []
    for word in words:
        match = _ARGUMENT.match(word)
        is_argument = match is not None and (match["expr"] is not None or match["mut"])
        if not is_argument:
            if arguments:
                raise LaunchSyntaxError(
                    f"clause {number}: {word!r} after the arguments: write arguments as "
                    "NAME=EXPR (parenthesise an expression that has blanks)"
                )
            head.append(word)
            continue
        expr = match["expr"] if match["expr"] is not None else match["name"]
        if not expr.strip():
            raise LaunchSyntaxError(f"clause {number}: {match['name']}= needs an expression")
        arguments.append(Argument(match["name"], expr, bool(match["mut"])))
    operation = None
    if head and head[0] in OPERATIONS:
        operation = head.pop(0)
    if len(head) == 2:
        kernel, space, policy = head[0], None, head[1]
    elif len(head) == 3:
        kernel, space, policy = head
    elif len(head) < 2:
        raise LaunchSyntaxError(
            f"clause {number} ({text!r}): needs a kernel and a policy, e.g. 'yAx pk.OpenMP N y=y'"
        )
    else:
        raise LaunchSyntaxError(
            f"clause {number} ({text!r}): too many words before the arguments "
            f"({' '.join(head)}); expected KERNEL [SPACE] POLICY, then NAME=EXPR ..."
        )
    names = [a.name for a in arguments]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise LaunchSyntaxError(f"clause {number}: {', '.join(repeated)} given twice")
    return ClauseText(number, text, operation, kernel, space, policy, arguments)


def parse_command(arg: str) -> list[ClauseText]:
    clauses = split_clauses(arg)
    if not clauses:
        raise LaunchSyntaxError(
            "usage: parallel_launch CLAUSE ; CLAUSE ...  (see 'help parallel_launch')"
        )
    return [parse_clause(k + 1, text) for k, text in enumerate(clauses)]


# -- preparing and running ----------------------------------------------------------------


@dataclass
class Clause:
    """One clause, evaluated: what its thread runs, and what it reports."""

    text: ClauseText
    workunit: Any = None
    operation: str = "for"
    policy: Any = None
    kwargs: dict[str, Any] = field(default_factory=dict)
    copied: dict[str, Any] = field(default_factory=dict)  # name -> the program's array
    shared: set[str] = field(default_factory=set)
    error: str | None = None
    result: Any = None
    seconds: float | None = None
    compiled: bool = False

    @property
    def number(self) -> int:
        return self.text.number

    @property
    def ok(self) -> bool:
        return self.error is None


def infer_operation(workunit: Any) -> str:
    """``reduce`` for ``(i, acc, ...)`` (by name or a ``pk.Acc`` annotation), ``scan``
    for ``(i, acc, last_pass, ...)``, else ``for``."""
    from pkernels.api.types import AccAnnotation

    params = list(inspect.signature(workunit).parameters)
    if len(params) >= 3 and params[2] == "last_pass":
        return "scan"
    if len(params) >= 2:
        if params[1] == "acc":
            return "reduce"
        try:
            annotation = inspect.get_annotations(workunit, eval_str=True).get(params[1])
        except Exception:  # noqa: BLE001 - an annotation that does not evaluate
            annotation = workunit.__annotations__.get(params[1])
        if isinstance(annotation, AccAnnotation) or "Acc[" in str(annotation):
            return "reduce"
    return "for"


def _is_array(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype") and hasattr(value, "copy")


def _copy(value: Any) -> Any:
    try:
        return value.copy(order="K")  # keeps the subclass (pk.View) and the layout
    except TypeError:
        return value.copy()


def _on_device(value: Any) -> bool:
    return type(value).__module__.startswith("cupy")


def _device_copy(value: Any) -> Any:
    """A Cuda clause's own copy of an array: on the GPU (a CuPy array stays one)."""
    import cupy  # a Cuda clause only runs where CuPy is installed

    return value.copy() if _on_device(value) else cupy.asarray(value)


def _on_space(policy: Any, space: Any) -> Any:
    """``policy`` on another execution space (the clause's ``pk.SPACE`` word)."""
    import copy

    from pkernels.api.policies import MDRangePolicy, RangePolicy

    if isinstance(policy, RangePolicy):
        return RangePolicy(space, policy.begin, policy.end)
    if isinstance(policy, MDRangePolicy):
        return MDRangePolicy(space, list(policy.begins), list(policy.ends), policy.tiling)
    moved = copy.copy(policy)  # a TeamPolicy: keep its team and scratch sizes
    moved.team_scratch, moved.thread_scratch = (
        list(policy.team_scratch),
        list(policy.thread_scratch),
    )
    moved.space = space
    return moved


def prepare(text: ClauseText, scope: LiveScope) -> Clause:
    """Evaluate a clause in the live program and take its copies. An error is kept in
    the clause (it is reported, and the clause does not run)."""
    from pkernels.api.decorators import marker_of
    from pkernels.api.policies import as_policy
    from pkernels.api.spaces import ExecutionSpace

    clause = Clause(text)
    try:
        workunit = _evaluate(scope, text.kernel, "the kernel")
        marker = marker_of(workunit)
        if marker is None or marker.kind != "workunit":
            raise ValueError(f"{text.kernel} is not a @pk.workunit")
        clause.workunit = workunit
        clause.operation = text.operation or infer_operation(workunit)
        policy = as_policy(_evaluate(scope, text.policy, "the policy"))
        if text.space is not None:
            match = _SPACE_WORD.match(text.space)
            if match is not None:
                space = ExecutionSpace[match["name"]]
            else:
                space = _evaluate(scope, text.space, "the space")
                if not isinstance(space, ExecutionSpace):
                    raise ValueError(f"{text.space} is not an execution space (pk.OpenMP ...)")
            policy = _on_space(policy, space)
        clause.policy = policy
        on_gpu = policy.space is ExecutionSpace.Cuda
        for argument in text.arguments:
            value = _evaluate(scope, argument.expr, argument.name)
            if argument.mut or not _is_array(value):
                if argument.mut:
                    if on_gpu and not _on_device(value) and _is_array(value):
                        raise ValueError(
                            f"mut:{argument.name}: a Cuda clause cannot share a host array; "
                            "drop mut: (the clause then gets a device copy) or pass a CuPy array"
                        )
                    clause.shared.add(argument.name)
                clause.kwargs[argument.name] = value
            else:
                clause.copied[argument.name] = value
                clause.kwargs[argument.name] = _device_copy(value) if on_gpu else _copy(value)
    except Exception as exc:  # noqa: BLE001 - reported in the clause's column
        clause.error = _describe(exc)
    return clause


def _evaluate(scope: LiveScope, text: str, what: str) -> Any:
    try:
        return scope.evaluate(text)
    except SyntaxError as exc:
        raise ValueError(f"{what}: cannot read {text!r}: {exc.msg}") from None


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _run_clause(clause: Clause, spare_a_core: bool = False) -> None:
    """Run one clause (in its own thread). ``spare_a_core``: an OpenMP clause runs on one
    thread fewer than the machine has, leaving a core to the thread that drives a Cuda
    clause's GPU at the same time (otherwise one OpenMP thread shares a core with it)."""
    import pkernels as pk
    from pkernels.api.decorators import marker_of

    if spare_a_core:
        gomp = _libgomp()
        if gomp is not None:  # the calling thread's setting: only this clause's regions
            gomp.omp_set_num_threads(max(1, gomp.omp_get_max_threads() - 1))

    dispatch = {"for": pk.parallel_for, "reduce": pk.parallel_reduce, "scan": pk.parallel_scan}
    marker = marker_of(clause.workunit)
    before = len(marker.specializations)
    _clause_thread.active = True
    try:
        start = time.perf_counter()
        try:
            clause.result = dispatch[clause.operation](
                clause.policy, clause.workunit, **clause.kwargs
            )
        finally:
            clause.seconds = time.perf_counter() - start
    except Exception as exc:  # noqa: BLE001 - reported in the clause's column
        clause.error = _describe(exc)
    finally:
        _clause_thread.active = False
    clause.compiled = len(marker.specializations) > before


def _libgomp() -> Any:
    """The OpenMP runtime the kernels use (loaded by them already), or None."""
    import ctypes

    try:
        return ctypes.CDLL("libgomp.so.1")
    except OSError:
        return None


def launch(clauses: list[Clause], keepalive: Callable[[], None] | None = None) -> float:
    """Run every prepared clause that has no error, concurrently; the wall time."""
    from pkernels.api.spaces import ExecutionSpace

    runnable = [c for c in clauses if c.ok]
    gpu = any(c.policy.space is ExecutionSpace.Cuda for c in runnable)
    threads = [
        threading.Thread(
            target=_run_clause,
            args=(c, gpu and c.policy.space is ExecutionSpace.OpenMP),
            name=f"pkdb-parallel-launch-{c.number}",
            daemon=True,
        )
        for c in runnable
    ]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    last_sign = start
    for thread in threads:
        while True:
            thread.join(timeout=0.25 if keepalive is not None else None)
            if not thread.is_alive():
                break
            now = time.perf_counter()
            if keepalive is not None and now - last_sign >= KEEPALIVE_SECONDS:
                keepalive()
                last_sign = now
    return time.perf_counter() - start


def run_command(
    arg: str, scope: LiveScope, keepalive: Callable[[], None] | None = None
) -> tuple[bool, str]:
    """Carry out ``parallel_launch ARG``; (success, the report)."""
    try:
        texts = parse_command(arg)
    except LaunchSyntaxError as exc:
        return False, str(exc)
    clauses = [prepare(text, scope) for text in texts]
    pristine = _pristine_originals(clauses)
    wall = launch(clauses, keepalive)
    return True, format_report(clauses, wall, pristine)


def _pristine_originals(clauses: list[Clause]) -> dict[int, Any]:
    """What each copied array held before the launch, to tell which clauses wrote their
    copy: the program's array itself, unless a ``mut:`` argument may write it meanwhile
    (then a snapshot)."""
    import numpy as np

    shared = [c.kwargs[n] for c in clauses for n in c.shared if _is_array(c.kwargs[n])]
    pristine: dict[int, Any] = {}
    for clause in clauses:
        for original in clause.copied.values():
            if id(original) in pristine:
                continue
            at_risk = any(_may_share(original, s, np) for s in shared)
            pristine[id(original)] = _copy(original) if at_risk else original
    return pristine


def _may_share(a: Any, b: Any, np: Any) -> bool:
    try:
        return bool(np.may_share_memory(a, b))
    except TypeError:
        return a is b


# -- the report -----------------------------------------------------------------------------


def format_report(clauses: list[Clause], wall: float, pristine: dict[int, Any]) -> str:
    """The clauses side by side: one column each, one row per fact."""
    import numpy as np

    header = [""] + [f"[{c.number}] {c.text.kernel}" for c in clauses]
    rows: list[list[str]] = [header]
    rows.append(["operation"] + [_operation_cell(c) for c in clauses])
    rows.append(["status"] + [("ok" if c.ok else "FAILED") for c in clauses])
    rows.append(["time"] + [_time_cell(c) for c in clauses])
    rows.append(["returned"] + [(repr(c.result) if c.ok else "-") for c in clauses])
    numeric = [c for c in clauses if c.ok and isinstance(c.result, int | float)]
    reference = numeric[0] if len(numeric) > 1 else None
    if reference is not None:
        rows.append(
            [f"|diff| vs [{reference.number}]"]
            + [_scalar_difference(c, reference) for c in clauses]
        )
    unchanged: list[str] = []
    for name in _array_names(clauses):
        written = {
            c.number: _was_written(c, name, pristine, np)
            for c in clauses
            if c.ok and name in c.kwargs and _is_array(c.kwargs[name])
        }
        if not any(written.values()):
            unchanged.append(name)
            continue
        rows.extend(_array_rows(clauses, name, written, np))
    lines = _table(rows)
    launched = [c for c in clauses if c.seconds is not None]
    failed = [c for c in clauses if not c.ok]
    total = sum(c.seconds or 0.0 for c in launched)
    lines.append(
        f"{len(launched)} of {len(clauses)} clause{'s' if len(clauses) != 1 else ''} "
        f"launched concurrently: {_seconds(wall)} wall, {_seconds(total)} summed over the "
        f"clauses; {len(failed) or 'none'} failed."
    )
    if unchanged:
        lines.append(f"Arrays no clause wrote: {', '.join(unchanged)}.")
    for clause in clauses:
        if not clause.ok:
            lines.append(f"[{clause.number}] {clause.text.kernel} failed: {clause.error}")
    return "\n".join(lines)


def _operation_cell(clause: Clause) -> str:
    policy = clause.policy
    if policy is None:
        return clause.text.operation or "?"
    return f"{clause.operation} {policy.space.name} {_extent(policy)}"


def _extent(policy: Any) -> str:
    """What a clause's policy covers: ``0..8``, ``[0, 0]..[4, 3]``, ``league 2 x team 4``."""
    if hasattr(policy, "league_size"):
        team = "AUTO" if policy.team_size is None else policy.team_size
        return f"league {policy.league_size} x team {team}"
    if hasattr(policy, "begins"):
        return f"{list(policy.begins)}..{list(policy.ends)}"
    return f"{policy.begin}..{policy.end}"


def _time_cell(clause: Clause) -> str:
    if clause.seconds is None:
        return "-"
    return _seconds(clause.seconds) + (" (+translate/compile)" if clause.compiled else "")


def _seconds(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} us"


def _scalar_difference(clause: Clause, reference: Clause) -> str:
    if not clause.ok or not isinstance(clause.result, int | float):
        return "-"
    if clause is reference:
        return "(reference)"
    a, b = clause.result, reference.result
    if isinstance(a, int | float) and isinstance(b, int | float):
        return f"{abs(a - b):.6g}"
    return "-"


def _array_names(clauses: list[Clause]) -> list[str]:
    names: list[str] = []
    for clause in clauses:
        for name, value in clause.kwargs.items():
            if _is_array(value) and name not in names:
                names.append(name)
    return names


def _was_written(clause: Clause, name: str, pristine: dict[int, Any], np: Any) -> bool:
    if name in clause.shared:
        return True  # the program's own array: shown, whatever happened to it
    original = clause.copied.get(name)
    if original is None:
        return False
    return not _equal(clause.kwargs[name], pristine[id(original)], np)


def _equal(a: Any, b: Any, np: Any) -> bool:
    if a.shape != b.shape:
        return False
    nan_aware = a.dtype.kind in "fc" and b.dtype.kind in "fc"
    return bool(np.array_equal(_host(a, np), _host(b, np), equal_nan=nan_aware))


def _host(value: Any, np: Any) -> Any:
    """A NumPy array for summaries (CuPy arrays come to the host)."""
    getter = getattr(value, "get", None)
    if getter is not None and not isinstance(value, np.ndarray):
        return getter()
    return np.asarray(value)


def _array_rows(
    clauses: list[Clause], name: str, written: dict[int, bool], np: Any
) -> list[list[str]]:
    columns = []
    for clause in clauses:
        if clause.number not in written:
            columns.append(None)
            continue
        value = _host(clause.kwargs[name], np)
        if name in clause.shared:
            state = "shared (mut:)"
        else:
            state = "copy, written" if written[clause.number] else "copy, unchanged"
        columns.append((clause, value, state))
    reference = next((col for col in columns if col is not None), None)
    rows = [[name] + [col[2] if col else "-" for col in columns]]
    rows.append(
        ["  shape dtype"] + [f"{col[1].shape} {col[1].dtype}" if col else "-" for col in columns]
    )
    rows.append(["  min / max"] + [_min_max(col[1]) if col else "-" for col in columns])
    rows.append(["  sum"] + [_sum(col[1]) if col else "-" for col in columns])
    rows.append(["  first"] + [_first(col[1]) if col else "-" for col in columns])
    if len([c for c in columns if c is not None]) > 1 and reference is not None:
        label = f"  max|diff| vs [{reference[0].number}]"
        rows.append([label] + [_difference(col, reference, np) for col in columns])
    return rows


def _number(value: Any) -> str:
    item = getattr(value, "item", None)
    if item is not None:
        value = item()
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        text = f"{value:.6g}"
        return text if any(c in text for c in ".eni") else text + ".0"
    return str(value)


def _min_max(value: Any) -> str:
    if value.size == 0:
        return "(empty)"
    return f"{_number(value.min())} / {_number(value.max())}"


def _sum(value: Any) -> str:
    if value.size == 0:
        return "0"
    return _number(value.sum())


def _first(value: Any, count: int = 4) -> str:
    flat = value.reshape(-1)
    items = ", ".join(_number(v) for v in flat[:count])
    return f"[{items}{', ...' if flat.size > count else ''}]"


def _difference(column: Any, reference: Any, np: Any) -> str:
    if column is None:
        return "-"
    if column is reference:
        return "(reference)"
    a, b = column[1], reference[1]
    if a.shape != b.shape:
        return "shapes differ"
    if a.size == 0:
        return "0"
    if a.dtype.kind == "b" or b.dtype.kind == "b":
        return f"{int(np.count_nonzero(a != b))} differ"
    diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    nans = int(np.count_nonzero(np.isnan(diff)))
    finite = diff[~np.isnan(diff)]
    largest = _number(finite.max()) if finite.size else "nan"
    return largest + (f" ({nans} nan)" if nans else "")


def _table(rows: list[list[str]]) -> list[str]:
    cells = [[_fit(cell) if k else cell for k, cell in enumerate(row)] for row in rows]
    widths = [max(len(row[k]) for row in cells) for k in range(len(cells[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in cells
    ]


def _fit(cell: str) -> str:
    cell = cell.replace("\n", " ")
    return cell if len(cell) <= _CELL_WIDTH else cell[: _CELL_WIDTH - 3] + "..."
