"""Where generated CUDA kernels get their runtime.

The CUDA runtime is header files in ``src/pkernels/include/pkernels``: ``cuda.hpp``
(always, :data:`CUDA_PRELUDE`), ``cuda_print.hpp`` (kernels that ``print``,
:data:`CUDA_PRINT_PRELUDE`), ``cuda_team.hpp`` (TeamPolicy kernels, after a ``#define
PK_SLOT_BYTES``, :data:`CUDA_TEAM_PRELUDE`). What a kernel computes alike on the CPU and
the GPU is one text for both, in ``shared/``. NVRTC and nvcc find them through
:func:`pkernels.build.runtime.include_option`.
"""

CUDA_PRELUDE = '#include "pkernels/cuda.hpp"\n'
CUDA_PRINT_PRELUDE = '#include "pkernels/cuda_print.hpp"\n'
CUDA_TEAM_PRELUDE = '#include "pkernels/cuda_team.hpp"\n'
