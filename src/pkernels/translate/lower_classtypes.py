"""Lowering of ``@pk.classtype`` values: constructors, fields, methods.

A feature lowerer of :class:`~pkernels.translate.lower.FunctionLowerer` (see
:mod:`~pkernels.translate.lower_context`). A classtype is a C++
struct (:class:`~pkernels.translate.ir.StructType`); ``Particle(...)`` calls a function
built from its ``__init__`` (whose ``self`` is a local struct, returned at its end), and
``p.energy(s)`` a function built from the method, taking the struct by reference.
Helpers take classtype parameters by reference too, so a helper that assigns a field of
its parameter changes the caller's value, as in Python.

Python's objects are shared by reference where C++ copies values; the two differ only
when one object gets a second name. So a classtype value may only be bound (to a name,
a field, a return value) when it is new: the result of a constructor, helper or method
call (or, for ``return``, a local of the function, whose name ends with it).
"""

from __future__ import annotations

import ast
import difflib
import inspect
import types
from typing import Any

from ..api import types as t
from ..api.types import DataType
from . import ir
from .classtypes import field_declarations, init_source
from .ir import Expr, StructType
from .lower_context import Lowerer

_VALUE_HINT = (
    "Classtype values are assigned to names (from a constructor or a function call), "
    "passed to @pk.function helpers and methods, and returned; compute with their "
    "fields, e.g. p.x."
)


class ClassTypeLowerer(Lowerer):
    """The classtype lowerer (see the module docstring)."""

    # ------------------------------------------------------------ types

    def struct_of(self, cls: type, node: ast.AST) -> StructType:
        """The struct of the classtype ``cls`` (its fields read on first use)."""
        registry = self.cx.helpers.structs
        found = registry.types.get(cls)
        if found is not None:
            return found
        if cls in registry.in_progress:
            self.src.error(
                node,
                f"classtype {cls.__name__} contains itself",
                hint="A classtype is a value: it can hold other classtypes, not itself.",
            )
        registry.in_progress.append(cls)
        source = init_source(cls, self.src, node)
        from .lower import FunctionLowerer  # the lowerers' front; it imports this module

        reader = FunctionLowerer(source, self.cx.helpers, cpp_name="").cx.signature
        fields: list[tuple[str, DataType | StructType]] = []
        for declaration in field_declarations(source):
            ftype = reader.annotation(declaration.annotation)
            if not isinstance(ftype, DataType | StructType):
                source.error(
                    declaration.annotation,
                    f"the field {declaration.name!r} of classtype {cls.__name__} must be a "
                    "number, a bool or a classtype",
                    hint="Views cannot be classtype fields: pass the view to the kernel (or "
                    "to a @pk.function) and index it there.",
                )
            fields.append((declaration.name, ftype))
        registry.in_progress.remove(cls)
        struct = StructType(cls, cls.__name__, registry.ctype_for(cls), tuple(fields))
        registry.add(struct)
        return struct

    def _name_type(self, name: str) -> Any:
        """The type ``name`` has where it is read (None for views and unknown names)."""
        if name in self.cx.views:
            return None
        if name in self.cx.locals:
            return self.cx.locals[name]
        outer = self.cx.teams.outer_name(name)
        if outer is not None:
            return outer
        if name in self.cx.params:
            return self.cx.params[name].type
        return None

    def struct_misuse(self, node: ast.AST, value: Expr) -> None:
        reducer = value.type.reducer
        if reducer is not None:
            fields = ", ".join(reducer.fields)
            self.src.error(
                node,
                f"with reducer=pk.{reducer.name} the accumulator holds several values "
                f"({fields}): update its fields",
                hint=f"e.g. {reducer.usage(_describe(value).strip('`'))}.",
            )
        self.src.error(node, f"a {value.type.name} value cannot be used here", hint=_VALUE_HINT)

    def refuse_fields_of_a_number(self, node: ast.Attribute) -> None:
        """``acc.val`` where the accumulator is one number (another reducer than MaxLoc &c)."""
        if not isinstance(node.value, ast.Name):
            return
        param = self.cx.params.get(node.value.id)
        if param is None or param.role != "acc" or isinstance(param.type, StructType):
            return
        reducer = getattr(self.cx.reducer, "name", "Sum")
        self.src.error(
            node,
            f"the accumulator {param.name!r} is one number (reducer=pk.{reducer}) and has no "
            f"field {node.attr!r}",
            hint="Fields such as .val and .loc belong to the accumulators of pk.MaxLoc, "
            "pk.MinLoc, pk.MinMax and pk.MinMaxLoc: pass one as parallel_reduce's reducer=, "
            f"or update {param.name!r} itself.",
        )

    # ------------------------------------------------------------ constructors

    def declare_constructor(self, struct: StructType, arg_types: tuple[Any, ...]) -> ir.Function:
        """Declare the function ``__init__`` becomes: its parameters but ``self``, which is
        a local struct it fills in and returns."""
        tree = self.src.tree
        self.cx.is_helper = True
        args = self.cx.signature.plain_params(tree)
        if not args:
            self.src.error(tree, "__init__ needs its `self` parameter")
        me = args[0].arg
        params = self.cx.signature.helper_params(tree, args[1:], arg_types, struct.name)
        self.cx.constructing, self.cx.struct_self = struct, me
        self.cx.return_type = struct
        self.cx.signature.register_params(params)
        self.cx.locals[me] = struct
        self.cx.first_assign_line[me] = tree.lineno
        self.cx.function = ir.Function(
            self.cx.cpp_name,
            struct.name,
            self.src.filename,
            tree.lineno,
            params,
            struct,
            self.cx.locals,
            [],
            end_lineno=tree.end_lineno or tree.lineno,
        )
        return self.cx.function

    def constructor_return(self, node: ast.Return, value_node: ast.expr | None) -> ir.Stmt:
        assert self.cx.constructing is not None and self.cx.struct_self is not None
        if value_node is not None and not (
            isinstance(value_node, ast.Constant) and value_node.value is None
        ):
            self.src.error(node, "__init__ returns nothing", hint="Write a bare `return`.")
        return ir.Return(node.lineno, ir.Var(self.cx.constructing, self.cx.struct_self))

    def construct(self, node: ast.Call, cls: type, statement: bool) -> Expr:
        """``Particle(...)``: a new value of the classtype ``cls``."""
        struct = self.struct_of(cls, node)
        args = self.call_args(node.args)
        init = vars(cls)["__init__"]
        function = self.cx.helpers.get(init, call_arg_types(args), struct, "init", (self.src, node))
        return self.user_call(node, function, args, statement)

    # ------------------------------------------------------------ calls with views and structs

    def call_args(self, nodes: list[ast.expr]) -> list[Expr]:
        """Arguments of a helper, method or constructor call: views (passed whole) and
        classtype values allowed."""
        out: list[Expr] = []
        for node in nodes:
            if isinstance(node, ast.Name) and node.id in self.cx.views:
                view = self.cx.views[node.id]
                out.append(ir.ViewArg(view.dtype, ir.ViewRef(node.id, view)))
            else:
                out.append(self.cx.exprs.any_expr(node))
        return out

    def user_call(
        self, node: ast.Call, function: ir.Function, args: list[Expr], statement: bool
    ) -> Expr:
        """The call of a translated helper, method or constructor; the views it passes
        count as written here when the callee writes them (see HelperRegistry)."""
        if function.return_type is None and not statement:
            self.src.error(
                node,
                f"{function.py_name}() returns no value here",
                hint="Annotate the helper's return type (needed for recursive helpers), "
                "e.g. `def f(x: float) -> float:`.",
            )
        assert self.cx.function is not None
        passes = {
            p.name: a.ref.name
            for p, a in zip(function.params, args, strict=True)
            if isinstance(a, ir.ViewArg) and a.ref.name in self.cx.params
        }
        if passes:
            self.cx.function.view_passes.append((function.name, passes))
            self.cx.function.written_views.update(
                view for param, view in passes.items() if param in function.written_views
            )
        return ir.Call(function.return_type, function.name, args, user=True)

    # ------------------------------------------------------------ fields and methods

    def struct_base(self, node: ast.expr) -> Expr | None:
        """``node`` lowered when it is a classtype value (the ``p`` of ``p.x``), else None."""
        if isinstance(node, ast.Name):
            found = self._name_type(node.id)
            return ir.Var(found, node.id) if isinstance(found, StructType) else None
        if isinstance(node, ast.Attribute):
            inner = self.struct_base(node.value)
            if inner is None:
                return None
            access = self.field_access(node, inner)
            return access if isinstance(access.type, StructType) else None
        if isinstance(node, ast.Call):
            value = self.cx.exprs.any_expr(node)
            return value if isinstance(value.type, StructType) else None
        return None

    def field_access(self, node: ast.Attribute, base: Expr) -> ir.FieldAccess:
        struct = base.type
        assert isinstance(struct, StructType)
        ftype = struct.field_type(node.attr)
        if ftype is None and struct.reducer is not None:
            self.src.error(
                node,
                f"the accumulator of pk.{struct.reducer.name} has no field {node.attr!r}; its "
                f"fields are {', '.join(struct.reducer.fields)}",
                hint=f"e.g. {struct.reducer.usage(ast.unparse(node.value))}.",
            )
        if ftype is None:
            names = ", ".join(name for name, _ in struct.fields) or "none"
            close = difflib.get_close_matches(node.attr, [name for name, _ in struct.fields], 1)
            self.src.error(
                node,
                f"classtype {struct.name} has no field {node.attr!r}"
                + (f": did you mean {close[0]!r}?" if close else ""),
                hint=f"Its fields ({names}) are the annotated assignments `self.f: T = ...` "
                f"of {struct.name}.__init__.",
            )
        return ir.FieldAccess(ftype, base, node.attr)

    def _field_target(self, target: ast.Attribute) -> ir.FieldAccess:
        base = self.struct_base(target.value)
        if base is None:
            self.refuse_fields_of_a_number(target)
            self.src.error(
                target,
                f"cannot assign to {ast.unparse(target)} in a kernel",
                hint="Assign to a local name, a view element (`out[i] = value`) or a field of "
                "a classtype value (`p.x = value`).",
            )
        if not _is_lvalue(base):
            self.src.error(
                target,
                "only fields of a named classtype value can be assigned",
                hint="Name the value first: `p = make(...)`, then `p.x = ...`.",
            )
        return self.field_access(target, base)

    def field_store(
        self, node: ast.stmt, target: ast.Attribute, value_node: ast.expr, declared: Any
    ) -> ir.Stmt:
        """``p.x = value`` (and, in a classtype's ``__init__``, ``self.x: T = value``)."""
        access = self._field_target(target)
        if declared is not None and not (
            self.cx.constructing is not None
            and isinstance(access.base, ir.Var)
            and access.base.name == self.cx.struct_self
        ):
            self.src.error(
                node,
                "only a classtype's __init__ declares fields (`self.f: T = ...`)",
                hint=f"Assign it without the annotation: `{ast.unparse(target)} = ...`.",
            )
        value = self.cx.exprs.any_expr(value_node)
        self._check_field_value(target, access, value)
        return ir.Assign(node.lineno, access, value)

    def field_aug_assign(
        self, node: ast.AugAssign, target: ast.Attribute, symbol: str, value: Expr
    ) -> ir.Stmt:
        access = self._field_target(target)
        if isinstance(access.type, StructType):
            self.struct_misuse(target, access)
        combined = self.cx.exprs.binop(node, symbol, access, value)
        self._check_field_value(target, access, combined)
        return ir.AugAssign(node.lineno, access, symbol, value)

    def _check_field_value(self, node: ast.expr, access: ir.FieldAccess, value: Expr) -> None:
        """What Python would store in the field must be what the struct's field holds."""
        name, ftype = ast.unparse(node), access.type
        if isinstance(ftype, StructType) or isinstance(value.type, StructType):
            if ftype != value.type:
                self.src.error(
                    node, f"{name} is a {ftype.name} but is assigned a {value.type.name} value"
                )
            self._check_new(node, value, name)
            return
        if value.type.is_float and not ftype.is_float:
            hint = "Python would store the float; convert with int(...), or declare the "
            hint += "field as a float in __init__."
            if access.base.type.reducer is not None:  # a reducer's accumulator
                hint = "Its type is fixed: convert with int(...)."
            self.src.error(
                node,
                f"the field {name} is an {ftype.name} but is assigned a float ({value.type.name})",
                hint=hint,
            )
        if ftype == t.bool_ and value.type != t.bool_:
            self.src.error(
                node,
                f"the field {name} is a bool but is assigned a number",
                hint="Assign True, False or a comparison, or declare the field as an int.",
            )

    def method_call(self, node: ast.Call, receiver: Expr, attr: str, statement: bool) -> Expr:
        """``p.method(args)``: the method's function, ``p`` passed by reference."""
        struct = receiver.type
        assert isinstance(struct, StructType)
        if struct.field_type(attr) is not None:
            self.src.error(
                node.func,
                f"{attr!r} is a field of {struct.name}, not a method",
                hint=f"Read it without the call: `{ast.unparse(node.func)}`.",
            )
        method = inspect.getattr_static(struct.cls, attr, None)
        if attr.startswith("__") or not isinstance(method, types.FunctionType):
            self.src.error(
                node.func,
                f"classtype {struct.name} has no method {attr!r} kernels can call",
                hint="Kernels call a classtype's plain methods, `def m(self, ...) -> T:`.",
            )
        args = [receiver, *self.call_args(node.args)]
        function = self.cx.helpers.get(
            method, call_arg_types(args), struct, "method", (self.src, node)
        )
        return self.user_call(node, function, args, statement)

    # ------------------------------------------------------------ binding values

    def binds_struct(self, name: str, value: Expr, declared: Any) -> bool:
        return any(isinstance(x, StructType) for x in (value.type, declared, self._name_type(name)))

    def bind_struct(self, target: ast.Name, value: Expr, declared: Any) -> ir.Var:
        """``p = Particle(...)``, ``p: Particle = make(...)``."""
        name = target.id
        if name == self.cx.struct_self:
            self.src.error(
                target,
                f"cannot rebind {name!r}",
                hint=f"Assign its fields instead, e.g. `{name}.x = ...`.",
            )
        shadowing = bool(self.cx.outer_scopes) and name not in self.cx.locals
        if name in self.cx.params and not shadowing:
            self.src.error(
                target,
                f"cannot rebind the parameter {name!r} to a new value",
                hint="In Python the caller's value would not change, in C++ it would: assign "
                "its fields, or use a new local name.",
            )
        stype = declared if declared is not None else value.type
        if value.type != stype:
            self.src.error(
                target,
                f"{name!r} is declared {stype.name} but is assigned a {value.type.name} value",
            )
        current = self.cx.locals.get(name)
        if current is not None and current != stype:
            self.src.error(
                target,
                f"{name!r} was a {current.name} on line {self.cx.first_assign_line.get(name)}; a "
                f"local keeps one type",
                hint="Use another name for the new value.",
            )
        self._check_new(target, value, name)
        self.cx.locals.setdefault(name, stype)
        self.cx.first_assign_line.setdefault(name, target.lineno)
        if declared is not None:
            self.cx.declared.add(name)
        return ir.Var(stype, name)

    def _check_new(self, node: ast.AST, value: Expr, target: str, returning: bool = False) -> None:
        """Refuse binding a classtype value that already has a name (see the module
        docstring); ``returning``: a local of this function may be returned."""
        if isinstance(value, ir.Call):
            return
        if (
            returning
            and isinstance(value, ir.Var)
            and value.name in self.cx.locals
            and value.name not in self.cx.params
            and value.name != self.cx.struct_self
        ):
            return
        struct = value.type
        source = _describe(value)
        what = f"returning {source}" if returning else f"assigning {source} to `{target}`"
        hint = f"Make the copy explicit with the constructor, `{struct.name}(...)` from the "
        hint += f"fields of {source}, or keep using {source} itself."
        if struct.reducer is not None:
            hint = f"Read and update its fields ({', '.join(struct.reducer.fields)}) instead."
        self.src.error(
            node,
            f"{what} would share one {struct.name} object in Python but copy it in C++",
            hint=hint,
        )

    def check_struct_return(self, node: ast.Return, value: Expr) -> None:
        """A returned classtype value: of the function's type, and not another name's."""
        declared = self.cx.return_type
        if not (isinstance(value.type, StructType) or isinstance(declared, StructType)):
            return
        if declared is not None and declared != value.type:
            self.src.error(
                node,
                f"this function returns a {declared.name}, not a {value.type.name}",
            )
        self._check_new(node, value, "", returning=True)


def call_arg_types(args: list[Expr]) -> tuple[Any, ...]:
    """The types a helper is specialised for: views whole, literals as int64."""
    return tuple(
        a.ref.view
        if isinstance(a, ir.ViewArg)
        else t.int64
        if isinstance(a, ir.Const) and a.type == t.int64
        else a.type
        for a in args
    )


def _is_lvalue(e: Expr) -> bool:
    if isinstance(e, ir.Var):
        return True
    return isinstance(e, ir.FieldAccess) and _is_lvalue(e.base)


def _describe(e: Expr) -> str:
    if isinstance(e, ir.Var):
        return f"`{e.name}`"
    if isinstance(e, ir.FieldAccess):
        inner = _describe(e.base).strip("`")
        return f"`{inner}.{e.field}`"
    return "this value"
