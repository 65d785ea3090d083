"""The fields of ``@pk.classtype`` classes, read from their ``__init__``.

A field is declared by an annotated assignment ``self.f: T = value`` at the top level of
``__init__``; the struct's fields are these, in order. Any other assignment to an
undeclared ``self.f`` is refused, so a field always has the one type its annotation says.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..api.classtypes import classtype_info
from . import ir
from .source import KernelSource

_DECLARE_HINT = "Declare each field in __init__ with its type, e.g. `self.{f}: float = {v}`."


@dataclass
class FieldDeclaration:
    name: str
    annotation: ast.expr
    node: ast.AnnAssign


@dataclass
class StructRegistry:
    """The classtypes one kernel uses (per translation): class -> StructType."""

    types: dict[type, ir.StructType] = field(default_factory=dict)
    in_progress: list[type] = field(default_factory=list)
    _names: set[str] = field(default_factory=set)

    def ctype_for(self, cls: type) -> str:
        """A C++ struct name for ``cls``, unique in the module."""
        name = f"pk_ct_{cls.__name__}"
        suffix = 1
        while name in self._names:
            suffix += 1
            name = f"pk_ct_{cls.__name__}_{suffix}"
        self._names.add(name)
        return name

    def add(self, struct: ir.StructType) -> None:
        self.types[struct.cls] = struct
        info = classtype_info(struct.cls)
        if info is not None:
            info.fields = tuple(name for name, _ in struct.fields)


def init_source(cls: type, where: KernelSource, node: ast.AST) -> KernelSource:
    """The source of ``cls.__init__`` (a TranslationError at ``node`` when it has none)."""
    init = vars(cls).get("__init__")
    if init is None or not hasattr(init, "__code__"):
        where.error(
            node,
            f"classtype {cls.__name__} has no __init__ of its own declaring its fields",
            hint="Give it an __init__ that declares every field: `self.x: float = x`.",
        )
    return KernelSource.of(init)


def self_name(source: KernelSource) -> str:
    args = source.tree.args.args
    if not args:
        source.error(source.tree, "a classtype method needs its `self` parameter")
    return args[0].arg


def field_declarations(source: KernelSource) -> list[FieldDeclaration]:
    """The fields ``__init__`` declares, in order; refuses assignments to undeclared ones."""
    me = self_name(source)
    found: dict[str, FieldDeclaration] = {}
    for stmt in source.tree.body:
        name = _self_field(stmt.target, me) if isinstance(stmt, ast.AnnAssign) else None
        if name is None:
            continue
        if stmt.value is None:
            source.error(stmt, f"the field {me}.{name} needs a value here", hint="e.g. `= 0`.")
        previous = found.get(name)
        if previous is not None:
            if ast.dump(previous.annotation) != ast.dump(stmt.annotation):
                source.error(
                    stmt.annotation,
                    f"the field {me}.{name} was declared on line {previous.node.lineno} with "
                    "another type; a field keeps one type",
                )
            continue
        found[name] = FieldDeclaration(name, stmt.annotation, stmt)
    for node in ast.walk(source.tree):
        if isinstance(node, ast.AnnAssign) and node not in (d.node for d in found.values()):
            name = _self_field(node.target, me)
            if name is not None:
                source.error(
                    node,
                    f"declare the field {me}.{name} at the top level of __init__",
                    hint="A classtype's fields are fixed: declare them unconditionally, "
                    "then assign them where needed.",
                )
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign):
            targets = [node.target]
        for target in targets:
            name = _self_field(target, me)
            if name is not None and name not in found:
                source.error(
                    target,
                    f"the field {me}.{name} has no type annotation",
                    hint=_DECLARE_HINT.format(f=name, v=ast.unparse(getattr(node, "value", "0"))),
                )
    return list(found.values())


def _self_field(target: ast.expr, me: str) -> str | None:
    if (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == me
    ):
        return target.attr
    return None
