"""Scalar data types (``pk.int32`` ... ``pk.double``) and the annotation helpers
(``pk.Acc[T]``, ``pk.View1D[T]`` ...) used in kernel signatures."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import AnnotationError


class DataTypeClass:
    """PyKokkos' base class of the element types: ``pk.int32`` ... ``pk.double`` are
    subclasses of it (``issubclass(pk.double, pk.DataTypeClass)``), never instantiated."""


class DataType(type):
    """The type of ``pk.int8`` ... ``pk.double``: each element type is a class, as in
    PyKokkos, usable as ``pk.View(shape, pk.double)``, in annotations and where NumPy takes
    a dtype (``np.zeros(3, pk.int32)``, ``view.dtype == pk.int32``: NumPy reads a type's
    ``dtype``). ``pk.double.value`` is its Kokkos (C++) type name, as PyKokkos' ``value``
    names its Kokkos type: ``pk.float.value == pk.float32.value``."""

    name: str
    ctype: str
    np_dtype: np.dtype
    kind: str  # "int", "uint", "float", "complex" or "bool"

    @property
    def dtype(cls) -> np.dtype:
        """The NumPy dtype."""
        return cls.np_dtype

    @property
    def value(cls) -> str:
        """The Kokkos (C++) element type: ``double``, ``int32_t`` ..."""
        return cls.ctype

    @property
    def np_equiv(cls) -> type:
        """PyKokkos' name of the NumPy scalar type."""
        return cls.np_dtype.type

    def __getattr__(cls, name: str) -> object:
        # What NumPy code reads of a dtype (itemsize, char, type, str ...) is the NumPy
        # dtype's; ``kind`` is pkernels' own ("int", "uint", "float", "bool").
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(cls.np_dtype, name)

    def __eq__(cls, other: object) -> bool:
        # Equal to what NumPy reads as the same dtype (np.int32, np.dtype("int32")), as
        # the NumPy dtypes PyKokkos code compares views' types with.
        if isinstance(other, DataType):
            return cls is other
        if isinstance(other, np.dtype) or (isinstance(other, type) and other is not object):
            try:
                return np.dtype(other) == cls.np_dtype
            except TypeError:
                return False
        return NotImplemented

    def __hash__(cls) -> int:
        return hash(cls.np_dtype)  # as the equal NumPy dtype's

    @property
    def bits(cls) -> int:
        return cls.np_dtype.itemsize * 8

    @property
    def is_float(cls) -> bool:
        return cls.kind == "float"

    @property
    def is_integer(cls) -> bool:
        return cls.kind in ("int", "uint")

    @property
    def is_complex(cls) -> bool:
        return cls.kind == "complex"

    def __call__(cls, *args: object) -> object:
        # ``pk.complex128(re, im)`` (host code and the Debug space alike): NumPy's complex
        # scalar, whose arithmetic compiled kernels reproduce. Real types are not made.
        if cls.kind != "complex":
            raise TypeError(f"pk.{cls.name} is an element type; it makes no values")
        if len(args) == 2 and any(isinstance(a, complex | np.complexfloating) for a in args):
            raise TypeError(f"pk.{cls.name}(re, im) takes two real numbers")
        return cls.np_dtype.type(*args)


def _dt(name: str, ctype: str, np_name: str, kind: str) -> DataType:
    namespace = {
        "name": name,
        "ctype": ctype,
        "np_dtype": np.dtype(np_name),
        "kind": kind,
        "__module__": "pkernels",  # pickled and shown as pkernels.float64, its public name
        "__qualname__": name,
        "__doc__": f"The {np_name} element type (C++ {ctype}).",
    }
    return DataType(name, (DataTypeClass,), namespace)


int8 = _dt("int8", "int8_t", "int8", "int")
int16 = _dt("int16", "int16_t", "int16", "int")
int32 = _dt("int32", "int32_t", "int32", "int")
int64 = _dt("int64", "int64_t", "int64", "int")
uint8 = _dt("uint8", "uint8_t", "uint8", "uint")
uint16 = _dt("uint16", "uint16_t", "uint16", "uint")
uint32 = _dt("uint32", "uint32_t", "uint32", "uint")
uint64 = _dt("uint64", "uint64_t", "uint64", "uint")
float32 = _dt("float32", "float", "float32", "float")
float64 = _dt("float64", "double", "float64", "float")
bool_ = _dt("bool", "bool", "bool", "bool")
# Complex numbers (NumPy's layout: real part, then imaginary part), PyKokkos' complex64
# (two float32) and complex128 (two float64); their C++ type is the runtimes' own
# (include/pkernels/shared/complex.hpp: NumPy's formulas, not std::complex's).
complex64 = _dt("complex64", "pk_rt::complex<float>", "complex64", "complex")
complex128 = _dt("complex128", "pk_rt::complex<double>", "complex128", "complex")
COMPLEX_TYPES = (complex64, complex128)

ALL_TYPES = (int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64, bool_)
_BY_NUMPY = {t.np_dtype: t for t in (*ALL_TYPES, *COMPLEX_TYPES)}


def real_part_type(dtype: DataType) -> DataType:
    """The type of a complex type's parts (float32, float64); a real type itself."""
    return {complex64: float32, complex128: float64}.get(dtype, dtype)


def complex_of(dtype: DataType) -> DataType:
    """The complex type holding a float type's values (float32: complex64)."""
    return complex64 if dtype in (float32, complex64) else complex128


def from_numpy(dtype: np.dtype | type) -> DataType:
    """The DataType of a NumPy dtype; raises TypeError for dtypes kernels cannot use."""
    key = np.dtype(dtype)
    try:
        return _BY_NUMPY[key]
    except KeyError:
        supported = ", ".join(t.np_dtype.name for t in (*ALL_TYPES, *COMPLEX_TYPES))
        raise TypeError(f"arrays of dtype {key} cannot be kernel views (use {supported})") from None


# C++ element type names PyKokkos kernels may annotate with bare (`pk.ScratchView1D[double]`:
# PyKokkos never evaluates a kernel's annotations; its C++ reads them).
C_TYPE_NAMES = {
    "double": float64,
    "int8_t": int8,
    "int16_t": int16,
    "int32_t": int32,
    "int64_t": int64,
    "uint8_t": uint8,
    "uint16_t": uint16,
    "uint32_t": uint32,
    "uint64_t": uint64,
}


def to_datatype(obj: object) -> DataType:
    """Normalise what users write as a type (``int``, ``pk.double``, ``np.float32``, a C
    type name such as ``"double"``)."""
    if isinstance(obj, DataType):
        return obj
    if isinstance(obj, str) and obj in C_TYPE_NAMES:
        return C_TYPE_NAMES[obj]
    if obj is int:
        return int64
    if obj is float:
        return float64
    if obj is bool:
        return bool_
    if obj is None:  # np.dtype(None) would be float64
        raise TypeError("None is not a data type")
    return from_numpy(obj)  # numpy dtypes and scalar classes


@dataclass(frozen=True)
class AccAnnotation:
    """``pk.Acc[T]``: the accumulator parameter of a reduce or scan workunit."""

    dtype: DataType


class Acc:
    """Annotation of a reduce/scan accumulator: ``acc: pk.Acc[pk.double]``."""

    def __class_getitem__(cls, item: object) -> AccAnnotation:
        try:
            dtype = to_datatype(item)
        except TypeError:
            dtype = None
        if dtype is None or dtype.np_dtype.kind not in "biufc":
            name = getattr(item, "__name__", repr(item))
            raise AnnotationError(
                f"pk.Acc[{name}]: an accumulator holds a number, e.g. pk.Acc[pk.double] or "
                "pk.Acc[int]; the types are float, int, bool and pk."
                + ", pk.".join(t.name for t in (*ALL_TYPES, *COMPLEX_TYPES))
            )
        return AccAnnotation(dtype)


@dataclass(frozen=True)
class ViewAnnotation:
    """``pk.View2D[pk.double]``: a view parameter of known rank and element type."""

    rank: int
    dtype: DataType | None
    # ``View1D[int]``: PyKokkos means int32 (``pk.View(shape, int)``), NumPy's default
    # integer is int64; an array of either is taken as it is.
    python_int: bool = False

    def accepts(self, dtype: DataType) -> bool:
        """Whether an array of ``dtype`` elements fits this annotation."""
        if self.python_int:
            return dtype in (int32, int64)
        return self.dtype is None or self.dtype == dtype

    @property
    def name(self) -> str:
        element = "int" if self.python_int else self.dtype.name if self.dtype else "?"
        return f"View{self.rank}D[{element}]"


def _view_annotation_class(rank: int) -> type:
    class _ViewND:
        __doc__ = f"Annotation of a rank-{rank} view parameter: ``View{rank}D[pk.double]``."

        def __class_getitem__(cls, item: object) -> ViewAnnotation:
            return ViewAnnotation(rank, to_datatype(item), python_int=item is int)

    _ViewND.__name__ = _ViewND.__qualname__ = f"View{rank}D"
    return _ViewND


View1D = _view_annotation_class(1)
View2D = _view_annotation_class(2)
View3D = _view_annotation_class(3)
View4D = _view_annotation_class(4)
View5D = _view_annotation_class(5)
View6D = _view_annotation_class(6)
View7D = _view_annotation_class(7)
View8D = _view_annotation_class(8)
