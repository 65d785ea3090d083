"""The front end's side of debugging ``pk.Cuda`` kernels: cuda-gdb, the evaluation
helper, and the current GPU stop.

A GPU stop holds the whole program (cuda-gdb's all-stop mode; see
:mod:`pkdb.targets.cuda_gdb`), so nothing here asks the agent anything while a kernel is
held: kernel variables come from cuda-gdb, Python runs in the evaluation helper
(:mod:`pkdb.device_eval`), and what pdb must hear of (breakpoints set or cleared at the
stop, hit counts) waits in :attr:`GpuKernelSession.deferred` until the kernel has ended.

cuda-gdb attaches lazily, at the first Cuda launch with a breakpoint, then stays
attached; the process can be traced by one debugger at a time, so the front end detaches
it when a CPU kernel needs gdb (and the other way round): a program mixing OpenMP and
Cuda kernels is debugged in one session, at the cost of one attach per switch.

Threads: a GPU stop's current thread is cuda-gdb's focus (a block and a thread of the
kernel). ``thread N`` counts threads across the grid (``N = block * threads per block +
thread``, block and thread along x); ``thread j=10`` finds the thread that runs index
10 from the launch's geometry (:meth:`thread_of_index`).
"""

from __future__ import annotations

import itertools
import linecache
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pkernels.translate.emit_cpp import COPIED_PARAM_PREFIX

from . import typed_values
from .debugger_session import DebuggerSession
from .gdbexpr import ConditionError, parse_gdb_value, python_to_c
from .kernel_protocol import KernelLaunch
from .targets.base import Controller, FrameInfo, StopEvent, TargetError
from .targets.device import STEP_HOOK, CudaFocus, Dim3, GpuController, LineStop, StepMode
from .teams import TeamPosition

#: Elements of a scratch view read from the device for an evaluation (more: not shown).
SCRATCH_READ_LIMIT = 4096


@dataclass
class GpuStop:
    """Where the user is at a GPU stop: the event, the focused thread, the frame."""

    event: StopEvent
    focus: CudaFocus | None
    frame: int = 0  # 0: the innermost Python frame; past the kernel's: host frames
    listed: tuple[str, int, int] | None = None  # `list` goes on from here
    # A CUDA exception's own (file, line) where the stopped warp has gone past it (see
    # GpuController.exception_line); the focused thread's frame 0 shows it.
    raised_at: tuple[str, int] | None = None


@dataclass
class Deferred:
    """A request for the agent, held until the program runs again."""

    action: str
    args: dict[str, Any] = field(default_factory=dict)


class GpuKernelSession(DebuggerSession):
    """cuda-gdb and the state of the GPU kernel being debugged, for one front end."""

    def __init__(self, make_controller: Callable[[str], Controller] | None = None) -> None:
        """``make_controller``: a new controller for an execution space (by default
        :func:`pkdb.targets.factory.controller_for`: cuda-gdb for ``cuda``); it must
        give a :class:`~pkdb.targets.device.GpuController`."""
        self._make_controller = make_controller
        self.controller: GpuController | None = None
        self.launch: KernelLaunch | None = None
        self.stop: GpuStop | None = None
        self.gdb_numbers: dict[int, int] = {}  # pdb breakpoint -> cuda-gdb breakpoint
        self.fault_breakpoint: int | None = None  # on pk_fault_hook (a failed check)
        self.step_breakpoint: int | None = None  # on pk_step_hook (next/step: step_line)
        self.line_stop_pending = False  # a LineStop was written and the kernel resumed
        self.finishing = False  # `finish`: the breakpoints are out of this launch
        self.deferred: list[Deferred] = []
        self._attached_pid: int | None = None
        self._evaluator: Any = None  # pkdb.device_eval.DeviceEvaluator, made when needed
        self._gdb_conditions: set[int] = set()
        self._places: dict[int, tuple[str, int]] = {}  # cuda-gdb breakpoint -> file, line
        self._lifted: list[int] = []  # cuda-gdb breakpoints off while a LineStop runs

    # -- life cycle --------------------------------------------------------------------

    @property
    def active(self) -> bool:
        """A GPU kernel runs (or is held) under cuda-gdb."""
        return self.launch is not None

    @property
    def attached(self) -> bool:
        return self._attached_pid is not None and self.controller is not None

    @property
    def evaluator(self) -> Any:
        if self._evaluator is None:
            from .device_eval import DeviceEvaluator

            self._evaluator = DeviceEvaluator()
        return self._evaluator

    def begin(self, launch: KernelLaunch) -> list[str]:
        """Attach if needed and set the launch's breakpoints (the program runs: the
        kernel is launched when the agent hears back). Problems to show the user."""
        evaluator = self.evaluator
        if not evaluator.running:
            evaluator.start(launch.python, launch.python_path, launch.cwd)  # overlaps below
        evaluator.launch(launch.device_names, launch.device_views)
        if self.controller is None or not self.controller.alive:
            from .targets.factory import controller_for

            controller = (self._make_controller or controller_for)(launch.space)
            if not isinstance(controller, GpuController):
                controller.close()
                raise TargetError(f"no GPU debugger for the {launch.space!r} execution space")
            self.controller = controller
            self._attached_pid = None
        if self._attached_pid != launch.pid:
            if self._attached_pid is not None:
                self.controller.detach()
            self.controller.attach(launch.pid)  # the program runs on once attached
            self._attached_pid = launch.pid
            # A failed check calls pk_fault_hook in the faulting thread: stop there.
            self.fault_breakpoint = self.controller.set_breakpoint_on_function(
                "pk_fault_hook"
            ).number
            # next/step: the thread asked for calls pk_step_hook at its next line.
            try:
                self.step_breakpoint = self.controller.set_breakpoint_on_function(STEP_HOOK).number
            except TargetError:
                self.step_breakpoint = None  # next/step single-step, as cuda-gdb does
        self.launch = launch
        self.stop = None
        self.finishing = False
        self.controller.set_sigint_stops(True)  # Ctrl-C while the kernel runs: a stop
        return self.sync_breakpoints(launch.breakpoints)

    def end(self) -> None:
        """The kernel returned: forget the stop; cuda-gdb stays attached."""
        self.launch = None
        self.stop = None
        self.finishing = False
        # A request the kernel ended before meeting stays in the module: a later launch's
        # stop in pk_step_hook is then passed over (see poll_stop).
        self.line_stop_pending = False
        self._restore_lifted()
        if self.controller is not None and self.controller.alive:
            try:
                self.controller.set_sigint_stops(False)  # host code: Ctrl-C is Python's
            except TargetError:
                pass

    def close(self) -> list[str]:
        """Detach and end cuda-gdb and the helper (the program goes on, or is gone).
        cuda-gdb's internal errors during the session, for the user."""
        self.end()
        failures = self._close_debugger()
        self.step_breakpoint = None
        if self._evaluator is not None:
            self._evaluator.stop()
        return failures

    def require_controller(self) -> GpuController:
        if self.controller is None:
            raise TargetError("cuda-gdb is not attached")
        return self.controller

    def require_stop(self) -> GpuStop:
        if self.stop is None:
            raise TargetError("no GPU thread is stopped")
        return self.stop

    # -- breakpoints -------------------------------------------------------------------

    def sync_breakpoints(self, breakpoints: list[dict[str, Any]]) -> list[str]:
        """Set pdb's breakpoints of this kernel in cuda-gdb (replacing what was there)."""
        self._delete_debugger_breakpoints()
        return [p for p in (self.insert(bp) for bp in breakpoints if bp.get("enabled", True)) if p]

    def insert(self, bp: dict[str, Any]) -> str | None:
        """Set pdb breakpoint ``bp`` in cuda-gdb; a problem to report, or None."""
        controller = self.require_controller()
        problem = None
        try:
            condition = self.c_condition(bp.get("condition"))
        except ConditionError as exc:  # as pdb does: stop there, and say why
            condition, problem = None, f"breakpoint {bp['number']}: {exc}; it stops unconditionally"
        temporary = bool(bp.get("temporary", False))
        try:
            inserted = controller.insert_breakpoint(bp["file"], bp["line"], condition, temporary)
        except TargetError as exc:
            if condition is None:
                return f"breakpoint {bp['number']}: {exc}; it is not set in this kernel"
            problem = (
                f"breakpoint {bp['number']}: the condition {bp['condition']!r} cannot be "
                f"evaluated on the GPU ({exc}); it stops unconditionally"
            )
            inserted = controller.insert_breakpoint(bp["file"], bp["line"], None, temporary)
        self.gdb_numbers[bp["number"]] = inserted.number
        self._places[inserted.number] = (bp["file"], int(bp["line"]))
        if bp.get("ignore"):
            controller.set_ignore_count(inserted.number, int(bp["ignore"]))
        return problem

    def c_condition(self, condition: str | None) -> str | None:
        """The C condition cuda-gdb tests. A team kernel's team member is the CUDA
        coordinates there (a team is a block, a team rank a thread): cuda-gdb reads
        those in every thread, where the member reached through its reference may not
        be (seen on an H200: such a condition stopped in league 0)."""
        if not condition:
            return None
        launch = self.launch
        views = {name: info["rank"] for name, info in (launch.views if launch else {}).items()}
        member = (launch.team_member if launch else "") or None
        text = python_to_c(condition, views, member)
        if member and launch is not None:
            geometry = launch.cuda_geometry
            league, blocks = geometry.get("league"), geometry.get("blocks")
            text = text.replace(f"{member}.team_rank", "threadIdx.x")
            text = text.replace(f"{member}.team_size", "blockDim.x")
            if league is not None:
                text = text.replace(f"{member}.league_size", str(int(league)))
            if league is not None and blocks is not None and league <= blocks:
                text = text.replace(f"{member}.league_rank", "blockIdx.x")  # one rank a block
        return text

    # -- next and step -----------------------------------------------------------------

    def step_line(self, into: bool) -> None:
        """``next`` (``into`` False) or ``step``: the focused thread runs to its next
        Python line (into helpers with ``into``). A debug build stops there by itself
        (a :class:`~pkdb.targets.device.LineStop`: the GPU runs at full speed);
        a build without the hook is stepped by cuda-gdb, a warp instruction by
        instruction. The kernel runs on: the stop comes to :meth:`poll_stop`."""
        controller = self.require_controller()
        stop = self.require_stop()
        frames = self.python_frames()
        if (
            self.step_breakpoint is not None
            and stop.focus is not None
            and frames
            and frames[0].line is not None
        ):
            request = LineStop(
                StepMode.STEP if into else StepMode.NEXT,
                stop.focus.block,
                stop.focus.thread,
                depth=len(frames) - 1,
                line=frames[0].line,
            )
            if controller.request_line_stop(request):
                self.line_stop_pending = True
                self._lift_breakpoints_at(frames[0].file, frames[0].line)
                controller.continue_()
                return
        if into:
            controller.step()
        else:
            controller.next()

    def _lift_breakpoints_at(self, file: str | None, line: int) -> None:
        """Turn off in cuda-gdb, until the next stop, the breakpoints on the line the
        focused thread is at (its next line comes first for it). Every other thread
        passing one would stop the GPU meanwhile, for cuda-gdb to test its condition on
        the host: with yAx's conditional breakpoint on its loop's line, cuda-gdb took
        240-270 ms from resuming to the thread's next line, 50-100 ms without (H100)."""
        here = os.path.realpath(file) if file else None
        for number in self.gdb_numbers.values():
            place = self._places.get(number)
            if here is None or place is None or place[1] != line:
                continue
            if os.path.realpath(place[0]) == here:
                try:
                    self.require_controller().disable_breakpoint(number)
                except TargetError:
                    continue
                self._lifted.append(number)

    def _restore_lifted(self) -> None:
        """Turn back on what :meth:`_lift_breakpoints_at` turned off (those not deleted
        meanwhile)."""
        lifted, self._lifted = self._lifted, []
        kept = set(self.gdb_numbers.values())
        for number in lifted:
            if number in kept and self.controller is not None and self.controller.alive:
                try:
                    self.controller.enable_breakpoint(number)
                except TargetError:
                    pass  # the kernel is gone

    def _settle_line_stop(self, event: StopEvent) -> bool:
        """A stop the user will see arrived: the request is over (met, or another stop
        came first: then cleared, so the thread does not stop by itself later). False
        for a stop in pk_step_hook that no request of this launch asked for (a request
        an ended launch left behind): to pass over."""
        at_hook = self.step_breakpoint is not None and event.breakpoint == self.step_breakpoint
        pending, self.line_stop_pending = self.line_stop_pending, False
        self._restore_lifted()
        if at_hook and pending:
            return True  # the kernel cleared its request itself
        if pending or at_hook:
            try:
                self.require_controller().request_line_stop(None)
            except TargetError:
                pass  # the kernel is gone
        return not at_hook

    # -- stops -------------------------------------------------------------------------

    def poll_stop(self, timeout: float) -> GpuStop | None:
        """A new stop, if one arrives within ``timeout`` seconds (the whole program is
        held then). A stop outside device code (a host signal) is passed over, and so is
        a stop in pk_step_hook that no ``next``/``step`` of this launch asked for."""
        controller = self.require_controller()
        event = controller.wait_for_stop(timeout=timeout)
        if event is None or event.exited:
            if event is not None:
                self.line_stop_pending = False
            return None
        focus = controller.focus_at(event)
        if focus is None and self.active and _interrupted(event):
            # Ctrl-C reaches the program's host threads (the terminal is the program's
            # while it runs): the user asked to stop the kernel, so focus on one of its
            # threads rather than let the interrupt pass.
            focus = self._focus_a_device_thread()
        if focus is None:
            # The focus is on host code: nothing of the kernel's to show (a signal the
            # program handles itself, say): let it run on.
            controller.continue_()
            return None
        if not self._settle_line_stop(event):
            controller.continue_()
            return None
        self.stop = GpuStop(event, focus, raised_at=_raised_at(controller, event))
        return self.stop

    def _focus_a_device_thread(self) -> CudaFocus | None:
        """Focus on the first thread of the running kernel at a Python line (else any of
        its threads); None when no device thread runs."""
        controller = self.require_controller()
        try:
            rows = controller.device_threads()
            at_python = [r for r in rows if r.file and r.file.endswith(".py")]
            candidates = at_python or rows
            if not candidates:
                return None
            return controller.switch_focus(candidates[0].first_block, candidates[0].first_thread)
        except TargetError:
            return None

    def fault_message(self, event: StopEvent) -> str | None:
        """A failed check's text, when ``event`` stopped in ``pk_fault_hook``."""
        if self.fault_breakpoint is None or event.breakpoint != self.fault_breakpoint:
            return None
        try:
            raw = self.require_controller().evaluate("fault->text", frame=0)
        except TargetError:
            return "a check of the debug build failed"
        start, end = raw.find('"'), raw.rfind('"')
        text = raw[start + 1 : end] if 0 <= start < end else raw
        return text.split(": ", 1)[1] if text.count(": ") >= 1 and ".py:" in text else text

    def python_frames(self) -> list[FrameInfo]:
        """The focused thread's frames at Python lines (kernel, helpers), innermost first;
        at a CUDA exception, the innermost at the line that raised it."""
        stack = self.require_controller().stack(max_depth=64)
        frames = [f for f in stack if f.file and f.file.endswith(".py")]
        raised_at = self.stop.raised_at if self.stop else None
        if raised_at is None:
            return frames
        file, line = raised_at
        if frames:
            return [replace(frames[0], file=file, fullname=file, line=line), *frames[1:]]
        function = stack[0].function if stack else None  # a release build's code, no line
        return [FrameInfo(0, function, file, file, line, None)]

    def host_frames(self) -> list[FrameInfo]:
        """The dispatch's host frames, from its call site outwards."""
        stack = reversed(self.launch.call_stack) if self.launch else []
        return [FrameInfo(-1, function, file, file, line, None) for file, line, function in stack]

    def location(self, frame: int = 0) -> FrameInfo | None:
        """The ``frame``-th Python frame: kernel frames, then the dispatch's host frames."""
        frames = self.python_frames()
        if frame < len(frames):
            return frames[frame]
        host = self.host_frames()
        index = frame - len(frames)
        return host[index] if 0 <= index < len(host) else None

    def frame_level(self, frame: int) -> int | None:
        """cuda-gdb's level of the ``frame``-th Python frame; None for a host frame."""
        frames = self.python_frames()
        return frames[frame].level if frame < len(frames) else None

    # -- values ------------------------------------------------------------------------

    def frame_variables(self, level: int) -> tuple[dict[str, str], dict[str, str]]:
        """The (arguments, locals) of kernel frame ``level`` as cuda-gdb shows them, with
        a helper's scalar parameters among the arguments (the code has them as locals of
        their own name: pkernels' CudaEmitter.copied_param)."""
        controller = self.require_controller()
        local = controller.locals(frame=level)
        args: dict[str, str] = {}
        for name, text in controller.args(frame=level).items():
            own = name.removeprefix(COPIED_PARAM_PREFIX)
            args[own] = local.pop(own, text) if own != name else text
        return args, local

    def kernel_values(self, frame: int | None = None) -> dict[str, Any]:
        """The focused thread's scalars (and team member, structs) of a kernel frame as
        Python values, for the evaluation helper; views and random pools are left out
        (the helper maps the arrays themselves and has the program's pools). A host
        frame has none."""
        stop = self.require_stop()
        level = self.frame_level(stop.frame if frame is None else frame)
        if level is None:
            return {}
        args, local = self.frame_variables(level)
        raw = {**args, **local}
        launch = self.launch
        views = launch.views if launch else {}
        kinds = launch.variable_kinds if launch else {}
        pools = launch.pools if launch else {}
        team_member = launch.team_member if launch else ""
        values: dict[str, Any] = {}
        for name, text in raw.items():
            if name.startswith("pk_") or name in views:
                continue
            py_name = name[:-1] if name.endswith("_") else name
            if py_name in pools:
                continue  # the kernel holds the launch's key; the helper has the pool
            if team_member and py_name == team_member:
                position = self.team_position()
                if position is not None:
                    values[py_name] = position.encode()
                continue
            if "extent = {" in text:  # a scratch view: read from the device
                array = self._scratch_values(name, text, level)
                if array is not None:
                    values[py_name] = array
                continue
            value = typed_values.from_gdb(py_name, text, kinds)  # as the CPU's are
            if value is not None:
                values[py_name] = value
        return values

    def _scratch_values(self, name: str, text: str, level: int) -> Any:
        """A scratch view's elements, what the team's memory holds now: a marked copy
        (:func:`pkdb.memviews.encode_copy`: a NumPy array in the helper), or a list
        when its element type is not known."""
        import re

        from . import memviews

        match = re.search(r"extent = \{([^}]*)\}", text)
        if match is None:
            return None
        extents = [int(n) for n in match.group(1).split(",") if n.strip()]
        # Read by the view's own strides (in elements), not assuming row-major order.
        found = re.search(r"stride = \{([^}]*)\}", text)
        strides = [int(n) for n in found.group(1).split(",") if n.strip()] if found else []
        if len(strides) != len(extents) or any(s < 0 for s in strides):
            strides = [math.prod(extents[k + 1 :]) for k in range(len(extents))]  # row-major
        count = math.prod(max(n, 0) for n in extents)
        span = sum((n - 1) * s for n, s in zip(extents, strides, strict=True)) + 1
        if not 0 < count <= SCRATCH_READ_LIMIT or span > SCRATCH_READ_LIMIT:
            return None
        try:
            raw = self.require_controller().evaluate(f"*{name}.data@{span}", frame=level)
        except TargetError:
            return None
        numbers = [parse_gdb_value(v.strip()) for v in raw.strip("{}").split(",")]
        if len(numbers) < span:  # not the elements asked for: show none rather than wrong ones
            return None
        # The elements in index order (rows of a rank-2 view; rank 3 flattened, as before).
        flat = [
            numbers[sum(i * s for i, s in zip(index, strides, strict=True))]
            for index in itertools.product(*map(range, extents))
        ]
        try:
            ctype = self.require_controller().variable_types(frame=level).get(name, "")
        except TargetError:
            ctype = ""
        copy = memviews.encode_copy(flat, ctype, extents) or memviews.encode_copy(
            flat, memviews.view_ctype_of(text, len(extents)), extents
        )
        if copy is not None:
            return copy
        if len(extents) == 2:
            width = extents[1]
            return [flat[r * width : (r + 1) * width] for r in range(extents[0])]
        return flat

    def team_position(self) -> TeamPosition | None:
        """The focused thread's place in a TeamPolicy launch: its team rank is its
        thread; its league rank its block when the league fits the grid (a block runs
        league ranks block, block + blocks, ...), else what the workunit's team member
        or the launcher's ``pk_l`` says."""
        launch = self.launch
        stop = self.stop
        if launch is None or not launch.team_member or stop is None or stop.focus is None:
            return None
        geometry = launch.cuda_geometry
        league_size = int(geometry.get("league", 0))
        league = stop.focus.block[0]
        if league_size > int(geometry.get("blocks", 0)):
            league = self._read_league_rank(launch.team_member) or league
        return TeamPosition(
            league_rank=league,
            league_size=league_size,
            team_rank=stop.focus.thread[0],
            team_size=int(geometry.get("threads", 1)),
        )

    def _read_league_rank(self, member: str) -> int | None:
        controller = self.require_controller()
        try:
            frames = self.python_frames()
            if frames:
                text = controller.args(frame=frames[-1].level).get(_cpp_name(member), "")
                position = TeamPosition.parse(text)
                if position is not None:
                    return position.league_rank
            stack = controller.stack(max_depth=64)
            entry = next((f for f in stack if "pk_cuda_entry" in (f.function or "")), None)
            if entry is not None:
                value = parse_gdb_value(controller.evaluate("pk_l", frame=entry.level))
                if isinstance(value, int):
                    return value
        except TargetError:
            pass
        return None

    def index_values(self) -> dict[str, Any]:
        """The launch's index variables in the focused thread (``j``, or ``i, j``)."""
        launch = self.launch
        if launch is None or launch.team_member:
            return {}
        names = [n for n in launch.index.split(", ") if n]
        controller = self.require_controller()
        frames = self.python_frames()
        level = frames[-1].level if frames else 0  # the workunit's: the outermost kernel frame
        values = {}
        for name in names:
            try:
                values[name] = parse_gdb_value(controller.evaluate(_cpp_name(name), frame=level))
            except TargetError:
                pass  # not in scope there
        return values

    def evaluate(self, op: str, **args: Any) -> dict[str, Any]:
        """A request to the evaluation helper (see :mod:`pkdb.device_eval.helper`)."""
        from .device_eval import EvaluationError

        try:
            return self.evaluator.request(op, **args)
        except EvaluationError as exc:
            raise TargetError(f"cannot evaluate on the GPU: {exc}") from None

    # -- threads -----------------------------------------------------------------------

    def block_size(self) -> int:
        geometry = self.launch.cuda_geometry if self.launch else {}
        return int(geometry.get("threads", 0)) or 1

    def thread_number(self, focus: CudaFocus) -> int:
        """The focused thread's number across the grid: its block's number (x fastest)
        times the threads per block, plus its number in the block (x fastest)."""
        return self.number_of_thread(focus.block, focus.thread)

    def number_of_thread(self, block: Dim3, thread: Dim3) -> int:
        """The number across the grid of ``thread`` of ``block`` (see :meth:`thread_number`)."""
        geometry = self.launch.cuda_geometry if self.launch else {}
        return _cuda_geometry().thread_number(geometry, block, thread)

    def thread_of_number(self, number: int) -> tuple[Dim3, Dim3]:
        geometry = self.launch.cuda_geometry if self.launch else {}
        return _cuda_geometry().thread_of_number(geometry, number)

    def thread_of_index(self, index: list[int]) -> tuple[Dim3, Dim3]:
        """The block and thread that run ``index`` (one value per index variable; a team
        kernel's league rank and team rank), from the launch's geometry (the mapping of
        :mod:`pkernels.runtime.cuda_geometry` for ranges and MDRange boxes)."""
        geometry = self.launch.cuda_geometry if self.launch else {}
        kind = geometry.get("kind")
        blocks = int(geometry.get("blocks", 1)) or 1
        threads = int(geometry.get("threads", 1)) or 1
        if kind == "team":
            league, team_rank = (index + [0])[:2]
            return (league % blocks, 0, 0), (team_rank, 0, 0)
        if kind == "scan":
            begins, ends = geometry.get("begins", [0]), geometry.get("ends", [0])
            if len(index) != len(begins):
                raise TargetError(f"this kernel has {len(begins)} index variable(s)")
            if not begins[0] <= index[0] < ends[0]:
                raise TargetError(
                    f"index {index[0]} is outside the launch's range {begins[0]}..{ends[0]}"
                )
            global_thread = (index[0] - begins[0]) // (int(geometry.get("chunk", 1)) or 1)
            return (global_thread // threads, 0, 0), (global_thread % threads, 0, 0)
        try:
            return _cuda_geometry().thread_of_box_index(geometry, index)
        except ValueError as exc:
            raise TargetError(str(exc)) from None

    def switch(self, block: Dim3, thread: Dim3) -> CudaFocus:
        focus = self.require_controller().switch_focus(block, thread)
        stop = self.require_stop()
        stop.focus = focus
        stop.frame = 0
        stop.listed = None
        stop.raised_at = None  # the exception's line was the stopped warp's
        return focus

    def source_line(self, frame: FrameInfo | None) -> str:
        if frame is None or not frame.file or not frame.line:
            return ""
        return linecache.getline(frame.file, frame.line).strip()


def _cuda_geometry() -> Any:
    """pkernels' index-to-thread mapping (imported when a GPU session needs it: the
    front end does not load pkernels otherwise)."""
    from pkernels.runtime import cuda_geometry

    return cuda_geometry


def _raised_at(controller: GpuController, event: StopEvent) -> tuple[str, int] | None:
    """The Python line of the CUDA exception ``event`` stopped at, when cuda-gdb knows it."""
    if event.reason != "signal-received" or not (event.signal_name or "").startswith(
        "CUDA_EXCEPTION"
    ):
        return None
    try:
        raised_at = controller.exception_line()
    except TargetError:
        return None
    return raised_at if raised_at and raised_at[0].endswith(".py") else None


def _interrupted(event: StopEvent) -> bool:
    """The stop is Ctrl-C's (cuda-gdb names SIGINT, or signal 0 for its own interrupt)."""
    return event.reason == "signal-received" and event.signal_name in ("SIGINT", "0")


def _cpp_name(py_name: str) -> str:
    from pkernels.translate.emit_exprs import cpp_name

    return cpp_name(py_name)
