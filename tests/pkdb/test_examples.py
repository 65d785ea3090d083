"""The example session the README's set-up command runs works as shown."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pkdb_harness import kernel_stop

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("gdb") is None, reason="needs gdb")
def test_yax_example_session(tmp_path: Path) -> None:
    env = dict(os.environ, PKERNELS_CACHE_DIR=str(tmp_path / "cache"), OMP_NUM_THREADS="2")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-m", "pkdb", "-x", "examples/yax.pkdb", "examples/yax.py"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = result.stdout
    assert result.returncode == 0, result.stderr
    assert re.search(kernel_stop("yax.py", 18, "hit breakpoint 1", "j=10"), out), out
    assert "(pkdb-openmp) p j\n10\n" in out
    assert re.search(r"p i, temp2\n\(1, 0\.\d+\)", out), out
    assert "> " in out and "yax.py(31)run()" in out  # finish: back after the dispatch
    m = re.search(r"yAx = ([\d.]+) \(NumPy: ([\d.]+)\)", out)
    assert m and m.group(1) == m.group(2)
    assert "The program exited with code 0" in out
