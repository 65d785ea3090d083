"""The private socket that ranks connect back to, and who may connect.

A directory only this user can enter (mode 0700) holds a Unix socket and a token file
(mode 0600). A rank connects, then sends one hello line (JSON) with the token; the front
end accepts it only when the token matches (compared in constant time) and the peer
runs as the same user (``SO_PEERCRED``). No TCP port is ever opened: across hosts, the
design note (docs/mpi.md) forwards this socket over the launcher's own channel.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import shutil
import socket
import struct
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SOCKET_NAME = "ranks.sock"
TOKEN_NAME = "token"
#: Seconds a connected peer gets to send its hello.
HELLO_TIMEOUT = 10.0
#: The longest hello line we read.
_HELLO_LIMIT = 4096


class HelloError(Exception):
    """A connection that is not one of our ranks."""


@dataclass
class Arrival:
    """A rank's connection, its hello read and checked."""

    kind: str  # "agent" (the program's process) or "keeper" (its launcher-side parent)
    rank: int
    pid: int
    sock: socket.socket
    leftover: bytes  # what came after the hello line


def read_line(sock: socket.socket, limit: int, deadline: float) -> tuple[bytes, bytes]:
    """One line from ``sock`` (without its newline) and what came after it."""
    data = bytearray()
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0:
            raise HelloError("no hello in time")
        sock.settimeout(left)
        try:
            chunk = sock.recv(4096)
        except OSError as exc:
            raise HelloError(f"connection failed: {exc}") from None
        if not chunk:
            raise HelloError("closed before its hello")
        data += chunk
        if len(data) > limit:
            raise HelloError("hello too long")
    sock.settimeout(None)
    line, _, rest = bytes(data).partition(b"\n")
    return line, rest


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """``(pid, uid, gid)`` of the process at the other end of a Unix socket."""
    size = struct.calcsize("3i")
    data = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, size)
    pid, uid, gid = struct.unpack("3i", data)
    return pid, uid, gid


class RankListener:
    """The front end's end: the private directory, its socket and token."""

    def __init__(self, backlog: int = 128) -> None:
        base = tempfile.gettempdir()
        if len(base) > 60:  # a Unix socket path holds 107 bytes at most
            base = "/tmp"
        self.directory = Path(tempfile.mkdtemp(prefix="pkdb-mpi-", dir=base))  # mode 0700
        self.token = secrets.token_hex(32)
        fd = os.open(self.directory / TOKEN_NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as token_file:
            token_file.write(self.token + "\n")
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(str(self.directory / SOCKET_NAME))
        self._sock.listen(backlog)

    def fileno(self) -> int:
        return self._sock.fileno()

    def accept(self, timeout: float) -> Arrival | None:
        """The next rank to connect within ``timeout`` seconds (None if none did).
        :class:`HelloError` for a connection that is not one of ours (it is closed)."""
        self._sock.settimeout(timeout)
        try:
            sock, _ = self._sock.accept()
        except TimeoutError:
            return None
        try:
            return self._check(sock)
        except HelloError:
            sock.close()
            raise

    def _check(self, sock: socket.socket) -> Arrival:
        _, uid, _ = peer_credentials(sock)
        if uid != os.getuid():
            raise HelloError(f"a process of user {uid} connected")
        line, rest = read_line(sock, _HELLO_LIMIT, time.monotonic() + HELLO_TIMEOUT)
        try:
            hello: dict[str, Any] = json.loads(line)
            token = str(hello["token"])
            kind, rank, pid = str(hello["kind"]), int(hello["rank"]), int(hello["pid"])
        except (ValueError, KeyError, TypeError):
            raise HelloError("not a pkdb rank's hello") from None
        if not hmac.compare_digest(token.encode(), self.token.encode()):
            raise HelloError("wrong token")
        if kind not in ("agent", "keeper"):
            raise HelloError(f"unknown kind {kind!r}")
        return Arrival(kind, rank, pid, sock, rest)

    def close(self) -> None:
        """Stop listening and remove the directory (idempotent)."""
        self._sock.close()
        shutil.rmtree(self.directory, ignore_errors=True)
