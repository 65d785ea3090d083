"""Kernel call-site substitution (``hotswap``), the PKDB paper's Algorithm 2.

A rule says "dispatches of workunit OLD run NEW instead", everywhere or only at one
call-site line. The rules live in the agent (one table per debugger); the kernel
observer applies them in ``dispatch_started``, before it decides the build, so a
breakpoint in NEW's lines makes the swapped dispatch a debug build. Nothing else
changes: the program keeps calling OLD, the source file is untouched, and only NEW
is compiled (once per argument signature, like any kernel).

At each dispatch, a rule for (OLD, this call site) beats a rule for OLD everywhere.
NEW must take OLD's parameters, by name and in order (dispatch arguments are matched
by name, and the leading index/acc/last_pass parameters by position); a rule that
breaks this is refused when it is typed, and OLD keeps running.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import os
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from .live_scope import LiveScope

HELP = """hotswap [[FILE:]LINE] OLD NEW
        From now on, every dispatch of the workunit OLD runs the
        workunit NEW instead; with a LINE, only the dispatch at that
        call-site line (of the program's main file, or of FILE). A
        per-line rule beats an everywhere rule. OLD and NEW are names
        of the live program (mod.kernel too), evaluated in the current
        frame (at a kernel stop: at the kernel's call site). NEW must
        take OLD's parameters, by name and in order. Only NEW is
        compiled; the source file is not touched; the program goes on.
hotswap
        List the rules (with how many dispatches each one swapped).
hotswap clear [N ...]
        Delete the rules numbered N (all rules without a number)."""

_DOTTED_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_LOCATION = re.compile(r"^(?:(?P<file>.+):)?(?P<line>\d+)$")


class HotswapError(Exception):
    """A hotswap command that cannot be carried out (the message says why)."""


@dataclass
class HotswapRule:
    number: int
    old: Any
    new: Any
    old_name: str
    new_name: str
    file: str | None = None  # None: every call site
    line: int | None = None
    hits: int = 0
    #: argument signature -> why NEW cannot be translated for it (None: it can)
    checked: dict[Any, str | None] = field(default_factory=dict)

    @property
    def where(self) -> str:
        if self.file is None:
            return "every call site"
        return f"{os.path.basename(self.file)}:{self.line}"

    def describe(self) -> str:
        return f"{self.old_name} -> {self.new_name} at {self.where}"


def parameter_names(func: Any) -> list[str]:
    """The parameter names of a workunit, in order."""
    return list(inspect.signature(func).parameters)


def signature_difference(old: Any, new: Any) -> str | None:
    """How NEW's parameters differ from OLD's (names and order), or None if they match."""
    old_params = parameter_names(old)
    new_params = parameter_names(new)
    if old_params == new_params:
        return None
    missing = [p for p in old_params if p not in new_params]
    extra = [p for p in new_params if p not in old_params]
    parts = []
    if missing:
        parts.append(f"it lacks {_names(missing)}")
    if extra:
        parts.append(f"it has {_names(extra)} in addition")
    if not parts:
        moved = next(
            k for k, (a, b) in enumerate(zip(old_params, new_params, strict=False)) if a != b
        )
        parts.append(
            f"same names in another order: parameter {moved + 1} is {new_params[moved]!r}, "
            f"not {old_params[moved]!r}"
        )
    return "; ".join(parts)


def _names(names: list[str]) -> str:
    quoted = ", ".join(repr(n) for n in names)
    return f"parameter{'s' if len(names) > 1 else ''} {quoted}"


def _signature_text(name: str, func: Any) -> str:
    return f"{name}({', '.join(parameter_names(func))})"


def call_site_lines(frame: Any) -> range:
    """The lines of the call being made in ``frame`` (a call may span several lines)."""
    line = frame.f_lineno
    try:
        positions = list(frame.f_code.co_positions())
        start, end, _, _ = positions[frame.f_lasti // 2]
    except (AttributeError, IndexError, ValueError):
        return range(line, line + 1)
    if start is None:
        return range(line, line + 1)
    return range(start, (end or start) + 1)


def _same_kernel(a: Any, b: Any) -> bool:
    """The same workunit: the same function object, or a re-created closure of it."""
    return a is b or getattr(a, "__code__", None) is getattr(b, "__code__", b)


class HotswapTable:
    """The substitution rules of one debugging session (thread-safe: the reader thread
    adds rules while the program's main thread dispatches)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[HotswapRule] = []
        self._next = 1

    @property
    def rules(self) -> list[HotswapRule]:
        with self._lock:
            return list(self._rules)

    def add(
        self,
        old: Any,
        new: Any,
        old_name: str,
        new_name: str,
        file: str | None = None,
        line: int | None = None,
    ) -> HotswapRule:
        """Record OLD -> NEW (at ``file:line`` only, when given); refuse a NEW whose
        parameters differ. A rule for the same OLD and place replaces the old rule."""
        from pkernels.api.decorators import marker_of

        for name, func in ((old_name, old), (new_name, new)):
            marker = marker_of(func)
            if marker is None or marker.kind != "workunit":
                raise HotswapError(f"{name} is not a @pk.workunit (it is {_kind(func)})")
        if _same_kernel(old, new):
            raise HotswapError(f"{old_name} and {new_name} are the same workunit")
        difference = signature_difference(old, new)
        if difference is not None:
            raise HotswapError(
                f"hotswap refused: {_signature_text(new_name, new)} does not take the "
                f"parameters of {_signature_text(old_name, old)}: {difference}. "
                f"{old_name} keeps running."
            )
        with self._lock:
            for k, rule in enumerate(self._rules):
                if _same_kernel(rule.old, old) and (rule.file, rule.line) == (file, line):
                    replaced = HotswapRule(rule.number, old, new, old_name, new_name, file, line)
                    self._rules[k] = replaced
                    return replaced
            rule = HotswapRule(self._next, old, new, old_name, new_name, file, line)
            self._next += 1
            self._rules.append(rule)
            return rule

    def remove(self, numbers: list[int] | None = None) -> list[HotswapRule]:
        """Delete the rules with these numbers (all rules for None). Unknown numbers
        raise :class:`HotswapError` and delete nothing."""
        with self._lock:
            if numbers is None:
                removed, self._rules = self._rules, []
                return removed
            known = {rule.number for rule in self._rules}
            unknown = [n for n in numbers if n not in known]
            if unknown:
                raise HotswapError(f"no hotswap rule {', '.join(map(str, unknown))}")
            removed = [r for r in self._rules if r.number in numbers]
            self._rules = [r for r in self._rules if r.number not in numbers]
            return removed

    def lookup(self, workunit: Any, frame: Any) -> HotswapRule | None:
        """The rule for a dispatch of ``workunit`` made in ``frame``: the rule for this
        call site if there is one, else the everywhere rule, else None."""
        with self._lock:
            rules = [r for r in self._rules if _same_kernel(r.old, workunit)]
        if not rules:
            return None
        if frame is not None and any(r.file is not None for r in rules):
            filename = os.path.abspath(frame.f_code.co_filename)
            lines = call_site_lines(frame)
            for rule in rules:
                if rule.file == filename and rule.line in lines:
                    return rule
        return next((r for r in rules if r.file is None), None)

    def apply(self, dispatch: Any, announce: Any = None) -> HotswapRule | None:
        """Swap ``dispatch.workunit`` if a rule says so; ``announce(text)`` is told the
        first time each rule swaps a dispatch. A NEW that cannot be translated for these
        arguments is not swapped in (OLD runs, and ``announce`` says why, once): a
        kernel the debugger put there must not end the program."""
        rule = self.lookup(dispatch.workunit, dispatch.frame)
        if rule is None:
            return None
        frame = dispatch.frame
        site = (
            f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}: "
            if frame is not None
            else ""
        )
        problem, first = _translation_problem(rule, dispatch)
        if problem is not None:
            if first and announce is not None:
                announce(
                    f"[hotswap {rule.number}] {site}{rule.new_name} cannot run here, "
                    f"{rule.old_name} runs: {problem}"
                )
            return None
        dispatch.workunit = rule.new
        rule.hits += 1
        if rule.hits == 1 and announce is not None:
            announce(
                f"[hotswap {rule.number}] {site}{rule.new_name} runs instead of {rule.old_name}"
            )
        return rule

    def listing(self) -> str:
        rules = self.rules
        if not rules:
            return "No hotswap rules."
        rows = [("Num", "Where", "Old", "New", "Swapped")]
        rows += [(str(r.number), r.where, r.old_name, r.new_name, str(r.hits)) for r in rules]
        widths = [max(len(row[k]) for row in rows) for k in range(5)]
        lines = [
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for row in rows
        ]
        return "\n".join(lines)


def _translation_problem(rule: HotswapRule, dispatch: Any) -> tuple[str | None, bool]:
    """Why NEW cannot be translated for this dispatch's arguments (None if it can), and
    whether this is the first time that was found out. Cached per argument signature;
    the check is a translation (a few ms, once), never a compile."""
    from pkernels.api.reducers import Sum
    from pkernels.api.spaces import ExecutionSpace
    from pkernels.errors import TranslationError
    from pkernels.runtime.marshal import argument_type, signature_key
    from pkernels.translate.kernel import ROLES, TEAM, translate_workunit

    if dispatch.space is ExecutionSpace.Debug or dispatch.operation not in ROLES:
        return None, False  # plain Python: nothing to translate
    # As the dispatch translates OLD: its policy's rank (a TeamPolicy's is TEAM, 0) and
    # its reducer; the keyword parameters follow the index ones and the accumulator.
    policy = dispatch.policy
    rank = TEAM if hasattr(policy, "league_size") else getattr(policy, "rank", 1)
    reducer = dispatch.reducer if dispatch.reducer is not None else Sum
    code = rule.new.__code__
    leading = len(ROLES[dispatch.operation]) + max(rank, 1) - 1
    names = code.co_varnames[leading : code.co_argcount]
    try:
        key = (
            dispatch.operation,
            rank,
            getattr(reducer, "name", ""),
            tuple(signature_key(dispatch.kwargs[n]) for n in names),
        )
    except Exception:  # noqa: BLE001 - bad arguments: the dispatch itself reports them
        return None, False
    if key in rule.checked:
        return rule.checked[key], False
    try:
        arg_types = {n: argument_type(n, dispatch.kwargs[n]) for n in names}
        translate_workunit(rule.new, dispatch.operation, arg_types, rank, reducer)
        problem = None
    except TranslationError as exc:
        problem = f"{type(exc).__name__}: {exc}"
    except Exception:  # noqa: BLE001 - anything else: the dispatch reports it, as for OLD
        problem = None
    rule.checked[key] = problem
    return problem, True


def _kind(value: Any) -> str:
    from pkernels.api.decorators import marker_of

    marker = marker_of(value)
    if marker is not None:
        return f"a @pk.{marker.kind}"
    return f"a {type(value).__name__}"


def rules_of(debugger: Any) -> HotswapTable:
    """The hotswap table of a debugging session (created on first use)."""
    table = getattr(debugger, "_pkdb_hotswap", None)
    if table is None:
        table = HotswapTable()
        debugger._pkdb_hotswap = table
    return table


def run_command(table: HotswapTable, arg: str, scope: LiveScope) -> tuple[bool, str]:
    """Carry out ``hotswap ARG``; (success, text to show)."""
    words = arg.split()
    try:
        if not words:
            return True, table.listing()
        if words[0] == "clear":
            return True, _clear(table, words[1:])
        return True, _add(table, words, scope)
    except HotswapError as exc:
        return False, str(exc)


def _clear(table: HotswapTable, words: list[str]) -> str:
    if not words:
        removed = table.remove(None)
        return "Deleted all hotswap rules." if removed else "No hotswap rules."
    try:
        numbers = [int(w) for w in words]
    except ValueError:
        raise HotswapError(f"hotswap clear takes rule numbers, not {' '.join(words)!r}") from None
    removed = table.remove(numbers)
    return "\n".join(f"Deleted hotswap rule {r.number}: {r.describe()}" for r in removed)


def _add(table: HotswapTable, words: list[str], scope: LiveScope) -> str:
    file = line = None
    if len(words) == 3:
        file, line = _location(words[0], scope)
        words = words[1:]
    if len(words) != 2:
        raise HotswapError("usage: hotswap [[FILE:]LINE] OLD NEW  (see 'help hotswap')")
    old_name, new_name = words
    old, new = _kernel(old_name, scope), _kernel(new_name, scope)
    rule = table.add(old, new, old_name, new_name, file, line)
    text = f"Hotswap {rule.number}: {rule.describe()}"
    if file is not None:
        calls = _dispatch_lines(file)
        if line not in calls:
            text += (
                f"\n(note: line {line} is not in a parallel_* call; the rule waits for one there)"
            )
        elif calls[line] is not None and old_name.rsplit(".", 1)[-1] not in calls[line]:
            text += (
                f"\n(note: the parallel_* call on line {line} does not name {old_name}: the rule "
                f"applies only when what it dispatches is {old_name})"
            )
    return text


_dispatch_lines_cache: dict[str, tuple[tuple[int, int], dict[int, set[str] | None]]] = {}


def _dispatch_lines(file: str) -> dict[int, set[str] | None]:
    """The lines of ``file`` covered by ``parallel_for/reduce/scan`` calls, each with the
    names its call's arguments mention (None for every line when the file cannot be
    parsed: no note is better than a wrong one). Cached per file version: parsing costs
    more than the rest of the command."""
    try:
        stat = os.stat(file)
        version = (stat.st_mtime_ns, stat.st_size)
    except OSError:
        version = (0, 0)
    cached = _dispatch_lines_cache.get(file)
    if cached is not None and cached[0] == version:
        return cached[1]
    source = "".join(linecache.getlines(file))
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return dict.fromkeys(range(1, source.count("\n") + 2))
    lines: dict[int, set[str] | None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name.startswith("parallel_"):
                named = {
                    n.id if isinstance(n, ast.Name) else n.attr
                    for arg in node.args
                    for n in ast.walk(arg)
                    if isinstance(n, ast.Name | ast.Attribute)
                }
                for k in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                    lines[k] = (lines.get(k) or set()) | named
    _dispatch_lines_cache[file] = (version, lines)
    return lines


def _location(word: str, scope: LiveScope) -> tuple[str, int]:
    match = _LOCATION.match(word)
    if match is None:
        raise HotswapError(
            f"{word!r} is not a call-site line: write LINE or FILE:LINE (see 'help hotswap')"
        )
    line = int(match["line"])
    name = match["file"]
    if name is None:
        file = scope.main_file
        if not file:
            raise HotswapError("no program file to take the line from: write FILE:LINE")
    else:
        file = scope.resolve_file(name)
        if file is None:
            raise HotswapError(f"{name!r} not found")
    file = os.path.abspath(file)
    if line < 1 or not linecache.getline(file, line):
        raise HotswapError(f"{os.path.basename(file)} has no line {line}")
    return file, line


def _kernel(name: str, scope: LiveScope) -> Any:
    if not _DOTTED_NAME.match(name):
        raise HotswapError(f"{name!r} is not a name (write a workunit's name, or mod.name)")
    try:
        return scope.evaluate(name)
    except Exception as exc:  # noqa: BLE001 - reported to the user as is
        raise HotswapError(f"{name}: {type(exc).__name__}: {exc}") from None
