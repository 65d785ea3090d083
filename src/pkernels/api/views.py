"""``pk.View``: an array allocated for kernels, usable from Python like a NumPy array;
``pk.array`` / ``pk.asarray`` to make one from existing data; PyKokkos' view options
(``Layout``, ``MemorySpace``, ``Trait``, ``ViewTypeInfo``)."""

from __future__ import annotations

import enum
import functools
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from .runtime_settings import get_default_precision
from .spaces import ExecutionSpace, get_default_space
from .types import DataType, float64, from_numpy, int32, to_datatype


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


class _SubclassMaking(type):
    """Checks that a ``pk.View`` subclass with an ``__init__`` of its own called
    ``super().__init__(shape, dtype)``, which makes its array."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        view = super().__call__(*args, **kwargs)
        if "_array" not in view.__dict__:
            raise TypeError(
                f"{cls.__name__}.__init__ must call super().__init__(shape, dtype), as a "
                "subclass of pk.View"
            )
        return view


class View(NDArrayOperatorsMixin, metaclass=_SubclassMaking):
    """``pk.View(shape, dtype=pk.double, space=..., layout=..., trait=..., array=...)``: a
    zero-filled array for kernels, as PyKokkos' view: an object holding its array.

    ``v.data`` is the array itself (NumPy's on the host, CuPy's in ``pk.CudaSpace`` or
    while the default space is ``Cuda``), usable in place (``v.data += 1``,
    ``np.copyto(v.data, a)``; ``v.data = a`` copies ``a`` in). ``v.resize(dimension,
    size)`` gives the view a new array of the new size, keeping what fits: everything
    holding ``v`` (a functor, a workload, another object) sees the new size. ``v.dtype`` is
    the element type (``pk.double``, with PyKokkos' ``.value``), which NumPy takes as a
    dtype. Kernels take a view and a NumPy array alike (one specialisation for both).

    As a NumPy array it indexes (``v[i]`` as ``v.data[i]``; a slice gives a view of that
    part), computes (``v + 1``, ``np.sqrt(v)``: a new view), converts (``np.asarray(v)``
    shares its memory) and prints. Like a Kokkos view, it is a handle: ``copy.copy`` and
    ``copy.deepcopy`` give the view itself (a copied object shares its views, as copying
    a C++ struct of views does); ``v.data.copy()`` copies the elements. As ``int`` means
    ``pk.int32`` in PyKokkos, ``pk.View(shape, int)`` holds int32. As in Kokkos, a view
    of rank 2 or more is column-major (``LayoutLeft``, Fortran order) on the GPU and
    row-major (``LayoutRight``, C order) on the host; ``layout=`` chooses. A subclass
    (``class Params(pk.View)`` whose ``__init__`` calls ``super().__init__(shape,
    dtype)``) is a view of that class.
    """

    def __init__(
        self,
        shape: int | Sequence[int] = (),
        dtype: Any = None,
        space: MemorySpace = MemorySpace.MemorySpaceDefault,
        layout: Layout = Layout.LayoutDefault,
        trait: Trait = Trait.TraitDefault,
        array: Any = None,
    ) -> None:
        if dtype is None:  # PyKokkos' default precision (pk.set_default_precision)
            dtype = get_default_precision()
        self._array = _allocate(type(self) is View, shape, dtype, space, layout, trait, array)
        if layout is Layout.LayoutDefault and trait is not Trait.Unmanaged:
            # Kokkos' default: LayoutLeft on the GPU (what a view of one column, both
            # C and F ordered, reports), LayoutRight (told by the array) on the host.
            if not isinstance(self._array, np.ndarray):
                self._layout = Layout.LayoutLeft
        elif layout is not Layout.LayoutDefault:
            self._layout = layout  # rank 1 is both: it says what was asked

    @classmethod
    def wrapping(cls, array: Any) -> View:
        """A view of ``array`` (a NumPy or CuPy array), sharing its memory."""
        view = cls.__new__(cls)
        view._array = array
        return view

    def _like(self, array: Any) -> View:
        """A view of ``array`` of this view's class, with its attributes (a slice, or a
        result computed from it: a subclass's fields and the layout asked carry over)."""
        view = object.__new__(type(self))
        view.__dict__.update(self.__dict__)
        view._array = array
        return view

    # ------------------------------------------------------------------ the array

    @property
    def data(self) -> Any:
        """The view's array (NumPy or CuPy), the view's memory itself."""
        return self._array

    @data.setter
    def data(self, value: Any) -> None:
        # `v.data += 1` stores back the array it updated; anything else is copied in.
        if value is not self._array:
            _xp(self._array).copyto(self._array, _unwrapped(value))

    def resize(self, dimension: int, size: int) -> None:
        """PyKokkos' (and Kokkos') ``resize``: dimension ``dimension`` becomes ``size``
        long, in a new array that keeps the elements both sizes have (the rest zero); the
        view object stays the same, so whatever holds it sees the new size. Arrays taken
        from it before (``v.data``, slices) keep the old memory."""
        old = self._array
        if not 0 <= dimension < max(old.ndim, 1):
            raise ValueError(f"Cannot resize dimension {dimension} since rank = {old.ndim}")
        if size < 0:
            raise ValueError(f"View.resize({dimension}, {size}): a size cannot be negative")
        if old.ndim == 0:
            shape: tuple[int, ...] = (size,)
        else:
            if old.shape[dimension] == size:
                return
            shape = old.shape[:dimension] + (size,) + old.shape[dimension + 1 :]
        order = "F" if self.layout is Layout.LayoutLeft and old.ndim > 1 else "C"
        new = _xp(old).zeros(shape, dtype=old.dtype, order=order)
        if old.ndim == 0:
            new[:1] = old
        else:
            kept = tuple(slice(0, min(a, b)) for a, b in zip(old.shape, shape, strict=True))
            new[kept] = old[kept]
        self._array = new

    def set_precision(self, dtype: Any) -> None:
        """PyKokkos' ``set_precision``: the view's elements become ``dtype`` (converted as
        NumPy's ``astype`` converts), in a new array."""
        self._array = self._array.astype(view_dtype(dtype).np_dtype)

    # ------------------------------------------------------------------ Kokkos' API

    def extent(self, dimension: int) -> int:
        """Length of dimension ``dimension`` (the Kokkos spelling of ``shape[d]``)."""
        shape = self._array.shape
        if dimension == 0 and not shape:
            return 0
        if not 0 <= dimension < len(shape):
            raise ValueError(f'"dimension" {dimension} must be less than the view\'s rank')
        return int(shape[dimension])

    def rank(self) -> int:
        """The number of dimensions (Kokkos' and PyKokkos' ``rank()``)."""
        return self._array.ndim

    @property
    def shape(self) -> tuple[int, ...]:
        return self._array.shape

    @property
    def ndim(self) -> int:
        return self._array.ndim

    @property
    def size(self) -> int:
        return self._array.size

    @property
    def dtype(self) -> Any:
        """The element type, ``pk.double`` ... (NumPy's dtype for one kernels lack)."""
        try:
            return from_numpy(self._array.dtype)
        except TypeError:
            return self._array.dtype

    @property
    def layout(self) -> Layout:
        """``LayoutLeft`` for a column-major view of rank 2 or more (a ``pk.View`` made on
        the GPU without ``layout=``, or with ``layout=pk.LayoutLeft``), else
        ``LayoutRight``; a view whose array is both (one row or column, rank 1) reports
        the layout it was made with."""
        array = self._array
        requested = self.__dict__.get("_layout")
        if requested is not None and array.ndim <= 1:
            return requested
        c_order, f_order = array.flags["C_CONTIGUOUS"], array.flags["F_CONTIGUOUS"]
        if requested is not None and c_order and f_order:  # (n, 1), say: both, as asked
            return requested
        column_major = array.ndim > 1 and f_order and not c_order
        return Layout.LayoutLeft if column_major else Layout.LayoutRight

    @property
    def space(self) -> MemorySpace:
        """Where the view lives: ``HostSpace`` (a NumPy array) or ``CudaSpace``."""
        on_host = isinstance(self._array, np.ndarray)
        return MemorySpace.HostSpace if on_host else MemorySpace.CudaSpace

    @property
    def trait(self) -> Trait:
        """``TraitDefault``: a view's memory traits do not change the code kernels run."""
        return Trait.TraitDefault

    # ------------------------------------------------------------------ NumPy's protocols

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        array = self._array
        if not isinstance(array, np.ndarray):
            array = array.get()  # a GPU array: a host copy, as CuPy's own conversion
        if dtype is not None and np.dtype(dtype) != array.dtype:
            return array.astype(dtype)
        return array.copy() if copy else array

    @property
    def __array_interface__(self) -> dict[str, Any]:
        return self._array.__array_interface__

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(_unwrapped(o) for o in out)
        result = getattr(ufunc, method)(*(_unwrapped(x) for x in inputs), **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return self._wrapped(result)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        values = _unwrapped_all(kwargs.values())
        result = func(*_unwrapped_all(args), **dict(zip(kwargs, values, strict=True)))
        return self._wrapped(result)

    def _wrapped(self, result: Any) -> Any:
        """Arrays computed from this view as views (of its class), as PyKokkos' results
        are; numbers and other values as they are."""
        if isinstance(result, tuple):
            return tuple(self._wrapped(r) for r in result)
        if isinstance(result, np.ndarray) or _is_device_array(result):
            return self._like(result)
        return result

    # ------------------------------------------------------------------ a container

    def __getitem__(self, key: Any) -> Any:
        # An int (PyKokkos' rule) gives the array's element or row; a slice, a view.
        value = self._array[key]
        if type(key) is int or not hasattr(value, "shape") or not value.shape:
            return value
        return self._like(value)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._array[key] = _unwrapped(value)

    def __len__(self) -> int:
        return len(self._array)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._array)

    def __bool__(self) -> bool:
        return bool(self._array)

    def __float__(self) -> float:
        return float(self._array.reshape(-1)[0]) if self._array.size == 1 else float(self._array)

    def __int__(self) -> int:
        return int(self._array.reshape(-1)[0]) if self._array.size == 1 else int(self._array)

    def __hash__(self) -> int:
        return id(self)

    def __copy__(self) -> View:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> View:
        return self

    def __getattr__(self, name: str) -> Any:
        # What a view lacks is its array's (v.strides, v.T, v.sum(axis=0), v.astype(...)),
        # arrays it gives as views, as NumPy gives arrays.
        if name.startswith("__") and name != "__cuda_array_interface__" or name == "_array":
            raise AttributeError(name)
        value = getattr(self._array, name)
        if callable(value) and not isinstance(value, type):
            return functools.partial(self._call_wrapped, value)
        return self._wrapped(value)

    def _call_wrapped(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        return self._wrapped(method(*_unwrapped_all(args), **kwargs))

    def __str__(self) -> str:
        return str(self._array)

    def __repr__(self) -> str:
        text = repr(self._array)
        name = type(self).__name__
        return name + text[text.index("(") :] if text.startswith("array(") else f"{name}({text})"

    def __format__(self, spec: str) -> str:
        return format(self._array, spec)


def _xp(array: Any) -> Any:
    """The library of ``array``: NumPy, or CuPy for a GPU array."""
    if isinstance(array, np.ndarray):
        return np
    from ..runtime.cuda_launch import cupy_module

    return cupy_module()


def _is_device_array(value: Any) -> bool:
    return hasattr(type(value), "__cuda_array_interface__")


def _unwrapped(value: Any) -> Any:
    """``value``'s array if it is a view, else ``value``."""
    return value._array if isinstance(value, View) else value


def _unwrapped_all(values: Any) -> list[Any]:
    """Arguments of a NumPy function with views replaced by their arrays (in lists and
    tuples too: ``np.concatenate([v, w])``)."""
    out = []
    for value in values:
        if isinstance(value, list | tuple):
            value = type(value)(_unwrapped(v) for v in value)
        out.append(_unwrapped(value))
    return out


def unwrap(value: Any) -> Any:
    """A dispatch argument as kernels take it: a view's (or a PyTorch tensor's) array;
    anything else as it is."""
    if isinstance(value, View):
        return value._array
    return tensor_array(value) if is_tensor(value) else value


def _allocate(
    plain: bool,
    shape: int | Sequence[int],
    dtype: Any = float64,
    space: MemorySpace = MemorySpace.MemorySpaceDefault,
    layout: Layout = Layout.LayoutDefault,
    trait: Trait = Trait.TraitDefault,
    array: Any = None,
) -> Any:
    """The array of ``pk.View(shape, dtype, space, layout, trait, array)`` (``plain``: of
    pk.View itself, not a subclass)."""
    shape_tuple, np_dtype = _shape_of(shape), view_dtype(dtype).np_dtype
    _checked(layout, Layout, "layout")
    if _checked(trait, Trait, "trait") is Trait.Unmanaged:
        if array is None:
            raise TypeError("an Unmanaged View wraps an existing array: pass array=...")
        return _wrap(array, shape_tuple, np_dtype)
    _checked(space, MemorySpace, "space")
    # pk.View follows the default space; a subclass lives on the host unless it asks for
    # CudaSpace, as PyKokkos allocates such views.
    if on_device(space) if plain else space is MemorySpace.CudaSpace:
        from ..runtime.cuda_launch import cupy_module

        # Kokkos' CudaSpace default, LayoutLeft: a thread per row reads coalesced memory.
        order = "C" if layout is Layout.LayoutRight else "F"
        return cupy_module().zeros(shape_tuple, dtype=np_dtype, order=order)
    order = "F" if layout is Layout.LayoutLeft else "C"
    return np.zeros(shape_tuple, dtype=np_dtype, order=order)


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
    """Kokkos' default layout of views in memory ``space``, as PyKokkos answers it:
    ``LayoutRight`` (row-major) in ``HostSpace``, ``LayoutLeft`` (column-major) in
    ``CudaSpace``; ``MemorySpaceDefault`` is the memory space of the default execution
    space. A ``pk.View`` without ``layout=`` is allocated in that layout (column-major
    on the GPU, for rank 2 and more); kernels index both layouts alike."""
    if not isinstance(space, MemorySpace):
        raise TypeError(f"get_default_layout takes a MemorySpace, not {space!r}")
    if space is MemorySpace.MemorySpaceDefault:
        space = get_default_memory_space(ExecutionSpace.Default)
    return Layout.LayoutRight if space is MemorySpace.HostSpace else Layout.LayoutLeft


def array(data: Any, space: MemorySpace | None = None, layout: Layout | None = None) -> View:
    """A view of ``data`` without copying it, as PyKokkos' ``pk.array``: a NumPy or CuPy
    array (or a CPU PyTorch tensor) becomes a ``pk.View`` sharing its memory (kernels'
    writes show in ``data``); a view stays itself; anything else (lists, scalars) is
    converted with ``np.asarray``."""
    if space is not None:
        _checked(space, MemorySpace, "space")
    if layout is not None:
        _checked(layout, Layout, "layout")
    if isinstance(data, View):
        return data
    return View.wrapping(as_array(data))


def as_array(data: Any) -> Any:
    """``data`` as an array kernels take: a NumPy or CuPy array as it is, a view's array,
    a PyTorch tensor's memory (see :func:`tensor_array`); else ``np.asarray(data)``."""
    if isinstance(data, np.ndarray):
        return data
    if isinstance(data, View):
        return data._array
    if is_tensor(data):
        return tensor_array(data)
    if is_foreign_device_array(data):
        return cupy_array_of(data)
    if _is_device_array(data):
        return data
    return np.asarray(data)


def is_foreign_device_array(value: object) -> bool:
    """Whether ``value`` is GPU memory that is not a CuPy array: an object with
    ``__cuda_array_interface__`` (Numba's device arrays, JAX's, a PyTorch CUDA tensor
    ...), told apart without importing CuPy."""
    kind = type(value)
    return hasattr(kind, "__cuda_array_interface__") and kind.__module__[:4] != "cupy"


def cupy_array_of(value: Any) -> Any:
    """A CuPy array over the memory of ``value``, an object with
    ``__cuda_array_interface__`` (versions 2 and 3: data pointer, shape, typestr, strides
    in bytes or None for C order), without a copy: a kernel's writes show in
    ``value``."""
    if is_tensor(value):
        return tensor_array(value)
    from ..runtime.cuda_launch import cupy_module

    cp = cupy_module()
    try:
        return cp.asarray(value)
    except Exception as exc:  # noqa: BLE001 - CuPy's reason, whatever it raises
        raise TypeError(
            f"this {type(value).__name__} cannot be a kernel view: CuPy does not take its "
            f"__cuda_array_interface__ ({exc})"
        ) from None


def is_tensor(value: object) -> bool:
    """Whether ``value`` is a PyTorch tensor (told apart without importing torch)."""
    return type(value).__module__.partition(".")[0] == "torch" and hasattr(value, "numpy")


def tensor_array(tensor: Any) -> Any:
    """The memory of a PyTorch tensor as an array kernels take, without a copy: a NumPy
    array for a CPU tensor, a CuPy array for a CUDA one (kernels' writes show in the
    tensor; autograd does not see them)."""
    tensor = tensor.detach()
    if tensor.device.type == "cpu":
        try:
            return tensor.numpy()
        except (TypeError, RuntimeError) as exc:  # a bfloat16 tensor, say
            raise TypeError(f"this tensor cannot be a kernel view: {exc}") from None
    from ..runtime.cuda_launch import cupy_module

    return cupy_module().asarray(tensor)


def asarray(
    obj: Any, /, *, dtype: Any = None, device: Any = None, copy: bool | None = None
) -> View:
    """The array API's ``asarray``: ``obj`` as a host ``pk.View`` (of ``dtype``, if given),
    sharing its memory when it can unless ``copy=True``. A constant (``pk.e``, ``pk.pi``,
    ``pk.inf``, ``pk.nan``) gives a float64 view of one element, as in PyKokkos."""
    np_dtype = None if dtype is None else view_dtype(dtype).np_dtype
    obj = _unwrapped(obj)
    if isinstance(obj, float) and (obj in _CONSTANTS or obj != obj):
        return View.wrapping(np.full(1, obj, dtype=np_dtype or np.float64))
    if copy:
        return View.wrapping(np.array(obj, dtype=np_dtype))
    return View.wrapping(np.asarray(obj, dtype=np_dtype))


_CONSTANTS = (math.e, math.pi, math.inf)


def _wrap(data: Any, shape: tuple[int, ...], np_dtype: np.dtype) -> Any:
    wrapped = as_array(data)
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
