"""The ``Debug`` space: a workunit run as plain Python, one call per index.

Python cannot pass a float by reference, so for reduce and scan each store into the
accumulator also goes to a one-element list, its cell (:func:`mirror_accumulator`), in a
copy of the function compiled with the original file name and line numbers (tracebacks
and pdb point at the user's source). A math function the kernel calls bare, without an import
(``sqrt(x)``, as PyKokkos lets kernels write), is read as the compiled kernel reads it
(``pk.sqrt``) in such a copy too; list locals are typed arrays there, in the kernel and
in the ``@pk.function`` helpers it calls (each a copy of its own, :func:`helper_cells`).
"""

from __future__ import annotations

import ast
import builtins
import copy
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from ..api import kernel_builtins
from ..api.decorators import marker_of
from ..errors import TranslationError
from .builtin_table import (
    BARE_MATH,
)
from .lower_lists import ListAnnotation, is_list_display, list_annotation
from .lower_random import debug_draws
from .pycode import bind_like, compile_like, module_attribute, nested_code
from .pytyped import LocalTypes, typed_stores
from .source import KernelSource, closure_of, resolve

ACC_CELL = "__pk_acc"  # the keyword parameter a Debug form's accumulator cell comes in


def mirror_accumulator(tree: ast.FunctionDef, name: str) -> None:
    """Rewrite ``tree`` (a copied def whose parameter ``name`` is the accumulator) so that
    the accumulator's value comes in as that parameter and its cell (a one-element list)
    as the keyword parameter :data:`ACC_CELL`; after every statement that assigns
    ``name``, ``name = __pk_acc.put(name)`` (on the same line) stores it in the cell.

    ``acc`` stays a plain local holding the value, so what a debugger stopped in the body
    shows, evaluates and tests in a breakpoint condition is the value, as in a compiled
    kernel; the cell is where the caller reads the result and, for a scan, sets the
    prefix the next call starts from. A nested def reads it as a closure; one declaring
    ``nonlocal name`` is rewritten too."""
    tree.args.kwonlyargs.append(ast.arg(arg=ACC_CELL))
    tree.args.kw_defaults.append(None)
    tree.body = _store_to_cell(tree.body, name)


def _store_to_cell(body: list[ast.stmt], name: str) -> list[ast.stmt]:
    rewritten: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            if any(isinstance(s, ast.Nonlocal) and name in s.names for s in ast.walk(stmt)):
                stmt.body = _store_to_cell(stmt.body, name)
            rewritten.append(stmt)
            continue
        if isinstance(stmt, ast.ClassDef):
            rewritten.append(stmt)
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                setattr(stmt, field, _store_to_cell(inner, name))
        for part in [*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())]:
            part.body = _store_to_cell(part.body, name)
        if isinstance(stmt, ast.For | ast.AsyncFor) and _stores(stmt.target, name):
            stmt.body.insert(0, _put(name, stmt))
        rewritten.append(stmt)
        targets = _assigned(stmt)
        if targets and any(_stores(target, name) for target in targets):
            rewritten.append(_put(name, stmt))
    return rewritten


def _assigned(stmt: ast.stmt) -> list[ast.expr]:
    """What a statement assigns a value to (an annotation alone assigns nothing)."""
    if isinstance(stmt, ast.Assign):
        return stmt.targets
    if isinstance(stmt, ast.AugAssign) or (isinstance(stmt, ast.AnnAssign) and stmt.value):
        return [stmt.target]
    return []


def _stores(target: ast.expr, name: str) -> bool:
    return any(
        isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)
        for node in ast.walk(target)
    )


def _put(name: str, where: ast.stmt) -> ast.stmt:
    """``name = __pk_acc.put(name)`` at ``where``'s line (no line event of its own)."""
    call = ast.Call(
        func=ast.Attribute(value=ast.Name(id=ACC_CELL, ctx=ast.Load()), attr="put", ctx=ast.Load()),
        args=[ast.Name(id=name, ctx=ast.Load())],
        keywords=[],
    )
    stmt = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=call)
    for node in ast.walk(stmt):
        ast.copy_location(node, where)
    return stmt


def _parameters(args: ast.arguments) -> set[str]:
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return {arg.arg for arg in every if arg is not None}


def _binds(func: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """Whether ``name`` is a local of ``func`` (a parameter, or assigned there without a
    ``nonlocal`` declaration)."""
    if name in _parameters(func.args):
        return True
    stack: list[ast.AST] = list(func.body)
    assigned = False
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Nonlocal) and name in node.names:
            return False
        if isinstance(node, ast.Global) and name in node.names:
            return True
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            assigned = True
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == name:
                assigned = True
            continue  # their bodies are other scopes
        if isinstance(node, ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return assigned


def accumulator_form(
    func: Callable[..., Any], position: int = 1, local_types: LocalTypes | None = None
) -> Callable[..., Any]:
    """``func`` as the Debug space runs a reduce or scan: its accumulator (the parameter
    at ``position``: the second, or the one after an MDRangePolicy's indices) comes in
    as a value and each store into it also goes to the cell given as ``__pk_acc=``
    (:func:`mirror_accumulator`); stores into its locals convert to ``local_types``."""
    source = KernelSource.of(func)
    # A copy: the tree is the one the compiled spaces translate (cached per lambda and
    # workload method), which must keep its accumulator and annotations.
    tree = copy.deepcopy(source.tree)
    acc_name = tree.args.args[position].arg
    prepare_helpers(func)
    tree.body, cells = debug_rewrite(func, tree.body, local_types)
    mirror_accumulator(tree, acc_name)
    new_tree = ast.FunctionDef(
        name=tree.name,
        args=tree.args,
        body=tree.body,
        decorator_list=tree.decorator_list,  # never run: the code's first line, as func's
        returns=None,
        type_params=[],
    )
    ast.copy_location(new_tree, tree)
    for arg in tree.args.args:
        arg.annotation = None  # pk.Acc[...] etc. mean nothing to plain Python
    # Compiled with the workunit's free variables and bound to its closure cells: a
    # workunit defined in a function reads what it captured, as the original does.
    code = compile_like(new_tree, source.filename, func.__code__, tuple(cells))
    return bind_like(code, func, cells)


class _GlobalNameRewriter(ast.NodeTransformer):
    """Rewrites reads of the module-level ``names``; a nested function that binds one of
    them (its own `log = 3.0`) reads its local there, which is left alone."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        outer = self.names
        self.names = {name for name in outer if not _binds(node, name)}
        try:
            return self.generic_visit(node)
        finally:
            self.names = outer


class BareMathNames(_GlobalNameRewriter):
    """``sqrt`` -> ``pk.sqrt`` (``math.degrees`` for the names pk lacks) for the math
    functions ``names`` a kernel calls bare: what the translator reads them as."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id not in self.names or not isinstance(node.ctx, ast.Load):
            return node
        return module_attribute(bare_math_module(node.id), [node.id], node)


def bare_math_names(func: Callable[..., Any]) -> set[str]:
    """The math functions ``func`` (or a def in it) calls bare, as the translator reads
    them (:func:`reads_bare_math`)."""
    return {
        name for name in _global_names(func.__code__) if reads_bare_math(name, resolve(func, name))
    }


def reads_bare_math(name: str, target: object) -> bool:
    """Whether kernel code calling ``name`` (bound to ``target`` where it is defined)
    calls the math function: PyKokkos translates a bare ``sqrt(x)`` so, unimported, also
    where a workunit has the name (a workunit ``sin`` calling ``sin``)."""
    if name not in BARE_MATH:
        return False
    marker = marker_of(target)
    return target is None or (marker is not None and marker.kind == "workunit")


def bare_math_module(name: str) -> str:
    """Where a math function called bare comes from: pkernels' (Kokkos' semantics), or
    math's for the few pk lacks (degrees, radians, remainder)."""
    return "pkernels" if hasattr(kernel_builtins, name) else "math"


def python_form(
    func: Callable[..., Any], local_types: LocalTypes | None = None
) -> Callable[..., Any]:
    """``func`` as the Debug space calls it: itself, or a copy reading the math functions
    it calls bare, making its list locals as the compiled kernel does and converting
    each store into a local to its kernel type (``local_types``; see
    :func:`debug_rewrite`)."""
    prepare_helpers(func)
    try:
        source = KernelSource.of(func)
    except TranslationError:  # no source to read (exec, a prompt): it runs as it is
        return func
    tree = copy.deepcopy(source.tree)
    for arg in [*tree.args.posonlyargs, *tree.args.args, *tree.args.kwonlyargs]:
        arg.annotation = None
    tree.returns = None
    tree.body, cells = debug_rewrite(func, tree.body, local_types)
    if not cells and not needs_debug_rewrite(func, source.tree):
        return func  # nothing to change: the function itself
    form = bind_like(compile_like(tree, source.filename, func.__code__, tuple(cells)), func, cells)
    form.__annotations__ = dict(func.__annotations__)
    return form


def needs_debug_rewrite(func: Callable[..., Any], tree: ast.FunctionDef) -> bool:
    """Whether :func:`debug_rewrite` changes ``func`` (whose def is ``tree``) other than
    by typed stores."""
    return bool(bare_math_names(func)) or any(_list_made(node) for node in ast.walk(tree))


def debug_rewrite(
    func: Callable[..., Any], body: list[ast.stmt], local_types: LocalTypes | None = None
) -> tuple[list[ast.stmt], dict[str, types.CellType]]:
    """The statements of ``func``'s (copied) def as the Debug space runs them: math
    functions called bare read as the translator reads them (:class:`BareMathNames`),
    list locals made as typed arrays (:class:`ListLocals`), helpers that make list
    locals called as such forms of their own (:class:`HelperCalls`), stores into the
    scalar locals of ``local_types`` converted to their types (``pytyped.typed_stores``); and
    the cells of what the new statements read by name (for ``pycode.bind_like``)."""
    bare = BareMathNames(bare_math_names(func))
    lists = ListLocals(func)
    helpers = helper_cells(func)
    calls = HelperCalls(set(helpers))
    body = [calls.visit(bare.visit(lists.visit(stmt))) for stmt in body]
    cells = {f"{HELPER_PREFIX}{name}": cell for name, cell in helpers.items()}
    if local_types is not None:
        body, converters = typed_stores(body, local_types)
        cells |= {name: types.CellType(value) for name, value in converters.items()}
        if local_types.random_draws is not None:  # pk.rand(T): the pool's draws
            body, made = debug_draws(body, local_types.random_draws)
            cells |= {name: types.CellType(value) for name, value in made.items()}
    return body, cells


class ListLocals(ast.NodeTransformer):
    """``x = [a, b]`` / ``x: List[T] = [...]`` -> ``x = debug_list([a, b], "T")``: in the
    Debug space a list local is what compiled kernels make of it, an array of one element
    type seen as a kernel view (elements converted on store, ``len``/``extent``, atomics,
    negative indices refused); assigning it again fills the same array."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return node  # nested bodies make no list locals (the translator refuses it)

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        if len(node.targets) == 1 and _list_made(node):
            return self._make(node, node.targets[0].id, node.value, None)  # type: ignore[attr-defined]
        return self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if _list_made(node):
            dtype = self._annotated_type(node.annotation)
            return self._make(node, node.target.id, node.value, dtype)  # type: ignore[attr-defined,arg-type]
        return self.generic_visit(node)

    def _annotated_type(self, annotation: ast.expr) -> str | None:
        try:
            value = eval(  # noqa: S307 - the kernel's own annotation, as the translator reads it
                compile(ast.Expression(annotation), "<annotation>", "eval"),
                self.func.__globals__,
                closure_of(self.func),
            )
        except Exception:  # noqa: BLE001 - the translator reports a bad annotation
            return None
        listed = list_annotation(value)
        return listed.dtype.name if isinstance(listed, ListAnnotation) else None

    def _make(self, node: ast.stmt, name: str, value: ast.expr, dtype: str | None) -> ast.stmt:
        # The list made before, if any ran: locals().get(name) (branches may make it)
        previous: ast.expr = ast.Call(
            func=ast.Attribute(
                value=ast.Call(func=ast.Name(id="locals", ctx=ast.Load()), args=[], keywords=[]),
                attr="get",
                ctx=ast.Load(),
            ),
            args=[ast.Constant(name)],
            keywords=[],
        )
        maker = module_attribute("pkernels", ["translate", "pyexec", "debug_list"], node)
        call = ast.Call(func=maker, args=[value, ast.Constant(dtype), previous], keywords=[])
        assign = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=call)
        for part in ast.walk(assign):
            if not hasattr(part, "lineno") or part is assign:
                ast.copy_location(part, node)
        return assign


def _list_made(node: ast.AST) -> bool:
    """A statement making a list local: ``x = [...]``, ``x: List[T] = [...]``."""
    if isinstance(node, ast.Assign):
        return (
            len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and is_list_display(node.value)
        )
    return (
        isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and node.value is not None
        and is_list_display(node.value)
    )


def debug_list(values: list[Any], dtype: str | None, previous: Any = None) -> Any:
    """The Debug space's list local: ``values`` in an array of ``dtype`` (else the type the
    translator gives such elements), seen as a kernel view; ``previous`` (the list when
    assigned again) is filled instead, keeping its type."""
    from ..runtime.python_values import as_kernel_view

    if not values:  # as the translator says it
        raise ValueError("an empty list cannot be a kernel local")
    if not builtins.all(isinstance(v, int | float | np.number | np.bool_) for v in values):
        raise TypeError("a list local holds numbers (ints, floats, bools)")
    if previous is not None and hasattr(previous, "dtype"):
        if len(values) != len(previous):
            raise ValueError(
                f"a list of {len(previous)} {previous.dtype} assigned {len(values)} elements: "
                "a list local keeps its length"
            )
        previous[...] = values
        return previous
    return as_kernel_view(np.array(values, dtype=dtype or _element_dtype(values)))


def _element_dtype(values: list[Any]) -> np.dtype:
    """As lower_lists' element type: the elements' one type, else int64 for integers and
    bools, else float64 (a Python int is int64, a float float64)."""
    kinds = [
        np.dtype(type(v)) if isinstance(v, np.generic) else _PYTHON_DTYPES[type(v)] for v in values
    ]
    if all(k == kinds[0] for k in kinds):
        return kinds[0]
    if all(k.kind in "iub" for k in kinds):
        return np.dtype(np.int64)
    return np.dtype(np.float64)


_PYTHON_DTYPES = {bool: np.dtype(np.bool_), int: np.dtype(np.int64), float: np.dtype(np.float64)}


HELPER_PREFIX = "__pk_fn_"  # the name a Debug form reads a helper's own form under


class HelperCalls(_GlobalNameRewriter):
    """``helper(...)`` -> ``__pk_fn_helper(...)`` for the helpers ``names`` (called by
    name) that the Debug space runs as forms of their own (:func:`helper_cells`)."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id not in self.names or not isinstance(node.ctx, ast.Load):
            return node
        return ast.copy_location(ast.Name(id=HELPER_PREFIX + node.id, ctx=ast.Load()), node)


def helper_cells(func: Callable[..., Any]) -> dict[str, types.CellType]:
    """The ``@pk.function`` helpers ``func`` calls by name whose Debug form is not the
    helper itself, each as the cell holding that form, by the name ``func`` calls it by.

    A helper making a list local (or calling one that does, at any depth) runs as a copy
    making it as compiled kernels do, a typed array (:class:`ListLocals`); the helper
    itself, which host code may call too, keeps Python's lists. A helper called through
    a module attribute (``mod.helper(x)``) runs as it is."""
    called = _called_helpers(func)
    if not called:
        return {}
    graph: dict[Any, dict[str, Any]] = {}
    pending = list(called.values())
    while pending:  # every helper reachable from func, and what each calls
        helper = pending.pop()
        if helper not in graph:
            graph[helper] = _called_helpers(helper)
            pending += graph[helper].values()
    needs = {h for h in graph if _makes_lists(h)}
    grown = True
    while grown:  # and the helpers calling those, at any depth (recursion included)
        grown = False
        for helper, calls in graph.items():
            if helper not in needs and any(c in needs for c in calls.values()):
                needs.add(helper)
                grown = True
    for helper in needs:
        _helper_form_cell(helper, graph[helper], needs)
    return {name: _helper_forms[h][1] for name, h in called.items() if h in needs}


# A helper's Debug form, by helper: the code it was made from and the cell holding it.
_helper_forms: dict[Any, tuple[types.CodeType, types.CellType]] = {}


def _helper_form_cell(helper: Any, calls: dict[str, Any], needs: set[Any]) -> types.CellType:
    """The cell of ``helper``'s Debug form (made now unless made from its current
    code); the cells of the helpers it calls exist before any is filled, so helpers
    calling each other find each other's forms."""
    found = _helper_forms.get(helper)
    if found is not None and found[0] is helper.__code__:
        return found[1]
    cell = types.CellType()
    _helper_forms[helper] = (helper.__code__, cell)
    try:
        for callee in calls.values():
            if callee in needs:
                _helper_form_cell(callee, _called_helpers(callee), needs)
        source = KernelSource.of(helper)
        tree = copy.deepcopy(source.tree)
        tree.body, cells = debug_rewrite(helper, tree.body)
        code = compile_like(tree, source.filename, helper.__code__, tuple(cells))
    except BaseException:
        del _helper_forms[helper]  # no empty cell left for a later dispatch
        raise
    form = bind_like(code, helper, cells)
    form.__annotations__ = dict(helper.__annotations__)
    cell.cell_contents = form
    return cell


def _called_helpers(func: Callable[..., Any]) -> dict[str, Any]:
    """The ``@pk.function`` helpers (with source) ``func`` reads by name: name -> helper."""
    found = {}
    own = func.__code__.co_varnames  # a local or parameter of that name is not the helper
    for name in _global_names(func.__code__) - set(own):
        helper = resolve(func, name)
        marker = marker_of(helper)
        if marker is not None and marker.kind == "function" and _has_source(helper):
            found[name] = helper
    return found


def _makes_lists(helper: Any) -> bool:
    tree = KernelSource.of(helper).tree
    return any(_list_made(node) for node in ast.walk(tree))


def _has_source(func: Callable[..., Any]) -> bool:
    try:
        KernelSource.of(func)
    except TranslationError:
        return False
    return True


def prepare_helpers(func: Callable[..., Any], seen: set[Any] | None = None) -> None:
    """Give the ``@pk.function`` helpers ``func`` calls (recursively) the reading of the
    math functions they call bare, as compiled kernels have it: the helper's own code is
    replaced by the rewritten one, since the kernel calls it by name. Only those names
    change, which were NameErrors; plain functions, helpers with a closure and helpers
    without source are left as they are."""
    seen = set() if seen is None else seen
    for name in _global_names(func.__code__):
        helper = resolve(func, name)
        marker = marker_of(helper)
        if marker is None or marker.kind != "function" or helper in seen:
            continue
        seen.add(helper)
        prepare_helpers(helper, seen)
        if helper.__code__ in _prepared or helper.__closure__:
            continue
        names = bare_math_names(helper)
        if names:
            try:
                source = KernelSource.of(helper)
            except TranslationError:
                continue
            tree = copy.deepcopy(source.tree)
            tree.body = [BareMathNames(names).visit(stmt) for stmt in tree.body]
            helper.__code__ = compile_like(tree, source.filename, helper.__code__)
        _prepared.add(helper.__code__)


_prepared: set[types.CodeType] = set()


def _global_names(code: types.CodeType) -> set[str]:
    """The global names ``code`` and the functions defined in it read."""
    return {name for current in (code, *nested_code(code)) for name in current.co_names}
