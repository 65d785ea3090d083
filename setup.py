"""Build of pkernels' one C extension; everything else is in pyproject.toml.

``pkernels.runtime._launch`` marshals a kernel's arguments in C. It is optional: when
it cannot be built (no C compiler or Python headers), pkernels launches through ctypes.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "pkernels.runtime._launch",
            sources=["src/pkernels/runtime/_launch.c"],
            optional=True,
        )
    ]
)
