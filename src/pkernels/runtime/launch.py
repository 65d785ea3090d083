"""A compiled, loaded kernel specialisation, and how it is launched."""

from __future__ import annotations

import ctypes
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..api.spaces import ExecutionSpace
from ..backends.faults import fault_error
from ..build.compiler import BuiltModule
from ..errors import (
    DispatchError,
)
from ..translate.emit_cpp import KernelEntry
from ..translate.emit_hybrid import has_hybrid_launch
from ..translate.emit_launch import WIDE_SYMBOL
from . import crash_report, width_tuning
from .marshal import ArgumentPlan, c_argtypes, result_buffer

# The C marshaller, built at install when a C compiler and Python's headers are there;
# without it (or with one built from another version of _launch.c: an editable install
# not rebuilt since), every launch goes through ctypes.
_C_LAUNCH_INTERFACE = 3
try:
    from . import _launch
except ImportError:  # pragma: no cover - not built
    _c_launch = None
else:
    _c_launch = _launch.launch if getattr(_launch, "INTERFACE", 0) == _C_LAUNCH_INTERFACE else None

_TEAM = 0  # entry.rank of a TeamPolicy kernel, whose release builds report faults too
#: A kernel library's record of a failed check: (kind, message), or None.
FaultRecord = tuple[int, bytes] | None


def box_bounds(values: tuple[int, ...]) -> Any:
    """An MDRangePolicy's begins or ends as a launcher takes them: an int64 array."""
    return (ctypes.c_int64 * len(values))(*values)


@dataclass
class CompiledKernel:
    """One workunit, compiled for one operation and argument signature.

    Debuggers use ``library`` (loaded in this process), ``source`` (the generated C++,
    whose ``#line`` directives point at ``filename``), ``kernel_symbol`` (the C++
    function holding the body) and ``lines`` (the Python lines of the body).
    """

    name: str
    operation: str
    filename: str
    lines: range
    module: BuiltModule
    entry: KernelEntry
    _lib: Any = field(repr=False, default=None)
    _launchers: dict[ExecutionSpace, Any] = field(repr=False, default_factory=dict)
    _plan: ArgumentPlan | None = field(repr=False, default=None)
    _reports_faults: bool = field(repr=False, default=False)
    _hybrid: Any = field(repr=False, default=None)  # pk_launch_hybrid, or pk_iteration
    # Addresses of the release build's packed launch entries (see emit_launch._packed_entry),
    # for pkernels.runtime._launch; empty where launches go through ctypes.
    _packed: dict[ExecutionSpace, int] = field(repr=False, default_factory=dict)
    # The OpenMP launcher's two variants where the build has wide-vector loops, as
    # (packed address or None, ctypes function), PLAIN first; see width_tuning.
    _widths: tuple[tuple[int | None, Any], ...] = field(repr=False, default=())
    _tuner: width_tuning.WidthTuner | None = field(repr=False, default=None)

    @property
    def library(self) -> Path:
        return self.module.library

    @property
    def source(self) -> Path:
        return self.module.source

    @property
    def debug(self) -> bool:
        return self.module.debug

    @property
    def checked(self) -> bool:
        """A release build keeping the debug build's checks (``BuildMode.CHECKED``)."""
        return self.module.checked

    @property
    def kernel_symbol(self) -> str:
        return self.entry.kernel_symbol

    def load(self) -> None:
        self._lib = ctypes.CDLL(str(self.module.library))
        crash_report.watch(self.module.library, self.name)
        argtypes = c_argtypes(self.entry.params, self.entry.rank)
        for space, symbol in self._symbols():
            fn = getattr(self._lib, symbol)
            fn.argtypes = argtypes
            fn.restype = None
            self._launchers[space] = fn
        if has_hybrid_launch(self.operation, self.entry.rank):
            # The two halves of a HYBRID launch (see emit_hybrid.hybrid_entries).
            symbol = "pk_iteration" if self.module.debug else "pk_launch_hybrid"
            hybrid = getattr(self._lib, symbol, None)
            if hybrid is not None and not self.module.debug:
                hybrid.argtypes = [
                    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_bool, *argtypes
                ]  # fmt: skip
                hybrid.restype = None
            self._hybrid = hybrid
        self._plan = ArgumentPlan(self.entry.params, self.entry.written_views)
        self._reports_faults = self.module.debug or self.module.checked or self.entry.rank == _TEAM
        if _c_launch is not None and not self.module.debug:
            for space, symbol in self._symbols():
                packed = getattr(self._lib, f"{symbol}_packed", None)  # range launches
                if packed is not None:
                    self._packed[space] = ctypes.cast(packed, ctypes.c_void_p).value
        self._lib.pk_fault_message.restype = ctypes.c_char_p
        self._lib.pk_fault_kind.restype = ctypes.c_int
        self._lib.pk_fault_restore.argtypes = [ctypes.c_int, ctypes.c_char_p]
        self._lib.pk_fault_restore.restype = None
        if not self.module.debug:
            self._load_wide_variant(argtypes)

    def quiet_faults(self, on: bool) -> None:
        """While on, a failed check is only recorded (and raised when the launch ends):
        no debugger is waited for or stopped at it (a launch run again in the debug build
        when its checked build fails: Dispatch.check_first)."""
        self._lib.pk_quiet_faults(1 if on else 0)

    def fault_record(self) -> FaultRecord:
        """The failed check this library recorded last (kind, message), or None. The
        record is the library's, shared by its launches: a tool that launches it while
        another of its launches is held (a debugger's evaluation) saves the record before
        and puts it back after with :meth:`restore_fault_record`."""
        message = self._lib.pk_fault_message()
        return None if message is None else (self._lib.pk_fault_kind(), message)

    def restore_fault_record(self, record: FaultRecord) -> None:
        """Make ``record`` (from :meth:`fault_record`) the library's record again."""
        kind, message = record if record is not None else (0, None)
        self._lib.pk_fault_restore(kind, message)

    def _load_wide_variant(self, argtypes: list[Any]) -> None:
        """Set up the choice between the OpenMP launcher and its wide-vector twin (see
        ``width_tuning``), where the build has one."""
        wide = getattr(self._lib, WIDE_SYMBOL, None)
        if wide is None:
            return
        wide.argtypes = argtypes
        wide.restype = None
        space = ExecutionSpace.OpenMP
        wide_packed = None
        if space in self._packed:
            packed = getattr(self._lib, f"{WIDE_SYMBOL}_packed")
            wide_packed = ctypes.cast(packed, ctypes.c_void_p).value
        self._widths = ((self._packed.get(space), self._launchers[space]), (wide_packed, wide))
        forced = width_tuning.forced_width()
        if forced is None:
            self._tuner = width_tuning.WidthTuner()
        else:
            self._use_width(forced)

    def _use_width(self, variant: int) -> None:
        packed, launcher = self._widths[variant]
        if packed is not None:
            self._packed[ExecutionSpace.OpenMP] = packed
        self._launchers[ExecutionSpace.OpenMP] = launcher

    @property
    def vector_width(self) -> str | None:
        """For a build with wide-vector loops (see ``width_tuning``): "256" or "512", the
        OpenMP loops it runs, or "timing" while its first launches compare them; None for
        other builds."""
        if not self._widths:
            return None
        if self._tuner is not None:
            return "timing"
        return "512" if self._launchers[ExecutionSpace.OpenMP] is self._widths[1][1] else "256"

    def _symbols(self) -> tuple[tuple[ExecutionSpace, str], ...]:
        """(space, its launch symbol) for the spaces a C++ build runs."""
        symbols = self.entry.symbols
        return (
            (ExecutionSpace.OpenMP, symbols["openmp"]),
            (ExecutionSpace.Serial, symbols["serial"]),
        )

    def launch_hybrid(
        self,
        space: ExecutionSpace,
        begin: int,
        end: int,
        kwargs: dict[str, Any],
        debug_request: ctypes.c_int,
        debug_build: CompiledKernel,
        debug_mask: np.ndarray | None = None,
    ) -> Any:
        """Run this HYBRID build's release loop over ``begin <= i < end`` (for an
        MDRangePolicy box, ``begin`` and ``end`` as :func:`box_bounds` arrays); once
        ``debug_request`` is set, each thread runs its remaining indices through
        ``debug_build`` (the same kernel's debug build, loaded in this process). Before
        that, a range's indices ``i`` with ``debug_mask[i - begin]`` true (a uint8 or bool
        array of ``end - begin`` entries) run in ``debug_build`` too. Returns the reduce's
        total, or None."""
        iteration = debug_build._hybrid
        if self._hybrid is None or iteration is None:
            raise DispatchError(f"{self.name}: no hybrid build of this kernel")
        mask = None
        if debug_mask is not None:
            mask = np.ascontiguousarray(debug_mask, dtype=np.uint8)
            if self.entry.rank != 1 or mask.shape != (max(0, end - begin),):
                raise DispatchError(
                    f"{self.name}: a debug mask needs one entry per index of a range "
                    f"({max(0, end - begin)}), got shape {mask.shape}"
                )
        args = self._plan.marshal(kwargs)
        acc_type = self.entry.acc_type
        result = result_buffer(acc_type) if acc_type is not None else None
        if self.entry.uses_print:
            sys.stdout.flush()
        debug_build._lib.pk_fault_clear()
        self._hybrid(
            ctypes.addressof(debug_request),
            ctypes.cast(iteration, ctypes.c_void_p),
            mask.ctypes.data if mask is not None else None,
            space is not ExecutionSpace.Serial,
            begin,
            end,
            ctypes.addressof(result) if result is not None else None,
            *args,
        )
        # Indices handed to the debug build check what they do, as a debug launch would.
        _raise_recorded_fault(debug_build._lib)
        return result.value if result is not None else None

    def launch(self, space: ExecutionSpace, begin: Any, end: Any, kwargs: dict[str, Any]) -> Any:
        """Run the kernel over ``begin <= i < end``; return the total for reduce/scan.

        A kernel built for an MDRangePolicy box (``entry.rank`` > 1) takes ``begin`` and
        ``end`` as ctypes arrays of ``rank`` int64 (see :func:`box_bounds`)."""
        if self._tuner is not None and space is ExecutionSpace.OpenMP:
            return self._timed_launch(begin, end, kwargs)
        return self._run(space, begin, end, kwargs)

    def _timed_launch(self, begin: Any, end: Any, kwargs: dict[str, Any]) -> Any:
        """A launch while the two vector widths are compared: the tuner picks the loops,
        and takes their time (only of launches that end without a fault)."""
        tuner = self._tuner
        assert tuner is not None
        variant = tuner.next_variant()
        self._use_width(variant)
        start = time.perf_counter()
        result = self._run(ExecutionSpace.OpenMP, begin, end, kwargs)
        choice = tuner.record(variant, time.perf_counter() - start)
        if choice is not None:
            self._use_width(choice)
            self._tuner = None
        return result

    def _run(self, space: ExecutionSpace, begin: Any, end: Any, kwargs: dict[str, Any]) -> Any:
        acc_type = self.entry.acc_type
        result = result_buffer(acc_type) if acc_type is not None else None
        if self.entry.uses_print:
            sys.stdout.flush()  # keep Python's buffered output before the kernel's
        if self.module.checked:  # its release launchers leave the last launch's record
            self._lib.pk_fault_clear()
        packed = self._packed.get(space)
        if packed is not None:
            where = ctypes.addressof(result) if result is not None else None
            if not _c_launch(packed, self._plan.c_steps, kwargs, begin, end, where):
                if self._reports_faults:
                    _raise_recorded_fault(self._lib)
                return result.value if result is not None else None
            # An argument the C marshaller leaves alone: the Python one says what is
            # wrong with it, or marshals it and launches through ctypes.
        args = self._plan.marshal(kwargs)
        self._launchers[space](
            begin, end, ctypes.addressof(result) if result is not None else None, *args
        )
        if self._reports_faults:
            _raise_recorded_fault(self._lib)
        return result.value if result is not None else None


def _raise_recorded_fault(library: Any) -> None:
    """Raise the error of the first failed check a kernel library recorded, if any."""
    message = library.pk_fault_message()
    if message is not None:
        kind = fault_error(library.pk_fault_kind())
        raise kind(message.decode(errors="replace"))
