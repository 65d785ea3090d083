"""Target debuggers: one :class:`Controller` per platform (gdb now; cuda-gdb, rocgdb later)."""

from .base import Breakpoint, Controller, FrameInfo, StopEvent, TargetError, ThreadInfo
from .gdb import GdbController
from .mi import MiResult, MiSession

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
