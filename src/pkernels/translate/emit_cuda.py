"""Typed kernel IR -> CUDA C++ for the ``Cuda`` space (release builds), compiled by NVRTC.

The statements and expressions are the C++ backend's (:class:`CudaEmitter` subclasses
:class:`~pkernels.translate.emit_cpp.CppEmitter`): the CUDA runtime text
(:mod:`pkernels.translate.cuda_prelude`) offers the same ``pk_rt`` functions under the
same names, so only what differs is overridden here: device qualifiers, math through the
``pk_math`` overloads (NVRTC has no ``<cmath>``), atomics (``atomicAdd`` where the
hardware has it), ``pk.printf`` (CUDA's ``printf``) and the launch kernels. Every
statement keeps its ``#line`` directive, so NVRTC's errors (and cuda-gdb) name Python
lines.

The ``__global__`` entry points (:data:`ENTRY`; range and box modules :data:`ENTRY_32`
in release and checked builds, :meth:`CudaEntry.symbol_in`):

* range / MDRange ``for`` and ``reduce``: one body, a template on the type of its offsets
  from the launch's begins and on whether its threads loop, behind :data:`ENTRY_32`
  (32-bit offsets; a ``for``'s runs one index per thread and no loop) in release and
  checked builds, or :data:`ENTRY` (64-bit, grid-stride loops) in debug builds and in the
  ``PK_WIDE`` build the host compiles for a launch that does not fit the first (more
  than 2^31 offsets along an axis; a ``for`` box its grid cannot cover). A range runs
  index ``begin + blockIdx.x * blockDim.x + threadIdx.x`` (then the grid's stride); a
  box runs its last index along x, the one before along y, the outer ones (flattened
  row-major, the only ones decoded with ``/`` and ``%``) along z.
  :mod:`pkernels.runtime.cuda_geometry` sizes the grids and maps indices to threads for
  debuggers;
* ``reduce``: each thread's indices into its partial, then ``pk_rt::grid_reduce``
  (``cuda.hpp``): the block's partials combined (warp shuffles, or shared memory for
  complex and struct accumulators), one partial per block stored, and the last block
  (an atomic ticket) combines them in a fixed tree into the result, the one value the
  host reads;
* ``parallel_scan``: one launch per pass, each thread taking a contiguous chunk of the
  range; the host computes the exclusive prefix of the chunk totals between the passes;
* TeamPolicy: a team is one block of ``team_size`` threads; blocks take league ranks
  ``blockIdx.x``, ``+ gridDim.x``, ... (see ``CUDA_TEAM_PRELUDE``).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from ..api import types as t
from ..api.reducers import Reducer, Sum
from ..api.types import DataType
from ..build.compiler import GENERATED_PATH
from . import emit_cpp, emit_launch, ir
from .cuda_prelude import CUDA_PRELUDE, CUDA_PRINT_PRELUDE, CUDA_TEAM_PRELUDE
from .emit_cpp import COPIED_PARAM_PREFIX, CppEmitter, view_cpp_type
from .emit_exprs import KERNEL_NAMESPACE, atomic_update, c_string, cpp_name
from .ir import ViewType
from .lane_split import LaneSplit, lane_split
from .printf import printf_format

TEAM = 0  # the `rank` of a TeamPolicy module (kernel.py's TEAM)
ENTRY = "pk_cuda_entry"  # the __global__ function of every module
# A range or box module's second entry: the same body with 32-bit index arithmetic.
ENTRY_32 = "pk_cuda_entry_i32"
# A range module's entry (release builds) where the warps of a block share each index's
# loop (translate.lane_split): the module has it where CudaEntry.splits.
ENTRY_SPLIT = "pk_cuda_entry_split"
# Most threads per block of range and MDRange launches (cuda.hpp's PK_RANGE_BLOCK: the
# entries' __launch_bounds__ and the reduction's shared memory).
BLOCK = 256
# Atomic additions the hardware does (atomicAdd); other types and operations use a CAS loop.
_HARDWARE_ADD = {t.float32, t.float64, t.int32, t.uint32, t.int64, t.uint64}


@dataclass
class CudaEntry:
    """How the runtime launches one generated CUDA module."""

    source: str  # CUDA C++ text, with GENERATED_PATH still to substitute
    params: list[ir.Param]  # marshalled parameters (views and scalars), in order
    acc_type: DataType | None
    uses_print: bool
    operation: str
    rank: int  # 1: a range, 2 to 4: an MDRange box, TEAM: a TeamPolicy
    kernel_symbol: str  # qualified C++ name of the workunit body (for debuggers)
    symbol: str = ENTRY
    written_views: frozenset[str] = frozenset()
    # The bounds of the team-split nested ranges (TeamThreadRange & co.), which pk.AUTO
    # sizes teams by, and whether the body asks its team size (to split work itself).
    team_ranges: list[tuple[list[ir.Expr], list[ir.Expr]]] = field(default_factory=list)
    asks_team_size: bool = False
    reducer: Reducer = Sum  # how a reduce combines (on the GPU; teams' blocks on the host)
    slot_bytes: int = 8  # shared memory per team rank for the team's reduction (teams)
    # For debuggers, as the CPU entry has them (emit_launch.debugger_names).
    variable_kinds: dict[str, str] = field(default_factory=dict)
    subviews: dict[str, Any] = field(default_factory=dict)
    # Whether the module has ENTRY_SPLIT (in its release build).
    splits: bool = False

    @property
    def narrow(self) -> bool:
        """A range or box module: its release and checked builds have ENTRY_32, not
        ENTRY."""
        return self.rank != TEAM and self.operation in ("for", "reduce")

    def symbol_in(self, build: str, wide: bool = False) -> str:
        """The ``__global__`` function a ``build`` of the module launches: a range or box
        module's release and checked builds have :data:`ENTRY_32` (its ``PK_WIDE``
        builds, ``wide``, and debug builds :data:`ENTRY`); every other module has
        :data:`ENTRY`."""
        return ENTRY_32 if self.narrow and build != "debug" and not wide else self.symbol


class CudaEmitter(CppEmitter):
    """:class:`CppEmitter` for device code (see the module docstring)."""

    MATH = "pk_math::"  # overloads for float and double (NVRTC has no <cmath>)
    BACKEND = "cuda"
    SHIFTED_ACCESS = False  # a rewrite for g++'s sake; the device prelude has only at()

    # -- stopping points of a debugger's next/step (include/pkernels/cuda_step.hpp) ------
    # PK_LINE(n) goes on the line of its statement (a line of its own would be the line
    # after the #line directive's), so a stop in pk_step_hook has its first frame in
    # the Python file (below pk_rt::step_at) at line n.

    def stmt(self, s: ir.Stmt, filename: str) -> None:
        if isinstance(s, _SharedLoop):
            self.shared_loop(s, filename)
            return
        if isinstance(s, _FirstLane):
            self.line_directive(s.lineno, filename)
            self.out("if (pk_active && pk_lane == 0) {")
            self.nested(s.body, filename)
            self.out("}")
            return
        if isinstance(s, ir.While):  # stops at every test of the condition, as pdb does
            self.line_directive(s.lineno, filename)
            self.out(f"while ((PK_LINE({s.lineno}), {self.truth(s.cond)})) {{")
            self.nested(s.body, filename)
            self.out("}")
            return
        start = len(self.lines)
        super().stmt(s, filename)
        # lines[start] is the statement's #line; what follows it is on line s.lineno.
        first = start + 1
        if first < len(self.lines) and not self.lines[first].startswith("#line "):
            text = self.lines[first]
            indent = len(text) - len(text.lstrip(" "))
            self.lines[first] = f"{text[:indent]}PK_LINE({s.lineno}); {text[indent:]}"
        else:  # another #line follows (a nested parallel_*): a line of its own
            self.lines.insert(first, "    " * self.indent + f"PK_LINE({s.lineno});")

    def for_range(self, s: ir.ForRange, filename: str) -> None:
        """The loop, stopping on its line after each iteration too (its increment), as
        pdb does: ``next`` from the body's last line goes to the ``for`` line."""
        start = len(self.lines)
        super().for_range(s, filename)
        c = s.counter
        increment = f"; {c} += {c}_step) {{"
        head = self.lines[start]
        assert head.endswith(increment), head
        self.lines[start] = head[: -len(increment)] + f"; PK_LINE({s.lineno}), {c} += {c}_step) {{"

    def function(self, fn: ir.Function, is_kernel: bool) -> None:
        start = len(self.lines)
        super().function(fn, is_kernel)
        if not is_kernel:  # a helper: one call deeper for next (PK_STEP_DEPTH)
            signature = start + 1  # after the function's #line
            assert self.lines[signature].endswith(" {"), self.lines[signature]
            copies = [
                f"{p.type.ctype} {cpp_name(p.name)} = {COPIED_PARAM_PREFIX}{cpp_name(p.name)};"
                for p in fn.params
                if self.copied_param(p)
            ]
            self.lines[signature] += " ".join([" PK_STEP_DEPTH", *copies])

    def split_function(self, fn: ir.Function, split: LaneSplit) -> None:
        """``pk_split_<name>(..., pk_lane, pk_lanes, pk_active)``: the workunit as warp
        ``pk_lane`` of a block of ``pk_lanes`` warps runs it (see
        :mod:`~pkernels.translate.lane_split`): where ``pk_active`` (an index of the
        range), the statements before the shared loop and its iterations ``pk_lane``, ``+
        pk_lanes``, ... into partial sums (warps but the first from 0); the partials added
        up (every thread of the block takes part); then the rest of the body in the first
        warp."""
        params = [*(self.param_decl(p) for p in fn.params)]
        params += ["const int pk_lane", "const int pk_lanes", "const bool pk_active"]
        self.line_directive(fn.lineno, fn.filename)
        self.out(f"PK_KERNEL_TEMPLATE PK_KERNEL void {split_name(fn)}({', '.join(params)}) {{")
        k = split.position
        rest = fn.body[k + 1 :]
        body: list[ir.Stmt] = [_SharedLoop(split.loop.lineno, split, fn.body[:k])]
        if rest:
            body.append(_FirstLane(rest[0].lineno, rest))
        self.function_body(dataclasses.replace(fn, body=body))

    def shared_loop(self, s: _SharedLoop, filename: str) -> None:
        """The statements up to the shared loop and the loop, in a split function (see
        :meth:`split_function`)."""
        loop, sums = s.split.loop, s.split.sums
        self.line_directive(loop.lineno, filename)
        self.out("if (pk_active) {")
        self.indent += 1
        self.block(s.before, filename)
        self.line_directive(loop.lineno, filename)
        if sums:
            zeros = " ".join(f"{self.expr(v)} = 0;" for v in sums)
            self.out(f"if (pk_lane != 0) {{ {zeros} }}")
        first = len(self.lines)
        self.stmt(loop, filename)
        c = loop.counter
        start, step = self.cast(loop.start, t.int64), self.cast(loop.step, t.int64)
        plain = f"{c} = {start}, {c}_end"
        heads = [k for k in range(first, len(self.lines)) if f"int64_t {plain}" in self.lines[k]]
        assert heads, self.lines[first:]
        head = self.lines[heads[0]]
        head = head.replace(plain, f"{c} = ({start}) + (int64_t)pk_lane * ({step}), {c}_end", 1)
        split_step = f"{c}_step = ({step}) * pk_lanes;"
        head = head.replace(f"{c}_step = {step};", split_step, 1)
        assert split_step in head, head
        self.lines[heads[0]] = head
        self.indent -= 1
        self.out("}")
        self.line_directive(loop.lineno, filename)
        added = (f"{self.expr(v)} = pk_rt::split_sum({self.expr(v)}, pk_lane, pk_lanes);"
                 for v in sums)  # fmt: skip
        self.out(" ".join(added))

    def team_share(
        self, s: ir.NestedParallel, n: str, team: str, begin: str, end: str
    ) -> tuple[list[str], str]:
        # A parallel_for's indices strided over the team, as Kokkos maps a TeamThreadRange
        # on CUDA: the threads of a warp touch consecutive elements (coalesced), where
        # contiguous chunks made each warp's load 32 scattered ones. Reductions and scans
        # keep the chunks: their combination order is that of the CPU's.
        if s.acc is not None or s.operation != "for":
            return super().team_share(s, n, team, begin, end)
        return [
            f"const int64_t pk_lo{n} = {begin} + {team}.team_rank, pk_hi{n} = {end};"
        ], f"pk_n{n} += {team}.team_size"

    def copied_param(self, p: ir.Param) -> bool:
        # At a stop inside a helper of a -G build (pk_step_hook, called from its first
        # line) cuda-gdb showed its scalar parameters as "<optimized out>" and its locals
        # with their values (H100, CUDA 13). So they are locals of their own name; a
        # release build optimises the copy away.
        return isinstance(p.type, DataType) and p.role != "acc"

    def print_stmt(self, s: ir.Print) -> None:
        if s.python_style:  # pk_rt::Printer: CUDA_PRINT_PRELUDE's, the CPU's interface
            super().print_stmt(s)
            return
        self.uses_print = True
        fmt, casts = printf_format(s.fmt, len(s.args))
        args = "".join(f", ({cast})({self.expr(a)})" for cast, a in zip(casts, s.args, strict=True))
        self.out(f"printf({c_string(fmt)}{args});")

    def literal(self, value: int | float | bool, to: DataType) -> str:
        if to.is_float:
            v = float(value)
            ctype = to.ctype
            if v != v:
                return f"pk_rt::nan_value<{ctype}>()"
            if v in (float("inf"), float("-inf")):
                return f"{'' if v > 0 else '-'}pk_rt::inf_value<{ctype}>()"
        return super().literal(value, to)

    def expr(self, e: ir.Expr) -> str:
        if isinstance(e, ir.BoolOp) and e.type != t.bool_:
            # A value (not just a truth), each operand evaluated once, left to right,
            # stopping at the first falsy one (`and`) or truthy one (`or`): the C++
            # backend's GNU statement expression, which NVRTC lacks, as a lambda.
            self.temps += 1
            tmp = f"pk_b{self.temps}"
            ctype = e.type.ctype
            keep_going = tmp if e.op == "&&" else f"!{tmp}"
            steps = [f"{ctype} {tmp} = {self.cast(e.values[0], e.type)};"]
            steps += [f"if ({keep_going}) {tmp} = {self.cast(v, e.type)};" for v in e.values[1:]]
            return f"([&]() -> {ctype} {{ " + " ".join(steps) + f" return {tmp}; }}())"
        return super().expr(e)

    def atomic(self, e: ir.AtomicOp) -> str:
        op = e.op
        ctype = e.type.ctype
        ptr = f"&{self.expr(e.target)}"
        if op in ("inc", "dec"):
            op, operands = ("add" if op == "inc" else "sub"), [ir.Const(e.type, 1)]
        else:
            operands = e.operands
        values = [self.cast(o, e.type) for o in operands]
        if op == "exchange":
            return f"pk_rt::atomic_exchange({ptr}, {values[0]})"
        if op == "cas":
            return f"pk_rt::atomic_cas({ptr}, {values[0]}, {values[1]})"
        if op == "load":
            return f"pk_rt::atomic_load({ptr})"
        base = op.removesuffix("_new")
        want_new = op.endswith("_new")
        if base in ("add", "sub") and e.type in _HARDWARE_ADD:
            value = values[0]
            if base == "sub":  # a - v is a + (-v), bit for bit (integers wrap alike)
                value = f"({ctype})(-({value}))"
            helper = "atomic_add_fetch" if want_new else "atomic_add"
            return f"pk_rt::{helper}({ptr}, {value})"
        # The operand is evaluated once; the update runs in a CAS loop (the names are
        # pk_ ones, which kernel names never are: cpp_name renames those).
        update = atomic_update(base, e.type, "pk_a", "pk_v")
        function = f"[]({ctype} pk_a, {ctype} pk_v) {{ return ({ctype})({update}); }}"
        return (
            f"pk_rt::atomic_apply({ptr}, {values[0]}, {function}, "
            f"{'true' if want_new else 'false'})"
        )


_HOST_FUNCTION = re.compile(
    r"^(\s*(?:template\s*<[^>]*>\s*|PK_HELPER_TEMPLATE\([^)]*\)\s*)?)static inline "
)
_CONSTRUCTOR = re.compile(r"^(\s*)(\w+\(int = 0\))")


@dataclass
class _SharedLoop(ir.Stmt):
    """In a split function: the statements before the shared loop (``before``), then the
    loop, which the block's warps share."""

    split: LaneSplit
    before: list[ir.Stmt]


@dataclass
class _FirstLane(ir.Stmt):
    """In a split function: the statements after the shared loop, which the first warp
    runs alone."""

    body: list[ir.Stmt]


def split_name(fn: ir.Function) -> str:
    """The C++ name of a workunit's split function (``pk_`` names are ours alone)."""
    return f"pk_split_{cpp_name(fn.name)}"


def _device_code(line: str) -> str:
    """A line of the C++ backend's definitions made device code: its helpers (``static
    inline``) become ``__device__ inline`` functions, classtype constructors
    ``__host__ __device__``. Statements are left as they are."""
    line = _HOST_FUNCTION.sub(r"\1__device__ inline ", line)
    return _CONSTRUCTOR.sub(r"\1__host__ __device__ \2", line)


def _team_shape(kernel: ir.Function) -> tuple[list[tuple[list[ir.Expr], list[ir.Expr]]], bool]:
    ranges = []
    asks = False
    for s in ir.statements(kernel.body):
        if isinstance(s, ir.NestedParallel) and s.kind != "thread_vector":
            ranges.append((s.begins, s.ends))
        for top in ir.read_expressions(s):
            for e in ir.subexpressions(top):
                if isinstance(e, ir.TeamQuery) and e.what == "team_size":
                    asks = True
    return ranges, asks


def emit_cuda_module(
    kernel: ir.Function,
    helpers: list[ir.Function],
    operation: str,
    index_type: DataType,
    rank: int = 1,
    reducer: Reducer = Sum,
) -> CudaEntry:
    """The CUDA module of one workunit specialisation (see the module docstring); a
    reduce combines its threads' results with ``reducer``."""
    em = CudaEmitter()
    body: list[str] = [f"namespace {KERNEL_NAMESPACE} {{"]
    em.lines = body
    # Classtypes and helpers taking views, where the C++ backend has them (looked up, so
    # this module follows that backend as it grows).
    struct_types = getattr(emit_cpp, "struct_types", None)
    if struct_types is not None:
        em.struct_definitions(struct_types([*helpers, kernel]))
    macros = getattr(emit_cpp, "HELPER_MACROS", None)
    if macros and any(isinstance(p.type, ViewType) for h in helpers for p in h.params):
        em.lines.extend(macros.split("\n"))
    for helper in helpers:
        em.declare(helper)
    for helper in helpers:
        em.function(helper, is_kernel=False)
    em.function(kernel, is_kernel=True)
    split = lane_split(kernel) if rank == 1 and operation in ("for", "reduce") else None
    if split is not None:  # release builds only: debuggers see one function per line
        em.lines.append("#if !PK_CHECKS && !PK_WIDE")
        em.split_function(kernel, split)
        em.lines.append("#endif")
    em.lines.append(f"}}  // namespace {KERNEL_NAMESPACE}")
    body[:] = [_device_code(line) for line in body]

    # The runtime goes first; the #line resets in `body` count the lines before them.
    head = [f"// Generated by pkernels (CUDA) from {kernel.filename}, workunit {kernel.py_name}"]
    head += CUDA_PRELUDE.strip("\n").split("\n")
    if em.uses_print:
        head += CUDA_PRINT_PRELUDE.strip("\n").split("\n")
    acc = next((p for p in kernel.params if p.role == "acc"), None)
    nested = [
        s.acc.type for s in ir.statements(kernel.body) if isinstance(s, ir.NestedParallel) and s.acc
    ]
    slot_bytes = max(_slot_bytes(a) for a in [acc.type if acc is not None else None, *nested])
    if rank == TEAM:
        head.append(f"#define PK_SLOT_BYTES {slot_bytes}")
        head += CUDA_TEAM_PRELUDE.strip("\n").split("\n")
    offset = len(head)
    reset = f'"{GENERATED_PATH}"'
    for line in body:
        if line.startswith("#line ") and line.endswith(reset):
            # reset_line() counted from the start of `body`: shift by the runtime's lines.
            line = f"#line {int(line.split()[1]) + offset} {reset}"
        head.append(line)
    em.lines = head

    marshalled = [p for p in kernel.params if p.role == "arg"]
    acc_type = acc.type if acc is not None else None
    assert acc_type is None or isinstance(acc_type, DataType | ir.StructType)
    kname = f"{KERNEL_NAMESPACE}::{cpp_name(kernel.name)}"
    params, views, args = _marshalled(marshalled)
    if acc_type is not None and operation == "reduce":
        em.lines.extend(_cuda_reduction(reducer, acc_type))
    em.lines.extend(
        _entry(operation, rank, kernel, kname, index_type, acc_type, params, views, args)
    )
    if split is not None:
        em.lines.extend(_split_entry(operation, kernel, index_type, acc_type, params, views, args))
    ranges, asks = _team_shape(kernel) if rank == TEAM else ([], False)
    kinds, subviews = emit_launch.debugger_names(kernel, helpers)
    return CudaEntry(
        "\n".join(em.lines) + "\n",
        marshalled,
        acc_type,
        em.uses_print,
        operation,
        rank,
        kname,
        written_views=frozenset(kernel.written_views),
        team_ranges=ranges,
        asks_team_size=asks,
        reducer=reducer,
        slot_bytes=slot_bytes,
        variable_kinds=kinds,
        subviews=subviews,
        splits=split is not None,
    )


def _slot_bytes(acc: ir.Type | None) -> int:
    """Shared memory per team rank for a TeamPolicy reduce's combine (the workunit's
    accumulator's, or a nested reduce's): 8 bytes, 16 for a complex128, or the
    accumulator struct of a reducer to several values (in 8-byte steps)."""
    if isinstance(acc, DataType):
        return max(8, acc.np_dtype.itemsize)
    if not isinstance(acc, ir.StructType):
        return 8
    # Its values, then its 8-byte locations: the struct is their sizes rounded up to 8.
    size = sum(ftype.np_dtype.itemsize for _, ftype in acc.fields)
    return max(8, (size + 7) // 8 * 8)


def _marshalled(marshalled: list[ir.Param]) -> tuple[list[str], list[str], str]:
    """The entry's parameters for the marshalled arguments (a view as its data pointer,
    extents and strides in elements), the statements that build the views, and the
    argument list passed on to the body."""
    params: list[str] = []
    views: list[str] = []
    names: list[str] = []
    for p in marshalled:
        name = cpp_name(p.name)
        if isinstance(p.type, ViewType):
            v = p.type
            params.append(f"{v.dtype.ctype}* {name}_data")
            params += [f"const int64_t {name}_e{k}" for k in range(v.rank)]
            params += [f"const int64_t {name}_s{k}" for k in range(v.rank)]
            extents = ", ".join(f"{name}_e{k}" for k in range(v.rank))
            strides = ", ".join(f"{name}_s{k}" for k in range(v.rank))
            views.append(
                f"    const {view_cpp_type(v)} {name}{{{name}_data, {{{extents}}}, {{{strides}}}}};"
            )
        elif isinstance(p.type, DataType) and p.type.is_complex:  # its parts, as on the CPU
            part = t.real_part_type(p.type).ctype
            params += [f"const {part} {name}_re", f"const {part} {name}_im"]
            views.append(f"    const {p.type.ctype} {name}{{{name}_re, {name}_im}};")
        else:
            assert isinstance(p.type, DataType)
            params.append(f"const {p.type.ctype} {name}")
        names.append(name)
    return params, views, "".join(", " + n for n in names)


def _entry(
    operation: str,
    rank: int,
    kernel: ir.Function,
    kname: str,
    index_type: DataType,
    acc: DataType | ir.StructType | None,
    params: list[str],
    views: list[str],
    args: str,
) -> list[str]:
    """The ``__global__`` entry point: its parameters (the launch's, then the marshalled
    arguments') and body."""
    T = acc.ctype if acc is not None else ""
    lead: list[str]
    lines: list[str] = []
    first = "(int64_t)blockIdx.x * blockDim.x + threadIdx.x"
    if rank == TEAM:
        lead = [
            "const int64_t pk_league",
            "const int64_t pk_team_bytes0",
            "const int64_t pk_team_bytes1",
            "const int64_t pk_thread_bytes0",
            "const int64_t pk_thread_bytes1",
            "char* pk_level1",
            "const int64_t pk_level1_stride",
            "pk_rt::Fault* pk_fault",
        ]
        if acc is not None:
            lead.append(f"{T}* pk_partials")
        file = c_string(kernel.filename)
        call = f"{kname}(pk_tm{', pk_total' if acc is not None else ''}{args});"
        lines += [
            "    extern __shared__ unsigned long long pk_dynamic[];",
            "    const int64_t pk_bytes[4] = "
            "{pk_team_bytes0, pk_team_bytes1, pk_thread_bytes0, pk_thread_bytes1};",
            "    pk_rt::TeamShared pk_ts;",
            "    pk_rt::team_setup(pk_ts, (unsigned char*)pk_dynamic, pk_bytes, "
            f"pk_level1 + blockIdx.x * pk_level1_stride, pk_fault, {file});",
            "    pk_rt::TeamMember pk_tm;",
        ]
        if acc is not None:
            lines.append(f"    {T} pk_total = PK_REDUCE_INIT;")
        lines += [
            "    for (int64_t pk_l = blockIdx.x; pk_l < pk_league; pk_l += gridDim.x) {",
            "        pk_rt::team_start(pk_tm, &pk_ts, pk_l, pk_league);",
            f"        {call}",
            f"        pk_rt::team_barrier(pk_tm, {file}, pk_rt::TEAM_END_OF_WORKUNIT);",
            "    }",
        ]
        if acc is not None:
            lines.append("    pk_rt::team_total(pk_ts, pk_total, pk_partials, pk_reduce);")
    elif operation == "scan":
        assert acc is not None and rank == 1
        lead = [
            "const int64_t pk_begin",
            "const int64_t pk_end",
            "const int64_t pk_chunk",
            "const bool pk_last",
            f"{T}* pk_partials",
        ]
        idx = f"({index_type.ctype})pk_i"
        lines += [
            f"    const int64_t pk_t = {first};",
            "    const int64_t pk_lo = pk_begin + pk_t * pk_chunk;",
            "    if (pk_lo >= pk_end) return;",
            "    const int64_t pk_hi = pk_end - pk_lo > pk_chunk ? pk_lo + pk_chunk : pk_end;",
            f"    {T} pk_acc = pk_last ? pk_partials[pk_t] : ({T})0;",
            "    for (int64_t pk_i = pk_lo; pk_i < pk_hi; ++pk_i)",
            f"        {kname}({idx}, pk_acc, pk_last{args});",
            "    if (!pk_last) pk_partials[pk_t] = pk_acc;",
        ]
    else:
        return _range_entries(operation, rank, kernel, kname, index_type, acc, params, views, args)
    signature = ", ".join([*lead, *params])
    # Teams may have up to 1024 threads: the compiler must keep to the registers that allows.
    bound = 1024 if rank == TEAM else BLOCK
    return [
        f'extern "C" __global__ void __launch_bounds__({bound}) {ENTRY}({signature}) {{',
        *views,
        *lines,
        "}",
    ]


def _range_entries(
    operation: str,
    rank: int,
    kernel: ir.Function,
    kname: str,
    index_type: DataType,
    acc: DataType | ir.StructType | None,
    params: list[str],
    views: list[str],
    args: str,
) -> list[str]:
    """The entries of a range or MDRange box ``for`` or ``reduce``: one body, a template
    on the type of its offsets from the launch's begins (``PkI``), and one
    ``__global__`` entry per compile: :data:`ENTRY_32` (32-bit offsets) in release and
    checked builds, :data:`ENTRY` (64-bit) in debug builds and in the ``PK_WIDE`` build
    the host makes for a launch whose offsets an int32 cannot hold (NVRTC took 312 ms
    over yAx's module with both entries, 221 ms with one: H100, CUDA 13). The index the
    workunit sees is ``begin + offset``, in 64 bits, cast to its own type. See
    :mod:`pkernels.runtime.cuda_geometry` for the mapping."""
    lead = (
        ["const int64_t pk_begin", "const int64_t pk_end"]
        if rank == 1
        else [f"const int64_t pk_{e}{k}" for k in range(rank) for e in "be"]
    )
    reduce_lead, lines, accumulator, reduce_end = _one_pass_reduce(operation, acc)
    lead += reduce_lead

    def along(axis: str) -> tuple[str, str]:
        """The first offset a thread takes along ``axis`` and the grid's stride there."""
        return (
            f"(PkI)blockIdx.{axis} * (PkI)blockDim.{axis} + (PkI)threadIdx.{axis}",
            f"(PkI)gridDim.{axis} * (PkI)blockDim.{axis}",
        )

    def step(variable: str, stride: str, end: str) -> str:
        """A grid-stride loop's step; where the grid covers the launch (``PkLoop``
        false), a step to the end: the loop runs once and the compiler drops it, with
        the registers its invariants held (a 3-D box's nest took twice the hand
        kernel's registers, and its occupancy)."""
        return f"{variable} = PkLoop ? {variable} + {stride} : {end}"

    first, stride = along("x")
    if rank == 1:
        # One index per thread where the grid covers the range (see step).
        call = f"{kname}(({index_type.ctype})(pk_begin + (int64_t)pk_o){accumulator}{args});"
        lines += [
            "    const PkI pk_n = pk_end > pk_begin ? (PkI)(pk_end - pk_begin) : (PkI)0;",
            f"    for (PkI pk_o = {first}; pk_o < pk_n; {step('pk_o', stride, 'pk_n')})",
            f"        {call}",
        ]
    else:
        lines += [
            f"    const PkI pk_n{k} = pk_e{k} > pk_b{k} ? (PkI)(pk_e{k} - pk_b{k}) : (PkI)0;"
            for k in range(rank)
        ]
        inner, next_ = rank - 1, rank - 2
        indent = "    "
        if rank > 2:  # the outer indices, flattened row-major, along z
            outer = " * ".join(f"pk_n{k}" for k in range(rank - 2))
            z_first, z_stride = along("z")
            lines += [
                f"    const PkI pk_no = {outer};",
                f"    for (PkI pk_o = {z_first}; pk_o < pk_no; "
                f"{step('pk_o', z_stride, 'pk_no')}) {{",
            ]
            indent = "        "
            if rank == 3:
                lines.append(f"{indent}const int64_t pk_i0 = pk_b0 + (int64_t)pk_o;")
            else:
                lines += [
                    f"{indent}const int64_t pk_i0 = pk_b0 + (int64_t)(pk_o / pk_n1);",
                    f"{indent}const int64_t pk_i1 = pk_b1 + (int64_t)(pk_o % pk_n1);",
                ]
        y_first, y_stride = along("y")
        lines += [
            f"{indent}for (PkI pk_y = {y_first}; pk_y < pk_n{next_}; "
            f"{step('pk_y', y_stride, f'pk_n{next_}')}) {{",
            f"{indent}    const int64_t pk_i{next_} = pk_b{next_} + (int64_t)pk_y;",
            f"{indent}    for (PkI pk_x = {first}; pk_x < pk_n{inner}; "
            f"{step('pk_x', stride, f'pk_n{inner}')}) {{",
            f"{indent}        const int64_t pk_i{inner} = pk_b{inner} + (int64_t)pk_x;",
        ]
        idx = ", ".join(
            f"({p.type.ctype})pk_i{k}"
            for k, p in enumerate(kernel.params[:rank])  # type: ignore[union-attr]
        )
        lines += [
            f"{indent}        {kname}({idx}{accumulator}{args});",
            f"{indent}    }}",
            f"{indent}}}",
        ]
        if rank > 2:
            lines.append("    }")
    lines += reduce_end
    signature = ", ".join([*lead, *params])
    names = ", ".join(_parameter_name(p) for p in [*lead, *params])
    out = [
        "template <typename PkI, bool PkLoop>",
        f"__device__ __forceinline__ void pk_range_body({signature}) {{",
        *views,
        *lines,
        "}",
    ]
    # A reduce's grid is a budget of blocks, so its threads always loop; a for's 32-bit
    # entry is launched only where its grid covers the launch (CudaKernel._range_plan).
    loop32 = "true" if operation == "reduce" else "false"
    for condition, symbol, index, loop in (
        ("#if PK_DEBUG || PK_WIDE", ENTRY, "int64_t", "true"),
        ("#else", ENTRY_32, "int32_t", loop32),
    ):
        out += [
            condition,
            f'extern "C" __global__ void __launch_bounds__({BLOCK}) {symbol}({signature}) {{',
            f"    pk_range_body<{index}, {loop}>({names});",
            "}",
        ]
    return [*out, "#endif"]


def _split_entry(
    operation: str,
    kernel: ir.Function,
    index_type: DataType,
    acc: DataType | ir.StructType | None,
    params: list[str],
    views: list[str],
    args: str,
) -> list[str]:
    """:data:`ENTRY_SPLIT` of a range ``for`` or ``reduce`` (release builds): a block of
    32 x L threads runs indices ``begin + 32 * blockIdx.x + threadIdx.x % 32``, warp
    ``threadIdx.x / 32`` of the L taking its share of each one's loop, then the 32
    indices ``32 * gridDim.x`` on (the loop's condition is the block's: its threads meet
    where the partial sums are added)."""
    reduce_lead, lines, accumulator, reduce_end = _one_pass_reduce(operation, acc, holders=32)
    lead = ["const int64_t pk_begin", "const int64_t pk_end", *reduce_lead]
    call = f"{KERNEL_NAMESPACE}::{split_name(kernel)}"
    lines += [
        "    const int pk_lane = (int)(threadIdx.x >> 5), pk_lanes = (int)(blockDim.x >> 5);",
        "    for (int64_t pk_base = pk_begin + (int64_t)blockIdx.x * 32; pk_base < pk_end; "
        "pk_base += (int64_t)gridDim.x * 32) {",
        "        const int64_t pk_i = pk_base + (threadIdx.x & 31);",
        "        const bool pk_active = pk_i < pk_end;",
        f"        {call}(({index_type.ctype})(pk_active ? pk_i : pk_begin){accumulator}{args}, "
        "pk_lane, pk_lanes, pk_active);",
        "    }",
        *reduce_end,  # the first warp holds the indices' contributions
    ]
    signature = ", ".join([*lead, *params])
    return [
        "#if !PK_CHECKS && !PK_WIDE",
        f'extern "C" __global__ void __launch_bounds__(1024) {ENTRY_SPLIT}({signature}) {{',
        *views,
        *lines,
        "}",
        "#endif",
    ]


def _one_pass_reduce(
    operation: str, acc: DataType | ir.StructType | None, holders: int = 0
) -> tuple[list[str], list[str], str, list[str]]:
    """What a range entry adds for a one-pass reduce (nothing for a ``for``): the
    parameters after the bounds (the blocks' partials, the ticket, the result), the
    thread's total declared, the argument the body updates it through, and the
    ``grid_reduce`` that ends the entry (``holders``: the block's first threads that hold
    partials, 0 for all of them)."""
    if operation != "reduce":
        assert operation == "for"
        return [], [], "", []
    assert acc is not None
    T = acc.ctype
    return (
        [f"{T}* pk_partials", "unsigned int* pk_ticket", f"{T}* pk_result"],
        [f"    {T} pk_total = PK_REDUCE_INIT;"],
        ", pk_total",
        [
            "    pk_rt::grid_reduce(pk_total, pk_partials, pk_ticket, pk_result, pk_reduce"
            + (f", {holders});" if holders else ");")
        ],
    )


def _parameter_name(declaration: str) -> str:
    """The name a C++ parameter declaration declares (``const double* x_data``: x_data)."""
    return declaration.rsplit(" ", 1)[1].lstrip("*&")


def _cuda_reduction(reducer: Reducer, acc: DataType | ir.StructType) -> list[str]:
    """``pk_reduce``, the reduction's operation on two partials, and ``PK_REDUCE_INIT``,
    where each thread starts (see emit_launch._reduction)."""
    T = acc.ctype
    combine = reducer.cpp_combine_of(T).replace("omp_out", "a").replace("omp_in", "b")
    reduced = ir.reduced_type(acc)
    identity = reducer.cpp_identity(reduced, f"pk_rt::inf_value<{reduced.ctype}>()", T)
    return [
        *([f"using {KERNEL_NAMESPACE}::{T};"] if isinstance(acc, ir.StructType) else []),
        f"__device__ __forceinline__ {T} pk_reduce({T} a, {T} b) {{ return ({T})({combine}); }}",
        f"#define PK_REDUCE_INIT {identity}",
    ]
