"""Which threads of the debuggee are the kernel's, the numbers users know them by, and
holding and releasing them."""

from __future__ import annotations

from ..targets.base import FrameInfo, TargetError, ThreadInfo
from .state import SessionState

#: How long to wait for the stops that interrupts cause.
STOP_SETTLE_SECONDS = 0.02
#: The OpenMP runtime, whose threads (and the main thread) run OpenMP kernels.
OPENMP_RUNTIME = "/libgomp.so"

#: How many innermost frames tell a thread's role (see _role).
_ROLE_FRAMES = 64
#: The calling thread's OpenMP thread number, for gdb to evaluate in a stopped thread
#: (libgomp has no debug information: the call is cast to the function's type).
_OMP_THREAD_NUM = "((int (*)(void))omp_get_thread_num)()"


class KernelThreads(SessionState):
    """The thread part of a kernel session."""

    _roles: dict[int, str]
    _openmp_code: list[tuple[int, int]] | None
    _numbers: dict[int, int]
    _numbers_pending: set[int]

    def release_agent_threads(self) -> set[int]:
        """Let the agent's threads run again (a signal may have stopped them): they
        answer the front end while the kernel is held. Their gdb ids."""
        hidden = set(self.launch.agent_tids if self.launch else ())
        agent = {t.id for t in self.require_controller().threads() if t.os_tid in hidden}
        stopped = [t for t in agent if t in self.require_controller().stopped_threads()]
        if stopped:
            self.require_controller().continue_(stopped)
        return agent

    def hold_running_threads(self) -> list[int]:
        """Interrupt every kernel thread still running; their ids."""
        controller = self.require_controller()
        running = [t.id for t in self.kernel_threads() if not t.stopped]
        if not running:
            return []
        try:
            controller.interrupt(running)
        except TargetError:
            pass  # a thread that just exited
        controller.drain_stops(STOP_SETTLE_SECONDS, limit=1.0)
        return running

    def kernel_threads(self) -> list[ThreadInfo]:
        """The threads of the kernel: the thread that dispatched it and, on OpenMP, the
        OpenMP runtime's; not the agent's, nor any other thread of the program (NumPy's
        BLAS pool, say) once seen stopped (see :meth:`release_other_threads`)."""
        hidden = set(self.launch.agent_tids if self.launch else ())
        serial = self.launch is not None and self.launch.space == "serial"
        kept = []
        for thread in self.require_controller().threads():
            role = self._roles.get(thread.os_tid or 0)
            if thread.os_tid in hidden or role == "other" or (serial and role == "pool"):
                continue
            kept.append(thread)
        return kept

    def release_other_threads(self) -> None:
        """Let the stopped threads that run no kernel code go on (an interrupt stopped
        them with the rest): from now on they are not kernel threads."""
        controller = self.require_controller()
        serial = self.launch is not None and self.launch.space == "serial"
        others = []
        for thread in self.kernel_threads():
            if not thread.stopped or not thread.os_tid:
                continue
            role = self._role(thread)
            if role == "other" or (serial and role == "pool"):
                others.append(thread.id)
        if others:
            controller.continue_(others)

    def _role(self, thread: ThreadInfo) -> str:
        """``main``: the program's main thread, which dispatches kernels (OpenMP thread 0);
        ``pool``: a thread of the OpenMP runtime; ``other``: any other thread. Read from
        the stack of a stopped thread, once."""
        tid = thread.os_tid or 0
        role = self._roles.get(tid)
        if role is None:
            if self.launch is not None and tid == self.launch.pid:
                role = "main"
            else:
                controller = self.require_controller()
                if self._openmp_code is None:
                    self._openmp_code = controller.library_ranges(OPENMP_RUNTIME)
                stack = controller.stack(thread.id, max_depth=_ROLE_FRAMES)
                role = "pool" if self._openmp_frames(stack) else "other"
            self._roles[tid] = role
        return role

    def _openmp_frames(self, stack: list[FrameInfo]) -> bool:
        """Whether ``stack`` has frames of a kernel (its Python lines, a launcher) or of
        the OpenMP runtime. (A deep recursion in a kernel hides the runtime's frames
        below its own: those are enough.)"""
        code = self._openmp_code or []
        return any(
            (frame.file or "").endswith(".py")
            or "pk_launch_" in (frame.function or "")
            or any(a <= (frame.address or -1) < b for a, b in code)
            for frame in stack
        )

    def thread_number(self, thread: int) -> int:
        """The number users know kernel thread ``thread`` (gdb's id) by: its OpenMP thread
        number, as ``omp_get_thread_num()`` and a failed check's message give it (0: the
        thread that dispatched the kernel; a Serial kernel's only thread)."""
        number = self._numbers.get(thread)
        if number is None:
            self._numbers_pending.add(thread)
            try:
                number = self._read_thread_number(thread)
            finally:
                self._numbers_pending.discard(thread)
            self._numbers[thread] = number
        return number

    def _read_thread_number(self, thread: int) -> int:
        controller = self.require_controller()
        info = next((t for t in controller.threads() if t.id == thread), None)
        if info is not None and self.launch is not None and info.os_tid == self.launch.pid:
            return 0
        try:
            text = controller.evaluate(_OMP_THREAD_NUM, thread, 0)
            return int(text.strip())
        except (TargetError, ValueError):
            pass  # its stack is used up (the call got a signal), or no OpenMP runtime
        # The number no other kernel thread has, when there is one.
        others = {
            self.thread_number(t.id)
            for t in self.kernel_threads()
            if t.stopped and t.id != thread and t.id not in self._numbers_pending
        }
        free = [n for n in range(len(others) + 1) if n not in others]
        return free[0] if len(free) == 1 else thread

    def thread_of_number(self, number: int) -> int | None:
        """gdb's id of the stopped kernel thread users know as ``number``, if any."""
        for thread in self.kernel_threads():
            if thread.stopped and self.thread_number(thread.id) == number:
                return thread.id
        return None
