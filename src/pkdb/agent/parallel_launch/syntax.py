"""Reading a ``parallel_launch`` command: clauses, their words, their arguments."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

OPERATIONS = ("for", "reduce", "scan")
SPACE_NAMES = ("OpenMP", "Serial", "Debug", "Cuda", "Default")
SPACE_WORD = re.compile(
    r"^(?:pk\.|pkernels\.)?(?:ExecutionSpace\.)?(?P<name>" + "|".join(SPACE_NAMES) + r")$"
)
_ARGUMENT = re.compile(r"^(?P<mut>mut:)?(?P<name>[A-Za-z_]\w*)(?:=(?P<expr>.*))?$", re.S)
_OPERATOR_CHARS = set("+-*/%<>=!&|^@~,")


class LaunchSyntaxError(Exception):
    """The command line cannot be read as clauses."""


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
