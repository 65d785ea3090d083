"""The GPU side of the target interface: a grid's coordinates, the focused device
thread, and :class:`GpuController`, what a GPU target adds to :class:`Controller`.

A GPU stop holds a grid of threads, not a few host threads: commands act on the
debugger's *focus* (one block and one thread of a kernel), which :meth:`switch_focus`
moves, and the threads are listed coalesced into ranges (:meth:`device_threads`).
:class:`pkdb.targets.cuda_gdb.CudaGdbController` implements it for cuda-gdb; a rocgdb
target would too (HIP's workgroups and work-items are the same grid).
"""

from __future__ import annotations

import abc
import enum
import re
from dataclasses import dataclass
from typing import Any

from .base import Controller, FrameInfo, StopEvent

_COORDINATES = re.compile(r"\((-?\d+),(-?\d+),(-?\d+)\)")

Dim3 = tuple[int, int, int]


def dim3(text: str | None) -> Dim3 | None:
    """``"(1,0,0)"`` -> ``(1, 0, 0)``; None for anything else."""
    m = _COORDINATES.fullmatch((text or "").replace(" ", ""))
    return (int(m[1]), int(m[2]), int(m[3])) if m else None


def dim3_text(value: Dim3) -> str:
    return "(" + ",".join(map(str, value)) + ")"


@dataclass(frozen=True)
class CudaFocus:
    """The device thread the debugger's commands act on."""

    kernel: int
    block: Dim3
    thread: Dim3

    @classmethod
    def from_mi(cls, record: Any) -> CudaFocus | None:
        """From cuda-gdb's MI ``CudaFocus`` tuple (in a ``*stopped`` record or a focus
        switch); None for anything else."""
        if not isinstance(record, dict):
            return None
        block, thread = dim3(record.get("blockIdx")), dim3(record.get("threadIdx"))
        try:
            text = record.get("kernel")
            kernel = int(text, 0) if isinstance(text, str) else int(text)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None
        if block is None or thread is None:
            return None
        return cls(kernel, block, thread)

    def label(self) -> str:
        """``block 1, thread 10`` (a coordinate's y and z shown only when not 0)."""
        return f"block {_short(self.block)}, thread {_short(self.thread)}"


def _short(value: Dim3) -> str:
    return str(value[0]) if value[1:] == (0, 0) else dim3_text(value)


@dataclass(frozen=True)
class CudaThreadRange:
    """A row of the coalesced thread table: consecutive threads at one place."""

    kernel: int
    first_block: Dim3
    first_thread: Dim3
    last_block: Dim3
    last_thread: Dim3
    count: int
    file: str | None
    line: int | None
    current: bool


class StepMode(enum.IntEnum):
    """What a :class:`LineStop` asks (the values of a debug build's ``pk_step_mode``)."""

    OFF = 0
    STEP = 1  # the thread's next line anywhere, into helpers
    NEXT = 2  # its next line at a call depth <= the one it is at (over helpers)


#: The function of a ``pk.Cuda`` debug build that the thread asked for by a
#: :class:`LineStop` calls at its next line (``include/pkernels/cuda_step.hpp``).
STEP_HOOK = "pk_step_hook"


@dataclass(frozen=True)
class LineStop:
    """A request to a debug build's code: ``thread`` of ``block`` stops by itself (in
    :data:`STEP_HOOK`) at its next Python line, so ``next`` and ``step`` run the GPU at
    full speed rather than single-step a warp (see ``cuda_step.hpp``)."""

    mode: StepMode
    block: Dim3
    thread: Dim3
    depth: int  # the thread's call depth now: 0 in the workunit, 1 in a helper it called
    line: int  # the Python line it is held at (passed over once, were it still to run)

    def assignments(self) -> str:
        """The request as one C expression of assignments to the build's globals, the
        mode last (a debugger evaluates it while the kernel is held)."""
        values = {
            **{f"pk_step_block_{a}": v for a, v in zip("xyz", self.block, strict=True)},
            **{f"pk_step_thread_{a}": v for a, v in zip("xyz", self.thread, strict=True)},
            "pk_step_start": self.depth,
            "pk_step_depth": self.depth,
            "pk_step_skip": self.line,
            "pk_step_mode": int(self.mode),
        }
        return ", ".join(f"{name} = {int(value)}" for name, value in values.items())


#: Clears any request (:meth:`GpuController.request_line_stop` with None).
NO_LINE_STOP = "pk_step_mode = 0"


class GpuController(Controller):
    """A :class:`Controller` of a GPU target. A stop freezes the whole process
    (:attr:`stops_whole_process`), and the ``thread_id`` arguments of the base interface
    are ignored: commands act on the focus."""

    stops_whole_process = True

    def exception_line(self) -> tuple[str, int] | None:
        """Where the CUDA exception of the stop just made was raised, as (file, line),
        when the debugger knows: most exceptions are imprecise, the warp is stopped an
        instruction or more past the faulting one (the next line, or code with no line).
        None otherwise (the stop's own frame is then the best there is)."""
        return None

    @abc.abstractmethod
    def focus(self) -> CudaFocus | None:
        """The device thread in focus, or None (the focus is on host code)."""

    def focus_at(self, event: StopEvent) -> CudaFocus | None:
        """The device thread that ``event`` stopped (the focus then), or None when it
        stopped host code."""
        return self.focus()

    @abc.abstractmethod
    def switch_focus(self, block: Dim3, thread: Dim3) -> CudaFocus:
        """Focus on ``thread`` of ``block`` (of the kernel in focus); the new focus.
        Raises :class:`~pkdb.targets.base.TargetError` when no such thread runs."""

    @abc.abstractmethod
    def device_threads(self) -> list[CudaThreadRange]:
        """The device threads of the kernels running now, coalesced by place."""

    @abc.abstractmethod
    def request_line_stop(self, request: LineStop | None) -> bool:
        """Write ``request`` into the running kernel (None: clear any), to take effect
        when it is resumed; False when its build has no stepping hook (a build from
        before, or not a debug build): then step with :meth:`next` / :meth:`step`.
        Raises :class:`~pkdb.targets.base.TargetError` for other failures."""

    # -- the base interface, on the focus (``thread_id`` may be left out) ---------------

    @abc.abstractmethod
    def step(self, thread_id: int | None = None) -> None:
        """Step the focused thread's warp one source line, into calls."""

    @abc.abstractmethod
    def next(self, thread_id: int | None = None) -> None:
        """Step the focused thread's warp one source line, over calls."""

    @abc.abstractmethod
    def finish(self, thread_id: int | None = None, frame: int = 0) -> None:
        """Run the focused thread's warp until its frame ``frame`` returns."""

    @abc.abstractmethod
    def stack(self, thread_id: int | None = None, max_depth: int | None = None) -> list[FrameInfo]:
        """The focused thread's stack, innermost frame first."""

    @abc.abstractmethod
    def locals(self, thread_id: int | None = None, frame: int = 0) -> dict[str, str]:
        """Local variables of a frame of the focused thread."""

    @abc.abstractmethod
    def args(self, thread_id: int | None = None, frame: int = 0) -> dict[str, str]:
        """Arguments of a frame of the focused thread."""

    @abc.abstractmethod
    def variable_types(self, thread_id: int | None = None, frame: int = 0) -> dict[str, str]:
        """Arguments and locals of a frame of the focused thread: name -> type."""

    @abc.abstractmethod
    def device_info(self, topic: str) -> str:
        """The debugger's own report on ``topic`` (``info cuda TOPIC``: ``devices``,
        ``kernels``, ``blocks``...), as it prints it."""
