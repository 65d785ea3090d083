"""The front end's requests while a kernel is held (or runs), answered in the agent:
Python evaluation over the live arrays, breakpoint changes, ``finish``, pdb's own
state commands, ``hotswap`` and ``parallel_launch``.

Each action is one handler in :data:`HANDLERS`, taking the observer and the request's
arguments and returning ``(ok, text, data)``. The reader thread answers them, except
those that run the user's code, which run on evaluation threads of their own.
"""

from __future__ import annotations

import bdb
import linecache
import os
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..protocol import EVALUATION_THREADS
from .kernel_lines import breakpoint_dict

if TYPE_CHECKING:
    from ..kernel_protocol import KernelRequest
    from .kernel_observer import KernelObserver

# The kernel messages (pkdb.kernel_protocol) are loaded only once a kernel is debugged:
# a program whose kernels run release builds never needs them. This is the JSON type
# of kernel_protocol.KernelRequest.
_KERNEL_REQUEST = "kernel-request"

#: A handler's answer: whether it succeeded, its text, and data for the front end.
Reply = tuple[bool, str, dict[str, Any]]
Handler = Callable[["KernelObserver", dict[str, Any]], Reply]


class KernelRequests:
    """Takes the kernel requests off the observer's link and answers each one."""

    def __init__(self, observer: KernelObserver) -> None:
        self.observer = observer
        # Requests that run the user's code (eval, parallel_launch) run on threads of
        # their own, started now so that they are among the agent's threads gdb leaves
        # running: a long evaluation (one the user stopped waiting for, say) must not
        # keep the reader thread, or the next evaluation, waiting.
        self._evaluations: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for k in range(EVALUATION_THREADS):
            threading.Thread(
                target=self._evaluate_loop, name=f"pkdb-agent-eval-{k}", daemon=True
            ).start()
        observer.link.on(_KERNEL_REQUEST, self._on_request)

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

        link = self.observer.link
        try:
            ok, text, data = handle(self.observer, request.action, decoded(request.args))
        except BaseException as exc:  # noqa: BLE001 - exit() too: the front end awaits a reply
            ok, text, data = False, f"{type(exc).__name__}: {exc}", {}
        try:  # the channel encodes a message before it writes any of it
            link.send(KernelReply(reply_to=request.id, ok=ok, text=text, data=data))
        except (TypeError, ValueError) as exc:  # a reply JSON cannot carry: say so instead
            link.send(KernelReply(reply_to=request.id, ok=False, text=f"cannot answer: {exc}"))


def handle(observer: KernelObserver, action: str, args: dict[str, Any]) -> Reply:
    """Answer one request by its action's handler."""
    handler = HANDLERS.get(action)
    if handler is None:
        return False, f"unknown kernel request {action!r}", {}
    return handler(observer, args)


def _live_eval() -> Any:
    from . import live_eval  # loaded for the first evaluation at a kernel stop

    return live_eval


# -- what runs the user's code, or reads the program ------------------------------------


def _ping(observer: KernelObserver, args: dict[str, Any]) -> Reply:
    return True, "", {}  # the front end asks whether Python runs here at all


def _where(observer: KernelObserver, args: dict[str, Any]) -> Reply:
    from .program_place import main_thread_place

    return True, "", main_thread_place()  # where the main thread runs (an MPI rank's)


def _eval(observer: KernelObserver, args: dict[str, Any]) -> Reply:
    value = evaluate(observer, args["expr"], args.get("locals", {}))
    if args.get("pretty"):
        import pprint

        return True, pprint.pformat(value), {}
    return True, repr(value), {}


def _exec(observer: KernelObserver, args: dict[str, Any]) -> Reply:
    text, writes = _live_eval().execute(observer.active, args["source"], args.get("locals", {}))
    return True, text, {"kernel_writes": writes}


def _frame_names(observer: KernelObserver, args: dict[str, Any]) -> Reply:
    """``locals`` / ``args`` of a host frame."""
    live_eval = _live_eval()
    pairs = live_eval.frame_names(observer.active, args["which"], args.get("locals", {}))
    return True, "", {"pairs": pairs}


def _eval_many(observer: KernelObserver, args: dict[str, Any]) -> Reply:
    values = _live_eval().evaluate_many(observer.active, args["expr"], args["per_thread"])
    return True, "", {"values": values}


def _live_command(action: str) -> Handler:
    """``hotswap`` / ``parallel_launch`` typed at a kernel stop."""

    def run(observer: KernelObserver, args: dict[str, Any]) -> Reply:
        from . import live_commands

        return (*live_commands.handle_kernel_request(observer, action, args), {})

    return run


def evaluate(observer: KernelObserver, expr: str, kernel_locals: dict[str, Any]) -> Any:
    """``expr`` over the kernel's locals, its views (the caller's own arrays), and
    the call site's locals and globals -- the live program, no copies."""
    dispatch = observer.active
    if dispatch is None:
        raise RuntimeError("no kernel is being debugged")
    return _live_eval().evaluate(dispatch, expr, kernel_locals)


# -- the launch's course ---------------------------------------------------------------


def _finish(asked: bool) -> Handler:
    def run(observer: KernelObserver, args: dict[str, Any]) -> Reply:
        observer.finish_requested = asked
        return True, "", {}

    return run


def _debug_code(observer: KernelObserver, args: dict[str, Any]) -> Reply:
    """The remaining indices in the debug build."""
    if observer.active is not None:
        observer.active.request_debug_code()
    return True, "", {}


def _pdb_state_command(observer: KernelObserver, args: dict[str, Any]) -> Reply:
    """alias, unalias at a kernel stop: pdb's own."""
    ok, text = _pdb_command(observer.debugger, args["line"])
    observer.report_state()
    return ok, text, {}


# -- breakpoints ------------------------------------------------------------------------


def _widen_debug_indices(observer: KernelObserver) -> None:
    """A breakpoint set, enabled or given a new condition at a stop may hold at
    indices the launch runs in release code (its ``debug_indices`` came from the
    conditions before): run every remaining index in the debug build."""
    dispatch = observer.active
    if dispatch is not None and dispatch.debug_indices is not None:
        dispatch.request_debug_code()


def _break(observer: KernelObserver, args: dict[str, Any]) -> Reply:
    debugger = observer.debugger
    problem = _not_code(args["file"], args["line"])
    if problem:
        return False, problem, {}
    error = debugger.set_break(
        args["file"], args["line"], args.get("temporary", False), args.get("condition")
    )
    if error:
        return False, str(error), {}
    bp = debugger.get_breaks(args["file"], args["line"])[-1]
    _widen_debug_indices(observer)
    observer.report_state()
    return True, "", breakpoint_dict(bp)


#: A change to the breakpoint a request names by number.
Change = Callable[[Any, bdb.Breakpoint, dict[str, Any]], None]


def _numbered(change: Change, widens: bool = False) -> Handler:
    """The handler of a request on breakpoint ``args["number"]``: pdb's own error for a
    number it has no breakpoint by; else ``change``, and the breakpoint as it is now.
    ``widens``: the change may let indices stop that the launch runs in release code."""

    def run(observer: KernelObserver, args: dict[str, Any]) -> Reply:
        debugger = observer.debugger
        try:
            # pdb's get_bpbynumber takes the number as typed (its own errors for text)
            bp = debugger.get_bpbynumber(str(args["number"]))  # type: ignore[arg-type]
        except ValueError as exc:  # pdb's own words, as host mode prints them
            return False, str(exc), {}
        change(debugger, bp, args)
        if widens:
            _widen_debug_indices(observer)
        observer.report_state()
        return True, "", breakpoint_dict(bp)

    return run


def _clear(debugger: Any, bp: bdb.Breakpoint, args: dict[str, Any]) -> None:
    debugger.clear_bpbynumber(str(args["number"]))


def _disable(debugger: Any, bp: bdb.Breakpoint, args: dict[str, Any]) -> None:
    bp.disable()


def _enable(debugger: Any, bp: bdb.Breakpoint, args: dict[str, Any]) -> None:
    bp.enable()


def _condition(debugger: Any, bp: bdb.Breakpoint, args: dict[str, Any]) -> None:
    bp.cond = args.get("condition") or None


def _ignore(debugger: Any, bp: bdb.Breakpoint, args: dict[str, Any]) -> None:
    bp.ignore = max(0, int(args["count"]))


def _commands(debugger: Any, bp: bdb.Breakpoint, args: dict[str, Any]) -> None:
    """pdb's ``commands N``, typed at a kernel stop."""
    _define_commands(debugger, bp.number, args.get("lines", []))


def _hit(debugger: Any, bp: bdb.Breakpoint, args: dict[str, Any]) -> None:
    """A kernel thread stopped there: pdb counts it as its own."""
    bp.hits += 1
    bp.ignore = 0  # gdb stops only once the ignore count is used up


HANDLERS: dict[str, Handler] = {
    "ping": _ping,
    "where": _where,
    "eval": _eval,
    "exec": _exec,
    "frame_names": _frame_names,
    "eval_many": _eval_many,
    "hotswap": _live_command("hotswap"),
    "parallel_launch": _live_command("parallel_launch"),
    "finish": _finish(True),
    "finish_cancel": _finish(False),
    "debug_code": _debug_code,
    "pdb_command": _pdb_state_command,
    "break": _break,
    "clear": _numbered(_clear),
    "disable": _numbered(_disable),
    "enable": _numbered(_enable, widens=True),
    "condition": _numbered(_condition, widens=True),
    "ignore": _numbered(_ignore),
    "commands": _numbered(_commands),
    "hit": _numbered(_hit),
}


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


def decoded(args: dict[str, Any]) -> dict[str, Any]:
    """A request's kernel variables with team members as objects (see ``pkdb.teams``)."""
    from ..teams import decode_values

    if "locals" in args:
        args = {**args, "locals": decode_values(args["locals"])}
    if "per_thread" in args:
        args = {**args, "per_thread": [decode_values(v) for v in args["per_thread"]]}
    return args
