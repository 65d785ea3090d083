"""The runtime headers generated kernels include (``src/pkernels/include/pkernels``).

The C++ and CUDA runtime is header files shipped in the package (package data), not
text pasted into each kernel: a kernel's source starts with ``#include
"pkernels/cpu.hpp"`` (or ``cuda.hpp``) and every compiler is given
:func:`include_option`. A build depends on what those headers say, so
:func:`runtime_digest` (a hash of all of them) is part of every cache key: editing a
header makes new builds, and a cached build is only reused with the headers it was made
from. Where the package is installed is not part of the key (the same headers at
another path give the same builds).
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

#: The directory given to compilers with ``-I``; the headers are under ``pkernels/``.
INCLUDE_DIR = Path(__file__).resolve().parent.parent / "include"


def include_option() -> str:
    """The compiler option that makes ``#include "pkernels/..."`` find the runtime
    (g++, nvcc and NVRTC spell it alike)."""
    return f"-I{INCLUDE_DIR}"


@functools.cache
def runtime_digest() -> str:
    """A hash of every runtime header (its path under :data:`INCLUDE_DIR` and its bytes),
    read once per process."""
    h = hashlib.sha256()
    headers = sorted(p for p in INCLUDE_DIR.rglob("*") if p.is_file())
    if not headers:  # a broken install: say so rather than compile against nothing
        raise FileNotFoundError(f"pkernels' runtime headers are missing from {INCLUDE_DIR}")
    for path in headers:
        h.update(path.relative_to(INCLUDE_DIR).as_posix().encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()
