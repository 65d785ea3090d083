"""The ``KernelLaunch`` message that asks the front end to attach a debugger to a
launch: the kernel, its views and subviews, and the program's frames around it."""

from __future__ import annotations

import bdb
import os
import threading
import types
from typing import TYPE_CHECKING, Any

from .kernel_lines import function_span, index_names
from .link import AgentLink
from .stop_indices import slow_conditions

if TYPE_CHECKING:
    from ..kernel_protocol import KernelLaunch

_AGENT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def launch_message(
    link: AgentLink, dispatch: Any, kernel: Any, crash_signal: int = 0
) -> KernelLaunch:
    """What the front end needs to debug ``kernel``'s launch by ``dispatch``."""
    from ..kernel_protocol import KernelLaunch  # loaded once a kernel is debugged

    workunit = dispatch.workunit
    views = view_shapes(dispatch.kwargs)
    _, first, last = function_span(workunit)
    return KernelLaunch(
        id=link.new_id(),
        pid=os.getpid(),
        kernel=workunit.__name__,
        space=dispatch.space.name.lower(),
        operation=dispatch.operation,
        filename=os.path.abspath(workunit.__code__.co_filename),
        first_line=first,
        last_line=last,
        library=str(kernel.library) if kernel.library is not None else "",
        source=str(kernel.source),
        index=", ".join(index_names(workunit, getattr(dispatch.policy, "rank", 1))),
        views=views,
        breakpoints=dispatch.extra.get("pkdb_breakpoints", []),
        call_stack=call_stack(dispatch.frame),
        agent_tids=[
            t.native_id
            for t in threading.enumerate()
            if t is not _main_thread() and t.native_id is not None  # started: not None
        ],
        variable_kinds=dict(kernel.entry.variable_kinds),
        subviews=shown_subviews(workunit, kernel.entry.subviews),
        pools=launch_pools(dispatch),
        field_names=field_names(workunit),
        kernel_symbol=kernel.kernel_symbol,
        team_member=team_member_name(workunit, dispatch.policy),
        crash_signal=crash_signal,
        fast_library=str(fast.library) if (fast := dispatch.fast_build) is not None else "",
        partial_debug=fast is not None and dispatch.debug_indices is not None,
        step_in=bool(dispatch.extra.get("pkdb_step_in")),
        slow_conditions=slow_conditions(dispatch, kernel),
    )


def view_shapes(arguments: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The array arguments among ``arguments`` (a ``pk.View`` by its array): name ->
    rank, dtype and shape."""
    from pkernels.api.views import unwrap

    arrays = {name: unwrap(value) for name, value in arguments.items()}
    return {
        name: {"rank": value.ndim, "dtype": str(value.dtype), "shape": list(value.shape)}
        for name, value in arrays.items()
        if hasattr(value, "ndim") and hasattr(value, "shape")
    }


def shown_subviews(workunit: Any, subviews: dict[str, Any]) -> dict[str, Any]:
    """The kernel's subviews, those of a method's fields named as the method writes them
    (``self.A``, which the kernel calls ``self_A``)."""
    if not isinstance(workunit, types.MethodType):
        return dict(subviews)
    prefix = workunit.__func__.__code__.co_varnames[0] + "_"
    return {
        name: {**d, "shown": d["view"].replace(prefix, prefix[:-1] + ".", 1)}
        if d["view"].startswith(prefix)
        else d
        for name, d in subviews.items()
    }


def launch_pools(dispatch: Any) -> dict[str, str]:
    """The random pools the launch draws from, by the kernel's parameter name (a
    workload's fields as the kernel names them: ``self_pool``), as the program shows them."""
    return {name: repr(pool) for name, pool in pool_arguments(dispatch).items()}


def pool_arguments(dispatch: Any) -> dict[str, Any]:
    """The random pool objects the launch draws from, by the kernel's parameter name."""
    from pkernels.api.random_pools import RandomPool

    arguments = dict(dispatch.kwargs)
    if isinstance(dispatch.workunit, types.MethodType):
        from pkernels.translate.methods import method_form

        arguments.update(method_form(dispatch.workunit)[1])
    return {name: value for name, value in arguments.items() if isinstance(value, RandomPool)}


def field_names(workunit: Any) -> dict[str, str]:
    """A workload method's fields by the kernel's parameter name (``self_pool``), as the
    method writes them (``self.pool``); {} for a plain workunit."""
    found = workload_fields(workunit)
    if found is None:
        return {}
    owner, fields = found
    return {f"{owner}_{name}": f"{owner}.{name}" for name in fields}


def workload_fields(workunit: Any) -> tuple[str, dict[str, Any]] | None:
    """A workload method's ``self`` name and the fields its kernel reads, by field name
    (``("self", {"pool": <the pool>})``); None for a plain workunit."""
    if not isinstance(workunit, types.MethodType):
        return None
    from pkernels.translate.methods import method_form

    form: Any
    form, arguments = method_form(workunit)  # the form carries the self name and fields
    owner = form.__pkernels_self__
    return owner, {name: arguments[f"{owner}_{name}"] for name in form.__pkernels_fields__}


def team_member_name(workunit: Any, policy: Any) -> str:
    """A TeamPolicy workunit's team member parameter (its first); "" for other policies."""
    if type(policy).__name__ != "TeamPolicy":
        return ""
    return index_names(workunit, 1)[0]


_DEBUGGER_RUN_CODES = (bdb.Bdb.run.__code__, bdb.Bdb.runcall.__code__)


def host_frames(frame: types.FrameType | None) -> list[types.FrameType]:
    """The program's frames from the dispatch call site outwards (pkdb's, bdb's and
    frozen ones left out): what a kernel stop's `where` lists after the kernel frames."""
    frames = []
    while frame is not None:
        if frame.f_code in _DEBUGGER_RUN_CODES:
            break  # below the program: pdb's run(), then pkdb's own start-up
        raw = frame.f_code.co_filename
        filename = os.path.abspath(raw)
        hidden = raw.startswith("<") or filename.startswith(_AGENT_DIR)
        if not (hidden or filename == os.path.abspath(bdb.__file__)):
            frames.append(frame)
        frame = frame.f_back
    return frames


def call_stack(frame: types.FrameType | None) -> list[list[Any]]:
    """The program's frames from the outermost to the dispatch call site."""
    return [
        [os.path.abspath(f.f_code.co_filename), f.f_lineno, f.f_code.co_name]
        for f in reversed(host_frames(frame))
    ]


def _main_thread() -> threading.Thread:
    return threading.main_thread()
