"""Typed kernel IR -> C++ statements and expressions, a ``#line`` before every statement.

The Python file and line of each statement go into ``#line`` directives, so gdb maps
``break yax.py:9`` natively, backtraces show Python lines, and generated locals keep
their Python names. After each function the line mapping is reset to the generated
file itself (its path is substituted for :data:`GENERATED_PATH` once known).

:class:`CppEmitter` writes a workunit's body and helpers; :mod:`.emit_launch` puts
them into the module with the ``extern "C"`` launchers of each space and what the
release, debug and hybrid builds add around them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..api import types as t
from ..api.reducers import Reducer, Sum
from ..api.types import DataType
from ..build.compiler import GENERATED_PATH
from . import ir
from .builtin_table import DOUBLE, INT64, KEEP, KERNEL_FUNCTIONS
from .cpp_prelude import atomic_operation_struct
from .cpp_prelude import atomic_update as prelude_atomic_update
from .ir import ViewType
from .printf import PrintSpec, printf_format

KERNEL_NAMESPACE = "pk_kernel"
TEAM = 0  # the `rank` of a TeamPolicy module (kernel.py's TEAM)

# Release builds of an eligible parallel_reduce run this many consecutive indices in one
# interleaved body (see :func:`interleaved_lanes`).
LANES = 4

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


def view_cpp_type(view: ViewType) -> str:
    contiguous = "true" if view.contiguous else "false"
    return f"pk_rt::View<{view.dtype.ctype}, {view.rank}, {contiguous}>"


@dataclass
class KernelEntry:
    """How the runtime calls one generated module."""

    source: str  # C++ text, with GENERATED_PATH still to substitute
    params: list[ir.Param]  # marshalled parameters (views and scalars), in C order
    acc_type: DataType | None
    uses_print: bool
    symbols: dict[str, str]  # space name -> exported launch symbol
    kernel_symbol: str  # qualified C++ name of the workunit body (for debuggers)
    # Python name -> "float" | "float32" | "int" | "bool" | "complex64" | "complex128" for
    # the body's scalars (gdb prints 0.0 as 0; a float32 is a NumPy float32 to a
    # debugger's Python, as in the kernel; a complex is the runtime's struct in gdb)
    variable_kinds: dict[str, str] = field(default_factory=dict)
    written_views: frozenset[str] = frozenset()  # view parameters the kernel stores into
    rank: int = 1  # index parameters: 1 for a range, 2 to 4 for an MDRangePolicy box
    # A range for/reduce's bounds_proof.LaunchProof (None: no launch can be proven):
    # which launches a HYBRID dispatch may run as release code.
    proof: Any = None
    # Subviews by name (lower_subviews.Subview.describe): how a debugger shows `row`.
    subviews: dict[str, Any] = field(default_factory=dict)
    # Whether the code converts a float to an integer somewhere (a check of the debug
    # build that bounds_proof cannot prove safe: it does not track float values).
    converts_floats: bool = False


class CppEmitter:
    #: Where the math functions (sqrt, pow, fabs, isnan...) of the target's runtime live.
    MATH = "std::"
    #: The backend's name in the builtin table's spellings (KernelFunction.spell).
    BACKEND = "cpp"
    #: Whether ``v[i - 1]`` is emitted as ``i`` shifted by -1 (``pk_rt::at_shifted``).
    SHIFTED_ACCESS = True

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.indent = 0
        self.uses_print = False
        self.converts_floats = False  # emitted a pk_rt::float_to_int (see KernelEntry)
        self.temps = 0  # numbering of generated temporaries
        # While emitting an interleaved body: the names with one copy per lane, the
        # accumulator (statements on it run once per lane, in lane order) and the lane
        # whose copies the expression being emitted uses.
        self.lane_vars: frozenset[str] = frozenset()
        self.lane_acc: str | None = None
        self.lane: int | None = None

    # ------------------------------------------------------------ output helpers

    def out(self, text: str) -> None:
        self.lines.append("    " * self.indent + text if text else "")

    def line_directive(self, lineno: int, filename: str) -> None:
        self.lines.append(f"#line {max(1, lineno)} {c_string(filename)}")

    def reset_line(self) -> None:
        # The directive names the line that follows it.
        self.lines.append(f'#line {len(self.lines) + 2} "{GENERATED_PATH}"')

    # ------------------------------------------------------------ functions

    def function(self, fn: ir.Function, is_kernel: bool) -> None:
        params = ", ".join(self.param_decl(p) for p in fn.params)
        ret = fn.return_type.ctype if fn.return_type is not None else "void"
        self.line_directive(fn.lineno, fn.filename)
        # The workunit body: a real function in debug builds (gdb breaks and shows frames
        # in it), inlined into the launcher's loop in release builds (include/pkernels/cpu.hpp).
        if is_kernel:
            self.out(f"PK_KERNEL_TEMPLATE PK_KERNEL {ret} {cpp_name(fn.name)}({params}) {{")
        else:
            self.out(f"{self.helper_signature(fn)} {{")
        self.function_body(fn)

    def interleaved_function(self, fn: ir.Function, lane_vars: frozenset[str]) -> None:
        """``lanes_<name>(pk_i0, acc, ...)``: the body for indices pk_i0 ... pk_i0 + LANES - 1
        at once (release builds only). Each statement runs for lane 0, 1, ... in turn, so
        every lane does its own operations in its own order (the same bits as one index at
        a time), while the lanes' independent chains of dependent operations (a dot
        product's additions) overlap in the CPU."""
        index, acc = fn.params[0], fn.params[1]
        assert isinstance(index.type, DataType)
        params = ", ".join(["int64_t pk_i0", *(self.param_decl(p) for p in fn.params[1:])])
        self.line_directive(fn.lineno, fn.filename)
        self.out(
            f"template <bool PK_NA> static inline __attribute__((always_inline)) void "
            f"{interleaved_name(fn)}({params}) {{"
        )
        self.lane_vars, self.lane_acc = lane_vars, acc.name
        for k in range(LANES):
            self.lane = k
            self.out(
                f"    const {index.type.ctype} {self.expr(ir.Var(index.type, index.name))} = "
                f"({index.type.ctype})(pk_i0 + {k});"
            )
        self.lane = None
        self.function_body(fn)
        self.lane_vars, self.lane_acc = frozenset(), None

    def function_body(self, fn: ir.Function) -> None:
        self.indent += 1
        param_names = {p.name for p in fn.params}
        # All on the `def` line: a line of their own would be the Python line after it.
        declarations = []
        for name, dtype in fn.locals.items():
            if name not in param_names:
                var = ir.Var(dtype, name)
                declarations += [f"{dtype.ctype} {self.expr(var)} = 0;" for _ in self.lanes(var)]
        for name, view in fn.scratch_views.items():
            declarations.append(f"{view_cpp_type(view)} {cpp_name(name)} = {{}};")
        for name, (view, length) in fn.local_arrays.items():
            storage = f"pk_list_{cpp_name(name)}"
            declarations.append(
                f"{view.dtype.ctype} {storage}[{length}] = {{}}; "
                f"{view_cpp_type(view)} {cpp_name(name)} = {{{storage}, {{{length}}}, {{1}}}};"
            )
        if declarations:
            self.line_directive(fn.lineno, fn.filename)
            self.out(" ".join(declarations))
        self.block(fn.body, fn.filename)
        # The function's end (and a fallback return) belongs to its last Python line, so
        # a step past the last statement stops there, not on a blank line below it.
        self.line_directive(fn.end_lineno, fn.filename)
        if fn.return_type is not None and not (fn.body and isinstance(fn.body[-1], ir.Return)):
            self.out(f"return {fn.return_type.ctype}(0);  // Python would return None here")
        self.indent -= 1
        self.out("}")
        self.reset_line()

    def param_decl(self, p: ir.Param) -> str:
        if isinstance(p.type, ir.TeamType):
            return f"pk_rt::TeamMember& {cpp_name(p.name)}"
        if isinstance(p.type, ViewType):
            v = p.type
            contiguous = "true" if v.contiguous else "false"
            return f"PK_VIEW_ARG({v.dtype.ctype}, {v.rank}, {contiguous}) {cpp_name(p.name)}"
        if p.role == "acc":
            return f"{p.type.ctype}& {cpp_name(p.name)}"
        return f"{p.type.ctype} {cpp_name(p.name)}"

    def declare(self, fn: ir.Function) -> None:
        self.out(f"{self.helper_signature(fn)};")

    def helper_signature(self, fn: ir.Function) -> str:
        """A helper's declarator. Views come as they are in the caller: ``const View&`` in
        debug builds, and in release builds whatever the caller has (a View or a
        restrict-qualified RView), through a template parameter per view (HELPER_MACROS).
        Classtype values come by reference, as Python passes its objects."""
        params, views = [], 0
        for p in fn.params:
            name = cpp_name(p.name)
            if isinstance(p.type, ViewType):
                v = p.type
                contiguous = "true" if v.contiguous else "false"
                params.append(
                    f"PK_HELPER_VIEW(PK_V{views}, {v.dtype.ctype}, {v.rank}, {contiguous}) {name}"
                )
                views += 1
            elif isinstance(p.type, ir.StructType):
                params.append(f"{p.type.ctype}& {name}")
            else:
                params.append(self.param_decl(p))
        template = ""
        if views:
            names = ", ".join(f"typename PK_V{k}" for k in range(views))
            template = f"PK_HELPER_TEMPLATE({names}) "
        ret = fn.return_type.ctype if fn.return_type is not None else "void"
        return f"{template}static inline {ret} {cpp_name(fn.name)}({', '.join(params)})"

    def struct_definitions(self, structs: list[ir.StructType]) -> None:
        """The C++ structs of the classtypes (fields in declaration order). The converting
        constructor gives every field 0: it is what ``T x = 0;`` declares (locals start
        zeroed), and it keeps the struct plain data for gdb (``{x = 1, q = 2, id = 0}``)."""
        for struct in structs:
            fields = [(cpp_name(name), ftype) for name, ftype in struct.fields]
            if struct.reducer is not None:
                # A reducer's accumulator: an aggregate (`T{v, loc}`), which CUDA's
                # __shared__ arrays can hold, named by the launchers outside this namespace.
                members = " ".join(f"{ftype.ctype} {name};" for name, ftype in fields)
                self.out(f"struct {struct.ctype} {{ {members} }};")
                continue
            self.out(f"struct {struct.ctype} {{")
            for name, ftype in fields:
                self.out(f"    {ftype.ctype} {name};")
            inits = ", ".join(f"{name}(0)" for name, _ in fields)
            self.out(f"    {struct.ctype}(int = 0){' : ' + inits if inits else ''} {{}}")
            self.out("};")
        if structs:
            # An rvalue (a call's result) passed where a helper takes a reference.
            self.out("template <typename T> static inline T& pk_lvalue(T&& v) { return v; }")

    # ------------------------------------------------------------ statements

    def block(self, stmts: list[ir.Stmt], filename: str) -> None:
        for stmt in stmts:
            self.stmt(stmt, filename)

    def stmt(self, s: ir.Stmt, filename: str) -> None:
        self.line_directive(s.lineno, filename)
        match s:
            case ir.Assign(target=target, value=value):
                self.out(
                    " ".join(
                        f"{self.lvalue(target)} = {self.cast(value, target.type)};"
                        for _ in self.lanes(target)
                    )
                )
            case ir.AugAssign(target=target, op=op, value=value):
                rtype = self.aug_type(target, value, op)
                self.out(
                    " ".join(
                        f"{self.lvalue(target)} = "
                        f"({target.type.ctype})({self.binop(op, target, value, rtype)});"
                        for _ in self.lanes(target)
                    )
                )
            case ir.ExprStmt(value=value):
                self.out(f"(void)({self.expr(value)});")
            case ir.If(cond=cond, body=body, orelse=orelse):
                self.out(f"if ({self.truth(cond)}) {{")
                self.nested(body, filename)
                if orelse:
                    self.out("} else {")
                    self.nested(orelse, filename)
                self.out("}")
            case ir.While(cond=cond, body=body):
                self.out(f"while ({self.truth(cond)}) {{")
                self.nested(body, filename)
                self.out("}")
            case ir.ForRange():
                self.for_range(s, filename)
            case ir.Break():
                self.out("break;")
            case ir.Continue():
                self.out("continue;")
            case ir.Return(value=None):
                self.out("return;")
            case ir.Return(value=value):
                self.out(f"return {self.expr(value)};")
            case ir.Print():
                self.print_stmt(s)
            case ir.TeamBarrier(team=team):
                self.out(f"pk_rt::team_barrier({cpp_name(team)}, __FILE__, __LINE__);")
            case ir.ScratchAlloc():
                extents = ", ".join(self.cast(e, t.int64) for e in s.extents)
                self.out(
                    f"{cpp_name(s.name)} = pk_rt::scratch_view<{s.view.dtype.ctype}, {s.view.rank}>"
                    f"({cpp_name(s.team)}, {s.level}, {'true' if s.per_thread else 'false'}, "
                    f"{{{extents}}}, {c_string(s.name)}, __FILE__, __LINE__);"
                )
            case ir.NestedParallel():
                self.nested_parallel(s, filename)
            case ir.Single():
                team = cpp_name(s.team)
                self.out(f"if ({team}.team_rank == 0) {{" if s.per_team else "{")
                self.nested_body(s.locals, s.body, s.label, (s.lineno, s.end_lineno), filename)
                self.line_directive(s.lineno, filename)
                self.out("}")
            case ir.JumpTo(label=label):
                self.out(f"goto {label};")
            case _:
                raise AssertionError(f"unhandled IR statement {s!r}")

    def nested_body(
        self,
        names: dict[str, DataType],
        body: list[ir.Stmt],
        label: str,
        lines: tuple[int, int],
        filename: str,
    ) -> None:
        """An inlined nested def's body: its own locals (fresh in each call, as Python's
        are; declared on the first of ``lines``), its statements, and the label its
        ``return`` jumps to (on the last of ``lines``)."""
        start, end = lines
        self.indent += 1
        if names:
            self.line_directive(start, filename)
            self.out(
                " ".join(f"{dtype.ctype} {cpp_name(name)} = 0;" for name, dtype in names.items())
            )
        self.block(body, filename)
        self.line_directive(end, filename)
        self.out(f"{label}: ;")
        self.indent -= 1

    def nested_parallel(self, s: ir.NestedParallel, filename: str) -> None:
        """A nested parallel_* over a team range: this thread's share of the indices (all
        of them for a ThreadVectorRange) through the inlined body; a reduce or scan over a
        team-split range then combines the team's partials (see TEAM_PRELUDE).

        Every generated line gets its own ``#line``: the loop's bookkeeping belongs to the
        nested def's line, the combination of partials to the parallel_* call's."""
        n = s.label.removeprefix("pk_next")
        team = cpp_name(s.team)
        split = s.kind != "thread_vector"

        def at(lineno: int, text: str) -> None:
            self.line_directive(lineno, filename)
            self.out(text)

        loop = s.def_lineno
        at(loop, "{")
        self.indent += 1
        if s.kind == "team_thread_md":
            extents = [f"pk_x{n}_{k}" for k in range(len(s.ends))]
            for name, end in zip(extents, s.ends, strict=True):
                at(loop, f"const int64_t {name} = {self.cast(end, t.int64)};")
            count = " * ".join(f"({e} > 0 ? {e} : 0)" for e in extents)
            begin, end = "0", count
        else:
            begin, end = self.cast(s.begins[0], t.int64), self.cast(s.ends[0], t.int64)
        if split:
            at(loop, f"int64_t pk_lo{n}, pk_hi{n};")
            at(loop, f"pk_rt::team_chunk({team}, {begin}, {end}, &pk_lo{n}, &pk_hi{n});")
        else:
            at(loop, f"const int64_t pk_lo{n} = {begin}, pk_hi{n} = {end};")
        acc = cpp_name(s.acc.name) if s.acc is not None else None
        reducer = s.reducer if s.reducer is not None and s.reducer is not Sum else None
        if s.acc is not None:
            start = "0"
            if reducer is not None:  # each thread starts from the reducer's identity
                reduced = s.acc.type  # infinity: the runtime's, for a float's Min and Max
                infinity = self.literal(math.inf, reduced) if reduced.is_float else ""
                start = reducer.cpp_identity(reduced, infinity)
            at(loop, f"{s.acc.type.ctype} {acc} = {start};")
        scan_passes = s.operation == "scan" and split
        if s.last_pass is not None:
            at(loop, f"bool {cpp_name(s.last_pass.name)} = {'false' if scan_passes else 'true'};")
        if scan_passes:
            assert s.acc is not None and s.last_pass is not None
            at(loop, f"{s.acc.type.ctype} pk_total{n} = 0;")
            at(loop, f"for (int pk_pass{n} = 0; pk_pass{n} < 2; ++pk_pass{n}) {{")
            self.indent += 1
            at(
                s.lineno,
                f"if (pk_pass{n} == 1) {{ {acc} = pk_rt::team_scan({team}, {acc}, &pk_total{n}, "
                f"__FILE__, __LINE__); {cpp_name(s.last_pass.name)} = true; }}",
            )
        at(loop, f"for (int64_t pk_n{n} = pk_lo{n}; pk_n{n} < pk_hi{n}; ++pk_n{n}) {{")
        self.indent += 1
        if s.kind == "team_thread_md":
            rest = f"pk_n{n}"
            for k, var in enumerate(s.indices):
                inner = " * ".join(extents[k + 1 :])
                value = f"({rest} / ({inner}))" if inner else rest
                if k:
                    value = f"({value} % {extents[k]})"
                at(loop, f"{var.type.ctype} {cpp_name(var.name)} = ({var.type.ctype}){value};")
        else:
            var = s.indices[0]
            at(loop, f"{var.type.ctype} {cpp_name(var.name)} = ({var.type.ctype})pk_n{n};")
        self.indent -= 1
        self.nested_body(s.locals, s.body, s.label, (loop, s.end_lineno), filename)
        at(loop, "}")
        if scan_passes:
            self.indent -= 1
            at(loop, "}")
        if s.result is not None and s.acc is not None:
            if s.operation == "scan":
                total = f"pk_total{n}" if scan_passes else acc
            elif split:
                total = _team_total(team, acc, s.acc.type, reducer)
            else:
                total = acc
            at(s.lineno, f"{self.expr(s.result)} = ({s.result.type.ctype})({total});")
        elif s.acc is not None and split and s.operation == "reduce":
            # The total is unused, but the other threads wait for this one's partial.
            at(s.lineno, f"(void){_team_total(team, acc, s.acc.type, reducer)};")
        self.indent -= 1
        at(s.lineno, "}")

    def lanes(self, target: ir.Expr) -> Iterator[None]:
        """Once, or once per lane (with :attr:`lane` set) when ``target`` is a per-lane
        name or the accumulator of an interleaved body."""
        if isinstance(target, ir.Var) and (
            target.name in self.lane_vars or target.name == self.lane_acc
        ):
            for k in range(LANES):
                self.lane = k
                yield
            self.lane = None
        else:
            yield

    def nested(self, body: list[ir.Stmt], filename: str) -> None:
        self.indent += 1
        self.block(body, filename)
        self.indent -= 1

    def for_range(self, s: ir.ForRange, filename: str) -> None:
        c = s.counter
        ctype = s.var.type.ctype
        start = self.cast(s.start, t.int64)
        stop = self.cast(s.stop, t.int64)
        step = self.cast(s.step, t.int64)
        if isinstance(s.step, ir.Const):
            cond = f"{c} < {c}_end" if s.step.value > 0 else f"{c} > {c}_end"
        else:
            cond = f"({c}_step > 0 ? {c} < {c}_end : {c} > {c}_end)"
        self.out(
            f"for (int64_t {c} = {start}, {c}_end = {stop}, {c}_step = {step}; {cond}; "
            f"{c} += {c}_step) {{"
        )
        self.indent += 1
        self.line_directive(s.lineno, filename)
        self.out(" ".join(f"{self.expr(s.var)} = ({ctype}){c};" for _ in self.lanes(s.var)))
        self.block(s.body, filename)
        self.indent -= 1
        self.out("}")

    def print_stmt(self, s: ir.Print) -> None:
        self.uses_print = True
        if not s.python_style:
            fmt, casts = printf_format(s.fmt, len(s.args))
            args = "".join(
                f", ({cast})({self.expr(a)})" for cast, a in zip(casts, s.args, strict=True)
            )
            self.out(f"std::printf({c_string(fmt)}{args}); std::fflush(stdout);")
            return
        # One chain of calls on a temporary Printer (no block, no local: see the prelude).
        calls = []
        for text, value, spec in zip(s.texts, s.args + [None], s.specs + [None], strict=True):
            if text:
                calls.append(f".raw({c_string(text)})")
            if value is not None:
                calls.append(self.print_value(value, spec))
        self.out("pk_rt::Printer()" + "".join(calls) + ".flush();")

    def print_value(self, value: ir.Expr, spec: PrintSpec | None) -> str:
        """The Printer calls that write ``value`` as ``print(f"{value:spec}")`` does."""
        if spec is not None and spec.conversion:
            return f".cformat({c_string(spec.conversion)}, (double)({self.expr(value)}))"
        ctype = _print_ctype(value.type)
        if spec is None:
            return f".value(({ctype})({self.expr(value)}))"
        write = (
            f".in_base(({ctype})({self.expr(value)}), '{spec.base}')"
            if spec.base
            else f".value(({ctype})({self.expr(value)}))"
        )
        zero = "true" if spec.zero else "false"
        return f".mark(){write}.finish('{spec.sign}', {spec.width}, '{spec.align}', {zero})"

    # ------------------------------------------------------------ expressions

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

# Helpers taking views (see CppEmitter.helper_signature); emitted when one does.
HELPER_MACROS = """\
#if PK_DEBUG
#define PK_HELPER_TEMPLATE(...)
#define PK_HELPER_VIEW(V, T, R, C) const pk_rt::View<T, R, C>&
#else
#define PK_HELPER_TEMPLATE(...) template <__VA_ARGS__>
#define PK_HELPER_VIEW(V, T, R, C) const V&
#endif"""


def _is_lvalue(e: ir.Expr) -> bool:
    if isinstance(e, ir.Var):
        return True
    return isinstance(e, ir.FieldAccess) and _is_lvalue(e.base)


def struct_types(functions: list[ir.Function]) -> list[ir.StructType]:
    """The classtypes the functions use, each after the classtypes it holds."""
    found: list[ir.StructType] = []

    def add(tp: object) -> None:
        if isinstance(tp, ir.StructType) and tp not in found:
            for _, ftype in tp.fields:
                add(ftype)
            found.append(tp)

    for fn in functions:
        add(fn.return_type)
        for p in fn.params:
            add(p.type)
        for tp in fn.locals.values():
            add(tp)
        for s in ir.statements(fn.body):
            if isinstance(s, ir.NestedParallel | ir.Single):
                for tp in s.locals.values():
                    add(tp)
    return found


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


def _print_ctype(dtype: DataType) -> str:
    if dtype == t.bool_:
        return "bool"
    if dtype.is_float or dtype.is_complex:  # a complex: Printer's value(complex<T>)
        return dtype.ctype
    return "long long" if dtype.kind == "int" else "unsigned long long"


# ---------------------------------------------------------------- release-only analyses

_PURE_EXPRS = (
    ir.Const, ir.Var, ir.ViewAccess, ir.ViewExtent, ir.BinOp, ir.UnaryOp, ir.Compare,
    ir.BoolOp, ir.Select, ir.Cast, ir.Call,
)  # fmt: skip


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


def interleaved_name(fn: ir.Function) -> str:
    return f"pk_lanes_{cpp_name(fn.name)}"


def interleaved_lanes(fn: ir.Function, operation: str) -> frozenset[str] | None:
    """The names that need one copy per lane when the release build may run ``LANES``
    consecutive indices of this workunit interleaved, statement by statement; None when it
    may not.

    Only for what cannot tell the difference: a ``parallel_reduce`` body that writes no
    view and calls no helper (nothing another index could observe), made of assignments
    to locals, ``if`` and ``for range`` whose conditions and bounds are the same for every
    index ("uniform": they do not depend on the index or on locals that do), with at least
    one loop (the point: a loop-carried chain, like a dot product's additions, that one
    index alone leaves the CPU waiting on), and one top-level ``acc`` update as the only
    use of ``acc`` (so the lanes add to it in index order, the order a thread adds in
    anyway). Every lane then performs exactly its own operations in its own order.
    """
    if operation != "reduce" or fn.written_views:  # helper calls: rejected below
        return None
    index, acc = fn.params[0].name, fn.params[1].name
    stmts = list(ir.statements(fn.body))
    if len(stmts) > 64 or not any(isinstance(s, ir.ForRange) for s in stmts):
        return None
    acc_updates = [
        s
        for s in stmts
        if isinstance(s, ir.Assign | ir.AugAssign)
        and isinstance(s.target, ir.Var)
        and s.target.name == acc
    ]
    if len(acc_updates) != 1 or not any(s is acc_updates[0] for s in fn.body):
        return None
    params = {p.name for p in fn.params}
    for s in stmts:
        if not isinstance(s, ir.Assign | ir.AugAssign | ir.If | ir.ForRange):
            return None
        if isinstance(s, ir.Assign | ir.AugAssign) and (
            not isinstance(s.target, ir.Var)
            or (s.target.name in params and s is not acc_updates[0])
        ):
            return None  # a view element, or a parameter other than acc
        reads = [s.value] if isinstance(s, ir.Assign | ir.AugAssign) else ir.read_expressions(s)
        for e in (sub for top in reads for sub in ir.subexpressions(top)):
            if not isinstance(e, _PURE_EXPRS) or (isinstance(e, ir.Call) and e.user):
                return None
            if isinstance(e, ir.Var) and e.name == acc:
                return None

    def varies(e: ir.Expr, names: set[str]) -> bool:
        return any(isinstance(sub, ir.Var) and sub.name in names for sub in ir.subexpressions(e))

    varying = {index}
    changed = True
    while changed:  # a local varies when any assignment gives it a varying value
        changed = False
        for s in stmts:
            if isinstance(s, ir.Assign | ir.AugAssign):
                name = s.target.name
                if name != acc and name not in varying and varies(s.value, varying):
                    varying.add(name)
                    changed = True
    for s in stmts:
        if isinstance(s, ir.If) and varies(s.cond, varying):
            return None
        if isinstance(s, ir.ForRange) and (
            s.var.name in varying
            or s.var.name in params
            or any(varies(e, varying) for e in ir.read_expressions(s))
        ):
            return None
    return frozenset(varying)


def _team_total(team: str, acc: str, acc_type: DataType, reducer: Reducer | None) -> str:
    """The team's total of a nested reduce over a team-split range: the threads' partials
    added (a sum) or combined with ``reducer``, in team rank order."""
    if reducer is None:
        return f"pk_rt::team_reduce({team}, {acc}, __FILE__, __LINE__)"
    T = acc_type.ctype
    combine = reducer.cpp_combine_of(T).replace("omp_out", "pk_a").replace("omp_in", "pk_b")
    operation = f"[]({T} pk_a, {T} pk_b) {{ return ({T})({combine}); }}"
    return f"pk_rt::team_combine({team}, {acc}, {operation}, __FILE__, __LINE__)"
