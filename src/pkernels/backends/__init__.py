"""One backend per family of execution spaces, behind one protocol.

``pkernels.runtime.dispatch`` (the ``parallel_*`` front door) checks a dispatch against
its policy and workunit, then hands a :class:`Launch` to the backend of the policy's
space, calling the :class:`Backend` protocol's methods in order:

* ``build_mode(launch)``: the build the space runs (GUARDED and HYBRID resolved);
* ``kernel(launch)``: specialise and build: the kernel for the argument types, rank and
  build, translated and compiled on first use and kept in the workunit's memo (keys:
  :func:`.specialise.specialization_key`); its ``before_launch`` hook follows;
* ``launch(kernel, launch)``: run it over the policy, raise the error of a recorded
  fault (the codes of ``faults``, :mod:`.faults`), return a reduce's or scan's total;
* ``cached_range_kernel(...)``: the short path of the commonest dispatch, or None.

The backends: :class:`~.host.HostBackend` (OpenMP and Serial: C++ by g++,
``include/pkernels/cpu.hpp``), :class:`~.cuda.CudaBackend` (CUDA C++ by NVRTC,
``cuda.hpp``), :class:`~.debug.DebugBackend` (the body as Python). Another GPU space
(HIP, say) is one more module: a class with these four methods and ``spaces`` /
``faults``, its emitter (as ``translate.emit_cuda``) and runtime header (as
``cuda.hpp``, sharing ``include/pkernels/shared``), and an entry in :data:`BACKENDS`;
the front door does not change.
"""

from __future__ import annotations

from ..api.spaces import ExecutionSpace, resolve_space
from .cuda import CudaBackend
from .debug import DebugBackend
from .host import HostBackend
from .protocol import NOT_LAUNCHED, Backend, Launch

__all__ = ["BACKENDS", "NOT_LAUNCHED", "Backend", "Launch", "backend_for"]

#: The backend of each concrete execution space.
BACKENDS: dict[ExecutionSpace, Backend] = {
    space: backend
    for backend in (HostBackend(), CudaBackend(), DebugBackend())
    for space in backend.spaces
}


def backend_for(space: ExecutionSpace) -> Backend:
    """The backend that runs ``space`` (``Default``: the default space's)."""
    return BACKENDS[resolve_space(space)]
