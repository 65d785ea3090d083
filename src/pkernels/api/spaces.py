"""Execution spaces: where a kernel runs."""

from __future__ import annotations

import enum


class ExecutionSpace(enum.Enum):
    """Where a kernel runs.

    ``OpenMP``: native code on all CPU cores. ``Serial``: the same native code on one
    thread. ``Debug``: the kernel body run as plain Python loops (slow, PyKokkos's debug
    mode). ``Cuda``: NVIDIA GPUs (needs the ``cuda`` extra). ``Default``: whatever
    :func:`set_default_space` chose (OpenMP unless changed).
    """

    OpenMP = "OpenMP"
    Serial = "Serial"
    Debug = "Debug"
    Cuda = "Cuda"
    Default = "Default"

    # Members are singletons compared by identity: hash them so, in C (Enum's own
    # __hash__ is Python code, run at each dict look-up of every dispatch).
    __hash__ = object.__hash__


class ExecutionPolicy:
    """The base of every policy (``RangePolicy``, ``MDRangePolicy``, ``TeamPolicy``): for
    annotations and ``isinstance`` checks, as PyKokkos' ``pk.ExecutionPolicy``."""

    __slots__ = ()


_default_space = ExecutionSpace.OpenMP


def set_default_space(space: ExecutionSpace) -> None:
    """Make ``space`` the one used by int policies and policies without a space."""
    global _default_space
    if not isinstance(space, ExecutionSpace) or space is ExecutionSpace.Default:
        raise ValueError(f"set_default_space needs a concrete ExecutionSpace, not {space!r}")
    _default_space = space


def get_default_space() -> ExecutionSpace:
    """The space used when a policy names none (OpenMP unless changed)."""
    return _default_space


def resolve_space(space: ExecutionSpace) -> ExecutionSpace:
    """``Default`` resolved to the current default space; others unchanged."""
    return _default_space if space is ExecutionSpace.Default else space


OpenMP = ExecutionSpace.OpenMP
Serial = ExecutionSpace.Serial
Debug = ExecutionSpace.Debug
Cuda = ExecutionSpace.Cuda
Default = ExecutionSpace.Default

# The spaces whose kernels run on a device rather than the host (PyKokkos's name).
DeviceExecutionSpace = frozenset({ExecutionSpace.Cuda})


def is_host_execution_space(space: ExecutionSpace) -> bool:
    """Whether kernels of ``space`` run on the host (``Default`` means the default space)."""
    return resolve_space(space) not in DeviceExecutionSpace


def fence(space: ExecutionSpace | None = None) -> None:
    """Wait until every kernel launched on ``space`` (all spaces by default) has finished.

    pkernels' dispatches return when their kernel has finished (GPU launches synchronise
    their stream), so there is never anything to wait for; ``fence`` is here so that
    Kokkos-style programs, which fence before reading results or stopping a timer, run.
    """
    if space is not None and not isinstance(space, ExecutionSpace):
        raise TypeError(f"fence takes an ExecutionSpace, not {space!r}")


def flush() -> None:
    """PyKokkos' ``pk.flush()``, which runs kernels its fusion mode has held back: every
    dispatch here runs its kernel at once, so there is nothing to run."""
