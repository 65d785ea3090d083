"""The on-disk cache of compiled kernels.

Entries live in a private directory (``$PKERNELS_CACHE_DIR``, else
``$XDG_CACHE_HOME/pkernels``, else ``~/.cache/pkernels``), mode 0700, one directory
per key. Keys hash the generated source, the compiler and its version, the flags and
the pkernels version, so an edited kernel is a new entry. Files are written under a
temporary name and renamed into place, so no process ever sees a partial file; one
process at a time builds an entry (:mod:`.lock`), the others wait and load its build.

Nothing is loaded from a directory or file another user could write (:mod:`.trust`), nor
a build whose bytes are not those recorded when it was written (:mod:`.integrity`): such
a build is made again. A write that fails (a full disk, a read-only file system) raises
:class:`~pkernels.errors.CacheWriteError` naming the path.
"""

from __future__ import annotations

import errno
import hashlib
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

from .. import __version__
from ..errors import CacheWriteError
from . import integrity
from .elf import elf_problem
from .lock import LOCK_NAME, EntryLock
from .trust import require_private_directory


def cache_root() -> Path:
    """The cache's root directory, made (mode 0700) if missing; refused
    (:class:`~pkernels.errors.UnsafeCacheError`) when another user could write it."""
    explicit = os.environ.get("PKERNELS_CACHE_DIR")
    if explicit:
        root = Path(explicit)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = Path(base) / "pkernels"
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise write_failure(root, exc, "create the kernel cache directory") from None
    require_private_directory(root, root=True)
    return root


def cache_key(
    source: str,
    compiler: str,
    compiler_version: str,
    flags: tuple[str, ...],
    target: str = "",
    runtime: str = "",
) -> str:
    """The cache key of a build. ``target`` names the CPU when the flags tune for the
    host (``-march=native``): such a library may not run on another CPU model, and a
    cache in a home directory is often shared by the nodes of a cluster. ``runtime``:
    the digest of the runtime headers the source includes (:mod:`.runtime`)."""
    h = hashlib.sha256()
    parts = (__version__, compiler, compiler_version, " ".join(flags), target, runtime, source)
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def entry_dir(key: str) -> Path:
    """The directory of cache entry ``key``, made if missing; refused like the root."""
    # One level at a time: mkdir(parents=True) would give the middle level default modes.
    path = cache_root()
    for part in (key[:2], key):
        path = path / part
        try:
            path.mkdir(mode=0o700, exist_ok=True)
        except OSError as exc:
            raise write_failure(path, exc, "create the cache directory") from None
        require_private_directory(path, root=False)
    return path


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so readers see the old file or the whole new one.
    A failure raises :class:`~pkernels.errors.CacheWriteError` naming ``path``."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    except OSError as exc:
        raise write_failure(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise write_failure(path, exc) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def cached_build(product: Path, make: Callable[[Path], None]) -> bool:
    """Make sure ``product`` (a compiled file in a cache entry) is a whole build made by
    this user: True when it was built now by ``make(path)``, which writes the file at
    ``path`` (a temporary name beside ``product``), False when the cache had it.

    One process at a time builds an entry: the others wait for its lock, then load what
    it built. A build whose bytes do not match the checksum recorded with it (cut short,
    changed since) is built again, with a warning."""
    if integrity.problem(product) is None:
        return False
    try:
        lock = EntryLock(product.parent)
    except OSError as exc:
        raise write_failure(product.parent / LOCK_NAME, exc) from None
    with lock:
        fault = integrity.problem(product)  # another process may have built it meanwhile
        if fault is None:
            return False
        if fault != integrity.MISSING:
            warnings.warn(
                f"pkernels: the cached build {product} was not loaded: {fault}; building it again",
                RuntimeWarning,
                stacklevel=2,
            )
        _build_into(product, make)
        return True


def _build_into(product: Path, make: Callable[[Path], None]) -> None:
    try:
        fd, name = tempfile.mkstemp(
            dir=product.parent, prefix=f".{product.stem}.", suffix=product.suffix
        )
        os.close(fd)
    except OSError as exc:
        raise write_failure(product, exc) from None
    tmp = Path(name)
    try:
        make(tmp)
        data = tmp.read_bytes()
        short = elf_problem(data)
        if short is not None:
            raise CacheWriteError(
                f"pkernels could not write {product}: the compiler's output is {short}. "
                f"{_advice(errno.ENOSPC)}"
            )
        os.chmod(tmp, 0o700)
        os.replace(tmp, product)
    except OSError as exc:
        if isinstance(exc, CacheWriteError):
            raise
        raise write_failure(product, exc) from None
    finally:
        tmp.unlink(missing_ok=True)
    write_atomically(integrity.record_path(product), integrity.record_text(product, data))


def write_failure(
    path: Path, exc: OSError, action: str = "write", detail: str = ""
) -> CacheWriteError:
    """The error to raise when ``action`` on ``path`` failed with ``exc`` (``detail``:
    more lines for the message, e.g. the compiler's output)."""
    reason = exc.strerror or str(exc)
    message = f"pkernels could not {action} {path}: {reason}. {_advice(exc.errno)}"
    return CacheWriteError(f"{message}\n{detail}" if detail else message)


def _advice(code: int | None) -> str:
    if code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return (
            "The disk (or your quota) is full: free some space there, or set "
            "PKERNELS_CACHE_DIR to a directory on a file system with room."
        )
    return "Set PKERNELS_CACHE_DIR to a directory you can write (e.g. ~/.cache/pkernels)."
