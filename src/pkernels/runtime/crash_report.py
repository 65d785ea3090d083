"""What a kernel that crashes outside a debugger says: the kernel, its Python file and
line, the source line, and how to find the bug (``PKERNELS_CHECKS=1``, pkdb); then the
program ends as Python does on a fatal signal. The handler is C
(``pkernels.runtime._crash_report``, built at install; without it a crash is Python's
bare "Segmentation fault")."""

from __future__ import annotations

import shutil
from pathlib import Path

try:
    from . import _crash_report
except ImportError:  # pragma: no cover - not built
    _crash_report = None  # type: ignore[assignment]

_installed = False


def watch(library: Path, kernel: str) -> None:
    """Report a fatal signal in ``library`` (a loaded kernel library of workunit
    ``kernel``); the handler is installed at the first call."""
    global _installed
    if _crash_report is None:
        return
    if not _installed:
        _crash_report.install(shutil.which("addr2line") or "")
        _installed = True
    _crash_report.register(str(library), kernel)
