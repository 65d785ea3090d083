"""Python AST -> typed kernel IR, with every unsupported construct reported precisely.

:class:`FunctionLowerer` lowers one function through a shared
:class:`~pkernels.translate.lower_context.LoweringContext` and one feature lowerer per
part of the language (``lower_*.py``); :class:`HelperRegistry` translates the helpers a
kernel calls, once per argument types.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from ..api.types import DataType
from . import ir
from .classtypes import StructRegistry
from .flow import check_assigned_before_read, missing_return
from .ir import StructType
from .lower_calls import CallLowerer
from .lower_classtypes import ClassTypeLowerer
from .lower_context import LoweringContext
from .lower_exprs import ExpressionLowerer
from .lower_lists import ListLowerer
from .lower_params import SignatureLowerer
from .lower_print import PrintLowerer
from .lower_random import RandomLowerer
from .lower_stmts import StatementLowerer
from .lower_subviews import SubviewLowerer
from .lower_teams import TeamLowerer
from .lower_unpack import UnpackLowerer
from .source import KernelSource


class HelperRegistry:
    """The ``@pk.function`` helpers one kernel needs, translated once per argument types
    (views included), and the classtypes it uses with their constructors and methods."""

    def __init__(self) -> None:
        self.functions: dict[tuple[Any, ...], ir.Function] = {}
        self.order: list[ir.Function] = []
        self._names: set[str] = set()
        self.structs = StructRegistry()
        self._lowering: set[tuple[Any, ...]] = set()  # helpers whose bodies are being lowered
        self.recursive = False  # a helper called while its own body was being lowered

    def get(
        self,
        func: Callable[..., Any],
        arg_types: tuple[ir.Type, ...],
        struct: StructType | None = None,
        role: str = "function",
        call: tuple[KernelSource, ast.Call] | None = None,
    ) -> ir.Function:
        """``func`` translated for ``arg_types``; ``role``: "function", or "init" /
        "method" of the classtype ``struct``; ``call``: the call that needs it, where
        arguments that do not fit its parameters are reported."""
        key = (func, arg_types, struct, role)
        found = self.functions.get(key)
        if found is not None:
            if key in self._lowering:
                self.recursive = True
            return found
        source = KernelSource.of(func)
        base = struct.name if role == "init" and struct is not None else source.name
        name = f"pk_fn_{base}"
        suffix = 1
        while name in self._names:
            suffix += 1
            name = f"pk_fn_{base}_{suffix}"
        self._names.add(name)
        lowerer = FunctionLowerer(source, self, cpp_name=name, call=call)
        # Registered before lowering its body so recursive calls find it.
        if role == "init":
            assert struct is not None
            function = lowerer.declare_constructor(struct, arg_types)
        else:
            function = lowerer.declare_helper(arg_types, method_of=struct)
        self.functions[key] = function
        self._lowering.add(key)
        try:
            lowerer.lower_body()
        finally:
            self._lowering.discard(key)
        self.order.append(function)
        return function

    def propagate_writes(self, kernel: ir.Function) -> None:
        """Views a helper writes count as written by every caller that passed them (to a
        fixed point: helpers may call each other, recursively too)."""
        by_name = {f.name: f for f in self.order}
        changed = True
        while changed:
            changed = False
            for caller in [*self.order, kernel]:
                for callee, passes in caller.view_passes:
                    written = by_name[callee].written_views
                    for param, view in passes.items():
                        if param in written and view not in caller.written_views:
                            caller.written_views.add(view)
                            changed = True


class FunctionLowerer:
    """Lowers one Python function (a workunit or a helper) to an ``ir.Function``."""

    def __init__(
        self,
        source: KernelSource,
        helpers: HelperRegistry,
        cpp_name: str,
        call: tuple[KernelSource, ast.Call] | None = None,
    ) -> None:
        self.src = source
        self.cx = cx = LoweringContext(source, helpers, cpp_name, call)
        cx.signature = SignatureLowerer(cx)
        cx.stmts = StatementLowerer(cx)
        cx.prints = PrintLowerer(cx)
        cx.exprs = ExpressionLowerer(cx)
        cx.calls = CallLowerer(cx)
        cx.teams = TeamLowerer(cx)
        cx.classtypes = ClassTypeLowerer(cx)
        cx.slices = SubviewLowerer(cx)
        cx.unpacking = UnpackLowerer(cx)
        cx.lists = ListLowerer(cx)
        cx.random = RandomLowerer(cx)

    def declare_constructor(self, struct: StructType, arg_types: tuple[Any, ...]) -> ir.Function:
        """Declare the constructor (``__init__``) of the classtype ``struct``."""
        return self.cx.classtypes.declare_constructor(struct, arg_types)

    def lower_workunit(
        self, roles: list[str], arg_types: dict[str, ir.Type], reducer: Any = None
    ) -> ir.Function:
        """Lower a workunit whose leading parameters play ``roles`` (index, acc, last_pass);
        a reduce's accumulator is the struct of ``reducer`` when it reduces to several
        values (``pk.MaxLoc``: ``acc.val``, ``acc.loc``)."""
        self.cx.reducer = reducer
        tree = self.src.tree
        args = self.cx.signature.plain_params(tree)
        rank = roles.count("index")
        if len(args) < len(roles):
            wanted = ", ".join(roles)
            hint = (
                "A parallel_for workunit starts with the index `i`; parallel_reduce with "
                "`(i, acc)`; parallel_scan with `(i, acc, last_pass)`."
            )
            if rank > 1:
                hint = (
                    f"An MDRangePolicy of rank {rank} passes {rank} indices: write "
                    f"`def {tree.name}({', '.join('ijkl'[:rank])}, ...)` (then `acc` for "
                    "parallel_reduce)."
                )
            self.src.error(
                tree,
                f"workunit {tree.name!r} needs at least {len(roles)} parameters ({wanted})",
                hint=hint,
            )
        self.cx.rank = rank
        params: list[ir.Param] = []
        for arg, role in zip(args, roles, strict=False):
            params.append(ir.Param(arg.arg, self.cx.signature.role_type(arg, role), role))
        for arg in args[len(roles) :]:
            if arg.arg not in arg_types:
                self.src.error(arg, f"no value for parameter {arg.arg!r}")
            if isinstance(arg_types[arg.arg], ir.RandomPoolType):
                params.append(self.cx.random.pool_param(arg))
                continue
            params.append(
                ir.Param(arg.arg, self.cx.signature.check_annotation(arg, arg_types[arg.arg]))
            )
        self.cx.signature.register_params(params)
        self.cx.function = ir.Function(
            self.cx.cpp_name,
            tree.name,
            self.src.filename,
            tree.lineno,
            params,
            None,
            self.cx.locals,
            [],
            end_lineno=tree.end_lineno or tree.lineno,
        )
        check_assigned_before_read(self.src, tree)
        self.cx.function.body = self.cx.stmts.block(tree.body)
        self.cx.random.finish(self.cx.function)
        self.cx.helpers.propagate_writes(self.cx.function)
        self.cx.function.recursive_helpers = self.cx.helpers.recursive
        return self.cx.function

    def declare_helper(
        self, arg_types: tuple[ir.Type, ...], method_of: StructType | None = None
    ) -> ir.Function:
        """Declare a helper (or, ``method_of``, a classtype method: its ``self``, the first
        of ``arg_types``, is the struct, passed by reference)."""
        tree = self.src.tree
        self.cx.is_helper = True
        args = self.cx.signature.plain_params(tree)
        if method_of is not None:
            if not args:
                self.src.error(tree, "a classtype method needs its `self` parameter")
            self.cx.method_of, self.cx.struct_self = method_of, args[0].arg
            params = [ir.Param(args[0].arg, method_of)]
            name = f"{method_of.name}.{tree.name}"
            params += self.cx.signature.helper_params(tree, args[1:], arg_types[1:], name)
        else:
            params = self.cx.signature.helper_params(tree, args, arg_types, tree.name)
        if tree.returns is not None:
            ret = self.cx.signature.annotation(tree.returns)
            if ret is not None and not isinstance(ret, DataType | StructType):
                self.src.error(
                    tree.returns, "a @pk.function must return a scalar type or a classtype"
                )
            self.cx.return_type = ret
        else:
            self.cx.return_inferred = True
        self.cx.signature.register_params(params)
        self.cx.function = ir.Function(
            self.cx.cpp_name,
            tree.name,
            self.src.filename,
            tree.lineno,
            params,
            self.cx.return_type,
            self.cx.locals,
            [],
            end_lineno=tree.end_lineno or tree.lineno,
        )
        return self.cx.function

    def lower_body(self) -> None:
        assert self.cx.function is not None
        check_assigned_before_read(self.src, self.src.tree)
        self.cx.function.body = self.cx.stmts.block(self.src.tree.body)
        if self.cx.constructing is not None:  # __init__ returns the value it filled in
            assert self.cx.struct_self is not None
            end = self.src.tree.end_lineno or self.src.tree.lineno
            # A classtype value (ir.Var's type is annotated for numbers only).
            made = ir.Var(self.cx.constructing, self.cx.struct_self)  # type: ignore[arg-type]
            self.cx.function.body.append(ir.Return(end, made))
        if self.cx.return_type is not None and self.cx.bare_returns:
            # A bare `return` came before the first `return value` fixed the type.
            self.src.error(
                self.cx.bare_returns[0], f"this function must return a {self.cx.return_type.name}"
            )
        if self.cx.return_type is not None and self.cx.constructing is None:
            self._check_every_path_returns()
        self.cx.function.return_type = self.cx.return_type

    def _check_every_path_returns(self) -> None:
        """A helper that returns a value must return one on every path: C++ would run off
        the end of a non-void function (any value, or worse), where Python returns None."""
        assert self.cx.return_type is not None
        tree = self.src.tree
        found = missing_return(tree.body)
        if found is None:
            return
        stmt, path = found
        written = f"is annotated `-> {ast.unparse(tree.returns)}`" if tree.returns else "returns"
        written += "" if tree.returns else " a value"
        self.src.error(
            stmt,
            f"{self.src.name}() {written} but can reach its end without a return: {path}",
            hint=f"Return a value ({self.cx.return_type.name}) on that path too, e.g. with a "
            f"`return` at the end of {self.src.name}(): Python would return None there, the "
            "compiled function an undefined value.",
        )
