"""What the evaluation helper needs to evaluate Python at a GPU stop (agent side).

At a GPU kernel stop cuda-gdb holds the whole program, this agent included, so Python
at that stop runs in a helper process (:mod:`pkdb.device_eval`) instead. Before the
launch, while the program still runs, the agent describes the names the helper will
need, as JSON:

* device arrays (CuPy, anything with ``__cuda_array_interface__``): a CUDA IPC handle of
  their allocation and their place in it -- the helper maps the program's own memory,
  so reads see the live values and writes land in the program's arrays;
* numbers, strings, small NumPy arrays and other plain values: pickled copies;
* modules: by name (imported in the helper);
* kernels and ``@pk.function`` helpers: their source, file and line (the helper defines
  them again, so an evaluation can dispatch new kernels on the live device arrays);
* a workload method's ``self``: the fields its kernel reads, each described as above.

Handles come from ``cuMemGetAddressRange`` (the allocation holding the array: CuPy
sub-allocates from larger blocks) and ``cudaIpcGetMemHandle`` of that allocation.
"""

from __future__ import annotations

import base64
import ctypes
import inspect
import pickle
import types
from typing import Any

#: Host arrays at most this large are copied to the helper (larger ones are not shown).
HOST_COPY_LIMIT = 1 << 20

_libcuda: Any = None


def _address_range(pointer: int) -> tuple[int, int]:
    """(base, size) of the device allocation holding ``pointer``."""
    global _libcuda
    if _libcuda is None:
        _libcuda = ctypes.CDLL("libcuda.so.1")
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    status = _libcuda.cuMemGetAddressRange_v2(
        ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(pointer)
    )
    if status != 0:
        raise RuntimeError(f"cuMemGetAddressRange failed (CUDA error {status})")
    return base.value, size.value


def device_array(value: Any) -> dict[str, Any] | None:
    """The description of a device array the helper maps, or None for anything else."""
    interface = getattr(value, "__cuda_array_interface__", None)
    if not isinstance(interface, dict) or "data" not in interface:
        return None
    import cupy

    pointer = int(interface["data"][0])
    shape = [int(n) for n in interface["shape"]]
    dtype = interface["typestr"]
    itemsize = int(dtype[2:])
    strides = interface.get("strides")
    if strides is None:  # C-contiguous
        strides, step = [], itemsize
        for n in reversed(shape):
            strides.insert(0, step)
            step *= max(n, 1)
    base, size = _address_range(pointer) if pointer else (0, 0)
    handle = bytes(cupy.cuda.runtime.ipcGetMemHandle(base)).hex() if base else ""
    return {
        "kind": "device",
        "handle": handle,
        "base": base,
        "size": size,
        "offset": pointer - base,
        "shape": shape,
        "strides": [int(s) for s in strides],
        "dtype": dtype,
        "device": int(cupy.cuda.runtime.getDevice()),
    }


def describe(value: Any) -> dict[str, Any] | None:
    """The helper's description of one value, or None when it cannot have it. A
    ``pk.View`` is described by its array (the helper has no views: their arrays)."""
    from pkernels.api.views import View, unwrap

    if isinstance(value, View):
        value = unwrap(value)
    try:
        array = device_array(value)
    except Exception:  # noqa: BLE001 - a CUDA error: leave the name out
        return None
    if array is not None:
        return array
    if isinstance(value, types.ModuleType):
        return {"kind": "module", "name": value.__name__}
    if isinstance(value, types.FunctionType) and _is_kernel_code(value):
        try:
            source = inspect.getsource(value)
        except (OSError, TypeError):
            return None
        code = value.__code__
        return {
            "kind": "source",
            "source": source,
            "file": code.co_filename,
            "line": code.co_firstlineno,
        }
    nbytes = getattr(value, "nbytes", 0)
    if isinstance(nbytes, int) and nbytes > HOST_COPY_LIMIT:
        return None
    if callable(value) and not isinstance(value, type):
        return None  # functions of the program, bound methods...: not carried
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - not picklable: not carried
        return None
    if len(data) > HOST_COPY_LIMIT:
        return None
    return {"kind": "value", "pickle": base64.b64encode(data).decode()}


def _is_kernel_code(func: types.FunctionType) -> bool:
    from pkernels.api.decorators import marker_of

    return marker_of(func) is not None


def snapshot(
    frame: types.FrameType | None,
    views: dict[str, Any],
    pools: dict[str, Any] | None = None,
    workload: tuple[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The helper's names at a launch: the call site's globals, then its locals, then
    the kernel's random pools by parameter name (``pools``: the kernel holds only a
    pool's launch key, so ``p pool`` must find the program's pool under the parameter's
    name, whatever the call site calls it), a workload method's ``self`` with the
    fields its kernel reads (``workload``: the self name and the fields by name, so that
    ``p self.pool`` and ``p self.x[0:4]`` work, the arrays live), and the kernel's views
    by parameter name (``views``)."""
    names: dict[str, Any] = {}
    scopes = [] if frame is None else [frame.f_globals, frame.f_locals]
    for scope in [*scopes, pools or {}]:
        for name, value in list(scope.items()):
            if name.startswith("__") and name != "__name__":
                continue
            described = describe(value)
            if described is not None:
                names[name] = described
    if workload is not None:
        owner, fields = workload
        described_fields = {name: describe(value) for name, value in fields.items()}
        names[owner] = {
            "kind": "fields",
            "fields": {name: d for name, d in described_fields.items() if d is not None},
        }
    kernel_views = {}
    for name, value in views.items():
        described = device_array(value) if hasattr(value, "__cuda_array_interface__") else None
        if described is not None:
            kernel_views[name] = described
    return {"names": names, "views": kernel_views}


def python_details() -> dict[str, Any]:
    """The interpreter, import path and working directory the helper must share."""
    import os
    import sys

    return {"python": sys.executable, "python_path": list(sys.path), "cwd": os.getcwd()}
