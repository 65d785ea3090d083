"""The cuda-gdb target: ``pk.Cuda`` kernels, debugged in all-stop mode over GDB/MI3.

cuda-gdb stops device code only in all-stop mode (with ``non-stop on`` a device
breakpoint never stopped, measured on an H200), and a stop then freezes the whole
process, host threads included: the agent inside the program cannot answer while a GPU
kernel is held, so what a GPU stop shows comes from cuda-gdb itself and from the
evaluation helper (:mod:`pkdb.device_eval`), never from the agent.

Commands act on cuda-gdb's *focus* (a kernel, block and thread), not on a host thread:
this class never passes ``--thread`` to a command about device code (that would move
the focus to a host thread). cuda-gdb attaches through its command line first
(:mod:`pkdb.targets.cli_attach` says why). Some of its MI records start with a stray
``\\x01`` byte, which :mod:`pkdb.targets.mi` strips.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from .base import FrameInfo, StopEvent, TargetError
from .device import (
    NO_LINE_STOP,
    CudaFocus,
    CudaThreadRange,
    Dim3,
    GpuController,
    LineStop,
    dim3,
    dim3_text,
)
from .gdb import GdbController
from .gdb_settings import NO_AUTO_SYMBOLS, OUTPUT_SETTINGS, SIGINT_PASS
from .mi import mi_quote
from .mi_records import as_list, frame_of, int_field

#: Settings of every cuda-gdb session (all-stop: see the module docstring).
CUDA_SETTINGS: tuple[str, ...] = (
    "-gdb-set mi-async on",
    "-gdb-set non-stop off",
    *OUTPUT_SETTINGS,
    "-gdb-set print null-stop on",  # a char array (a fault's text) up to its end
    # Kernel launches are not stops; breakpoints are.
    '-interpreter-exec console "set cuda break_on_launch none"',
    # As gdb: Ctrl-C in host code is Python's, until a kernel runs (set_sigint_stops).
    SIGINT_PASS,
    # Reading the symbols of every library of a CuPy process took half of an attach (1.71
    # s against 0.85 s with libcuda's alone, on an H200 machine); kernels are debugged
    # from the CUDA modules' own debug information, and host frames come from Python.
    NO_AUTO_SYMBOLS,
)

_TRIGGERED_AT = re.compile(r"exception was triggered at PC (0x[0-9a-fA-F]+)([^\n]*)")
_FILE_LINE_AT_END = re.compile(r"\(([^()\n]+):(\d+)\)\s*$")
_INFO_LINE = re.compile(r'Line (\d+) of "([^"]+)"')
_FOCUS_TEXT = re.compile(r"kernel (\d+), block (\(\S+\)), thread (\(\S+\))")


class CudaGdbController(GdbController, GpuController):
    """:class:`~pkdb.targets.base.Controller` for cuda-gdb (see the module docstring).

    ``thread_id`` arguments of the interface are ignored: commands act on the focus,
    which :meth:`switch_focus` moves.
    """

    stops_whole_process = True
    settings = CUDA_SETTINGS
    #: libcuda's symbols: the CUDA debugger API cuda-gdb drives lives there.
    attach_commands = ("sharedlibrary libcuda",)

    def __init__(
        self,
        cuda_gdb: str = "cuda-gdb",
        *,
        init_commands: Sequence[str] = (),
        timeout: float = 10.0,
    ) -> None:
        super().__init__(cuda_gdb, init_commands=init_commands, timeout=timeout, cli_first=True)

    # -- execution: the whole process -------------------------------------------------

    def _resume_all(self, timeout: float | None = None) -> None:
        self._cmd("-exec-continue", timeout)

    def continue_(self, thread_ids: Iterable[int] | None = None) -> None:
        self._require_attached()
        self._cmd("-exec-continue")

    def interrupt(self, thread_ids: Iterable[int] | None = None) -> None:
        self._require_attached()
        self._cmd("-exec-interrupt")

    def step(self, thread_id: int | None = None) -> None:
        """Step the focused warp one source line, into device function calls."""
        self._require_attached()
        self._cmd("-exec-step")

    def next(self, thread_id: int | None = None) -> None:
        """Step the focused warp one source line, over calls."""
        self._require_attached()
        self._cmd("-exec-next")

    def request_line_stop(self, request: LineStop | None) -> bool:
        """Write ``request`` into the build's globals with one expression (see
        :class:`~pkdb.targets.device.LineStop`); False when they are not there."""
        self._require_attached()
        text = request.assignments() if request is not None else NO_LINE_STOP
        try:
            self._cmd(f"-data-evaluate-expression {mi_quote(text)}")
        except TargetError as exc:
            if "No symbol" in str(exc):
                return False
            raise
        return True

    def finish(self, thread_id: int | None = None, frame: int = 0) -> None:
        """Run the focused warp until its frame ``frame`` returns."""
        self._require_attached()
        if frame:
            self._cmd(f"-stack-select-frame {int(frame)}")
        self._cmd("-exec-finish")

    def set_thread_breakpoint(self, location: str, thread_id: int, temporary: bool = False) -> int:
        raise TargetError("cuda-gdb breakpoints are per location, not per host thread")

    def jump(self, thread_id: int | None, location: str) -> None:
        """Resume the focused warp at ``location``."""
        self._require_attached()
        self._cmd(f"-exec-jump {mi_quote(location)}")

    def wait_for_stop_among(self, thread_ids: Iterable[int], timeout: float) -> StopEvent | None:
        # A stop holds the whole process: any stop is one of theirs.
        return self.wait_for_stop(timeout)

    def thread_asleep(self, thread_id: int) -> bool:
        return False  # the process runs or is held as a whole: never waited on by thread

    # -- the focus ---------------------------------------------------------------------

    def focus(self) -> CudaFocus | None:
        """The device thread in focus, or None (the focus is on host code)."""
        try:
            text = self.send_raw("cuda kernel block thread")
        except TargetError:
            return None
        m = _FOCUS_TEXT.search(text)
        if m is None:
            return None
        block, thread = dim3(m[2]), dim3(m[3])
        if block is None or thread is None:
            return None
        return CudaFocus(int(m[1]), block, thread)

    def switch_focus(self, block: Dim3, thread: Dim3) -> CudaFocus:
        """Focus on ``thread`` of ``block`` (of the kernel in focus); the new focus.
        Raises :class:`TargetError` when the kernel has no such thread (not launched, or
        already finished)."""
        payload = self._cmd(
            f"-cuda-focus-switch {mi_quote(f'block {dim3_text(block)} thread {dim3_text(thread)}')}"
        ).payload
        focus = CudaFocus.from_mi(payload.get("CudaFocus"))
        if focus is None or focus.block != block or focus.thread != thread:
            raise TargetError(
                f"no thread {dim3_text(thread)} in block {dim3_text(block)} is running"
            )
        return focus

    def focus_at(self, event: StopEvent) -> CudaFocus | None:
        # cuda-gdb names the focus in the stop record; asked only when it did not.
        return CudaFocus.from_mi(event.raw.get("CudaFocus")) or self.focus()

    def device_threads(self) -> list[CudaThreadRange]:
        """The device threads of the kernels running now, coalesced by place."""
        table = self._cmd("-cuda-info-threads").payload.get("CoalescedInfoCudaThreadsTable", {})
        rows = []
        for row in as_list(table.get("body")):
            row = row.get("row", row) if isinstance(row, dict) else row
            if not isinstance(row, dict):
                continue
            blocks = dim3(row.get("from_blockIdx")), dim3(row.get("to_blockIdx"))
            threads = dim3(row.get("from_threadIdx")), dim3(row.get("to_threadIdx"))
            if None in blocks or None in threads:
                continue
            rows.append(
                CudaThreadRange(
                    kernel=int_field(row.get("kernel"), 0) or 0,
                    first_block=blocks[0],  # type: ignore[arg-type]
                    first_thread=threads[0],  # type: ignore[arg-type]
                    last_block=blocks[1],  # type: ignore[arg-type]
                    last_thread=threads[1],  # type: ignore[arg-type]
                    count=int_field(row.get("count"), 0) or 0,
                    file=row.get("filename"),
                    line=int_field(row.get("line")),
                    current=row.get("current", "").strip() == "*",
                )
            )
        return rows

    def device_info(self, topic: str) -> str:
        return self.send_raw(f"info cuda {topic}")

    def exception_line(self) -> tuple[str, int] | None:
        console = "".join(t for kind, t in self.mi.unclaimed_streams() if kind == "console")
        raised = exception_pc(console)
        if raised is not None and raised[1] is not None:
            return raised[1]
        # Over MI cuda-gdb drops that sentence's text (an MI ui_out prints fields, not
        # text): ask for the error PC register itself, which it keeps for the warp.
        address = raised[0] if raised is not None else "$errorpc"
        try:
            answer = self._console(f"info line *{address}")
        except TargetError:
            return None
        found = _INFO_LINE.search(answer)  # Line 7 of "/path/prog.py" starts at address ...
        return (found[2], int(found[1])) if found else None

    def kernels(self) -> list[dict[str, Any]]:
        """cuda-gdb's table of running kernels (gridDim, blockDim, ... per kernel)."""
        table = self._cmd("-cuda-info-kernels").payload.get("InfoCudaKernelsTable", {})
        return [r for r in as_list(table.get("body")) if isinstance(r, dict)]

    # -- inspection of the focused thread ----------------------------------------------

    def _in_frame(self, frame: int, command: str) -> dict[str, Any]:
        """Run ``command`` with frame ``frame`` of the focus selected (MI's ``--frame``
        needs ``--thread``, which would move the focus to a host thread)."""
        if frame:
            self._cmd(f"-stack-select-frame {int(frame)}")
        try:
            return self._cmd(command).payload
        finally:
            if frame:
                self._cmd("-stack-select-frame 0")

    def stack(self, thread_id: int | None = None, max_depth: int | None = None) -> list[FrameInfo]:
        limits = f" 0 {int(max_depth) - 1}" if max_depth else ""
        payload = self._cmd(f"-stack-list-frames{limits}").payload
        frames = []
        for f in as_list(payload.get("stack")):
            frame = frame_of(f.get("frame", f))
            if frame is not None:
                frames.append(frame)
        return frames

    def locals(self, thread_id: int | None = None, frame: int = 0) -> dict[str, str]:
        payload = self._in_frame(frame, "-stack-list-locals --all-values")
        result: dict[str, str] = {}
        for v in as_list(payload.get("locals")):
            result.setdefault(v["name"], v.get("value", ""))
        return result

    def args(self, thread_id: int | None = None, frame: int = 0) -> dict[str, str]:
        payload = self._cmd(f"-stack-list-arguments --all-values {int(frame)} {int(frame)}").payload
        result: dict[str, str] = {}
        for level in as_list(payload.get("stack-args")):
            level = level.get("frame", level)
            for v in as_list(level.get("args")):
                result[v["name"]] = v.get("value", "")
        return result

    def variable_types(self, thread_id: int | None = None, frame: int = 0) -> dict[str, str]:
        payload = self._in_frame(frame, "-stack-list-variables --simple-values")
        result: dict[str, str] = {}
        for v in as_list(payload.get("variables")):
            result.setdefault(v["name"], v.get("type", ""))
        return result

    def evaluate(self, expression: str, thread_id: int | None = None, frame: int = 0) -> str:
        payload = self._in_frame(frame, f"-data-evaluate-expression {mi_quote(expression)}")
        return payload.get("value", "")

    def send_raw(self, command: str, thread_id: int | None = None) -> str:
        return super().send_raw(command, None)

    def _console(self, command: str, thread_id: int | None = None) -> str:
        return super()._console(command, None)  # --thread would move the focus to the host


def exception_pc(console: str) -> tuple[str, tuple[str, int] | None] | None:
    """The error PC of the latest CUDA exception cuda-gdb reported in ``console`` (its
    output before the stop record: "The exception was triggered at PC 0x... [function]
    [(file:line)]"), with its (file, line) when printed; None without one."""
    found = _TRIGGERED_AT.findall(console)
    if not found:
        return None
    address, rest = found[-1]
    named = _FILE_LINE_AT_END.search(rest)  # the function, then (file:line) if known
    return address, ((named[1], int(named[2])) if named else None)
