"""Execution spaces: where a kernel runs."""

from __future__ import annotations

import enum
from typing import Any

from ..errors import SpaceError, UnsupportedSpaceError

# Spaces of PyKokkos (HIP, Threads) and Kokkos pkernels lacks: what to use instead.
_ELSEWHERE = {
    "HIP": "AMD GPUs are not supported; on NVIDIA GPUs use pk.Cuda",
    "SYCL": "use pk.Cuda on NVIDIA GPUs, or pk.OpenMP on the CPU",
    "OpenMPTarget": "use pk.Cuda on NVIDIA GPUs, or pk.OpenMP on the CPU",
    "OpenACC": "use pk.Cuda on NVIDIA GPUs, or pk.OpenMP on the CPU",
    "Threads": "pk.OpenMP runs kernels on all CPU threads",
    "HPX": "pk.OpenMP runs kernels on all CPU threads",
}
SUPPORTED = (
    "pk.OpenMP (CPU threads), pk.Serial (one CPU thread), pk.Cuda (NVIDIA GPUs), "
    "pk.Debug (plain Python) and pk.Default"
)


def unsupported_space(name: str) -> UnsupportedSpaceError | None:
    """The error for a space pkernels lacks named ``name`` (None: not one of those)."""
    found = next((n for n in _ELSEWHERE if n.lower() == name.lower()), None)
    if found is None:
        return None
    return UnsupportedSpaceError(
        f"pkernels has no {found} execution space: {_ELSEWHERE[found]}. The spaces are "
        f"{SUPPORTED}, also as pk.ExecutionSpace.<name>."
    )


class _SpaceType(enum.EnumType):
    def __getattr__(cls, name: str) -> object:
        error = unsupported_space(name) if not name.startswith("_") else None
        if error is not None:
            raise error
        return super().__getattr__(name)  # type: ignore[misc]


class ExecutionSpace(enum.Enum, metaclass=_SpaceType):
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
        hint = f": {_string_hint(space)}" if isinstance(space, str) else ""
        raise ValueError(f"set_default_space needs a concrete ExecutionSpace, not {space!r}{hint}")
    _default_space = space


def as_space(value: object, where: str) -> ExecutionSpace:
    """``value``, the space a policy (``where``) is given (an ExecutionSpaceInstance: its
    space), checked: a string or another value is refused (a SpaceError, an
    UnsupportedSpaceError for HIP ...), saying what to write instead."""
    if isinstance(value, ExecutionSpace):
        return value
    if isinstance(value, ExecutionSpaceInstance):
        return value.space
    if isinstance(value, str):
        error = unsupported_space(value)
        if error is not None:
            raise error
        raise SpaceError(f"{where}: the space is the string {value!r}; {_string_hint(value)}")
    raise SpaceError(f"{where}: the space must be one of {SUPPORTED}, not {value!r}")


def _string_hint(text: str) -> str:
    """What to write for a space named by a string."""
    member = next((m for m in ExecutionSpace if m.name.lower() == text.lower()), None)
    if member is not None:
        return f"write pk.ExecutionSpace.{member.name} (or pk.{member.name})"
    error = unsupported_space(text)
    if error is not None:
        return str(error)
    return f"the spaces are {SUPPORTED}"


def get_default_space() -> ExecutionSpace:
    """The space used when a policy names none (OpenMP unless changed)."""
    return _default_space


def resolve_space(space: ExecutionSpace) -> ExecutionSpace:
    """``Default`` resolved to the current default space; others unchanged."""
    # The module's name `Default`, not ExecutionSpace.Default: on Python 3.11 a member
    # read through its enum class costs ~80 ns, and this runs at every full dispatch.
    return _default_space if space is Default else space


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


class ExecutionSpaceInstance:
    """PyKokkos' ``ExecutionSpaceInstance(space[, stream])``: a space (a CUDA stream's,
    for ``pk.Cuda``), accepted wherever a policy takes its space. Kernels here run in
    order on CuPy's current stream; a CuPy stream given is kept as ``stream``."""

    def __init__(self, space: ExecutionSpace, stream: Any = None) -> None:
        if not isinstance(space, ExecutionSpace):
            raise TypeError(f"ExecutionSpaceInstance takes an ExecutionSpace, not {space!r}")
        if space is ExecutionSpace.Default:
            space = get_default_space()
        if stream is not None and space is not ExecutionSpace.Cuda:
            raise ValueError(f"a stream is for the Cuda space, not {space}")
        self.space = space
        self.stream = stream

    def __repr__(self) -> str:
        return f"ExecutionSpaceInstance({self.space})"
