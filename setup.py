"""Build of pkernels' C extensions; everything else is in pyproject.toml.

``pkernels.runtime._launch`` marshals a kernel's arguments in C;
``pkernels.runtime._cuda_launch`` launches a Cuda range kernel in one C call;
``pkernels.runtime._crash_report`` says which kernel and Python line a fatal signal
came from; ``pkernels.runtime._boundary`` makes the public ``parallel_*`` calls, so that
pkernels' errors show the user's frames only. All are optional: when they cannot be
built (no C compiler or Python headers), pkernels launches through ctypes, a crash is
Python's bare one, Cuda launches go through CuPy and tracebacks show pkernels' frames
too.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "pkernels.runtime._launch",
            sources=["src/pkernels/runtime/_launch.c"],
            optional=True,
        ),
        Extension(
            "pkernels.runtime._cuda_launch",
            sources=["src/pkernels/runtime/_cuda_launch.c"],
            libraries=["dl"],
            optional=True,
        ),
        Extension(
            "pkernels.runtime._boundary",
            sources=["src/pkernels/runtime/_boundary.c"],
            optional=True,
        ),
        Extension(
            "pkernels.runtime._crash_report",
            sources=["src/pkernels/runtime/_crash_report.c"],
            optional=True,
        ),
    ]
)
