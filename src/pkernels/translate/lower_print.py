"""Lowering of ``print(...)`` (f-strings included) and ``pk.printf``."""

from __future__ import annotations

import ast
from typing import cast

from ..api import types as t
from . import ir
from .ir import Expr
from .lower_context import Lowerer
from .printf import SPEC_HINT, PrintSpec, printf_format, python_spec


class PrintLowerer(Lowerer):
    """print() and pk.printf statements."""

    def print(self, call: ast.Call) -> ir.Stmt:
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
                        printed.texts[-1] += str(piece.value)
                    else:
                        self._print_formatted(printed, cast(ast.FormattedValue, piece))
            else:
                self._print_value(printed, self.cx.exprs.expr(arg), None)
        printed.texts[-1] += end
        return printed

    def _printf_arg(self, node: ast.expr) -> Expr:
        """``node`` lowered for pk.printf, refused when it is a complex number (C's
        printf has no conversion for one)."""
        value = self.cx.exprs.expr(node)
        if value.type.is_complex:
            z = ast.unparse(node)
            self.src.error(
                node,
                "printing a complex number with pk.printf: C's printf has no conversion for it",
                hint=f"Pass its parts (pk.printf('%f%+fj', {z}.real, {z}.imag)), or "
                f"print({z}) as Python writes it.",
            )
        return value

    @staticmethod
    def _print_value(printed: ir.Print, value: Expr, spec: PrintSpec | None) -> None:
        """Add ``value`` to ``printed``, written as ``spec`` says; text may follow."""
        printed.args.append(value)
        printed.specs.append(spec)
        printed.texts.append("")

    def _print_formatted(self, printed: ir.Print, piece: ast.FormattedValue) -> None:
        """One ``{value:spec}`` of an f-string, as print() writes it."""
        value = self.cx.exprs.expr(piece.value)
        if value.type in (t.float32, t.complex64) and piece.conversion != ord("s"):
            # NumPy formats a float32 as the Python float it converts to (f"{v}" writes
            # 0.10000000149011612 where print(v) and f"{v!s}" write 0.1); a complex64
            # as the Python complex.
            value = ir.Cast(t.complex128 if value.type.is_complex else t.float64, value)
        if value.type.is_complex and piece.format_spec is not None and piece.conversion == -1:
            z = ast.unparse(piece.value)
            self.src.error(
                piece.value,
                "a format spec for a complex number in a kernel (Python then writes it "
                "without parentheses, each part formatted)",
                hint=f'Format the parts: f"{{{z}.real:.3f}}{{{z}.imag:+.3f}}j", or '
                f"write {{{z}}} as print() does.",
            )
        if piece.format_spec is None:
            # !s and !r write a number as print() does; !a too.
            self._print_value(printed, value, None)
            return
        parts = cast(
            ast.JoinedStr, piece.format_spec
        ).values  # a JoinedStr: literal text and nested {fields}
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

    def printf(self, call: ast.Call) -> ir.Stmt:
        if not call.args or not (
            isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)
        ):
            self.src.error(call, "pk.printf needs a literal format string first")
        fmt = call.args[0].value
        args = [self._printf_arg(a) for a in call.args[1:]]
        try:
            printf_format(fmt, len(args))
        except ValueError as exc:
            self.src.error(call.args[0], f"bad pk.printf format: {exc}")
        return ir.Print(call.lineno, False, fmt, args)
