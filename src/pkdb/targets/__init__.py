"""Target debuggers: one :class:`Controller` per platform (gdb, cuda-gdb; rocgdb later),
chosen per execution space by :func:`controller_for` (:mod:`pkdb.targets.factory`).

Everything is imported on first use (PEP 562): a pkdb session that never debugs a kernel
never pays for loading the controller, the MI session or the stop records.
"""

from typing import Any

from .errors import TargetError

_LAZY = {
    "CudaGdbController": ".cuda_gdb",
    "GdbController": ".gdb",
    "GpuController": ".device",
    "controller_for": ".factory",
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
    "CudaGdbController",
    "FrameInfo",
    "GdbController",
    "GpuController",
    "MiResult",
    "MiSession",
    "StopEvent",
    "TargetError",
    "ThreadInfo",
    "controller_for",
]
