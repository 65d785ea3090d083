"""Build of pkernels' C extensions; everything else is in pyproject.toml.

``pkernels.runtime._launch`` marshals a kernel's arguments in C;
``pkernels.runtime._crash_report`` says which kernel and Python line a fatal signal
came from. Both are optional: when they cannot be built (no C compiler or Python
headers), pkernels launches through ctypes and a crash is Python's bare one.
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
            "pkernels.runtime._crash_report",
            sources=["src/pkernels/runtime/_crash_report.c"],
            optional=True,
        ),
    ]
)
