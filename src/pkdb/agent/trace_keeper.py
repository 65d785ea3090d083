"""Keeping Python's trace instrumentation in place while the dispatch hooks switch the
host debugger's tracing off and on (Python 3.12 and later).

The hooks (:mod:`pkdb.agent.kernel_observer`) turn ``sys.settrace`` off while pkernels'
and pkdb's own Python runs a dispatch, where no breakpoint can be, and back on after it.
Up to Python 3.11 that swaps a pointer. From 3.12 ``sys.settrace`` is built on
``sys.monitoring``: the interpreter instruments all code for the trace events while any
thread traces, and each change between "a thread traces" and "none does" re-instruments
the code that runs next. Switching at every dispatch then made a dispatch under pkdb 3x
pdb's (``bench/bench_dispatch_threads.py`` on 3.12: 94 us against 32 us).

So on 3.12+ a parked thread holds a do-nothing trace function while the program's thread
traces: switching the program's thread off and on then changes nothing global, and the
code it runs untraced meanwhile costs one check per event. The parked thread is let go
once the program's thread no longer traces at a dispatch (pdb's ``continue`` with no
breakpoint left), so a program that runs untraced is not kept instrumented.
"""

from __future__ import annotations

import sys
import threading
import types
from typing import Any

#: Whether switching tracing off and on re-instruments code (see the module docstring).
NEEDED = sys.version_info >= (3, 12)


def _ignore(frame: types.FrameType, event: str, arg: Any) -> None:
    return None  # traces nothing: only its being set matters


class _Keeper:
    """A daemon thread that sets :func:`_ignore` as its trace function and waits."""

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


def keep_instrumented(tracing: bool) -> None:
    """Keep the trace instrumentation while the program's thread is ``tracing``; let it
    go when it is not (called at each dispatch; nothing to do before Python 3.12)."""
    global _keeper
    if not NEEDED:
        return
    if tracing and _keeper is None:
        _keeper = _Keeper()
    elif not tracing and _keeper is not None:
        _keeper.release()
        _keeper = None
