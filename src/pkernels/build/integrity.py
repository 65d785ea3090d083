"""Checksums of cached builds: recorded when a build is written, checked before loading.

Beside each compiled file (``kernel.so``, ``kernel.cubin``) the cache keeps its SHA-256
in ``<name>.sha256`` (``sha256sum`` format, so ``sha256sum -c`` checks it too), written
once the file is complete. A file is loaded only when it is this user's, no one else can
write it, and its bytes have the recorded checksum: a file cut short (a full disk, a
killed copy) or changed since is built again instead of being loaded, which would kill
the process with SIGBUS or run code pkernels did not build.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .trust import require_private_file

#: What :func:`problem` says about a build that was never completed (or never made):
#: the normal case of a first build, not a fault to report.
MISSING = "not built yet"


def record_path(product: Path) -> Path:
    """Where the checksum of ``product`` is recorded."""
    return product.with_name(product.name + ".sha256")


def record_text(product: Path, data: bytes) -> bytes:
    """The checksum record of ``product`` holding ``data``."""
    return f"{hashlib.sha256(data).hexdigest()}  {product.name}\n".encode()


def problem(product: Path) -> str | None:
    """None when ``product`` may be loaded; else why not (:data:`MISSING` when it or its
    record does not exist). Raises :class:`~pkernels.errors.UnsafeCacheError` for a file
    another user could have written."""
    for path in (product, record_path(product)):
        try:
            info = path.lstat()
        except FileNotFoundError:
            return MISSING
        except OSError as exc:
            return f"cannot read it ({exc.strerror or exc})"
        require_private_file(path, info)
    try:
        data = product.read_bytes()
        recorded = record_path(product).read_bytes()
    except OSError as exc:
        return f"cannot read it ({exc.strerror or exc})"
    if record_text(product, data) != recorded:
        return "its contents do not match the checksum recorded when it was built"
    return None
