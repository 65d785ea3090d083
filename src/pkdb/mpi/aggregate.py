"""Many ranks' answers shown as one: equal texts once, with the ranks that gave them;
different ones side by side (or one after the other when they would not fit)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .ranksets import describe_ranks


@dataclass(frozen=True)
class Group:
    """The ranks that gave one text."""

    ranks: tuple[int, ...]
    text: str

    @property
    def label(self) -> str:
        return f"[{describe_ranks(self.ranks)}]"


def group_answers(answers: Mapping[int, str]) -> list[Group]:
    """``answers`` (rank → text) grouped by equal text, in the order of each group's
    lowest rank. Ranks with no text (empty answers) are left out."""
    by_text: dict[str, list[int]] = {}
    for rank in sorted(answers):
        text = answers[rank]
        if text:
            by_text.setdefault(text, []).append(rank)
    groups = [Group(tuple(ranks), text) for text, ranks in by_text.items()]
    return sorted(groups, key=lambda group: group.ranks[0])


#: Side by side only for this many distinct answers at most.
MAX_COLUMNS = 4
_SEPARATOR = " | "


def render(groups: list[Group], width: int = 100) -> str:
    """The groups as text for the terminal (ending with a newline unless empty).

    One group: its label then its text (on the same line when the text is one line).
    Several: side by side in columns with the labels as headings, when there are at
    most :data:`MAX_COLUMNS` and every line fits in ``width`` columns; else one after
    the other, each under its label.
    """
    if not groups:
        return ""
    if len(groups) > 1:
        columns = _side_by_side(groups, width)
        if columns is not None:
            return columns
    return "".join(_stacked(group) for group in groups)


def _stacked(group: Group) -> str:
    lines = group.text.rstrip("\n").split("\n")
    if len(lines) == 1:
        return f"{group.label} {lines[0]}\n"
    return group.label + "\n" + "\n".join(lines) + "\n"


def _side_by_side(groups: list[Group], width: int) -> str | None:
    if len(groups) > MAX_COLUMNS:
        return None
    cells = [[group.label, *group.text.rstrip("\n").split("\n")] for group in groups]
    widths = [max(len(line) for line in column) for column in cells]
    if sum(widths) + len(_SEPARATOR) * (len(widths) - 1) > width:
        return None
    height = max(len(column) for column in cells)
    rows = []
    for row in range(height):
        parts = [
            (column[row] if row < len(column) else "").ljust(w)
            for column, w in zip(cells, widths, strict=True)
        ]
        while len(parts) > 1 and not parts[-1].strip():  # columns that ended already
            parts.pop()
        rows.append(_SEPARATOR.join(parts).rstrip() + "\n")
    return "".join(rows)
