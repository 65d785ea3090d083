"""``python -m pkernels cache info|clear``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

PROGRAM = """
import numpy as np
import pkernels as pk


@pk.workunit
def triple(i, out):
    out[i] = 3.0 * i


out = np.zeros(3)
pk.parallel_for(3, triple, out=out)
print(out.tolist())
"""


def _python(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PKERNELS_CACHE_DIR": str(cache), "PKERNELS_COMPILE_NOTICE": "off"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_cache_info_lists_the_builds_and_clear_empties_it(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    program = tmp_path / "prog.py"
    program.write_text(PROGRAM)
    assert _python(str(program), cache=cache).stdout == "[0.0, 3.0, 6.0]\n"
    shown = _python("-m", "pkernels", "cache", "info", cache=cache)
    assert shown.returncode == 0, shown.stderr
    assert f"pkernels kernel cache: {cache}" in shown.stdout
    assert "1 build," in shown.stdout and "workunits: triple (1)" in shown.stdout
    cleared = _python("-m", "pkernels", "cache", "clear", cache=cache)
    assert cleared.stdout.startswith("Removed 1 build (") and str(cache) in cleared.stdout
    assert "0 builds, 0 B" in _python("-m", "pkernels", "cache", "info", cache=cache).stdout
    # the next run compiles again
    assert _python(str(program), cache=cache).stdout == "[0.0, 3.0, 6.0]\n"


def test_the_command_line_says_what_it_takes(tmp_path: Path) -> None:
    missing = _python("-m", "pkernels", cache=tmp_path)
    assert missing.returncode == 2 and "cache" in missing.stderr
