"""Lowering of calls in kernels: Python builtins, math.* and pk.* functions, atomics,
helpers."""

from __future__ import annotations

import ast
import builtins
import math
from collections.abc import Callable
from typing import Any

from ..api import kernel_builtins
from ..api import types as t
from ..api.classtypes import is_classtype
from ..api.decorators import function as mark_helper
from ..api.decorators import marker_of
from ..api.types import DataType
from . import ir
from .builtin_table import (
    ANGLES,
    ATOMIC_ARITY,
    ATOMIC_FUNCTIONS,
    COMPLEX_MATH,
    ELEMENT_MATH,
    INTEGER_ATOMICS,
    MATH_FUNCTIONS,
    PY_INT_ROUNDING,
    RANDOM_FUNCTIONS,
    TUPLE_MATH,
    ir_name,
)
from .ir import Expr
from .lower_classtypes import call_arg_types
from .lower_context import Lowerer
from .lower_support import (
    CALL_HINT,
    NESTED_CALL_HINT,
    PY_BUILTINS,
    is_module,
    is_pkernels,
    is_plain_helper,
    pk_builtin_name,
    type_name,
)
from .pyexec import bare_math_module, reads_bare_math
from .typing_rules import (
    float_of,
    promote,
)


class CallLowerer(Lowerer):
    """Calls: builtins, math and pk functions, atomics, helpers."""

    def call(self, node: ast.Call, statement: bool) -> Expr:
        func = node.func
        if node.keywords:
            self.src.error(node.keywords[0], "keyword arguments are not supported in kernel calls")
        team_query = self.cx.teams.team_method(node)
        if team_query is not None:
            return team_query
        for op in ("for", "reduce", "scan", "single"):
            name = op if op == "single" else f"parallel_{op}"
            if self.cx.exprs.is_pk_attr(func, name):
                self.src.error(
                    node,
                    f"pk.{name} inside a kernel is a statement"
                    + ("" if op in ("for", "single") else " or the value of an assignment"),
                    hint=f"Write `total = pk.{name}(pk.TeamThreadRange(team_member, n), body)`."
                    if op in ("reduce", "scan")
                    else NESTED_CALL_HINT,
                )
        if isinstance(func, ast.Attribute):  # p.method(...) on a classtype value
            receiver = self.cx.classtypes.struct_base(func.value)
            if receiver is not None:
                return self.cx.classtypes.method_call(node, receiver, func.attr, statement)
        # v.shape[k] is a Subscript of an Attribute; v.extent(k) is a call.
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            owner = func.value.id
            if self.cx.slices.is_view_name(owner) and func.attr == "extent":
                return self.extent(node, owner, node.args)
            module = self.src.lookup(owner)
            if is_module(module, "math") or is_pkernels(module):
                return self._module_call(node, func.attr, pk=is_pkernels(module), stmt=statement)
        if isinstance(func, ast.Name):
            name = func.id
            if name in self.cx.params or name in self.cx.locals or name in self.cx.views:
                self.src.error(func, f"{name!r} is not a function")
            target = self.src.lookup(name)
            if reads_bare_math(name, target):  # PyKokkos' bare sqrt(x)
                pk = bare_math_module(name) == "pkernels"
                return self._module_call(node, name, pk=pk, stmt=statement)
            if is_plain_helper(target, self.src.globals):
                # As PyKokkos does: a plain function of the kernel's module that a kernel
                # calls is compiled as a @pk.function (Debug runs it as it is).
                mark_helper(target)
            if marker_of(target) is not None:
                return self._helper_call(node, target, statement)
            if is_classtype(target):
                return self.cx.classtypes.construct(node, target, statement)
            # Python's own (also when `from pkernels import *` brought pk.abs/min/max).
            if name in PY_BUILTINS and (target is None or target is getattr(builtins, name)):
                return self._builtin(node, name)
            if callable(target) and getattr(target, "__module__", "") == "math":
                return self._module_call(node, target.__name__, pk=False, stmt=statement)
            if getattr(target, "__module__", "").startswith("pkernels") and callable(target):
                pk_name = pk_builtin_name(target)
                return self._module_call(node, pk_name, pk=True, stmt=statement)
            if name == "complex" and target in (None, complex):
                self.src.error(
                    func,
                    "Python's complex() in a kernel",
                    hint="Write pk.complex128(re, im) (or pk.complex64): a NumPy complex, as "
                    "the kernel's other complex values are.",
                )
            if target is None:
                self.src.error(func, f"function {name!r} is not defined", hint=CALL_HINT)
            if isinstance(target, type):
                self.src.error(
                    func,
                    f"the class {name!r} is not a classtype",
                    hint=f"Decorate it with @pk.classtype to build {name} values in kernels.",
                )
            self.src.error(func, f"{name!r} is not a kernel function", hint=CALL_HINT)
        self.src.error(node, f"unsupported call {ast.unparse(func)!r} in a kernel", hint=CALL_HINT)

    def extent(self, node: ast.expr, view_name: str, args: list[ast.expr]) -> Expr:
        if len(args) != 1 or not (
            isinstance(args[0], ast.Constant) and isinstance(args[0].value, int)
        ):
            self.src.error(node, "extent() takes one literal axis number")
        axis = args[0].value
        if view_name in self.cx.subviews:
            return self.cx.slices.subview_extent(view_name, axis, node)
        view = self.cx.views[view_name]
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
                isinstance(node.args[0], ast.Name) and self.cx.slices.is_view_name(node.args[0].id)
            ):
                self.src.error(node, "len() in kernels takes one view")
            view_name = node.args[0].id
            if view_name in self.cx.subviews:
                return self.cx.slices.subview_extent(view_name, 0, node)
            return ir.ViewExtent(t.int64, ir.ViewRef(view_name, self.cx.views[view_name]), 0)
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
        args = [self.cx.exprs.expr(a) for a in node.args]
        if any(a.type.is_complex for a in args) and name not in ("abs", "bool", "pow"):
            fix = {
                "float": "Take its real part, z.real, or its magnitude, abs(z).",
                "int": "Convert its real part: int(z.real).",
            }
            self.src.error(
                node,
                f"{name}() of a complex number is not supported in kernels",
                hint=fix.get(name, "Compare magnitudes, abs(z), or parts, z.real."),
            )
        if name == "round":  # to the nearest int, halves to even (the FPU's default)
            if not args[0].type.is_float:
                return ir.Cast(t.int64, args[0])
            return ir.Cast(t.int64, ir.Call(args[0].type, "nearbyint", args))
        if name == "pow":
            if len(args) != 2:
                self.src.error(node, "pow() in kernels takes two numbers: pow(x, y) is x ** y")
            return self.cx.exprs.binop(node, "**", args[0], args[1])
        if name in ("int", "float", "bool"):
            if len(args) != 1:
                self.src.error(node, f"{name}() takes exactly one argument in kernels")
            target = {"int": t.int64, "float": t.float64, "bool": t.bool_}[name]  # Python's
            return ir.Cast(target, args[0])
        if name == "abs":
            if len(args) != 1:
                self.src.error(node, "abs() takes exactly one argument")
            if args[0].type.is_complex:  # NumPy's: hypot of the parts
                return ir.Call(t.real_part_type(args[0].type), "cabs", args)
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
        if pk and name in ELEMENT_MATH:
            return self._element_math(node, name)
        if pk and name in ("complex64", "complex128"):
            return self._complex(node, getattr(t, name))
        if pk and name == "rand" and len(node.args) == 1:
            return self.cx.random.draw(node)  # from the workunit's random pool
        if not pk and name in TUPLE_MATH:
            self.src.error(
                node,
                f"math.{name}() returns two values: unpack them on their own line",
                hint=f"Write `{'frac, whole' if name == 'modf' else 'mantissa, exponent'} = "
                f"math.{name}(x)`.",
            )
        if not pk and (name in ANGLES or name == "log" and len(node.args) == 2):
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
        args = [self.cx.exprs.expr(a) for a in node.args]
        if any(a.type.is_complex for a in args):
            if name in COMPLEX_MATH:
                if not pk:  # Python's math raises TypeError too
                    self.src.error(
                        node,
                        f"math.{name} takes a real number, not a complex one (as in Python)",
                        hint=f"pk.{name}(z) takes a complex number (NumPy's np.{name}).",
                    )
                if len(args) != 1:
                    self.src.error(node, f"pk.{name}() takes one number")
                # NumPy's function: the CPU builds call the C library NumPy calls (the
                # same bits); the GPU builds include/pkernels/complex_math.hpp.
                return ir.Call(args[0].type, f"complex_{name}", args)
            prefix = "pk" if pk else "math"
            self.src.error(
                node,
                f"{prefix}.{name} of a complex number is not supported in kernels",
                hint="Kernels compute with complex numbers' + - * /, abs(z), pk.conj(z), "
                "z.real, z.imag and pk." + ", pk.".join(sorted(COMPLEX_MATH)) + " (NumPy's "
                "results, bit for bit); write the formula with the parts, or apply "
                f"np.{name if name != 'fabs' else 'abs'} to the array on the host.",
            )
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
        cname = ir_name(name)
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
        x = self.cx.exprs.expr(node.args[0])
        xt = x.type
        if not isinstance(xt, DataType) or xt == t.bool_:
            self.src.error(node.args[0], f"pk.{name}() takes a number, this is {type_name(xt)}")
        if xt.is_complex:
            if name == "conj":
                return ir.Call(xt, "cconj", [x])
            if name == "square":
                return ir.BinOp(xt, "*", x, x)  # NumPy's square of a complex: z * z
            self.src.error(
                node,
                f"pk.{name} of a complex number is not supported in kernels",
                hint="Kernels compute with complex numbers' + - * /, abs(z), pk.conj(z), "
                "z.real and z.imag; write it with those (pk.reciprocal(z): 1 / z, which "
                "NumPy rounds differently from its reciprocal).",
            )
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
        one, zero = (
            (ir.Const(xt, 1.0), ir.Const(xt, 0.0))
            if xt.is_float
            else (
                ir.Const(xt, 1),
                ir.Const(xt, 0),
            )
        )
        minus_one = ir.Const(xt, -1.0 if xt.is_float else -1)
        if xt.kind == "uint":
            minus_one = zero  # never taken: an unsigned number is never below 0
        rest = ir.Select(xt, ir.Compare(t.bool_, "==", x, zero), zero, x)
        rest = ir.Select(xt, ir.Compare(t.bool_, "<", x, zero), minus_one, rest)
        return ir.Select(xt, ir.Compare(t.bool_, ">", x, zero), one, rest)

    def _complex(self, node: ast.Call, dtype: DataType) -> Expr:
        """``pk.complex128(re, im)`` / ``pk.complex64(re, im)`` of real numbers (NumPy's
        complex scalar: each part converted to a double, then to the parts' type), or of
        one number (a real one: imaginary part 0; a complex one converted)."""
        usage = f"pk.{dtype.name}(re, im)"
        if not 1 <= len(node.args) <= 2:
            self.src.error(node, f"{usage} takes the real and the imaginary part")
        args = [self.cx.exprs.expr(a) for a in node.args]
        for arg, arg_node in zip(args, node.args, strict=True):
            if not isinstance(arg.type, DataType) or len(args) == 2 and arg.type.is_complex:
                self.src.error(
                    arg_node, f"{usage} takes real numbers, this is {type_name(arg.type)}"
                )
        if len(args) == 1:
            return args[0] if args[0].type == dtype else ir.Cast(dtype, args[0])
        return ir.Call(dtype, dtype.name, args)

    def _math_formula(self, node: ast.Call, name: str) -> Expr:
        """``math.log(x, base)``, ``math.degrees(x)``, ``math.radians(x)``: the formulas
        CPython computes them with (``log(x) / log(base)``, ``x * (180 / pi)`` ...)."""
        args = [self.cx.exprs.expr(a) for a in node.args]
        if name == "log":
            x, base = args
            rtype = t.float64  # math's, so double as in Python
            return ir.BinOp(rtype, "/", ir.Call(rtype, "log", [x]), ir.Call(rtype, "log", [base]))
        if len(args) != 1:
            self.src.error(node, f"math.{name}() takes exactly one argument")
        factor = ir.Const(t.float64, ANGLES[name])
        return self.cx.exprs.binop(node, "*", args[0], factor)

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
        if not (isinstance(view_node, ast.Name) and view_node.id in self.cx.views):
            hint = "Pass the view itself (a subview cannot be searched yet)."
            self.src.error(view_node, f"the first argument of pk.{name} must be a view", hint=hint)
        view = self.cx.views[view_node.id]
        if view.rank != 1:
            self.src.error(
                view_node, f"pk.{name} searches a rank-1 view; this one has rank {view.rank}"
            )
        count, value = self.cx.exprs.expr(count_node), self.cx.exprs.expr(value_node)
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
        wanted = ATOMIC_ARITY.get(op, 3)
        if len(node.args) != wanted:
            self.src.error(node, f"pk.{name} takes {wanted} arguments (view, [indices], ...)")
        view_node, index_node, *rest = node.args
        if not (isinstance(view_node, ast.Name) and self.cx.slices.is_view_name(view_node.id)):
            self.src.error(view_node, f"the first argument of pk.{name} must be a view")
        if not isinstance(index_node, ast.List | ast.Tuple):
            self.src.error(index_node, "the indices must be written as a list, e.g. [i] or [i, j]")
        subscript = ast.Subscript(value=view_node, slice=ast.Tuple(elts=index_node.elts))
        ast.copy_location(subscript, node)
        access = self.cx.exprs.subscript(subscript)
        operands = [self.cx.exprs.expr(r) for r in rest]
        if op.removesuffix("_new") in INTEGER_ATOMICS and access.type.is_float:
            self.src.error(node, f"pk.{name} needs an integer view")
        if access.type.is_complex:
            self.src.error(
                node,
                f"pk.{name} on a complex view is not supported",
                hint="Accumulate in a per-index element (out[i] += z) or in a reduction of "
                "the real and imaginary parts as two views of float64.",
            )
        self.cx.stmts.written(access)
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
        args = self.cx.classtypes.call_args(node.args)
        function = self.cx.helpers.get(target, call_arg_types(args), call=(self.src, node))
        return self.cx.classtypes.user_call(node, function, args, statement)
