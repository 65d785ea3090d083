"""The fault codes the runtime headers record (``pk_rt::fault_kind``, in
``include/pkernels/cpu.hpp`` and ``cuda.hpp``) and the errors raised for them."""

from __future__ import annotations

from ..errors import (
    KernelError,
    KernelIndexError,
    KernelOverflowError,
    KernelTeamError,
    KernelValueError,
    KernelZeroDivisionError,
)

#: 1: an index out of range; 2: an integer division by zero; 3 and 4: a team's fault
#: (cpu_team.hpp, cuda_team.hpp: barriers, scratch); 5 and 6: a float no integer holds.
FAULT_ERRORS: dict[int, type[KernelError]] = {
    1: KernelIndexError,
    2: KernelZeroDivisionError,
    3: KernelTeamError,
    4: KernelTeamError,
    5: KernelValueError,
    6: KernelOverflowError,
}


def fault_error(kind: int) -> type[KernelError]:
    """The error a recorded fault of code ``kind`` raises (KernelError for an unknown one)."""
    return FAULT_ERRORS.get(kind, KernelError)
