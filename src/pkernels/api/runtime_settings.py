"""PyKokkos' run-time settings: ``initialize``/``finalize``, the default precision,
unified memory, the GPU to use.

pkernels needs no initialisation (there is no Kokkos to start): ``initialize`` and
``finalize`` are accepted and do nothing. The default precision is the element type of
views made without one (``pk.View([n])``), as in PyKokkos.
"""

from __future__ import annotations

from typing import Any

from .types import DataType, float64, to_datatype

_precision: DataType = float64
_uvm = False
_device_id = 0


def initialize() -> None:
    """PyKokkos' ``initialize``: nothing to start here (kernels are plain shared
    libraries and CuPy starts the GPU when first used)."""


def finalize() -> None:
    """PyKokkos' ``finalize``: nothing to stop."""


def get_default_precision() -> DataType:
    """The element type of views made without one (``pk.float64`` unless changed)."""
    return _precision


def set_default_precision(precision: Any) -> None:
    """Make ``precision`` (``pk.float32``, ``pk.double`` ...) the element type of views made
    without one from now on, as PyKokkos' ``set_default_precision``."""
    global _precision
    try:
        _precision = to_datatype(precision)
    except TypeError:
        raise TypeError(f"set_default_precision takes an element type, not {precision!r}") from None


def is_uvm_enabled() -> bool:
    """Whether :func:`enable_uvm` was called (and not undone)."""
    return _uvm


def enable_uvm() -> None:
    """PyKokkos' switch to CUDA unified memory. Accepted: GPU views here are CuPy arrays
    in device memory, which kernels on ``pk.Cuda`` use and the host reads with
    ``.get()``; the switch changes nothing else."""
    global _uvm
    _uvm = True


def disable_uvm() -> None:
    """Undo :func:`enable_uvm`."""
    global _uvm
    _uvm = False


def set_device_id(device_id: int) -> None:
    """Run GPU kernels, and make GPU views, on device ``device_id`` (CuPy's current
    device) from now on."""
    global _device_id
    if not isinstance(device_id, int) or device_id < 0:
        raise ValueError(f"set_device_id takes a device number (0, 1, ...), not {device_id!r}")
    try:
        import cupy
    except ImportError:
        if device_id != 0:
            raise ValueError(
                f"set_device_id({device_id}): no GPU is usable here (CuPy is not installed)"
            ) from None
    else:
        cupy.cuda.Device(device_id).use()
    _device_id = device_id


def get_device_id() -> int:
    """The device :func:`set_device_id` chose (0 by default)."""
    return _device_id
