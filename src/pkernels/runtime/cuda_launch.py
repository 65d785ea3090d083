"""The ``Cuda`` execution space: workunits compiled by NVRTC and launched on CuPy arrays.

CuPy is imported at the first Cuda dispatch only (CPU-only installs never need it). A
workunit is translated to the same typed IR as for the CPU spaces and emitted as CUDA
C++ (:mod:`pkernels.translate.emit_cuda`); the source (``kernel.cu``, whose ``#line``
directives point at the Python file) and its cubin are kept in the pkernels cache, keyed
by the source, the NVRTC version, the options and the GPU architecture, so another
process loads the cubin without compiling. The options keep IEEE arithmetic as on the
CPU (:data:`OPTIONS`). Each workunit keeps its loaded kernels per argument signature in
:attr:`KernelMarker.specializations`, so a repeated dispatch only marshals and launches.

Every launch synchronises its stream before returning (as the CPU spaces return after
the kernel ran): the results of reduce and scan, ``print`` output and faults are there
when ``parallel_*`` returns. Launch shapes:

* range / MDRange: blocks of :data:`~pkernels.translate.emit_cuda.BLOCK` threads, at
  most 32 blocks per multiprocessor, grid-stride loops over the indices; reduce adds
  the blocks' partials here, in block order (the same total every run on one GPU);
* scan: up to :data:`SCAN_THREADS` threads, each a contiguous chunk of the range, in
  two passes; the exclusive prefix of the chunk totals is computed here between them;
* TeamPolicy: one block per team of ``team_size`` threads (``pk.AUTO``: see
  :func:`auto_team_size`), as many blocks as can run at once (at most the league, at
  most 2048 threads per multiprocessor); level-0 scratch is the block's dynamic shared
  memory, level 1 a slice of one global buffer per block. The first fault (a scratch
  overflow, threads of a team at different barriers) raises ``KernelTeamError`` after
  the launch, with the Python line, the block and the thread.
"""

from __future__ import annotations

import functools
import math
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..api.decorators import KernelMarker
from ..api.policies import MDRangePolicy, RangePolicy
from ..api.reducers import Reducer, Sum
from ..api.teams import SCRATCH_LIMITS, TeamPolicy
from ..api.types import DataType, int64
from ..build.cache import cache_key, entry_dir, write_atomically
from ..build.compiler import GENERATED_PATH
from ..errors import (
    CompileError,
    DispatchError,
    KernelError,
    KernelIndexError,
    KernelTeamError,
    KernelZeroDivisionError,
)
from ..translate import ir
from ..translate.emit_cuda import BLOCK, TEAM, CudaEntry, emit_cuda_module
from ..translate.ir import StructType
from ..translate.kernel import check_reducer, lower_workunit
from . import hooks
from .hooks import BuildMode, Dispatch
from .marshal import INT_RANGES, argument_type, struct_dtype

NO_CUDA = "the Cuda execution space needs CuPy and an NVIDIA GPU: pip install 'pkernels[cuda]'"
# IEEE arithmetic, as on the CPU: no fused multiply-adds (the CPU builds'
# -ffp-contract=off), float32 subnormals kept, correctly rounded division and sqrt.
# (--device-int128: print() of floats decides its digits in 128-bit integers.)
OPTIONS = (
    "-std=c++17", "--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true",
    "--device-int128",
)  # fmt: skip
NVCC_OPTIONS = ("-std=c++17", "--fmad=false", "-ftz=false", "-prec-div=true", "-prec-sqrt=true")
SCAN_THREADS = 16384  # threads of a parallel_scan (each scans a contiguous chunk)
SCAN_BLOCK = 128
AUTO_TEAM_SIZE = 128  # pk.AUTO's most threads per team
LEVEL1_BUDGET = 1 << 30  # bytes of level-1 scratch one launch may take (fewer blocks if more)
DEFAULT_DYNAMIC_SHARED = 48 * 1024  # dynamic shared memory a kernel gets without opting in
_FAULTS = {1: KernelIndexError, 2: KernelZeroDivisionError, 3: KernelTeamError, 4: KernelTeamError}
_FAULT_BYTES = 1024  # sizeof(pk_rt::Fault)

_cupy: Any = None


def cupy_module() -> Any:
    """CuPy, imported now, once a GPU is known to be there; else a DispatchError."""
    global _cupy
    if _cupy is None:
        try:
            import cupy
        except ImportError as exc:
            raise DispatchError(f"{NO_CUDA} (importing cupy failed: {exc})") from None
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # noqa: BLE001 - CUDA driver errors: no usable GPU
            raise DispatchError(f"{NO_CUDA} (CuPy finds no GPU: {exc})") from None
        if count < 1:
            raise DispatchError(f"{NO_CUDA} (CuPy finds no GPU)")
        _cupy = cupy
    return _cupy


def run_cuda(
    workunit: Callable[..., Any],
    marker: KernelMarker,
    operation: str,
    policy: RangePolicy | MDRangePolicy | TeamPolicy,
    kwargs: dict[str, Any],
    build_mode: BuildMode,
    dispatch: Dispatch | None,
    reducer: Reducer = Sum,
) -> Any:
    """A dispatch on the Cuda space (``dispatch.py`` calls this for every policy kind).

    Release builds only: a debug build asked for by a dispatch observer runs the release
    kernel (no bounds checks on the GPU yet)."""
    del build_mode
    cupy_module()
    for name, value in kwargs.items():
        if isinstance(value, np.ndarray):
            raise DispatchError(
                f"{name}: the Cuda execution space runs on GPU memory, but this is a NumPy "
                f"array: pass cupy.asarray({name}) (and read results back with .get())"
            )
    if isinstance(policy, TeamPolicy):
        rank = TEAM
    elif type(policy) is not RangePolicy and isinstance(policy, MDRangePolicy):
        rank = policy.rank
    else:
        rank = 1
    kernel = cuda_kernel(workunit, marker, operation, kwargs, rank, reducer)
    if dispatch is not None:
        hooks.notify("before_launch", dispatch, kernel)
    return kernel.launch(policy, kwargs)


def cuda_kernel(
    workunit: Callable[..., Any],
    marker: KernelMarker,
    operation: str,
    kwargs: dict[str, Any],
    rank: int,
    reducer: Reducer = Sum,
) -> CudaKernel:
    """The loaded CUDA build of ``workunit`` for these arguments (translated and compiled
    on first use, then kept in the workunit's memo)."""
    from .dispatch import specialization_key

    key, names = specialization_key(workunit, operation, kwargs, rank, "cuda", reducer)
    kernel = marker.specializations.get(key)
    if kernel is None:
        from .dispatch import _line_span

        arg_types = {n: argument_type(n, kwargs[n], device=True) for n in names}
        function, helpers = lower_workunit(workunit, operation, arg_types, rank, reducer)
        index = function.params[0].type
        if not isinstance(index, DataType):
            index = int64  # a TeamPolicy module has no index
        check_reducer(workunit, function, reducer)
        entry = emit_cuda_module(function, helpers, operation, index, rank, reducer)
        path, code, compiled = build_cuda(entry, f"workunit {workunit.__qualname__}")
        kernel = CudaKernel(
            workunit.__name__,
            operation,
            workunit.__code__.co_filename,
            _line_span(workunit),
            entry,
            path,
            code,
            compiled,
        )
        marker.specializations[key] = kernel
    return kernel


# ---------------------------------------------------------------- compilation


def build_cuda(entry: CudaEntry, label: str) -> tuple[Path, str, Any]:
    """Compile ``entry`` for this GPU (NVRTC; nvcc when NVRTC cannot run), through the
    pkernels cache (``kernel.cu`` and ``kernel.cubin`` side by side): the path of the
    generated source, the source as compiled, and the loaded ``__global__`` function.

    NVRTC is called directly rather than through ``cupy.RawModule(code=...)``, which
    appends ``-ftz=true`` to every compile: float32 subnormals would then flush to zero,
    where NumPy and the CPU spaces keep them."""
    cp = cupy_module()
    arch = f"sm_{cp.cuda.Device().compute_capability}"
    try:
        version = "nvrtc " + ".".join(map(str, cp.cuda.nvrtc.getVersion()))
    except Exception:  # noqa: BLE001 - NVRTC missing: nvcc compiles (the key tells them apart)
        version = "nvcc"
    directory = entry_dir(cache_key(entry.source, "cuda", version, OPTIONS, arch))
    path, cubin = directory / "kernel.cu", directory / "kernel.cubin"
    code = entry.source.replace(GENERATED_PATH, _c_string_body(str(path)))
    if not cubin.exists():
        write_atomically(path, code.encode())
        write_atomically(cubin, _compile(cp, code, arch, label, path))
    function = cp.RawModule(path=str(cubin)).get_function(entry.symbol)
    return path, code, function


def _compile(cp: Any, code: str, arch: str, label: str, path: Path) -> bytes:
    """The cubin of ``code`` (stored at ``path``)."""
    try:
        nvrtc = cp.cuda.nvrtc
        program = nvrtc.createProgram(code, str(path), [], [])
    except Exception as failure:  # noqa: BLE001 - no usable NVRTC: nvcc, if there is one
        return _compile_with_nvcc(path, arch, label, failure)
    try:
        try:
            nvrtc.compileProgram(program, [*OPTIONS, f"--gpu-architecture={arch}"])
        except nvrtc.NVRTCError:
            log = nvrtc.getProgramLog(program)
            raise CompileError(_describe_failure(log, label, path)) from None
        return bytes(nvrtc.getCUBIN(program))
    finally:
        nvrtc.destroyProgram(program)


def _compile_with_nvcc(path: Path, arch: str, label: str, failure: Exception) -> bytes:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise CompileError(
            f"NVRTC could not compile the code generated for {label} ({failure}) and nvcc "
            "is not on the PATH"
        ) from failure
    # NVRTC declares printf itself; nvcc takes it from <cstdio>.
    header = path.parent / "nvrtc_builtins.h"
    write_atomically(header, b"#include <cstdio>\n")
    output = path.parent / f".kernel.{os.getpid()}.cubin"
    try:
        proc = subprocess.run(
            [nvcc, *NVCC_OPTIONS, f"-arch={arch}", "--pre-include", str(header), "-cubin",
             "-x", "cu", str(path), "-o", str(output)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            raise CompileError(_describe_failure(proc.stdout + proc.stderr, label, path))
        return output.read_bytes()
    finally:
        output.unlink(missing_ok=True)


def _c_string_body(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _describe_failure(log: str, label: str, path: Path) -> str:
    """A CUDA compiler failure is a pkernels bug: say where it came from, in Python terms
    (NVRTC reports ``file(line): error: ...``, the file and line of the ``#line``)."""
    import re

    pattern = re.compile(
        r"^(?P<file>[^\n]+?)\((?P<line>\d+)\): (?:catastrophic )?error: (?P<msg>.*)$"
    )
    first = next((m for m in map(pattern.match, log.splitlines()) if m), None)
    where = f" at {first['file']}:{first['line']}" if first else ""
    detail = first["msg"] if first else log.strip()[-2000:]
    return (
        f"internal error: the CUDA compiler rejected the code generated for {label}{where}: "
        f"{detail}\nGenerated source: {path}\nThis is a bug in pkernels; please report it "
        f"with the kernel's source.\n--- compiler output ---\n{log.strip()[-4000:]}"
    )


# ---------------------------------------------------------------- launching


@dataclass
class CudaKernel:
    """One workunit compiled for the GPU, for one operation and argument signature.

    The attributes debuggers and hooks read on a CPU ``CompiledKernel``: ``name``,
    ``operation``, ``filename``, ``lines`` (the Python lines of the body), ``source``
    (the generated CUDA C++, whose ``#line`` directives point at ``filename``),
    ``kernel_symbol``, ``debug`` (always False: release builds).
    """

    name: str
    operation: str
    filename: str
    lines: range
    entry: CudaEntry
    source: Path
    code: str  # the source as compiled
    function: Any = field(repr=False)  # the loaded cupy.RawKernel
    debug: bool = False
    library: Path | None = None  # no shared library: the module lives in the GPU

    @property
    def kernel_symbol(self) -> str:
        return self.entry.kernel_symbol

    def launch(self, policy: Any, kwargs: dict[str, Any]) -> Any:
        """Run the kernel over ``policy``; return the total of a reduce or scan."""
        cp = cupy_module()
        args = cuda_arguments(self.entry.params, kwargs)
        if self.entry.uses_print:
            import sys

            sys.stdout.flush()  # keep Python's buffered output before the kernel's
        if self.entry.rank == TEAM:
            result = self._launch_team(cp, policy, kwargs, args)
        elif self.entry.operation == "scan":
            result = self._launch_scan(cp, policy, args)
        else:
            result = self._launch_range(cp, policy, args)
        return result

    def _combined(self, partials: Any) -> Any:
        """The blocks' partial results combined on the host, in block order."""
        if self.entry.reducer is Sum:
            return _in_order_sum(partials.get())
        acc = self.entry.acc_type
        if isinstance(acc, StructType):  # the structs' bytes: each a result tuple
            rows = partials.get().view(struct_dtype(acc)).tolist()
            return functools.reduce(self.entry.reducer.combine, (acc.cls(*r) for r in rows))
        return _in_order(self.entry.reducer, partials.get())

    def _partials(self, cp: Any, blocks: int) -> Any:
        """A zeroed array for the blocks' partial results of a reduce."""
        acc = self.entry.acc_type
        assert acc is not None
        if isinstance(acc, StructType):  # CuPy has no struct arrays: their bytes
            return cp.zeros(blocks * struct_dtype(acc).itemsize, dtype=np.uint8)
        return cp.zeros(blocks, dtype=acc.np_dtype)

    def _zero(self) -> Any:
        """An empty launch's result: the reducer's identity (0 for a sum)."""
        acc = self.entry.acc_type
        return None if acc is None else self.entry.reducer.identity(ir.reduced_type(acc))

    def _launch_range(self, cp: Any, policy: Any, args: list[Any]) -> Any:
        if self.entry.rank == 1:
            count = max(0, policy.end - policy.begin)
            bounds = [np.int64(policy.begin), np.int64(policy.end)]
        else:
            count = math.prod(
                max(0, e - b) for b, e in zip(policy.begins, policy.ends, strict=True)
            )
            bounds = []
            for b, e in zip(policy.begins, policy.ends, strict=True):
                bounds += [np.int64(b), np.int64(e)]
        if count == 0:
            return self._zero()
        blocks = min(-(-count // BLOCK), 32 * _multiprocessors(cp))
        partials = None
        if self.entry.operation == "reduce":
            partials = self._partials(cp, blocks)
            bounds.append(partials)
        self._run(cp, blocks, BLOCK, (*bounds, *args))
        return None if partials is None else self._combined(partials)

    def _launch_scan(self, cp: Any, policy: RangePolicy, args: list[Any]) -> Any:
        acc = self.entry.acc_type
        assert acc is not None
        n = max(0, policy.end - policy.begin)
        if n == 0:
            return self._zero()
        chunk = -(-n // min(n, SCAN_THREADS))
        threads = -(-n // chunk)
        blocks = -(-threads // SCAN_BLOCK)
        partials = cp.zeros(threads, dtype=acc.np_dtype)
        lead = (np.int64(policy.begin), np.int64(policy.end), np.int64(chunk))
        self._run(cp, blocks, SCAN_BLOCK, (*lead, np.bool_(False), partials, *args))
        totals = np.cumsum(partials.get(), dtype=acc.np_dtype)  # in chunk order
        before = np.zeros_like(totals)
        before[1:] = totals[:-1]
        partials.set(before)
        self._run(cp, blocks, SCAN_BLOCK, (*lead, np.bool_(True), partials, *args))
        return totals[-1].item()

    def _launch_team(self, cp: Any, policy: TeamPolicy, kwargs: dict[str, Any], args: list) -> Any:
        team = auto_team_size(self.entry, policy, kwargs)
        policy.check_scratch(team)
        limit = int(self.function.max_threads_per_block)
        if team > limit:
            raise DispatchError(
                f"TeamPolicy: a team of {team} threads is more than this kernel can run on the "
                f"GPU ({limit} threads per block, for the registers it needs): use a smaller "
                "team_size"
            )
        league = policy.league_size
        if league == 0:
            return self._zero()
        team_bytes, thread_bytes = policy.team_scratch, policy.thread_scratch
        shared = (
            self.entry.slot_bytes * team
            + _round_up(4 * team, 8)
            + _round_up(policy.scratch_bytes(0, team), 8)
        )
        if shared > DEFAULT_DYNAMIC_SHARED:
            try:
                self.function.max_dynamic_shared_size_bytes = shared
            except Exception as exc:  # noqa: BLE001 - CUDA refuses: too much for this GPU
                raise DispatchError(
                    f"TeamPolicy: a team of {team} threads with this level-0 scratch needs "
                    f"{shared} bytes of shared memory, more than this GPU gives ({exc})"
                ) from None
        blocks = min(league, _multiprocessors(cp) * max(1, 2048 // team))
        level1 = _round_up(policy.scratch_bytes(1, team), 64)
        buffer = None
        if level1:
            blocks = max(1, min(blocks, LEVEL1_BUDGET // level1))
            buffer = cp.empty(blocks * level1, dtype=np.uint8)
        fault = cp.zeros(_FAULT_BYTES, dtype=np.uint8)
        lead: list[Any] = [
            np.int64(league),
            np.int64(team_bytes[0]),
            np.int64(team_bytes[1]),
            np.int64(thread_bytes[0]),
            np.int64(thread_bytes[1]),
            np.uint64(buffer.data.ptr if buffer is not None else 0),
            np.int64(level1),
            np.uint64(fault.data.ptr),
        ]
        partials = None
        if self.entry.acc_type is not None:
            partials = self._partials(cp, blocks)
            lead.append(partials)
        self._run(cp, blocks, team, (*lead, *args), shared)
        report = fault.get()
        if report[:4].view(np.int32)[0]:
            kind = int(report[4:8].view(np.int32)[0])
            text = report[8:].tobytes().split(b"\0", 1)[0].decode(errors="replace")
            raise _FAULTS.get(kind, KernelError)(text)
        return None if partials is None else self._combined(partials)

    def _run(self, cp: Any, blocks: int, threads: int, args: tuple, shared: int = 0) -> None:
        self.function((blocks,), (threads,), args, shared_mem=shared)
        # Wait on a blocking-sync event: the thread sleeps instead of spinning a core, which
        # an OpenMP kernel running at the same time (parallel_launch) needs.
        done = cp.cuda.Event(block=True, disable_timing=True)
        done.record()
        done.synchronize()


def _in_order(reducer: Reducer, partials: np.ndarray) -> Any:
    """The blocks' partials combined one after another with ``reducer``, in block order."""
    return functools.reduce(reducer.combine, partials.tolist())


def _in_order_sum(partials: np.ndarray) -> Any:
    """The blocks' partials added one after another, in block order, in their type."""
    return np.add.accumulate(partials, dtype=partials.dtype)[-1].item()


def _round_up(n: int, step: int) -> int:
    return -(-n // step) * step


_multiprocessor_counts: dict[int, int] = {}


def _multiprocessors(cp: Any) -> int:
    device = cp.cuda.Device()
    count = _multiprocessor_counts.get(device.id)
    if count is None:
        count = _multiprocessor_counts[device.id] = int(device.attributes["MultiProcessorCount"])
    return count


def auto_team_size(entry: CudaEntry, policy: TeamPolicy, kwargs: dict[str, Any]) -> int:
    """The team size of a TeamPolicy on the GPU: the one asked for, else (``pk.AUTO``) the
    smallest power of two that gives each index of the largest team-split nested range
    (TeamThreadRange & co., whose bounds are read from the dispatch's arguments) a thread
    of its own, at most :data:`AUTO_TEAM_SIZE` (also when the bounds are computed in the
    kernel); one thread when the body has no such range (nor asks its team size, as a
    kernel splitting work itself does); fewer when the per-thread scratch would not fit."""
    if policy.team_size is not None:
        return policy.team_size
    if not entry.team_ranges:
        wanted = AUTO_TEAM_SIZE if entry.asks_team_size else 1
    else:
        wanted = 0
        for begins, ends in entry.team_ranges:
            count = 1
            for begin, end in zip(begins, ends, strict=True):
                b, e = _static_value(begin, kwargs), _static_value(end, kwargs)
                if b is None or e is None:
                    count = AUTO_TEAM_SIZE
                    break
                count *= max(0, e - b)
            wanted = max(wanted, count)
    size = 1
    while size < min(wanted, AUTO_TEAM_SIZE):
        size *= 2
    for level, limit in enumerate(SCRATCH_LIMITS):
        while size > 1 and policy.scratch_bytes(level, size) > limit:
            size //= 2
    return size


def _static_value(e: ir.Expr, kwargs: dict[str, Any]) -> int | None:
    """The value of an integer expression of the kernel's arguments, or None."""
    match e:
        case ir.Const(value=value) if not isinstance(value, float):
            return int(value)
        case ir.Var(name=name):
            value = kwargs.get(name)
            return int(value) if isinstance(value, int | np.integer) else None
        case ir.ViewExtent(view=view, axis=axis):
            array = kwargs.get(view.name)
            return int(array.shape[axis]) if hasattr(array, "shape") else None
        case ir.Cast(operand=operand) if e.type.is_integer:
            return _static_value(operand, kwargs)
        case ir.BinOp(op=op, left=left, right=right) if op in ("+", "-", "*", "//", "%"):
            a, b = _static_value(left, kwargs), _static_value(right, kwargs)
            if a is None or b is None or (op in ("//", "%") and b == 0):
                return None
            if op == "//":
                return a // b
            if op == "%":
                return a % b
            return a + b if op == "+" else a - b if op == "-" else a * b
    return None


def cuda_arguments(params: list[ir.Param], kwargs: dict[str, Any]) -> list[Any]:
    """The kernel arguments for ``kwargs``: a view as its data pointer, extents and strides
    (in elements), scalars as NumPy scalars of the parameter's type (passed by value)."""
    out: list[Any] = []
    for p in params:
        value = kwargs[p.name]
        if isinstance(p.type, ir.ViewType):
            itemsize = value.itemsize
            strides = value.strides
            if any(s % itemsize for s in strides):
                raise DispatchError(
                    f"{p.name}: array strides {strides} are not multiples of its element size"
                )
            out.append(np.uint64(value.data.ptr))
            out.extend(np.int64(n) for n in value.shape)
            out.extend(np.int64(s // itemsize) for s in strides)
            continue
        assert isinstance(p.type, DataType)
        scalar = p.type.np_dtype.type
        if p.type.is_float:
            out.append(scalar(float(value)))
        elif p.type.kind == "bool":
            out.append(np.bool_(bool(value)))
        else:
            number = int(value)
            low, high = INT_RANGES[p.type.name]
            if not low <= number <= high:
                raise DispatchError(f"{p.name}: {number} does not fit in {p.type.name}")
            out.append(scalar(number))
    return out
