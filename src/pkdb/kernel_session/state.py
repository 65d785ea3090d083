"""What the parts of a kernel session share: the controller, the launch, the stop."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..debugger_session import DebuggerSession
from ..kernel_protocol import KernelLaunch
from ..targets.base import TargetError
from .stop import KernelStop

if TYPE_CHECKING:
    from ..targets.base import Controller


class SessionState(DebuggerSession):
    """The state :class:`pkdb.kernel_session.KernelSession` keeps (its ``__init__`` sets
    it), which its parts -- breakpoints, threads, frames -- read and change."""

    controller: Controller | None
    launch: KernelLaunch | None
    stop: KernelStop | None
    gdb_numbers: dict[int, int]  # pkdb breakpoint -> gdb breakpoint
    fault_breakpoint: int | None
    _attached_pid: int | None
    _release_ranges: list[tuple[int, int]]  # code of the launch's fast_library

    def require_controller(self) -> Controller:
        if self.controller is None:
            raise TargetError("gdb is not attached")
        return self.controller

    def require_stop(self) -> KernelStop:
        if self.stop is None:
            raise TargetError("no kernel thread is stopped")
        return self.stop

    @property
    def team_member(self) -> str:
        """The team member parameter of a TeamPolicy kernel; "" for other kernels."""
        return self.launch.team_member if self.launch else ""
