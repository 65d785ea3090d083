"""Lowering of statements: assignments, loops, branches, returns."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any, cast

from ..api import types as t
from ..api.teams import ScratchAnnotation
from ..api.types import DataType
from . import ir
from .ir import Expr, StructType
from .lower_context import AccumulatorTakesComplex, Lowerer, LoweringContext
from .lower_lists import ListAnnotation, is_list_display
from .lower_support import (
    ASSIGN_HINT,
    BINOPS,
    LOOP_ELSE_HINT,
    OPERATOR_HINT,
    RESERVED_NAMES,
    is_name,
    not_in_kernels,
    unsupported_construct,
)
from .typing_rules import (
    COMPLEX_TO_REAL_HINT,
    declared_conversion,
    promote,
    promote_types,
)

# What lowering one statement gives: a statement, several (hidden locals first), or
# nothing (pass, a docstring, a nested def lowered where it is used).
Lowered = ir.Stmt | list[ir.Stmt] | None


class StatementLowerer(Lowerer):
    """Statements, dispatched on the node's type."""

    def __init__(self, cx: LoweringContext) -> None:
        super().__init__(cx)
        self._handlers: dict[type[ast.stmt], Callable[[Any], Lowered]] = {
            ast.Assign: self._assign_statement,
            ast.AnnAssign: self._declaration,
            ast.AugAssign: lambda n: self._aug_assign(n, n.target, n.op, n.value),
            ast.If: self._if,
            ast.For: self._for,
            ast.While: self._while,
            ast.Break: self._break,
            ast.Continue: self._continue,
            ast.Pass: lambda n: None,
            ast.Return: lambda n: self._return(n, n.value),
            ast.Expr: self._expression_statement,
            ast.Nonlocal: self._nonlocal,
            ast.FunctionDef: self._nested_def,
        }

    def block(self, stmts: list[ast.stmt]) -> list[ir.Stmt]:
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

    def _stmt(self, node: ast.stmt) -> Lowered:
        """``node`` lowered by the handler of its type; a construct kernels lack is an
        error."""
        handler = self._handlers.get(type(node))
        if handler is None:
            self.src.error(node, *unsupported_construct(node))
        return handler(node)

    def _assign_statement(self, node: ast.Assign) -> Lowered:
        if len(node.targets) == 1:
            return self.assign(node, node.targets[0], node.value, None)
        return self.cx.unpacking.chained_assign(node, node.targets, node.value)

    def _declaration(self, node: ast.AnnAssign) -> Lowered:
        target, ann, value = node.target, node.annotation, node.value
        if value is None:
            self.src.error(node, "a declaration needs a value, e.g. `x: float = 0`")
        declared = self.cx.signature.annotation(ann)
        if isinstance(declared, ScratchAnnotation):
            return self.cx.teams.scratch_alloc(node, target, value, declared)
        if isinstance(declared, ListAnnotation):
            return self.cx.lists.local_list(node, target, value, declared.dtype)
        if not isinstance(declared, DataType | StructType):
            self.src.error(ann, "local variables must have a scalar type or a classtype")
        return self.assign(node, target, value, declared)

    def _if(self, node: ast.If) -> Lowered:
        cond = self.cx.exprs.expr(node.test)
        self.cx.conditions.append(cond)
        lowered = ir.If(node.lineno, cond, self.block(node.body), self.block(node.orelse))
        self.cx.conditions.pop()
        return lowered

    def _while(self, node: ast.While) -> Lowered:
        if node.orelse:
            self.src.error(node, "`while ... else` is not supported", hint=LOOP_ELSE_HINT)
        self.cx.loop_depth += 1
        cond = self.cx.exprs.expr(node.test)
        self.cx.conditions.append(cond)
        lowered = ir.While(node.lineno, cond, self.block(node.body))
        self.cx.conditions.pop()
        self.cx.loop_depth -= 1
        return lowered

    def _break(self, node: ast.Break) -> Lowered:
        self._need_loop(node, "break")
        return ir.Break(node.lineno)

    def _continue(self, node: ast.Continue) -> Lowered:
        self._need_loop(node, "continue")
        return ir.Continue(node.lineno)

    def _expression_statement(self, node: ast.Expr) -> Lowered:
        if isinstance(node.value, ast.Call):
            return self._call_statement(node.value)
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # a string used as a comment
        self.src.error(node, *unsupported_construct(node))

    def _nonlocal(self, node: ast.Nonlocal) -> Lowered:
        if self.cx.team_name is None:
            self.src.error(node, *unsupported_construct(node))
        self.cx.teams.nonlocal_statement(node)
        return None

    def _nested_def(self, node: ast.FunctionDef) -> Lowered:
        if self.cx.team_name is None:
            self.src.error(
                node,
                "nested functions are not supported in this kernel",
                hint="Define a module-level `@pk.function` helper instead.",
            )
        # The body of a nested parallel_* or pk.single: lowered where it is used.
        self.cx.nested_defs[node.name] = node
        return None

    def _need_loop(self, node: ast.stmt, word: str) -> None:
        if self.cx.loop_depth == 0:
            self.src.error(node, f"`{word}` outside a loop")

    def assign(
        self, node: ast.stmt, target: ast.expr, value_node: ast.expr, declared: Any
    ) -> ir.Stmt | list[ir.Stmt]:
        if isinstance(target, ast.Tuple | ast.List):
            return self.cx.unpacking.unpack(node, target, value_node)
        if not isinstance(target, ast.Name | ast.Subscript | ast.Attribute):
            self.src.error(
                target,
                f"cannot assign to {type(target).__name__} in a kernel",
                hint=ASSIGN_HINT,
            )
        if isinstance(target, ast.Name) and is_list_display(value_node):
            if declared is not None:  # `x: float = [...]`
                self.src.error(node, f"a list local is annotated List[...], not {declared.name}")
            return self.cx.lists.local_list(node, target, value_node, None)
        if self.cx.slices.binds_subview(target, value_node):
            if declared is not None:
                self.src.error(node, "a subview cannot be annotated", hint="Write `row = A[j, :]`.")
            return self.cx.slices.bind_subview(node, target, value_node)  # type: ignore[arg-type]
        if isinstance(value_node, ast.Call):
            nested = self._assigned_call(node, target, value_node, declared)
            if nested is not None:
                return nested
        if isinstance(target, ast.Attribute):  # a field of a classtype value
            return self.cx.classtypes.field_store(node, target, value_node, declared)
        value = self.cx.exprs.any_expr(value_node)
        if isinstance(target, ast.Subscript) and isinstance(value.type, StructType):
            self.cx.classtypes.struct_misuse(value_node, value)
        if isinstance(target, ast.Name):
            bound = self.bind(target, value, declared)
            self.cx.teams.note_assignment(target.id, value)
            return ir.Assign(node.lineno, bound, value)
        if declared is not None:
            self.src.error(node, "a view element cannot be annotated")
        access = self.cx.exprs.subscript(target)
        self.written(access)
        self._check_complex_store(node, access, value)
        return ir.Assign(node.lineno, access, value)

    def _assigned_call(
        self, node: ast.stmt, target: ast.expr, call: ast.Call, declared: DataType | None
    ) -> ir.Stmt | None:
        """``x = pk.parallel_reduce(<team range>, body)`` and ``s = pk.ScratchView1D(...)``
        (None for other calls)."""
        if self.cx.teams.scratch_ctor_rank(call):
            return self.cx.teams.scratch_alloc(node, target, call, None)
        for op in ("reduce", "scan"):
            if self.cx.exprs.is_pk_attr(call.func, f"parallel_{op}"):
                if not isinstance(target, ast.Name | ast.Subscript):
                    self.src.error(
                        target, f"assign the result of pk.parallel_{op} to a name or view element"
                    )
                return self.cx.teams.nested_parallel(call, op, (target, declared))
        return None

    def _check_complex_store(self, node: ast.AST, access: ir.ViewAccess, value: Expr) -> None:
        """A complex number stored into a view of real numbers: NumPy drops the
        imaginary part with a ComplexWarning; refused, with the conversions to write."""
        if value.type.is_complex and not access.type.is_complex:
            view = access.view.name
            self.src.error(
                node,
                f"a complex number ({value.type.name}) stored into {view!r}, a view of "
                f"{access.type.name}",
                hint="Store the part you mean, z.real or z.imag (or abs(z)), or make the view "
                "complex: pk.View(shape, pk.complex128) or a NumPy complex array.",
            )

    def written(self, access: ir.ViewAccess) -> None:
        """Record that the body stores into ``access``'s view (read-only arrays are refused)."""
        assert self.cx.function is not None
        if access.view.name in self.cx.params:  # scratch views are the kernel's own
            self.cx.function.written_views.add(access.view.name)

    def bind(self, target: ast.Name, value: Expr, declared: DataType | None) -> ir.Var:
        name = target.id
        if name in self.cx.views or name in self.cx.subviews:
            self.src.error(target, f"cannot rebind view {name!r} inside a kernel")
        if name == self.cx.team_name:
            self.src.error(target, f"cannot rebind the team member {name!r}")
        if self.cx.classtypes.binds_struct(name, value, declared):
            return self.cx.classtypes.bind_struct(target, value, declared)
        if name in self.cx.nonlocal_names:
            outer = self.cx.teams.outer_name(name)
            if outer is None:  # the workunit's parameter (the accumulator, a scalar)
                ptype = self.cx.params[name].type
                assert isinstance(ptype, DataType)
                outer = ptype
            self._check_narrowing(target, name, outer, value, self.cx.teams.is_outer_declared(name))
            return ir.Var(outer, name)
        # In a nested def, a name it assigns is its own local (Python's scoping).
        shadowing = bool(self.cx.outer_scopes) and name not in self.cx.locals
        if name in self.cx.params and not shadowing:
            ptype = self.cx.params[name].type
            assert isinstance(ptype, DataType)
            self._check_narrowing(target, name, ptype, value, declared=True)
            return ir.Var(ptype, name)
        if declared is not None:
            if name in self.cx.locals and self.cx.locals[name] != declared:
                self.src.error(
                    target,
                    f"{name!r} was declared {self.cx.locals[name].name} on line "
                    f"{self.cx.first_assign_line[name]}; a local keeps one type",
                )
            self._check_declared_store(target, name, declared, value)
            self.cx.locals.setdefault(name, declared)
            self.cx.declared.add(name)
            self.cx.first_assign_line.setdefault(name, target.lineno)
            return ir.Var(declared, name)
        if name not in self.cx.locals:
            if name in RESERVED_NAMES:
                self.src.error(target, f"{name!r} names a module or function; pick another name")
            inferred = value.type  # `flag = x > 0` is a bool, as in Python
            self.cx.locals[name] = inferred
            self.cx.first_assign_line[name] = target.lineno
            return ir.Var(inferred, name)
        current = self.cx.locals[name]
        self._check_narrowing(target, name, current, value, declared=name in self.cx.declared)
        return ir.Var(current, name)

    def _check_narrowing(
        self, node: ast.AST, name: str, target: DataType, value: Expr, declared: bool
    ) -> None:
        if declared:
            param = self.cx.params.get(name)
            accumulator = name in self.cx.accumulators or param is not None and param.role == "acc"
            if accumulator and value.type.is_complex and not target.is_complex:
                if param is not None and param.role == "acc" and self.cx.acc_unannotated:
                    raise AccumulatorTakesComplex(name)
                self.src.error(
                    node,
                    f"the accumulator {name!r} ({target.name}) is given a complex number",
                    hint="Declare it complex (`acc: pk.Acc[pk.complex128]`), or reduce "
                    "a real number (acc += z.real, acc += abs(z)).",
                )
            if not accumulator:  # an accumulator's stores convert (README)
                self._check_declared_store(node, name, target, value)
            return
        line = self.cx.first_assign_line.get(name)
        where = f"on line {line}" if line else "as a parameter"
        if target == t.bool_ and value.type != t.bool_:
            kind = "a float" if value.type.is_float else "an integer"
            self.src.error(
                node,
                f"{name!r} is a bool (from its first assignment {where}) but is assigned {kind}",
                hint=f"Declare its type where it starts, e.g. `{name}: int = 0`.",
            )
        if value.type.is_complex and not target.is_complex:
            self.src.error(
                node,
                f"{name!r} is a real number ({target.name}, from its first assignment {where}) "
                "but is assigned a complex number",
                hint=f"Declare it complex where it starts, e.g. `{name}: pk.complex128 = 0`, "
                "or assign the part you mean (z.real, z.imag, abs(z)).",
            )
        if not value.type.is_float or target.is_float or target.is_complex:
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
        param = self.cx.params.get(name)
        if param is not None and param.role == "index":
            kind = f"the index {name!r} (an {target.name})"
        elif param is not None:
            kind = f"the parameter {name!r} ({target.name})"
        else:
            kind = f"{name!r}, declared {target.name},"
        hint = (
            f"Convert it with {convert}(...): C++ would do so without a word, where Python "
            "keeps the value as it is (or use another variable for it)."
        )
        if convert == "complex":
            hint = COMPLEX_TO_REAL_HINT
        self.src.error(node, f"{kind} is assigned {what}", hint=hint)

    def _aug_assign(
        self, node: ast.AugAssign, target: ast.expr, op: ast.operator, value_node: ast.expr
    ) -> ir.Stmt:
        symbol = BINOPS.get(type(op))
        if symbol is None:
            self.src.error(
                node,
                not_in_kernels("operator", op),
                hint=OPERATOR_HINT,
            )
        value = self.cx.exprs.expr(value_node)
        if isinstance(target, ast.Name):
            current = self.cx.exprs.load_name(target)
            if not isinstance(current, ir.Var):
                self.src.error(target, f"cannot assign to {target.id!r}")
            combined = self.cx.exprs.binop(node, symbol, current, value)
            declared = target.id in self.cx.declared or target.id in self.cx.params
            self._check_narrowing(target, target.id, current.type, combined, declared)
            return ir.AugAssign(node.lineno, current, symbol, value)
        if isinstance(target, ast.Subscript):
            access = self.cx.exprs.subscript(target)
            self.written(access)
            combined = self.cx.exprs.binop(node, symbol, access, value)  # type check only
            self._check_complex_store(node, access, combined)
            return ir.AugAssign(node.lineno, access, symbol, value)
        if isinstance(target, ast.Attribute):
            return self.cx.classtypes.field_aug_assign(node, target, symbol, value)
        self.src.error(
            target, f"cannot assign to {type(target).__name__} in a kernel", hint=ASSIGN_HINT
        )

    def _for(self, node: ast.For) -> ir.Stmt:
        if node.orelse:
            self.src.error(node, "`for ... else` is not supported", hint=LOOP_ELSE_HINT)
        if not isinstance(node.target, ast.Name):
            self.src.error(node.target, "the loop variable must be a single name")
        it = node.iter
        if not (isinstance(it, ast.Call) and is_name(it.func, "range")):
            self.src.error(
                it,
                "kernels can only loop over range(...)",
                hint="Write `for i in range(n):` and index views with `i`.",
            )
        if it.keywords or not 1 <= len(it.args) <= 3:
            self.src.error(it, "range() takes 1 to 3 positional arguments")
        bounds = [self.cx.exprs.expr(a) for a in it.args]
        for bound, arg in zip(bounds, it.args, strict=True):
            if not bound.type.is_integer and bound.type != t.bool_:
                self.src.error(arg, f"range() needs integers, this is {bound.type.name}")
        start: Expr
        stop: Expr
        step: Expr
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
        var = self.bind(node.target, ir.Var(loop_type, "_"), None)
        self.cx.counter += 1
        self.cx.loop_depth += 1
        self.cx.conditions.extend(bounds)  # a trip count that differs by thread is a branch
        body = self.block(node.body)
        del self.cx.conditions[len(self.cx.conditions) - len(bounds) :]
        self.cx.loop_depth -= 1
        return ir.ForRange(node.lineno, var, start, stop, step, body, f"pk_it{self.cx.counter}")

    def _return(self, node: ast.Return, value_node: ast.expr | None) -> ir.Stmt:
        if self.cx.return_labels:
            if value_node is not None:
                self.src.error(node, "the body of a nested parallel_* or pk.single returns nothing")
            return ir.JumpTo(node.lineno, self.cx.return_labels[-1])
        if self.cx.constructing is not None:
            return self.cx.classtypes.constructor_return(node, value_node)
        if not self.cx.is_helper:
            if value_node is not None:
                self.src.error(
                    node,
                    "a workunit returns nothing",
                    hint="Write results into a view, or use parallel_reduce.",
                )
            return ir.Return(node.lineno, None)
        if value_node is None:
            if self.cx.return_type is not None:
                self.src.error(node, f"this function must return a {self.cx.return_type.name}")
            self.cx.bare_returns.append(node)
            return ir.Return(node.lineno, None)
        if self.cx.method_of is not None and self.cx.return_inferred:
            self.src.error(
                node,
                f"the method {self.cx.method_of.name}.{self.src.name} returns a value but has no "
                "return annotation",
                hint=f"Annotate the type it returns: `def {self.src.name}(self, ...) -> float:`.",
            )
        value = self.cx.exprs.any_expr(value_node)
        self.cx.classtypes.check_struct_return(node, value)
        if not self.cx.return_inferred:
            if self.cx.return_type is None:
                self.src.error(
                    node,
                    "a function annotated `-> None` cannot return a value",
                    hint="Annotate the type it returns, e.g. `-> float`, or leave it out.",
                )
            if isinstance(self.cx.return_type, DataType) and isinstance(value.type, DataType):
                problem = declared_conversion(self.cx.return_type, value.type)
                if problem is not None:  # as an annotated local is refused the same value
                    what, convert = problem
                    written = ast.unparse(cast(ast.expr, self.src.tree.returns))
                    hint = (
                        f"Convert it, `return {convert}(...)`: C++ would do so without a "
                        "word, where Python returns the value as it is (or annotate the type "
                        "it returns)."
                    )
                    self.src.error(
                        node,
                        f"{self.src.name}() is annotated `-> {written}` but returns {what}",
                        hint=COMPLEX_TO_REAL_HINT if convert == "complex" else hint,
                    )
        elif self.cx.return_type is None:
            self.cx.return_type = value.type
        elif value.type != self.cx.return_type:
            # Unannotated: the common type of every returned value (`return 1` on one path
            # and `return 0.5` on another makes a float function, as Python would return).
            self.cx.return_type = promote_types(self.cx.return_type, value.type)
        return ir.Return(node.lineno, value)

    # ------------------------------------------------------------ calls as statements

    def _call_statement(self, call: ast.Call) -> ir.Stmt:
        func = call.func
        if is_name(func, "print"):
            return self.cx.prints.print(call)
        if self.cx.exprs.is_pk_attr(func, "printf"):
            return self.cx.prints.printf(call)
        team = self.cx.teams.team_statement(call)
        if team is not None:
            return team
        return ir.ExprStmt(call.lineno, self.cx.exprs.expr(call, statement=True))
