"""The command line and environment pkdb starts the ranks with: Open MPI's options and
variables in the names its version knows (5: the mpi extra's wheel; 4: a system's, which
refuses 5's ``--runtime-options`` and has no ``sm`` transport), none for another MPI."""

from __future__ import annotations

from pathlib import Path

import pytest

from pkdb.mpi import launcher


def fake_mpirun(folder: Path, version_text: str) -> str:
    """An ``mpirun`` that answers ``--version`` with ``version_text``."""
    path = folder / "mpirun"
    path.write_text(f"#!/bin/sh\ncat <<'EOF'\n{version_text}\nEOF\n")
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize(
    ("text", "version", "options"),
    [
        ("mpirun (Open MPI) 5.0.11\n\nReport bugs to ...", 5, launcher.OPEN_MPI_OPTIONS),
        ("mpirun (Open MPI) 4.1.2\n\nReport bugs to ...", 4, launcher.OPEN_MPI_4_OPTIONS),
        ("HYDRA build details:\n    Version: 4.1", None, ()),  # MPICH's
    ],
)
def test_options_follow_the_mpi_and_its_version(tmp_path, text, version, options):
    mpirun = fake_mpirun(tmp_path, text)
    assert launcher.open_mpi_version(mpirun) == version
    assert launcher.mpirun_options(mpirun) == options


def test_open_mpi_4_gets_its_own_transport_names(tmp_path, monkeypatch):
    monkeypatch.setattr(
        launcher, "find_mpirun", lambda: fake_mpirun(tmp_path, "mpirun (Open MPI) 4.1.2")
    )
    monkeypatch.delenv("OMPI_MCA_btl", raising=False)
    env = launcher.launch_environment(default_launcher=True)
    assert env["OMPI_MCA_btl"] == "self,vader" and "OMPI_MCA_smsc" not in env
    monkeypatch.setenv("OMPI_MCA_btl", "self,tcp")  # the user's own wins
    assert launcher.launch_environment(default_launcher=True)["OMPI_MCA_btl"] == "self,tcp"
    assert "OMPI_MCA_pml" not in launcher.launch_environment(default_launcher=False)


def test_the_default_command_gives_the_found_mpirun_its_options(tmp_path):
    try:
        mpirun = launcher.find_mpirun()
    except launcher.LauncherError:
        pytest.skip("no mpirun (the mpi extra)")
    if launcher.open_mpi_version(mpirun) is None:
        pytest.skip(f"{mpirun} is not Open MPI")
    command = launcher.launch_command(2, None, tmp_path)
    assert command[:3] == [mpirun, "-n", "2"]
    assert command[3:-5] == list(launcher.mpirun_options(mpirun))
    assert command[-5:] == launcher.rank_command(tmp_path)
