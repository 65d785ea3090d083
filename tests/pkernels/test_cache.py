"""The on-disk cache of compiled kernels: private directory, reuse across processes and
after the in-process memo is cleared, new keys for edited kernels, and concurrent
compiles of one kernel by several processes."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from pkt_support import load_module

import pkernels as pk
from pkernels.build import cache
from pkernels.build.compiler import build

KERNEL_MODULE = """\
import pkernels as pk


@pk.workunit
def poly(i, x, out):
    out[i] = 3 * x[i] * x[i] + 1
"""

EDITED_MODULE = """\
import pkernels as pk


@pk.workunit
def poly(i, x, out):
    out[i] = 3 * x[i] * x[i] - 1
"""

# Run in a child process: dispatch the kernel of module `name` in `directory`, print the
# result, whether this process compiled it, and the library path.
CHILD = """\
import os, sys, time
sys.path.insert(0, {directory!r})
import numpy as np
import pkernels as pk
import {name} as m

start_flag = {start_flag!r}
if start_flag:
    while not os.path.exists(start_flag):
        time.sleep(0.001)
x = np.arange(8.0)
out = np.zeros(8)
pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 8), m.poly, x=x, out=out)
(kernel,) = m.poly.__pkernels__.specializations.values()
print(repr(out.tolist()))
print(kernel.module.compile_seconds > 0)
print(kernel.library)
"""


def _child(directory: Path, name: str, cache_dir: Path, start_flag: str = "") -> subprocess.Popen:
    # The child imports the same pkernels as this process, whatever is installed.
    src = str(Path(pk.__file__).resolve().parents[1])
    pythonpath = os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))
    env = dict(
        os.environ,
        PKERNELS_CACHE_DIR=str(cache_dir),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONPATH=pythonpath,
    )
    script = CHILD.format(directory=str(directory), name=name, start_flag=start_flag)
    return subprocess.Popen(
        [sys.executable, "-c", script],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen) -> tuple[list[float], bool, Path]:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    result, compiled, library = out.strip().splitlines()
    return eval(result), compiled == "True", Path(library)  # noqa: S307 - our own repr


def _kernel_of(workunit):
    (kernel,) = workunit.__pkernels__.specializations.values()
    return kernel


def test_cache_directory_is_private(tmp_path, monkeypatch):
    root = tmp_path / "nested" / "kcache"
    monkeypatch.setenv("PKERNELS_CACHE_DIR", str(root))
    module = load_module(tmp_path, KERNEL_MODULE)
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 2), module.poly, x=np.ones(2), out=np.zeros(2))
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    kernel = _kernel_of(module.poly)
    assert root in kernel.library.parents
    # Every directory below it is private too.
    subdirectories = [p for p in root.rglob("*") if p.is_dir()]
    assert subdirectories
    for path in subdirectories:
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path


def test_xdg_cache_home_is_the_default(tmp_path, monkeypatch):
    monkeypatch.delenv("PKERNELS_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_root() == tmp_path / "xdg" / "pkernels"
    assert stat.S_IMODE((tmp_path / "xdg" / "pkernels").stat().st_mode) == 0o700


def test_session_cache_is_not_the_users(private_kernel_cache):
    assert cache.cache_root() == private_kernel_cache
    home_cache = Path(os.path.expanduser("~")) / ".cache" / "pkernels"
    assert cache.cache_root() != home_cache


def test_cleared_memo_loads_from_disk_without_compiling(tmp_path):
    module = load_module(tmp_path, KERNEL_MODULE)
    x = np.arange(5.0)
    out = np.zeros(5)
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 5), module.poly, x=x, out=out)
    first = _kernel_of(module.poly)
    assert first.module.compile_seconds > 0
    mtime = first.library.stat().st_mtime_ns
    module.poly.__pkernels__.specializations.clear()
    out[:] = 0
    pk.parallel_for(pk.RangePolicy(pk.Serial, 0, 5), module.poly, x=x, out=out)
    second = _kernel_of(module.poly)
    assert second is not first
    assert second.module.compile_seconds == 0.0
    assert second.library == first.library
    assert second.library.stat().st_mtime_ns == mtime
    np.testing.assert_array_equal(out, 3 * x * x + 1)


def test_second_process_loads_from_disk(tmp_path):
    cache_dir = tmp_path / "cache"
    (tmp_path / "proc_kernel.py").write_text(KERNEL_MODULE)
    result1, compiled1, library1 = _finish(_child(tmp_path, "proc_kernel", cache_dir))
    mtime = library1.stat().st_mtime_ns
    result2, compiled2, library2 = _finish(_child(tmp_path, "proc_kernel", cache_dir))
    assert compiled1 and not compiled2
    assert library1 == library2
    assert library2.stat().st_mtime_ns == mtime
    assert result1 == result2 == [3 * v * v + 1 for v in range(8)]


def test_editing_the_kernel_gives_a_new_key(tmp_path):
    name = "edited_kernel_mod"
    x = np.arange(4.0)
    module = load_module(tmp_path, KERNEL_MODULE, name)
    out = np.zeros(4)
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 4), module.poly, x=x, out=out)
    original = _kernel_of(module.poly)
    np.testing.assert_array_equal(out, 3 * x * x + 1)

    module = load_module(tmp_path, EDITED_MODULE, name)  # same file, new text
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 4), module.poly, x=x, out=out)
    edited = _kernel_of(module.poly)
    assert edited.module.key != original.module.key
    assert edited.module.compile_seconds > 0
    np.testing.assert_array_equal(out, 3 * x * x - 1)

    module = load_module(tmp_path, KERNEL_MODULE, name)  # edited back: the old entry
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 4), module.poly, x=x, out=out)
    again = _kernel_of(module.poly)
    assert again.module.key == original.module.key
    assert again.module.compile_seconds == 0.0
    np.testing.assert_array_equal(out, 3 * x * x + 1)


def test_moving_a_line_changes_the_key_because_line_directives_change(tmp_path):
    module = load_module(tmp_path, KERNEL_MODULE, "line_shift_a")
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 1), module.poly, x=np.ones(1), out=np.zeros(1))
    shifted = load_module(tmp_path, "\n" + KERNEL_MODULE, "line_shift_a")
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 1), shifted.poly, x=np.ones(1), out=np.zeros(1))
    assert _kernel_of(module.poly).module.key != _kernel_of(shifted.poly).module.key


def test_concurrent_compiles_of_one_kernel(tmp_path):
    cache_dir = tmp_path / "shared-cache"
    (tmp_path / "race_kernel.py").write_text(KERNEL_MODULE)
    start_flag = tmp_path / "go"
    procs = [_child(tmp_path, "race_kernel", cache_dir, str(start_flag)) for _ in range(4)]
    start_flag.touch()  # all children are importing or waiting: release them together
    results = [_finish(p) for p in procs]
    expected = [3 * v * v + 1 for v in range(8)]
    assert all(r[0] == expected for r in results)
    libraries = {r[2] for r in results}
    assert len(libraries) == 1
    (library,) = libraries
    entry = library.parent
    # One library, its checksum, one source, the lock; no temporary files left behind.
    assert sorted(p.name for p in entry.iterdir()) == [
        "kernel.cpp", "kernel.so", "kernel.so.sha256", "lock"
    ]  # fmt: skip
    # And it is a valid library for a later process, which does not compile.
    result, compiled, again = _finish(_child(tmp_path, "race_kernel", cache_dir))
    assert result == expected and not compiled and again == library


def test_cache_key_covers_every_input():
    base = ("src", "/usr/bin/g++", "g++ 12", ("-O3",))
    key = cache.cache_key(*base)
    assert key == cache.cache_key(*base)
    variants = [
        ("src2", "/usr/bin/g++", "g++ 12", ("-O3",)),
        ("src", "/usr/bin/clang++", "g++ 12", ("-O3",)),
        ("src", "/usr/bin/g++", "g++ 13", ("-O3",)),
        ("src", "/usr/bin/g++", "g++ 12", ("-O0",)),
        ("src", "/usr/bin/g++", "g++ 12", ("-O3",), "x86_64|another CPU|avx2"),
    ]
    assert len({cache.cache_key(*v) for v in variants} | {key}) == 6


def test_host_tuned_builds_are_keyed_by_the_cpu(monkeypatch):
    """A release build (-march=native) made on another CPU model is not reused; a
    portable debug build is."""
    from pkernels.build import compiler

    source = 'extern "C" int pk_cpu_probe() { return 7; }\n'
    here_release = build(source, False, "probe")
    here_debug = build(source, True, "probe")
    monkeypatch.setattr(compiler, "host_cpu", lambda: "x86_64|another CPU model|sse2")
    there_release = build(source, False, "probe")
    there_debug = build(source, True, "probe")
    assert there_release.key != here_release.key and there_release.compile_seconds > 0
    assert there_debug.key == here_debug.key and there_debug.compile_seconds == 0.0


def test_debug_and_release_builds_are_separate_entries():
    source = 'extern "C" int pk_answer() { return 42; }\n'
    release = build(source, False, "answer")
    debug = build(source, True, "answer")
    assert release.key != debug.key
    assert release.library != debug.library
    assert release.library.exists() and debug.library.exists()
    again = build(source, False, "answer")
    assert again.compile_seconds == 0.0 and again.library == release.library


def test_write_atomically_leaves_only_the_file(tmp_path):
    target = tmp_path / "file.bin"
    cache.write_atomically(target, b"one")
    cache.write_atomically(target, b"two")
    assert target.read_bytes() == b"two"
    assert [p.name for p in tmp_path.iterdir()] == ["file.bin"]


def test_generated_source_path_is_substituted():
    source = textwrap.dedent(
        """\
        #line 3 "/x/y.py"
        extern "C" int pk_f() { return 1; }
        #line 4 "@PK_GENERATED_PATH@"
        extern "C" int pk_g() { return 2; }
        """
    )
    built = build(source, False, "subst")
    text = built.source.read_text()
    assert "@PK_GENERATED_PATH@" not in text
    assert f'#line 4 "{built.source}"' in text


@pytest.mark.parametrize("odd", ['with "quote', "with\\backslash", "with space"])
def test_cache_dir_with_odd_characters(tmp_path, monkeypatch, odd):
    monkeypatch.setenv("PKERNELS_CACHE_DIR", str(tmp_path / odd))
    module = load_module(tmp_path, KERNEL_MODULE)
    out = np.zeros(3)
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 3), module.poly, x=np.arange(3.0), out=out)
    assert out.tolist() == [1.0, 4.0, 13.0]


def test_a_compiler_failure_names_the_python_line_of_gcc_and_of_nvrtc():
    """A rejected generated source is reported as pkernels' bug, at the Python line its
    ``#line`` directives name, whichever compiler's message form."""
    from pathlib import Path

    from pkernels.build.compiler import describe_compile_failure
    from pkernels.runtime.cuda_compile import _describe_failure

    gcc = "/p/k.py:12:5: error: 'x' was not declared in this scope\nmore"
    text = describe_compile_failure(gcc, "kernel k", Path("/c/kernel.cpp"))
    assert text.startswith("internal error: the C++ compiler rejected the code generated for ")
    assert "kernel k at /p/k.py:12: 'x' was not declared" in text
    assert "Generated source: /c/kernel.cpp" in text and text.endswith("more")
    nvrtc = '/p/k.py(7): error: identifier "y" is undefined'
    text = _describe_failure(nvrtc, "kernel k", Path("/c/kernel.cu"))
    assert (
        'the CUDA compiler rejected the code generated for kernel k at /p/k.py:7: identifier "y"'
        in text
    )


def test_nvrtc_is_asked_to_split_its_compile_and_compiles_whole_where_it_refuses(monkeypatch):
    """``--split-compile=0`` goes with every NVRTC compile; an NVRTC that refuses the
    option (NVRTC_ERROR_INVALID_OPTION) compiles the program again without it, and is not
    asked again. (A stand-in for CuPy's NVRTC bindings: this machine may have no GPU.)"""
    import types
    from pathlib import Path

    from pkernels.runtime import cuda_compile

    class NVRTCError(Exception):
        def __init__(self, status: int) -> None:
            super().__init__(f"NVRTC error {status}")
            self.status = status

    seen: list[list[str]] = []
    state = {"takes_it": True, "programs": 0}

    def compile_program(program, options):
        seen.append(list(options))
        if cuda_compile.SPLIT_COMPILE in options and not state["takes_it"]:
            raise NVRTCError(5)

    def create_program(code, name, headers, names):
        state["programs"] += 1
        return state["programs"]

    nvrtc = types.SimpleNamespace(
        NVRTCError=NVRTCError, createProgram=create_program, compileProgram=compile_program,
        destroyProgram=lambda program: None, getCUBIN=lambda program: b"cubin",
        getProgramLog=lambda program: "",
    )  # fmt: skip
    cp = types.SimpleNamespace(cuda=types.SimpleNamespace(nvrtc=nvrtc))
    monkeypatch.setattr(cuda_compile, "_whole_cubin", lambda cubin: cubin)
    monkeypatch.setattr(cuda_compile, "_split_compile", [True])
    path = Path("/c/kernel.cu")
    assert cuda_compile._compile(cp, "code", "sm_90", "k", path) == b"cubin"
    assert cuda_compile.SPLIT_COMPILE in seen[-1]
    state["takes_it"] = False
    seen.clear()
    assert cuda_compile._compile(cp, "code", "sm_90", "k", path) == b"cubin"
    assert [cuda_compile.SPLIT_COMPILE in options for options in seen] == [True, False]
    seen.clear()
    cuda_compile._compile(cp, "code", "sm_90", "k", path)
    assert [cuda_compile.SPLIT_COMPILE in options for options in seen] == [False]
