"""``pk.printf`` formats: each conversion paired with the C type its argument needs."""

from __future__ import annotations

import re

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
