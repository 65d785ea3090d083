"""Reading a kernel's Python source and reporting errors against it."""

from __future__ import annotations

import ast
import inspect
import linecache
import os
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from ..errors import TranslationError


@dataclass
class KernelSource:
    """The parsed source of one decorated function, with absolute line numbers."""

    func: Callable[..., Any]
    filename: str  # absolute path, as it goes into #line directives
    tree: ast.FunctionDef
    indent: int  # columns removed by dedent (methods, nested functions)

    @classmethod
    def of(cls, func: Callable[..., Any]) -> KernelSource:
        rewritten = getattr(func, "__pkernels_source__", None)
        if isinstance(rewritten, KernelSource):  # a workload method's kernel form
            return rewritten
        code = func.__code__
        filename = os.path.abspath(code.co_filename)
        try:
            lines, first = inspect.getsourcelines(func)
        except (OSError, TypeError) as exc:
            raise TranslationError(
                f"cannot read the source of kernel {func.__qualname__!r} ({exc})",
                filename,
                code.co_firstlineno,
                0,
                hint="Kernels must be defined in a .py file (not typed at an interactive prompt).",
            ) from None
        text = "".join(lines)
        dedented = textwrap.dedent(text)
        indent = len(lines[0]) - len(lines[0].lstrip()) if dedented != text else 0
        module = ast.parse(dedented)
        ast.increment_lineno(module, first - 1)
        tree = module.body[0]
        if not isinstance(tree, ast.FunctionDef):
            raise TranslationError(
                "a kernel must be a plain `def` function", filename, first, indent
            )
        return cls(func, filename, tree, indent)

    @property
    def name(self) -> str:
        return self.tree.name

    @property
    def globals(self) -> dict[str, Any]:
        return self.func.__globals__

    @property
    def closure(self) -> dict[str, Any]:
        """What a kernel defined in a function captured from it: name -> value."""
        return closure_of(self.func)

    def lookup(self, name: str, default: Any = None) -> Any:
        """What ``name`` means where the kernel is defined: a captured variable of its
        enclosing function, else a global of its module (Python's order)."""
        return resolve(self.func, name, default)

    def defines(self, name: str) -> bool:
        """Whether the kernel's enclosing function or module defines ``name``."""
        return name in self.closure or name in self.globals

    def line_text(self, lineno: int) -> str:
        return linecache.getline(self.filename, lineno)

    def error(
        self,
        node: ast.AST | None,
        message: str,
        hint: str = "",
        kind: type[TranslationError] = TranslationError,
    ) -> NoReturn:
        """Raise a TranslationError (or the subclass ``kind``) pointing at ``node``."""
        lineno = getattr(node, "lineno", None) or self.tree.lineno
        line = self.line_text(lineno)
        # ast columns count UTF-8 bytes; the caret and the reported column count characters
        # (a kernel may well name a local `α`).
        offset = getattr(node, "col_offset", 0) + self.indent
        col = len(line.encode()[:offset].decode(errors="replace"))
        raise kind(message, self.filename, lineno, col, line, hint)


def closure_of(func: Callable[..., Any]) -> dict[str, Any]:
    """What ``func``, defined in another function, captured from it: name -> value."""
    code = getattr(func, "__code__", None)
    cells = getattr(func, "__closure__", None) or ()
    found = {}
    for name, cell in zip(code.co_freevars if code else (), cells, strict=True):
        try:
            found[name] = cell.cell_contents
        except ValueError:  # not bound yet in the enclosing function
            pass
    return found


def resolve(func: Callable[..., Any], name: str, default: Any = None) -> Any:
    """What ``name`` means in ``func``: a variable it captured, else a global of its
    module (Python's order; builtins are not looked at)."""
    closure = closure_of(func)
    if name in closure:
        return closure[name]
    return func.__globals__.get(name, default)
