"""What the CPU's and the GPU's kernel sessions share (:class:`pkdb.kernel_session.KernelSession`,
:class:`pkdb.gpu_session.GpuKernelSession`): a debugger's controller, and pdb's
breakpoints as that debugger numbers them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .targets.base import TargetError

if TYPE_CHECKING:
    from .targets.base import Controller


class DebuggerSession:
    """The debugger part of a kernel session; the session sets the state below."""

    controller: Controller | None
    gdb_numbers: dict[int, int]  # pdb breakpoint -> the debugger's breakpoint
    fault_breakpoint: int | None  # the debugger's, on pk_fault_hook (a failed check)
    _attached_pid: int | None

    def require_controller(self) -> Controller:
        """The controller; TargetError when no debugger is attached."""
        raise NotImplementedError  # each session says which debugger is missing

    def pdb_number(self, gdb_number: int | None) -> int | None:
        """The pdb breakpoint that the debugger's ``gdb_number`` stands for, if any."""
        return next((n for n, g in self.gdb_numbers.items() if g == gdb_number), None)

    def remove(self, number: int) -> None:
        """Take pdb breakpoint ``number`` out of the debugger (if it is there)."""
        gdb_number = self.gdb_numbers.pop(number, None)
        if gdb_number is not None:
            try:
                self.require_controller().delete_breakpoint(gdb_number)
            except TargetError:
                pass

    def _delete_debugger_breakpoints(self) -> None:
        """Take every pdb breakpoint out of the debugger (before a launch sets them
        again)."""
        controller = self.require_controller()
        for gdb_number in self.gdb_numbers.values():
            try:
                controller.delete_breakpoint(gdb_number)
            except TargetError:
                pass  # a temporary one the debugger removed already
        self.gdb_numbers.clear()

    def _close_debugger(self) -> list[str]:
        """End the debugger and forget what it held; its internal errors during the
        session, for the user (gdb aborts after one)."""
        failures: list[str] = []
        if self.controller is not None:
            self.controller.close()
            failures = self.controller.internal_errors
        self.controller = None
        self._attached_pid = None
        self.fault_breakpoint = None
        self.gdb_numbers.clear()
        return failures
