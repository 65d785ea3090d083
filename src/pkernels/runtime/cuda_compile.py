"""The ``Cuda`` execution space's compiler: a translated workunit's CUDA C++ to a loaded
kernel, through NVRTC (nvcc where NVRTC cannot run) and the pkernels cache.

The source (``kernel.cu``, whose ``#line`` directives point at the Python file) and its
cubin are kept in the pkernels cache, keyed by the source, the runtime headers' digest,
the NVRTC version, the options and the GPU architecture, so another process loads the
cubin without compiling. The options keep IEEE arithmetic as on the CPU
(:data:`OPTIONS`).

Three builds of each kernel (:data:`BUILD_OPTIONS`), as on the CPU: release; checked
(release code keeping the debug build's checks: an index out of range, an integer
division by zero, a float no integer holds raise the CPU's ``Kernel*Error`` after the
launch, naming the Python line, the block and the thread); debug (NVRTC ``-G``: the
workunit a function of its own, every variable kept, for cuda-gdb, with the same
checks). Every build carries line tables (``-lineinfo``), so a crash names the Python
line. :mod:`.cuda_launch` launches what this module loads.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from ..build.cache import cache_key, cached_build, entry_dir, write_atomically
from ..build.compiler import GENERATED_PATH, c_string_body, describe_compile_failure
from ..build.elf import elf_problem
from ..build.runtime import include_option, runtime_digest
from ..errors import CompileError
from ..translate.emit_cuda import CudaEntry
from .cuda_launch import cupy_module

# IEEE arithmetic, as on the CPU: no fused multiply-adds (the CPU builds'
# -ffp-contract=off), float32 subnormals kept, correctly rounded division and sqrt.
# (--device-int128: print() of floats decides its digits in 128-bit integers.)
OPTIONS = (
    "-std=c++17", "--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true",
    "--device-int128",
)  # fmt: skip
NVCC_OPTIONS = ("-std=c++17", "--fmad=false", "-ftz=false", "-prec-div=true", "-prec-sqrt=true")
#: What each build adds to :data:`OPTIONS` (NVRTC and nvcc spell these alike).
BUILD_OPTIONS: dict[str, tuple[str, ...]] = {
    "release": ("-lineinfo",),
    "checked": ("-lineinfo", "-DPK_CHECKS=1"),
    "debug": ("-G", "-DPK_DEBUG=1"),
}
#: What a range or box module's 64-bit build adds (cuda.hpp's PK_WIDE).
WIDE_OPTIONS = ("-DPK_WIDE=1",)
#: NVRTC's option to optimise a module's functions in parallel threads (0: as many as
#: the machine has cores): yAx's release module, its two entries, took 345-360 ms
#: without it and 255-282 ms with it (H100 machine, 16 cores; a one-entry module the
#: same). Given to release and checked builds while NVRTC takes it.
SPLIT_COMPILE = "--split-compile=0"
_split_compile = [True]  # whether NVRTC takes SPLIT_COMPILE (until it refuses it once)
_INVALID_OPTION = 5  # NVRTC_ERROR_INVALID_OPTION


def build_cuda(
    entry: CudaEntry, label: str, build: str = "release", wide: bool = False
) -> tuple[Path, str, Any, Any]:
    """Compile ``entry`` for this GPU (NVRTC; nvcc when NVRTC cannot run) as ``build``
    (see :data:`BUILD_OPTIONS`; ``wide``: a range or box module's 64-bit build,
    ``PK_WIDE``, for launches its 32-bit entry cannot run), through the pkernels cache
    (``kernel.cu`` and ``kernel.cubin`` side by side, one entry per build): the path of
    the generated source, the source as compiled, the loaded ``__global__`` function
    (:meth:`CudaEntry.symbol_in`) and its module.

    NVRTC is called directly rather than through ``cupy.RawModule(code=...)``, which
    appends ``-ftz=true`` to every compile: float32 subnormals would then flush to zero,
    where NumPy and the CPU spaces keep them."""
    cp = cupy_module()
    arch = f"sm_{cp.cuda.Device().compute_capability}"
    try:
        version = "nvrtc " + ".".join(map(str, cp.cuda.nvrtc.getVersion()))
    except Exception:  # noqa: BLE001 - NVRTC missing: nvcc compiles (the key tells them apart)
        version = "nvcc"
    extra = (*BUILD_OPTIONS[build], *WIDE_OPTIONS) if wide else BUILD_OPTIONS[build]
    flags = (*OPTIONS, *extra)
    directory = entry_dir(cache_key(entry.source, "cuda", version, flags, arch, runtime_digest()))
    path, cubin = directory / "kernel.cu", directory / "kernel.cubin"
    code = entry.source.replace(GENERATED_PATH, c_string_body(str(path)))

    def compile_into(output: Path) -> None:
        write_atomically(path, code.encode())
        output.write_bytes(_compile(cp, code, arch, label, path, extra))

    cached_build(cubin, compile_into)  # checked, or compiled once (see build.cache)
    module = cp.RawModule(path=str(cubin))
    return path, code, module.get_function(entry.symbol_in(build, wide)), module


def _compile(
    cp: Any, code: str, arch: str, label: str, path: Path, extra: tuple[str, ...] = ()
) -> bytes:
    """The cubin of ``code`` (stored at ``path``; NVRTC names the program by that path, so
    line tables and cuda-gdb find it), compiled with :data:`OPTIONS`, ``extra`` and, where
    NVRTC takes it, :data:`SPLIT_COMPILE`."""
    try:
        nvrtc = cp.cuda.nvrtc
        program = nvrtc.createProgram(code, str(path), [], [])
    except Exception as failure:  # noqa: BLE001 - no usable NVRTC: nvcc, if there is one
        return _compile_with_nvcc(path, arch, label, failure, extra)
    try:
        options = [*OPTIONS, *extra, include_option(), f"--gpu-architecture={arch}"]
        if _split_compile[0] and "-G" not in extra:  # (debug builds: one entry, kept as they were)
            options.append(SPLIT_COMPILE)
        try:
            nvrtc.compileProgram(program, options)
        except nvrtc.NVRTCError as error:
            if SPLIT_COMPILE in options and getattr(error, "status", None) == _INVALID_OPTION:
                _split_compile[0] = False  # an NVRTC without it: compile again, without it
                return _compile(cp, code, arch, label, path, extra)
            log = nvrtc.getProgramLog(program)
            raise CompileError(_describe_failure(log, label, path)) from None
        return _whole_cubin(bytes(nvrtc.getCUBIN(program)))
    finally:
        nvrtc.destroyProgram(program)


def _whole_cubin(cubin: bytes) -> bytes:
    """The cubin NVRTC made, whole: CuPy's ``getCUBIN`` drops its last byte (it strips a
    C string's terminator, as for PTX), which the cache's ELF check would rightly call a
    cut-short file. That byte is the high byte of the last program header's alignment,
    a zero; put it back only when that makes the ELF whole."""
    if elf_problem(cubin) is not None and elf_problem(cubin + b"\0") is None:
        return cubin + b"\0"
    return cubin


def _compile_with_nvcc(
    path: Path, arch: str, label: str, failure: Exception, extra: tuple[str, ...] = ()
) -> bytes:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise CompileError(
            f"NVRTC could not compile the code generated for {label} ({failure}) and nvcc "
            "is not on the PATH"
        ) from failure
    # NVRTC declares printf itself; nvcc takes it from <cstdio>.
    header = path.parent / "nvrtc_builtins.h"
    write_atomically(header, b"#include <cstdio>\n")
    output = path.parent / f".kernel.{os.getpid()}.cubin"
    try:
        proc = subprocess.run(
            [nvcc, *NVCC_OPTIONS, *extra, include_option(), f"-arch={arch}", "--pre-include",
             str(header), "-cubin", "-x", "cu", str(path), "-o", str(output)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            raise CompileError(_describe_failure(proc.stdout + proc.stderr, label, path))
        return output.read_bytes()
    finally:
        output.unlink(missing_ok=True)


#: NVRTC's and nvcc's error lines: ``file(line): error: ...`` (the ``#line``'s file and line).
_CUDA_ERROR_LINE = re.compile(
    r"^(?P<file>[^\n]+?)\((?P<line>\d+)\): (?:catastrophic )?error: (?P<msg>.*)$"
)


def _describe_failure(log: str, label: str, path: Path) -> str:
    return describe_compile_failure(log, label, path, "CUDA", _CUDA_ERROR_LINE)
