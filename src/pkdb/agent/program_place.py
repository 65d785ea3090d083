"""Where the program's main thread runs: its innermost frame of the program's own code
and the call it is in (an MPI rank's ``where``, asked while the rank is busy)."""

from __future__ import annotations

import linecache
import os
import sys
import threading
from typing import Any


def main_thread_place() -> dict[str, Any]:
    """The innermost frame of the program's own code on the main thread (frames of
    pkdb, pkernels, the standard library and installed packages skipped): ``file``,
    ``line``, ``function``; empty when there is none."""
    import sysconfig

    frame = sys._current_frames().get(threading.main_thread().ident or 0)
    skipped = (
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),  # pkdb
        os.path.dirname(os.path.abspath(sys.modules["pkernels"].__file__ or ""))
        if "pkernels" in sys.modules
        else "\0",
        *(sysconfig.get_paths()[name] for name in ("stdlib", "purelib", "platlib")),
    )
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(skipped) and not path.startswith("<"):
            place = {"file": path, "line": frame.f_lineno, "function": frame.f_code.co_name}
            callee = _callee(frame, path)
            if callee:
                place["call"] = callee
            return place
        frame = frame.f_back
    return {}


def _callee(frame: Any, path: str) -> str:
    """What the call ``frame`` is in names (``comm.Sendrecv``), from the source columns
    of its call instruction; "" when the frame is not in a call."""
    import dis

    for instruction in dis.get_instructions(frame.f_code):
        if instruction.offset == frame.f_lasti:
            break
    else:
        return ""
    where = instruction.positions
    if not instruction.opname.startswith("CALL") or where is None or where.lineno is None:
        return ""
    if where.lineno != where.end_lineno or where.col_offset is None:
        return ""
    source = linecache.getline(path, where.lineno).encode()  # columns count UTF-8 bytes
    text = source[where.col_offset : where.end_col_offset].decode("utf-8", "replace")
    callee = text.split("(", 1)[0].strip()
    return callee if callee.replace(".", "").replace("_", "").isalnum() else ""
