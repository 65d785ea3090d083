"""A short seeded command-fuzzing campaign in every test run (see pkdb_fuzz.py).

PKDB_FUZZ_LINES (default 300: about 25 s on two cores) and PKDB_FUZZ_SEED (default 24)
set its size and seed; scripts/fuzz_pkdb.py runs long campaigns.
"""

from __future__ import annotations

import os
import shutil

import pkdb_fuzz
import pytest

pytestmark = pytest.mark.skipif(
    shutil.which("gdb") is None or shutil.which("g++") is None, reason="needs gdb and g++"
)


def test_fuzzed_command_lines_never_hang_nor_fail_inside_pkdb(tmp_path):
    lines = int(os.environ.get("PKDB_FUZZ_LINES", "300"))
    seed = int(os.environ.get("PKDB_FUZZ_SEED", "24"))
    figures = pkdb_fuzz.campaign(lines, seed, tmp_path, session_lines=80)
    report = "\n\n".join(
        f"{f.kind} in {f.program} (PKDB_FUZZ_SEED={seed}, session seed {f.seed}) after "
        f"{f.line[:200]!r}:\n{f.detail[:2000]}\n--- last lines:\n{f.transcript[-4000:]}"
        for f in figures.failures
    )
    assert not figures.failures, f"{figures.summary()}\n\n{report}"
    assert figures.kernel_lines > 0 and figures.runs_checked >= 2, figures.summary()
