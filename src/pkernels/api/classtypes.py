"""``@pk.classtype``: a small class of numbers usable as a value type in kernels.

In Python (and the ``Debug`` space) the class stays an ordinary class; the decorator
only marks it. Kernels and ``@pk.function`` helpers translate it to a C++ struct whose
fields are the annotated assignments ``self.f: T = ...`` of its ``__init__`` (in order),
with ``__init__`` as its constructor and its methods as functions taking it by reference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

C = TypeVar("C", bound=type)


@dataclass
class ClassTypeInfo:
    """What pkernels records on a classtype: its fields, once a kernel has used it."""

    fields: tuple[str, ...] | None = None


def classtype(cls: C) -> C:
    """Mark ``cls`` as a value type kernels may construct, pass, return and read."""
    if not isinstance(cls, type):
        raise TypeError(f"@pk.classtype decorates a class, not {cls!r}")
    cls.__pkernels_classtype__ = ClassTypeInfo()  # type: ignore[attr-defined]
    return cls


def classtype_info(obj: object) -> ClassTypeInfo | None:
    """The record of a class decorated with ``@pk.classtype`` itself, else None (a
    subclass must be decorated too)."""
    if not isinstance(obj, type):
        return None
    info = vars(obj).get("__pkernels_classtype__")
    return info if isinstance(info, ClassTypeInfo) else None


def is_classtype(obj: object) -> bool:
    return classtype_info(obj) is not None
