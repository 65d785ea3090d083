"""PyKokkos workload classes: ``@pk.workload``, ``@pk.main``, ``@pk.callback``,
``pk.execute(space, obj)``; and ``@pk.functor`` classes.

A workload is a class whose ``@pk.workunit`` methods read its fields as ``self.x``
(views and scalars); its ``@pk.main`` method dispatches them, e.g.
``self.total = pk.parallel_reduce(self.n, self.reduce)``; ``pk.execute`` runs the main
method(s) on a space, then the ``@pk.callback`` methods.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, TypeVar

from .spaces import ExecutionSpace, get_default_space, resolve_space, set_default_space
from .views import ViewTypeInfo

C = TypeVar("C", bound=type)
F = TypeVar("F", bound=Callable[..., Any])


def workload(cls: C | None = None, **view_types: ViewTypeInfo) -> Any:
    """Mark a class as a workload (its kernels are ``@pk.workunit`` methods).

    ``@pk.workload(A=pk.ViewTypeInfo(layout=pk.LayoutLeft))`` (PyKokkos' form) is
    accepted: kernels take each view's layout from the array itself."""
    return _class_decorator("workload", cls, view_types, workload=True)


def functor(cls: C | None = None, **view_types: ViewTypeInfo) -> Any:
    """Mark a PyKokkos functor class: an object whose ``@pk.workunit`` methods read its
    fields as ``self.x`` and are dispatched as ``pk.parallel_for(n, obj.method)``.
    Keywords as for :func:`workload`."""
    return _class_decorator("functor", cls, view_types, workload=False)


def _class_decorator(name: str, cls: Any, view_types: dict[str, Any], workload: bool) -> Any:
    for field_name, info in view_types.items():
        if not isinstance(info, ViewTypeInfo):
            raise TypeError(f"@pk.{name}({field_name}=...) takes a pk.ViewTypeInfo, not {info!r}")

    def apply(klass: C) -> C:
        if not isinstance(klass, type):
            raise TypeError(f"@pk.{name} decorates a class, not {klass!r}")
        if workload:
            klass.__pkernels_workload__ = True  # type: ignore[attr-defined]
        klass.__pkernels_view_types__ = dict(view_types)  # type: ignore[attr-defined]
        return klass

    return apply(cls) if cls is not None else apply


def main(method: F) -> F:
    """Mark the method ``pk.execute`` runs first (it dispatches the kernels)."""
    method.__pkernels_role__ = "main"  # type: ignore[attr-defined]
    return method


def callback(method: F) -> F:
    """Mark a method ``pk.execute`` runs after the main method(s), e.g. to report."""
    method.__pkernels_role__ = "callback"  # type: ignore[attr-defined]
    return method


def _methods(obj: Any, role: str) -> list[Callable[..., Any]]:
    found = []
    for klass in reversed(type(obj).__mro__):  # definition order, base classes first
        for name, value in vars(klass).items():
            if getattr(value, "__pkernels_role__", None) == role:
                found.append(getattr(obj, name))
    return found


def execute(space: ExecutionSpace, obj: Any) -> None:
    """Run a workload: its ``@pk.main`` method(s) with ``space`` as the default space
    (``ExecutionSpace.Default`` keeps the current one), then its ``@pk.callback`` ones."""
    if not getattr(type(obj), "__pkernels_workload__", False):
        raise TypeError(f"pk.execute needs an instance of a @pk.workload class, not {obj!r}")
    mains = _methods(obj, "main")
    if not mains:
        raise TypeError(f"{type(obj).__name__} has no @pk.main method")
    previous = get_default_space()
    set_default_space(resolve_space(space))
    try:
        for method in mains:
            try:
                _with_fields_in_scope(method, obj)()
            except NameError as exc:
                _note_bare_field(exc, obj)
                raise
    finally:
        set_default_space(previous)
    for method in _methods(obj, "callback"):
        method()


def _with_fields_in_scope(method: Callable[..., Any], obj: Any) -> Callable[..., Any]:
    """``method`` (a bound ``@pk.main``) reading bare field names as PyKokkos does (see
    :mod:`pkernels.translate.main_fields`)."""
    from ..translate.main_fields import with_bare_fields

    func = getattr(method, "__func__", None)
    if not isinstance(func, types.FunctionType):
        return method
    return types.MethodType(with_bare_fields(func, obj), obj)


def _note_bare_field(exc: NameError, obj: Any) -> None:
    """A name @pk.main reads that is neither a field nor a global: if it is a class
    attribute, say that only the instance's fields are in scope without ``self.``."""
    name = getattr(exc, "name", None)
    if name and hasattr(type(obj), name):
        exc.add_note(f"write self.{name}: only the workload's fields are in scope without self.")
