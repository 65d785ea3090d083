"""The front end's component for GPU kernels: the ``kernel-launch`` of a ``pk.Cuda``
kernel, its stops, its end (see :mod:`pkdb.gpu_session` for what a GPU stop is).

:class:`pkdb.frontend.Frontend` owns one, made at the first GPU launch, and hands it
the GPU's messages; the commands of GPU kernel mode are :mod:`pkdb.commands.gpu`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .gpu_session import GpuKernelSession
from .targets.base import StopEvent, TargetError

if TYPE_CHECKING:
    from .frontend import Frontend
    from .kernel_protocol import KernelFinished, KernelLaunch

#: How many times a step that ends outside the kernel's Python lines (in the
#: launcher, between two indices of a thread) steps on before it reports that place.
STEP_ON_LIMIT = 20


class GpuFrontend:
    """Routes the GPU's messages and stops to the session and the user."""

    debugger = "cuda-gdb"  # see pkdb.space_frontend.SpaceFrontend

    def __init__(self, frontend: Frontend) -> None:
        self.frontend = frontend
        self.session = GpuKernelSession()
        self.stepping = 0  # steps left to reach a Python line (see STEP_ON_LIMIT)

    @property
    def active(self) -> bool:
        return self.session.active

    @property
    def attached(self) -> bool:
        return self.session.attached

    def resume(self, *, stepping: bool = False) -> None:
        """The GPU kernel runs (cuda-gdb was told): wait for its next stop, its end, or the
        next host prompt. ``stepping``: a step that ends between two indices of the
        thread steps on (see :meth:`check_stop`)."""
        self.session.stop = None
        self.stepping = STEP_ON_LIMIT if stepping else 0
        self.frontend.mode = self.frontend.host_mode  # until it stops again
        self.frontend.resume_program()

    # -- messages ----------------------------------------------------------------------

    def on_launch(self, message: KernelLaunch) -> None:
        """A GPU debug build is about to run: attach cuda-gdb, set the breakpoints, then
        let the agent launch it."""
        from .kernel_protocol import KernelGo

        frontend = self.frontend
        try:
            for problem in self.session.begin(message):
                frontend.error(problem)
        except TargetError as exc:
            self.close()
            if frontend.debuggee is None or frontend.debuggee.gone():
                return
            frontend.error(f"cannot debug kernel {message.kernel} on the GPU: {exc}; it runs "
                           "undebugged")  # fmt: skip
        self.stepping = 0
        try:
            assert frontend.debuggee is not None
            frontend.debuggee.send(KernelGo(reply_to=message.id))
        except Exception:  # noqa: BLE001 - it died: the pump sees the end of the stream
            pass

    def on_finished(self, message: KernelFinished) -> None:
        """The GPU kernel returned and the agent asks whether to stop after it: tell pdb
        what changed at the stops (breakpoints, hit counts), then answer."""
        from .kernel_protocol import KernelGo

        frontend = self.frontend
        session = self.session
        if message.error:
            frontend.message(f"Kernel {message.kernel} failed: {message.error}")
        deferred, session.deferred = session.deferred, []
        for request in deferred:
            try:
                reply = frontend.kernel_request(request.action, **request.args)
            except TargetError:
                break  # the program went away
            if not reply.ok and request.action != "hit":
                frontend.error(reply.text)
        stop_after = session.finishing
        session.end()
        frontend.mode = frontend.host_mode
        if message.id and frontend.debuggee is not None:
            try:
                frontend.debuggee.send(KernelGo(reply_to=message.id, stop_after=stop_after))
            except Exception:  # noqa: BLE001 - it died: the pump sees it
                pass

    # -- stops -------------------------------------------------------------------------

    def check_stop(self) -> bool:
        """A GPU stop arrived: enter GPU kernel mode and give the user the word."""
        session = self.session
        try:
            stop = session.poll_stop(0.0) if session.stop is None else None
        except TargetError:
            return False
        if stop is None:
            return False
        frontend = self.frontend
        event = stop.event
        if not session.active and event.breakpoint == session.fault_breakpoint:
            # A team kernel's fault in a release build (no launch debugged now): the
            # launch reports it when it returns.
            session.stop = None
            try:
                session.require_controller().continue_()
            except TargetError:
                pass
            return False
        if self.stepping and event.reason == "end-stepping-range" and not session.python_frames():
            # Between two indices of the thread (the launcher's loop): on to the next one.
            self.stepping -= 1
            session.stop = None
            try:
                session.require_controller().step()
            except TargetError:
                pass
            return False
        self.stepping = 0
        from .modes import CudaKernelMode

        frontend.mode = CudaKernelMode()
        hit = self._hit_breakpoint(event)
        silent = hit is not None and hit.get("silent")
        if not silent:
            frontend.message(self.stop_text(event))
        if hit is not None:
            session.deferred.append(_hit(hit["number"]))
            if hit.get("temporary"):
                session.gdb_numbers.pop(hit["number"], None)
                breakpoints = frontend.state.get("breakpoints", [])
                if hit in breakpoints:
                    breakpoints.remove(hit)
                session.deferred.append(_deferred("clear", number=hit["number"]))
        from .commands.gpu import show_changed_displays

        try:
            show_changed_displays(frontend)  # type: ignore[arg-type]
        except TargetError:
            pass
        if hit is not None and hit.get("commands"):
            frontend.cmdqueue[:0] = list(hit["commands"])
        return True

    def _hit_breakpoint(self, event: StopEvent) -> dict[str, Any] | None:
        number = self.session.pdb_number(event.breakpoint)
        if number is None:
            return None
        return next(
            (b for b in self.frontend.state.get("breakpoints", []) if b["number"] == number), None
        )

    def stop_text(self, event: StopEvent) -> str:
        """pdb's ``> /path/yax.py(18)yAx()``, the thread and why it stopped (``CUDA block
        0, thread 10 (j=10) hit breakpoint 1``), then ``-> source`` (see pkdb.stop_lines)."""
        from .stop_lines import fault_text, stop_text

        session = self.session
        stop = session.require_stop()
        frame = session.location(0)
        focus = stop.focus
        who = f"CUDA {focus.label()}" if focus else "CUDA kernel (no device thread)"
        details = []
        try:
            if session.launch and session.launch.team_member:
                position = session.team_position()
                if position is not None:
                    details.append(f"league {position.league_rank}, team_rank {position.team_rank}")
            else:
                details += [f"{k}={v}" for k, v in session.index_values().items()]
        except TargetError:
            pass
        if details:
            who += f" ({', '.join(details)})"
        fault = session.fault_message(event)
        if fault is not None:
            return stop_text(frame, who, f"stopped by a failed check: {fault_text(fault)}")
        if event.reason == "signal-received":
            name = event.signal_name or "a signal"
            if name in ("SIGINT", "0"):
                return stop_text(frame, who, "interrupted")
            meaning = f" ({event.signal_meaning})" if event.signal_meaning else ""
            notes: tuple[str, ...] = ()
            if session.launch is None:  # a kernel without breakpoints: its release build
                notes = (
                    "(a release build: no variables; a breakpoint in the kernel, or "
                    "'set debug_all_kernels on', then 'run', shows them)",
                )
            return stop_text(frame, who, f"received {name}{meaning}", notes)
        number = session.pdb_number(event.breakpoint)
        if number is None:
            return stop_text(frame, who)
        return stop_text(frame, who, f"hit breakpoint {number}")

    # -- running -----------------------------------------------------------------------

    def interrupt(self) -> None:
        """Ctrl-C while the GPU kernel runs: stop it (cuda-gdb focuses on a device thread)."""
        try:
            self.session.require_controller().interrupt()
        except TargetError:
            pass

    def close(self) -> list[str]:
        return self.session.close()


def _deferred(action: str, **args: Any) -> Any:
    from .gpu_session import Deferred

    return Deferred(action, args)


def _hit(number: int) -> Any:
    return _deferred("hit", number=number)
