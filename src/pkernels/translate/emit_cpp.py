"""Typed kernel IR -> C++ (OpenMP and Serial entry points), a ``#line`` before every statement.

The Python file and line of each statement go into ``#line`` directives, so gdb maps
``break yax.py:9`` natively, backtraces show Python lines, and generated locals keep
their Python names. After each function the line mapping is reset to the generated
file itself (its path is substituted for :data:`GENERATED_PATH` once known).

One source serves both builds. Under ``PK_DEBUG`` the launchers call the body, a real
function, once per index (what gdb and pkdb step through). Release builds (``#if
!PK_DEBUG``) inline the body, run it restrict-qualified when a launch-time check finds
that no written view overlaps another (:func:`_no_alias_condition`), give each thread one
contiguous block of a parallel_for's indices (``schedule(static)``) and run eligible
reductions several indices at a time (:func:`interleaved_lanes`); none of it changes a
result's bits.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..api import types as t
from ..api.reducers import Reducer, Sum
from ..api.types import DataType
from ..build.compiler import GENERATED_PATH
from . import fma_guard, ir
from .builtin_table import DOUBLE, INT64, KEEP, KERNEL_FUNCTIONS
from .cpp_prelude import PRELUDE, TEAM_PRELUDE, atomic_operation_struct
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
    if dtype.is_float:
        return dtype.ctype
    return "long long" if dtype.kind == "int" else "unsigned long long"


# ---------------------------------------------------------------- release-only analyses

_PURE_EXPRS = (
    ir.Const, ir.Var, ir.ViewAccess, ir.ViewExtent, ir.BinOp, ir.UnaryOp, ir.Compare,
    ir.BoolOp, ir.Select, ir.Cast, ir.Call,
)  # fmt: skip


def _stores_in_loops(fn: ir.Function) -> bool:
    """Whether the body stores into a view inside one of its loops. (The launcher's loop
    over the indices gains nothing: restrict holds within one call of the body, one
    index, so g++ still checks for overlap across indices there.)"""
    loops = [s for s in ir.statements(fn.body) if isinstance(s, ir.ForRange | ir.While)]
    return any(
        isinstance(s, ir.Assign | ir.AugAssign) and isinstance(s.target, ir.ViewAccess)
        for loop in loops
        for s in ir.statements(loop.body)
    )


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


def _has_atomics(fn: ir.Function) -> bool:
    return any(
        isinstance(e, ir.AtomicOp)
        for s in ir.statements(fn.body)
        for top in ir.read_expressions(s)
        for e in ir.subexpressions(top)
    )


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


def emit_module(
    kernel: ir.Function,
    helpers: list[ir.Function],
    operation: str,
    index_type: DataType,
    rank: int = 1,
    reducer: Reducer = Sum,
) -> KernelEntry:
    """The whole C++ module for one workunit specialisation. ``rank`` > 1: an
    MDRangePolicy box; the launchers then take ``const int64_t* pk_begins, const int64_t*
    pk_ends`` (``rank`` entries each) where a range's take ``pk_begin, pk_end``. A reduce
    combines the threads' results with ``reducer`` (see :func:`_reduction`)."""
    em = CppEmitter()
    em.lines.append(f"// Generated by pkernels from {kernel.filename}, workunit {kernel.py_name}")
    if fma_guard.may_fuse([*helpers, kernel]):
        em.lines.extend(fma_guard.GUARD.split("\n"))
    em.lines.extend(PRELUDE.strip("\n").split("\n"))
    if rank == TEAM:
        em.lines.extend(TEAM_PRELUDE.strip("\n").split("\n"))
    em.lines.append(f"namespace {KERNEL_NAMESPACE} {{")
    em.struct_definitions(struct_types([*helpers, kernel]))
    if any(isinstance(p.type, ViewType) for h in helpers for p in h.params):
        em.lines.extend(HELPER_MACROS.split("\n"))
    for helper in helpers:
        em.declare(helper)
    for helper in helpers:
        em.function(helper, is_kernel=False)
    em.function(kernel, is_kernel=True)
    # The interleaved lanes add in index order: a sum's only.
    lane_vars = interleaved_lanes(kernel, operation) if rank == 1 and reducer is Sum else None
    if lane_vars is not None:
        em.lines.append("#if !PK_DEBUG")
        em.interleaved_function(kernel, lane_vars)
        em.lines.append("#endif")
        em.reset_line()
    em.lines.append(f"}}  // namespace {KERNEL_NAMESPACE}")

    marshalled = [p for p in kernel.params if p.role == "arg"]
    acc = next((p for p in kernel.params if p.role == "acc"), None)
    acc_type = acc.type if acc is not None else None
    if acc_type is not None:
        em.lines.extend(_reduction(reducer, acc_type))
    if rank == 1:
        c_params = ["int64_t pk_begin", "int64_t pk_end", "void* pk_result"]
        c_names = ["pk_begin", "pk_end", "pk_result"]
    elif rank == TEAM:
        # pk_team: TeamPolicy.launch_spec(); the second pointer is unused.
        c_params = ["const int64_t* pk_team", "const int64_t* pk_unused", "void* pk_result"]
        c_names = ["pk_team", "pk_unused", "pk_result"]
    else:
        c_params = ["const int64_t* pk_begins", "const int64_t* pk_ends", "void* pk_result"]
        c_names = ["pk_begins", "pk_ends", "pk_result"]
    build_views = []
    call_args = []
    slots: list[str] = []  # each C argument after the first three, from a packed slot
    for p in marshalled:
        name = cpp_name(p.name)
        if isinstance(p.type, ViewType):
            v = p.type
            names = [f"{name}_data"]
            names += [f"{name}_e{k}" for k in range(v.rank)]
            names += [f"{name}_s{k}" for k in range(v.rank)]
            c_params.append(f"{v.dtype.ctype}* {name}_data")
            c_params += [f"int64_t {n}" for n in names[1:]]
            c_names += names
            slots.append(f"({v.dtype.ctype}*)(intptr_t)")
            slots += [""] * (2 * v.rank)
            extents = ", ".join(f"{name}_e{k}" for k in range(v.rank))
            strides = ", ".join(f"{name}_s{k}" for k in range(v.rank))
            build_views.append(
                f"    const {view_cpp_type(v)} {name}{{{name}_data, {{{extents}}}, {{{strides}}}}};"
            )
        else:
            c_params.append(f"{p.type.ctype} {name}")
            c_names.append(name)
            slots.append(_slot_cast(p.type))
        call_args.append(name)
    kname = f"{KERNEL_NAMESPACE}::{cpp_name(kernel.name)}"
    args = "".join(", " + a for a in call_args)
    if rank == 1:
        idx = f"({index_type.ctype})pk_i"
    elif rank == TEAM:
        idx = "pk_tm"
    else:
        idx = ", ".join(
            f"({p.type.ctype})pk_i{k}"
            for k, p in enumerate(kernel.params[:rank])  # type: ignore[union-attr]
        )
    release = _ReleaseLaunch(kernel, marshalled, kname, idx, acc_type, lane_vars, rank)
    if any(_has_atomics(h) for h in helpers):
        release.no_alias = "false"  # a helper's atomics share elements among indices
    # Release for/reduce: one function serves both spaces (`omp ... if(pk_parallel)`), so
    # the inlined body is compiled once per alias variant rather than once per space.
    shared = operation in ("for", "reduce") and rank != TEAM
    wide = shared and has_wide_variant(operation, release.no_alias)
    if shared:
        em.lines.append("#if !PK_DEBUG")
        em.lines.append(f"static void pk_run(bool pk_parallel, {', '.join(c_params)}) {{")
        em.lines.extend(build_views)
        em.lines.extend(release.body(operation, "pk_parallel"))
        em.lines.append("}")
        em.lines.append("#endif")
    if wide:
        em.lines.extend(_wide_variant(c_params, c_names, build_views, release.wide_loops(c_names)))
    symbols = {}
    for space, parallel in (("openmp", True), ("serial", False)):
        symbol = f"pk_launch_{space}"
        symbols[space] = symbol
        em.lines.append(
            f'extern "C" __attribute__((visibility("default"))) void {symbol}('
            + ", ".join(c_params)
            + ") {"
        )
        em.lines.append("#if PK_DEBUG")
        em.lines.extend(build_views)
        em.lines.append("    pk_fault_clear();")
        if rank == TEAM:
            em.lines.extend(_team_launch_body(parallel, kname, args, acc_type, kernel.filename))
        elif rank == 1:
            em.lines.extend(_launch_body(operation, parallel, kname, idx, args, acc_type))
        else:
            em.lines.extend(_md_launch_body(operation, parallel, rank, kname, idx, args, acc_type))
        em.lines.append("#else")
        if shared:
            em.lines.append(f"    pk_run({'true' if parallel else 'false'}, {', '.join(c_names)});")
        elif rank == TEAM:
            # Teams synchronise through barriers: no restrict-qualified variant.
            em.lines.extend(build_views)
            em.lines.append("    pk_fault_clear();")
            em.lines.extend(
                _team_launch_body(parallel, f"{kname}<false>", release.call_args("false"),
                                  acc_type, kernel.filename)
            )  # fmt: skip
        else:
            em.lines.extend(build_views)
            em.lines.extend(release.body(operation, parallel))
        em.lines.append("#endif")
        em.lines.append("}")
        if rank == 1:
            em.lines.extend(_packed_entry(symbol, slots))
    if wide and rank == 1:
        em.lines.append(WIDE_GUARD)
        em.lines.extend(_packed_entry(WIDE_SYMBOL, slots)[1:])  # inside the guard
    if has_hybrid_launch(operation, rank) and rank == 1:
        em.lines.extend(
            _hybrid_entries(operation, c_params, c_names, build_views, release, kname, args)
        )
    elif has_hybrid_launch(operation, rank):
        em.lines.extend(
            _md_hybrid_entries(rank, c_params, c_names, build_views, release, kname, args)
        )
    kinds, subviews = debugger_names(kernel, helpers)
    return KernelEntry(
        "\n".join(em.lines) + "\n",
        marshalled,
        acc_type,
        em.uses_print,
        symbols,
        kname,
        kinds,
        frozenset(kernel.written_views),
        rank,
        subviews=subviews,
        converts_floats=em.converts_floats,
    )


def debugger_names(
    kernel: ir.Function, helpers: list[ir.Function]
) -> tuple[dict[str, str], dict[str, Any]]:
    """What a debugger needs to show a kernel's variables as Python values: each
    scalar's kind (``"float"``, ``"float32"``, ``"int"``, ``"bool"``: gdb prints 0.0 as
    0; ``"complex64"``, ``"complex128"``: the runtime's struct) and the subviews by name
    (their ``describe()``), the kernel's own names winning over its helpers' (every
    backend's entry carries them)."""
    scalars: dict[str, DataType] = {}
    for fn in [*helpers, kernel]:  # the kernel's own names win over its helpers'
        scalars.update({p.name: p.type for p in fn.params if isinstance(p.type, DataType)})
        for s in ir.statements(fn.body):  # nested bodies' locals (kernel's own names win)
            if isinstance(s, ir.NestedParallel | ir.Single):
                scalars.update(s.locals)
            if isinstance(s, ir.NestedParallel):
                scalars.update({v.name: v.type for v in (*s.indices, s.acc, s.last_pass) if v})
        scalars.update(fn.locals)
    kinds = {name: _kind(dtype) for name, dtype in scalars.items() if isinstance(dtype, DataType)}
    subviews = {name: d for fn in [*helpers, kernel] for name, d in fn.subviews.items()}
    return kinds, subviews


def _kind(dtype: DataType) -> str:
    if dtype == t.float32 or dtype.is_complex:
        return dtype.name  # float32, complex64, complex128
    return "float" if dtype.is_float else "bool" if dtype == t.bool_ else "int"


class _ReleaseLaunch:
    """The launch loops of a release build: views passed by value, restrict-qualified
    (``<true>``) when a check at launch finds that no view the kernel writes overlaps
    another view, the plain body (``<false>``) otherwise; reduce through the interleaved
    body when :func:`interleaved_lanes` allows it; parallel_for in one block per thread."""

    def __init__(
        self,
        kernel: ir.Function,
        marshalled: list[ir.Param],
        kname: str,
        idx: str,
        acc: DataType | None,
        lane_vars: frozenset[str] | None,
        rank: int = 1,
    ) -> None:
        self.kernel, self.marshalled, self.kname, self.idx = kernel, marshalled, kname, idx
        self.acc, self.lane_vars, self.rank = acc, lane_vars, rank
        views = [p for p in marshalled if isinstance(p.type, ViewType)]
        self.no_alias = _no_alias_condition(kernel, views)

    def body(self, operation: str, parallel: bool | str) -> list[str]:
        """``parallel``: True, False or the name of a bool (``omp ... if(name)``)."""
        return [
            "    pk_fault_clear();",
            *self.per_variant(lambda na, args: self._loops(operation, parallel, na, args)),
        ]

    def _loops(self, operation: str, parallel: bool | str, na: str, args: str) -> list[str]:
        kname = f"{self.kname}<{na}>"
        if self.rank > 1:
            return _md_launch_body(operation, parallel, self.rank, kname, self.idx, args, self.acc)
        if operation == "reduce" and self.lane_vars is not None:
            lanes = f"{KERNEL_NAMESPACE}::{interleaved_name(self.kernel)}<{na}>"
            return _interleaved_reduce_body(parallel, kname, lanes, self.idx, args, self.acc)
        # parallel_for: one contiguous block of indices per thread (schedule(static), as
        # Kokkos' default): neighbouring indices share data (a stencil's planes, a row's
        # cache lines) that chunks dealt out in turn (schedule(dynamic)) split between
        # threads. Measured with bench_kernels.py on 2 cores: stencil7 +2-3%, LJ +3%.
        if isinstance(parallel, str):
            body = _launch_body(operation, True, kname, self.idx, args, self.acc)
            return [_omp_if(line, parallel) for line in body]
        return _launch_body(operation, parallel, kname, self.idx, args, self.acc)

    def wide_loops(self, c_names: list[str]) -> list[str]:
        """The OpenMP for loops of ``pk_run_wide``: the restrict-qualified variant only;
        views that overlap run the plain ``pk_run`` (each variant compiled anew is
        another copy of the body for g++ to optimise, and overlapping views are rare)."""
        lines = ["    pk_fault_clear();"]
        loops = self._loops("for", True, "true", self.call_args("true"))
        if self.no_alias == "true":
            return lines + loops
        return [
            *lines,
            f"    if (!({self.no_alias})) {{",
            f"        pk_run(true, {', '.join(c_names)});",
            "        return;",
            "    }",
            *loops,
        ]

    def call_args(self, na: str) -> str:
        """The arguments after the index of a call of the body's ``<na>`` variant."""
        return "".join(
            f", pk_rt::view_arg<{na}>({cpp_name(p.name)})"
            if isinstance(p.type, ViewType)
            else f", {cpp_name(p.name)}"
            for p in self.marshalled
        )

    def per_variant(self, body_of: Callable[[str, str], list[str]], indent: str = "") -> list[str]:
        """``body_of(na, call_args(na))`` for the alias variant known in advance, or for
        both, behind the launch-time overlap check."""
        if self.no_alias in ("true", "false"):
            na = self.no_alias
            return [indent + line for line in body_of(na, self.call_args(na))]
        lines = []
        for na in ("true", "false"):
            lines.append(
                indent + (f"    if ({self.no_alias}) {{" if na == "true" else "    } else {")
            )
            lines += [indent + "    " + line for line in body_of(na, self.call_args(na))]
        lines.append(indent + "    }")
        return lines


#: The OpenMP launcher of a kernel's wide-vector variant (see :func:`has_wide_variant`).
WIDE_SYMBOL = "pk_launch_openmp_wide"
# Only where -march=native gives AVX-512: elsewhere the variant would be the same code.
WIDE_GUARD = "#if !PK_CHECKS && defined(__AVX512F__)"  # not in debug or checked builds


def has_wide_variant(operation: str, no_alias: str) -> bool:
    """Whether a release build also holds ``pk_launch_openmp_wide``: the same launch loops
    compiled for 512-bit vectors, which pkernels.runtime.launch times against the plain
    (256-bit) ones at the first launches and keeps the faster of.

    A parallel_for that stores into views inside its loops (``no_alias`` not "false")
    vectorises those loops, and there which width wins depends on the arrays' sizes
    against the caches, known at run time only (bench/bench_vector_width.py: a 192³
    7-point stencil 1.08x faster with 512 bits, a variable-coefficient one 1.18x, a 96³
    one 0.99x, a radius-2 one 0.97x, a 3D map 0.93x). Both variants give the same bits:
    without -ffast-math g++ vectorises no floating-point reduction and calls no vector
    math library, so each element is computed by the same operations either way.
    Reductions are left out: their interleaved lanes are scalar code, which 512-bit
    tuning only slows (dot product 0.70x)."""
    return operation == "for" and no_alias != "false"


def _wide_variant(
    c_params: list[str], c_names: list[str], build_views: list[str], loops: list[str]
) -> list[str]:
    """``pk_run_wide`` (the parallel loops of ``pk_run``, compiled to prefer 512-bit
    vectors; g++ inlines the always_inline body into it) and its ``extern "C"`` launcher."""
    return [
        WIDE_GUARD,
        '__attribute__((target("prefer-vector-width=512")))',
        f"static void pk_run_wide({', '.join(c_params)}) {{",
        *build_views,
        *loops,
        "}",
        f'extern "C" __attribute__((visibility("default"))) void {WIDE_SYMBOL}('
        + ", ".join(c_params)
        + ") {",
        f"    pk_run_wide({', '.join(c_names)});",
        "}",
        "#endif",
    ]


def has_hybrid_launch(operation: str, rank: int) -> bool:
    """Whether a module has the two halves of a HYBRID launch: a range for or reduce, an
    MDRangePolicy box's for. (A box's reduce would split its indices among the threads
    otherwise than its debug build does; scans and teams have none.)"""
    return (rank == 1 and operation in ("for", "reduce")) or (rank > 1 and operation == "for")


#: Indices a hybrid launch's release code runs between two looks at its debug request.
HYBRID_BLOCK = 16


#: ``chunk_done``'s hook in a hybrid launcher.
_CHUNK_DONE = [
    "// Each thread calls it when its indices are done, before OpenMP's barrier: a",
    "// debugger stepping a thread out of its last index stops it here (pkdb does).",
    'extern "C" __attribute__((noinline, visibility("default"))) void pk_hybrid_chunk_done() {',
    '    __asm__ volatile("");',
    "}",
]


def _hybrid_head(
    leading: list[str],
    c_params: list[str],
    build_views: list[str],
    call: str,
    chunk_done: bool = False,
) -> list[str]:
    """What both kinds of hybrid launch share: the debug build's ``pk_iteration``, taking
    ``leading`` (the indices, a reduce's accumulator) then the kernel's arguments and
    making ``call``; and the opening of ``pk_launch_hybrid`` in a ``PK_HYBRID`` build,
    up to its views and ``pk_slow``, the debug build's entry (preceded, with
    ``chunk_done``, by ``pk_hybrid_chunk_done``, which the launcher must call)."""
    arg_params = c_params[3:]
    types = [param.rsplit(" ", 1)[0] for param in [*leading, *arg_params]]
    return [
        "#if PK_DEBUG",
        'extern "C" __attribute__((visibility("default"))) void pk_iteration('
        + ", ".join([*leading, *arg_params])
        + ") {",
        *build_views,
        f"    {call}",
        "}",
        "#endif",
        "#if PK_HYBRID",
        f"typedef void (*pk_iteration_fn)({', '.join(types)});",
        *(_CHUNK_DONE if chunk_done else []),
        'extern "C" __attribute__((visibility("default"))) void pk_launch_hybrid('
        + ", ".join(
            [
                "const volatile int* pk_to_debug",
                "void* pk_debug_index",
                "const unsigned char* pk_debug_mask",
                "bool pk_parallel",
            ]
            + c_params
        )
        + ") {",
        *build_views,
        "    const pk_iteration_fn pk_slow = (pk_iteration_fn)pk_debug_index;",
    ]


def _hybrid_entries(
    operation: str,
    c_params: list[str],
    c_names: list[str],
    build_views: list[str],
    release: _ReleaseLaunch,
    kname: str,
    args: str,
) -> list[str]:
    """The two halves of a hybrid launch (BuildMode.HYBRID) of a range for or reduce.

    The debug build exports ``pk_iteration``: one index in debug code (adding to
    ``*pk_acc`` for a reduce). A build with ``PK_HYBRID`` exports ``pk_launch_hybrid``:
    the release loop, in blocks of :data:`HYBRID_BLOCK` indices; once ``*pk_to_debug`` is
    set (a debugger wants to stop in the kernel), each thread hands its remaining indices,
    one at a time, to the debug build's ``pk_iteration``. Until then, where
    ``pk_debug_mask`` is not null, index ``i`` runs in the debug build when
    ``pk_debug_mask[i - pk_begin]`` is not 0 (a debugger's breakpoint condition holds
    only there), the others in release code; such a loop looks at ``*pk_to_debug`` at
    every index, so that a thread stepped past the end of one index in the debug build
    runs its next one there too. The indices of a parallel_for
    are independent, and a reduce's thread adds its indices in order, in the chunk the
    release and debug launchers give it (``schedule(static)``), whichever code runs them:
    which build runs which index changes no result (OpenMP then adds the threads'
    partial sums in the order they finish, as in the other launchers)."""
    reduce = operation == "reduce"
    acc = release.acc.ctype if reduce and release.acc is not None else ""
    leading = ["int64_t pk_i", *([f"{acc}* pk_acc"] if reduce else [])]
    call = f"{kname}({release.idx}{', *pk_acc' if reduce else ''}{args});"
    lines = _hybrid_head(leading, c_params, build_views, call, chunk_done=True)
    # Each thread runs the indices schedule(static) gives it in the release and debug
    # launchers (the same thread for the same index whichever code runs it), in blocks.
    # (A dynamic schedule here made some runs of a stencil 2x slower.)
    lines += [
        *([f"    {acc} pk_total = PK_REDUCE_INIT;"] if reduce else []),
        "    #pragma omp parallel "
        + ("reduction(PK_REDUCE:pk_total) " if reduce else "")
        + "if(pk_parallel)",
        "    {",
        "        int64_t pk_first = pk_begin, pk_last = pk_end;",
        "        if (pk_parallel) pk_rt::static_chunk(pk_begin, pk_end, &pk_first, &pk_last);",
    ]
    loop = [
        f"    for (int64_t pk_lo = pk_first; pk_lo < pk_last; pk_lo += {HYBRID_BLOCK}) {{",
        f"        const int64_t pk_hi = pk_last - pk_lo > {HYBRID_BLOCK} "
        f"? pk_lo + {HYBRID_BLOCK} : pk_last;",
    ]
    slow_args = ", &pk_total" if reduce else ""
    slow_args += "".join(", " + name for name in c_names[3:])

    def blocks(na: str, args: str) -> list[str]:
        fast_args = (", pk_total" if reduce else "") + args
        return [
            *loop,
            "        if (__builtin_expect(*pk_to_debug != 0, 0)) {",
            "            for (int64_t pk_i = pk_lo; pk_i < pk_hi; ++pk_i)",
            f"                pk_slow(pk_i{slow_args});",
            "        } else if (pk_debug_mask != nullptr) {",
            "            for (int64_t pk_i = pk_lo; pk_i < pk_hi; ++pk_i) {",
            "                if (*pk_to_debug != 0 || pk_debug_mask[pk_i - pk_begin])",
            f"                    pk_slow(pk_i{slow_args});",
            "                else",
            f"                    {kname}<{na}>({release.idx}{fast_args});",
            "            }",
            "        } else {",
            "            for (int64_t pk_i = pk_lo; pk_i < pk_hi; ++pk_i)",
            f"                {kname}<{na}>({release.idx}{fast_args});",
            "        }",
            "    }",
        ]

    lines += release.per_variant(blocks, indent="    ")
    lines += ["        pk_hybrid_chunk_done();", "    }"]
    if reduce:
        lines += [f"    *({acc}*)pk_result = pk_total;"]
    return [*lines, "}", "#endif"]


def _md_hybrid_entries(
    rank: int,
    c_params: list[str],
    c_names: list[str],
    build_views: list[str],
    release: _ReleaseLaunch,
    kname: str,
    args: str,
) -> list[str]:
    """:func:`_hybrid_entries` for an MDRangePolicy box's parallel_for: ``pk_iteration``
    takes the ``rank`` indices; the release loop looks at the debug request once per row
    of the innermost index (the loop g++ vectorises), so a thread hands over at most the
    rest of the row it is in. Boxes take no ``pk_debug_mask`` (the launcher passes null)."""
    indices = [f"pk_i{k}" for k in range(rank)]
    last = rank - 1
    lines = _hybrid_head(
        [f"int64_t {i}" for i in indices], c_params, build_views, f"{kname}({release.idx}{args});"
    )
    lines += [
        *(
            f"    const int64_t pk_b{k} = pk_begins[{k}], "
            f"pk_e{k} = pk_ends[{k}] > pk_b{k} ? pk_ends[{k}] : pk_b{k};"
            for k in range(rank)
        ),
    ]
    slow_args = "".join(", " + name for name in c_names[3:])
    row = f"for (int64_t pk_i{last} = pk_b{last}; pk_i{last} < pk_e{last}; ++pk_i{last})"
    inner = "    " * rank

    def rows(na: str, args: str) -> list[str]:
        return [
            f"    #pragma omp parallel for collapse({last}) schedule(static) if(pk_parallel)",
            *(
                "    " * (d + 1) + f"for (int64_t pk_i{d} = pk_b{d}; pk_i{d} < pk_e{d}; ++pk_i{d})"
                for d in range(last)
            ),
            inner + "{",
            inner + "    if (__builtin_expect(*pk_to_debug != 0, 0)) {",
            inner + f"        {row}",
            inner + f"            pk_slow({', '.join(indices)}{slow_args});",
            inner + "    } else {",
            inner + f"        {row}",
            inner + f"            {kname}<{na}>({release.idx}{args});",
            inner + "    }",
            inner + "}",
        ]

    return [*lines, *release.per_variant(rows), "}", "#endif"]


def _omp_if(line: str, condition: str) -> str:
    """``line`` with an ``if(condition)`` clause when it is an OpenMP parallel directive."""
    if line.strip().startswith("#pragma omp parallel"):
        return f"{line} if({condition})"
    return line


def _no_alias_condition(kernel: ir.Function, views: list[ir.Param]) -> str:
    """A C++ condition under which no view the kernel writes overlaps another view: then
    its data pointer may be ``__restrict__``. "true" / "false" when known in advance."""
    if _has_atomics(kernel):
        return "false"  # atomics are how indices share elements: keep every access plain
    if not _stores_in_loops(kernel):
        # The check pays where stores sit in a loop of the body that g++ can vectorise;
        # elsewhere (a force loop writing its result after its loop) it gains nothing,
        # and each variant is another copy of the body to compile.
        return "false"
    written = [p for p in views if p.name in kernel.written_views]
    checks = []
    for k, w in enumerate(written):
        for v in views:
            if v is w or (v in written and written.index(v) < k):
                continue
            checks.append(
                f"!pk_rt::overlap(pk_rt::span({cpp_name(w.name)}), pk_rt::span({cpp_name(v.name)}))"
            )
    return " && ".join(checks) if checks else "true"


def _interleaved_reduce_body(
    parallel: bool | str, kname: str, lanes: str, idx: str, args: str, acc: DataType | None
) -> list[str]:
    """A reduce launcher that runs each thread's indices ``LANES`` at a time. Each thread
    walks the chunk ``schedule(static)`` would give it, adding to its partial sum in index
    order, so the total is the one the plain launcher computes."""
    assert acc is not None
    T = acc.ctype
    lines = [f"    {T} pk_total = PK_REDUCE_INIT;"]
    if parallel is not False:
        clause = f" if({parallel})" if isinstance(parallel, str) else ""
        lines += [f"    #pragma omp parallel reduction(PK_REDUCE:pk_total){clause}", "    {"]
    lines += [
        "        int64_t pk_lo = pk_begin, pk_hi = pk_end;",
        "        pk_rt::static_chunk(pk_begin, pk_end, &pk_lo, &pk_hi);" if parallel else "",
        "        int64_t pk_i = pk_lo;",
        f"        for (; pk_hi - pk_i >= {LANES}; pk_i += {LANES}) {lanes}(pk_i, pk_total{args});",
        f"        for (; pk_i < pk_hi; ++pk_i) {kname}({idx}, pk_total{args});",
    ]
    if parallel is not False:
        lines.append("    }")
    lines.append(f"    *({T}*)pk_result = pk_total;")
    return [line for line in lines if line]


def _md_launch_body(
    operation: str,
    parallel: bool | str,
    rank: int,
    kname: str,
    idx: str,
    args: str,
    acc: DataType | None,
) -> list[str]:
    """The launch loops of an MDRangePolicy box (for and reduce): ``rank`` nested loops,
    ``collapse``d into one OpenMP loop. ``parallel``: True, False or the name of a bool
    (``omp ... if(name)``). Debug builds call the body on a line of its own, below the
    innermost loop header, as the one-dimensional launcher does."""
    lines = [
        f"    const int64_t pk_b{k} = pk_begins[{k}], "
        f"pk_e{k} = pk_ends[{k}] > pk_b{k} ? pk_ends[{k}] : pk_b{k};"
        for k in range(rank)
    ]
    clause = f" if({parallel})" if isinstance(parallel, str) else ""
    if operation == "for":
        call = f"{kname}({idx}{args});"
        # One block per thread, as a range's parallel_for (see _ReleaseLaunch._loops).
        pragma = f"    #pragma omp parallel for collapse({rank}) schedule(static){clause}"
    else:
        assert operation == "reduce" and acc is not None
        call = f"{kname}({idx}, pk_total{args});"
        lines.append(f"    {acc.ctype} pk_total = PK_REDUCE_INIT;")
        pragma = (
            f"    #pragma omp parallel for collapse({rank}) schedule(static) "
            f"reduction(PK_REDUCE:pk_total){clause}"
        )
    if parallel is not False:
        lines.append(pragma)
    for k in range(rank):
        lines.append(
            "    " * (k + 1) + f"for (int64_t pk_i{k} = pk_b{k}; pk_i{k} < pk_e{k}; ++pk_i{k})"
        )
    lines.append("    " * (rank + 1) + call)
    if operation == "reduce":
        lines.append(f"    *({acc.ctype}*)pk_result = pk_total;")
    return lines


def _team_launch_body(
    parallel: bool, kname: str, args: str, acc: DataType | None, filename: str
) -> list[str]:
    """The launch of a TeamPolicy workunit: ``team_size`` threads per team, as many teams
    at once as the threads allow, each running its share of the league (TEAM_PRELUDE).
    Debug builds call the body on a line of its own, below the loop header."""
    file = c_string(filename)
    call = f"{kname}(pk_tm{', pk_total' if acc is not None else ''}{args});"
    lines = [f"    pk_rt::TeamLaunch pk_tl(pk_team, {'true' if parallel else 'false'}, {file});"]
    if acc is not None:
        lines.append(f"    {acc.ctype} pk_total = PK_REDUCE_INIT;")
    if parallel:
        reduction = " reduction(PK_REDUCE:pk_total)" if acc is not None else ""
        lines.append(f"    #pragma omp parallel num_threads(pk_tl.threads()){reduction}")
        member = "omp_get_thread_num(), omp_get_num_threads()"
    else:
        member = "0, 1"
    lines += [
        "    {",
        "        pk_rt::TeamMember pk_tm;",
        "        int64_t pk_lo, pk_hi;",
        f"        if (pk_tl.member({member}, &pk_tm, &pk_lo, &pk_hi))",
        "            for (int64_t pk_l = pk_lo; pk_l < pk_hi; ++pk_l) {",
        "                pk_rt::TeamLaunch::start(pk_tm, pk_l);",
        f"                {call}",
        f"                pk_rt::team_barrier(pk_tm, {file}, pk_rt::TEAM_END_OF_WORKUNIT);",
        "            }",
        "    }",
    ]
    if acc is not None:
        lines.append(f"    *({acc.ctype}*)pk_result = pk_total;")
    return lines


def _slot_cast(dtype: DataType) -> str:
    """How a packed entry turns a slot (int64 bits) back into a scalar argument: floats
    travel as the bits of a double (as Python holds them), the rest as integers."""
    if dtype.is_float:
        return f"({dtype.ctype})pk_rt::slot_double"
    if dtype == t.bool_:
        return "(bool)"
    return f"({dtype.ctype})"


def _packed_entry(symbol: str, slots: list[str]) -> list[str]:
    """``<symbol>_packed(const int64_t* pk_a)``: the launch symbol with its arguments in
    one array of 64-bit slots (begin, end, result, then each argument as marshal.py
    flattens it), for pkernels.runtime._launch, which marshals in C. Release builds only."""
    args = ["pk_a[0]", "pk_a[1]", "(void*)(intptr_t)pk_a[2]"]
    args += [f"{cast}(pk_a[{k + 3}])" for k, cast in enumerate(slots)]
    return [
        "#if !PK_DEBUG",
        f'extern "C" __attribute__((visibility("default"))) void {symbol}_packed('
        "const int64_t* pk_a) {",
        f"    {symbol}({', '.join(args)});",
        "}",
        "#endif",
    ]


def _reduction(reducer: Reducer, acc: DataType | ir.StructType) -> list[str]:
    """``PK_REDUCE``, the OpenMP reduction the launchers combine the threads' results
    with, and ``PK_REDUCE_INIT``, the value each starts from: ``+`` and 0 for a sum, else
    a reduction declared with the reducer's operation and identity (a scan's running
    total is always a sum)."""
    if reducer is Sum:
        return ["#define PK_REDUCE +", "#define PK_REDUCE_INIT 0"]
    T = acc.ctype
    reduced = ir.reduced_type(acc)
    identity = reducer.cpp_identity(reduced, f"({reduced.ctype})HUGE_VAL", T)
    return [
        *_accumulator_name(acc),
        f"#pragma omp declare reduction(pk_reducer : {T} : "
        f"omp_out = ({T})({reducer.cpp_combine_of(T)})) initializer(omp_priv = {identity})",
        "#define PK_REDUCE pk_reducer",
        f"#define PK_REDUCE_INIT {identity}",
    ]


def _team_total(team: str, acc: str, acc_type: DataType, reducer: Reducer | None) -> str:
    """The team's total of a nested reduce over a team-split range: the threads' partials
    added (a sum) or combined with ``reducer``, in team rank order."""
    if reducer is None:
        return f"pk_rt::team_reduce({team}, {acc}, __FILE__, __LINE__)"
    T = acc_type.ctype
    combine = reducer.cpp_combine_of(T).replace("omp_out", "pk_a").replace("omp_in", "pk_b")
    operation = f"[]({T} pk_a, {T} pk_b) {{ return ({T})({combine}); }}"
    return f"pk_rt::team_combine({team}, {acc}, {operation}, __FILE__, __LINE__)"


def _accumulator_name(acc: DataType | ir.StructType) -> list[str]:
    """The launchers, outside the kernel's namespace, name a reducer's accumulator struct."""
    if isinstance(acc, ir.StructType):
        return [f"using {KERNEL_NAMESPACE}::{acc.ctype};"]
    return []


def _launch_body(
    operation: str, parallel: bool, kname: str, idx: str, args: str, acc: DataType | None
) -> list[str]:
    omp = "    #pragma omp parallel for schedule(static)" if parallel else ""
    # The loop header and the call are on separate lines: a debugger stepping out of one
    # iteration stops on the header, and `step` from there enters the next iteration.
    loop = "    for (int64_t pk_i = pk_begin; pk_i < pk_end; ++pk_i)"
    if operation == "for":
        return [omp, loop, f"        {kname}({idx}{args});"]
    assert acc is not None
    T = acc.ctype
    if operation == "reduce":
        red = (
            "    #pragma omp parallel for schedule(static) reduction(PK_REDUCE:pk_total)"
            if parallel
            else ""
        )
        return [
            f"    {T} pk_total = PK_REDUCE_INIT;",
            red,
            loop,
            f"        {kname}({idx}, pk_total{args});",
            f"    *({T}*)pk_result = pk_total;",
        ]
    if not parallel:
        return [
            f"    {T} pk_acc = 0;",
            loop,
            f"        {kname}({idx}, pk_acc, true{args});",
            f"    *({T}*)pk_result = pk_acc;",
        ]
    # Two-pass parallel scan: per-thread chunk totals, their exclusive prefix, final pass.
    return [
        "    const int pk_max_threads = omp_get_max_threads();",
        f"    {T}* pk_partial = new {T}[pk_max_threads + 1]();",
        "    int pk_nthreads = 1;",
        "    #pragma omp parallel",
        "    {",
        "        const int pk_tid = omp_get_thread_num();",
        "        const int pk_n = omp_get_num_threads();",
        "        const int64_t pk_len = pk_end > pk_begin ? pk_end - pk_begin : 0;",
        "        const int64_t pk_chunk = (pk_len + pk_n - 1) / pk_n;",
        "        const int64_t pk_lo = pk_begin + pk_tid * pk_chunk;",
        "        const int64_t pk_hi = pk_lo + pk_chunk < pk_end ? pk_lo + pk_chunk : pk_end;",
        f"        {T} pk_acc = 0;",
        "        for (int64_t pk_i = pk_lo; pk_i < pk_hi; ++pk_i)",
        f"            {kname}({idx}, pk_acc, false{args});",
        "        pk_partial[pk_tid + 1] = pk_acc;",
        "        #pragma omp barrier",
        "        #pragma omp single",
        "        {",
        "            pk_nthreads = pk_n;",
        "            for (int k = 1; k <= pk_n; ++k) pk_partial[k] += pk_partial[k - 1];",
        "        }",
        "        pk_acc = pk_partial[pk_tid];",
        "        for (int64_t pk_i = pk_lo; pk_i < pk_hi; ++pk_i)",
        f"            {kname}({idx}, pk_acc, true{args});",
        "    }",
        f"    *({T}*)pk_result = pk_partial[pk_nthreads];",
        "    delete[] pk_partial;",
    ]
