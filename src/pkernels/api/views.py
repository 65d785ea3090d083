"""``pk.View``: an array allocated for kernels, usable from Python like a NumPy array;
``pk.array`` / ``pk.asarray`` to make one from existing data; PyKokkos' view options
(``Layout``, ``MemorySpace``, ``Trait``, ``ViewTypeInfo``)."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

from .spaces import ExecutionSpace, get_default_space
from .types import DataType, float64, int32, to_datatype


class Layout(enum.Enum):
    """How a view of rank 2 or more is laid out: ``LayoutRight`` row-major (C order, the
    host default), ``LayoutLeft`` column-major (Fortran order). Kernels take either."""

    LayoutDefault = "LayoutDefault"
    LayoutLeft = "LayoutLeft"
    LayoutRight = "LayoutRight"


class MemorySpace(enum.Enum):
    """Where a view's memory lives: ``HostSpace`` (a NumPy array) or ``CudaSpace`` (a
    CuPy array, for the ``Cuda`` space). ``MemorySpaceDefault``: that of the default
    execution space."""

    MemorySpaceDefault = "MemorySpaceDefault"
    HostSpace = "HostSpace"
    CudaSpace = "CudaSpace"


class Trait(enum.Enum):
    """Kokkos memory traits. Kernels compile the same code for all of them (views are
    plain arrays); ``Unmanaged`` with ``array=`` wraps existing memory, as ``pk.array``."""

    TraitDefault = "TraitDefault"
    Atomic = "Atomic"
    RandomAccess = "RandomAccess"
    Restrict = "Restrict"
    Unmanaged = "Unmanaged"


class ViewTypeInfo:
    """What a ``@pk.functor`` / ``@pk.workload`` keyword says about one of its views:
    ``@pk.workload(A=pk.ViewTypeInfo(layout=pk.LayoutLeft))``. Kernels take the layout
    from the array itself, so this is accepted and kept, not needed."""

    def __init__(
        self,
        *,
        space: MemorySpace | None = None,
        layout: Layout | None = None,
        trait: Trait | None = None,
    ) -> None:
        for name, value, kind in (
            ("space", space, MemorySpace),
            ("layout", layout, Layout),
            ("trait", trait, Trait),
        ):
            if value is not None and not isinstance(value, kind):
                raise TypeError(f"ViewTypeInfo {name} must be a pk.{kind.__name__}, not {value!r}")
        self.space, self.layout, self.trait = space, layout, trait

    def __repr__(self) -> str:
        return f"ViewTypeInfo(space={self.space}, layout={self.layout}, trait={self.trait})"


_UNBUILT = "_pk_unbuilt"


class _SubclassMaking(type):
    """Checks that a ``pk.View`` subclass with an ``__init__`` of its own called
    ``super().__init__(shape, dtype)``, which makes its array (see ``View.__new__``)."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        view = super().__call__(*args, **kwargs)
        attributes = getattr(view, "__dict__", None)  # none on a GPU (CuPy) array
        if attributes is not None and attributes.pop(_UNBUILT, False):
            raise TypeError(
                f"{cls.__name__}.__init__ must call super().__init__(shape, dtype), as a "
                "subclass of pk.View"
            )
        return view


class View(np.ndarray, metaclass=_SubclassMaking):
    """``pk.View(shape, dtype=pk.double, space=..., layout=..., trait=...)``: a zero-filled
    array for kernels.

    On the host it *is* a NumPy array (a subclass), so it slices, prints and computes like
    one and can be passed to any kernel (kernels accept plain NumPy arrays just as well).
    In ``pk.CudaSpace``, or when the default space is ``Cuda``, it is a CuPy array on the
    GPU. As in PyKokkos, ``dtype=int`` means ``pk.int32`` and ``float`` ``pk.double``;
    ``layout=pk.LayoutLeft`` allocates column-major (Fortran) order.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls.__init__ is not View.__init__:
            # A subclass with an __init__ of its own (PyKokkos programs write `class
            # Params(pk.View)` whose __init__ takes its own arguments and calls
            # `super().__init__([n], pk.double)`): the array is made in that call.
            stand_in = np.ndarray.__new__(cls, (0,), np.uint8)
            stand_in.__dict__[_UNBUILT] = True
            return stand_in
        return _allocate(cls, *args, **kwargs)

    def __init__(
        self,
        shape: int | Sequence[int] = (),
        dtype: DataType | type | np.dtype = float64,
        space: MemorySpace = MemorySpace.MemorySpaceDefault,
        layout: Layout = Layout.LayoutDefault,
        trait: Trait = Trait.TraitDefault,
        array: Any = None,
    ) -> None:
        if not self.__dict__.pop(_UNBUILT, False):
            return  # __new__ made the array from these arguments
        name = type(self).__name__
        # On the host whatever the default space (a subclass is a NumPy array), as
        # PyKokkos allocates such views.
        if (
            _checked(trait, Trait, "trait") is Trait.Unmanaged
            or _checked(space, MemorySpace, "space") is MemorySpace.CudaSpace
        ):
            raise TypeError(
                f"{name}, a subclass of pk.View, holds a host array of its own: the memory "
                "space and Unmanaged trait are for pk.View itself"
            )
        shape_tuple, np_dtype = _shape_of(shape), view_dtype(dtype).np_dtype
        fortran = _checked(layout, Layout, "layout") is Layout.LayoutLeft
        size = int(np.prod(shape_tuple, dtype=np.int64)) * np_dtype.itemsize
        # The stand-in becomes the zero-filled array in place (the rest of the subclass's
        # __init__ may use it), through the pickle protocol's re-initialisation (NumPy
        # deprecates assigning an array's shape and dtype).
        np.ndarray.__setstate__(self, (1, shape_tuple, np_dtype, fortran, bytes(size)))
        if layout is not Layout.LayoutDefault:
            self._layout = layout

    def __array_finalize__(self, obj: Any) -> None:
        # Slices, copies and results of a view keep what was set on it (a subclass's
        # fields, the layout asked for), as PyKokkos' view objects do.
        attributes = getattr(obj, "__dict__", None)
        if attributes and obj is not self:
            for key, value in attributes.items():
                if key != _UNBUILT:
                    self.__dict__.setdefault(key, value)

    def __reduce__(self) -> Any:
        reconstruct, args, state = super().__reduce__()
        return reconstruct, args, (state, dict(self.__dict__))

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) == 2 and isinstance(state[1], dict):
            np.ndarray.__setstate__(self, state[0])
            self.__dict__.update(state[1])
        else:
            np.ndarray.__setstate__(self, state)

    def __array_wrap__(
        self, array: np.ndarray, context: Any = None, return_scalar: bool = False
    ) -> Any:
        # A reduction to one value (v.sum(), np.mean(v), pk.sum(v)) is a NumPy scalar, as
        # for a plain array, not a 0-d View (which round(), dict keys or json refuse).
        if return_scalar:
            return array[()]
        return super().__array_wrap__(array, context)

    def resize(self, *args: Any, **kwargs: Any) -> None:
        """NumPy's ``ndarray.resize``; PyKokkos' ``resize(dimension, size)`` is refused with
        what to write instead (see the message)."""
        if len(args) == 2 and not kwargs and all(isinstance(a, int) for a in args):
            dimension, size = args
            if not 0 <= dimension < self.ndim:
                raise ValueError(f"Cannot resize dimension {dimension} since rank = {self.ndim}")
            kept = min(size, self.shape[dimension])
            box = ", ".join(f":{kept}" if d == dimension else ":" for d in range(self.ndim))
            shape = [size if d == dimension else n for d, n in enumerate(self.shape)]
            raise TypeError(
                f"View.resize({dimension}, {size}): PyKokkos gives the view a new "
                "allocation; a pk.View is a NumPy array, which cannot swap its memory while "
                "other arrays may share it. Make a new view, copy what it keeps and use it: "
                f"`new = pk.View({shape}, v.dtype); new[{box}] = v[{box}]`"
            )
        np.ndarray.resize(self, *args, **kwargs)

    def extent(self, axis: int) -> int:
        """Length of ``axis`` (the Kokkos spelling of ``shape[axis]``)."""
        return int(self.shape[axis])

    @property
    def rank(self) -> int:
        return self.ndim

    @property
    def layout(self) -> Layout:
        """``LayoutLeft`` for a column-major view of rank 2 or more (or one made with
        ``layout=pk.LayoutLeft``), else ``LayoutRight``."""
        requested = getattr(self, "_layout", None)
        if requested is not None and self.ndim <= 1:
            return requested
        column_major = (
            self.ndim > 1 and self.flags["F_CONTIGUOUS"] and not self.flags["C_CONTIGUOUS"]
        )
        return Layout.LayoutLeft if column_major else Layout.LayoutRight

    @property
    def space(self) -> MemorySpace:
        """Where the view lives: a ``pk.View`` (a NumPy array) is in ``HostSpace``."""
        return MemorySpace.HostSpace

    @property
    def trait(self) -> Trait:
        """``TraitDefault``: a view's memory traits do not change the code kernels run."""
        return Trait.TraitDefault


def _allocate(
    cls: type,
    shape: int | Sequence[int],
    dtype: DataType | type | np.dtype = float64,
    space: MemorySpace = MemorySpace.MemorySpaceDefault,
    layout: Layout = Layout.LayoutDefault,
    trait: Trait = Trait.TraitDefault,
    array: Any = None,
) -> Any:
    """The array ``pk.View(shape, dtype, space, layout, trait, array)`` stands for."""
    shape_tuple, np_dtype = _shape_of(shape), view_dtype(dtype).np_dtype
    order = "F" if _checked(layout, Layout, "layout") is Layout.LayoutLeft else "C"
    if _checked(trait, Trait, "trait") is Trait.Unmanaged:
        if array is None:
            raise TypeError("an Unmanaged View wraps an existing array: pass array=...")
        return _wrap(array, shape_tuple, np_dtype)
    _checked(space, MemorySpace, "space")
    # pk.View follows the default space; a subclass is a NumPy array of its class, on the
    # host unless it asks for CudaSpace, as PyKokkos allocates such views.
    if on_device(space) if cls is View else space is MemorySpace.CudaSpace:
        from ..runtime.cuda_launch import cupy_module

        return cupy_module().zeros(shape_tuple, dtype=np_dtype, order=order)
    view = np.zeros(shape_tuple, dtype=np_dtype, order=order).view(cls)
    if layout is not Layout.LayoutDefault:
        view._layout = layout  # rank 1 is both: it says what was asked
    return view


def _shape_of(shape: int | Sequence[int]) -> tuple[int, ...]:
    return (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)


def view_dtype(dtype: object) -> DataType:
    """A view's element type as PyKokkos reads it: ``int`` is ``pk.int32``."""
    return int32 if dtype is int else to_datatype(dtype)


def on_device(space: MemorySpace) -> bool:
    """Whether a view in ``space`` lives on the GPU (the default follows the default
    execution space)."""
    if space is MemorySpace.MemorySpaceDefault:
        return get_default_space() is ExecutionSpace.Cuda
    return space is MemorySpace.CudaSpace


def get_default_memory_space(space: ExecutionSpace) -> MemorySpace:
    """The memory space of views for kernels in ``space``: ``CudaSpace`` for ``pk.Cuda``
    (or ``Default`` while the default space is Cuda), else ``HostSpace``."""
    if not isinstance(space, ExecutionSpace):
        raise TypeError(f"get_default_memory_space takes an ExecutionSpace, not {space!r}")
    if space is ExecutionSpace.Default:
        space = get_default_space()
    return MemorySpace.CudaSpace if space is ExecutionSpace.Cuda else MemorySpace.HostSpace


def get_default_layout(space: MemorySpace) -> Layout:
    """The layout ``pk.View`` allocates in ``space`` without ``layout=``: ``LayoutRight``
    (row-major) in every space here, the GPU's CuPy arrays too (PyKokkos' Kokkos views
    are column-major on GPUs; kernels index both alike)."""
    if not isinstance(space, MemorySpace):
        raise TypeError(f"get_default_layout takes a MemorySpace, not {space!r}")
    return Layout.LayoutRight


def array(data: Any, space: MemorySpace | None = None, layout: Layout | None = None) -> Any:
    """A view of ``data`` without copying it, as PyKokkos' ``pk.array``: a NumPy array
    becomes a ``pk.View`` sharing its memory (kernels' writes show in ``data``), a CuPy
    array stays itself; anything else (lists, scalars) is converted with ``np.asarray``."""
    if space is not None:
        _checked(space, MemorySpace, "space")
    if layout is not None:
        _checked(layout, Layout, "layout")
    if isinstance(data, np.ndarray):
        return data.view(View)
    if type(data).__module__.split(".")[0] == "cupy":
        return data
    return np.asarray(data).view(View)


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: bool | None = None) -> Any:
    """The array API's ``asarray``: ``obj`` as a host ``pk.View`` (of ``dtype``, if given),
    sharing its memory when it can unless ``copy=True``."""
    np_dtype = None if dtype is None else view_dtype(dtype).np_dtype
    if copy:
        return np.array(obj, dtype=np_dtype).view(View)
    return np.asarray(obj, dtype=np_dtype).view(View)


def _wrap(data: Any, shape: tuple[int, ...], np_dtype: np.dtype) -> Any:
    wrapped = array(data)
    if tuple(wrapped.shape) != shape or wrapped.dtype != np_dtype:
        raise ValueError(
            f"View(shape={list(shape)}, dtype={np_dtype}) cannot wrap an array of shape "
            f"{list(wrapped.shape)} and dtype {wrapped.dtype}"
        )
    return wrapped


def _checked(value: Any, kind: type[enum.Enum], name: str) -> Any:
    if not isinstance(value, kind):
        raise TypeError(f"View {name} must be a pk.{kind.__name__}, not {value!r}")
    return value
