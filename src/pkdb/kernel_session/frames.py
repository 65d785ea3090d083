"""Where a kernel thread is: its Python frames (kernel frames, then the dispatch's host
frames), whether it runs the kernel's code, and a team kernel's league and team rank."""

from __future__ import annotations

import dataclasses
import re

from pkernels.build.runtime import INCLUDE_DIR

from ..targets.base import FrameInfo, TargetError
from ..teams import TeamPosition
from .state import SessionState

#: Where the runtime headers kernels include live: frames there are kernel code.
_RUNTIME_DIR = str(INCLUDE_DIR) + "/"

#: The template argument of a release build's body (``spin<false>``).
_RELEASE_VARIANT = re.compile(r"<(true|false)>$")


def cpp_name(py_name: str) -> str:
    """The generated code's name of a kernel variable (pkernels' translator rule)."""
    from pkernels.translate.emit_exprs import cpp_name as translate

    return translate(py_name)


class KernelFrames(SessionState):
    """The frames part of a kernel session."""

    def in_kernel_code(self, thread: int) -> bool:
        """Whether ``thread`` is in the kernel's generated code (at a Python line or not;
        one done with its iterations waits in the OpenMP runtime)."""
        if self.launch is None:
            return False
        sources = {self.launch.source, self.launch.library, self.launch.fast_library} - {""}
        stack = self.require_controller().stack(thread, max_depth=1)
        if not stack:
            return False
        place = stack[0].fullname or stack[0].file or ""
        # The runtime the kernel includes (pkernels/include) is kernel code too.
        return place in sources or stack[0].file in sources or place.startswith(_RUNTIME_DIR)

    def _debug_code_thread(self, threads: list[int | None]) -> int | None:
        """The first of ``threads`` (stopped ones) whose innermost Python frame is in a
        HYBRID launch's debug build, not its release code."""
        for thread in threads:
            if not thread:
                continue
            try:
                frames = self.python_frames(thread)
            except TargetError:
                continue  # not stopped after all
            address = frames[0].address if frames else None
            if address is not None and not any(a <= address < b for a, b in self._release_ranges):
                return thread
        return None

    def python_frames(self, thread: int, stack: list[FrameInfo] | None = None) -> list[FrameInfo]:
        """The kernel frames of ``thread`` that map to Python lines (innermost first);
        ``stack``: its gdb stack, when the caller already has it."""
        frames = self.require_controller().stack(thread, max_depth=64) if stack is None else stack
        kernel_frames = []
        release = self.launch is not None and self.launch.crash_signal != 0
        # Frames inlined into a kernel line share its address: the line's own frame says
        # where it is; a helper inlined there (a check's) is no frame of the user's.
        at_lines = {f.address for f in frames if f.file and f.file.endswith(".py")}
        for frame in frames:
            if "pk_launch_" in (frame.function or ""):
                break  # the generated launcher: below it is the runtime, then Python's C
            if frame.file and frame.file.endswith(".py"):
                if release and frame.function:  # the release body: a template on PK_NA
                    frame = dataclasses.replace(
                        frame, function=_RELEASE_VARIANT.sub("", frame.function)
                    )
                kernel_frames.append(frame)
            elif release and frame.address is not None and frame.address not in at_lines:
                # A release build: the body is inlined and its frame shows the launcher's
                # line, but the line table still maps the address to the Python line.
                mapped = self._python_line(thread, frame.address)
                previous = kernel_frames[-1] if kernel_frames else None
                if mapped is not None and previous and (previous.file, previous.line) == mapped:
                    continue  # the same line as the inlined body's frame above it
                if mapped is not None:
                    file, line = mapped
                    kernel_frames.append(  # named after the kernel, not the OpenMP region
                        dataclasses.replace(
                            frame, function=self.launch.kernel, file=file, fullname=file, line=line
                        )
                    )
        return kernel_frames

    def _python_line(self, thread: int, address: int) -> tuple[str, int] | None:
        """The Python file and line gdb's line table gives ``address``, if any."""
        try:
            found = self.require_controller().line_of_address(address, thread)
        except TargetError:
            return None
        return found if found is not None and found[0].endswith(".py") else None

    def location(self, thread: int, frame: int = 0) -> FrameInfo | None:
        """The ``frame``-th Python frame of ``thread``: its kernel frames, innermost
        first, then the host frames of the dispatch (level -1: no gdb frame)."""
        frames = self.python_frames(thread)
        if frame < len(frames):
            return frames[frame]
        host = self.host_frames()
        index = frame - len(frames)
        return host[index] if index < len(host) else None

    def host_frames(self) -> list[FrameInfo]:
        """The dispatch's host frames, from its call site outwards."""
        stack = reversed(self.launch.call_stack) if self.launch else []
        return [FrameInfo(-1, function, file, file, line, None) for file, line, function in stack]

    def host_frame_index(self, thread: int, frame: int) -> int | None:
        """Which host frame the ``frame``-th Python frame of ``thread`` is (0: the call
        site), or None for a kernel frame."""
        kernel_frames = len(self.python_frames(thread))
        return frame - kernel_frames if frame >= kernel_frames else None

    def frame_level(self, thread: int, frame: int) -> int:
        """gdb's level of the ``frame``-th Python frame of ``thread`` (a kernel frame)."""
        frames = self.python_frames(thread)
        return frames[frame].level if frame < len(frames) else 0

    def team_position(
        self, thread: int, stack: list[FrameInfo] | None = None
    ) -> TeamPosition | None:
        """League and team rank of ``thread`` in a team kernel (None elsewhere, or for a
        thread outside the kernel's code). Read from the innermost frame that has the
        team member: the workunit's parameter, a team helper's ``tm``, or the
        launcher's ``pk_tm`` (between league ranks)."""
        if not self.team_member:
            return None
        controller = self.require_controller()
        if stack is None:
            stack = controller.stack(thread, max_depth=64)
        for frame in stack:
            expression = self._team_expression(frame)
            if expression is None:
                continue
            try:
                text = controller.evaluate(f"*&{expression}", thread, frame.level)
            except TargetError:
                continue
            position = TeamPosition.parse(text)
            if position is not None:
                return position
        return None

    def _team_expression(self, frame: FrameInfo) -> str | None:
        function = (frame.function or "").split("(")[0]
        if self.launch is not None and function == self.launch.kernel_symbol:
            return cpp_name(self.team_member)
        if function.startswith("pk_rt::team_"):
            return "tm"
        if "pk_launch_" in function:
            return "pk_tm"
        return None
