"""Target debuggers: one :class:`Controller` per platform (gdb now; cuda-gdb, rocgdb later).

Everything is imported on first use (PEP 562): a pkdb session that never debugs a kernel
never pays for loading the controller, the MI session or the stop records.
"""

from typing import Any

from .errors import TargetError

_LAZY = {
    "GdbController": ".gdb",
    "MiResult": ".mi",
    "MiSession": ".mi",
    **{
        name: ".base"
        for name in ("Breakpoint", "Controller", "FrameInfo", "StopEvent", "ThreadInfo")
    },
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Breakpoint",
    "Controller",
    "FrameInfo",
    "GdbController",
    "MiResult",
    "MiSession",
    "StopEvent",
    "TargetError",
    "ThreadInfo",
]
