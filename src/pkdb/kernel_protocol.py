"""Messages of kernel debugging, added to the channel of :mod:`pkdb.protocol`.

Conversation while a kernel is debugged (``←`` agent to front end)::

    ← kernel-launch    request (id): a debug build is loaded and about to run; what
                       the front end needs to attach gdb and set the breakpoints
    → kernel-go        reply: gdb is attached, breakpoints are set; launch now
    → kernel-request   request (id) the agent's reader thread answers while the kernel
                       runs or is held: evaluate Python, change breakpoints, finish
    ← kernel-reply     reply to a kernel-request
    ← kernel-busy      a long request (parallel_launch) is still running: the front end
                       keeps waiting for its reply
    ← kernel-finished  the kernel returned (or failed); host debugging resumes. After a
                       GPU kernel it is a request (id): the front end answers kernel-go,
                       saying whether to stop after the dispatch (``finish`` at a GPU
                       stop, where the held program could not be told)
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from typing import Any

from .agent.crash_watch import FAILED_CHECK
from .protocol import Message, message_type

__all__ = ["FAILED_CHECK"]


@message_type("kernel-launch")
@dataclass
class KernelLaunch(Message):
    """A kernel about to run in a debug build, with the breakpoints that concern it.

    ``breakpoints``: dicts with number, file, line, condition, temporary, enabled.
    ``views``: name -> {"rank", "dtype", "shape"}; ``index``: the index parameters' names
    (``"i, j"`` under an MDRangePolicy; the team member's under a TeamPolicy, which is
    also ``team_member``).
    ``call_stack``: the host frames of the dispatch, outermost first (file, line, function).
    """

    id: int
    pid: int
    kernel: str
    space: str
    operation: str
    filename: str
    first_line: int
    last_line: int
    library: str
    source: str
    index: str
    views: dict[str, Any] = field(default_factory=dict)
    breakpoints: list[dict[str, Any]] = field(default_factory=list)
    call_stack: list[list[Any]] = field(default_factory=list)
    agent_tids: list[int] = field(default_factory=list)
    variable_kinds: dict[str, str] = field(
        default_factory=dict
    )  # name -> float|float32|int|bool|complex64|complex128; struct fields as "p.q"
    # Subviews of the kernel by name (pkernels' Subview.describe): shown as NumPy views.
    subviews: dict[str, Any] = field(default_factory=dict)
    # Random pools by the kernel's parameter name (a workload's self.pool is self_pool):
    # the program's repr of each. The kernel holds only the launch's key (a uint64).
    pools: dict[str, str] = field(default_factory=dict)
    # A workload method's fields by the kernel's parameter name, as the program writes
    # them (``self_pool`` -> ``self.pool``): what args and locals show.
    field_names: dict[str, str] = field(default_factory=dict)
    kernel_symbol: str = ""  # the C++ function of the workunit body, e.g. pk_kernel::yAx
    team_member: str = ""  # a TeamPolicy workunit's team member parameter ("" otherwise)
    # Not 0: a release build got this fatal signal; gdb attaches to see it again. Or
    # FAILED_CHECK: a check of a checked release build failed, whose text is ``fault``.
    crash_signal: int = 0
    fault: str = ""
    # A HYBRID launch's release build running beside the debug build (its line tables
    # name the Python lines of threads still in release code), or "".
    fast_library: str = ""
    # Only some indices run in the debug build (those where a breakpoint condition on the
    # index holds, Dispatch.debug_indices); the request "debug_code" sends the rest there.
    partial_debug: bool = False
    # A Cuda launch: how its indices map to blocks and threads (CudaKernel.geometry).
    cuda_geometry: dict[str, Any] = field(default_factory=dict)
    # pdb's `step` at the dispatch line: stop the first thread to begin the kernel's body.
    step_in: bool = False
    # Breakpoints (numbers as strings) whose condition gdb tests each time a thread
    # reaches the line, and why pkdb could not evaluate it before the launch.
    slow_conditions: dict[str, str] = field(default_factory=dict)
    # A Cuda launch: what the evaluation helper of GPU stops needs (pkdb.device_eval):
    # the call site's names and the kernel's views (agent.device_snapshot), and the
    # program's interpreter, import path and working directory.
    device_names: dict[str, Any] = field(default_factory=dict)
    device_views: dict[str, Any] = field(default_factory=dict)
    python: str = ""
    python_path: list[str] = field(default_factory=list)
    cwd: str = ""

    @property
    def stop_at_next_index(self) -> bool:
        """Ctrl-C in a HYBRID launch's release code, which from then on hands each
        thread's next index to the debug build (the agent asks for it before sending
        this): stop there, where the variables are, rather than where the threads are."""
        return self.crash_signal == signal.SIGINT and bool(self.fast_library)


@message_type("kernel-go")
@dataclass
class KernelGo(Message):
    reply_to: int
    stop_after: bool = False  # the answer to a GPU kernel's kernel-finished


@message_type("kernel-request")
@dataclass
class KernelRequest(Message):
    """``action``: eval | exec | break | clear | disable | enable | condition | finish |
    hotswap | parallel_launch."""

    id: int
    action: str
    args: dict[str, Any] = field(default_factory=dict)


@message_type("kernel-reply")
@dataclass
class KernelReply(Message):
    reply_to: int
    ok: bool = True
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)


@message_type("kernel-busy")
@dataclass
class KernelBusy(Message):
    """Sent every few seconds while the agent works on a long kernel-request; the front
    end needs no handler: any message restarts its wait for the reply."""

    action: str = ""


@message_type("kernel-finished")
@dataclass
class KernelFinished(Message):
    kernel: str
    error: str | None = None
    id: int = 0  # not 0: a request (after a GPU kernel), answered by kernel-go


#: Kernel-mode requests that run the user's code (and may take long, or fail as the
#: program does): the agent answers them from a thread of their own.
USER_CODE_ACTIONS = frozenset({"eval", "exec", "eval_many", "parallel_launch"})

#: In the kernel locals the front end sends with an evaluation: the host frame selected
#: (`up` past the kernel's frames; 0 is the dispatch's call site). There are no kernel
#: locals then: the evaluation sees that frame's names.
HOST_FRAME = "__pkdb_host_frame__"
