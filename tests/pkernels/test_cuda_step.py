"""A pk.Cuda debug build stops by itself at a thread's next Python line for a debugger's
``next``/``step`` (include/pkernels/cuda_step.hpp; pkdb's side: tests/pkdb/
test_gpu_stepping.py): where the generated code calls the hook, that the debug build
compiles with it, and that release builds compile to the same code as without it.
Without a GPU: nvcc compiles (when it is on the PATH)."""

from __future__ import annotations

import inspect
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from team_kernels import reverse_rows, row_prefix, team_yax

import pkernels as pk
from pkernels.build.compiler import GENERATED_PATH
from pkernels.build.runtime import include_option
from pkernels.runtime.marshal import argument_type
from pkernels.translate.emit_cuda import emit_cuda_module
from pkernels.translate.kernel import TEAM, lower_workunit


@pk.function
def doubled(v: float) -> float:
    w: float = v * 2
    return w


@pk.workunit
def row_dot(j, acc, cols, y, x, A):
    total: float = 0
    for i in range(cols):
        total += A[j][i] * x[i]
    k: int = 0
    while k < 2:
        k += 1
    acc += y[j] * doubled(total)


def _line_of(text: str) -> int:
    """The line of row_dot's source that holds ``text``."""
    lines, first = inspect.getsourcelines(row_dot)
    return first + next(k for k, line in enumerate(lines) if text in line)


FOR, BODY, WHILE = _line_of("for i in"), _line_of("total += "), _line_of("while k")


def _source(workunit, operation: str, rank: int = 1, **kwargs) -> str:
    arg_types = {name: argument_type(name, value) for name, value in kwargs.items()}
    function, helpers = lower_workunit(workunit, operation, arg_types, rank)
    index = function.params[0].type if rank != TEAM else pk.int64
    return emit_cuda_module(function, helpers, operation, index, rank).source


def _row_dot() -> str:
    return _source(row_dot, "reduce", cols=4, y=np.zeros(4), x=np.zeros(4), A=np.zeros((4, 4)))


def _team() -> str:
    return _source(reverse_rows, "for", TEAM, out=np.zeros((4, 8)), inp=np.zeros((4, 8)), m=8)


def _hook_lines(source: str) -> list[tuple[int, int]]:
    """(the line a ``#line`` directive gives a PK_LINE's place, the line PK_LINE names),
    for every PK_LINE of the Python code: a stop in the hook shows the first."""
    pairs, line, in_python = [], 0, False
    for text in source.splitlines():
        directive = re.match(r'#line (\d+) "(.*)"$', text)
        if directive:
            line, in_python = int(directive[1]) - 1, directive[2].endswith(".py")
            continue
        line += 1
        if in_python:
            pairs += [(line, int(n)) for n in re.findall(r"PK_LINE\((\d+)\)", text)]
    return pairs


def test_every_statement_loop_test_and_helper_can_stop():
    source = _row_dot()
    lines = source.splitlines()
    assert any(t.strip().startswith(f"PK_LINE({BODY}); total = ") for t in lines)
    # The for line on entry and after each iteration; a while line at each test: as pdb.
    head = next(t for t in lines if t.strip().startswith(f"PK_LINE({FOR}); for ("))
    assert f"; PK_LINE({FOR}), pk_it" in head
    assert any(t.strip().startswith(f"while ((PK_LINE({WHILE}), ") for t in lines)
    helper = next(t for t in lines if "pk_fn_doubled_(double pk_arg_v) {" in t)
    # One call deeper while it runs; its parameter a local of its name (which cuda-gdb
    # reads where it showed the parameter as "<optimized out>").
    assert helper.endswith("{ PK_STEP_DEPTH double v = pk_arg_v;")
    # The hook's caller is at the Python line it names (frame 1 of a stop there).
    for text in (source, _team()):
        pairs = _hook_lines(text)
        assert pairs and all(at == named for at, named in pairs), pairs


def _nvcc(tmp_path: Path, name: str, source: str, *options: str) -> Path:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on the PATH")
    stand_in = tmp_path / "nvrtc_builtins.h"  # NVRTC declares printf itself
    stand_in.write_text("#include <cstdio>\n")
    cu = tmp_path / f"{name}.cu"
    cu.write_text(source.replace(GENERATED_PATH, str(cu)))
    out = tmp_path / f"{name}.out"
    proc = subprocess.run(
        [nvcc, "-std=c++17", "-arch=sm_90", include_option(), "--pre-include", str(stand_in),
         *options, "-x", "cu", str(cu), "-o", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def test_debug_builds_compile_with_the_hook_and_release_builds_without(tmp_path):
    source = _row_dot()
    debug = _nvcc(tmp_path, "debug", source, "-G", "-DPK_DEBUG=1", "-cubin").read_bytes()
    assert b"pk_step_hook" in debug and b"pk_step_mode" in debug
    _nvcc(tmp_path, "team", _team(), "-G", "-DPK_DEBUG=1", "-cubin")
    # Release code is what it was before the hooks, instruction for instruction.
    release = _nvcc(tmp_path, "release", source, "-ptx").read_text()
    assert "pk_step" not in release
    plain = re.sub(r"PK_LINE\(\d+\)(; |, )", "", source).replace(" PK_STEP_DEPTH", "")
    assert "PK_LINE" not in plain
    assert release == _nvcc(tmp_path, "plain", plain, "-ptx").read_text()


def test_a_teams_for_is_strided_over_its_ranks_and_its_reduce_chunked():
    """A TeamThreadRange parallel_for gives team rank r the indices r, r + size, ... (as
    Kokkos maps it on CUDA: a warp's threads touch consecutive elements); a team reduce
    or scan keeps each rank's contiguous chunk, combined in rank order as on the CPU."""
    strided = re.findall(r"pk_n(\d+) \+= team_member\.team_size", _team())
    assert len(strided) == 2, _team()  # both of reverse_rows' loops
    reduce = _source(team_yax, "reduce", TEAM, cols=4, y=np.zeros(4), x=np.zeros(4),
                     A=np.zeros((4, 4)))  # fmt: skip
    scan = _source(row_prefix, "for", TEAM, out=np.zeros((2, 4), np.int64),
                   totals=np.zeros(2, np.int64), inp=np.zeros((2, 4), np.int64))  # fmt: skip
    for source in (reduce, scan):
        assert (
            "pk_rt::team_chunk(team_member" in source and "+= team_member.team_size" not in source
        )
