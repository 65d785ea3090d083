"""How the host debugger's tracing is kept out of a kernel dispatch, and why that depends
on the Python version.

A dispatch runs pkernels' Python and the dispatch hooks (:mod:`.kernel_observer`), where
no pdb breakpoint can be (pdb skips those modules); traced, each of their calls would be
a trip through bdb for nothing, at every dispatch.

* Where pkernels' C boundary is built (the usual case), the ``parallel_*`` call itself
  holds the calling thread's tracing suspended while it runs
  (:func:`pkernels.runtime.hooks.untraced_dispatches`, ``PyThreadState_EnterTracing``):
  each trace event is dropped at its first check, from the call's first line on, the
  trace function stays installed and nothing global changes. A dispatch that runs the
  program's own Python (the Debug space, a parallel_launch clause, another thread's)
  resumes it once its build is chosen.
* Otherwise the hooks switch ``sys.settrace`` off for the dispatch and back on after it.
  Up to Python 3.11 that swaps a pointer. From 3.12 ``sys.settrace`` is built on
  ``sys.monitoring``: while any thread traces, all code is instrumented for the trace
  events; turning the last tracing thread off and on re-instruments the code that runs
  next, and code kept instrumented still pays a call for each line, jump and function
  call it runs, traced or not (~30 ns each). Switching at every dispatch made a heat.py
  dispatch under pkdb 94 us against pdb's 32 us (``bench/bench_dispatch_threads.py``),
  with the instrumentation kept in place by a parked thread (:class:`_Keeper`, 3.12+
  only) 50 us; suspended, 33 us.
"""

from __future__ import annotations

import functools
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

#: Whether switching tracing off and on re-instruments code (see the module docstring).
_REINSTRUMENTS = sys.version_info >= (3, 12)

_suspended_calls = False  # set by install(): pkernels' calls suspend tracing themselves
_resume_tracing: Callable[[], bool] = lambda: False  # noqa: E731 - pkernels' C functions,
_suspend_tracing: Callable[[], bool] = lambda: False  # noqa: E731 - once installed


def install() -> None:
    """Choose how (called once pkernels is imported, before its first dispatch)."""
    global _suspended_calls, _resume_tracing, _suspend_tracing
    from pkernels.runtime import hooks

    _suspended_calls = hooks.untraced_dispatches(True)
    _resume_tracing, _suspend_tracing = hooks.resume_tracing, hooks.suspend_tracing


def pause() -> Any:
    """At the start of ``dispatch_started``: the rest of the dispatch untraced. Returns
    what :func:`after_choice` needs to undo it."""
    if _suspended_calls:
        return None  # the parallel_* call holds this thread's tracing suspended already
    trace = sys.gettrace()
    _keep_instrumented(trace is not None)  # switching below then stays cheap on 3.12+
    sys.settrace(None)
    return trace


def after_choice(dispatch: Any, paused: Any, compiled: bool) -> None:
    """At the end of ``dispatch_started``: a compiled kernel's dispatch stays untraced to
    its end (``dispatch_finished`` puts back ``dispatch.extra["pkdb_trace"]``); any other
    (the program's own Python may run in it) is traced from here on."""
    if _suspended_calls:
        if not compiled:
            _resume_tracing()
        return  # the parallel_* call ends the suspension when it returns
    if compiled and paused is not None:
        dispatch.extra["pkdb_trace"] = paused
    elif sys.gettrace() is None:
        sys.settrace(paused)


def untraced(method: Callable[..., Any]) -> Callable[..., Any]:
    """Run a dispatch hook with the host debugger's tracing off (a no-op where the
    dispatch is untraced already). A hook that installs tracing itself (``finish``)
    keeps what it installed."""

    @functools.wraps(method)
    def run(*args: Any) -> Any:
        if _suspended_calls:
            suspended = _suspend_tracing()  # False: suspended already (a compiled kernel)
            try:
                return method(*args)
            finally:
                if suspended:
                    _resume_tracing()
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


# -- switching, on 3.12+ without pkernels' C boundary ----------------------------------


def _ignore(frame: types.FrameType, event: str, arg: Any) -> None:
    return None  # traces nothing: only its being set matters


class _Keeper:
    """A daemon thread that holds :func:`_ignore` as its trace function while the
    program's thread traces: switching that thread off and on then changes nothing
    global (``sys.monitoring``'s events stay set), and the code it runs untraced
    meanwhile costs one check per event. Let go once the program's thread no longer
    traces at a dispatch (pdb's ``continue`` with no breakpoint left), so that a program
    running untraced is not kept instrumented."""

    def __init__(self) -> None:
        self._released = threading.Event()
        thread = threading.Thread(target=self._park, name="pkdb-trace-keeper", daemon=True)
        thread.start()

    def _park(self) -> None:
        sys.settrace(_ignore)
        self._released.wait()
        sys.settrace(None)

    def release(self) -> None:
        self._released.set()


_keeper: _Keeper | None = None


def _keep_instrumented(tracing: bool) -> None:
    """Keep the trace instrumentation while the program's thread is ``tracing``; let it
    go when it is not (at each dispatch; nothing to do before Python 3.12)."""
    global _keeper
    if not _REINSTRUMENTS:
        return
    if tracing and _keeper is None:
        _keeper = _Keeper()
    elif not tracing and _keeper is not None:
        _keeper.release()
        _keeper = None
