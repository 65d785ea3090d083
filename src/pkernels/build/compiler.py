"""Compile generated C++ into a shared library, through the on-disk cache."""

from __future__ import annotations

import errno
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from ..errors import CacheWriteError, CompileError
from .cache import cache_key, cached_build, entry_dir, write_atomically, write_failure
from .runtime import include_option, runtime_digest
from .toolchain import host_cpu, host_toolchain

GENERATED_PATH = "@PK_GENERATED_PATH@"
#: The definition that makes a release build keep the debug build's checks.
CHECKS_DEFINE = "PK_CHECKS=1"


@dataclass(frozen=True)
class BuiltModule:
    """A compiled kernel module on disk."""

    library: Path  # the .so to load
    source: Path  # the generated C++ (what #line resets point at)
    key: str
    debug: bool
    compile_seconds: float  # 0.0 when it came from the cache
    checked: bool = False  # a release build keeping the debug build's checks (PK_CHECKS)


_ERROR_LINE = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<msg>.*)$"
)


def build(
    source: str,
    debug: bool,
    label: str,
    defines: tuple[str, ...] = (),
    while_compiling: Callable[[], AbstractContextManager[object]] = nullcontext,
) -> BuiltModule:
    """The shared library for ``source`` (compiled now, or found in the cache).

    ``source`` may contain :data:`GENERATED_PATH`, replaced by the path the C++ file is
    stored at (the key is computed before, so it does not depend on where the cache is).
    ``defines``: extra preprocessor definitions (``"PK_HYBRID=1"``, :data:`CHECKS_DEFINE`),
    part of the key. The runtime headers the source includes are found through
    :func:`~.runtime.include_option`; their digest is part of the key, their path not.
    ``while_compiling``: a context entered around the compiler's run only (not around
    a cache hit), e.g. the notice that a compile takes a while.
    """
    tool = host_toolchain()
    flags = tool.flags(debug) + tuple(f"-D{d}" for d in defines)
    target = host_cpu() if "-march=native" in flags else ""
    key = cache_key(source, tool.path, tool.version, flags, target, runtime_digest())
    directory = entry_dir(key)
    library = directory / "kernel.so"
    cpp = directory / "kernel.cpp"
    checked = CHECKS_DEFINE in defines
    start = time.perf_counter()

    def compile_into(output: Path) -> None:
        write_atomically(cpp, source.replace(GENERATED_PATH, c_string_body(str(cpp))).encode())
        with while_compiling():
            proc = subprocess.run(
                [tool.path, *flags, include_option(), str(cpp), "-o", str(output)],
                capture_output=True,
                text=True,
                check=False,
            )
        if proc.returncode != 0:
            unwritten = _unwritten(proc.stderr, library)
            if unwritten is not None:
                raise unwritten
            raise CompileError(describe_compile_failure(proc.stderr, label, cpp))

    if not cached_build(library, compile_into):
        return BuiltModule(library, cpp, key, debug, 0.0, checked)
    return BuiltModule(library, cpp, key, debug, time.perf_counter() - start, checked)


# What the compiler, assembler and linker print when a write fails (strerror texts).
_WRITE_ERRORS = {
    "No space left on device": errno.ENOSPC,
    "Disk quota exceeded": errno.EDQUOT,
    "File too large": errno.EFBIG,
    "Read-only file system": errno.EROFS,
    "Permission denied": errno.EACCES,
    "Input/output error": errno.EIO,
}
_PATH = re.compile(r"/[^\s:'\"]+")


def _unwritten(stderr: str, library: Path) -> CacheWriteError | None:
    """The error to raise when the compiler failed because it could not write a file
    (a full disk, in the cache or in the temporary directory): it names the file, where
    the compiler's output says which one, else the library being built."""
    for line in stderr.splitlines():
        found = next((text for text in _WRITE_ERRORS if text in line), None)
        if found is None:
            continue
        places = (os.path.join(str(library.parent), ""), os.path.join(tempfile.gettempdir(), ""))
        paths = [p for p in _PATH.findall(line) if p.startswith(places)]
        path = Path(paths[-1]) if paths else library
        detail = f"--- compiler output ---\n{stderr.strip()[-2000:]}"
        return write_failure(path, OSError(_WRITE_ERRORS[found], found), detail=detail)
    return None


def c_string_body(text: str) -> str:
    """``text`` escaped for use between the quotes of a C string (a ``#line`` file name)."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def describe_compile_failure(
    log: str,
    label: str,
    source: Path,
    compiler: str = "C++",
    error_line: re.Pattern[str] = _ERROR_LINE,
) -> str:
    """A compiler failure is a pkernels bug: say where it came from, in Python terms (the
    file and line of the first ``error_line`` in ``log``: the ``#line`` directives')."""
    first = next((m for m in map(error_line.match, log.splitlines()) if m), None)
    where = f" at {first['file']}:{first['line']}" if first else ""
    detail = first["msg"] if first else log.strip()[-2000:]
    return (
        f"internal error: the {compiler} compiler rejected the code generated for {label}"
        f"{where}: {detail}\nGenerated source: {source}\nThis is a bug in pkernels; please "
        f"report it with the kernel's source.\n--- compiler output ---\n{log.strip()[-4000:]}"
    )
