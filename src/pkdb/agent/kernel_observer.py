"""The agent's side of kernel debugging: a pkernels dispatch observer.

At each dispatch it decides the build: a kernel with a pdb breakpoint on one of its
lines (or on a line of a ``@pk.function`` it calls) runs its debug build; any other
kernel runs the release build and gdb is never involved (breakpoint skipping). Before
a debug launch it asks the front end to attach gdb and set the breakpoints, and waits.
While the kernel runs or is held by gdb, the agent's reader thread (not a kernel
thread, so gdb's non-stop mode leaves it running) answers the front end's requests:
Python evaluation over the live arrays, breakpoint changes, ``finish``.

Kernel and host breakpoints are the same pdb breakpoints, so they share one numbering.
"""

from __future__ import annotations

import bdb
import functools
import importlib.machinery
import linecache
import os
import queue
import signal
import sys
import threading
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..protocol import EVALUATION_THREADS
from .clause_thread import in_clause
from .link import AgentLink

if TYPE_CHECKING:
    from ..kernel_protocol import KernelLaunch, KernelRequest

# The kernel messages (pkdb.kernel_protocol) are loaded only once a kernel is debugged:
# a program whose kernels run release builds never needs them. This is the JSON type
# of kernel_protocol.KernelRequest.
_KERNEL_REQUEST = "kernel-request"

_AGENT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_MAIN_THREAD_ID = threading.main_thread().ident  # compared with at every dispatch


def function_span(func: Callable[..., Any]) -> tuple[str, int, int]:
    """(absolute file, first line, last line) of a function's source."""
    code = func.__code__
    last = max((line for _, _, line in code.co_lines() if line is not None), default=0)
    return os.path.abspath(code.co_filename), code.co_firstlineno, max(last, code.co_firstlineno)


_spans_cache: dict[Any, list[tuple[str, int, int]]] = {}


def kernel_spans(workunit: Callable[..., Any]) -> list[tuple[str, int, int]]:
    """Line spans of a workunit and of every ``@pk.function`` it may call (transitively).

    Memoised per code object: this runs at every dispatch, and a function's code (hence
    its lines) never changes; a redefined function is a new code object.
    """
    key = (workunit.__code__, id(workunit.__globals__))
    spans = _spans_cache.get(key)
    if spans is None:
        spans = _spans_cache[key] = _collect_spans(workunit)
    return spans


def _collect_spans(workunit: Callable[..., Any]) -> list[tuple[str, int, int]]:
    from pkernels.api.decorators import marker_of

    spans, seen, todo = [], set(), [workunit]  # the workunit's span first
    while todo:
        func = todo.pop()
        if func in seen:
            continue
        seen.add(func)
        spans.append(function_span(func))
        for name in func.__code__.co_names:
            target = func.__globals__.get(name)
            marker = marker_of(target)
            if marker is not None and marker.kind == "function":
                todo.append(target)
    return spans


def _runs_release_code(dispatch: Any, kernel: Any) -> bool:
    """The launch starts in release code (a release build, or a HYBRID launch's fast
    half) with no debugger attached until a crash or Ctrl-C asks for one. (A launch with
    ``debug_indices`` has breakpoints in those indices: gdb attaches before it runs.)"""
    return not kernel.debug or (dispatch.fast_build is not None and dispatch.debug_indices is None)


def _live_eval() -> Any:
    from . import live_eval  # loaded for the first evaluation at a kernel stop

    return live_eval


def _untraced(method: Callable[..., Any]) -> Callable[..., Any]:
    """Run a dispatch hook with the host debugger's tracing off.

    The hooks run at every dispatch, inside the traced program; under tracing each of
    their calls costs a trip through bdb for nothing (they have no breakpoints). A hook
    that installs tracing itself (``finish``) keeps what it installed.
    """

    @functools.wraps(method)
    def run(*args: Any) -> Any:
        trace = sys.gettrace()
        if trace is None:
            return method(*args)
        sys.settrace(None)
        try:
            return method(*args)
        finally:
            if sys.gettrace() is None:
                sys.settrace(trace)

    return run


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
        # Requests that run the user's code (eval, parallel_launch) run on threads of
        # their own, started now so that they are among the agent's threads gdb leaves
        # running: a long evaluation (one the user stopped waiting for, say) must not
        # keep the reader thread, or the next evaluation, waiting.
        self._evaluations: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for k in range(EVALUATION_THREADS):
            threading.Thread(
                target=self._evaluate_loop, name=f"pkdb-agent-eval-{k}", daemon=True
            ).start()
        link.on(_KERNEL_REQUEST, self._on_request)

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

        self._crash_watch = CrashWatch(self._crashed)
        if threading.current_thread() is threading.main_thread():
            self._crash_watch.watch_interrupts(self._interrupted)
        self._crash_watch.start()
        hooks.add_observer(self)

    # -- dispatch hooks (main thread) --------------------------------------------------

    def dispatch_started(self, dispatch: Any) -> None:
        """Choose the build; and for a compiled kernel, leave the host debugger's tracing
        off until the dispatch ends (:meth:`dispatch_finished` turns it back on): the
        rest of the dispatch is pkernels' own Python, where no pdb breakpoint is, and
        bdb would otherwise see each of its calls (pdb alone does, at every dispatch)."""
        trace = sys.gettrace()
        sys.settrace(None)
        compiled = False
        try:
            compiled = self._choose_build(dispatch)
        finally:
            if compiled and trace is not None:
                dispatch.extra["pkdb_trace"] = trace
            elif sys.gettrace() is None:
                sys.settrace(trace)

    def _choose_build(self, dispatch: Any) -> bool:
        """Apply hotswap rules, pick the build; True for a compiled kernel dispatched by
        the program's main thread."""
        spaces = self._spaces
        if in_clause():
            # A parallel_launch clause: no hotswap, no stop; the checked release build,
            # so that an index out of range is the clause's error, not a crash of the
            # program (and of the clauses beside it).
            compiled = dispatch.space is not spaces.Debug
            if compiled and self.debugger.settings.get("parallel_launch_checks"):
                dispatch.build = self._build_modes.CHECKED
            return False
        # hotswap first: the build and the breakpoints are those of the kernel that runs.
        table = getattr(self.debugger, "_pkdb_hotswap", None)  # see hotswap.rules_of
        if table is not None:
            table.apply(dispatch, _say_in_program_output)
        if dispatch.space is spaces.Debug:
            return False  # plain Python: pdb's own breakpoints already stop in it
        if threading.get_ident() != _MAIN_THREAD_ID:
            # A kernel dispatched by `eval` at a kernel stop (on the agent's evaluation
            # thread) runs to completion, undebugged; as the checked release build, so
            # that an index out of range is the evaluation's error, not a crash of the
            # program (and at -O3: 5-10x sooner than the debug build).
            if self.active is not None and dispatch.space is not spaces.Debug:
                dispatch.build = self._build_modes.CHECKED
            return False
        breakpoints = self._breakpoints_in(kernel_spans(dispatch.workunit))
        settings = self.debugger.settings
        if dispatch.space is spaces.Cuda:
            # The debug build (NVRTC -G) when a breakpoint is in the kernel: cuda-gdb then
            # attaches before it runs (no fast half on the GPU); otherwise the release
            # build, with no debugger (breakpoint skipping).
            dispatch.extra["pkdb_breakpoints"] = breakpoints
            if breakpoints or settings.get("debug_all_kernels"):
                dispatch.build = self._build_modes.DEBUG
            return True
        modes = self._build_modes
        mask = None
        if self._stepping_in():
            # pdb's `step` at the dispatch line enters the kernel, as it enters a called
            # function: the debug build, whose first thread to begin its body stops
            # there. The host side then runs on as after `continue`: what happens after
            # the kernel is up to the commands given in it (`finish` stops after it).
            dispatch.extra["pkdb_step_in"] = True
            self.debugger._set_stopinfo(self.debugger.botframe, None, -1)
            dispatch.extra["pkdb_breakpoints"] = breakpoints
            dispatch.build = modes.DEBUG
            return True
        if breakpoints and settings.get("fast_debug_builds"):
            mask = _index_only_stops(dispatch, breakpoints)
            if mask is not None and not mask.any() and not settings.get("debug_all_kernels"):
                breakpoints, mask = [], None  # no index can stop: the release build, no gdb
        if mask is None and any(bp.get("condition") for bp in breakpoints):
            dispatch.extra["pkdb_slow_why"] = _why_gdb_tests(dispatch, breakpoints, settings)
        dispatch.extra["pkdb_breakpoints"] = breakpoints
        if mask is not None:
            # Only the indices where a condition holds can stop: they run in the debug
            # build, the others in release code (when the launch is proven in range).
            dispatch.build = modes.HYBRID
            dispatch.debug_indices = mask
        elif breakpoints:
            dispatch.build = modes.DEBUG
        elif settings.get("debug_all_kernels"):
            fast = settings.get("fast_debug_builds")
            dispatch.build = modes.HYBRID if fast else modes.DEBUG
        elif settings.get("checks"):
            # Release code where no check can fail, else the checked build, whose failed
            # check parks its thread until gdb is there (see crash_watch).
            dispatch.build = modes.GUARDED
        return True

    @_untraced
    def before_launch(self, dispatch: Any, kernel: Any) -> None:
        if dispatch.space is self._spaces.Cuda:
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
        self.link.request(self._launch_message(dispatch, kernel), interruptible=False)

    def _before_gpu_launch(self, dispatch: Any, kernel: Any) -> None:
        """A Cuda debug build about to run: have the front end attach cuda-gdb and set the
        breakpoints, telling it what GPU stops need (the launch's geometry, and what the
        evaluation helper maps: at a stop this process is held, this agent with it)."""
        if threading.get_ident() != _MAIN_THREAD_ID or not kernel.debug:
            return  # eval at a stop, a clause, a release build: no debugger
        from .device_snapshot import python_details, snapshot

        message = self._launch_message(dispatch, kernel)
        message.cuda_geometry = kernel.geometry(dispatch.policy, dispatch.kwargs)
        try:
            described = snapshot(dispatch.frame, dispatch.kwargs)
        except Exception as exc:  # noqa: BLE001 - no evaluation helper, but the stops work
            described = {"names": {}, "views": {}}
            _say_in_program_output(f"pkdb: GPU stops will not evaluate Python here: {exc}")
        message.device_names = described["names"]
        message.device_views = described["views"]
        details = python_details()
        message.python, message.python_path, message.cwd = (
            details["python"], details["python_path"], details["cwd"]
        )
        self.finish_requested = False
        self.active = dispatch
        self.link.request(message, interruptible=False)

    def _launch_message(self, dispatch: Any, kernel: Any, crash_signal: int = 0) -> KernelLaunch:
        from ..kernel_protocol import KernelLaunch

        workunit = dispatch.workunit
        views = {
            name: {"rank": value.ndim, "dtype": str(value.dtype), "shape": list(value.shape)}
            for name, value in dispatch.kwargs.items()
            if hasattr(value, "ndim") and hasattr(value, "shape")
        }
        _, first, last = function_span(workunit)
        return KernelLaunch(
            id=self.link.new_id(),
            pid=os.getpid(),
            kernel=workunit.__name__,
            space=dispatch.space.name.lower(),
            operation=dispatch.operation,
            filename=os.path.abspath(workunit.__code__.co_filename),
            first_line=first,
            last_line=last,
            library=str(kernel.library) if kernel.library is not None else "",
            source=str(kernel.source),
            index=", ".join(_index_names(workunit, getattr(dispatch.policy, "rank", 1))),
            views=views,
            breakpoints=dispatch.extra.get("pkdb_breakpoints", []),
            call_stack=_call_stack(dispatch.frame),
            agent_tids=[t.native_id for t in threading.enumerate() if t is not _main_thread()],
            variable_kinds=dict(kernel.entry.variable_kinds),
            subviews=_shown_subviews(workunit, kernel.entry.subviews),
            kernel_symbol=kernel.kernel_symbol,
            team_member=_team_member_name(workunit, dispatch.policy),
            crash_signal=crash_signal,
            fast_library=str(fast.library) if (fast := dispatch.fast_build) is not None else "",
            partial_debug=fast is not None and dispatch.debug_indices is not None,
            step_in=bool(dispatch.extra.get("pkdb_step_in")),
            slow_conditions=_slow_conditions(dispatch, kernel),
        )

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
        message = self._launch_message(dispatch, kernel, crash_signal=signal_number)
        message.breakpoints = []  # gdb only has to see the signal
        from .crash_watch import FAILED_CHECK

        if signal_number == FAILED_CHECK:
            # Its text is recorded already; -O3 code has no variables to read it from.
            record = kernel.fault_record()
            if record is not None:
                message.fault = record[1].decode(errors="replace")
        self.link.request(message, interruptible=False)

    @_untraced
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

    def _stepping_in(self) -> bool:
        """The host debugger is running pdb's ``step`` (bdb stops at the next line
        anywhere): a dispatch now is a call to step into."""
        debugger = self.debugger
        return (
            debugger.stopframe is None
            and debugger.botframe is not None
            and not debugger.quitting
        )

    def _stop_after_dispatch(self, frame: types.FrameType) -> None:
        """Stop at the next line of the call site, as pdb's ``next`` would have."""
        debugger = self.debugger
        debugger.set_next(frame)
        frame.f_trace = debugger.trace_dispatch
        sys.settrace(debugger.trace_dispatch)

    def _breakpoints_in(self, spans: list[tuple[str, int, int]]) -> list[dict[str, Any]]:
        found = []
        if not bdb.Breakpoint.bplist:
            return found
        for bp in bdb.Breakpoint.bpbynumber:
            if bp is None or not bp.enabled:
                continue
            file = os.path.abspath(bp.file)
            if any(file == f and first <= bp.line <= last for f, first, last in spans):
                found.append(_breakpoint_dict(bp))
        return found

    # -- requests while the kernel is held (reader thread) -----------------------------

    def _on_request(self, request: KernelRequest) -> None:
        from ..kernel_protocol import USER_CODE_ACTIONS

        if request.action in USER_CODE_ACTIONS:
            self._evaluations.put(request)
        else:
            self._answer(request)

    def _evaluate_loop(self) -> None:
        while True:
            self._answer(self._evaluations.get())

    def _answer(self, request: KernelRequest) -> None:
        from ..kernel_protocol import KernelReply

        try:
            ok, text, data = self._handle(request.action, _decoded(request.args))
        except BaseException as exc:  # noqa: BLE001 - exit() too: the front end awaits a reply
            ok, text, data = False, f"{type(exc).__name__}: {exc}", {}
        try:  # the channel encodes a message before it writes any of it
            self.link.send(KernelReply(reply_to=request.id, ok=ok, text=text, data=data))
        except (TypeError, ValueError) as exc:  # a reply JSON cannot carry: say so instead
            self.link.send(KernelReply(reply_to=request.id, ok=False, text=f"cannot answer: {exc}"))

    def _handle(self, action: str, args: dict[str, Any]) -> tuple[bool, str, dict[str, Any]]:
        debugger = self.debugger
        if action == "ping":  # the front end asks whether Python runs here at all
            return True, "", {}
        if action == "where":  # where the program's main thread runs (an MPI rank's)
            return True, "", _main_thread_place()
        if action == "eval":
            value = self._evaluate(args["expr"], args.get("locals", {}))
            if args.get("pretty"):
                import pprint

                return True, pprint.pformat(value), {}
            return True, repr(value), {}
        if action == "break":
            problem = _not_code(args["file"], args["line"])
            if problem:
                return False, problem, {}
            error = debugger.set_break(
                args["file"], args["line"], args.get("temporary", False), args.get("condition")
            )
            if error:
                return False, str(error), {}
            bp = debugger.get_breaks(args["file"], args["line"])[-1]
            self._widen_debug_indices(action)
            self.report_state()
            return True, "", _breakpoint_dict(bp)
        if action in ("finish", "finish_cancel"):
            self.finish_requested = action == "finish"
            return True, "", {}
        if action == "debug_code":  # the remaining indices in the debug build
            if self.active is not None:
                self.active.request_debug_code()
            return True, "", {}
        if action == "exec":
            text, writes = _live_eval().execute(self.active, args["source"], args.get("locals", {}))
            return True, text, {"kernel_writes": writes}
        if action == "frame_names":  # locals / args of a host frame
            pairs = _live_eval().frame_names(self.active, args["which"], args.get("locals", {}))
            return True, "", {"pairs": pairs}
        if action == "eval_many":
            values = _live_eval().evaluate_many(self.active, args["expr"], args["per_thread"])
            return True, "", {"values": values}
        if action in ("hotswap", "parallel_launch"):
            from . import live_commands

            return (*live_commands.handle_kernel_request(self, action, args), {})
        if action == "pdb_command":  # alias, unalias at a kernel stop: pdb's own
            ok, text = _pdb_command(debugger, args["line"])
            self.report_state()
            return ok, text, {}
        try:
            bp = debugger.get_bpbynumber(str(args["number"]))
        except ValueError as exc:  # pdb's own words, as host mode prints them
            return False, str(exc), {}
        if action == "clear":
            debugger.clear_bpbynumber(str(args["number"]))
        elif action == "disable":
            bp.disable()
        elif action == "enable":
            bp.enable()
        elif action == "condition":
            bp.cond = args.get("condition") or None
        elif action == "ignore":
            bp.ignore = max(0, int(args["count"]))
        elif action == "commands":  # pdb's `commands N`, typed at a kernel stop
            _define_commands(debugger, bp.number, args.get("lines", []))
        elif action == "hit":  # a kernel thread stopped there: pdb counts it as its own
            bp.hits += 1
            bp.ignore = 0  # gdb stops only once the ignore count is used up
        else:
            return False, f"unknown kernel request {action!r}", {}
        self._widen_debug_indices(action)
        self.report_state()
        return True, "", _breakpoint_dict(bp)

    def _widen_debug_indices(self, action: str) -> None:
        """A breakpoint set, enabled or given a new condition at a stop may hold at
        indices the launch runs in release code (its ``debug_indices`` came from the
        conditions before): run every remaining index in the debug build."""
        dispatch = self.active
        if action in ("break", "enable", "condition") and dispatch is not None:
            if dispatch.debug_indices is not None:
                dispatch.request_debug_code()

    def _evaluate(self, expr: str, kernel_locals: dict[str, Any]) -> Any:
        """``expr`` over the kernel's locals, its views (the caller's own arrays), and
        the call site's locals and globals -- the live program, no copies."""
        dispatch = self.active
        if dispatch is None:
            raise RuntimeError("no kernel is being debugged")
        return _live_eval().evaluate(dispatch, expr, kernel_locals)


#: pdb commands a kernel stop runs in the host debugger as they are (they only change
#: what pdb remembers).
_PDB_STATE_COMMANDS = ("alias", "unalias")


def _pdb_command(debugger: Any, line: str) -> tuple[bool, str]:
    """Run one of :data:`_PDB_STATE_COMMANDS` in pdb (reader thread; the main thread is
    held in the dispatch); pdb's output, and whether it printed no error."""
    import io

    if line.split(maxsplit=1)[0] not in _PDB_STATE_COMMANDS:
        return False, f"not a pdb command a kernel stop runs: {line!r}"
    saved, debugger.stdout = debugger.stdout, io.StringIO()
    try:
        debugger.onecmd(line)
        text = debugger.stdout.getvalue()
    finally:
        debugger.stdout = saved
    return not text.startswith("***"), text


def _define_commands(debugger: Any, number: int, lines: list[str]) -> None:
    """pdb's ``commands N`` with ``lines`` typed (``silent`` among them), as pdb's own
    command-list parser takes them."""
    debugger.commands_bnum = number
    debugger.commands[number] = []
    debugger.commands_doprompt[number] = True
    debugger.commands_silent[number] = False
    for line in lines:
        if debugger.handle_command_def(line):
            break


def _not_code(file: str, line: int) -> str | None:
    """What pdb's ``break`` says of a line that holds no code (blank, a comment, past the
    end of the file), else None."""
    text = linecache.getline(file, line)
    if not text and not os.path.exists(file):
        return f"No such file: {file}"
    if not text:
        return f"End of file: {file} has no line {line}"
    text = text.strip()
    if not text or text[0] == "#" or text[:3] in ('"""', "'''"):
        return "Blank or comment"
    return None


def _index_only_stops(dispatch: Any, breakpoints: list[dict[str, Any]]) -> Any:
    """For a range launch (for or reduce, on the CPU) whose breakpoints all sit in the
    workunit itself under conditions on its index and scalar arguments only: the indices
    where one can stop (see :mod:`.index_conditions`). Otherwise None."""
    from pkernels import RangePolicy

    policy = dispatch.policy
    if type(policy) is not RangePolicy or dispatch.operation not in ("for", "reduce"):
        return None
    workunit = dispatch.workunit
    file, first, last = kernel_spans(workunit)[0]  # the workunit's own, memoised
    if any(os.path.abspath(bp["file"]) != file or not first <= bp["line"] <= last
           for bp in breakpoints):  # fmt: skip
        return None  # a @pk.function's line: its names are not the kernel's
    from .index_conditions import debug_indices

    [index] = _index_names(workunit, 1)
    conditions = [bp.get("condition") for bp in breakpoints]
    return debug_indices(conditions, index, dispatch.kwargs, policy.begin, policy.end)


def _why_gdb_tests(dispatch: Any, breakpoints: list[dict[str, Any]], settings: Any) -> str:
    """Why pkdb could not evaluate the breakpoints' conditions for every index before
    the launch (its fast path; see :func:`_index_only_stops`): gdb tests them instead."""
    from pkernels import RangePolicy

    if not settings.get("fast_debug_builds"):
        return "'set fast_debug_builds off'"
    if type(dispatch.policy) is not RangePolicy or dispatch.operation not in ("for", "reduce"):
        return (
            "pkdb evaluates conditions before a launch only for a range parallel_for or "
            "parallel_reduce"
        )
    file, first, last = kernel_spans(dispatch.workunit)[0]
    if any(os.path.abspath(bp["file"]) != file or not first <= bp["line"] <= last
           for bp in breakpoints):  # fmt: skip
        return "a breakpoint is in a @pk.function, whose variables are not the workunit's"
    if not all(bp.get("condition") for bp in breakpoints):
        return "another breakpoint of this kernel has no condition: every index may stop"
    return "the condition reads more than the index and the scalar arguments"


def _slow_conditions(dispatch: Any, kernel: Any) -> dict[str, str]:
    """The launch's breakpoints whose condition gdb tests each time a thread reaches the
    line, by number (a string: JSON's keys), with why pkdb could not test it before."""
    why = dispatch.extra.get("pkdb_slow_why")
    if why is None and dispatch.debug_indices is not None and dispatch.fast_build is None:
        # The conditions were evaluated, but the launch could not be proven unable to
        # fail a check: its debug build runs every index, and gdb tests them there.
        entry = kernel.entry
        if entry.converts_floats:
            why = (
                "the kernel converts a float to an integer, which pkernels cannot prove "
                "safe before the launch (its indices run in the debug build)"
            )
        elif entry.proof is None:
            why = (
                "pkernels cannot prove this kernel's indices in range before the launch "
                "(an index read from a view, say), so all of them run in the debug build"
            )
        else:
            why = (
                "pkernels could not prove this launch's indices in range before it, so "
                "all of them run in the debug build"
            )
    if why is None:
        return {}
    conditional = dispatch.extra.get("pkdb_breakpoints", [])
    return {str(bp["number"]): why for bp in conditional if bp.get("condition")}


def _shown_subviews(workunit: Any, subviews: dict[str, Any]) -> dict[str, Any]:
    """The kernel's subviews, those of a method's fields named as the method writes them
    (``self.A``, which the kernel calls ``self_A``)."""
    if not isinstance(workunit, types.MethodType):
        return dict(subviews)
    prefix = workunit.__func__.__code__.co_varnames[0] + "_"
    return {
        name: {**d, "shown": d["view"].replace(prefix, prefix[:-1] + ".", 1)}
        if d["view"].startswith(prefix)
        else d
        for name, d in subviews.items()
    }


def _index_names(workunit: Any, rank: int) -> tuple[str, ...]:
    """The workunit's index parameters (after ``self`` for a workload method)."""
    first = 1 if isinstance(workunit, types.MethodType) else 0
    return workunit.__code__.co_varnames[first : first + rank]


def _decoded(args: dict[str, Any]) -> dict[str, Any]:
    """A request's kernel variables with team members as objects (see ``pkdb.teams``)."""
    from ..teams import decode_values

    if "locals" in args:
        args = {**args, "locals": decode_values(args["locals"])}
    if "per_thread" in args:
        args = {**args, "per_thread": [decode_values(v) for v in args["per_thread"]]}
    return args


def _team_member_name(workunit: Any, policy: Any) -> str:
    """A TeamPolicy workunit's team member parameter (its first); "" for other policies."""
    if type(policy).__name__ != "TeamPolicy":
        return ""
    return _index_names(workunit, 1)[0]


def _say_in_program_output(text: str) -> None:
    """A notice that belongs between the program's own output lines (a hotswap taking
    effect): written to the program's stdout, so it lands in order with its prints."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _breakpoint_dict(bp: bdb.Breakpoint) -> dict[str, Any]:
    return {
        "number": bp.number,
        "file": os.path.abspath(bp.file),
        "line": bp.line,
        "condition": bp.cond,
        "temporary": bool(bp.temporary),
        "enabled": bool(bp.enabled),
        "ignore": int(bp.ignore),
    }


_DEBUGGER_RUN_CODES = (bdb.Bdb.run.__code__, bdb.Bdb.runcall.__code__)


def host_frames(frame: types.FrameType | None) -> list[types.FrameType]:
    """The program's frames from the dispatch call site outwards (pkdb's, bdb's and
    frozen ones left out): what a kernel stop's `where` lists after the kernel frames."""
    frames = []
    while frame is not None:
        if frame.f_code in _DEBUGGER_RUN_CODES:
            break  # below the program: pdb's run(), then pkdb's own start-up
        raw = frame.f_code.co_filename
        filename = os.path.abspath(raw)
        hidden = raw.startswith("<") or filename.startswith(_AGENT_DIR)
        if not (hidden or filename == os.path.abspath(bdb.__file__)):
            frames.append(frame)
        frame = frame.f_back
    return frames


def _call_stack(frame: types.FrameType | None) -> list[list[Any]]:
    """The program's frames from the outermost to the dispatch call site."""
    return [
        [os.path.abspath(f.f_code.co_filename), f.f_lineno, f.f_code.co_name]
        for f in reversed(host_frames(frame))
    ]


def _main_thread() -> threading.Thread:
    return threading.main_thread()


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


def _main_thread_place() -> dict[str, Any]:
    """The innermost frame of the program's own code on the main thread (frames of
    pkdb, pkernels, the standard library and installed packages skipped): ``file``,
    ``line``, ``function``; empty when there is none."""
    import sysconfig

    frame = sys._current_frames().get(threading.main_thread().ident or 0)
    skipped = (
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),  # pkdb
        os.path.dirname(os.path.abspath(sys.modules["pkernels"].__file__ or ""))
        if "pkernels" in sys.modules
        else "\0",
        *(sysconfig.get_paths()[name] for name in ("stdlib", "purelib", "platlib")),
    )
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(skipped) and not path.startswith("<"):
            place = {"file": path, "line": frame.f_lineno, "function": frame.f_code.co_name}
            callee = _callee(frame, path)
            if callee:
                place["call"] = callee
            return place
        frame = frame.f_back
    return {}


def _callee(frame: Any, path: str) -> str:
    """What the call ``frame`` is in names (``comm.Sendrecv``), from the source columns
    of its call instruction; "" when the frame is not in a call."""
    import dis

    for instruction in dis.get_instructions(frame.f_code):
        if instruction.offset == frame.f_lasti:
            break
    else:
        return ""
    where = instruction.positions
    if not instruction.opname.startswith("CALL") or where is None or where.lineno is None:
        return ""
    if where.lineno != where.end_lineno or where.col_offset is None:
        return ""
    source = linecache.getline(path, where.lineno).encode()  # columns count UTF-8 bytes
    text = source[where.col_offset : where.end_col_offset].decode("utf-8", "replace")
    callee = text.split("(", 1)[0].strip()
    return callee if callee.replace(".", "").replace("_", "").isalnum() else ""
