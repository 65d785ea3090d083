"""``pk.printf`` formats: each conversion paired with the C type its argument needs."""

from __future__ import annotations

import re
from dataclasses import dataclass

_PRINTF_SPEC = re.compile(r"%([-+ #0]*\d*(?:\.\d+)?)(hh|h|ll|l|L|q|j|z|t)?([diouxXeEfFgGaAcs%])")


def printf_format(fmt: str, nargs: int) -> tuple[str, list[str]]:
    """Rewrite a printf format so each conversion gets an argument of the right C type.

    Kernel integers are 64-bit; ``%d`` in a format would read the wrong width, so every
    integer conversion becomes ``%lld`` with the argument cast to ``long long``.
    """
    casts: list[str] = []

    def fix(m: re.Match[str]) -> str:
        flags, _length, conv = m.groups()
        if conv == "%":
            return "%%"
        if conv in "di":
            casts.append("long long")
            return f"%{flags}ll{conv}"
        if conv in "ouxX":
            casts.append("unsigned long long")
            return f"%{flags}ll{conv}"
        if conv == "c":
            casts.append("int")
            return f"%{flags}c"
        if conv == "s":
            raise ValueError("%s: kernels have no strings to print")
        casts.append("double")
        return f"%{flags}{conv}"

    rewritten = _PRINTF_SPEC.sub(fix, fmt)
    if len(casts) != nargs:
        raise ValueError(f"the format has {len(casts)} conversions but {nargs} values are given")
    return rewritten, casts


# ---------------------------------------------------------------- f-string format specs

# Python's format-spec mini-language:
# [[fill]align][sign][z][#][0][width][grouping][.precision][type]
_PY_SPEC = re.compile(
    r"(?:(?P<fill>.)?(?P<align>[<>=^]))?(?P<sign>[-+ ])?(?P<z>z)?(?P<alt>#)?(?P<zero>0)?"
    r"(?P<width>\d+)?(?P<group>[,_])?(?:\.(?P<precision>\d+))?(?P<type>[a-zA-Z%])?",
    re.DOTALL,
)

SPEC_HINT = (
    "Kernels format numbers with [<|>|^][+| ][#][0][width][.precision][type], the type one of "
    "d x X o for integers and f F e E g G for numbers, e.g. {x:10.3f} or {n:>6d}; or "
    "use pk.printf."
)


@dataclass(frozen=True)
class PrintSpec:
    """How ``print(f"{value:spec}")`` writes one value, as kernels can do it.

    ``conversion`` is a printf conversion (``%+08.3f``) for the float types f/e/g, which
    printf writes as Python does; otherwise the value is written as ``print`` writes it
    (``conversion`` empty) or as an integer in base ``base`` (``d``, ``x``, ``X``, ``o``),
    then padded to ``width`` by :meth:`pk_rt::Printer::finish`.
    """

    conversion: str = ""
    base: str = ""
    sign: str = "-"
    width: int = 0
    align: str = ">"  # < > ^, as Python's
    zero: bool = False


def python_spec(spec: str, kind: str) -> PrintSpec:
    """The :class:`PrintSpec` for the format spec ``spec`` of a value of ``kind`` (``int``,
    ``uint``, ``float``, ``bool``, or ``str``: a value converted with !s or !r, as print
    writes it); ValueError for what kernels cannot format as Python would."""
    m = _PY_SPEC.fullmatch(spec)
    if m is None:
        raise ValueError(f"invalid format spec {spec!r}")
    fill, align, sign = m["fill"], m["align"], m["sign"] or "-"
    width = int(m["width"] or 0)
    precision, kind_code = m["precision"], m["type"] or ""
    if fill not in (None, " ") or align == "=":
        raise ValueError(f"{spec!r}: kernels pad with spaces, aligned with <, > or ^")
    if m["group"] or m["z"]:
        raise ValueError(f"{spec!r}: kernels do not group digits or use 'z'")
    align = align or ">"
    zero = bool(m["zero"])
    if zero and align != ">":
        raise ValueError(f"{spec!r}: zero padding goes with right alignment")
    if kind == "str":
        if kind_code not in ("", "s") or m["sign"] or zero or m["alt"] or precision:
            raise ValueError(f"{spec!r}: after !s or !r the value is text: a width, < > ^")
        return PrintSpec(width=width, align=m["align"] or "<")  # text aligns left
    if kind == "bool":
        kind = "int"  # as Python: a bool formats as an int once a spec is given
    if kind_code in ("f", "F", "e", "E", "g", "G"):
        if align == "^":
            raise ValueError(f"{spec!r}: the float types align left (<) or right (>) here")
        flags = "-" if align == "<" else ""
        flags += ("" if sign == "-" else sign) + ("#" if m["alt"] else "") + ("0" if zero else "")
        digits = f"{width or ''}" + (f".{precision}" if precision is not None else "")
        return PrintSpec(conversion=f"%{flags}{digits}{kind_code}")
    if m["alt"]:
        raise ValueError(f"{spec!r}: '#' is for the float types f, e and g here")
    if kind_code in ("d", "x", "X", "o") or (kind_code == "" and kind != "float"):
        if kind == "float":
            raise ValueError(f"format type {kind_code!r} needs an integer; this is a float")
        if precision is not None:
            raise ValueError(f"{spec!r}: integers take no precision")
        return PrintSpec(base=kind_code or "d", sign=sign, width=width, align=align, zero=zero)
    if kind_code == "":
        if precision is not None:
            raise ValueError(f"{spec!r}: give a type with the precision, e.g. .{precision}g")
        return PrintSpec(sign=sign, width=width, align=align, zero=zero)
    raise ValueError(f"format type {kind_code!r} is not supported in kernels")
