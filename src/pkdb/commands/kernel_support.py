"""What kernel commands share: access to the kernel session and the agent, formatting."""

from __future__ import annotations

import ast
import linecache
import re
from typing import Any, Protocol

from .. import assigned, complex_values, float32, memviews, subviews, typed_values
from ..assigned import unassigned_locals
from ..gdbexpr import parse_gdb_value
from ..kernel_protocol import HOST_FRAME, KernelReply
from ..kernel_session import KernelSession
from ..stop_lines import python_function
from ..structs import decode as decode_struct
from ..structs import is_encoded as is_struct
from ..targets.base import TargetError
from ..teams import TeamPosition, decode, is_encoded
from .registry import Console


class KernelConsole(Console, Protocol):
    """The front end as kernel commands see it."""

    kernel: KernelSession
    #: ``display`` expressions of kernel mode, with the value last shown.
    kernel_displays: dict[str, str]

    def report_kernel_stop(self, event: Any) -> None:
        """Print where the kernel stopped, then the displays whose value changed."""

    def resume_kernel(self) -> None:
        """Let the kernel threads run until the next stop, the kernel's end, or a prompt."""

    def kernel_request(self, action: str, **args: Any) -> KernelReply:
        """Ask the agent (its reader thread) to do ``action`` and wait for the reply."""

    def watch_partial_continue(self, threads: list[int]) -> None:
        """``continue threads``: the chosen threads run, the others are held; should the
        chosen ones all end their iterations (and wait for the held ones at the kernel's
        end), give the prompt back instead of waiting for ever."""

    def debug_rest_of_launch(self) -> None:
        """Have a launch that runs only some indices in the debug build run the rest
        there too."""

    def read_answer(self, prompt: str) -> str | None:
        """A line the user types after ``prompt``; None at the end of input."""


def kernel_values(
    console: KernelConsole, thread: int | None = None, frame: int | None = None
) -> dict[str, Any]:
    """Scalar and struct (``@pk.classtype``) arguments and locals of a kernel frame (the
    selected one by default) as Python values.

    Views and random pools are left out: the agent evaluates over the caller's own
    arrays and pools instead (the kernel holds a pool's launch key). A TeamPolicy
    kernel's team member is sent as :meth:`TeamPosition.encode` has it.
    """
    kernel = console.kernel
    stop = kernel.require_stop()
    thread = stop.thread if thread is None else thread
    frame = stop.frame if frame is None else frame
    host = kernel.host_frame_index(thread, frame)
    if host is not None:  # `up` past the kernel: the agent evaluates in that host frame
        return {HOST_FRAME: host}
    level = kernel.frame_level(thread, frame)
    controller = kernel.require_controller()
    raw = {**controller.args(thread, level), **controller.locals(thread, level)}
    here = kernel.location(thread, frame)
    # Declared (as 0) at the def line, in Python they do not exist before their line.
    unassigned = unassigned_locals(here.file, here.line) if here and here.file else frozenset()
    types: dict[str, str] | None = None  # read when a variable may be a view
    launch = kernel.launch
    views = launch.views if launch else {}
    kinds = launch.variable_kinds if launch else {}
    pools = launch.pools if launch else {}
    values = {}
    team_member = kernel.team_member
    for name, text in raw.items():
        if name in views or name.startswith("pk_"):
            continue
        py_name = name[:-1] if name.endswith("_") else name
        if py_name in pools:
            continue
        if py_name in unassigned:
            values[py_name] = assigned.marker()
            continue
        if team_member and py_name == team_member:
            position = TeamPosition.parse(text)
            if position is not None:
                values[py_name] = position.encode()
            continue
        if "extent = {" in text:  # a view of the kernel's own (scratch), or of a field
            if types is None:
                types = controller.variable_types(thread, level)
            view = memviews.encode(text, types.get(name, ""))
            if view is not None:
                values[py_name] = view
                continue
        value = typed_values.from_gdb(py_name, text, kinds)  # numbers, structs, complex
        if value is not None:
            values[py_name] = value
    for name, description in (launch.subviews if launch else {}).items():
        subview = subviews.encode(description, raw)
        if subview is not None:
            values[name] = subview
    return values


def format_value(value: Any) -> str:
    """A kernel value as Python shows it (a team member as ``TeamMember(...)``)."""
    if assigned.is_marker(value):
        return "<not yet assigned>"
    if is_encoded(value):
        return repr(decode(value))
    if is_struct(value):
        return repr(decode_struct(value))
    if float32.is_encoded(value):
        return repr(float32.decode(value))
    if complex_values.is_encoded(value):
        return repr(complex_values.decode(value))
    if subviews.is_encoded(value):
        return subviews.describe(value)
    if memviews.is_encoded(value) or memviews.is_copy(value):
        return memviews.describe(value)
    if isinstance(value, bool):
        return "True" if value else "False"
    return repr(value)


def shown_name(launch: Any, name: str) -> str:
    """How ``args`` and ``locals`` name the kernel variable ``name`` (the debugger's):
    as the program writes it, a workload's field ``self.pool`` rather than the
    parameter ``self_pool`` the kernel takes it as, and no C++ keyword's ``_``."""
    py_name = name[:-1] if name.endswith("_") else name
    return (launch.field_names if launch else {}).get(py_name, py_name)


def pool_argument(launch: Any, name: str, text: str) -> str | None:
    """How ``args`` shows the kernel parameter ``name`` (gdb's text ``text``) when it
    receives a random pool: the pool the program passed, and this launch's key, which
    is all the kernel holds of it; None for any other parameter."""
    pool = (launch.pools if launch else {}).get(name[:-1] if name.endswith("_") else name)
    if pool is None:
        return None
    key = parse_gdb_value(text)
    return f"{pool} (this launch's key: {key})" if isinstance(key, int) else pool


def guarded(handler):
    """Report a target debugger error as a command error; the session goes on."""

    def run(console: KernelConsole, arg: str) -> None:
        try:
            handler(console, arg)
        except TargetError as exc:
            console.error(str(exc))

    run.__doc__ = handler.__doc__
    run.__name__ = handler.__name__
    return run


#: A breakpoint's place as ``break`` takes it: ``[FILE:]LINE [if CONDITION]`` (or
#: ``LINE, CONDITION``).
BREAKPOINT_LOCATION = re.compile(
    r"^(?:(?P<file>[^:\s]+):)?(?P<line>\d+)\s*(?:(?:,|\bif\b)\s*(?P<cond>.+))?$"
)


def listed_range(
    text: str, here: tuple[str, int], listed: tuple[str, int, int] | None
) -> tuple[int, int]:
    """The first and last line ``list TEXT`` shows at line ``here`` (file, line), as
    pdb's ``list`` does: with no text, the 11 lines after what was ``listed`` last from
    here, else 11 around the line; ``.``, 11 around it; ``FIRST``, 11 around that;
    ``FIRST, LAST``, that range (a LAST below FIRST is a count). ValueError for text
    that names no lines."""
    if not text and listed is not None and listed[:2] == here:
        first = listed[2] + 1
        return first, first + 10
    if not text or text == ".":
        first = max(1, here[1] - 5)
        return first, first + 10
    start, _, end = text.partition(",")
    first = int(start)
    if end.strip():
        last = int(end)
        return first, first + last if last < first else last
    first = max(1, first - 5)
    return first, first + 10


def show_frames(
    console: Console, kernel_frames: list[Any], host_frames: list[Any], current: int
) -> None:
    """``where``'s lines: the kernel frames (innermost first, by their Python names),
    then the host frames that dispatched the kernel; ``>`` marks frame ``current``."""
    frames = [(f, python_name(f.function)) for f in kernel_frames]
    frames += [(f, f.function) for f in host_frames]
    for number, (frame, name) in enumerate(frames):
        marker = ">" if number == current else " "
        console.message(f"{marker} #{number} {frame.file}:{frame.line} ({name})")


def enclosing_function(file: str, line: int) -> tuple[int, int] | None:
    """The first and last line (decorators included) of the innermost function
    definition in ``file`` around ``line``."""
    try:
        tree = ast.parse("".join(linecache.getlines(file)))
    except SyntaxError:
        return None
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            last = node.end_lineno or node.lineno
            if first <= line <= last and (best is None or first >= best[0]):
                best = (first, last)
    return best


#: The Python name of a kernel frame's C++ function (``pk_kernel::yAx(long, ...)`` ->
#: ``yAx``), as stop lines show it.
python_name = python_function
