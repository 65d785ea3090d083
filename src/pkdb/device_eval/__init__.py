"""Python at a GPU kernel stop, evaluated in a helper process.

cuda-gdb holds the whole program at a GPU stop, the agent inside it included, so the
``p``/``eval`` of kernel mode run in a helper process instead: it maps the program's
device arrays through CUDA IPC (reads see the live values, writes land in the
program's arrays), holds copies of the call site's plain values, and defines the
program's kernels again, so an evaluation may dispatch new kernels on the live arrays.
Measured on an H200: a second process opened a held kernel's array and summed it while
cuda-gdb held the kernel (its start, Python and CuPy included, about 1.2 s; each
evaluation then takes milliseconds). The front end starts it when the first GPU kernel
is debugged, so its start overlaps the attach.

:class:`DeviceEvaluator` is the front end's side; :mod:`pkdb.device_eval.helper` runs in
the helper (``python -m pkdb.device_eval``). They speak JSON lines over pipes.
"""

from .client import DeviceEvaluator, EvaluationError

__all__ = ["DeviceEvaluator", "EvaluationError"]
