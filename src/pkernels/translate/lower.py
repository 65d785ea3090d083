"""Python AST -> typed kernel IR, with every unsupported construct reported precisely."""

from __future__ import annotations

import ast
import builtins
import functools
import math
import operator
import sys
import types
from collections.abc import Callable
from typing import Any, NoReturn

import numpy as np

from ..api import kernel_builtins
from ..api import types as t
from ..api.classtypes import is_classtype
from ..api.decorators import function as mark_helper
from ..api.decorators import marker_of
from ..api.teams import ScratchAnnotation
from ..api.types import C_TYPE_NAMES, AccAnnotation, DataType, ViewAnnotation, to_datatype
from ..errors import ArgumentTypeError
from . import ir
from .classtypes import StructRegistry
from .flow import check_assigned_before_read, missing_return
from .ir import Expr, StructType, ViewType
from .lower_classtypes import ClassTypeLowering, call_arg_types
from .lower_lists import ListAnnotation, ListLowering, is_list_display, list_annotation
from .lower_subviews import Subview, SubviewLowering, flatten_subscript
from .lower_teams import TeamLowering, is_team_annotation
from .lower_unpack import TUPLE_MATH, UnpackLowering
from .printf import SPEC_HINT, PrintSpec, printf_format, python_spec
from .pyexec import bare_math_module, reads_bare_math
from .source import KernelSource
from .typing_rules import (
    ATOMIC_FUNCTIONS,
    MATH_CONSTANTS,
    MATH_FUNCTIONS,
    PY_INT_ROUNDING,
    RANDOM_FUNCTIONS,
    annotation_mismatch,
    declared_conversion,
    float_of,
    is_weak,
    literal_outside,
    promote,
    promote_types,
)

_BINOPS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
}
_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
# Annotations are evaluated under another file name: a debugger's breakpoint on the
# kernel's own line must not fire while the translator reads its annotation.
_ANNOTATION_FILENAME = "<pkernels annotation>"
_BIT_OPS = {"&", "|", "^", "<<", ">>"}

_UNSUPPORTED_HINTS: dict[type, str] = {
    ast.ListComp: "Write an explicit `for i in range(...)` loop instead.",
    ast.List: "Kernels have no lists; use a view passed as a keyword argument.",
    ast.Dict: "Kernels have no dicts; pass views and scalars as keyword arguments.",
    ast.Lambda: "Define a `@pk.function` helper instead.",
    ast.With: "Kernels have no context managers.",
    ast.Try: "Kernels cannot raise or catch exceptions; debug builds check view bounds.",
    ast.Raise: "Kernels cannot raise; use pk.printf to report, or a debug build.",
    ast.Global: "Pass the value as a keyword argument of the dispatch.",
    ast.Nonlocal: "Pass the value as a keyword argument of the dispatch.",
    ast.Import: "Import modules at the top of the file; kernels may use `math.*` and `pk.*`.",
    ast.ImportFrom: "Import at the top of the file; kernels may use `math.*` and `pk.*`.",
    ast.Delete: "Kernels cannot delete variables.",
    ast.Assert: "Kernels have no assert; debug builds check view bounds for you.",
    ast.JoinedStr: 'Kernels print f-strings: print(f"x={x:.3f}"); elsewhere they have no text.',
    ast.NamedExpr: "Assign the value on a line of its own first.",
    ast.Tuple: "Use one variable per value, or a view.",
    ast.Set: "Kernels have no sets; use a view passed as a keyword argument.",
    ast.SetComp: "Write an explicit `for i in range(...)` loop instead.",
    ast.DictComp: "Write an explicit `for i in range(...)` loop instead.",
    ast.GeneratorExp: "Write an explicit `for i in range(...)` loop that adds up the values.",
    ast.Starred: "Pass each value as its own argument.",
    ast.Yield: "A workunit writes its results into views (or an accumulator).",
    ast.YieldFrom: "A workunit writes its results into views (or an accumulator).",
    ast.Await: "Kernels run synchronously; await in the Python code around the dispatch.",
    ast.ClassDef: "Define classes at module level; kernels may use @pk.classtype objects.",
    ast.Match: "Use if/elif/else.",
    ast.AsyncFor: "Use a plain `for i in range(...)` loop.",
    ast.AsyncWith: "Kernels have no context managers.",
}

# What the construct is, for the message (the AST's class name says little to users).
_CONSTRUCT_NAMES: dict[type, str] = {
    ast.ListComp: "a list comprehension", ast.List: "a list", ast.Dict: "a dict",
    ast.Lambda: "a lambda", ast.With: "a with statement", ast.Try: "try/except",
    ast.Raise: "raise", ast.Global: "global", ast.Nonlocal: "nonlocal", ast.Import: "import",
    ast.ImportFrom: "import", ast.Delete: "del", ast.Assert: "assert",
    ast.JoinedStr: "an f-string outside print()", ast.NamedExpr: "an assignment expression (:=)",
    ast.Tuple: "a tuple", ast.Set: "a set", ast.SetComp: "a set comprehension",
    ast.DictComp: "a dict comprehension", ast.GeneratorExp: "a generator expression",
    ast.Starred: "* unpacking", ast.Yield: "yield", ast.YieldFrom: "yield from",
    ast.Await: "await", ast.ClassDef: "a class definition", ast.Match: "a match statement",
    ast.AsyncFor: "async for", ast.AsyncWith: "async with",
    ast.AsyncFunctionDef: "an async function",
}  # fmt: skip

# Constants that are not numbers: what they are, and what to write instead.
_CONSTANT_NAMES: dict[type, tuple[str, str]] = {
    str: ("text (a str)", "Kernels compute with numbers; text goes in print(...) or pk.printf."),
    bytes: ("bytes", "Kernels compute with numbers; pass bytes as a uint8 view."),
    type(None): ("None", "Give the variable a number where it starts, e.g. `x: float = 0`."),
    complex: (
        "a complex number",
        "Keep the real and imaginary parts in two float variables (or views).",
    ),
    type(...): ("...", "Write `pass` for an empty block."),
}


def _unsupported(node: ast.AST) -> tuple[str, str]:
    """The message and hint for a construct kernels do not have."""
    if isinstance(node, ast.Constant) and type(node.value) in _CONSTANT_NAMES:
        what, hint = _CONSTANT_NAMES[type(node.value)]
        return f"{what} cannot be a value in a kernel", hint
    if isinstance(node, ast.Expr):  # a statement of one expression: name the expression
        node = node.value
    what = _CONSTRUCT_NAMES.get(type(node), type(node).__name__)
    return f"{what} is not supported in kernels", _UNSUPPORTED_HINTS.get(type(node), "")


class HelperRegistry:
    """The ``@pk.function`` helpers one kernel needs, translated once per argument types
    (views included), and the classtypes it uses with their constructors and methods."""

    def __init__(self) -> None:
        self.functions: dict[tuple[Any, ...], ir.Function] = {}
        self.order: list[ir.Function] = []
        self._names: set[str] = set()
        self.structs = StructRegistry()

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
        lowerer.lower_body()
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


class FunctionLowerer(
    TeamLowering, ClassTypeLowering, SubviewLowering, UnpackLowering, ListLowering
):
    """Lowers one Python function (a workunit or a helper) to an ``ir.Function``."""

    def __init__(
        self,
        source: KernelSource,
        helpers: HelperRegistry,
        cpp_name: str,
        call: tuple[KernelSource, ast.Call] | None = None,
    ) -> None:
        self.src = source
        self.helpers = helpers
        self.cpp_name = cpp_name
        self.call = call  # a helper's: the call translating it (its source and node)
        self.def_name = source.name  # as messages name it: f, P.method, P.__init__
        self.locals: dict[str, DataType] = {}
        self.declared: set[str] = set()  # annotated locals: ints convert, floats are refused
        self.first_assign_line: dict[str, int] = {}
        self.params: dict[str, ir.Param] = {}
        self.views: dict[str, ViewType] = {}
        self.subviews: dict[str, Subview] = {}  # `row = A[j, :]`: see lower_subviews
        self.return_type: DataType | None = None
        self.return_inferred = False
        self.bare_returns: list[ast.Return] = []
        self.is_helper = False
        self.loop_depth = 0
        self.counter = 0
        self.function: ir.Function | None = None
        self.rank = 1  # index parameters of the workunit (an MDRangePolicy's rank)
        self.reducer: Any = None  # a workunit's reducer (pk.MaxLoc gives acc its fields)
        self._init_teams()
        self._init_classtypes()

    # ------------------------------------------------------------ entry points

    def lower_workunit(
        self, roles: list[str], arg_types: dict[str, ir.Type], reducer: Any = None
    ) -> ir.Function:
        """Lower a workunit whose leading parameters play ``roles`` (index, acc, last_pass);
        a reduce's accumulator is the struct of ``reducer`` when it reduces to several
        values (``pk.MaxLoc``: ``acc.val``, ``acc.loc``)."""
        self.reducer = reducer
        tree = self.src.tree
        args = self._plain_params(tree)
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
        self.rank = rank
        params: list[ir.Param] = []
        for arg, role in zip(args, roles, strict=False):
            params.append(ir.Param(arg.arg, self._role_type(arg, role), role))
        for arg in args[len(roles) :]:
            if arg.arg not in arg_types:
                self.src.error(arg, f"no value for parameter {arg.arg!r}")
            params.append(ir.Param(arg.arg, self._check_annotation(arg, arg_types[arg.arg])))
        self._register_params(params)
        self.function = ir.Function(
            self.cpp_name,
            tree.name,
            self.src.filename,
            tree.lineno,
            params,
            None,
            self.locals,
            [],
            end_lineno=tree.end_lineno or tree.lineno,
        )
        check_assigned_before_read(self.src, tree)
        self.function.body = self._block(tree.body)
        self.helpers.propagate_writes(self.function)
        return self.function

    def declare_helper(
        self, arg_types: tuple[ir.Type, ...], method_of: StructType | None = None
    ) -> ir.Function:
        """Declare a helper (or, ``method_of``, a classtype method: its ``self``, the first
        of ``arg_types``, is the struct, passed by reference)."""
        tree = self.src.tree
        self.is_helper = True
        args = self._plain_params(tree)
        if method_of is not None:
            if not args:
                self.src.error(tree, "a classtype method needs its `self` parameter")
            self.method_of, self.struct_self = method_of, args[0].arg
            params = [ir.Param(args[0].arg, method_of)]
            name = f"{method_of.name}.{tree.name}"
            params += self._helper_params(tree, args[1:], arg_types[1:], name)
        else:
            params = self._helper_params(tree, args, arg_types, tree.name)
        if tree.returns is not None:
            ret = self._annotation(tree.returns)
            if ret is not None and not isinstance(ret, DataType | StructType):
                self.src.error(
                    tree.returns, "a @pk.function must return a scalar type or a classtype"
                )
            self.return_type = ret
        else:
            self.return_inferred = True
        self._register_params(params)
        self.function = ir.Function(
            self.cpp_name,
            tree.name,
            self.src.filename,
            tree.lineno,
            params,
            self.return_type,
            self.locals,
            [],
            end_lineno=tree.end_lineno or tree.lineno,
        )
        return self.function

    def _helper_params(
        self,
        tree: ast.FunctionDef,
        args: list[ast.arg],
        arg_types: tuple[ir.Type, ...],
        name: str,
    ) -> list[ir.Param]:
        """The parameters of a helper called with ``arg_types``: a scalar (of its annotation,
        else of the call), a view (passed whole) or a classtype value (by reference)."""
        self.def_name = f"{name}.__init__" if tree.name == "__init__" else name
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
            declared = self._annotation(arg.annotation) if arg.annotation else actual
            if isinstance(actual, ViewType):
                if not isinstance(declared, ViewAnnotation | ViewType):
                    self._call_error(
                        k,
                        arg,
                        f"{arg.arg!r} is annotated {_type_name(declared)} but the call passes "
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
                    f"{arg.arg!r} is annotated as a view but the call passes a "
                    f"{_type_name(actual)}",
                )
            if isinstance(actual, StructType) or isinstance(declared, StructType):
                if declared != actual:
                    self._call_error(
                        k,
                        arg,
                        f"{arg.arg!r} is annotated {_type_name(declared)} but the call passes "
                        f"a {_type_name(actual)}",
                    )
                params.append(ir.Param(arg.arg, actual))
                continue
            if not isinstance(declared, DataType):
                self.src.error(arg, f"unsupported annotation for the parameter {arg.arg!r}")
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
        if self.call is None:
            self.src.error(node, message, hint=hint)
        caller, call = self.call
        where = call.args[index] if index is not None and index < len(call.args) else call
        defined = f"line {self.src.tree.lineno}"
        if self.src.filename != caller.filename:
            defined += f" of {self.src.filename}"
        caller.error(where, f"{message} ({self.def_name} is defined on {defined})", hint=hint)

    def lower_body(self) -> None:
        assert self.function is not None
        check_assigned_before_read(self.src, self.src.tree)
        self.function.body = self._block(self.src.tree.body)
        if self.constructing is not None:  # __init__ returns the value it filled in
            assert self.struct_self is not None
            end = self.src.tree.end_lineno or self.src.tree.lineno
            self.function.body.append(ir.Return(end, ir.Var(self.constructing, self.struct_self)))
        if self.return_type is not None and self.bare_returns:
            # A bare `return` came before the first `return value` fixed the type.
            self.src.error(
                self.bare_returns[0], f"this function must return a {self.return_type.name}"
            )
        if self.return_type is not None and self.constructing is None:
            self._check_every_path_returns()
        self.function.return_type = self.return_type

    def _check_every_path_returns(self) -> None:
        """A helper that returns a value must return one on every path: C++ would run off
        the end of a non-void function (any value, or worse), where Python returns None."""
        assert self.return_type is not None
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
            hint=f"Return a value ({self.return_type.name}) on that path too, e.g. with a "
            f"`return` at the end of {self.src.name}(): Python would return None there, the "
            "compiled function an undefined value.",
        )

    # ------------------------------------------------------------ parameters

    def _plain_params(self, tree: ast.FunctionDef) -> list[ast.arg]:
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

    def _role_type(self, arg: ast.arg, role: str) -> ir.Type:
        ann = self._annotation(arg.annotation) if arg.annotation is not None else None
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
                dtype = t.float64
            elif isinstance(ann, DataType):
                dtype = ann
            else:
                self.src.error(arg, "the accumulator must be annotated pk.Acc[T] or a scalar type")
            if self.reducer is None or not self.reducer.parts:
                return dtype
            try:
                self.reducer.check(dtype)
            except TypeError as exc:
                self.src.error(arg, str(exc))
            return ir.accumulator_struct(self.reducer, dtype)
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
        if isinstance(ann, DataType) and ann.is_float and self.rank == 1:
            # PyKokkos' `def body(i: float, acc)`: the index converted to that type, as
            # its C++ parameter is declared (the Debug space passes float(i)).
            return ann
        if not isinstance(ann, DataType) or not ann.is_integer:
            rank = self.rank
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

    def _check_annotation(self, arg: ast.arg, actual: ir.Type) -> ir.Type:
        if arg.annotation is None:
            return actual
        ann = self._annotation(arg.annotation)
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

    def _register_params(self, params: list[ir.Param]) -> None:
        for p in params:
            self.params[p.name] = p
            if isinstance(p.type, ViewType):
                self.views[p.name] = p.type
            elif isinstance(p.type, ir.TeamType):
                self.team_name = p.name

    def _annotation(self, node: ast.expr) -> Any:
        try:
            value = eval(
                compile(ast.Expression(node), _ANNOTATION_FILENAME, "eval"),
                self.src.globals,
                _AnnotationScope(self.src.closure, self.src.globals),
            )
        except Exception as exc:  # noqa: BLE001 - any failure is the user's annotation
            self.src.error(node, f"cannot evaluate this annotation ({exc})")
        if isinstance(value, AccAnnotation | ViewAnnotation | ScratchAnnotation) or value is None:
            return value
        if is_team_annotation(value):
            return value
        if is_classtype(value):
            return self._struct_of(value, node)
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

    # ------------------------------------------------------------ statements

    def _block(self, stmts: list[ast.stmt]) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for i, stmt in enumerate(stmts):
            if (
                i == 0
                and isinstance(stmt, ast.Expr)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)
            ):
                continue  # docstring
            lowered = self._stmt(stmt)
            if isinstance(lowered, list):  # a subview's hidden locals
                out.extend(lowered)
            elif lowered is not None:
                out.append(lowered)
        return out

    def _stmt(self, node: ast.stmt) -> ir.Stmt | list[ir.Stmt] | None:
        line = node.lineno
        match node:
            case ast.Assign(targets=[target], value=value):
                return self._assign(node, target, value, None)
            case ast.Assign(targets=targets, value=value):
                return self._chained_assign(node, targets, value)
            case ast.AnnAssign(target=target, annotation=ann, value=value):
                if value is None:
                    self.src.error(node, "a declaration needs a value, e.g. `x: float = 0`")
                declared = self._annotation(ann)
                if isinstance(declared, ScratchAnnotation):
                    return self._scratch_alloc(node, target, value, declared)
                if isinstance(declared, ListAnnotation):
                    return self._local_list(node, target, value, declared.dtype)
                if not isinstance(declared, DataType | StructType):
                    self.src.error(ann, "local variables must have a scalar type or a classtype")
                return self._assign(node, target, value, declared)
            case ast.AugAssign(target=target, op=op, value=value):
                return self._aug_assign(node, target, op, value)
            case ast.If(test=test, body=body, orelse=orelse):
                cond = self._expr(test)
                self.conditions.append(cond)
                lowered_if = ir.If(line, cond, self._block(body), self._block(orelse))
                self.conditions.pop()
                return lowered_if
            case ast.For():
                return self._for(node)
            case ast.While(test=test, body=body, orelse=orelse):
                if orelse:
                    self.src.error(node, "`while ... else` is not supported", hint=_LOOP_ELSE_HINT)
                self.loop_depth += 1
                cond = self._expr(test)
                self.conditions.append(cond)
                lowered = ir.While(line, cond, self._block(body))
                self.conditions.pop()
                self.loop_depth -= 1
                return lowered
            case ast.Break():
                self._need_loop(node, "break")
                return ir.Break(line)
            case ast.Continue():
                self._need_loop(node, "continue")
                return ir.Continue(line)
            case ast.Pass():
                return None
            case ast.Return(value=value):
                return self._return(node, value)
            case ast.Expr(value=ast.Call() as call):
                return self._call_statement(call)
            case ast.Expr(value=ast.Constant(value=str())):
                return None  # a string used as a comment
            case ast.Nonlocal() if self.team_name is not None:
                self._nonlocal(node)
                return None
            case ast.FunctionDef() if self.team_name is not None:
                # The body of a nested parallel_* or pk.single: lowered where it is used.
                self.nested_defs[node.name] = node
                return None
            case ast.FunctionDef():
                self.src.error(
                    node,
                    "nested functions are not supported in this kernel",
                    hint="Define a module-level `@pk.function` helper instead.",
                )
        self.src.error(node, *_unsupported(node))

    def _need_loop(self, node: ast.stmt, word: str) -> None:
        if self.loop_depth == 0:
            self.src.error(node, f"`{word}` outside a loop")

    def _assign(
        self, node: ast.stmt, target: ast.expr, value_node: ast.expr, declared: Any
    ) -> ir.Stmt | list[ir.Stmt]:
        if isinstance(target, ast.Tuple | ast.List):
            return self._unpack(node, target, value_node)
        if not isinstance(target, ast.Name | ast.Subscript | ast.Attribute):
            self.src.error(
                target,
                f"cannot assign to {type(target).__name__} in a kernel",
                hint=_ASSIGN_HINT,
            )
        if isinstance(target, ast.Name) and is_list_display(value_node):
            if declared is not None:  # `x: float = [...]`
                self.src.error(node, f"a list local is annotated List[...], not {declared.name}")
            return self._local_list(node, target, value_node, None)
        if self._binds_subview(target, value_node):
            if declared is not None:
                self.src.error(node, "a subview cannot be annotated", hint="Write `row = A[j, :]`.")
            return self._bind_subview(node, target, value_node)  # type: ignore[arg-type]
        if isinstance(value_node, ast.Call):
            nested = self._assigned_call(node, target, value_node, declared)
            if nested is not None:
                return nested
        if isinstance(target, ast.Attribute):  # a field of a classtype value
            return self._field_store(node, target, value_node, declared)
        value = self._any_expr(value_node)
        if isinstance(target, ast.Subscript) and isinstance(value.type, StructType):
            self._struct_misuse(value_node, value)
        if isinstance(target, ast.Name):
            bound = self._bind(target, value, declared)
            self._note_assignment(target.id, value)
            return ir.Assign(node.lineno, bound, value)
        if declared is not None:
            self.src.error(node, "a view element cannot be annotated")
        access = self._subscript(target)
        self._written(access)
        return ir.Assign(node.lineno, access, value)

    def _assigned_call(
        self, node: ast.stmt, target: ast.expr, call: ast.Call, declared: DataType | None
    ) -> ir.Stmt | None:
        """``x = pk.parallel_reduce(<team range>, body)`` and ``s = pk.ScratchView1D(...)``
        (None for other calls)."""
        if self._scratch_ctor_rank(call):
            return self._scratch_alloc(node, target, call, None)
        for op in ("reduce", "scan"):
            if self._is_pk_attr(call.func, f"parallel_{op}"):
                if not isinstance(target, ast.Name | ast.Subscript):
                    self.src.error(
                        target, f"assign the result of pk.parallel_{op} to a name or view element"
                    )
                return self._nested_parallel(call, op, (target, declared))
        return None

    def _written(self, access: ir.ViewAccess) -> None:
        """Record that the body stores into ``access``'s view (read-only arrays are refused)."""
        assert self.function is not None
        if access.view.name in self.params:  # scratch views are the kernel's own
            self.function.written_views.add(access.view.name)

    def _bind(self, target: ast.Name, value: Expr, declared: DataType | None) -> ir.Var:
        name = target.id
        if name in self.views or name in self.subviews:
            self.src.error(target, f"cannot rebind view {name!r} inside a kernel")
        if name == self.team_name:
            self.src.error(target, f"cannot rebind the team member {name!r}")
        if self._binds_struct(name, value, declared):
            return self._bind_struct(target, value, declared)
        if name in self.nonlocal_names:
            outer = self._outer_name(name)
            if outer is None:  # the workunit's parameter (the accumulator, a scalar)
                ptype = self.params[name].type
                assert isinstance(ptype, DataType)
                outer = ptype
            self._check_narrowing(target, name, outer, value, self._outer_declared(name))
            return ir.Var(outer, name)
        # In a nested def, a name it assigns is its own local (Python's scoping).
        shadowing = bool(self.outer_scopes) and name not in self.locals
        if name in self.params and not shadowing:
            ptype = self.params[name].type
            assert isinstance(ptype, DataType)
            self._check_narrowing(target, name, ptype, value, declared=True)
            return ir.Var(ptype, name)
        if declared is not None:
            if name in self.locals and self.locals[name] != declared:
                self.src.error(
                    target,
                    f"{name!r} was declared {self.locals[name].name} on line "
                    f"{self.first_assign_line[name]}; a local keeps one type",
                )
            self._check_declared_store(target, name, declared, value)
            self.locals.setdefault(name, declared)
            self.declared.add(name)
            self.first_assign_line.setdefault(name, target.lineno)
            return ir.Var(declared, name)
        if name not in self.locals:
            if name in _RESERVED_NAMES:
                self.src.error(target, f"{name!r} names a module or function; pick another name")
            inferred = value.type  # `flag = x > 0` is a bool, as in Python
            self.locals[name] = inferred
            self.first_assign_line[name] = target.lineno
            return ir.Var(inferred, name)
        current = self.locals[name]
        self._check_narrowing(target, name, current, value, declared=name in self.declared)
        return ir.Var(current, name)

    def _check_narrowing(
        self, node: ast.AST, name: str, target: DataType, value: Expr, declared: bool
    ) -> None:
        if declared:
            param = self.params.get(name)
            accumulator = name in self.accumulators or param is not None and param.role == "acc"
            if not accumulator:  # an accumulator's stores convert (README)
                self._check_declared_store(node, name, target, value)
            return
        line = self.first_assign_line.get(name)
        where = f"on line {line}" if line else "as a parameter"
        if target == t.bool_ and value.type != t.bool_:
            kind = "a float" if value.type.is_float else "an integer"
            self.src.error(
                node,
                f"{name!r} is a bool (from its first assignment {where}) but is assigned {kind}",
                hint=f"Declare its type where it starts, e.g. `{name}: int = 0`.",
            )
        if not value.type.is_float or target.is_float:
            return
        self.src.error(
            node,
            f"{name!r} is an integer (from its first assignment {where}) but is assigned a float",
            hint=f"Declare it as a float where it starts, e.g. `{name}: float = 0`.",
        )

    def _check_declared_store(
        self, node: ast.AST, name: str, target: DataType, value: Expr
    ) -> None:
        """A float stored into a variable of a declared integer type (an annotated local,
        a parameter, the index), or a number into a declared bool: Python keeps the value
        as it is (the Debug space too) where C++ would convert it, so it is refused."""
        problem = declared_conversion(target, value.type)
        if problem is None:
            return
        what, convert = problem
        param = self.params.get(name)
        if param is not None and param.role == "index":
            kind = f"the index {name!r} (an {target.name})"
        elif param is not None:
            kind = f"the parameter {name!r} ({target.name})"
        else:
            kind = f"{name!r}, declared {target.name},"
        self.src.error(
            node,
            f"{kind} is assigned {what}",
            hint=f"Convert it with {convert}(...): C++ would do so without a word, where Python "
            "keeps the value as it is (or use another variable for it).",
        )

    def _aug_assign(
        self, node: ast.AugAssign, target: ast.expr, op: ast.operator, value_node: ast.expr
    ) -> ir.Stmt:
        symbol = _BINOPS.get(type(op))
        if symbol is None:
            self.src.error(
                node,
                _not_in_kernels("operator", op),
                hint=_OPERATOR_HINT,
            )
        value = self._expr(value_node)
        if isinstance(target, ast.Name):
            current = self._load_name(target)
            if not isinstance(current, ir.Var):
                self.src.error(target, f"cannot assign to {target.id!r}")
            combined = self._binop(node, symbol, current, value)
            declared = target.id in self.declared or target.id in self.params
            self._check_narrowing(target, target.id, current.type, combined, declared)
            return ir.AugAssign(node.lineno, current, symbol, value)
        if isinstance(target, ast.Subscript):
            access = self._subscript(target)
            self._written(access)
            self._binop(node, symbol, access, value)  # type check only
            return ir.AugAssign(node.lineno, access, symbol, value)
        if isinstance(target, ast.Attribute):
            return self._field_aug_assign(node, target, symbol, value)
        self.src.error(
            target, f"cannot assign to {type(target).__name__} in a kernel", hint=_ASSIGN_HINT
        )

    def _for(self, node: ast.For) -> ir.Stmt:
        if node.orelse:
            self.src.error(node, "`for ... else` is not supported", hint=_LOOP_ELSE_HINT)
        if not isinstance(node.target, ast.Name):
            self.src.error(node.target, "the loop variable must be a single name")
        it = node.iter
        if not (isinstance(it, ast.Call) and _is_name(it.func, "range")):
            self.src.error(
                it,
                "kernels can only loop over range(...)",
                hint="Write `for i in range(n):` and index views with `i`.",
            )
        if it.keywords or not 1 <= len(it.args) <= 3:
            self.src.error(it, "range() takes 1 to 3 positional arguments")
        bounds = [self._expr(a) for a in it.args]
        for bound, arg in zip(bounds, it.args, strict=True):
            if not bound.type.is_integer and bound.type != t.bool_:
                self.src.error(arg, f"range() needs integers, this is {bound.type.name}")
        if len(bounds) == 1:
            start, stop, step = ir.Const(t.int64, 0), bounds[0], ir.Const(t.int64, 1)
        elif len(bounds) == 2:
            start, stop, step = bounds[0], bounds[1], ir.Const(t.int64, 1)
        else:
            start, stop, step = bounds
            if isinstance(step, ir.Const) and step.value == 0:
                self.src.error(it.args[2], "range() step must not be zero")
        loop_type = promote(start, stop)
        if loop_type.is_float and not (start.type.is_float or stop.type.is_float):
            loop_type = t.int64  # uint64 with a signed bound (NumPy: float64); Python: an int
        var = self._bind(node.target, ir.Var(loop_type, "_"), None)
        self.counter += 1
        self.loop_depth += 1
        self.conditions.extend(bounds)  # a trip count that differs by thread is a branch
        body = self._block(node.body)
        del self.conditions[len(self.conditions) - len(bounds) :]
        self.loop_depth -= 1
        return ir.ForRange(node.lineno, var, start, stop, step, body, f"pk_it{self.counter}")

    def _return(self, node: ast.Return, value_node: ast.expr | None) -> ir.Stmt:
        if self.return_labels:
            if value_node is not None:
                self.src.error(node, "the body of a nested parallel_* or pk.single returns nothing")
            return ir.JumpTo(node.lineno, self.return_labels[-1])
        if self.constructing is not None:
            return self._constructor_return(node, value_node)
        if not self.is_helper:
            if value_node is not None:
                self.src.error(
                    node,
                    "a workunit returns nothing",
                    hint="Write results into a view, or use parallel_reduce.",
                )
            return ir.Return(node.lineno, None)
        if value_node is None:
            if self.return_type is not None:
                self.src.error(node, f"this function must return a {self.return_type.name}")
            self.bare_returns.append(node)
            return ir.Return(node.lineno, None)
        if self.method_of is not None and self.return_inferred:
            self.src.error(
                node,
                f"the method {self.method_of.name}.{self.src.name} returns a value but has no "
                "return annotation",
                hint=f"Annotate the type it returns: `def {self.src.name}(self, ...) -> float:`.",
            )
        value = self._any_expr(value_node)
        self._check_struct_return(node, value)
        if not self.return_inferred:
            if self.return_type is None:
                self.src.error(
                    node,
                    "a function annotated `-> None` cannot return a value",
                    hint="Annotate the type it returns, e.g. `-> float`, or leave it out.",
                )
            if isinstance(self.return_type, DataType) and isinstance(value.type, DataType):
                problem = declared_conversion(self.return_type, value.type)
                if problem is not None:  # as an annotated local is refused the same value
                    what, convert = problem
                    self.src.error(
                        node,
                        f"{self.src.name}() is annotated `-> {ast.unparse(self.src.tree.returns)}`"
                        f" but returns {what}",
                        hint=f"Convert it, `return {convert}(...)`: C++ would do so without a "
                        "word, where Python returns the value as it is (or annotate the type it "
                        "returns).",
                    )
        elif self.return_type is None:
            self.return_type = value.type
        elif value.type != self.return_type:
            # Unannotated: the common type of every returned value (`return 1` on one path
            # and `return 0.5` on another makes a float function, as Python would return).
            self.return_type = promote_types(self.return_type, value.type)
        return ir.Return(node.lineno, value)

    # ------------------------------------------------------------ calls as statements

    def _call_statement(self, call: ast.Call) -> ir.Stmt:
        func = call.func
        if _is_name(func, "print"):
            return self._print(call)
        if self._is_pk_attr(func, "printf"):
            return self._printf(call)
        team = self._team_statement(call)
        if team is not None:
            return team
        return ir.ExprStmt(call.lineno, self._expr(call, statement=True))

    def _print(self, call: ast.Call) -> ir.Stmt:
        sep, end = " ", "\n"
        for kw in call.keywords:
            if (
                kw.arg in ("sep", "end")
                and isinstance(kw.value, ast.Constant)
                and isinstance(kw.value.value, str)
            ):
                sep, end = (kw.value.value, end) if kw.arg == "sep" else (sep, kw.value.value)
            else:
                self.src.error(kw, "print() in kernels accepts only literal sep= and end=")
        printed = ir.Print(call.lineno, True, "", [], [""])
        for n, arg in enumerate(call.args):
            if n:
                printed.texts[-1] += sep
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                printed.texts[-1] += arg.value
            elif isinstance(arg, ast.JoinedStr):
                for piece in arg.values:
                    if isinstance(piece, ast.Constant):
                        printed.texts[-1] += piece.value
                    else:
                        self._print_formatted(printed, piece)
            else:
                self._print_value(printed, self._expr(arg), None)
        printed.texts[-1] += end
        return printed

    @staticmethod
    def _print_value(printed: ir.Print, value: Expr, spec: PrintSpec | None) -> None:
        """Add ``value`` to ``printed``, written as ``spec`` says; text may follow."""
        printed.args.append(value)
        printed.specs.append(spec)
        printed.texts.append("")

    def _print_formatted(self, printed: ir.Print, piece: ast.FormattedValue) -> None:
        """One ``{value:spec}`` of an f-string, as print() writes it."""
        value = self._expr(piece.value)
        if value.type == t.float32 and piece.conversion != ord("s"):
            # NumPy formats a float32 as the Python float it converts to (f"{v}" writes
            # 0.10000000149011612 where print(v) and f"{v!s}" write 0.1).
            value = ir.Cast(t.float64, value)
        if piece.format_spec is None:
            # !s and !r write a number as print() does; !a too.
            self._print_value(printed, value, None)
            return
        parts = piece.format_spec.values  # a JoinedStr: literal text and nested {fields}
        if not all(isinstance(p, ast.Constant) for p in parts):
            self.src.error(
                piece.value, "format specs in kernels are literal, e.g. {x:8.3f}", SPEC_HINT
            )
        spec_text = "".join(p.value for p in parts)  # type: ignore[attr-defined]
        kind = (
            "bool" if value.type == t.bool_
            else "float" if value.type.is_float
            else "int" if value.type.kind == "int"
            else "uint"
        )  # fmt: skip
        if piece.conversion != -1:  # !s, !r, !a: the text print writes, then the spec
            kind = "str"
        try:
            spec = python_spec(spec_text, kind)
        except ValueError as exc:
            self.src.error(
                piece.value, f"cannot format this value as {spec_text!r}: {exc}", SPEC_HINT
            )
        if kind == "bool":
            value = ir.Cast(t.int64, value)
        self._print_value(printed, value, spec)

    def _printf(self, call: ast.Call) -> ir.Stmt:
        if not call.args or not (
            isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)
        ):
            self.src.error(call, "pk.printf needs a literal format string first")
        fmt = call.args[0].value
        args = [self._expr(a) for a in call.args[1:]]
        try:
            printf_format(fmt, len(args))
        except ValueError as exc:
            self.src.error(call.args[0], f"bad pk.printf format: {exc}")
        return ir.Print(call.lineno, False, fmt, args)

    # ------------------------------------------------------------ expressions

    def _expr(self, node: ast.expr, statement: bool = False) -> Expr:
        """``node`` as a scalar expression (a classtype value only as a statement)."""
        value = self._any_expr(node, statement)
        if isinstance(value.type, StructType) and not statement:
            self._struct_misuse(node, value)
        return value

    def _any_expr(self, node: ast.expr, statement: bool = False) -> Expr:
        """``node`` lowered, a classtype value included."""
        match node:
            case ast.Constant(value=bool() as v):
                return ir.Const(t.bool_, v)
            case ast.Constant(value=int() as v):
                if not -(2**63) <= v < 2**63:
                    self.src.error(node, "integer literal does not fit in 64 bits")
                return ir.Const(t.int64, v)
            case ast.Constant(value=float() as v):
                return ir.Const(t.float64, v)
            case ast.Name():
                loaded = self._load_name(node)
                if isinstance(loaded, ir.ViewRef):
                    self.src.error(
                        node,
                        f"view {node.id!r} must be indexed here, e.g. {node.id}[i]",
                        hint="Kernels read and write views one element at a time; whole-view "
                        "operations belong in the Python code around the dispatch.",
                    )
                return loaded
            case ast.BinOp(left=left, op=op, right=right):
                symbol = _BINOPS.get(type(op))
                if symbol is None:
                    self.src.error(
                        node,
                        _not_in_kernels("operator", op),
                        hint=_OPERATOR_HINT,
                    )
                return self._binop(node, symbol, self._expr(left), self._expr(right))
            case ast.UnaryOp(op=ast.Not(), operand=operand):
                return ir.UnaryOp(t.bool_, "!", self._expr(operand))
            case ast.UnaryOp(op=ast.USub() | ast.UAdd() as op, operand=operand):
                folded = _ast_literal_int(node)
                if folded is not None and -(2**63) <= folded < 2**63:  # -2**63 fits
                    return ir.Const(t.int64, folded)
                inner = self._expr(operand)
                if isinstance(inner, ir.Const):  # -(0.5), +(1 + 1): still a literal
                    value = -inner.value if isinstance(op, ast.USub) else +inner.value
                    return ir.Const(inner.type if inner.type != t.bool_ else t.int64, value)
                rtype = t.int64 if inner.type == t.bool_ else inner.type
                return ir.UnaryOp(rtype, "-" if isinstance(op, ast.USub) else "+", inner)
            case ast.UnaryOp(op=ast.Invert(), operand=operand):
                inner = self._expr(operand)
                if not inner.type.is_integer:
                    self.src.error(node, "~ needs an integer")
                if isinstance(inner, ir.Const) and inner.weak:  # ~1: the literal -2
                    return ir.Const(inner.type, ~int(inner.value))
                return ir.UnaryOp(inner.type, "~", inner)
            case ast.BoolOp(op=op, values=values):
                operands = [self._expr(v) for v in values]
                # Python's `and`/`or` give an operand, not a bool: `a or b` is a if a else b.
                # The result has the operands' common type (bool when all are bools).
                rtype = operands[0].type
                for operand in operands[1:]:
                    if operand.type != rtype:
                        rtype = promote_types(rtype, operand.type)
                return ir.BoolOp(rtype, "&&" if isinstance(op, ast.And) else "||", operands)
            case ast.Compare():
                return self._compare(node)
            case ast.IfExp(test=test, body=body, orelse=orelse):
                a, b = self._expr(body), self._expr(orelse)
                rtype = a.type if a.type == b.type else promote(a, b)
                return ir.Select(rtype, self._expr(test), a, b)
            case ast.Subscript(value=ast.Attribute(value=ast.Name(id=owner), attr="shape")):
                if not self._is_view_name(owner):
                    self.src.error(node, f"{owner!r} is not a view")
                return self._extent(node, owner, [node.slice])
            case ast.Subscript():
                return self._subscript(node)
            case ast.Attribute():
                return self._attribute(node)
            case ast.Call():
                return self._call(node, statement)
        self.src.error(node, *_unsupported(node))

    def _load_name(self, node: ast.Name) -> Expr | ir.ViewRef:
        name = node.id
        if name in self.subviews:
            self.src.error(
                node,
                f"subview {name!r} must be indexed here, e.g. {name}[i]",
                hint="A helper takes whole views: pass the view and the indices of the part.",
            )
        if name in self.views:
            return ir.ViewRef(name, self.views[name])
        if name in self.locals:
            return ir.Var(self.locals[name], name)
        outer = self._outer_name(name)
        if outer is not None:
            return ir.Var(outer, name)
        if name in self.params:
            ptype = self.params[name].type
            if isinstance(ptype, ir.TeamType):
                self.src.error(
                    node,
                    f"the team member {name!r} is only used through its methods",
                    hint=f"e.g. {name}.league_rank(), {name}.team_rank(), {name}.team_barrier(). "
                    "(A TeamPolicy passes the team member first: a workunit written for an "
                    "index runs over a RangePolicy.)",
                )
            assert isinstance(ptype, DataType | StructType)
            return ir.Var(ptype, name)
        value = self.src.lookup(name, getattr(__builtins__, name, None))
        constant = _imported_math_constant(value) if self.src.defines(name) else None
        if constant is not None:
            return ir.Const(t.float64, MATH_CONSTANTS[constant])
        if self.src.defines(name) and isinstance(value, bool | int | float):
            whose = "a variable of its enclosing function" if name in self.src.closure else None
            self.src.error(
                node,
                f"kernel reads {name!r}, {whose}"
                if whose
                else f"kernel reads the global variable {name!r}",
                hint=f"Pass it as a keyword argument of the dispatch: `{name}={name}`, and add "
                f"a `{name}` parameter to the kernel.",
            )
        self.src.error(
            node,
            f"name {name!r} is not defined in the kernel",
            hint="Kernels see their parameters and locals; pass other values as keyword "
            "arguments of the dispatch.",
        )

    def _binop(self, node: ast.AST, op: str, left: Expr, right: Expr) -> Expr:
        for operand in (left, right):
            if isinstance(operand, ir.ViewRef):
                self.src.error(node, "views cannot be used in arithmetic; index them")
            if isinstance(operand.type, StructType):
                self._struct_misuse(node, operand)
        self._check_literal_arithmetic(node, op, left, right)
        self._check_literal_fits(node, left, right)
        folded = _fold_literals(op, left, right)
        if folded is not None:
            return folded
        if op == "/":
            # Ints divide in float64 (Python's true division); with a float operand, the
            # type `*` takes (NumPy's: float32 / int16 is float32, float32 / int32 float64).
            rtype = promote(left, right) if left.type.is_float or right.type.is_float else t.float64
            return ir.BinOp(rtype, op, left, right)
        if op in _BIT_OPS:
            if left.type.is_float or right.type.is_float:
                self.src.error(node, f"`{op}` needs integers")
            rtype = promote(left, right)
            if rtype.is_float:
                self.src.error(
                    node,
                    f"`{op}` of {left.type.name} and {right.type.name}: no integer type holds "
                    "the values of both",
                    hint="Convert one operand first: int(...) for int64.",
                )
            if left.type == right.type == t.bool_ and op in ("&", "|", "^"):
                rtype = t.bool_
            return ir.BinOp(rtype, op, left, right)
        rtype = promote(left, right)
        exponent = _literal_int(right)
        if op == "**" and rtype.is_integer and exponent is not None and exponent < 0:
            rtype = t.float64  # Python: 2 ** -1 == 0.5
        return ir.BinOp(rtype, op, left, right)

    def _check_literal_fits(self, node: ast.AST, left: Expr, right: Expr) -> None:
        """An int literal next to a narrower integer (``u8[i] + 300``) takes that type, as
        in NumPy, which raises OverflowError when the literal does not fit; C++ would wrap
        it into another number without a word."""
        for literal, typed in ((left, right), (right, left)):
            if is_weak(typed):
                continue
            value = literal_outside(literal, typed.type)
            if value is not None:
                self.src.error(
                    node,
                    f"{value} does not fit in {typed.type.name}, the type of the other operand "
                    f"of {ast.unparse(node)}",
                    hint=f"NumPy raises OverflowError here (C++ would wrap the literal). To "
                    f"compute in int64, convert the {typed.type.name} value first: int(...).",
                )

    def _check_literal_arithmetic(self, node: ast.AST, op: str, left: Expr, right: Expr) -> None:
        """Integer arithmetic of literals (``2**70``, ``10**20 // 3``) whose Python value
        an int64 cannot hold, or that Python refuses (``1 // 0``): C++ would give another
        number without a word."""
        a, b = _literal_int(left), _literal_int(right)
        if a is None or b is None:
            return
        written = ast.unparse(node) if isinstance(node, ast.expr) else f"{a} {op} {b}"
        if op in ("//", "%") and b == 0:
            self.src.error(
                node,
                f"{written} divides by zero",
                hint="Python raises ZeroDivisionError here; C++ would give any number.",
            )
        if op in ("<<", ">>") and b < 0:
            self.src.error(
                node,
                f"{written} shifts by a negative count",
                hint="Python raises ValueError here; C++ would give any number.",
            )
        value = _literal_result(op, a, b)
        if value is not None and not -(2**63) <= value < 2**63:
            shown = f" is {value}, which" if abs(value) < 10**30 else ""  # else a stand-in
            self.src.error(
                node,
                f"{written}{shown} does not fit in a kernel's 64-bit integers",
                hint="Use a float (e.g. 2.0**70) if an approximate value will do.",
            )

    def _compare(self, node: ast.Compare) -> Expr:
        left = self._expr(node.left)
        parts: list[Expr] = []
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            symbol = _CMPOPS.get(type(op))
            if symbol is None:
                self.src.error(
                    node,
                    _not_in_kernels("comparison", op),
                    hint="Kernels compare numbers with < <= > >= == !=.",
                )
            right = self._expr(comparator)
            parts.append(ir.Compare(t.bool_, symbol, left, right))
            left = right
        return parts[0] if len(parts) == 1 else ir.BoolOp(t.bool_, "&&", parts)

    def _subscript(self, node: ast.Subscript) -> ir.ViewAccess:
        base, index_nodes = flatten_subscript(node)
        if isinstance(base, ast.Name) and base.id in self.subviews:
            return self._subview_access(node, base.id, index_nodes)
        if not isinstance(base, ast.Name) or base.id not in self.views:
            self.src.error(
                base,
                "only views can be indexed in kernels",
                hint="Index a view passed as a keyword argument of the dispatch, e.g. x[i].",
            )
        view = self.views[base.id]
        for idx in index_nodes:
            if isinstance(idx, ast.Slice):
                self.src.error(
                    idx,
                    "a slice of a view here: assign the subview to a name first",
                    hint=f"Write `part = {ast.unparse(node)}`, then index `part[i]`.",
                )
        if len(index_nodes) != view.rank:
            self.src.error(
                node,
                f"view {base.id!r} has rank {view.rank} but is indexed with "
                f"{len(index_nodes)} indices",
                hint=f"Index all {view.rank} axes: {base.id}[{', '.join('ijkl'[: view.rank])}].",
            )
        indices = [self._view_index(idx) for idx in index_nodes]
        return ir.ViewAccess(view.dtype, ir.ViewRef(base.id, view), indices, node.lineno)

    def _view_index(self, node: ast.expr, slice_bound: bool = False) -> Expr:
        """An index of a view or subview axis: an integer (or bool) expression (or a
        slice's bound, which may be negative: Python's slice rules apply)."""
        lowered = self._expr(node)
        literal = _literal_int(lowered)
        if literal is not None and literal < 0 and not slice_bound:
            # Python would count from the end; a Kokkos view reads before its first element.
            self.src.error(
                node,
                f"the index {ast.unparse(node)} is negative: kernel views do not count from "
                "the end",
                hint="Write the position from the start, e.g. v[v.extent(0) - 1] for the last "
                "element.",
            )
        if not (lowered.type.is_integer or lowered.type == t.bool_):
            self.src.error(
                node,
                f"view indices must be integers, this is {lowered.type.name}",
                hint="Convert with int(...).",
            )
        return lowered

    def _attribute(self, node: ast.Attribute) -> Expr:
        base = self._struct_base(node.value)
        if base is not None:
            return self._field_access(node, base)
        if isinstance(node.value, ast.Name):
            module = self.src.lookup(node.value.id)
            if _is_module(module, "math") or _is_pkernels(module):
                if node.attr in MATH_CONSTANTS:
                    return ir.Const(t.float64, MATH_CONSTANTS[node.attr])
            if node.value.id in self.views and node.attr == "shape":
                self.src.error(node, "use v.shape[k] with a literal axis, or len(v)")
            self._refuse_fields_of_a_number(node)
        self.src.error(
            node,
            f"unsupported attribute {ast.unparse(node)!r} in a kernel",
            hint="Kernels may use math.pi, math.e and pk.* / math.* functions.",
        )

    def _math_module_function(self, func: ast.expr) -> str | None:
        """The name of the math-module function ``func`` refers to (``math.modf`` or a
        ``modf`` imported from math), else None."""
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if func.value.id not in self.locals and _is_module(
                self.src.lookup(func.value.id), "math"
            ):
                return func.attr
        if isinstance(func, ast.Name) and func.id not in self.locals:
            target = self.src.lookup(func.id)
            if callable(target) and getattr(target, "__module__", "") == "math":
                return target.__name__
        return None

    def _is_pk_attr(self, func: ast.expr, name: str) -> bool:
        return (
            isinstance(func, ast.Attribute)
            and func.attr == name
            and isinstance(func.value, ast.Name)
            and _is_pkernels(self.src.lookup(func.value.id))
        )

    def _call(self, node: ast.Call, statement: bool) -> Expr:
        func = node.func
        if node.keywords:
            self.src.error(node.keywords[0], "keyword arguments are not supported in kernel calls")
        team_query = self._team_method(node)
        if team_query is not None:
            return team_query
        for op in ("for", "reduce", "scan", "single"):
            name = op if op == "single" else f"parallel_{op}"
            if self._is_pk_attr(func, name):
                self.src.error(
                    node,
                    f"pk.{name} inside a kernel is a statement"
                    + ("" if op in ("for", "single") else " or the value of an assignment"),
                    hint=f"Write `total = pk.{name}(pk.TeamThreadRange(team_member, n), body)`."
                    if op in ("reduce", "scan")
                    else _NESTED_CALL_HINT,
                )
        if isinstance(func, ast.Attribute):  # p.method(...) on a classtype value
            receiver = self._struct_base(func.value)
            if receiver is not None:
                return self._method_call(node, receiver, func.attr, statement)
        # v.shape[k] is a Subscript of an Attribute; v.extent(k) is a call.
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            owner = func.value.id
            if self._is_view_name(owner) and func.attr == "extent":
                return self._extent(node, owner, node.args)
            module = self.src.lookup(owner)
            if _is_module(module, "math") or _is_pkernels(module):
                return self._module_call(node, func.attr, pk=_is_pkernels(module), stmt=statement)
        if isinstance(func, ast.Name):
            name = func.id
            if name in self.params or name in self.locals or name in self.views:
                self.src.error(func, f"{name!r} is not a function")
            target = self.src.lookup(name)
            if reads_bare_math(name, target):  # PyKokkos' bare sqrt(x)
                pk = bare_math_module(name) == "pkernels"
                return self._module_call(node, name, pk=pk, stmt=statement)
            if _is_plain_helper(target, self.src.globals):
                # As PyKokkos does: a plain function of the kernel's module that a kernel
                # calls is compiled as a @pk.function (Debug runs it as it is).
                mark_helper(target)
            if marker_of(target) is not None:
                return self._helper_call(node, target, statement)
            if is_classtype(target):
                return self._construct(node, target, statement)
            # Python's own (also when `from pkernels import *` brought pk.abs/min/max).
            if name in _PY_BUILTINS and (target is None or target is getattr(builtins, name)):
                return self._builtin(node, name)
            if callable(target) and getattr(target, "__module__", "") == "math":
                return self._module_call(node, target.__name__, pk=False, stmt=statement)
            if getattr(target, "__module__", "").startswith("pkernels") and callable(target):
                pk_name = _pk_builtin_name(target)
                return self._module_call(node, pk_name, pk=True, stmt=statement)
            if target is None:
                self.src.error(func, f"function {name!r} is not defined", hint=_CALL_HINT)
            if isinstance(target, type):
                self.src.error(
                    func,
                    f"the class {name!r} is not a classtype",
                    hint=f"Decorate it with @pk.classtype to build {name} values in kernels.",
                )
            self.src.error(func, f"{name!r} is not a kernel function", hint=_CALL_HINT)
        self.src.error(node, f"unsupported call {ast.unparse(func)!r} in a kernel", hint=_CALL_HINT)

    def _extent(self, node: ast.expr, view_name: str, args: list[ast.expr]) -> Expr:
        if len(args) != 1 or not (
            isinstance(args[0], ast.Constant) and isinstance(args[0].value, int)
        ):
            self.src.error(node, "extent() takes one literal axis number")
        axis = args[0].value
        if view_name in self.subviews:
            return self._subview_extent(view_name, axis, node)
        view = self.views[view_name]
        if not 0 <= axis < view.rank:
            self.src.error(node, f"axis {axis} is out of range for a rank-{view.rank} view")
        return ir.ViewExtent(t.int64, ir.ViewRef(view_name, view), axis)

    def _builtin(self, node: ast.Call, name: str) -> Expr:
        if name == "len":
            if len(node.args) == 1 and isinstance(node.args[0], ast.Subscript):
                self.src.error(
                    node.args[0],
                    "len() of a subview: assign the subview to a name first",
                    hint=f"Write `part = {ast.unparse(node.args[0])}`, then `len(part)`.",
                )
            if len(node.args) != 1 or not (
                isinstance(node.args[0], ast.Name) and self._is_view_name(node.args[0].id)
            ):
                self.src.error(node, "len() in kernels takes one view")
            view_name = node.args[0].id
            if view_name in self.subviews:
                return self._subview_extent(view_name, 0, node)
            return ir.ViewExtent(t.int64, ir.ViewRef(view_name, self.views[view_name]), 0)
        if name == "float" and len(node.args) == 1 and isinstance(node.args[0], ast.Constant):
            text = node.args[0].value
            if isinstance(text, str):  # float("inf"), float("nan"), float("1e-9")
                try:
                    return ir.Const(t.float64, float(text))
                except ValueError:
                    self.src.error(node.args[0], f"float() cannot read {text!r}")
        if name == "round" and len(node.args) != 1:
            self.src.error(
                node,
                "round() in kernels takes one number (and gives an int, as Python does)",
                hint="Keep the full value, and round where it is printed: f'{x:.2f}'.",
            )
        args = [self._expr(a) for a in node.args]
        if name == "round":  # to the nearest int, halves to even (the FPU's default)
            if not args[0].type.is_float:
                return ir.Cast(t.int64, args[0])
            return ir.Cast(t.int64, ir.Call(args[0].type, "nearbyint", args))
        if name == "pow":
            if len(args) != 2:
                self.src.error(node, "pow() in kernels takes two numbers: pow(x, y) is x ** y")
            return self._binop(node, "**", args[0], args[1])
        if name in ("int", "float", "bool"):
            if len(args) != 1:
                self.src.error(node, f"{name}() takes exactly one argument in kernels")
            target = {"int": t.int64, "float": t.float64, "bool": t.bool_}[name]  # Python's
            return ir.Cast(target, args[0])
        if name == "abs":
            if len(args) != 1:
                self.src.error(node, "abs() takes exactly one argument")
            rtype = t.int64 if args[0].type == t.bool_ else args[0].type
            return ir.Call(rtype, "abs", args)
        if name in ("min", "max"):
            if len(args) < 2:
                self.src.error(node, f"{name}() in kernels takes two or more numbers")
            result = args[0]
            for arg in args[1:]:
                result = ir.Call(promote(result, arg), name, [result, arg])
            return result
        self.src.error(node, f"{name}() is not supported in kernels")

    def _module_call(self, node: ast.Call, name: str, pk: bool, stmt: bool) -> Expr:
        if pk and name in ATOMIC_FUNCTIONS:
            return self._atomic(node, name, stmt)
        if pk and name in ("printf",):
            self.src.error(node, "pk.printf is a statement; call it on its own line")
        if pk and name in ("lower_bound", "upper_bound"):
            return self._search_bound(node, name)
        if pk and name in _ELEMENT_MATH:
            return self._element_math(node, name)
        if pk and name == "rand" and len(node.args) == 1:
            self.src.error(
                node,
                "pk.rand(T) draws from a Kokkos random pool (pk.Random_XorShift64_Pool), "
                "which kernels here do not have",
                hint="Draw counter-based numbers instead: `pk.rand(seed, i)` (a float in "
                "[0, 1)) or `pk.rand_int(seed, i, n)`, the same in every space; pass the "
                "seed as an argument and vary it between launches.",
            )
        if not pk and name in TUPLE_MATH:
            self.src.error(
                node,
                f"math.{name}() returns two values: unpack them on their own line",
                hint=f"Write `{'frac, whole' if name == 'modf' else 'mantissa, exponent'} = "
                f"math.{name}(x)`.",
            )
        if not pk and (name in _ANGLES or name == "log" and len(node.args) == 2):
            return self._math_formula(node, name)
        known = name in MATH_FUNCTIONS or name in PY_INT_ROUNDING or name in RANDOM_FUNCTIONS
        if not known and name not in ("floor", "ceil", "abs", "min", "max"):
            prefix = "pk" if pk else "math"
            self.src.error(
                node,
                f"{prefix}.{name} is not available in kernels",
                hint="Supported: "
                + ", ".join(sorted(MATH_FUNCTIONS))
                + ("" if pk else ", log(x, base), degrees, radians"),
            )
        if not pk and not hasattr(math, name):
            alternative = f"pk.{name}" if hasattr(kernel_builtins, name) else None
            self.src.error(
                node,
                f"Python's math module has no {name}()",
                hint=f"Use {alternative}(...)." if alternative else "",
            )
        args = [self._expr(a) for a in node.args]
        if name in PY_INT_ROUNDING and not pk:
            if len(args) != 1:
                self.src.error(node, f"math.{name}() takes exactly one argument")
            # math.floor/ceil/trunc return Python ints (int64 here, whatever the argument)
            if args[0].type == t.int64:
                return args[0]
            if args[0].type.is_integer or args[0].type == t.bool_:
                return ir.Cast(t.int64, args[0])
            return ir.Cast(t.int64, ir.Call(float_of(args[0].type), name, args))
        if name in ("floor", "ceil") and pk:
            return ir.Call(float_of(args[0].type), name, args)
        if name in ("abs", "min", "max") and pk:
            return self._builtin(node, name)
        if name in RANDOM_FUNCTIONS and pk:
            return self._random(node, name, args)
        spec = MATH_FUNCTIONS.get(name)
        if spec is None:
            prefix = "pk" if pk else "math"
            self.src.error(
                node,
                f"{prefix}.{name} is not available in kernels",
                hint="Supported: " + ", ".join(sorted(MATH_FUNCTIONS)),
            )
        arity, kind = spec
        if len(args) != arity:
            self.src.error(node, f"{name}() takes {arity} argument(s), got {len(args)}")
        if kind == "bool":
            return ir.Call(t.bool_, name, args)
        cname = "tgamma" if name == "gamma" else name
        if name == "ldexp" and not args[1].type.is_integer:
            self.src.error(node.args[1], "ldexp() takes an integer exponent")
        # math.* compute in double as Python does (a float32 argument is widened);
        # pk.* keep single precision for float32 arguments, as Kokkos' overloads do.
        floats = args[:1] if name == "ldexp" else args  # ldexp's exponent is an int
        rtype = float_of(*(a.type for a in floats)) if pk else t.float64
        return ir.Call(rtype, cname, args)

    def _element_math(self, node: ast.Call, name: str) -> Expr:
        """``pk.sign``, ``pk.square``, ``pk.reciprocal``, ``pk.rint``, ``pk.conj`` of a
        number (Kokkos' math, NumPy's element functions, which the Debug space calls):
        written with the IR's own operations, computing what NumPy computes."""
        if len(node.args) != 1 or node.keywords:
            self.src.error(node, f"pk.{name}() takes one number")
        x = self._expr(node.args[0])
        xt = x.type
        if not isinstance(xt, DataType) or xt == t.bool_:
            self.src.error(node.args[0], f"pk.{name}() takes a number, this is {_type_name(xt)}")
        if name == "conj":  # of a real number: itself
            return x
        if name == "square":
            return ir.BinOp(xt, "*", x, x)
        if name == "reciprocal":
            if not xt.is_float:
                self.src.error(
                    node,
                    f"pk.reciprocal of an integer ({xt.name}) is NumPy's integer 1 // x",
                    hint="Write 1.0 / x for the float reciprocal, or 1 // x.",
                )
            return ir.BinOp(xt, "/", ir.Const(xt, 1.0), x)
        if name == "rint":  # halves to even, a float (C's rint, as nearbyint)
            ft = xt if xt.is_float else t.float64
            return ir.Call(ft, "nearbyint", [x if xt.is_float else ir.Cast(ft, x)])
        # sign: NumPy's (1, -1, 0 for either zero, NaN for NaN)
        one, zero = (ir.Const(xt, 1.0), ir.Const(xt, 0.0)) if xt.is_float else (
            ir.Const(xt, 1),
            ir.Const(xt, 0),
        )
        minus_one = ir.Const(xt, -1.0 if xt.is_float else -1)
        if xt.kind == "uint":
            minus_one = zero  # never taken: an unsigned number is never below 0
        rest = ir.Select(xt, ir.Compare(t.bool_, "==", x, zero), zero, x)
        rest = ir.Select(xt, ir.Compare(t.bool_, "<", x, zero), minus_one, rest)
        return ir.Select(xt, ir.Compare(t.bool_, ">", x, zero), one, rest)

    def _math_formula(self, node: ast.Call, name: str) -> Expr:
        """``math.log(x, base)``, ``math.degrees(x)``, ``math.radians(x)``: the formulas
        CPython computes them with (``log(x) / log(base)``, ``x * (180 / pi)`` ...)."""
        args = [self._expr(a) for a in node.args]
        if name == "log":
            x, base = args
            rtype = t.float64  # math's, so double as in Python
            return ir.BinOp(rtype, "/", ir.Call(rtype, "log", [x]), ir.Call(rtype, "log", [base]))
        if len(args) != 1:
            self.src.error(node, f"math.{name}() takes exactly one argument")
        factor = ir.Const(t.float64, _ANGLES[name])
        return self._binop(node, "*", args[0], factor)

    def _random(self, node: ast.Call, name: str, args: list[Expr]) -> Expr:
        arity, rtype = RANDOM_FUNCTIONS[name]
        if len(args) != arity:
            usage = "pk.rand(seed, counter)" if name == "rand" else "pk.rand_int(seed, counter, n)"
            self.src.error(node, f"{usage} takes {arity} arguments, got {len(args)}")
        for arg, arg_node in zip(args, node.args, strict=True):
            if not (arg.type.is_integer or arg.type == t.bool_):
                self.src.error(arg_node, f"pk.{name} needs integer arguments, this is "
                               f"{arg.type.name}", hint="Use the index (and a seed) as the "
                               "counter: pk.rand(seed, i).")  # fmt: skip
        return ir.Call(rtype, name, args)

    def _search_bound(self, node: ast.Call, name: str) -> Expr:
        """``pk.lower_bound(view, count, value)`` / ``pk.upper_bound``: an index."""
        if len(node.args) != 3 or node.keywords:
            self.src.error(node, f"pk.{name} takes (view, count, value)")
        view_node, count_node, value_node = node.args
        if not (isinstance(view_node, ast.Name) and view_node.id in self.views):
            hint = "Pass the view itself (a subview cannot be searched yet)."
            self.src.error(view_node, f"the first argument of pk.{name} must be a view", hint=hint)
        view = self.views[view_node.id]
        if view.rank != 1:
            self.src.error(
                view_node, f"pk.{name} searches a rank-1 view; this one has rank {view.rank}"
            )
        count, value = self._expr(count_node), self._expr(value_node)
        if not (count.type.is_integer or count.type == t.bool_):
            self.src.error(count_node, f"the count must be an integer, this is {count.type.name}")
        if count.type != t.int64:
            count = ir.Cast(t.int64, count)
        ref = ir.ViewRef(view_node.id, view)
        return ir.SearchBound(t.int64, ref, count, value, upper=name == "upper_bound")

    def _atomic(self, node: ast.Call, name: str, statement: bool = True) -> Expr:
        op, fetch = ATOMIC_FUNCTIONS[name]
        if not fetch and not statement:
            # Python's pk.atomic_add returns None (Kokkos': void); C++ would give a value.
            fetching = {"exchange": "atomic_exchange", "inc": "atomic_fetch_add"}.get(op)
            fetching = {"dec": "atomic_fetch_sub"}.get(op, fetching or f"atomic_fetch_{op}")
            self.src.error(
                node,
                f"pk.{name} returns nothing; call it on its own line",
                hint=f"For the value before the update, use pk.{fetching}(...).",
            )
        wanted = {"cas": 4, "inc": 2, "dec": 2, "load": 2}.get(op, 3)
        if len(node.args) != wanted:
            self.src.error(node, f"pk.{name} takes {wanted} arguments (view, [indices], ...)")
        view_node, index_node, *rest = node.args
        if not (isinstance(view_node, ast.Name) and self._is_view_name(view_node.id)):
            self.src.error(view_node, f"the first argument of pk.{name} must be a view")
        if not isinstance(index_node, ast.List | ast.Tuple):
            self.src.error(index_node, "the indices must be written as a list, e.g. [i] or [i, j]")
        subscript = ast.Subscript(value=view_node, slice=ast.Tuple(elts=index_node.elts))
        ast.copy_location(subscript, node)
        access = self._subscript(subscript)
        operands = [self._expr(r) for r in rest]
        if op.removesuffix("_new") in _INTEGER_ATOMICS and access.type.is_float:
            self.src.error(node, f"pk.{name} needs an integer view")
        self._written(access)
        return ir.AtomicOp(access.type, op, access, operands, fetch)

    def _helper_call(self, node: ast.Call, target: Callable[..., Any], statement: bool) -> Expr:
        marker = marker_of(target)
        assert marker is not None
        if marker.kind != "function":
            name = target.__name__
            hint = "Move the shared code into a @pk.function helper that both call."
            if name in MATH_FUNCTIONS or name in PY_INT_ROUNDING:  # PyKokkos' gh-192 idiom
                hint = f"For the math function, write math.{name}(...) (with `import math`)."
            self.src.error(
                node,
                f"{name!r} is a workunit; only @pk.function helpers can be called from kernels",
                hint=hint,
            )
        args = self._call_args(node.args)
        function = self.helpers.get(target, call_arg_types(args), call=(self.src, node))
        return self._user_call(node, function, args, statement)


_NESTED_CALL_HINT = (
    "Call it on its own line: `pk.parallel_for(pk.TeamThreadRange(team_member, n), body)`."
)
_INTEGER_ATOMICS = ("and", "or", "xor", "mod", "lshift", "rshift")
# math.degrees and math.radians: the factors CPython multiplies by.
_ANGLES = {"degrees": 180.0 / math.pi, "radians": math.pi / 180.0}
_PY_BUILTINS = {"len", "int", "float", "bool", "abs", "min", "max", "round", "pow"}

_CALL_HINT = (
    "Kernels can call @pk.function helpers, math.* / pk.* functions, abs, min, max, round, "
    "pow, int, float, bool and len, and v.extent(k) on views."
)
_LOOP_ELSE_HINT = "Set a flag before `break` and test it after the loop."
_ASSIGN_HINT = "Assign to a local name or to a view element, e.g. `out[i] = value`."
_OPERATOR_HINT = "Kernels have + - * / // % ** & | ^ << >> and the unary - + ~ not."
# Operators kernels lack, as written in Python.
_OPERATOR_SYMBOLS: dict[type, str] = {
    ast.MatMult: "@", ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
}  # fmt: skip


_HUGE = 10**40  # stands for a literal result too large to compute (past int64 anyway)


def _ast_literal_int(node: ast.expr) -> int | None:
    """The Python value of integer literal arithmetic as written (``-2**63``), else None."""
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) is int else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd | ast.Invert):
        inner = _ast_literal_int(node.operand)
        if inner is None:
            return None
        return (
            -inner
            if isinstance(node.op, ast.USub)
            else ~inner
            if isinstance(node.op, ast.Invert)
            else inner
        )
    if isinstance(node, ast.BinOp):
        symbol = _BINOPS.get(type(node.op))
        a, b = _ast_literal_int(node.left), _ast_literal_int(node.right)
        if symbol is None or a is None or b is None:
            return None
        return _literal_result(symbol, a, b)
    return None


def _literal_int(e: Expr) -> int | None:
    """The Python value of an integer expression made of literals only, else None."""
    if isinstance(e, ir.Const):
        return e.value if type(e.value) is int else None
    if isinstance(e, ir.UnaryOp) and e.op in ("-", "+", "~"):
        inner = _literal_int(e.operand)
        if inner is None:
            return None
        return {"-": -inner, "+": inner, "~": ~inner}[e.op]
    if isinstance(e, ir.BinOp):
        a, b = _literal_int(e.left), _literal_int(e.right)
        if a is None or b is None:
            return None
        return _literal_result(e.op, a, b)
    return None


_PY_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "&": operator.and_,
    "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift,
}  # fmt: skip


def _fold_literals(op: str, left: Expr, right: Expr) -> ir.Const | None:
    """``left op right`` of two number literals as the literal Python computes (``1 + 1``
    is the Python int 2, ``0.5 * 2`` the float 1.0): it stays weak, taking the type of a
    typed operand as NumPy 2 lets a Python scalar (``v8[i] + (1 + 1)`` is an int8, as in
    the Debug space). None when not both are number literals, or Python would raise or
    give another kind of number (a complex); the callers have refused what an int64
    cannot hold or Python refuses (``1 // 0``, ``2**70``) already."""
    if not (isinstance(left, ir.Const) and isinstance(right, ir.Const)):
        return None
    if not (left.weak and right.weak):  # a bool's type is its own, as in this translator
        return None
    try:
        value = _PY_OPERATORS[op](left.value, right.value)
    except (ArithmeticError, ValueError, TypeError):  # 1.0 / 0, 10.0 ** 400, 1.5 & 1
        return None
    if type(value) is int and -(2**63) <= value < 2**63:
        return ir.Const(t.int64, value)
    if type(value) is float:
        return ir.Const(t.float64, value)
    return None


def _literal_result(op: str, a: int, b: int) -> int | None:
    """``a op b`` as Python computes it, for integer results (None: a float, or not an
    integer operation). Huge powers and shifts are not built: :data:`_HUGE` stands in."""
    if op in ("//", "%") and b == 0 or op in ("<<", ">>") and b < 0:
        return None
    if op == "**":
        if b < 0:
            return None  # a float in Python
        if abs(a) > 1 and b * a.bit_length() > 10_000:
            return _HUGE * (-1 if a < 0 and b % 2 else 1)
        return a**b
    if op == "<<" and a != 0 and b > 10_000:
        return _HUGE * (-1 if a < 0 else 1)
    compute = _PY_OPERATORS.get(op) if op != "/" else None  # `/` gives a float
    return compute(a, b) if compute is not None else None


def _not_in_kernels(what: str, op: ast.AST) -> str:
    """The message for an operator kernels lack, as Python spells it."""
    symbol = _OPERATOR_SYMBOLS.get(type(op), type(op).__name__)
    return f"the {what} `{symbol}` is not supported in kernels"


def _is_plain_helper(target: object, module_globals: dict[str, Any]) -> bool:
    """An undecorated Python function (not a lambda) defined in the kernel's module."""
    return (
        isinstance(target, types.FunctionType)
        and target.__globals__ is module_globals
        and target.__name__ != "<lambda>"
        and marker_of(target) is None
        and not is_classtype(target)
    )


@functools.cache
def _pk_builtin_names() -> dict[int, str]:
    from ..api import kernel_builtins

    return {id(value): name for name, value in vars(kernel_builtins).items() if callable(value)}


def _pk_builtin_name(function: Any) -> str:
    """The ``pk.`` name of a kernel builtin imported bare (``from pkernels import
    tgamma``): its own ``__name__`` may differ (math.gamma, a wrapper)."""
    return _pk_builtin_names().get(id(function), getattr(function, "__name__", ""))


def _type_name(tp: object) -> str:
    """``tp`` as error messages name types: float64, View1D[float64], Particle."""
    if isinstance(tp, DataType | StructType):
        return tp.name
    if isinstance(tp, ViewAnnotation):
        return tp.name
    return str(tp)


class _AnnotationScope(dict):
    """What an annotation's names mean: the kernel's closure, its module's globals and
    Python's builtins, then C type names none of them define (``double``: PyKokkos' C++
    reads ``pk.ScratchView1D[double]``)."""

    def __init__(self, closure: dict[str, Any], module_globals: dict[str, Any]) -> None:
        super().__init__(closure)
        self._globals = module_globals

    def __missing__(self, name: str) -> Any:
        if name in self._globals or hasattr(builtins, name) or name not in C_TYPE_NAMES:
            raise KeyError(name)
        return C_TYPE_NAMES[name]


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _is_module(obj: object, name: str) -> bool:
    return getattr(obj, "__name__", None) == name and type(obj).__name__ == "module"


def _imported_math_constant(value: object) -> str | None:
    """Which of math's constants ``value`` is, when a global is one imported by name
    (``from math import pi``, ``from numpy import inf``), else None.

    Identity, not equality: ``pi = 3.141592653589793`` typed in is a global variable like
    any other, which the kernel is told to take as an argument."""
    if not isinstance(value, float):
        return None
    for name in MATH_CONSTANTS:
        if any(value is getattr(module, name, None) for module in (math, np)):
            return name
    return None


def _is_pkernels(obj: object) -> bool:
    """Whether ``obj`` is pkernels, or a module re-exporting its kernel API (a package
    named ``pykokkos`` doing ``from pkernels import *``): ``pk.atomic_add`` through it is
    pkernels' own."""
    if type(obj).__name__ != "module":
        return False
    if getattr(obj, "__name__", "") == "pkernels":
        return True
    pkernels = sys.modules.get("pkernels")
    return pkernels is not None and any(
        getattr(obj, name, None) is getattr(pkernels, name) for name in _PKERNELS_MARKS
    )


# Names a module re-exporting pkernels has as pkernels' own objects.
_PKERNELS_MARKS = ("workunit", "parallel_for", "atomic_add", "View")


_RESERVED_NAMES = {"math", "pk", "range", "print"}
# pk.* element functions of NumPy and Kokkos lowered to the IR's operations.
_ELEMENT_MATH = frozenset({"sign", "square", "reciprocal", "rint", "conj"})
