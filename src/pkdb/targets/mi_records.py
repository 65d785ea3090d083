"""GDB/MI records read into the Controller protocol's values (breakpoints, frames, stop
events, threads), and parsed results written back as MI text. Shared by the gdb and
cuda-gdb targets."""

from __future__ import annotations

import re
from typing import Any

from .base import Breakpoint, FrameInfo, StopEvent, ThreadInfo
from .mi import mi_quote

_LWP_RE = re.compile(r"\bLWP (\d+)\b")


def int_field(value: Any, default: int | None = None) -> int | None:
    if value is None:
        return default
    try:
        return int(value, 0) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        return default


def frame_of(d: dict[str, Any] | None, level: int = 0) -> FrameInfo | None:
    if not d:
        return None
    return FrameInfo(
        level=int_field(d.get("level"), level) or 0,
        function=d.get("func"),
        file=d.get("file"),
        fullname=d.get("fullname"),
        line=int_field(d.get("line")),
        address=int_field(d.get("addr")),
    )


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _display_location(location: str) -> str:
    """Turn MI's ``-source X -line N`` / ``-function F`` into ``X:N`` / ``F``."""
    m = re.fullmatch(r"-source (.+) -line (\d+)", location)
    if m:
        return f"{m.group(1)}:{m.group(2)}"
    m = re.fullmatch(r"-function (.+)", location)
    return m.group(1) if m else location


def breakpoint_of(b: dict[str, Any]) -> Breakpoint:
    """Build a :class:`Breakpoint` from an MI3 ``bkpt`` tuple (with or without locations)."""
    locations = as_list(b.get("locations"))
    pending = b.get("addr") == "<PENDING>"
    first = locations[0] if locations else ({} if pending else b)
    cond = b.get("cond")
    return Breakpoint(
        number=int_field(b.get("number"), 0) or 0,
        location=_display_location(b.get("original-location") or b.get("pending") or ""),
        file=first.get("fullname") or first.get("file"),
        line=int_field(first.get("line")),
        function=first.get("func"),
        condition=cond if cond else None,
        enabled=b.get("enabled", "y") == "y",
        hit_count=int_field(b.get("times"), 0) or 0,
        ignore=int_field(b.get("ignore"), 0) or 0,
        temporary=b.get("disp") == "del",
        pending=pending,
        locations=len(locations) if locations else (0 if pending else 1),
        addresses=tuple(
            (str(loc.get("number", b.get("number"))), int(loc["addr"], 16))
            for loc in (locations or ([] if pending else [b]))
            if str(loc.get("addr", "")).startswith("0x")
        ),
    )


def stop_event_of(payload: dict[str, Any]) -> StopEvent:
    reason = payload.get("reason", "")
    exit_code = None
    if reason == "exited-normally":
        reason, exit_code = "exited", 0
    elif reason == "exited":
        try:  # gdb prints it in octal with a leading zero: "011" is 9
            exit_code = int(payload.get("exit-code", ""), 8)
        except ValueError:
            exit_code = None
    stopped = payload.get("stopped-threads")
    if isinstance(stopped, list):
        stopped_threads: tuple[int, ...] | None = tuple(int(t) for t in stopped)
    elif stopped is None and payload.get("thread-id"):
        stopped_threads = (int(payload["thread-id"]),)
    else:
        stopped_threads = None
    return StopEvent(
        reason=reason,
        thread_id=int_field(payload.get("thread-id")),
        breakpoint=int_field(payload.get("bkptno")),
        frame=frame_of(payload.get("frame")),
        signal_name=payload.get("signal-name"),
        signal_meaning=payload.get("signal-meaning"),
        exit_code=exit_code,
        return_value=payload.get("return-value"),
        stopped_threads=stopped_threads,
        raw=payload,
    )


def parse_threads(payload: dict[str, Any]) -> list[ThreadInfo]:
    """The threads of a ``-thread-info`` answer, by id."""
    current = int_field(payload.get("current-thread-id"))
    threads = []
    for t in as_list(payload.get("threads")):
        tid = int(t["id"])
        target_id = t.get("target-id", "")
        m = _LWP_RE.search(target_id)
        threads.append(
            ThreadInfo(
                id=tid,
                target_id=target_id,
                os_tid=int(m.group(1)) if m else None,
                name=t.get("name"),
                state=t.get("state", "unknown"),
                frame=frame_of(t.get("frame")),
                current=tid == current,
            )
        )
    return sorted(threads, key=lambda t: t.id)


def _mi_format_value(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + format_fields(value) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_mi_format_value(v) for v in value) + "]"
    return mi_quote(str(value))


def format_fields(fields: dict[str, Any]) -> str:
    """Render parsed MI results back as MI text (``name="value",...``)."""
    return ",".join(f"{k}={_mi_format_value(v)}" for k, v in fields.items())
