"""The ``Cuda`` execution space's launches: loaded kernels run on CuPy arrays
(:mod:`pkernels.backends.cuda` is the space's backend, which calls this module;
:mod:`.cuda_compile` builds the kernels).

CuPy is imported at the first Cuda dispatch only (CPU-only installs never need it). A
workunit is translated to the same typed IR as for the CPU spaces and emitted as CUDA
C++ (:mod:`pkernels.translate.emit_cuda`), which includes the runtime headers
(``include/pkernels/cuda.hpp``). Each workunit keeps its loaded kernels per argument
signature in :attr:`KernelMarker.specializations`, so a repeated dispatch only marshals
and launches (a range ``for`` or ``reduce`` of a release build in one C call from its
second launch: :mod:`.cuda_fast`).

Every launch synchronises its stream before returning (as the CPU spaces return after
the kernel ran; :func:`~pkernels.runtime.cuda_wait.wait_for_stream`): the results of
reduce and scan, ``print`` output and faults are there when ``parallel_*`` returns. A
kernel's arguments are marshalled by its :class:`~.cuda_arguments.CudaArgumentPlan`.
Launch shapes:

* range / MDRange: blocks of 256, 128, 64 or 32 threads, chosen per kernel by the
  occupancy calculator (:class:`~.cuda_occupancy.RangeState`), grids shaped by
  :mod:`~pkernels.runtime.cuda_geometry` (a range: one index per thread; a box: its last
  index along x, the one before along y, the rest along z, ``tiling`` as the block
  shape), the 32-bit entry where every offset from the begins fits (else the module's
  64-bit build, :meth:`CudaKernel.wide_kernel`, compiled then). A reduce runs on the
  blocks that are resident at once and in one pass (``pk_rt::grid_reduce``: the last
  block combines the blocks' partials in a fixed order, the same total every run on one
  GPU); its scratch (ticket, result, partials) is allocated once per kernel and grown
  when needed, and only the result is copied back;
* scan: up to :data:`SCAN_THREADS` threads, each a contiguous chunk of the range, in
  two passes; the exclusive prefix of the chunk totals is computed here between them;
* TeamPolicy: a block of ``team_size`` threads per team (``pk.AUTO``: see
  :func:`auto_team_size`): a block per league rank for a ``for`` without level-1
  scratch; else as many blocks as can run at once (at most the league, at most 2048
  threads per multiprocessor), each running league ranks ``blockIdx.x``, ``+ blocks``,
  ...; level-0 scratch is the block's dynamic shared memory, level 1 a slice of one
  global buffer per block. The first fault (a scratch overflow, threads of a team at
  different barriers) raises ``KernelTeamError`` after the launch, with the Python line,
  the block and the thread;
* range ``for`` and ``reduce`` over too few indices to fill the GPU one per thread, in
  release builds, where the workunit is a sum over a loop: blocks of 32 indices whose
  warps share each index's loop (:mod:`pkernels.translate.lane_split`;
  :meth:`CudaKernel._split_plan`).

A failed check of a checked or debug build (:data:`.cuda_compile.BUILD_OPTIONS`) is
recorded in the module's ``pk_fault_record`` and reported to a debugger through the
device function ``pk_fault_hook``.
"""

from __future__ import annotations

import ctypes
import functools
import math
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..api.policies import RangePolicy
from ..api.reducers import Reducer, Sum
from ..api.teams import TeamPolicy
from ..backends.faults import fault_error
from ..errors import DispatchError
from ..translate import ir
from ..translate.emit_cuda import TEAM, CudaEntry
from ..translate.ir import StructType
from .cuda_arguments import ConstantArguments, CudaArgumentPlan
from .cuda_geometry import MAX_GRID_X, LaunchShape, box_shape, range_shape, spread_threads
from .cuda_occupancy import (
    RangeState,
    ReduceScratch,
    multiprocessors,
    occupancy,
    resident_threads,
    round_up,
)
from .cuda_team_size import auto_team_size
from .cuda_wait import wait_for_stream
from .marshal import struct_dtype

SPLIT_WARPS = 32  # most warps a block of a shared loop has (translate.lane_split)
NO_CUDA = "the Cuda execution space needs CuPy and an NVIDIA GPU: pip install 'pkernels[cuda]'"
SCAN_THREADS = 16384  # threads of a parallel_scan (each scans a contiguous chunk)
SCAN_BLOCK = 128
LEVEL1_BUDGET = 1 << 30  # bytes of level-1 scratch one launch may take (fewer blocks if more)
DEFAULT_DYNAMIC_SHARED = 48 * 1024  # dynamic shared memory a kernel gets without opting in
_FAULT_BYTES = 1024  # sizeof(pk_rt::Fault): flag, kind, value (a double), text

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


# ---------------------------------------------------------------- launching


@dataclass
class CudaKernel:
    """One workunit compiled for the GPU, for one operation, argument signature and build.

    The attributes debuggers and hooks read on a CPU ``CompiledKernel``: ``name``,
    ``operation``, ``filename``, ``lines`` (the Python lines of the body), ``source``
    (the generated CUDA C++, whose ``#line`` directives point at ``filename``),
    ``kernel_symbol``, ``debug`` (the ``-G`` build); ``build`` is "release", "checked"
    or "debug" (:data:`.cuda_compile.BUILD_OPTIONS`).
    """

    name: str
    operation: str
    filename: str
    lines: range
    entry: CudaEntry
    source: Path
    code: str  # the source as compiled
    function: Any = field(repr=False)  # the loaded cupy.RawKernel
    module: Any = field(repr=False)  # its cupy.RawModule
    build: str = "release"
    debug: bool = False
    library: Path | None = None  # no shared library: the module lives in the GPU
    proof: Any = None  # the translation's LaunchProof (bounds_proof), None if none can hold
    #: Whether this is a range or box module's 64-bit build (cuda_compile's WIDE_OPTIONS).
    wide: bool = False
    #: Makes this kernel's 64-bit build (a CudaKernel) for a launch its 32-bit entry
    #: cannot run (given by the backend where ``function`` is ENTRY_32).
    widen: Any = field(default=None, repr=False)
    _record: Any = field(default=None, repr=False)  # the module's pk_fault_record
    _host_flag: Any = field(default=None, repr=False)  # (pinned memory, its int32 view)
    _ranges: Any = field(default=None, repr=False)  # RangeState: range and box launches
    # The last range or box launched and how (see _range_plan): a loop launching the
    # same range again skips the shape arithmetic.
    _last_range: Any = field(default=None, init=False, repr=False)
    _last_team: Any = field(default=None, init=False, repr=False)  # (key, _team_plan's)
    _wide: Any = field(default=None, init=False, repr=False)  # the made widen()
    _plan: CudaArgumentPlan = field(init=False, repr=False)
    _reports_faults: bool = field(init=False, repr=False)
    _flags_faults: bool = field(init=False, repr=False)
    #: This kernel as the dispatch's range fast path launches it (made at its first).
    range_launcher: Any = field(default=None, init=False, repr=False)
    #: Its C launcher (:mod:`.cuda_fast`; False where the C way does not take it).
    c_launcher: Any = field(default=None, init=False, repr=False)

    @property
    def kernel_symbol(self) -> str:
        return self.entry.kernel_symbol

    @property
    def checks(self) -> bool:
        """Whether failed checks are recorded (checked and debug builds)."""
        return self.build != "release"

    def fault_record(self) -> Any:
        """The module's ``pk_fault_record`` (a CuPy MemoryPointer to device memory)."""
        if self._record is None:
            self._record = self.module.get_global("pk_fault_record")
        return self._record

    def host_flag(self, cp: Any) -> np.ndarray:
        """The module's fault flag (cuda.hpp's ``pk_fault_host_flag``, release builds): a
        one-element int32 array over pinned host memory, which a launch's first fault
        sets to 1; made and given to the module at the first launch."""
        if self._host_flag is None:
            pinned = cp.cuda.alloc_pinned_memory(16)
            flag = np.frombuffer(pinned, dtype=np.int32, count=1)
            flag[0] = 0
            address = np.array([flag.ctypes.data], dtype=np.uint64)
            self.module.get_global("pk_fault_host_flag").copy_from_host(
                ctypes.c_void_p(address.ctypes.data), 8
            )
            self._host_flag = (pinned, flag)
        return self._host_flag[1]

    def __post_init__(self) -> None:
        self._plan = CudaArgumentPlan(self.entry.params)
        # How a launch learns of a fault. Checked and debug builds: the record is cleared
        # before and read after every launch (a debugger stops in pk_fault_hook and reads
        # it there). Release team kernels (scratch and barrier faults): the module's
        # host flag is read, and the record only when the flag is set.
        self._reports_faults = self.checks
        self._flags_faults = not self.checks and self.entry.rank == TEAM

    def launch(self, policy: Any, kwargs: dict[str, Any]) -> Any:
        """Run the kernel over ``policy``; return the total of a reduce or scan."""
        cp = _cupy if _cupy is not None else cupy_module()
        plan = self._plan
        if not plan.buffer_lock.acquire(blocking=False):  # another thread launches it now
            return self._launch(cp, policy, kwargs, plan.marshal(kwargs))
        try:  # the plan's buffer holds the arguments until the kernel is launched
            return self._launch(cp, policy, kwargs, plan.packed(kwargs, cp))
        finally:
            plan.buffer_lock.release()

    def _launch(self, cp: Any, policy: Any, kwargs: dict[str, Any], args: Any) -> Any:
        if self.entry.uses_print:
            sys.stdout.flush()  # keep Python's buffered output before the kernel's
        record = self.fault_record() if self._reports_faults else None
        if record is not None:
            record.memset_async(0, 8)  # the flag and the kind
        flag = self.host_flag(cp) if self._flags_faults else None
        if self.entry.rank == TEAM:
            result = self._launch_team(cp, policy, kwargs, args)
        elif self.entry.operation == "scan":
            result = self._launch_scan(cp, policy, args)
        else:
            result = self._launch_range(cp, policy, args)
        if record is not None:
            raise_recorded_fault(record)
        elif flag is not None and flag[0]:
            self.raise_flagged_fault(flag)
        return result

    def raise_flagged_fault(self, flag: np.ndarray) -> None:
        """Raise the fault a release team launch flagged (``flag``: :meth:`host_flag`'s,
        set): the module's record (clear since it loaded or its last fault) holds the
        launch's first; both are cleared for the next launch."""
        flag[0] = 0
        record = self.fault_record()
        try:
            raise_recorded_fault(record)
        finally:
            record.memset_async(0, 8)

    def geometry(self, policy: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        """How a launch over ``policy`` maps indices to CUDA blocks and threads (what a
        debugger needs to find the thread of an index): ``kind`` ("range", "box",
        "scan" or "team"), ``blocks``, ``threads`` (per block), and the policy's
        ``begins``/``ends`` (ranges and boxes), ``chunk`` (scan: indices per thread) or
        ``league`` (teams; league rank ``l`` runs in block ``l % blocks``). Ranges and
        boxes also give ``grid`` and ``block`` (x, y, z): the index of a thread is
        mapped as :mod:`pkernels.runtime.cuda_geometry` describes, whose functions
        find the thread of an index from this dictionary."""
        cp = cupy_module()
        if self.entry.rank == TEAM:
            team, blocks, _ = self._team_shape(cp, policy, kwargs)
            return {"kind": "team", "blocks": blocks, "threads": team,
                    "league": policy.league_size}  # fmt: skip
        if self.entry.operation == "scan":
            n = max(0, policy.end - policy.begin)
            chunk, threads, blocks = _scan_shape(n)
            return {"kind": "scan", "blocks": blocks, "threads": SCAN_BLOCK, "chunk": chunk,
                    "begins": [policy.begin], "ends": [policy.end]}  # fmt: skip
        begins, ends = _box(self.entry.rank, policy)
        shape = self._range_shape(cp, policy)
        return {"kind": "range" if self.entry.rank == 1 else "box", **shape.as_geometry(),
                "begins": begins, "ends": ends}  # fmt: skip

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

    def _range_state(self, cp: Any) -> RangeState:
        """This kernel's block size and reduce scratch (made at its first launch)."""
        if self._ranges is None:
            with _RANGE_STATE_LOCK:  # one state (and one scratch lock) per kernel
                if self._ranges is None:
                    self._ranges = RangeState(cp, self.function, fixed=self.debug)
        return self._ranges

    def _range_shape(self, cp: Any, policy: Any) -> LaunchShape:
        """The grid and block of a range or box launch over ``policy`` (see
        :mod:`~pkernels.runtime.cuda_geometry`): a ``for`` gives each index a thread, a
        reduce keeps to the blocks that run at once (its last block combines them)."""
        state = self._range_state(cp)
        budget = None
        if self.entry.operation == "reduce":
            budget = state.blocks_per_multiprocessor * multiprocessors(cp)
        if self.entry.rank == 1:
            threads = state.threads
            if not self.debug:  # (a debug build keeps its block size: see RangeState)
                count = max(0, policy.end - policy.begin)
                threads = spread_threads(count, threads, multiprocessors(cp))
            return range_shape(policy.begin, policy.end, threads, budget)
        tiling = getattr(policy, "tiling", None)
        if tiling is not None:
            _check_tiling(tiling, state.threads_limit)
        return box_shape(policy.begins, policy.ends, state.threads, tiling, budget)

    def _range_plan(self, cp: Any, policy: Any) -> tuple[tuple, LaunchShape, Any] | None:
        """The bounds arguments, the shape and the entry function of a launch over
        ``policy``'s range or box; None when it is empty. The last is kept for the next
        launch over the same range on the same GPU (its shape depends on nothing else)."""
        device = cp.cuda.runtime.getDevice()  # the multiprocessor count shapes the grid
        if self.entry.rank == 1:
            key: Any = (device, policy.begin, policy.end)
        else:
            tiling = getattr(policy, "tiling", None)
            key = (device, tuple(policy.begins), tuple(policy.ends), tiling)
        last = self._last_range
        if last is not None and last[0] == key:
            return last[1]
        begins, ends = _box(self.entry.rank, policy)
        plan = None
        if all(e > b for b, e in zip(begins, ends, strict=True)):
            bounds: list[int] = []
            for b, e in zip(begins, ends, strict=True):
                bounds += [b, e]
            constant = ConstantArguments(cp, tuple(bounds))
            split = self._split_plan(cp, policy)
            if split is not None:
                plan = (constant, *split)
            else:
                shape = self._range_shape(cp, policy)
                # The 32-bit entry (of a `for`: one index per thread, no stride loop) runs
                # the launch where its offsets fit; else the 64-bit build (a `for` box
                # wider than the grid, more than 2^31 indices along an axis).
                fits = shape.index32 and (shape.covers or self.entry.operation == "reduce")
                plan = (constant, shape, self.function) if fits or not self.narrow else _WIDE
        self._last_range = (key, plan)
        return plan

    @property
    def narrow(self) -> bool:
        """Whether ``function`` is :data:`~pkernels.translate.emit_cuda.ENTRY_32` (a range
        or box module's release or checked build): launches it cannot run go to
        :meth:`wide_kernel`'s."""
        return self.entry.narrow and not self.debug and not self.wide

    def wide_kernel(self) -> CudaKernel:
        """This kernel's 64-bit build (compiled at the first launch that needs it)."""
        if self._wide is None:
            if self.widen is None:
                raise DispatchError(
                    f"{self.name}: this launch needs 64-bit index arithmetic, and this "
                    "kernel was loaded without a way to build it"
                )
            self._wide = self.widen()
        return self._wide

    def _split_plan(self, cp: Any, policy: Any) -> tuple[LaunchShape, Any] | None:
        """The shape and :data:`~pkernels.translate.emit_cuda.ENTRY_SPLIT` of a range
        launch whose indices are too few to fill the GPU one per thread, where the release
        build has that entry (a loop the warps of a block share:
        :mod:`pkernels.translate.lane_split`); else None. Blocks of 32 indices and as many
        warps as keep the GPU full (a power of two, at most 32: 32 x 32 threads); a grid
        covering the range (a reduce: the blocks that run at once, which then loop)."""
        if not self.entry.splits or self.build != "release" or self.entry.rank != 1 or self.wide:
            return None  # (a 64-bit build has no split entry: too few indices to need one)
        count = policy.end - policy.begin
        sms = multiprocessors(cp)
        room = sms * resident_threads(cp) // max(count, 1)
        if room < 2:
            return None  # enough indices to fill the GPU one per thread
        state = self._range_state(cp)
        function, limit = state.split_entry(self.module)
        lanes = 1
        while lanes * 2 <= min(room, SPLIT_WARPS, limit // 32):
            lanes *= 2
        if lanes < 2:
            return None
        threads, blocks = 32 * lanes, -(-count // 32)
        if self.entry.operation == "reduce":
            _, resident = occupancy(cp, function, threads, [threads])
            blocks = min(blocks, resident * sms)
        shape = LaunchShape((blocks, 1, 1), (threads, 1, 1), False, blocks * 32 >= count)
        return shape, function

    def argument_steps(self) -> tuple[tuple[str, int, Any], ...]:
        """How each parameter's argument is marshalled: its
        :class:`~.cuda_arguments.CudaArgumentPlan` steps (name, kind, what the kind needs)."""
        return self._plan.steps

    def range_recipe(
        self, cp: Any, policy: Any, scratch: ReduceScratch
    ) -> tuple[Any, LaunchShape, tuple[int, ...], int] | None:
        """How :meth:`launch` would run a range or box ``for`` or ``reduce`` over
        ``policy``, a reduce with ``scratch`` (not this kernel's own: the caller's, which
        launches one at a time): (the entry function, the shape, the values before the
        arguments, the host address the reduce's total is left at or 0); None for an
        empty range or one the 64-bit build runs."""
        plan = self._range_plan(cp, policy)
        if plan is None or plan is _WIDE:
            return None
        constant, shape, function = plan
        if self.entry.operation != "reduce":
            return function, shape, constant.values, 0
        acc = self.entry.acc_type
        assert acc is not None and not isinstance(acc, StructType)
        places, _ = scratch.places(cp, shape.blocks, acc.np_dtype.itemsize)
        return function, shape, (*constant.values, *places), places[-1]

    def _launch_range(self, cp: Any, policy: Any, args: list[Any]) -> Any:
        plan = self._range_plan(cp, policy)
        if plan is None:
            return self._zero()
        if plan is _WIDE:  # the same arguments, to the 64-bit build's entry
            return self.wide_kernel()._launch(cp, policy, {}, args)
        constant, shape, function = plan
        bounds = constant.pointers
        prints = self.entry.uses_print
        if self.entry.operation != "reduce":
            _launch_shaped(cp, function, shape, (*bounds, *args), prints)
            return None
        acc = self.entry.acc_type
        assert acc is not None
        dtype = struct_dtype(acc) if isinstance(acc, StructType) else acc.np_dtype
        scratch = self._range_state(cp).reduce
        with scratch.lock:  # one launch at a time uses the scratch
            places, result = scratch.places(cp, shape.blocks, dtype.itemsize)
            lead = scratch.pointers(cp, places)
            _launch_shaped(cp, function, shape, (*bounds, *lead, *args), prints)
            value = result.copy()  # the kernel is done: its total is in host memory
        if isinstance(acc, StructType):
            return acc.cls(*value.view(dtype).tolist()[0])
        return value.view(dtype)[0].item()

    def _launch_scan(self, cp: Any, policy: RangePolicy, args: list[Any]) -> Any:
        acc = self.entry.acc_type
        assert acc is not None
        n = max(0, policy.end - policy.begin)
        if n == 0:
            return self._zero()
        chunk, threads, blocks = _scan_shape(n)
        partials = cp.zeros(threads, dtype=acc.np_dtype)
        lead = (np.int64(policy.begin), np.int64(policy.end), np.int64(chunk))
        self._run(cp, blocks, SCAN_BLOCK, (*lead, np.bool_(False), partials, *args))
        totals = np.cumsum(partials.get(), dtype=acc.np_dtype)  # in chunk order
        before = np.zeros_like(totals)
        before[1:] = totals[:-1]
        partials.set(before)
        self._run(cp, blocks, SCAN_BLOCK, (*lead, np.bool_(True), partials, *args))
        return totals[-1].item()

    def _team_shape(
        self, cp: Any, policy: TeamPolicy, kwargs: dict[str, Any]
    ) -> tuple[int, int, int]:
        """(team size, blocks, level-1 scratch bytes per block) of a TeamPolicy launch."""
        team = auto_team_size(self.entry, policy, kwargs)
        level1 = round_up(policy.scratch_bytes(1, team), 64)
        if self.entry.acc_type is None and not level1:
            # A block per team, as Kokkos launches them: the hardware hands a finished
            # team's multiprocessor the next (a block looping over league ranks ran a
            # row-per-team kernel 4% slower).
            return team, min(policy.league_size, MAX_GRID_X), level1
        # A reduce's blocks each leave a partial, which the host combines; level-1
        # scratch is a slice per block: as many blocks as run at once.
        blocks = min(policy.league_size, multiprocessors(cp) * max(1, 2048 // max(team, 1)))
        if level1:
            blocks = max(1, min(blocks, LEVEL1_BUDGET // level1))
        return team, blocks, level1

    def team_recipe(self, cp: Any, policy: TeamPolicy) -> tuple[Any, ...] | None:
        """How :meth:`launch` would run a release TeamPolicy ``for`` over ``policy`` (an
        explicit team size, no level-1 scratch): (the shape's grid and block, the values
        before the arguments, the shared memory bytes, the host flag a fault sets); None
        for an empty league and for what the Python way launches itself."""
        if policy.team_size is None or self.entry.acc_type is not None:
            return None  # (pk.AUTO sizes teams by the arguments; a reduce's partials)
        plan = self._team_plan(cp, policy, {})
        if plan is None or plan[2]:
            return None
        team, blocks, _, shared, head, tail = plan
        flag = self.host_flag(cp)
        return (blocks, 1, 1), (team, 1, 1), (*head.values, *tail.values), shared, flag

    def _launch_team(self, cp: Any, policy: TeamPolicy, kwargs: dict[str, Any], args: list) -> Any:
        plan = self._team_plan(cp, policy, kwargs)
        if plan is None:
            return self._zero()
        team, blocks, level1, shared, head, tail = plan
        lead: list[Any] = [*head.pointers, *tail.pointers]  # (no level-1 scratch: address 0)
        if level1:
            buffer = cp.empty(blocks * level1, dtype=np.uint8)
            lead[len(head.values) - 1] = np.uint64(buffer.data.ptr)
        partials = None
        if self.entry.acc_type is not None:
            partials = self._partials(cp, blocks)
            lead.append(partials)
        self._run(cp, blocks, team, (*lead, *args), shared)
        return None if partials is None else self._combined(partials)

    def _team_plan(self, cp: Any, policy: TeamPolicy, kwargs: dict[str, Any]) -> Any:
        """(team size, blocks, level-1 bytes per block, shared memory bytes, the leading
        arguments up to the level-1 buffer's address, those after it) of a TeamPolicy
        launch; None for an empty league. Kept for the next launch of a policy with the
        same values on the same GPU (an explicit team size: pk.AUTO's depends on the
        arguments), whose checks and shapes it then skips."""
        key = None
        if policy.team_size is not None:
            key = (cp.cuda.runtime.getDevice(), policy.league_size, policy.team_size,
                   *policy.team_scratch, *policy.thread_scratch)  # fmt: skip
            last = self._last_team
            if last is not None and last[0] == key:
                return last[1]
        team, blocks, level1 = self._team_shape(cp, policy, kwargs)
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
            return None
        team_bytes, thread_bytes = policy.team_scratch, policy.thread_scratch
        shared = (
            self.entry.slot_bytes * team
            + round_up(4 * team, 8)
            + round_up(policy.scratch_bytes(0, team), 8)
        )
        if shared > DEFAULT_DYNAMIC_SHARED:
            try:
                self.function.max_dynamic_shared_size_bytes = shared
            except Exception as exc:  # noqa: BLE001 - CUDA refuses: too much for this GPU
                raise DispatchError(
                    f"TeamPolicy: a team of {team} threads with this level-0 scratch needs "
                    f"{shared} bytes of shared memory, more than this GPU gives ({exc})"
                ) from None
        # The sizes, then the level-1 buffer's address (0 for none; else each launch's),
        # then its stride and the fault record's address.
        head = ConstantArguments(cp, (league, *team_bytes, *thread_bytes, 0))
        tail = ConstantArguments(cp, (level1, int(self.fault_record().ptr)))
        plan = (team, blocks, level1, shared, head, tail)
        if key is not None:
            self._last_team = (key, plan)
        return plan

    def _run(self, cp: Any, blocks: int, threads: int, args: tuple, shared: int = 0) -> None:
        # The RawKernel's Function for this GPU, called directly: RawKernel.__call__ only
        # adds a layer of keyword arguments on the way.
        self.function.kernel((blocks,), (threads,), args, shared)
        wait_for_stream(cp, self.entry.uses_print)


def raise_recorded_fault(record: Any) -> None:
    """Raise the ``Kernel*Error`` a launch recorded in its module's ``pk_fault_record``
    (``record``: its device memory), if one did."""
    report = np.empty(_FAULT_BYTES, dtype=np.uint8)
    record.copy_to_host(ctypes.c_void_p(report.ctypes.data), _FAULT_BYTES)
    if not report[:4].view(np.int32)[0]:
        return
    kind = int(report[4:8].view(np.int32)[0])
    text = report[16:].tobytes().split(b"\0", 1)[0].decode(errors="replace")
    if "@VALUE@" in text:  # a float no integer holds, formatted as the CPU build does
        text = text.replace("@VALUE@", f"{float(report[8:16].view(np.float64)[0]):.17g}")
    raise fault_error(kind)(text)


def _box(rank: int, policy: Any) -> tuple[list[int], list[int]]:
    """The begins and ends of a range (rank 1) or an MDRange box."""
    if rank == 1:
        return [policy.begin], [policy.end]
    return list(policy.begins), list(policy.ends)


_RANGE_STATE_LOCK = threading.Lock()  # one RangeState per kernel
_WIDE = ("the 64-bit build",)  # a _range_plan: the launch is wide_kernel()'s


def _check_tiling(tiling: tuple[int, ...], limit: int) -> None:
    """Refuse an MDRange ``tiling`` the GPU cannot take as a block shape."""
    if any(extent < 1 for extent in tiling):
        raise DispatchError(f"MDRangePolicy: tiling {tiling} must be positive")
    threads = math.prod(tiling)
    if threads > limit:
        raise DispatchError(
            f"MDRangePolicy: tiling {tiling} makes blocks of {threads} threads; this kernel "
            f"runs at most {limit} threads per block on the GPU: choose smaller tiles"
        )
    if math.prod(tiling[:-2]) > 64:
        raise DispatchError(
            f"MDRangePolicy: tiling {tiling}: the tiles of the outer dimensions, "
            f"{math.prod(tiling[:-2])} threads, pass CUDA's 64 along z: choose smaller tiles"
        )


def _launch_shaped(
    cp: Any, function: Any, shape: LaunchShape, args: tuple, prints: bool = False
) -> None:
    """Launch ``function`` (a RawKernel) over ``shape`` and wait for it, as
    :meth:`CudaKernel._run` does (its Function called directly; :func:`wait_for_stream`)."""
    function.kernel(shape.grid, shape.block, args)
    wait_for_stream(cp, prints)


def _scan_shape(n: int) -> tuple[int, int, int]:
    """(indices per thread, threads, blocks) of a parallel_scan over ``n`` indices."""
    chunk = -(-n // max(1, min(n, SCAN_THREADS)))
    threads = -(-n // max(chunk, 1))
    return chunk, threads, -(-threads // SCAN_BLOCK)


def _in_order(reducer: Reducer, partials: np.ndarray) -> Any:
    """The blocks' partials combined one after another with ``reducer``, in block order."""
    return functools.reduce(reducer.combine, partials.tolist())


def _in_order_sum(partials: np.ndarray) -> Any:
    """The blocks' partials added one after another, in block order, in their type."""
    return np.add.accumulate(partials, dtype=partials.dtype)[-1].item()


def cuda_arguments(params: list[ir.Param], kwargs: dict[str, Any]) -> list[Any]:
    """The kernel arguments for ``kwargs``: a view as its data pointer, extents and strides
    (in elements), scalars as values of the parameter's type (passed by value); see
    :class:`~pkernels.runtime.cuda_arguments.CudaArgumentPlan`, which a loaded kernel
    keeps."""
    return CudaArgumentPlan(params).marshal(kwargs)
