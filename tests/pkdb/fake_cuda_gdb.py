"""A stand-in for CudaGdbController (the GpuController protocol's methods that the GPU
commands use), to unit-test GPU kernel-mode command logic with no
GPU: a grid of threads held at one line, each with its own variables.

Only the command logic is tested with it (what a command asks, what it shows); the real
controller against cuda-gdb is tested on the GPU machine (test_gpu_session.py) and its
all-stop machinery against gdb (targets/test_cuda_gdb_controller.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pkdb.targets.base import Breakpoint, FrameInfo, StopEvent, TargetError
from pkdb.targets.device import CudaFocus, CudaThreadRange, LineStop


@dataclass
class FakeCudaGdb:
    """``blocks`` x ``threads`` device threads of kernel ``file``, each at ``line`` of
    function ``function``; ``values(block, thread)`` gives a thread's variables as
    cuda-gdb prints them."""

    file: str
    line: int
    blocks: int
    threads: int
    values: Any
    function: str = "pk_kernel::yAx"
    arguments: tuple[str, ...] = ("j", "cols", "y_view")  # the kernel's parameters
    types: dict[str, str] = field(default_factory=dict)  # variable -> C++ type
    expressions: dict[str, str] = field(default_factory=dict)  # more that evaluate answers
    focus_now: CudaFocus = field(default_factory=lambda: CudaFocus(0, (0, 0, 0), (0, 0, 0)))
    inserted: list[Breakpoint] = field(default_factory=list)
    conditions: dict[int, str | None] = field(default_factory=dict)
    deleted: list[int] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    events: list[StopEvent] = field(default_factory=list)
    # The focus's stack when not just the kernel's frame at `line` (a helper, a hook).
    frames: list[FrameInfo] | None = None
    step_hook: bool = True  # the build has pk_step_hook (a debug build of today)
    raised_at: tuple[str, int] | None = None  # where a CUDA exception was raised
    line_stops: list[LineStop | None] = field(default_factory=list)  # what was written
    alive: bool = True
    internal_errors: list[str] = field(default_factory=list)
    exit_status: int | None = None
    _next_number: int = 1

    # -- breakpoints
    def insert_breakpoint(self, file, line, condition=None, temporary=False) -> Breakpoint:
        bp = Breakpoint(self._next_number, f"{file}:{line}", file, line, condition=condition,
                        temporary=temporary)  # fmt: skip
        self._next_number += 1
        self.inserted.append(bp)
        self.conditions[bp.number] = condition
        return bp

    def set_breakpoint_on_function(self, name, condition=None, temporary=False) -> Breakpoint:
        return self.insert_breakpoint(name, 0, condition, temporary)

    def delete_breakpoint(self, number: int) -> None:
        self.deleted.append(number)

    def disable_breakpoint(self, number: int) -> None:
        self.commands.append(f"disable {number}")

    def enable_breakpoint(self, number: int) -> None:
        self.commands.append(f"enable {number}")

    def set_condition(self, number: int, condition: str | None) -> None:
        self.conditions[number] = condition

    def set_ignore_count(self, number: int, count: int) -> None:
        self.commands.append(f"ignore {number} {count}")

    def set_sigint_stops(self, stops: bool) -> None:
        self.commands.append(f"sigint {'stop' if stops else 'pass'}")

    # -- execution
    def continue_(self, thread_ids=None) -> None:
        self.commands.append("continue")

    def next(self, thread_id=None) -> None:
        self.commands.append("next")

    def step(self, thread_id=None) -> None:
        self.commands.append("step")

    def request_line_stop(self, request: LineStop | None) -> bool:
        if not self.step_hook:
            return False
        self.line_stops.append(request)
        self.commands.append("line stop" if request is not None else "line stop cleared")
        return True

    def interrupt(self, thread_ids=None) -> None:
        self.commands.append("interrupt")

    def wait_for_stop(self, timeout=None, thread_id=None) -> StopEvent | None:
        return self.events.pop(0) if self.events else None

    # -- the focus
    def focus(self) -> CudaFocus:
        return self.focus_now

    def switch_focus(self, block, thread) -> CudaFocus:
        if not (0 <= block[0] < self.blocks and 0 <= thread[0] < self.threads):
            raise TargetError(f"no thread {thread} in block {block} is running")
        self.focus_now = CudaFocus(0, block, thread)
        return self.focus_now

    def focus_at(self, event: StopEvent) -> CudaFocus:
        return CudaFocus.from_mi(event.raw.get("CudaFocus")) or self.focus_now

    def device_info(self, topic: str) -> str:
        self.commands.append(f"info cuda {topic}")
        return f"(cuda-gdb's info cuda {topic})\n"

    def device_threads(self) -> list[CudaThreadRange]:
        return [
            CudaThreadRange(
                0,
                (0, 0, 0),
                (0, 0, 0),
                (self.blocks - 1, 0, 0),
                (self.threads - 1, 0, 0),
                self.blocks * self.threads,
                self.file,
                self.line,
                True,
            )  # fmt: skip
        ]

    def exception_line(self) -> tuple[str, int] | None:
        return self.raised_at

    # -- inspection of the focus
    def stack(self, thread_id=None, max_depth=None) -> list[FrameInfo]:
        if self.frames is not None:
            return list(self.frames)
        return [
            FrameInfo(0, self.function, self.file, self.file, self.line, 0x1000),
            FrameInfo(1, "pk_cuda_entry", "kernel.cu", "kernel.cu", 500, 0x2000),
        ]

    def _thread_values(self) -> dict[str, str]:
        return self.values(self.focus_now.block[0], self.focus_now.thread[0])

    def args(self, thread_id=None, frame=0) -> dict[str, str]:
        return {k: v for k, v in self._thread_values().items() if k in self.arguments}

    def locals(self, thread_id=None, frame=0) -> dict[str, str]:
        return {k: v for k, v in self._thread_values().items() if k not in self.arguments}

    def evaluate(self, expression: str, thread_id=None, frame=0) -> str:
        self.commands.append(f"evaluate {expression}")
        name, _, value = expression.partition(" = ")
        if value:
            return value
        values = {**self.expressions, **self._thread_values()}
        if expression in values:
            return values[expression]
        raise TargetError(f'No symbol "{expression}" in current context.')

    def variable_types(self, thread_id=None, frame=0) -> dict[str, str]:
        return {k: self.types.get(k, "double") for k in self._thread_values()}

    def send_raw(self, command: str, thread_id=None) -> str:
        self.commands.append(f"send {command}")
        return f"(output of {command})\n"
