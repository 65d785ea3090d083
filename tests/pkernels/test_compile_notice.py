"""A compile that takes a while says so on stderr; a cached build says nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

PROGRAM = """
import numpy as np
import pkernels as pk


@pk.workunit
def scale(i, out):
    out[i] = 2.0 * i


out = np.zeros(4)
pk.parallel_for(4, scale, out=out)
print(out.tolist())
"""


def _run(program: Path, cache: Path, notice: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PKERNELS_CACHE_DIR": str(cache), "PKERNELS_COMPILE_NOTICE": notice}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, str(program)], env=env, capture_output=True, text=True, timeout=120
    )


def test_a_slow_compile_is_said_and_a_cached_one_is_not(tmp_path: Path) -> None:
    program = tmp_path / "prog.py"
    program.write_text(textwrap.dedent(PROGRAM))
    cache = tmp_path / "cache"
    first = _run(program, cache, "0.01")  # any real compile takes longer than 10 ms
    assert "pkernels: compiling the release build of scale (once: it is cached" in first.stderr
    assert "pkernels: compiled the release build of scale in " in first.stderr
    assert first.stdout == "[0.0, 2.0, 4.0, 6.0]\n"
    # A cached build is no compile, however long its look-up takes (its checksum is
    # verified): a zero delay would say any compile at all.
    again = _run(program, cache, "0")
    assert again.stderr == "" and again.stdout == first.stdout
    quiet = _run(program, tmp_path / "other", "off")
    assert quiet.stderr == ""
