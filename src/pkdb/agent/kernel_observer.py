"""The agent's side of kernel debugging: a pkernels dispatch observer.

At each dispatch it decides the build: a kernel with a pdb breakpoint on one of its
lines (or on a line of a ``@pk.function`` it calls) runs its debug build; any other
kernel runs the release build and gdb is never involved (breakpoint skipping). Before
a debug launch it asks the front end to attach gdb and set the breakpoints, and waits.
While the kernel runs or is held by gdb, the agent's reader thread (not a kernel
thread, so gdb's non-stop mode leaves it running) answers the front end's requests:
Python evaluation over the live arrays, breakpoint changes, ``finish``
(:mod:`.kernel_requests`).

Kernel and host breakpoints are the same pdb breakpoints, so they share one numbering.
"""

from __future__ import annotations

import bdb
import importlib.machinery
import signal
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

from . import dispatch_tracing
from .clause_thread import in_clause
from .kernel_lines import breakpoints_in, kernel_spans
from .kernel_requests import KernelRequests
from .launch_message import launch_message
from .link import AgentLink
from .stop_indices import index_only_stops, why_gdb_tests

_MAIN_THREAD_ID = threading.main_thread().ident  # compared with at every dispatch


def _runs_release_code(dispatch: Any, kernel: Any) -> bool:
    """The launch starts in release code (a release build, or a HYBRID launch's fast
    half) with no debugger attached until a crash or Ctrl-C asks for one. (A launch with
    ``debug_indices`` has breakpoints in those indices: gdb attaches before it runs.)"""
    return not kernel.debug or (dispatch.fast_build is not None and dispatch.debug_indices is None)


class KernelObserver:
    """Registered with ``pkernels.hooks`` once the program imports pkernels."""

    def __init__(self, debugger: bdb.Bdb, link: AgentLink, report_state: Callable[[], None]):
        self.debugger = debugger
        self.link = link
        self.report_state = report_state
        self.active: Any = None  # the Dispatch being debugged
        # The compiled kernel running now (dispatch, kernel), for a crash in a release build.
        self.running: tuple[Any, Any] | None = None
        self._parking = False  # whether crashing threads are parked now (release builds)
        self._crash_watch: Any = None
        self.finish_requested = False
        self.requests = KernelRequests(self)  # answered while a kernel is held

    # -- installation ----------------------------------------------------------------

    def install(self) -> None:
        """Observe dispatches as soon as ``pkernels`` is imported (now, if it is)."""
        if "pkernels" in sys.modules:
            self._register()
        else:
            sys.meta_path.insert(0, _ImportWatcher("pkernels", self._register))

    def _register(self) -> None:
        from pkernels.api.spaces import ExecutionSpace
        from pkernels.runtime import hooks

        from .crash_watch import CrashWatch

        # What the dispatch hooks compare with, kept at hand: they run at every dispatch
        # (an import statement there costs about a microsecond each time).
        self._spaces = ExecutionSpace
        self._build_modes = hooks.BuildMode
        self._guarded = hooks.BuildMode.GUARDED  # (an enum member: a class look-up each time)

        self._crash_watch = CrashWatch(self._crashed)
        if threading.current_thread() is threading.main_thread():
            self._crash_watch.watch_interrupts(self._interrupted)
        self._crash_watch.start()
        dispatch_tracing.install()
        hooks.add_observer(self)

    # -- dispatch hooks (main thread) --------------------------------------------------

    def dispatch_started(self, dispatch: Any) -> None:
        """Choose the build; and for a compiled kernel, leave the host debugger's tracing
        off until the dispatch ends: the rest of the dispatch is pkernels' own Python,
        where no pdb breakpoint is, and bdb would otherwise see each of its calls (pdb
        alone does, at every dispatch). How differs by Python version: see
        :mod:`.dispatch_tracing`."""
        paused = dispatch_tracing.pause()
        compiled = False
        try:
            compiled = self._choose_build(dispatch)
        finally:
            dispatch_tracing.after_choice(dispatch, paused, compiled)

    def _choose_build(self, dispatch: Any) -> bool:
        """Apply hotswap rules, pick the build; True for a compiled kernel dispatched by
        the program's main thread."""
        spaces = self._spaces
        if in_clause():
            # A parallel_launch clause: no hotswap, no stop; the checked release build,
            # so that an index out of range is the clause's error, not a crash of the
            # program (and of the clauses beside it).
            compiled = dispatch.policy.space is not spaces.Debug
            if compiled and self.debugger.settings.get("parallel_launch_checks"):
                dispatch.build = self._build_modes.CHECKED
            return False
        # hotswap first: the build and the breakpoints are those of the kernel that runs.
        table = getattr(self.debugger, "_pkdb_hotswap", None)  # see hotswap.rules_of
        if table is not None:
            table.apply(dispatch, _say_in_program_output)
        space = dispatch.policy.space  # (Dispatch.space: a property, a call)
        if space is spaces.Debug:
            return False  # plain Python: pdb's own breakpoints already stop in it
        if threading.get_ident() != _MAIN_THREAD_ID:
            # A kernel dispatched by `eval` at a kernel stop (on the agent's evaluation
            # thread) runs to completion, undebugged; as the checked release build, so
            # that an index out of range is the evaluation's error, not a crash of the
            # program (and at -O3: 5-10x sooner than the debug build).
            if self.active is not None:
                dispatch.build = self._build_modes.CHECKED
            return False
        breakpoints = breakpoints_in(kernel_spans(dispatch.workunit))
        settings = self.debugger.settings
        if space is spaces.Cuda:
            # The debug build (NVRTC -G) when a breakpoint is in the kernel: cuda-gdb then
            # attaches before it runs; otherwise no debugger (breakpoint skipping). Under
            # debug_all_kernels a kernel without breakpoints is HYBRID (with
            # fast_debug_builds): the release build where its bounds proof holds (no check
            # can fail), else the debug build. With checks on (the default) it is GUARDED:
            # the release build where proven, else the checked one, whose failed check
            # raises the Kernel*Error naming line, block and thread when the launch ends.
            dispatch.extra["pkdb_breakpoints"] = breakpoints
            modes = self._build_modes
            if breakpoints:
                dispatch.build = modes.DEBUG
            elif settings.get("debug_all_kernels"):
                fast = settings.get("fast_debug_builds")
                dispatch.build = modes.HYBRID if fast else modes.DEBUG
            elif settings.get("checks"):
                dispatch.build = modes.GUARDED
            return True
        modes = self._build_modes
        mask = None
        debugger = self.debugger
        if debugger.stopframe is None and debugger.botframe is not None and not debugger.quitting:
            # The host debugger runs pdb's `step` (bdb stops at the next line anywhere):
            # at the dispatch line it enters the kernel, as it enters a called
            # function: the debug build, whose first thread to begin its body stops
            # there. The host side then runs on as after `continue`: what happens after
            # the kernel is up to the commands given in it (`finish` stops after it).
            dispatch.extra["pkdb_step_in"] = True
            debugger._set_stopinfo(debugger.botframe, None, -1)
            dispatch.extra["pkdb_breakpoints"] = breakpoints
            dispatch.build = modes.DEBUG
            return True
        if breakpoints and settings.get("fast_debug_builds"):
            mask = index_only_stops(dispatch, breakpoints)
            if mask is not None and not mask.any() and not settings.get("debug_all_kernels"):
                breakpoints, mask = [], None  # no index can stop: the release build, no gdb
        if mask is None and breakpoints and any(bp.get("condition") for bp in breakpoints):
            dispatch.extra["pkdb_slow_why"] = why_gdb_tests(dispatch, breakpoints, settings)
        dispatch.extra["pkdb_breakpoints"] = breakpoints
        if mask is not None:
            # Only the indices where a condition holds can stop: they run in the debug
            # build, the others in release code (when the launch is proven in range).
            dispatch.build = modes.HYBRID
            dispatch.debug_indices = mask
        elif breakpoints:
            dispatch.build = modes.DEBUG
        elif settings.get("debug_all_kernels"):
            # With fast_debug_builds: release code where proven; else the checked build
            # first, run again in the debug build (gdb attached) only if a check fails.
            fast = settings.get("fast_debug_builds")
            dispatch.build = modes.HYBRID if fast else modes.DEBUG
            dispatch.check_first = bool(fast)
        elif settings.get("checks"):
            # Release code where no check can fail, else the checked build, whose failed
            # check parks its thread until gdb is there (see crash_watch).
            dispatch.build = self._guarded
        return True

    @dispatch_tracing.untraced
    def before_launch(self, dispatch: Any, kernel: Any) -> None:
        if dispatch.policy.space is self._spaces.Cuda:
            self._before_gpu_launch(dispatch, kernel)
            return
        if threading.get_ident() != _MAIN_THREAD_ID:
            # eval at a kernel stop, a parallel_launch clause: run undebugged. A failed
            # check is recorded in the kernel library, whose record the held launch
            # shares when it is the same kernel: keep the held launch's, to put back once
            # this launch has read its own (see dispatch_finished).
            if self.active is not None:
                dispatch.extra["pkdb_fault_record"] = (kernel, kernel.fault_record())
            return
        self.running = (dispatch, kernel)
        # Release code runs with no debugger attached: a crash parks until gdb is there.
        release = _runs_release_code(dispatch, kernel)
        if release is not self._parking:  # _park_crashes checks too: one call less here
            self._park_crashes(release)
        if release:
            previous = self.debugger.guard_sigint_for_kernel()  # see _interrupted
            if previous is not None:
                dispatch.extra["pkdb_sigint"] = previous
            return
        if (
            not dispatch.extra.get("pkdb_breakpoints")
            and not dispatch.extra.get("pkdb_step_in")
            and not self.debugger.settings.get("debug_all_kernels")
        ):
            return
        self.finish_requested = False
        self.active = dispatch
        self.link.request(launch_message(self.link, dispatch, kernel), interruptible=False)

    def _before_gpu_launch(self, dispatch: Any, kernel: Any) -> None:
        """A Cuda debug build about to run: have the front end attach cuda-gdb and set the
        breakpoints, telling it what GPU stops need (the launch's geometry, and what the
        evaluation helper maps: at a stop this process is held, this agent with it)."""
        if threading.get_ident() != _MAIN_THREAD_ID or not kernel.debug:
            return  # eval at a stop, a clause, a release build: no debugger
        from .device_snapshot import python_details, snapshot
        from .launch_message import pool_arguments, view_shapes, workload_fields

        message = launch_message(self.link, dispatch, kernel)
        message.cuda_geometry = kernel.geometry(dispatch.policy, dispatch.kwargs)
        workload = workload_fields(dispatch.workunit)
        if workload is not None:
            # A workload's views are device views too (kernel parameters self_<field>):
            # shown by shape, never read element by element through cuda-gdb.
            owner, fields = workload
            message.views.update(view_shapes({f"{owner}_{n}": v for n, v in fields.items()}))
        try:
            described = snapshot(
                dispatch.frame, dispatch.kwargs, pool_arguments(dispatch), workload
            )
        except Exception as exc:  # noqa: BLE001 - no evaluation helper, but the stops work
            described = {"names": {}, "views": {}}
            _say_in_program_output(f"pkdb: GPU stops will not evaluate Python here: {exc}")
        message.device_names = described["names"]
        message.device_views = described["views"]
        details = python_details()
        message.python, message.python_path, message.cwd = (
            details["python"],
            details["python_path"],
            details["cwd"],
        )
        self.finish_requested = False
        self.active = dispatch
        self.link.request(message, interruptible=False)

    def _park_crashes(self, on: bool) -> None:
        """Have the kernel runtime park a crashing thread (release builds: no debugger is
        attached to see the signal), or not (gdb attached)."""
        if on == self._parking:
            return
        watch = self._crash_watch
        if watch is None or not watch.ready.wait(timeout=30):  # built once, at the start
            return
        library = watch.library
        if library is not None:
            library.pk_crash_parking(1 if on else 0)
            self._parking = on

    def _interrupted(self) -> None:
        """Ctrl-C while a compiled kernel runs (the crash-watch thread): a release build
        has no debugger attached; have the front end attach gdb and interrupt it."""
        running = self.running
        if running is None or self.active is not None:
            return  # host code (Python's handler acts), or gdb is attached already
        dispatch, kernel = running
        if not _runs_release_code(dispatch, kernel):
            return
        self.debugger.sigint_taken_by_kernel = True  # the kernel stop is the Ctrl-C's stop
        if dispatch.fast_build is not None:
            # A HYBRID launch in release code: its threads take their next indices in
            # the debug build from now on, and gdb stops the first to begin one there
            # (KernelLaunch.stop_at_next_index).
            dispatch.request_debug_code()
        self._crashed(signal.SIGINT, 0)

    def _crashed(self, signal_number: int, thread_id: int) -> None:
        """A thread got a fatal signal in a release build (the crash-watch thread; the
        crashed thread is parked): have the front end attach gdb to the kernel, then let
        the thread go on, to fault again under gdb."""
        running = self.running
        if running is None:
            return  # not in a kernel: the program dies of it, as without pkdb
        if self.active is not None:
            # gdb is attached to this launch already (another thread's crash brought it):
            # released, this thread faults again under gdb, which stops it. A second
            # launch message would have the front end resume every thread, the crashed
            # ones with their signal, which kills the program.
            return
        dispatch, kernel = running
        self.finish_requested = False
        self.active = dispatch
        message = launch_message(self.link, dispatch, kernel, crash_signal=signal_number)
        message.breakpoints = []  # gdb only has to see the signal
        from .crash_watch import FAILED_CHECK

        if signal_number == FAILED_CHECK:
            # Its text is recorded already; -O3 code has no variables to read it from.
            record = kernel.fault_record()
            if record is not None:
                message.fault = record[1].decode(errors="replace")
        self.link.request(message, interruptible=False)

    @dispatch_tracing.untraced
    def dispatch_finished(self, dispatch: Any, result: Any, error: BaseException | None) -> None:
        saved = dispatch.extra.pop("pkdb_fault_record", None)
        if saved is not None:
            kernel, record = saved
            kernel.restore_fault_record(record)
        handler = dispatch.extra.pop("pkdb_sigint", None)
        if handler is not None:
            signal.signal(signal.SIGINT, handler)  # a Ctrl-C the kernel took was skipped
        trace = dispatch.extra.pop("pkdb_trace", None)
        try:
            self._finished(dispatch, error)
        finally:
            if trace is not None and sys.gettrace() is None:
                sys.settrace(trace)  # off since dispatch_started

    def _finished(self, dispatch: Any, error: BaseException | None) -> None:
        if self.running is not None and self.running[0] is dispatch:
            self.running = None
        if self.active is not dispatch:
            return
        self.active = None
        from ..kernel_protocol import KernelFinished  # a kernel was debugged: loaded by now

        text = f"{type(error).__name__}: {error}" if error is not None else None
        finished = KernelFinished(kernel=dispatch.workunit.__name__, error=text)
        if dispatch.space is self._spaces.Cuda:
            # A GPU stop held this agent too: the front end says now whether `finish`
            # was asked for (and brings pdb's breakpoints up to date meanwhile).
            finished.id = self.link.new_id()
            reply = self.link.request(finished, interruptible=False)
            self.finish_requested = bool(getattr(reply, "stop_after", False))
        else:
            self.link.send(finished)
        if self.finish_requested and dispatch.frame is not None:
            self._stop_after_dispatch(dispatch.frame)

    def _stop_after_dispatch(self, frame: types.FrameType) -> None:
        """Stop at the next line of the call site, as pdb's ``next`` would have."""
        debugger = self.debugger
        debugger.set_next(frame)
        frame.f_trace = debugger.trace_dispatch
        sys.settrace(debugger.trace_dispatch)


def _say_in_program_output(text: str) -> None:
    """A notice that belongs between the program's own output lines (a hotswap taking
    effect): written to the program's stdout, so it lands in order with its prints."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


class _ImportWatcher:
    """Calls ``callback`` right after the package ``name`` has been imported (a
    ``sys.meta_path`` finder: importlib needs only its find_spec)."""

    def __init__(self, name: str, callback: Callable[[], None]) -> None:
        self.name = name
        self.callback = callback

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        original = spec.loader.exec_module
        callback = self.callback

        def exec_module(module: types.ModuleType) -> None:
            original(module)
            callback()

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
