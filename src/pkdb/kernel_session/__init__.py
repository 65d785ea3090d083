"""The front end's side of one debugged kernel (see :mod:`.session`)."""

from .frames import cpp_name
from .session import ARRIVAL_SETTLE_SECONDS, KernelSession
from .stop import KernelStop, at_def_line, is_interrupt
from .threads import STOP_SETTLE_SECONDS

__all__ = [
    "ARRIVAL_SETTLE_SECONDS",
    "STOP_SETTLE_SECONDS",
    "KernelSession",
    "KernelStop",
    "at_def_line",
    "cpp_name",
    "is_interrupt",
]
