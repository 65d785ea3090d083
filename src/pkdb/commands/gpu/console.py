"""The front end as GPU kernel commands see it, and the guard every command runs in."""

from __future__ import annotations

from typing import Any, Protocol

from ...gpu_session import GpuKernelSession
from ..kernel_support import guarded
from ..registry import Console

__all__ = ["GpuConsole", "guarded"]  # guarded: the CPU commands' own


class GpuConsole(Console, Protocol):
    """The front end as GPU kernel commands see it."""

    gpu: GpuKernelSession
    kernel_displays: dict[str, str]
    state: dict[str, Any]

    def resume_gpu(self, *, stepping: bool = False) -> None:
        """Let the program run until the next GPU stop, the kernel's end, or a prompt;
        ``stepping``: a step was asked for (a stop outside Python lines steps on)."""

    def gpu_stop_text(self, event: Any) -> str:
        """``CUDA kernel breakpoint 1 hit at yax.py:18 (block 0, thread 10, j=10)``..."""
