"""A kernel that crashes outside a debugger says which kernel and Python line, and how
to find the bug, then the program ends as Python does on a fatal signal."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

pytestmark = pytest.mark.skipif(
    shutil.which("addr2line") is None, reason="needs binutils' addr2line"
)

WILD_STORE = """
import numpy as np
import pkernels as pk


@pk.workunit
def scatter(i, stride, out):
    j = i * stride
    out[j] = i


out = np.zeros(4, dtype=np.int64)
pk.parallel_for(4, scatter, stride=10**12, out=out)
print(out)
"""


def _run(tmp_path: Path, source: str, *python_options: str) -> subprocess.CompletedProcess[str]:
    program = tmp_path / "wild.py"
    program.write_text(textwrap.dedent(source).lstrip("\n"))
    env = {**os.environ, "PKERNELS_CACHE_DIR": str(tmp_path / "cache"), "OMP_NUM_THREADS": "2"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, *python_options, str(program)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_kernel_that_segfaults_names_its_line_and_the_way_to_find_the_bug(tmp_path) -> None:
    result = _run(tmp_path, WILD_STORE)
    assert result.returncode == -signal.SIGSEGV, result  # as Python ends on the signal
    err = result.stderr
    assert "pkernels: kernel scatter received SIGSEGV (Segmentation fault)" in err, err
    assert f'  File "{tmp_path / "wild.py"}", line 8, in scatter\n    out[j] = i\n' in err, err
    assert "PKERNELS_CHECKS=1" in err and "pkdb" in err
    assert err.count("pkernels: kernel") == 1, err  # both threads crash: one report
    assert result.stdout == ""


def test_python_faulthandler_still_shows_the_python_stack(tmp_path) -> None:
    result = _run(tmp_path, WILD_STORE, "-X", "faulthandler")
    assert result.returncode == -signal.SIGSEGV
    err = result.stderr
    assert err.index("pkernels: kernel scatter") < err.index("Fatal Python error"), err
    assert 'wild.py", line 12 in <module>' in err, err


def test_a_crash_outside_kernels_is_left_to_python(tmp_path) -> None:
    source = WILD_STORE.replace("stride=10**12", "stride=0").replace(
        "print(out)", "import ctypes\nctypes.string_at(0)"
    )
    result = _run(tmp_path, source)
    assert result.returncode == -signal.SIGSEGV
    assert "pkernels:" not in result.stderr, result.stderr


def test_checked_builds_raise_instead(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PKERNELS_CHECKS", "1")  # what the report advises
    result = _run(tmp_path, WILD_STORE)
    assert result.returncode == 1
    assert "KernelIndexError" in result.stderr and "wild.py:8" in result.stderr
