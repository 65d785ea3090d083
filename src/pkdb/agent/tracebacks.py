"""Post-mortem tracebacks without pkernels' own frames.

An error raised by a dispatch (a translation error, a failed check of a debug build)
surfaces five or six frames deep in pkernels (dispatch, compile, translate, lower...),
which say nothing to the user and push their own lines off the screen. Those frames, and
the standard-library frames pkernels called, are left out of the traceback pkdb prints
and of the post-mortem stack (``where``, ``up``, ``down``); the user's frames stay,
kernels run by the Debug space included. ``PKERNELS_TRACEBACK=full`` keeps them all.
"""

from __future__ import annotations

import os
import sysconfig
import types

_OWN_PACKAGE = "pkernels"
_LIBRARY_DIRS = tuple(
    os.path.join(p, "") for k in ("stdlib", "platstdlib") if (p := sysconfig.get_paths().get(k))
)


def full_tracebacks() -> bool:
    """``PKERNELS_TRACEBACK=full``: show pkernels' frames too."""
    return os.environ.get("PKERNELS_TRACEBACK", "").strip().lower() == "full"


def user_traceback(tb: types.TracebackType | None) -> tuple[types.TracebackType | None, int]:
    """``tb`` without pkernels' frames: the new chain and how many frames it left out.
    A traceback with nothing but such frames is returned as it is."""
    entries: list[types.TracebackType] = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    kept: list[types.TracebackType] = []
    hiding = False  # the innermost frame kept so far is pkernels' (for library frames)
    for entry in entries:
        if _is_own(entry.tb_frame):
            hiding = True
        elif _is_library(entry.tb_frame) and hiding:
            pass  # the standard library working for pkernels
        else:
            hiding = False
            kept.append(entry)
    if not kept or len(kept) == len(entries):
        return (entries[0] if entries else None), 0
    chain: types.TracebackType | None = None
    for entry in reversed(kept):
        chain = types.TracebackType(chain, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return chain, len(entries) - len(kept)


def hide_internal_frames(exc: BaseException) -> int:
    """Replace the tracebacks of ``exc``'s causes and contexts (printed with it) by
    :func:`user_traceback`'s; how many frames were left out of them."""
    hidden = 0
    seen: set[int] = set()
    chained = [exc.__cause__, exc.__context__]
    while chained:
        link = chained.pop()
        if link is None or id(link) in seen:
            continue
        seen.add(id(link))
        shown, count = user_traceback(link.__traceback__)
        if count:
            link.__traceback__ = shown
            hidden += count
        chained += [link.__cause__, link.__context__]
    return hidden


def _is_own(frame: types.FrameType) -> bool:
    name = frame.f_globals.get("__name__") or ""
    return name == _OWN_PACKAGE or name.startswith(_OWN_PACKAGE + ".")


def _is_library(frame: types.FrameType) -> bool:
    """The standard library's (installed packages live below it, in site-packages: a
    program's own may be there, and NumPy's frames say what failed)."""
    filename = frame.f_code.co_filename
    if filename.startswith("<"):  # <frozen ...>, <string>: the standard library's exec
        return True
    return filename.startswith(_LIBRARY_DIRS) and not any(
        part in filename for part in ("/site-packages/", "/dist-packages/")
    )
