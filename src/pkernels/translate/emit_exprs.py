"""C++ spellings of the kernel IR's names, literals and expressions.

:class:`CppExpressions` is the expression half of :class:`~.emit_cpp.CppEmitter` (a
mixin: the statements call ``self.expr``, ``self.cast``...; :class:`~.emit_cuda.CudaEmitter`
overrides some of them for device code). :func:`cpp_name` is how a Python name is
spelled in the generated code, which pkdb reads back.
"""

from __future__ import annotations

import math

import numpy as np

from ..api import types as t
from ..api.types import DataType
from . import ir
from .builtin_table import DOUBLE, INT64, KEEP, KERNEL_FUNCTIONS
from .cpp_prelude import atomic_operation_struct
from .cpp_prelude import atomic_update as prelude_atomic_update

KERNEL_NAMESPACE = "pk_kernel"

_CPP_KEYWORDS = set(
    """alignas alignof asm auto bool case catch char char8_t char16_t char32_t class concept
    const consteval constexpr constinit const_cast decltype default delete do double
    dynamic_cast enum explicit export extern false float friend goto inline int long mutable
    namespace new noexcept nullptr operator private protected public register
    reinterpret_cast requires short signed sizeof static static_assert static_cast struct
    switch template this thread_local throw true typedef typeid typename union unsigned using
    virtual void volatile wchar_t main std errno stdin stdout stderr NULL assert offsetof""".split()
)


def cpp_name(py_name: str) -> str:
    """The C++ spelling of a Python identifier: keywords, our ``pk_`` prefix and what may
    be a macro of the C/C++ headers (``M_PI``, ``NAN``, ``EOF``, ``__LINE__``, ``_OPENMP``:
    names in capitals or starting with ``_``, which the preprocessor would replace) get a
    trailing ``_`` (pkdb reads the name back without it)."""
    if (
        py_name in _CPP_KEYWORDS
        or py_name.startswith(("pk_", "_"))
        or (len(py_name) >= 3 and not any(c.islower() for c in py_name))
    ):
        return py_name + "_"
    return py_name


def c_string(text: str) -> str:
    """A C string literal for ``text``."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif code < 32 or code == 127:
            out.append(f"\\{code:03o}")
        elif code > 127:
            out.extend(f"\\{b:03o}" for b in ch.encode())
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


class CppExpressions:
    """The expression methods of :class:`~.emit_cpp.CppEmitter`, which sets up the state
    they read and write (its ``__init__``)."""

    #: Where the math functions (sqrt, pow, fabs, isnan...) of the target's runtime live.
    MATH = "std::"
    #: The backend's name in the builtin table's spellings (KernelFunction.spell).
    BACKEND = "cpp"
    #: Whether ``v[i - 1]`` is emitted as ``i`` shifted by -1 (``pk_rt::at_shifted``).
    SHIFTED_ACCESS = True

    converts_floats: bool  # emitted a pk_rt::float_to_int (see KernelEntry)
    temps: int  # numbering of generated temporaries
    lane_vars: frozenset[str]  # an interleaved body's names with one copy per lane
    lane: int | None  # the lane whose copies the expression being emitted uses

    def lvalue(self, target: ir.Var | ir.ViewAccess) -> str:
        return self.expr(target)

    def aug_type(self, target: ir.Expr, value: ir.Expr, op: str) -> DataType:
        from .typing_rules import promote

        if op == "/" and not (target.type.is_complex or value.type.is_complex):
            return t.float32 if target.type == t.float32 else t.float64
        return promote(target, value)

    def truth(self, e: ir.Expr) -> str:
        return self.expr(e) if e.type == t.bool_ else f"({self.expr(e)}) != 0"

    def cast(self, e: ir.Expr, to: DataType) -> str:
        if isinstance(e, ir.Const):
            if isinstance(e.value, float) and to.is_integer and not _fits(e.value, to):
                # inf, NaN or 1e30 into an integer: the conversion any float takes (a stop
                # in debug builds), not a folded int() (OverflowError, or wrapped bits)
                literal = self.literal(e.value, t.float64)
                self.converts_floats = True
                return f"pk_rt::float_to_int<{to.ctype}>({literal}, {_WHERE})"
            return self.literal(e.value, to)
        text = self.expr(e)
        if e.type == to:
            return text
        if e.type.is_float and to.is_integer:  # a float stored into an int: checked in debug
            self.converts_floats = True
            return f"pk_rt::float_to_int<{to.ctype}>({text}, {_WHERE})"
        return f"({to.ctype})({text})"

    def literal(self, value: int | float | bool, to: DataType) -> str:
        if to == t.bool_:
            return "true" if value else "false"
        if to.is_complex:  # a real literal as NumPy converts it: imaginary part 0
            part = t.real_part_type(to)
            return f"{to.ctype}({self.literal(value, part)}, {self.literal(0.0, part)})"
        if to.is_float:
            v = float(value)
            if v != v:
                return '__builtin_nanf("")' if to == t.float32 else '__builtin_nan("")'
            if v in (float("inf"), float("-inf")):
                inf = "__builtin_inff()" if to == t.float32 else "__builtin_inf()"
                return inf if v > 0 else f"(-{inf})"
            text = repr(v)
            return f"{text}f" if to == t.float32 else text
        v = int(value)
        # INT64_C/UINT64_C give exactly int64_t/uint64_t (`long` on LP64, not the `long
        # long` of an LL suffix), so literals deduce the same template type as variables.
        if to == t.uint64:
            return f"UINT64_C({v})"
        if to.bits != 64:
            return f"({to.ctype}){v}"
        return "INT64_MIN" if v == -(2**63) else f"INT64_C({v})"

    def expr(self, e: ir.Expr) -> str:
        match e:
            case ir.Const(value=value, type=type_):
                return self.literal(value, type_)
            case ir.Var(name=name):
                if name in self.lane_vars:
                    assert self.lane is not None, f"per-lane {name!r} outside a lane"
                    return f"pk_l{self.lane}_{cpp_name(name)}"
                return cpp_name(name)
            case ir.ViewAccess(view=view, indices=indices):
                return self.view_access(view, indices)
            case ir.ViewArg(ref=ref):
                return cpp_name(ref.name)
            case ir.FieldAccess(base=base, field=name):
                return f"{self.expr(base)}.{cpp_name(name)}"
            case ir.ViewExtent(view=view, axis=axis):
                return f"{cpp_name(view.name)}.extent[{axis}]"
            case ir.SearchBound(view=view, count=count, value=value, upper=upper):
                where = f"{cpp_name(view.name)}, {c_string(view.name)}, __FILE__, __LINE__"
                bound = f"pk_rt::search_bound<{'true' if upper else 'false'}>"
                return f"{bound}({where}, {self.cast(count, t.int64)}, {self.expr(value)})"
            case ir.SubviewIndex(index=index, length=length, name=name, axis=axis):
                where = f"{c_string(name)}, {axis}, __FILE__, __LINE__"
                return f"pk_rt::subview_index({self.expr(index)}, {self.expr(length)}, {where})"
            case ir.TeamQuery(team=team, what=what):
                return f"{cpp_name(team)}.{what}"
            case ir.BinOp(op=op, left=left, right=right, type=rtype):
                return self.binop(op, left, right, rtype)
            case ir.UnaryOp(op="!", operand=operand):
                return f"(!({self.truth(operand)}))"
            case ir.UnaryOp(op=op, operand=operand, type=rtype):
                return _wrap_small(f"({op}{self.cast(operand, rtype)})", rtype)
            case ir.Compare(op=op, left=left, right=right):
                common = _compare_type(left, right)
                if common is None:  # a signed and an unsigned 64-bit value
                    a, b = (self.cast(x, _exact_int_type(x)) for x in (left, right))
                    return f"(pk_rt::int_cmp({a}, {b}) {op} 0)"
                return f"({self.cast(left, common)} {op} {self.cast(right, common)})"
            case ir.BoolOp(op=op, values=values, type=t.bool_):
                return "(" + f" {op} ".join(self.truth(v) for v in values) + ")"
            case ir.BoolOp(op=op, values=values, type=rtype):
                # A value (not just a truth): each operand evaluated once, left to right,
                # stopping at the first falsy one (`and`) or truthy one (`or`).
                self.temps += 1
                tmp = f"pk_b{self.temps}"
                keep_going = tmp if op == "&&" else f"!{tmp}"
                steps = [f"{rtype.ctype} {tmp} = {self.cast(values[0], rtype)};"]
                steps += [f"if ({keep_going}) {tmp} = {self.cast(v, rtype)};" for v in values[1:]]
                return "({ " + " ".join(steps) + f" {tmp}; }})"
            case ir.Select(cond=cond, then=then, other=other, type=rtype):
                return (
                    f"(({self.truth(cond)}) ? {self.cast(then, rtype)} : {self.cast(other, rtype)})"
                )
            case ir.Cast(operand=operand, type=rtype):
                if rtype == t.bool_:
                    return f"(({self.expr(operand)}) != 0)"
                if operand.type.is_float and rtype.is_integer:  # checked in debug builds
                    self.converts_floats = True
                    return f"pk_rt::float_to_int<{rtype.ctype}>({self.expr(operand)}, {_WHERE})"
                return f"(({rtype.ctype})({self.expr(operand)}))"
            case ir.Call():
                return self.call(e)
            case ir.AtomicOp():
                return self.atomic(e)
            case ir.RandomDraw(stream=stream, site=site, count=count):
                # pool_<type> counts the draw in the site's counter (a reference)
                args = f"{self.expr(stream)}, {site}u, {self.expr(count)}"
                return f"pk_rt::pool_{e.type.name}({args})"
        raise AssertionError(f"unhandled IR expression {e!r}")

    def view_access(self, view: ir.ViewRef, indices: list[ir.Expr]) -> str:
        where = f"{cpp_name(view.name)}, {c_string(view.name)}, __FILE__, __LINE__"
        split = [_constant_shift(i) for i in indices] if self.SHIFTED_ACCESS else []
        if not any(shift for _, shift in split):
            idx = ", ".join(self.cast(i, t.int64) for i in indices)
            return f"pk_rt::at({where}, {idx})"
        shifts = ", ".join(f"INT64_C({shift})" for _, shift in split)
        idx = ", ".join(self.cast(base, t.int64) for base, _ in split)
        return f"pk_rt::at_shifted({where}, {{{shifts}}}, {idx})"

    def binop(self, op: str, left: ir.Expr, right: ir.Expr, rtype: DataType) -> str:
        if op == "/":
            return f"({self.cast(left, rtype)} / {self.cast(right, rtype)})"
        if op == "//":
            if rtype.is_float:
                return f"pk_rt::floordiv_py({self.cast(left, rtype)}, {self.cast(right, rtype)})"
            return f"pk_rt::floordiv({self.cast(left, rtype)}, {self.cast(right, rtype)}, {_WHERE})"
        if op == "%":
            if rtype.is_float:
                return f"pk_rt::fmod_py({self.cast(left, rtype)}, {self.cast(right, rtype)})"
            return f"pk_rt::mod({self.cast(left, rtype)}, {self.cast(right, rtype)}, {_WHERE})"
        if op == "**":
            if rtype.is_integer:
                exponent = self.cast(right, rtype)
                if not isinstance(right, ir.Const):  # a literal one is not negative here
                    exponent = f"pk_rt::check_exponent({exponent}, {_WHERE})"
                return f"pk_rt::ipow({self.cast(left, rtype)}, {exponent})"
            operands = [self.cast(left, rtype), self.cast(right, rtype)]
            return KERNEL_FUNCTIONS["pow"].spell(self.BACKEND, self.MATH, operands)
        if rtype == t.bool_:
            return f"({self.expr(left)} {op} {self.expr(right)})"
        if op in ("<<", ">>"):
            shift = "lshift" if op == "<<" else "rshift"
            return f"pk_rt::{shift}({self.cast(left, rtype)}, {self.cast(right, rtype)})"
        return _wrap_small(f"({self.cast(left, rtype)} {op} {self.cast(right, rtype)})", rtype)

    def call(self, e: ir.Call) -> str:
        if e.user:
            args = ", ".join(self.user_arg(a) for a in e.args)
            return f"{KERNEL_NAMESPACE}::{cpp_name(e.func)}({args})"
        # A kernel function: its arguments converted and spelled as the builtin table says.
        function = KERNEL_FUNCTIONS[e.func]
        to = {DOUBLE: t.float64, INT64: t.int64}
        args = [
            self.expr(a) if function.conversion(k) == KEEP
            else self.cast(a, to.get(function.conversion(k), e.type))
            for k, a in enumerate(e.args)
        ]  # fmt: skip
        return function.spell(self.BACKEND, self.MATH, args, integer=not e.type.is_float)

    def user_arg(self, a: ir.Expr) -> str:
        """An argument of a helper: a classtype value not held by a name is a temporary,
        passed to the helper's reference parameter through ``pk_lvalue``."""
        if isinstance(a.type, ir.StructType) and not _is_lvalue(a):
            return f"{KERNEL_NAMESPACE}::pk_lvalue({self.expr(a)})"
        return self.expr(a)

    def atomic(self, e: ir.AtomicOp) -> str:
        ptr = f"&{self.expr(e.target)}"
        operands = [self.cast(o, e.type) for o in e.operands]
        op = e.op
        if op == "exchange":
            return f"pk_rt::atomic_exchange({ptr}, {operands[0]})"
        if op == "cas":
            return f"pk_rt::atomic_cas({ptr}, {operands[0]}, {operands[1]})"
        if op in ("inc", "dec"):
            op, operands = ("add" if op == "inc" else "sub"), [self.literal(1, e.type)]
        if op == "load":
            return f"pk_rt::atomic_load({ptr})"
        want_new = op.endswith("_new")
        base = op.removesuffix("_new")
        # A call, not a lambda: a lambda at the Python line would be a second place for
        # gdb to stop at and a frame of its own (atomic_apply in include/pkernels/cpu.hpp).
        struct = atomic_operation_struct(base, e.type.is_integer)
        new = "true" if want_new else "false"
        return f"pk_rt::atomic_apply<pk_rt::{struct}, {new}>({ptr}, {operands[0]}, {_WHERE})"


def atomic_update(base: str, dtype: DataType, old: str, value: str) -> str:
    """The new value an atomic update ``base`` (add, div, lshift, ...) computes from the
    element ``old`` and the operand ``value`` (C++ names), for the CPU's runtime and the
    GPU's alike: integer ``div`` truncates as Kokkos' does without trapping on 0, shifts
    and ``mod`` as the operators compute them."""
    return prelude_atomic_update(base, dtype.is_integer, old, value, _WHERE)


def _fits(value: float, to: DataType) -> bool:
    """Whether C's conversion of the float ``value`` to the integer type ``to`` is defined
    (finite, and in range once truncated)."""
    if not math.isfinite(value):
        return False
    info = np.iinfo(to.np_dtype)
    return info.min <= math.trunc(value) <= info.max


_WHERE = "__FILE__, __LINE__"  # the Python file and line, thanks to #line


def _is_lvalue(e: ir.Expr) -> bool:
    if isinstance(e, ir.Var):
        return True
    return isinstance(e, ir.FieldAccess) and _is_lvalue(e.base)


def _wrap_small(text: str, rtype: DataType) -> str:
    """C++ computes 8- and 16-bit integer arithmetic in `int`; the kernel's type (NumPy's
    rule: uint8 + uint8 is uint8) needs the result converted back, so it wraps."""
    if rtype.is_integer and rtype.bits < 32:
        return f"(({rtype.ctype}){text})"
    return text


def _compare_type(left: ir.Expr, right: ir.Expr) -> DataType | None:
    """The type two operands are compared in: one that holds every value of both, as
    Python compares numbers by value (``u8[i] < 256`` is true, ``u32[i] == -1`` false);
    None for a signed and an unsigned 64-bit operand, which no C++ type holds both of."""
    from .typing_rules import INT_RANGES, int_value_range, is_weak, promote

    if left.type == right.type and not (is_weak(left) or is_weak(right)):
        return left.type
    ranges = [int_value_range(x) for x in (left, right)]
    if None in ranges:  # a float: compared as arithmetic promotes it
        return promote(left, right)
    low = min(r[0] for r in ranges)  # type: ignore[index]
    high = max(r[1] for r in ranges)  # type: ignore[index]
    common = promote(left, right)
    fits = INT_RANGES.get(common)
    if fits is not None and fits[0] <= low and high <= fits[1]:
        return common
    if high < 2**63:
        return t.int64
    return t.uint64 if low >= 0 else None


def _exact_int_type(e: ir.Expr) -> DataType:
    """int64 or uint64, whichever holds every value of integer operand ``e``."""
    from .typing_rules import int_value_range

    value_range = int_value_range(e)
    assert value_range is not None
    return t.uint64 if value_range[1] >= 2**63 else t.int64


def _constant_shift(index: ir.Expr) -> tuple[ir.Expr, int]:
    """``index`` as ``base + shift`` with a constant ``shift`` (0 when it has none): ``i - 1``
    is ``(i, -1)``, ``1 + i + 2`` is ``(i, 3)``. Only int64 sums, so that taking the
    constant out changes no intermediate type, and shifts far from overflowing."""
    base, shift = index, 0
    while isinstance(base, ir.BinOp) and base.op in ("+", "-") and base.type == t.int64:
        left, right = base.left, base.right
        if _int_const(right):
            step = right.value if base.op == "+" else -right.value
            base = left
        elif _int_const(left) and base.op == "+":
            step, base = left.value, right
        else:
            break
        shift += step
    if base.type != t.int64 or abs(shift) >= 2**62:
        return index, 0
    return base, shift


def _int_const(e: ir.Expr) -> bool:
    return isinstance(e, ir.Const) and type(e.value) is int
