"""``eval`` and ``parallel_print`` at a kernel stop: Python over the live program.

The namespace is the dispatch call site's locals and globals, the kernel's views (the
caller's own arrays, under the kernel's parameter names) and the kernel's scalar
variables in the selected thread. Array writes land in the arrays themselves. After a
statement, what changed is written back where it lives: call-site locals into their
frame (so the host code sees them after ``continue``), globals in place, and kernel
scalars are returned so the front end can store them into the held thread with gdb.
"""

from __future__ import annotations

import ctypes
import sys
import types
from typing import Any

from .. import assigned, memviews, subviews
from ..kernel_protocol import HOST_FRAME

_MISSING = object()


def _selected_frame(dispatch: Any, kernel_locals: dict[str, Any]) -> types.FrameType | None:
    if HOST_FRAME not in kernel_locals:
        return dispatch.frame
    from .launch_message import host_frames

    frames = host_frames(dispatch.frame)
    index = kernel_locals[HOST_FRAME]
    return frames[index] if 0 <= index < len(frames) else None


def _namespace(dispatch: Any, kernel_locals: dict[str, Any]) -> tuple[dict, dict]:
    if HOST_FRAME in kernel_locals:  # a frame of the host code: its names only
        frame = _selected_frame(dispatch, kernel_locals)
        if frame is None:
            return {}, {}
        return frame.f_globals, dict(frame.f_locals)
    frame = dispatch.frame
    namespace: dict[str, Any] = dict(frame.f_locals) if frame is not None else {}
    namespace.update(dispatch.kwargs)
    arrays = dict(dispatch.kwargs)
    workunit = dispatch.workunit
    if isinstance(workunit, types.MethodType):  # a workload's or functor's kernel method
        from pkernels.translate.methods import method_form

        namespace.setdefault(workunit.__func__.__code__.co_varnames[0], workunit.__self__)
        arrays.update(method_form(workunit)[1])  # its fields, as the kernel names them
    unassigned = set()
    for name, value in kernel_locals.items():
        if assigned.is_marker(value):  # the kernel's, but without a value at this line
            unassigned.add(name)
            namespace.pop(name, None)  # a call-site name it shadows included
            continue
        if memviews.is_encoded(value):  # a scratch view: the team's memory itself
            namespace[name] = memviews.resolve(value)
            continue
        if not subviews.is_encoded(value):
            namespace[name] = value
            continue
        # A subview is the NumPy view of the caller's array it is in the kernel.
        try:
            namespace[name] = subviews.resolve(value, arrays)
        except (KeyError, IndexError, TypeError):
            pass  # not shown rather than failing every expression
    if unassigned:
        namespace = _KernelNamespace(namespace, unassigned)
    return (frame.f_globals if frame is not None else {}), namespace


class _KernelNamespace(dict):
    """The names an expression sees at a kernel stop, where some of the kernel's locals
    have no value yet: reading one fails as it would in Python."""

    def __init__(self, values: dict[str, Any], unassigned: set[str]) -> None:
        super().__init__(values)
        self._unassigned = unassigned

    def __getitem__(self, name: str) -> Any:
        if name in self._unassigned and not dict.__contains__(self, name):
            raise UnboundLocalError(
                f"cannot access local variable {name!r} where it is not associated with a "
                "value (not assigned yet at this line)"
            )
        return super().__getitem__(name)


def frame_names(dispatch: Any, which: str, kernel_locals: dict[str, Any]) -> list[list[str]]:
    """``[name, repr]`` of the selected host frame's locals, or of its arguments."""
    frame = _selected_frame(dispatch, kernel_locals)
    if frame is None:
        return []
    names = list(frame.f_locals)
    if which == "args":
        code = frame.f_code
        count = code.co_argcount + code.co_kwonlyargcount
        count += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)  # *args, **kwargs
        names = [n for n in code.co_varnames[:count] if n in frame.f_locals]
    return [
        [name, _short_repr(frame.f_locals[name])] for name in names if not name.startswith("__")
    ]


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def evaluate(dispatch: Any, expr: str, kernel_locals: dict[str, Any]) -> Any:
    """The value of the expression ``expr``."""
    globals_, namespace = _namespace(dispatch, kernel_locals)
    return eval(compile(expr, "<pkdb>", "eval"), globals_, namespace)


def evaluate_many(dispatch: Any, expr: str, per_thread: list[dict[str, Any]]) -> list[str]:
    """``repr`` of ``expr`` for each thread's kernel variables (an error's text instead)."""
    code = compile(expr, "<pkdb>", "eval")
    results = []
    for kernel_locals in per_thread:
        globals_, namespace = _namespace(dispatch, kernel_locals)
        try:
            results.append(repr(eval(code, globals_, namespace)))
        except Exception as exc:  # noqa: BLE001 - shown in that thread's row
            results.append(f"<{type(exc).__name__}: {exc}>")
    return results


def execute(dispatch: Any, source: str, kernel_locals: dict[str, Any]) -> tuple[str, dict]:
    """Run ``source`` (an expression: its repr is returned; else statements).

    Returns ``(text, kernel_writes)``: kernel scalars the statements changed.
    """
    try:
        code = compile(source, "<pkdb>", "eval")
    except SyntaxError:
        code = None
    if code is not None:
        return repr(evaluate(dispatch, source, kernel_locals)), {}
    globals_, namespace = _namespace(dispatch, kernel_locals)
    before = dict(namespace)
    exec(compile(source, "<pkdb>", "exec"), globals_, namespace)
    changed = {
        name: value for name, value in namespace.items() if before.get(name, _MISSING) is not value
    }
    kernel_writes = {n: _number(v) for n, v in changed.items() if n in kernel_locals}
    frame = _selected_frame(dispatch, kernel_locals)
    host_writes = {
        n: v for n, v in changed.items() if n not in kernel_locals and n not in dispatch.kwargs
    }
    if HOST_FRAME in kernel_locals:
        kernel_writes, host_writes = {}, changed
    if frame is not None and host_writes:
        _store_in_frame(frame, host_writes)
    return "", kernel_writes


def _number(value: Any) -> Any:
    """A value for a kernel variable as the front end can receive it (JSON): a NumPy
    scalar as the Python number it holds; anything but a number as its type's name,
    which the front end refuses to store."""
    if hasattr(value, "item") and hasattr(value, "dtype") and getattr(value, "shape", None) == ():
        value = value.item()
    return value if isinstance(value, bool | int | float) else f"<{type(value).__name__}>"


def _store_in_frame(frame: types.FrameType, values: dict[str, Any]) -> None:
    """Assign call-site variables so the frame itself sees them after ``continue``."""
    if frame.f_locals is frame.f_globals:  # module level: the dict *is* the namespace
        frame.f_globals.update(values)
        return
    frame.f_locals.update(values)
    if sys.version_info < (3, 13):
        # Before PEP 667, f_locals is a snapshot: copy it back into the fast locals.
        ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))
