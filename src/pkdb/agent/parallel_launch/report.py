"""The ``parallel_launch`` report: the clauses side by side, and the arrays each wrote."""

from __future__ import annotations

from typing import Any

from .running import Clause, is_array

_CELL_WIDTH = 36


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
            if c.ok and name in c.kwargs and is_array(c.kwargs[name])
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
            if is_array(value) and name not in names:
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
