"""The signature of a lowered function: its parameters, their roles and annotations."""

from __future__ import annotations

import ast
from typing import Any, NoReturn, cast

from ..api import types as t
from ..api.classtypes import is_classtype
from ..api.random_pools import RandomPool
from ..api.teams import ScratchAnnotation
from ..api.types import AccAnnotation, DataType, ViewAnnotation, to_datatype
from ..errors import ArgumentTypeError
from . import ir
from .ir import StructType, ViewType
from .lower_context import Lowerer
from .lower_lists import list_annotation
from .lower_support import (
    ANNOTATION_FILENAME,
    AnnotationScope,
    type_name,
)
from .lower_teams import is_team_annotation
from .typing_rules import (
    annotation_mismatch,
)


class SignatureLowerer(Lowerer):
    """The parameters of a workunit or helper, and the annotations it reads."""

    def plain_params(self, tree: ast.FunctionDef) -> list[ast.arg]:
        a = tree.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
            names = ", ".join(x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs])
            self.src.error(
                tree,
                "kernel parameters must be plain names (no *args, **kwargs, defaults, "
                "keyword-only or positional-only markers)",
                hint=f"Write `def {tree.name}({names})` and pass every value at each call.",
            )
        return list(a.args)

    def role_type(self, arg: ast.arg, role: str) -> ir.Type:
        ann = self.annotation(arg.annotation) if arg.annotation is not None else None
        if role == "team":
            if ann is not None and not is_team_annotation(ann):
                self.src.error(
                    arg,
                    "a TeamPolicy workunit takes the team member first",
                    hint=f"Annotate it `{arg.arg}: pk.TeamMember` (or leave it unannotated).",
                )
            return ir.TeamType()
        if role == "acc":
            if isinstance(ann, AccAnnotation):
                dtype = ann.dtype
            elif ann is None:
                dtype = self.cx.unannotated_acc
                self.cx.acc_unannotated = True
            elif isinstance(ann, DataType):
                dtype = ann
            else:
                self.src.error(arg, "the accumulator must be annotated pk.Acc[T] or a scalar type")
            if self.cx.reducer is None or not self.cx.reducer.parts:
                return dtype
            try:
                self.cx.reducer.check(dtype)
            except TypeError as exc:
                self.src.error(arg, str(exc))
            return ir.accumulator_struct(self.cx.reducer, dtype)
        if role == "last_pass":
            return t.bool_
        if ann is None:
            return t.int64
        if is_team_annotation(ann):
            self.src.error(
                arg,
                f"{arg.arg!r} is a team member, but this dispatch is not over a TeamPolicy",
                hint="Dispatch a workunit that takes a pk.TeamMember over "
                "pk.TeamPolicy(space, league_size, team_size).",
            )
        if isinstance(ann, DataType) and ann.is_float and self.cx.rank == 1:
            # PyKokkos' `def body(i: float, acc)`: the index converted to that type, as
            # its C++ parameter is declared (the Debug space passes float(i)).
            return ann
        if not isinstance(ann, DataType) or not ann.is_integer:
            rank = self.cx.rank
            self.src.error(
                arg,
                "the index parameter must be an integer"
                + (
                    f" (an MDRangePolicy of rank {rank} passes the first {rank} parameters "
                    "as indices)"
                    if rank > 1
                    else ""
                ),
            )
        # The index is the range's int64 whatever integer type annotates it: `i: pk.uint8`
        # over a range past 255 would wrap (and write the wrong elements), and PyKokkos'
        # C++ computes `i * i` in int anyway; the Debug space passes a Python int.
        return t.int64

    def check_annotation(self, arg: ast.arg, actual: ir.Type) -> ir.Type:
        if arg.annotation is None:
            return actual
        ann = self.annotation(arg.annotation)
        if isinstance(ann, StructType):
            self.src.error(
                arg,
                f"a classtype ({ann.name}) cannot be a dispatch argument",
                hint="Pass its fields (numbers, arrays) as keyword arguments and build the "
                f"value in the kernel, e.g. `{arg.arg} = {ann.name}(...)`.",
            )
        problem = annotation_mismatch(arg.arg, ann, actual)
        if problem is not None:
            self.src.error(arg, problem, kind=ArgumentTypeError)
        return actual if isinstance(actual, ViewType) else ann

    def register_params(self, params: list[ir.Param]) -> None:
        for p in params:
            if p.name in self.cx.pools:
                continue  # a random pool's key: for pk.rand(T) only, no value to read
            self.cx.params[p.name] = p
            if isinstance(p.type, ViewType):
                self.cx.views[p.name] = p.type
            elif isinstance(p.type, ir.TeamType):
                self.cx.team_name = p.name

    def annotation(self, node: ast.expr) -> Any:
        try:
            value = eval(
                compile(ast.Expression(node), ANNOTATION_FILENAME, "eval"),
                self.src.globals,
                AnnotationScope(self.src.closure, self.src.globals),
            )
        except Exception as exc:  # noqa: BLE001 - any failure is the user's annotation
            self.src.error(node, f"cannot evaluate this annotation ({exc})")
        if isinstance(value, AccAnnotation | ViewAnnotation | ScratchAnnotation) or value is None:
            return value
        if is_team_annotation(value):
            return value
        if isinstance(value, type) and issubclass(value, RandomPool):
            return ir.RandomPoolType()
        if is_classtype(value):
            return self.cx.classtypes.struct_of(value, node)
        listed = list_annotation(value)
        if isinstance(listed, str):
            self.src.error(node, listed)
        if listed is not None:
            return listed
        try:
            return to_datatype(value)
        except TypeError:
            self.src.error(
                node,
                f"unsupported type annotation {ast.unparse(node)!r}",
                hint="Use int, float, bool, pk.int32 ... pk.double, pk.Acc[T], pk.View1D[T] "
                "or a @pk.classtype class.",
            )

    def helper_params(
        self,
        tree: ast.FunctionDef,
        args: list[ast.arg],
        arg_types: tuple[ir.Type, ...],
        name: str,
    ) -> list[ir.Param]:
        """The parameters of a helper called with ``arg_types``: a scalar (of its annotation,
        else of the call), a view (passed whole) or a classtype value (by reference)."""
        self.cx.def_name = f"{name}.__init__" if tree.name == "__init__" else name
        if len(args) != len(arg_types):
            wanted = ", ".join(a.arg for a in args)
            self._call_error(
                None,
                tree,
                f"{name}() takes {len(args)} argument{'s' * (len(args) != 1)} ({wanted}), "
                f"called with {len(arg_types)}",
                hint=f"Call it with one value per parameter: {name}({wanted}).",
            )
        params = []
        for k, (arg, actual) in enumerate(zip(args, arg_types, strict=True)):
            declared = self.annotation(arg.annotation) if arg.annotation else actual
            if isinstance(actual, ViewType):
                if not isinstance(declared, ViewAnnotation | ViewType):
                    self._call_error(
                        k,
                        arg,
                        f"{arg.arg!r} is annotated {type_name(declared)} but the call passes "
                        "a view",
                    )
                if isinstance(declared, ViewAnnotation) and (
                    declared.rank != actual.rank or not declared.accepts(actual.dtype)
                ):
                    self._call_error(
                        k,
                        arg,
                        f"{arg.arg!r} is annotated {declared.name} but the call passes a {actual}",
                    )
                params.append(ir.Param(arg.arg, actual))
                continue
            if isinstance(declared, ViewAnnotation):
                self._call_error(
                    k,
                    arg,
                    f"{arg.arg!r} is annotated as a view but the call passes a {type_name(actual)}",
                )
            if isinstance(actual, StructType) or isinstance(declared, StructType):
                if declared != actual:
                    self._call_error(
                        k,
                        arg,
                        f"{arg.arg!r} is annotated {type_name(declared)} but the call passes "
                        f"a {type_name(actual)}",
                    )
                params.append(ir.Param(arg.arg, actual))
                continue
            if not isinstance(declared, DataType):
                self.src.error(arg, f"unsupported annotation for the parameter {arg.arg!r}")
            actual = cast(DataType, actual)  # a number: views and classtypes are done
            if actual.is_float and not declared.is_float:
                # Python would pass the float through; C++ would truncate it silently.
                self._call_error(
                    k,
                    arg,
                    f"{arg.arg!r} is annotated {declared.name} but the call passes a float "
                    f"({actual.name})",
                    hint=f"Convert at the call with int(...), or annotate `{arg.arg}: float`.",
                )
            params.append(ir.Param(arg.arg, declared))
        return params

    def _call_error(
        self, index: int | None, node: ast.AST, message: str, hint: str = ""
    ) -> NoReturn:
        """Report arguments that do not fit this helper's parameters at the call that
        passes them (its ``index``-th argument; None: the call), naming where the helper
        is defined; at the parameter ``node`` when there is no call (never, so far)."""
        if self.cx.call is None:
            self.src.error(node, message, hint=hint)
        caller, call = self.cx.call
        where = call.args[index] if index is not None and index < len(call.args) else call
        defined = f"line {self.src.tree.lineno}"
        if self.src.filename != caller.filename:
            defined += f" of {self.src.filename}"
        caller.error(where, f"{message} ({self.cx.def_name} is defined on {defined})", hint=hint)
