"""Fixtures for pkdb session tests: sample programs and PTY sessions that are always
cleaned up."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pkdb_harness import PtySession, write

MAIN = """
import helper


def square(n):
    result = n * n
    return result


def total(limit):
    acc = 0
    for i in range(limit):
        acc += square(i)
    return acc


value = total(4)
print("value is", value)
extra = helper.triple(value)
print("extra is", extra)
"""

HELPER = """
def triple(x):
    y = x * 3
    return y
"""


@pytest.fixture
def main_program(tmp_path: Path) -> Path:
    """main.py (line numbers matter to the tests) and the helper.py it imports."""
    write(tmp_path, "helper.py", HELPER)
    return write(tmp_path, "main.py", MAIN)


@pytest.fixture
def pkdb_pty() -> Iterator[Callable[..., PtySession]]:
    """Start ``pkdb`` on a PTY: ``pkdb_pty(program, *args, options=(...))``."""
    sessions: list[PtySession] = []

    def start(program: Path, *args: str, options: tuple[str, ...] = ()) -> PtySession:
        session = PtySession(program, *args, options=options)
        sessions.append(session)
        return session

    yield start
    for session in sessions:
        session.close()


@pytest.fixture
def kernel_pty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pkdb_pty: Callable[..., PtySession]
) -> Callable[..., PtySession]:
    """``pkdb_pty`` for programs with kernels: a private kernel cache, two OpenMP threads,
    and time for the first compiles."""
    monkeypatch.setenv("PKERNELS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OMP_NUM_THREADS", "2")

    def start(program: Path, *args: str, options: tuple[str, ...] = ()) -> PtySession:
        session = pkdb_pty(program, *args, options=options)
        session.child.timeout = 60
        return session

    return start
