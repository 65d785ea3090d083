"""Every program in examples/ runs, as its docstring says to run it, and prints what it
promises (on small sizes). The pkdb session of examples/yax.pkdb is
tests/pkdb/test_examples.py's."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

#: example -> (arguments, a regex its output matches)
RUNS = {
    "ewald.py": (("64", "--check"), r"64 charges"),
    "functor_subview.py": ((), r"yAx = ([\d.]+) \(NumPy: \1, matches\)"),
    # the rod's total, as tests/pkdb/mpi_harness.halo_total computes it on one array
    "halo_mpi.py": (("8", "3"), r"total 477\.593750 over 4 ranks"),
    "heat.py": (("64", "20"), r"total heat 256\.000000 after 20 steps"),
    "md.py": (("2", "20"), r"32 atoms, .* 20 steps: E0 = -?[\d.]+ per atom"),
    "teams.py": ((), r"yAx = ([\d.]+) \(NumPy: \1\)\nrows reversed: True"),
    "yax.py": (("64", "128"), r"yAx = ([\d.]+) \(NumPy: \1\)"),
    "yax_gpu.py": (("64", "128"), r"yAx = [\d.]+ \(CuPy: [\d.]+\)"),
}


def _gpu_missing() -> str | None:
    if importlib.util.find_spec("cupy") is None:
        return "needs CuPy and an NVIDIA GPU: CuPy is not installed"
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - any failure means no usable GPU
        return f"needs an NVIDIA GPU: {exc}"
    return None


#: Examples run under MPI: how many ranks.
MPI_RANKS = {"halo_mpi.py": 4}


def _mpi_launch(name: str) -> list[str]:
    """``mpirun -n N`` as pkdb --np starts it (more ranks than cores, as root too), or a
    skip without the mpi extra (a failure where CI requires it: PKDB_REQUIRE_MPI=1)."""
    from pkdb.mpi.launcher import LauncherError, find_mpirun, mpirun_options

    try:
        mpirun = find_mpirun()
    except LauncherError as exc:
        mpirun = None
        why = str(exc)
    if mpirun is None or importlib.util.find_spec("mpi4py") is None:
        if os.environ.get("PKDB_REQUIRE_MPI") == "1":
            pytest.fail("PKDB_REQUIRE_MPI=1 but mpi4py or mpirun is missing")
        pytest.skip(f"needs the mpi extra: {why if mpirun is None else 'no mpi4py'}")
    return [mpirun, "-n", str(MPI_RANKS[name]), *mpirun_options(mpirun)]


def test_every_example_has_a_run() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(RUNS)


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_example_runs(name: str, tmp_path: Path) -> None:
    if name.endswith("_gpu.py") and (why := _gpu_missing()) is not None:
        pytest.skip(why)
    args, expected = RUNS[name]
    env = dict(os.environ, PKERNELS_CACHE_DIR=str(tmp_path / "cache"), OMP_NUM_THREADS="2")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    launch: list[str] = []
    if name in MPI_RANKS:
        from pkdb.mpi.launcher import launch_environment

        launch = _mpi_launch(name)
        env = launch_environment(default_launcher=True) | env
    result = subprocess.run(
        [*launch, sys.executable, str(EXAMPLES / name), *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert re.search(expected, result.stdout), result.stdout
