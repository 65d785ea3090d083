"""Which debugger pkdb picks for which execution space (pkdb.targets.factory), with
stand-in executables on a private PATH."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pkdb.targets import TargetError, controller_for
from pkdb.targets.factory import cuda_gdb_path, gdb_path


def executable(directory: Path, name: str) -> Path:
    path = directory / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def bare_path(tmp_path, monkeypatch) -> Path:
    """A PATH with nothing on it yet, and no PKDB_GDB / PKDB_CUDA_GDB / CUDA_HOME."""
    for name in ("PKDB_GDB", "PKDB_CUDA_GDB", "CUDA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    return tmp_path


def test_gdb_debugs_cpu_kernels_and_cuda_gdb_stands_in_where_gdb_is_missing(bare_path):
    executable(bare_path, "cuda-gdb")
    assert gdb_path() == str(bare_path / "cuda-gdb")
    executable(bare_path, "gdb")
    assert gdb_path() == "gdb"
    assert cuda_gdb_path() == str(bare_path / "cuda-gdb")


def test_the_environment_names_other_debuggers(bare_path, monkeypatch):
    monkeypatch.setenv("PKDB_GDB", "/opt/gdb-14/bin/gdb")
    monkeypatch.setenv("PKDB_CUDA_GDB", "/opt/cuda/bin/cuda-gdb")
    assert gdb_path() == "/opt/gdb-14/bin/gdb"
    assert cuda_gdb_path() == "/opt/cuda/bin/cuda-gdb"


def test_cuda_home_is_searched_and_a_missing_cuda_gdb_says_what_to_install(bare_path, monkeypatch):
    if os.access("/usr/local/cuda/bin/cuda-gdb", os.X_OK):
        pytest.skip("this machine has /usr/local/cuda/bin/cuda-gdb, the last fallback")
    with pytest.raises(TargetError, match=r"cuda-gdb is not installed.*\$PKDB_CUDA_GDB"):
        cuda_gdb_path()
    home = bare_path / "cuda"
    (home / "bin").mkdir(parents=True)
    executable(home / "bin", "cuda-gdb")
    monkeypatch.setenv("CUDA_HOME", str(home))
    assert cuda_gdb_path() == str(home / "bin" / "cuda-gdb")


def test_each_space_gets_its_target_and_an_unknown_one_a_clear_error(bare_path, monkeypatch):
    with pytest.raises(TargetError, match="no debugger for kernels of the 'hip' execution"):
        controller_for("hip")
    # No debugger at all: the CPU spaces' controller says which one it looked for.
    for space in ("openmp", "serial"):
        with pytest.raises(TargetError, match="debugger not found: 'gdb'"):
            controller_for(space)
