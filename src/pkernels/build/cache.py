"""The on-disk cache of compiled kernels.

Entries live in a private directory (``$PKERNELS_CACHE_DIR``, else
``$XDG_CACHE_HOME/pkernels``, else ``~/.cache/pkernels``), mode 0700, one directory
per key. Keys hash the generated source, the compiler and its version, the flags and
the pkernels version, so an edited kernel is a new entry. Files are written under a
temporary name and renamed into place, so concurrent processes compiling the same
kernel never see a partial file: the last rename wins and both wrote the same bytes.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from .. import __version__


def cache_root() -> Path:
    explicit = os.environ.get("PKERNELS_CACHE_DIR")
    if explicit:
        root = Path(explicit)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = Path(base) / "pkernels"
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    return root


def cache_key(
    source: str,
    compiler: str,
    compiler_version: str,
    flags: tuple[str, ...],
    target: str = "",
) -> str:
    """The cache key of a build. ``target`` names the CPU when the flags tune for the
    host (``-march=native``): such a library may not run on another CPU model, and a
    cache in a home directory is often shared by the nodes of a cluster."""
    h = hashlib.sha256()
    for part in (__version__, compiler, compiler_version, " ".join(flags), target, source):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def entry_dir(key: str) -> Path:
    # One level at a time: mkdir(parents=True) would give the middle level default modes.
    shard = cache_root() / key[:2]
    shard.mkdir(mode=0o700, exist_ok=True)
    path = shard / key
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so readers see the old file or the whole new one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
