"""What the front end asks of each execution space's component: the CPU's
(:class:`pkdb.cpu_frontend.CpuFrontend`, gdb) and the GPU's
(:class:`pkdb.gpu_frontend.GpuFrontend`, cuda-gdb). One debugger traces the program at a
time, so the front end closes one space's before the other attaches, and looks at every
loaded space when a debugger may have died."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .kernel_protocol import KernelFinished, KernelLaunch


class SpaceFrontend(Protocol):
    """One execution space's kernels under their debugger, as the front end routes them."""

    #: The debugger's name, as messages to the user say it ("gdb", "cuda-gdb").
    debugger: str
    #: The kernel session: its ``attached`` and its ``controller`` (``alive``,
    #: ``exit_status``) tell whether the debugger died while attached.
    session: Any

    @property
    def active(self) -> bool:
        """A kernel of this space runs or is held under the debugger."""

    @property
    def attached(self) -> bool:
        """The debugger is attached to the program."""

    def on_launch(self, message: KernelLaunch) -> None:
        """A debug build of this space is about to run: attach, set breakpoints, go."""

    def on_finished(self, message: KernelFinished) -> None:
        """The kernel returned."""

    def close(self) -> list[str]:
        """Detach and end the debugger; its internal errors during the session."""
