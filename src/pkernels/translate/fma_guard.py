"""Keeping g++ from fusing multiplies and adds that -ffp-contract=off should keep apart.

g++ before 15 vectorises a pair of lanes ``x * y - a`` and ``x * y + b`` (a complex
product ``re = ar*br - ai*bi; im = ar*bi + ai*br``, a kernel writing ``out[i][0]`` and
``out[i][1]`` so) into one ``vfmaddsub`` / ``vfmsubadd`` instruction: its SLP "addsub"
pattern does not check -ffp-contract=off (later versions do). The fused instruction
rounds once where Python rounds twice, so the results differ from Python's in the last
bit. Measured: a complex multiply-accumulate kernel differed in 14 % of its elements.

The pattern needs vector instructions that fuse (FMA, FMA4 or AVX-512), a float
subtraction and a float multiplication in the same code. A module that has both is
compiled without those instructions (``#pragma GCC target``): vectorised with AVX2, never
fused. Modules that only add and multiply (most stencils, dot products, matrix-vector
products) keep every instruction -march=native gives, 512-bit vectors included.
"""

from __future__ import annotations

from . import ir

#: The lines a module that may meet the pattern starts with.
GUARD = """#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 15
// g++'s SLP addsub pattern fuses x*y - a, x*y + b lanes into vfmaddsub despite
// -ffp-contract=off (pkernels.translate.fma_guard): no fusing instructions in this module.
#pragma GCC target("no-fma,no-fma4,no-avx512f")
#endif"""

# Float operations that are (or whose inlined runtime code may hold) a subtraction, and a
# multiplication. Calls of the runtime's math (fmod_py, floordiv_py...) may hold both.
_SUBTRACTING = frozenset({"-", "//", "%"})
_MULTIPLYING = frozenset({"*", "/", "//", "%", "**"})


def may_fuse(functions: list[ir.Function]) -> bool:
    """Whether the code of ``functions`` (a kernel and its helpers) has both a float
    subtraction and a float multiplication, as the fused pattern needs."""
    subtracts = multiplies = False
    for fn in functions:
        for stmt in ir.statements(fn.body):
            kinds = _statement_kinds(stmt)
            subtracts |= "-" in kinds
            multiplies |= "*" in kinds
            for top in ir.read_expressions(stmt):
                for e in ir.subexpressions(top):
                    kinds = _expression_kinds(e)
                    subtracts |= "-" in kinds
                    multiplies |= "*" in kinds
            if subtracts and multiplies:
                return True
    return False


def _kinds(op: str, complex_: bool = False) -> set[str]:
    if complex_ and op in ("*", "/"):  # a complex product or quotient: both, inlined
        return {"-", "*"}
    return {kind for kind, ops in (("-", _SUBTRACTING), ("*", _MULTIPLYING)) if op in ops}


def _is_float(e: ir.Expr) -> bool:
    """A float or complex value (a complex number's parts are floats)."""
    return getattr(e.type, "is_float", False) or getattr(e.type, "is_complex", False)


def _is_complex(e: ir.Expr) -> bool:
    return getattr(e.type, "is_complex", False)


def _expression_kinds(e: ir.Expr) -> set[str]:
    """ "-" and/or "*": what a float expression ``e`` does itself."""
    if isinstance(e, ir.BinOp) and _is_float(e):
        return _kinds(e.op, _is_complex(e))
    if isinstance(e, ir.UnaryOp) and _is_float(e) and e.op == "-":
        return {"-"}
    if isinstance(e, ir.Call) and not e.user and (_is_float(e) or any(map(_is_float, e.args))):
        return {"-", "*"}  # the runtime's (or C's) code, inlined: anything
    if isinstance(e, ir.AtomicOp) and _is_float(e.target) and e.op not in ("add", "exchange"):
        return {"-", "*"}
    return set()


def _statement_kinds(s: ir.Stmt) -> set[str]:
    """ "-" and/or "*": what a statement does itself to a float (``x -= y``, a print)."""
    if isinstance(s, ir.AugAssign) and (_is_float(s.target) or _is_complex(s.value)):
        return _kinds(s.op, _is_complex(s.target) or _is_complex(s.value))
    if isinstance(s, ir.Print):
        return {"-", "*"}  # Python's float formatting, inlined
    return set()
