"""Which target debugs which execution space: the one place pkdb picks a debugger.

``pk.OpenMP`` and ``pk.Serial`` kernels run on the CPU: gdb, in non-stop mode
(:class:`~pkdb.targets.gdb.GdbController`). ``pk.Cuda`` kernels: cuda-gdb, in all-stop
mode (:class:`~pkdb.targets.cuda_gdb.CudaGdbController`). ``$PKDB_GDB`` and
``$PKDB_CUDA_GDB`` name other executables; a machine with the CUDA toolkit but no gdb
debugs CPU kernels with cuda-gdb too (it debugs CPU code as gdb does).
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING

from .errors import TargetError
from .gdb_settings import NO_AUTO_SYMBOLS

if TYPE_CHECKING:  # the controllers load with the first kernel debugged
    from .base import Controller
    from .device import GpuController

#: Neither gdb nor cuda-gdb may step into the generated runtime helpers (bounds checks,
#: view accesses, atomics...).
_SKIP_RUNTIME = '-interpreter-exec console "skip -rfunction ^pk_rt::"'
#: A function gdb calls in a thread (omp_get_thread_num, see KernelSession.thread_number)
#: that gets a signal -- a thread whose stack overflowed -- is unwound, the thread left
#: as it was.
_UNWIND_ON_SIGNAL = "-gdb-set unwindonsignal on"

CPU_SPACES = ("openmp", "serial")
GPU_SPACES = ("cuda",)


def gdb_path() -> str:
    """The debugger of CPU kernels: ``$PKDB_GDB``, else gdb, else cuda-gdb, which
    debugs CPU code too (machines with the CUDA toolkit may have no gdb)."""
    explicit = os.environ.get("PKDB_GDB")
    if explicit:
        return explicit
    if shutil.which("gdb"):
        return "gdb"
    for candidate in ("cuda-gdb", "/usr/local/cuda/bin/cuda-gdb"):
        found = shutil.which(candidate)
        if found:
            return found
    return "gdb"  # not found: GdbController says so


def cuda_gdb_path() -> str:
    """The debugger of GPU kernels: ``$PKDB_CUDA_GDB``, else ``cuda-gdb`` on the PATH
    (or in ``$CUDA_HOME/bin``, ``/usr/local/cuda/bin``)."""
    explicit = os.environ.get("PKDB_CUDA_GDB")
    if explicit:
        return explicit
    found = shutil.which("cuda-gdb")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        candidate = os.path.join(home, "bin", "cuda-gdb") if home else ""
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise TargetError(
        "cuda-gdb is not installed: GPU kernels stop under pkdb with NVIDIA's cuda-gdb "
        "(the CUDA toolkit's; $PKDB_CUDA_GDB names another)"
    )


def cpu_controller() -> Controller:
    """A new controller for OpenMP and Serial kernels (see :func:`gdb_path`)."""
    from .gdb import GdbController, is_cuda_gdb

    path = gdb_path()
    # gdb loads the libraries' symbols it needs (Controller.load_symbols); cuda-gdb as the
    # CPU's debugger reads them all.
    lazy = () if is_cuda_gdb(shutil.which(path) or path) else (NO_AUTO_SYMBOLS,)
    return GdbController(path, init_commands=(_SKIP_RUNTIME, _UNWIND_ON_SIGNAL, *lazy))


def gpu_controller() -> GpuController:
    """A new controller for Cuda kernels (see :func:`cuda_gdb_path`)."""
    from .cuda_gdb import CudaGdbController

    return CudaGdbController(cuda_gdb_path(), init_commands=(_SKIP_RUNTIME,))


def controller_for(space: str) -> Controller:
    """A new controller for kernels of execution space ``space`` (``"openmp"``,
    ``"serial"``, ``"cuda"``: :attr:`pkdb.kernel_protocol.KernelLaunch.space`)."""
    if space in CPU_SPACES:
        return cpu_controller()
    if space in GPU_SPACES:
        return gpu_controller()
    raise TargetError(f"no debugger for kernels of the {space!r} execution space")
