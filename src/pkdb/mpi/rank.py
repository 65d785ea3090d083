"""The rank side: ``python -m pkdb --rank DIR``, what the MPI launcher starts per rank.

The launched process is the rank's *keeper*: it connects twice to the front end's
socket in ``DIR`` (see :mod:`.listener`), then forks the *agent*, the process that runs
the program (and calls ``MPI_Init``) under the ordinary pkdb agent. The keeper stays its
parent, so that it learns how the agent ended (a signal, say) and tells the front end;
it also forwards the program's output, which it reads from a pipe, and exits with the
agent's status, so the launcher sees what the program did. The agent dies with its
keeper (``PR_SET_PDEATHSIG``) and with the front end (the agent ends itself when its
channel closes), so no rank outlives the session.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
from pathlib import Path
from typing import NoReturn

from .listener import SOCKET_NAME, TOKEN_NAME, peer_credentials

#: Environment variables that carry a process's rank, by launcher.
RANK_VARIABLES = (
    "OMPI_COMM_WORLD_RANK",  # Open MPI
    "PMIX_RANK",  # PMIx launchers
    "PMI_RANK",  # MPICH (Hydra), Intel MPI
    "SLURM_PROCID",  # srun
    "MV2_COMM_WORLD_RANK",  # MVAPICH
)
#: prctl(2) options (linux/prctl.h).
_PR_SET_PDEATHSIG = 1


def rank_from_environment(environ: dict[str, str] | os._Environ[str] = os.environ) -> int | None:
    """This process's rank, as its launcher told it; None when no launcher did."""
    for name in RANK_VARIABLES:
        value = environ.get(name)
        if value is not None and value.strip().isdigit():
            return int(value)
    return None


def main(argv: list[str]) -> NoReturn:
    """``--rank DIR``: be the keeper of this rank (never returns)."""
    if len(argv) != 2 or argv[0] != "--rank":
        sys.stderr.write("usage: python -m pkdb --rank DIR (started by pkdb --np)\n")
        os._exit(2)
    directory = Path(argv[1])
    rank = rank_from_environment()
    if rank is None:
        sys.stderr.write(
            f"pkdb --rank: no rank in the environment ({', '.join(RANK_VARIABLES)}): "
            "start it with an MPI launcher\n"
        )
        os._exit(2)
    try:
        token = (directory / TOKEN_NAME).read_text().strip()
        keeper = _connect(directory, token, "keeper", rank, os.getpid())
        agent = _connect(directory, token, "agent", rank, None)
    except OSError as exc:
        sys.stderr.write(f"pkdb --rank: cannot reach the pkdb front end in {directory}: {exc}\n")
        os._exit(1)
    front_end_pid, _, _ = peer_credentials(agent)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        keeper.close()
        os.close(read_end)
        _be_the_agent(agent, write_end, token, rank, front_end_pid)
    agent.close()
    os.close(write_end)
    os._exit(_keep(keeper, pid, read_end))


def _connect(directory: Path, token: str, kind: str, rank: int, pid: int | None) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(directory / SOCKET_NAME))
    if pid is not None:
        _send_hello(sock, token, kind, rank, pid)
    return sock


def _send_hello(sock: socket.socket, token: str, kind: str, rank: int, pid: int) -> None:
    hello = {"kind": kind, "rank": rank, "pid": pid, "token": token}
    sock.sendall(json.dumps(hello).encode() + b"\n")


def _be_the_agent(
    agent: socket.socket, output: int, token: str, rank: int, front_end_pid: int
) -> NoReturn:
    """In the forked child: become the program's process under the pkdb agent."""
    try:
        os.setpgid(0, 0)  # its own group: Ctrl-C and the end reach all it starts
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        for fd in (1, 2):  # the program's output goes through the keeper
            os.dup2(output, fd)
        os.close(output)
        sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
        sys.stderr.reconfigure(line_buffering=True)  # type: ignore[union-attr]
        _send_hello(agent, token, "agent", rank, os.getpid())
        from ..agent.runner import run_agent
    except BaseException:  # noqa: BLE001 - nothing to report to yet
        os._exit(1)
    run_agent(agent.detach(), tracer=front_end_pid)


def _keep(keeper: socket.socket, pid: int, output: int) -> int:
    """Forward the agent's output until it exits; tell its status; our exit status."""
    status: int | None = None
    open_output = True
    while status is None or open_output:
        if open_output:
            ready, _, _ = select.select([output], [], [], 0.2)
            if ready:
                data = os.read(output, 65536)
                if data:
                    _tell(keeper, {"out": data.decode("utf-8", "replace")})
                else:
                    open_output = False
        if status is None:
            done, raw = os.waitpid(pid, 0 if not open_output else os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(raw)
                if open_output:  # whatever it started may hold the pipe: drain briefly
                    open_output = bool(select.select([output], [], [], 0.2)[0])
    _tell(keeper, {"exit": status})
    return status if status >= 0 else 128 - status


def _tell(keeper: socket.socket, message: dict[str, object]) -> None:
    try:
        keeper.sendall(json.dumps(message).encode() + b"\n")
    except OSError:
        pass  # the front end is gone: the agent ends with it
