"""Dispatch hooks: how tools (pkdb, profilers, tests) observe and steer kernel launches.

The framework knows nothing of any debugger. At every ``parallel_for`` /
``parallel_reduce`` / ``parallel_scan`` it builds a :class:`Dispatch` and walks the
registered observers in registration order:

1. ``dispatch_started(dispatch)`` -- before anything is compiled. An observer may
   replace ``dispatch.workunit`` (hotswap), set ``dispatch.build`` to
   :attr:`BuildMode.DEBUG`, :attr:`BuildMode.HYBRID` or :attr:`BuildMode.CHECKED`, or
   read ``dispatch.frame`` (the Python call site).
2. ``before_launch(dispatch, kernel)`` -- the kernel is compiled and loaded
   (``kernel`` is a :class:`pkernels.build.CompiledKernel`: shared library path,
   generated source path, symbol names; under HYBRID, the debug build, and
   ``dispatch.fast_build`` is the release build that runs first, if any); nothing has
   run yet.
   An observer may block here, e.g. until a debugger has attached and set its
   breakpoints.
3. ``dispatch_finished(dispatch, result, error)`` -- after the launch returned or
   failed (``error`` is the exception, or ``None``).

Observers implement any subset of the three methods. Register with
:func:`add_observer`, remove with :func:`remove_observer`. Hooks cost nothing when
no observer is registered.

A debugger tracing the program with ``sys.settrace`` may have pkernels' own Python run
untraced: :func:`untraced_dispatches`.
"""

from __future__ import annotations

import ctypes
import enum
import os
import types
from dataclasses import dataclass, field
from typing import Any, Protocol

try:
    from . import _boundary
except ImportError:  # pragma: no cover - not built
    _boundary = None  # type: ignore[assignment]


class BuildMode(enum.Enum):
    """Which build of a kernel runs: optimised, or ``-O0 -g`` with bounds checks, or
    optimised with the same checks.

    ``HYBRID``: the debug build's behaviour at the release build's speed where that can
    be had. A range parallel_for or parallel_reduce, or an MDRangePolicy parallel_for,
    whose launch is proven before it starts to be unable to fail a check (every view
    index in range, every integer divisor nonzero, no float converted to an integer: see
    ``pkernels.translate.bounds_proof``)
    runs release code, which hands its remaining indices to the debug build once
    :meth:`Dispatch.request_debug_code` is called; any other launch runs the debug build.

    ``CHECKED``: the release build's code (``-O3``) with every check of the debug build:
    an index out of range, an integer division by zero, a float that no integer holds,
    raise the same ``pkernels.Kernel*Error`` as in a debug build, where release code would
    read or write past the array or go on with any value. No breakpoints, no variables
    for gdb; see ``python bench/bench_checked.py`` for its cost. ``$PKERNELS_CHECKS=1``
    makes it the build of every dispatch no observer changes. On the GPU (``pk.Cuda``)
    too: there HYBRID is the debug build (NVRTC ``-G``), and a failed check names the
    block and the thread.

    ``GUARDED``: RELEASE for a range or MDRangePolicy launch proven unable to fail a
    check (HYBRID's proof), CHECKED for any other: what a debugger runs a kernel with no
    breakpoint as (pkdb does), so that a bad index is an error, not corrupted memory,
    at the release build's speed wherever the proof holds.
    """

    RELEASE = "release"
    DEBUG = "debug"
    HYBRID = "hybrid"
    CHECKED = "checked"
    GUARDED = "guarded"

    __hash__ = object.__hash__  # identity, in C (see ExecutionSpace)


def _default_build() -> BuildMode:
    """RELEASE, or CHECKED when ``$PKERNELS_CHECKS`` is 1 (read once, at import)."""
    value = os.environ.get("PKERNELS_CHECKS", "0").strip()
    if value not in ("", "0", "1"):
        raise ValueError(f"PKERNELS_CHECKS must be 1 (check) or 0 (do not), not {value!r}")
    return BuildMode.CHECKED if value == "1" else BuildMode.RELEASE


#: The build of a dispatch unless an observer picks another (see :class:`BuildMode`).
DEFAULT_BUILD = _default_build()


@dataclass
class Dispatch:
    """One ``parallel_*`` call, as observers see it.

    ``operation`` is ``"for"``, ``"reduce"`` or ``"scan"``. ``kwargs`` are the keyword
    arguments of the call (views are the caller's own arrays, never copies).
    ``frame`` is the caller's frame; ``build`` and ``workunit`` may be changed by
    ``dispatch_started`` observers. ``fast_build`` (seen by ``before_launch``): under
    HYBRID, the release build (a CompiledKernel) about to run first, or None.
    ``debug_indices`` (set by a ``dispatch_started`` observer, with ``build = HYBRID``):
    a range launch (``RangePolicy``, for or reduce) then runs index ``i`` in the debug
    build from the start where ``debug_indices[i - begin]`` is true (one entry per index,
    bool or uint8), the others in release code: a debugger whose breakpoint conditions
    hold only at some indices stops there without trapping in every other one. Any other
    launch given ``debug_indices`` runs wholly in the debug build.
    ``check_first`` (with ``build = HYBRID``): a range launch that cannot be proven unable
    to fail a check runs its checked release build first, the views it writes copied
    beforehand; only when a check fails are they put back and the launch run again in
    the debug build (``before_launch`` then sees that build), which fails the same check
    where a debugger can show its variables. A kernel that prints or has recursive
    helpers, or takes an argument other than arrays and numbers, runs in the debug build
    at once.
    """

    operation: str
    label: str | None
    policy: Any
    workunit: Any
    kwargs: dict[str, Any]
    frame: types.FrameType | None
    build: BuildMode = DEFAULT_BUILD
    original_workunit: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
    fast_build: Any = None
    debug_indices: Any = None  # a NumPy array, see above
    reducer: Any = None  # a reduce's reducer= (pk.Sum when none was given); None otherwise
    check_first: bool = False  # see above
    # Read by a HYBRID launch's release code at every block of indices (a C int).
    debug_request: ctypes.c_int = field(default_factory=ctypes.c_int, repr=False)

    def request_debug_code(self) -> None:
        """Have this dispatch's HYBRID launch run its remaining indices in the debug
        build (each thread at its next block of indices): a debugger about to stop in the
        kernel needs the debug code's variables and breakpoints. Safe from any thread."""
        self.debug_request.value = 1

    @property
    def space(self) -> Any:
        """The execution space the kernel runs on."""
        return self.policy.space


class DispatchObserver(Protocol):
    """What an observer may implement (every method is optional)."""

    def dispatch_started(self, dispatch: Dispatch) -> None: ...

    def before_launch(self, dispatch: Dispatch, kernel: Any) -> None: ...

    def dispatch_finished(
        self, dispatch: Dispatch, result: Any, error: BaseException | None
    ) -> None: ...


#: The registered observers, in call order: the list itself, which the dispatch reads at
#: every call (cheaper than observed()); change it through add_observer/remove_observer.
OBSERVERS: list[Any] = []


def add_observer(observer: Any) -> None:
    """Register ``observer`` for every later dispatch (no-op if already registered)."""
    if observer not in OBSERVERS:
        OBSERVERS.append(observer)


def remove_observer(observer: Any) -> None:
    """Unregister ``observer``; unknown observers are ignored."""
    if observer in OBSERVERS:
        OBSERVERS.remove(observer)


def observers() -> tuple[Any, ...]:
    """The registered observers, in call order."""
    return tuple(OBSERVERS)


def observed() -> bool:
    """Whether any observer is registered (cheaper than ``observers()``: no tuple)."""
    return bool(OBSERVERS)


def notify(method: str, *args: Any) -> None:
    """Call ``method`` on every observer that defines it."""
    for observer in tuple(OBSERVERS):
        callback = getattr(observer, method, None)
        if callback is not None:
            callback(*args)


# -- untraced dispatches ------------------------------------------------------------

_UNTRACED = getattr(_boundary, "set_untraced", None)  # None: the C boundary is not built
#: ``resume_tracing()``: end the suspension of the innermost ``parallel_*`` call of the
#: calling thread (True), or do nothing (False: none is suspended, or untraced
#: dispatches are unavailable). The C function itself: it runs where time counts.
resume_tracing: Any = getattr(_boundary, "resume_tracing", lambda: False)
#: ``suspend_tracing()``: suspend the calling thread's tracing again until its innermost
#: ``parallel_*`` call returns (True), or do nothing (False: suspended already, no trace
#: function, not in such a call, or unavailable).
suspend_tracing: Any = getattr(_boundary, "suspend_tracing", lambda: False)


def untraced_dispatches(on: bool) -> bool:
    """Have each later ``parallel_*`` call made by a thread that has a trace function
    (``sys.settrace``) run with that thread's tracing suspended, the trace function kept
    installed: its tracer then sees none of pkernels' own calls and lines (nor the
    observers'), and that costs nothing. Where the program's own Python runs inside a
    dispatch (a Debug-space kernel's body, a nested TeamThreadRange), call
    :func:`resume_tracing` first (an observer: in ``dispatch_started``); pkernels does
    for the nested ranges it runs. True when available (the C boundary is built), else
    False and nothing changes. (Cheaper than switching ``sys.settrace`` off and on: from
    Python 3.12 that re-instruments the code it runs next, see ``_boundary.c``.)"""
    if _UNTRACED is None:
        return False
    _UNTRACED(on)
    return True
