"""Typed kernel IR -> C++ statements and expressions, a ``#line`` before every statement.

The Python file and line of each statement go into ``#line`` directives, so gdb maps
``break yax.py:9`` natively, backtraces show Python lines, and generated locals keep
their Python names. After each function the line mapping is reset to the generated
file itself (its path is substituted for :data:`GENERATED_PATH` once known).

:class:`CppEmitter` writes a workunit's body and helpers (their expressions:
:mod:`.emit_exprs`; release builds' interleaved bodies: :mod:`.interleave`);
:mod:`.emit_launch` puts them into the module with the ``extern "C"`` launchers of each
space and what the release, debug and hybrid builds add around them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..api import types as t
from ..api.reducers import Reducer, Sum
from ..api.types import DataType
from ..build.compiler import GENERATED_PATH
from . import ir
from .emit_exprs import CppExpressions, c_string, cpp_name
from .interleave import LANES, interleaved_name
from .ir import ViewType
from .printf import PrintSpec, printf_format

TEAM = 0  # the `rank` of a TeamPolicy module (kernel.py's TEAM)
#: The C++ name a copied helper parameter arrives under (CppEmitter.copied_param);
#: debuggers leave ``pk_`` names out of a frame's variables.
COPIED_PARAM_PREFIX = "pk_arg_"


def view_cpp_type(view: ViewType) -> str:
    """The runtime's View of ``view``; its layout as the number gdb prints it."""
    return f"pk_rt::View<{view.dtype.ctype}, {view.rank}, {int(view.layout)}>"


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
    # Whether a helper calls itself, directly or through others (ir.Function).
    recursive_helpers: bool = False


class CppEmitter(CppExpressions):
    """Functions, structs and statements of the C++ backend, one ``#line`` before each
    statement (expressions: :class:`~.emit_exprs.CppExpressions`)."""

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
            return f"PK_VIEW_ARG({v.dtype.ctype}, {v.rank}, {int(v.layout)}) {cpp_name(p.name)}"
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
                layout = int(v.layout)
                params.append(
                    f"PK_HELPER_VIEW(PK_V{views}, {v.dtype.ctype}, {v.rank}, {layout}) {name}"
                )
                views += 1
            elif isinstance(p.type, ir.StructType):
                params.append(f"{p.type.ctype}& {name}")
            elif self.copied_param(p):
                params.append(f"{p.type.ctype} {COPIED_PARAM_PREFIX}{name}")
            else:
                params.append(self.param_decl(p))
        template = ""
        if views:
            names = ", ".join(f"typename PK_V{k}" for k in range(views))
            template = f"PK_HELPER_TEMPLATE({names}) "
        ret = fn.return_type.ctype if fn.return_type is not None else "void"
        return f"{template}static inline {ret} {cpp_name(fn.name)}({', '.join(params)})"

    def team_share(
        self, s: ir.NestedParallel, n: str, team: str, begin: str, end: str
    ) -> tuple[list[str], str]:
        """This thread's share of a team-split range [begin, end): the lines that set
        ``pk_lo<n>`` and ``pk_hi<n>``, and the loop's increment of ``pk_n<n>``. Here a
        contiguous chunk per team rank, in rank order (team_combine.hpp's team_chunk),
        which reductions and scans combine bit for bit alike on every backend."""
        return [
            f"int64_t pk_lo{n}, pk_hi{n};",
            f"pk_rt::team_chunk({team}, {begin}, {end}, &pk_lo{n}, &pk_hi{n});",
        ], f"++pk_n{n}"

    def copied_param(self, p: ir.Param) -> bool:
        """Whether a helper's parameter ``p`` arrives under another name and is copied
        into a local of its own name at the helper's start (CudaEmitter's scalars)."""
        return False

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
        increment = f"++pk_n{n}"
        if split:
            lines, increment = self.team_share(s, n, team, begin, end)
            for text in lines:
                at(loop, text)
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
        at(loop, f"for (int64_t pk_n{n} = pk_lo{n}; pk_n{n} < pk_hi{n}; {increment}) {{")
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


# Helpers taking views (see CppEmitter.helper_signature); emitted when one does.
HELPER_MACROS = """\
#if PK_DEBUG
#define PK_HELPER_TEMPLATE(...)
#define PK_HELPER_VIEW(V, T, R, L) const pk_rt::View<T, R, L>&
#else
#define PK_HELPER_TEMPLATE(...) template <__VA_ARGS__>
#define PK_HELPER_VIEW(V, T, R, L) const V&
#endif"""


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


def _print_ctype(dtype: DataType) -> str:
    if dtype == t.bool_:
        return "bool"
    if dtype.is_float or dtype.is_complex:  # a complex: Printer's value(complex<T>)
        return dtype.ctype
    return "long long" if dtype.kind == "int" else "unsigned long long"


def _team_total(team: str, acc: str, acc_type: DataType, reducer: Reducer | None) -> str:
    """The team's total of a nested reduce over a team-split range: the threads' partials
    added (a sum) or combined with ``reducer``, in team rank order."""
    if reducer is None:
        return f"pk_rt::team_reduce({team}, {acc}, __FILE__, __LINE__)"
    T = acc_type.ctype
    combine = reducer.cpp_combine_of(T).replace("omp_out", "pk_a").replace("omp_in", "pk_b")
    operation = f"[]({T} pk_a, {T} pk_b) {{ return ({T})({combine}); }}"
    return f"pk_rt::team_combine({team}, {acc}, {operation}, __FILE__, __LINE__)"
