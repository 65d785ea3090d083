"""``hotswap`` and ``parallel_launch`` in the agent: as pdb commands (host mode) and as
kernel requests answered by the reader thread (kernel mode).

Host mode: :class:`LiveKernelCommands` is mixed into the host debugger, so pdb itself
parses the command (``help hotswap`` works, aliases too) and evaluates names in its
current frame. Kernel mode: the front end sends a ``kernel-request`` with action
``hotswap`` or ``parallel_launch``; :func:`handle_kernel_request` evaluates in the scope
of the dispatch call site (see :func:`pkdb.agent.live_scope.call_site_scope`).
"""

from __future__ import annotations

from typing import Any

from .live_scope import LiveScope, call_site_scope

#: Kernel-request actions served here.
ACTIONS = ("hotswap", "parallel_launch")


class LiveKernelCommands:
    """pdb commands on the live program's kernels (mixed into ``HostDebugger``)."""

    def _live_scope(self) -> LiveScope:
        frame = self.curframe  # type: ignore[attr-defined]
        return LiveScope(
            globals=frame.f_globals if frame is not None else {},
            locals=self.curframe_locals if frame is not None else {},  # type: ignore[attr-defined]
            main_file=getattr(self, "mainpyfile", None) or None,
            lookup_file=self.lookupmodule,  # type: ignore[attr-defined]
        )

    def _show(self, ok: bool, text: str) -> None:
        if ok:
            self.message(text)  # type: ignore[attr-defined]
        else:
            self.error(text)  # type: ignore[attr-defined]

    # The command modules load at first use (or first `help`): not every session needs them.
    def do_hotswap(self, arg: str) -> None:
        """Swap a kernel for another; 'help hotswap' says how."""
        from . import hotswap

        self._guarded(lambda: hotswap.run_command(hotswap.rules_of(self), arg, self._live_scope()))

    def do_parallel_launch(self, arg: str) -> None:
        """Run kernels concurrently; 'help parallel_launch' says how."""
        from . import parallel_launch

        self._guarded(lambda: parallel_launch.run_command(arg, self._live_scope()))

    def _guarded(self, command: Any) -> None:
        """Run a pkdb command in the program: a failure of ours is reported, never raised
        into the program (pdb would take it for the program's own)."""
        try:
            ok, text = command()
        except Exception as exc:  # noqa: BLE001 - reported; the session goes on
            ok, text = False, f"pkdb failed: {type(exc).__name__}: {exc}"
        self._show(ok, text)

    def help_hotswap(self) -> None:
        from . import hotswap

        self.message(hotswap.HELP)  # type: ignore[attr-defined]

    def help_parallel_launch(self) -> None:
        from . import parallel_launch

        self.message(parallel_launch.HELP)  # type: ignore[attr-defined]


def handle_kernel_request(observer: Any, action: str, args: dict[str, Any]) -> tuple[bool, str]:
    """Answer a kernel-mode ``hotswap`` / ``parallel_launch`` request (reader thread)."""
    from ..kernel_protocol import KernelBusy
    from . import hotswap, parallel_launch

    scope = call_site_scope(observer.active, args.get("locals", {}), observer.debugger)
    arg = args.get("arg", "")
    if action == "hotswap":
        return hotswap.run_command(hotswap.rules_of(observer.debugger), arg, scope)

    def keepalive() -> None:
        observer.link.send(KernelBusy(action=action))

    return parallel_launch.run_command(arg, scope, keepalive=keepalive)
