"""What a pkernels error's traceback shows: the user's code, down to the dispatch.

``TranslationError``, ``Kernel*Error`` and pkernels' other errors name the Python source
they are about; the frames of pkernels' own modules between the dispatch and the raise
(9 to 16 of them) say nothing to the user and are left out. ``PKERNELS_TRACEBACK=full``
keeps them (for reporting a bug of pkernels). Other exceptions (a bug of ours, an error
of the user's own code that a Debug-space kernel runs) keep every frame.

The public ``parallel_*`` functions are :func:`api_boundary` objects: made by the C
extension ``pkernels.runtime._boundary`` when it is built, their calls add no frame of
their own; without it they are the plain functions, and tracebacks are whole.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar, cast

from ..errors import PkernelsError

try:
    from . import _boundary
except ImportError:  # pragma: no cover - not built
    _boundary = None  # type: ignore[assignment]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
F = TypeVar("F", bound=Callable[..., Any])


def _internal(tb: TracebackType) -> bool:
    return os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE)


def hide_internal_frames(exception: BaseException) -> None:
    """Drop pkernels' own frames from a pkernels error's traceback (see the module)."""
    if not isinstance(exception, PkernelsError):
        return
    if os.environ.get("PKERNELS_TRACEBACK", "").strip().lower() == "full":
        return
    kept = []
    tb = exception.__traceback__
    while tb is not None:
        if not _internal(tb):
            kept.append(tb)
        tb = tb.tb_next
    for outer, inner in zip(kept, kept[1:], strict=False):
        outer.tb_next = inner
    if kept:
        kept[-1].tb_next = None
    exception.__traceback__ = kept[0] if kept else None


def api_boundary(function: F) -> F:
    """``function`` as the public API gives it: its pkernels errors show the user's
    frames only (see the module)."""
    if _boundary is None:
        return function
    boundary = _boundary.Boundary(function, hide_internal_frames)
    for name in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(boundary, name, getattr(function, name))
    boundary.__wrapped__ = function
    return cast(F, boundary)
