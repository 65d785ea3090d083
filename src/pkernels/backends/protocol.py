"""The protocol every execution space's backend implements, and the launch it is given."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..api.decorators import KernelMarker
from ..api.reducers import Reducer
from ..api.spaces import ExecutionSpace
from ..errors import KernelError
from ..runtime.hooks import BuildMode, Dispatch


@dataclass(slots=True)  # one per dispatch on the full path: cheap to make
class Launch:
    """One dispatch, checked against its policy and workunit, as a backend runs it.

    ``rank``: 1 for a RangePolicy, an MDRangePolicy's rank, or ``translate.kernel.TEAM``
    for a TeamPolicy (then ``team_size`` is the team size it runs with). ``build`` is the
    dispatch's build mode until :meth:`Backend.build_mode` resolves it. ``dispatch`` is
    the observers' record of the dispatch (None when nobody observes)."""

    workunit: Callable[..., Any]
    marker: KernelMarker
    operation: str
    policy: Any  # RangePolicy, MDRangePolicy or TeamPolicy
    kwargs: dict[str, Any]
    build: BuildMode
    dispatch: Dispatch | None
    reducer: Reducer
    rank: int
    team_size: int = 1
    #: What a backend keeps between :meth:`Backend.kernel` and :meth:`Backend.launch`
    #: (the host's release half of a HYBRID launch).
    companion: Any = None
    #: The kernel :meth:`Backend.build_mode` already found for the build it chose (the
    #: host looks a GUARDED launch's builds up for their bounds proof), for
    #: :meth:`Backend.kernel` to return without looking it up again; None otherwise.
    built: Any = None
    #: The debug build a ``check_first`` launch runs again in when its checked build
    #: (what :meth:`Backend.kernel` returned) fails a check; None otherwise.
    replay: Any = None

    @property
    def space(self) -> ExecutionSpace:
        """The policy's execution space (backends on the hot path read ``policy.space``:
        a property costs a call)."""
        return self.policy.space  # type: ignore[no-any-return]


#: What a fast path's ``launch`` returns where it ran nothing (arguments no loaded kernel
#: takes): the full path then runs the dispatch.
NOT_LAUNCHED: Any = type("NotLaunched", (), {"__repr__": lambda self: "NOT_LAUNCHED"})()


class Backend(Protocol):
    """How one family of execution spaces runs a dispatch. ``dispatch.py`` calls, in
    order: :meth:`build_mode`, :meth:`kernel` (then the ``before_launch`` hook with the
    kernel, when there is one), :meth:`launch`. The range fast path of ``dispatch.py``
    calls :meth:`cached_range_kernel` first."""

    #: The execution spaces this backend runs.
    spaces: tuple[ExecutionSpace, ...]
    #: The fault codes its builds record (``pk_rt::fault_kind``) and the errors raised for
    #: them after a launch; empty where the body runs as Python (its errors are raised
    #: where they happen).
    faults: Mapping[int, type[KernelError]]

    def build_mode(self, launch: Launch) -> BuildMode:
        """The build mode this space runs ``launch`` in: ``launch.build`` with GUARDED and
        HYBRID resolved to the builds the backend has (a kernel it found for the chosen
        build on the way may be left in ``launch.built``)."""
        ...

    def kernel(self, launch: Launch) -> Any:
        """Specialise and build: the loaded kernel of ``launch.workunit`` for these
        argument types, rank and ``launch.build`` (translated and compiled on first use,
        then kept in ``launch.marker.specializations``); None where the space runs the
        body itself (no ``before_launch`` then)."""
        ...

    def launch(self, kernel: Any, launch: Launch) -> Any:
        """Run ``kernel`` (from :meth:`kernel`) over ``launch.policy``; raise the error of
        a recorded fault; return a reduce's or scan's total, else None."""
        ...

    def cached_range_kernel(
        self, operation: str, workunit: Any, kwargs: dict[str, Any]
    ) -> Any | None:
        """For the commonest dispatch (a plain @pk.workunit over a range, the default
        build, no reducer, nobody observing): the kernel this process has already built
        for these arguments, with a ``launch(space, begin, end, kwargs)`` method (which
        may return :data:`NOT_LAUNCHED`, having run nothing, where it finds the arguments
        are no loaded kernel's); None when there is none (or the backend has no such
        shortcut): the full path runs."""
        ...

    def cached_policy_kernel(
        self, operation: str, workunit: Any, kwargs: dict[str, Any], rank: int
    ) -> Any | None:
        """As :meth:`cached_range_kernel`, over a TeamPolicy (``rank``:
        ``translate.kernel.TEAM``) or an MDRangePolicy (its rank): the kernel already
        built, with a ``launch(policy, kwargs)`` method; None for none (or no such
        shortcut)."""
        ...

    def observed_range_kernel(
        self,
        operation: str,
        workunit: Any,
        kwargs: dict[str, Any],
        build: BuildMode,
        begin: Any,
        end: Any,
    ) -> Any | None:
        """For the commonest dispatch with observers, once they chose ``build``: the
        kernel this process has already built for it, with a ``launch(space, begin, end,
        kwargs)`` method (``before_launch`` sees it); None when there is none (or no such
        shortcut): the full path runs."""
        ...
