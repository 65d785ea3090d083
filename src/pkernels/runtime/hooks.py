"""Dispatch hooks: how tools (pkdb, profilers, tests) observe and steer kernel launches.

The framework knows nothing of any debugger. At every ``parallel_for`` /
``parallel_reduce`` / ``parallel_scan`` it builds a :class:`Dispatch` and walks the
registered observers in registration order:

1. ``dispatch_started(dispatch)`` -- before anything is compiled. An observer may
   replace ``dispatch.workunit`` (hotswap), set ``dispatch.build`` to
   :attr:`BuildMode.DEBUG`, or read ``dispatch.frame`` (the Python call site).
2. ``before_launch(dispatch, kernel)`` -- the kernel is compiled and loaded
   (``kernel`` is a :class:`pkernels.build.CompiledKernel`: shared library path,
   generated source path, symbol names); nothing has run yet. An observer may block
   here, e.g. until a debugger has attached and set its breakpoints.
3. ``dispatch_finished(dispatch, result, error)`` -- after the launch returned or
   failed (``error`` is the exception, or ``None``).

Observers implement any subset of the three methods. Register with
:func:`add_observer`, remove with :func:`remove_observer`. Hooks cost nothing when
no observer is registered.
"""

from __future__ import annotations

import enum
import types
from dataclasses import dataclass, field
from typing import Any, Protocol


class BuildMode(enum.Enum):
    """Which build of a kernel runs: optimised, or ``-O0 -g`` with bounds checks."""

    RELEASE = "release"
    DEBUG = "debug"


@dataclass
class Dispatch:
    """One ``parallel_*`` call, as observers see it.

    ``operation`` is ``"for"``, ``"reduce"`` or ``"scan"``. ``kwargs`` are the keyword
    arguments of the call (views are the caller's own arrays, never copies).
    ``frame`` is the caller's frame; ``build`` and ``workunit`` may be changed by
    ``dispatch_started`` observers.
    """

    operation: str
    label: str | None
    policy: Any
    workunit: Any
    kwargs: dict[str, Any]
    frame: types.FrameType | None
    build: BuildMode = BuildMode.RELEASE
    original_workunit: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

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


_observers: list[Any] = []


def add_observer(observer: Any) -> None:
    """Register ``observer`` for every later dispatch (no-op if already registered)."""
    if observer not in _observers:
        _observers.append(observer)


def remove_observer(observer: Any) -> None:
    """Unregister ``observer``; unknown observers are ignored."""
    if observer in _observers:
        _observers.remove(observer)


def observers() -> tuple[Any, ...]:
    """The registered observers, in call order."""
    return tuple(_observers)


def notify(method: str, *args: Any) -> None:
    """Call ``method`` on every observer that defines it."""
    for observer in tuple(_observers):
        callback = getattr(observer, method, None)
        if callback is not None:
            callback(*args)
