"""MPI sessions for tests: `pkdb --np N` on a PTY, and what a session leaves running."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pexpect
import pytest
from pkdb_harness import normalize, pkdb_env

#: The console's prompt, whatever the focus.
MPI_PROMPT = r"\(pkdb ranks? [0-9,\-]+\) "


def require_mpi() -> None:
    """Skip without mpi4py and mpirun, unless PKDB_REQUIRE_MPI=1 (CI, which installs the
    mpi extra: there a missing MPI fails the test instead)."""
    mpirun = Path(sys.executable).parent / "mpirun"
    missing = importlib.util.find_spec("mpi4py") is None or not (
        mpirun.exists() or shutil.which("mpirun")
    )
    if missing:
        if os.environ.get("PKDB_REQUIRE_MPI") == "1":
            pytest.fail("PKDB_REQUIRE_MPI=1 but mpi4py or mpirun is missing")
        pytest.skip("needs the mpi extra (mpi4py and mpirun): pip install -e '.[mpi]'")


def halo_rod(size: int, steps: int, n: int = 8) -> np.ndarray:
    """examples/halo_mpi.py's whole rod (with its two end cells) after ``steps`` steps,
    computed in one NumPy array."""
    u = np.zeros(size * n + 2)
    u[1:-1] = np.arange(size * n, dtype=float)
    v = u.copy()
    for _ in range(steps):
        v[1:-1] = 0.5 * u[1:-1] + 0.25 * (u[:-2] + u[2:])
        u, v = v, u
    return u


def halo_local(size: int, rank: int, steps: int, n: int = 8) -> np.ndarray:
    """Rank ``rank``'s ``u`` (its cells and ghost cells) once ``steps`` steps are done and
    the next exchange has filled its ghost cells."""
    return halo_rod(size, steps, n)[rank * n : rank * n + n + 2]


def halo_total(size: int, n: int = 8, steps: int = 3) -> float:
    """examples/halo_mpi.py's result."""
    return float(halo_rod(size, steps, n)[1:-1].sum())


class MpiSession:
    """``python -m pkdb --np N ...`` on a pseudo-terminal."""

    def __init__(self, program: Path, np_: int, *options: str, cwd: Path, tmp: Path) -> None:
        env = pkdb_env(tmp)
        env["TMPDIR"] = str(tmp)  # the session's socket directory: found by leftovers()
        env["OMP_NUM_THREADS"] = "2"
        env.setdefault("PKERNELS_CACHE_DIR", str(tmp / "cache"))
        self.tmp = tmp
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "pkdb", "--np", str(np_), *options, str(program)],
            cwd=str(cwd),
            env=env,
            encoding="utf-8",
            codec_errors="replace",
            timeout=60,
            dimensions=(24, 200),
        )
        self.child.delaybeforesend = None
        self.start = self.wait_prompt(120)

    def wait_prompt(self, timeout: float = 60) -> str:
        self.child.expect(MPI_PROMPT, timeout=timeout)
        return normalize(self.child.before)

    def cmd(self, line: str, timeout: float = 60) -> str:
        """Type ``line``; its output up to the next prompt (without the echoed line)."""
        self.child.sendline(line)
        text = self.wait_prompt(timeout)
        # (mpirun's own notices may come before the echo: Open MPI 4's of a killed rank)
        _before, echo, rest = text.partition(line + "\n")
        return rest if echo else text.partition("\n")[2]

    def quit(self) -> int:
        self.child.sendline("quit")
        self.child.expect(pexpect.EOF, timeout=60)
        self.child.close()
        return self.child.exitstatus

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


def leftovers(tmp: Path, pids: list[int]) -> list[str]:
    """What still runs of a session: the processes among ``pids``, and any whose command
    line names ``tmp`` (mpirun, the ranks' keepers; zombies count as gone)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] == "Z":
            continue
        if int(entry.name) in pids or str(tmp) in cmdline:
            found.append(f"{entry.name}: {cmdline}")
    return found


def no_leftovers(tmp: Path, pids: list[int], timeout: float = 10.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while (found := leftovers(tmp, pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return found
