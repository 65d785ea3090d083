"""pkernels: PyKokkos-compatible portable kernels in Python, compiled at run time.

Change ``import pykokkos as pk`` to ``import pkernels as pk``: workunits are translated
to C++ with OpenMP (or run as plain Python in the ``Debug`` space), compiled once,
cached on disk, and launched on NumPy arrays.
"""

__version__ = "0.1.0"

from .api.bin_sort import BinOp, BinOp1D, BinOp3D, BinSort  # noqa: E402
from .api.classtypes import classtype  # noqa: E402
from .api.decorators import function, workunit  # noqa: E402
from .api.host_arrays import (  # noqa: E402
    add,
    all,
    any,
    argmax,
    astype,
    broadcast_view,
    col,
    conj,
    copyto,
    divide,
    dot,
    equal,
    expand_dims,
    find_max,
    finfo,
    floor_divide,
    full,
    full_like,
    greater,
    hstack,
    iinfo,
    in1d,
    index,
    inf,
    linspace,
    logaddexp,
    logaddexp2,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    logspace,
    matmul,
    mean,
    multiply,
    nan,
    negative,
    np_matmul,
    ones,
    ones_like,
    positive,
    power,
    ravel,
    reciprocal,
    reshape,
    result_type,
    rint,
    round,
    searchsorted,
    sign,
    square,
    subtract,
    sum,
    transpose,
    true_divide,
    unique,
    var,
    zeros,
    zeros_like,
)
from .api.kernel_builtins import *  # noqa: E402,F403
from .api.policies import Iterate, MDRangePolicy, RangePolicy, Rank  # noqa: E402
from .api.random_pools import (  # noqa: E402
    Random_XorShift64_Pool,
    Random_XorShift1024_Pool,
    RandomPool,
)
from .api.reducers import (  # noqa: E402
    BAnd,
    BOr,
    LAnd,
    LOr,
    Max,
    MaxLoc,
    Min,
    MinLoc,
    MinMax,
    MinMaxLoc,
    MinMaxLocScalar,
    MinMaxScalar,
    Prod,
    Reducer,
    Sum,
    ValLocScalar,
)
from .api.runtime_settings import (  # noqa: E402
    disable_uvm,
    enable_uvm,
    finalize,
    get_default_precision,
    get_device_id,
    initialize,
    is_uvm_enabled,
    set_default_precision,
    set_device_id,
)
from .api.spaces import (  # noqa: E402
    Cuda,
    Debug,
    Default,
    DeviceExecutionSpace,
    ExecutionPolicy,
    ExecutionSpace,
    ExecutionSpaceInstance,
    OpenMP,
    Serial,
    fence,
    flush,
    get_default_space,
    is_host_execution_space,
    set_default_space,
)
from .api.teams import (  # noqa: E402
    AUTO,
    PerTeam,
    PerThread,
    ScratchView,
    ScratchView1D,
    ScratchView2D,
    ScratchView3D,
    ScratchView4D,
    ScratchView5D,
    ScratchView6D,
    ScratchView7D,
    ScratchView8D,
    TeamMember,
    TeamPolicy,
    TeamThreadMDRange,
    TeamThreadRange,
    TeamVectorRange,
    ThreadVectorRange,
    single,
)
from .api.timer import Timer  # noqa: E402
from .api.types import (  # noqa: E402
    Acc,
    DataType,
    DataTypeClass,
    View1D,
    View2D,
    View3D,
    View4D,
    View5D,
    View6D,
    View7D,
    View8D,
    bool_,
    complex64,
    complex128,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .api.views import (  # noqa: E402
    Layout,
    MemorySpace,
    Trait,
    View,
    ViewTypeInfo,
    array,
    asarray,
    get_default_layout,
    get_default_memory_space,
)
from .api.workloads import callback, execute, functor, main, workload  # noqa: E402
from .errors import (  # noqa: E402
    AnnotationError,
    ArgumentTypeError,
    CacheError,
    CacheWriteError,
    CompileError,
    DispatchError,
    KernelError,
    KernelIndexError,
    KernelOverflowError,
    KernelTeamError,
    KernelValueError,
    KernelZeroDivisionError,
    PkernelsError,
    SpaceError,
    TranslationError,
    UnsafeCacheError,
    UnsupportedSpaceError,
)
from .runtime import hooks  # noqa: E402
from .runtime.dispatch import parallel_for, parallel_reduce, parallel_scan  # noqa: E402

double = float64
real = float64
float = float32  # noqa: A001 - PyKokkos spells single precision pk.float
bool = bool_  # noqa: A001 - PyKokkos' name of the boolean element type
# PyKokkos' base class of views and its slices' class: views and their slices are pk.View.
ViewType = Subview = View
# PyKokkos' earlier names of pk.array (a view of an existing array, not a copy)
from_numpy = from_cupy = from_array = array


# PyKokkos puts the members of these enums in its namespace too: pk.LayoutRight, ...
LayoutDefault, LayoutLeft, LayoutRight = Layout  # noqa: E402
MemorySpaceDefault, HostSpace, CudaSpace = MemorySpace  # noqa: E402
TraitDefault, Atomic, RandomAccess, Restrict, Unmanaged = Trait  # noqa: E402


def __getattr__(name: str) -> object:
    """``pk.HIP``, ``pk.SYCL`` ...: spaces PyKokkos or Kokkos have and pkernels lacks are
    refused with what to use instead (an UnsupportedSpaceError, an AttributeError)."""
    from .api.spaces import unsupported_space

    error = unsupported_space(name) if not name.startswith("_") else None
    if error is not None:
        raise error
    raise AttributeError(f"module 'pkernels' has no attribute {name!r}")


# `from pkernels import *` brings every public name but those that would shadow Python's
# own builtins in the importing module with another meaning (np.any of a generator is
# always true; pk.bool is a type, not a function): pk.sum, pk.all, pk.any, pk.round and
# pk.bool stay qualified.
__all__ = [
    name
    for name in dir()
    if not name.startswith("_") and name not in ("sum", "all", "any", "round", "bool")
]
