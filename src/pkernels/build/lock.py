"""One build at a time per cache entry, across processes: an ``flock`` on its lock file.

Several processes starting on an empty cache (the ranks of an MPI job, a test suite run
in parallel) would each compile every kernel. The first to take an entry's lock builds
it; the others wait, then find the build done and load it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_NAME = "lock"


class EntryLock:
    """The build lock of the cache entry ``directory``: ``with EntryLock(d): ...`` holds
    it, waiting while another process (or thread) does.

    Opening the lock file may raise ``OSError`` (a read-only or full file system). Where
    the file system has no locks (some network file systems), the build goes on
    unlocked, as before there were locks: writes are atomic, so the cost is a compile
    done twice."""

    def __init__(self, directory: Path) -> None:
        self._fd = os.open(
            directory / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )

    def __enter__(self) -> EntryLock:
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        except OSError:
            pass  # ENOLCK and the like: unlocked
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self._fd)  # releases the lock
