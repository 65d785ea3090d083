"""PyKokkos' port of ExaMiniMD, both variants, unchanged, run on a small input with
``python -m pkernels``: the thermo output must be the C++ original's.

The programs are in ``../shared/peer/examinimd-pykokkos`` beside the checkout (kokkos/
pykokkos b42c805, examples/ExaMiniMD); the test skips where that folder is absent. The
input is their ``input/in.lj`` with an 8^3 box of unit cells (2048 atoms) instead of 40^3;
the expected lines are what the C++ ExaMiniMD (``../shared/peer/examinimd-cpp``, built
as its README says, Kokkos 3.x Serial) prints for that input. The full ``in.lj`` is run
by hand (see README): step 100 gives ``0.733399 -5.332927 -4.232832`` in both.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pkernels

ROOT = Path(__file__).resolve().parents[2]
PEER = ROOT.parent / "shared" / "peer" / "examinimd-pykokkos"
SRC = Path(pkernels.__file__).resolve().parents[1]

# Step, temperature, potential energy, total energy: examinimd-cpp on the small input.
CPP_THERMO = """
0 1.400000 -6.332812 -4.233837
10 1.267574 -6.134611 -4.234179
20 0.774199 -5.394152 -4.233421
30 0.636645 -5.188304 -4.233803
40 0.729335 -5.327448 -4.233981
50 0.712673 -5.302334 -4.233847
60 0.692978 -5.272787 -4.233828
70 0.705448 -5.291519 -4.233864
80 0.720148 -5.313538 -4.233843
90 0.742732 -5.347426 -4.233871
100 0.747166 -5.354067 -4.233865
""".split("\n")[1:-1]


@pytest.mark.parametrize("variant", ["standalone", "workload"])
def test_examinimd_runs_unchanged_and_matches_the_cpp_original(variant, tmp_path):
    original = PEER / variant
    if not original.is_dir():
        pytest.skip(f"{original} is not there (the peer programs sit beside the checkout)")
    work = tmp_path / variant
    shutil.copytree(original, work)
    full = (work / "input" / "in.lj").read_text()
    assert "region\t\tbox block 0 40 0 40 0 40" in full
    (work / "input" / "small.lj").write_text(full.replace("0 40 0 40 0 40", "0 8 0 8 0 8"))
    env = dict(os.environ, PYTHONPATH=str(SRC), OMP_NUM_THREADS="2")
    run = subprocess.run(
        [sys.executable, "-m", "pkernels", "src/main.py", "-il", "input/small.lj", "--fill"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    start = lines.index("#Timestep Temperature PotE ETot Time Atomsteps/s") + 1
    thermo = [" ".join(line.split()[:4]) for line in lines[start : start + len(CPP_THERMO)]]
    assert thermo == CPP_THERMO
