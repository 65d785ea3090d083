"""Rank sets: ``"2"``, ``"0-3"``, ``"1,3"``, ``"0-3,6"``, ``"all"`` parsed, and sets written
back in that form (``ranks 0-3,6``)."""

from __future__ import annotations

from collections.abc import Iterable


class RankSetError(ValueError):
    """A rank set that does not parse, or names ranks the job does not have."""


def parse_ranks(text: str, size: int) -> frozenset[int]:
    """The ranks ``text`` names, out of ``size`` ranks (``0`` to ``size - 1``).

    Accepts comma-separated items, each a rank ``N``, a range ``A-B`` (both ends
    included) or ``all`` / ``*``; spaces are ignored. :class:`RankSetError` when an item
    does not parse, a range runs backwards, or a rank is ``size`` or more.
    """
    items = [item.strip() for item in text.replace(" ", "").split(",")]
    if not text.strip() or any(not item for item in items):
        raise RankSetError(f"no rank set in {text!r}: write ranks as 2, 0-3, 1,3 or all")
    ranks: set[int] = set()
    for item in items:
        if item in ("all", "*"):
            ranks.update(range(size))
            continue
        first, dash, last = item.partition("-")
        try:
            low = int(first)
            high = int(last) if dash else low
        except ValueError:
            raise RankSetError(
                f"{item!r} is not a rank or a range of ranks (write 2, 0-3, 1,3 or all)"
            ) from None
        if low < 0 or high < 0:
            raise RankSetError(f"{item!r}: ranks are 0 or more")
        if high < low:
            raise RankSetError(f"{item!r}: a range goes from the lower rank to the higher")
        if high >= size:
            raise RankSetError(
                f"{item!r}: this job has {size} rank{'s' * (size != 1)} (0-{size - 1})"
            )
        ranks.update(range(low, high + 1))
    return frozenset(ranks)


def format_ranks(ranks: Iterable[int]) -> str:
    """``0-3,6``: runs of three or more ranks as ranges, the others one by one."""
    ordered = sorted(set(ranks))
    parts: list[str] = []
    start = 0
    while start < len(ordered):
        end = start
        while end + 1 < len(ordered) and ordered[end + 1] == ordered[end] + 1:
            end += 1
        if end - start >= 2:
            parts.append(f"{ordered[start]}-{ordered[end]}")
        else:
            parts.extend(str(rank) for rank in ordered[start : end + 1])
        start = end + 1
    return ",".join(parts)


def describe_ranks(ranks: Iterable[int]) -> str:
    """``rank 2`` or ``ranks 0-3,6``."""
    ordered = sorted(set(ranks))
    return f"rank{'s' * (len(ordered) != 1)} {format_ranks(ordered)}"
