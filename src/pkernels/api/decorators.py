"""``@pk.workunit`` and ``@pk.function``: mark Python functions as kernel code.

The decorated function is returned unchanged apart from a ``__pkernels__`` marker, so
it stays an ordinary Python function: callable, inspectable, and what the ``Debug``
space runs. Translation happens at the first dispatch, as in PyKokkos, so a kernel
that is never dispatched never raises a translation error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class KernelMarker:
    """What pkernels records on a decorated function."""

    kind: str  # "workunit" or "function"
    options: dict[str, Any] = field(default_factory=dict)
    # Per-process memo of translations and loaded builds (filled by the runtime).
    specializations: dict[Any, Any] = field(default_factory=dict)
    #: A backend's launcher of the last kernel of ``specializations`` each fast path ran
    #: (by operation, or (operation, rank) for a box), as (the workunit, the launcher):
    #: the Cuda space's C launchers, which check the arguments themselves (clear it with
    #: ``specializations``).
    fast_paths: dict[Any, Any] = field(default_factory=dict)


def _mark(kind: str, func: Callable[..., Any] | None, options: dict[str, Any]) -> Any:
    def apply(f: F) -> F:
        if not callable(f) or not hasattr(f, "__code__"):
            raise TypeError(f"@pk.{kind} decorates a Python function, not {f!r}")
        f.__pkernels__ = KernelMarker(kind, dict(options))  # type: ignore[attr-defined]
        return f

    return apply(func) if func is not None else apply


def workunit(func: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Mark a kernel body: ``def k(i, [acc, [last_pass,]] **views_and_scalars)``.

    Parameters after the index (and accumulator) are matched by name with the keyword
    arguments of the dispatch; unannotated ones take the types of those arguments.
    """
    return _mark("workunit", func, options)


def function(func: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Mark a device helper callable from kernels (and from Python, as itself)."""
    return _mark("function", func, options)


def marker_of(func: object) -> KernelMarker | None:
    """The marker of a decorated function, or None for anything else."""
    marker = getattr(func, "__pkernels__", None)
    return marker if isinstance(marker, KernelMarker) else None
