"""Shared fixtures of the pkernels tests.

Every test session compiles into its own temporary cache directory, so the tests never
read or write the user's ``$XDG_CACHE_HOME/pkernels``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
from pkt_support import ALL_SPACES, NATIVE_SPACES, load_module

import pkernels as pk


@pytest.fixture(scope="session", autouse=True)
def private_kernel_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Point ``PKERNELS_CACHE_DIR`` at a fresh directory for the whole session."""
    root = tmp_path_factory.mktemp("pkernels-cache") / "cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PKERNELS_CACHE_DIR", str(root))
        mp.delenv("PKERNELS_CXX", raising=False)
        yield root


@pytest.fixture(autouse=True)
def restore_default_space() -> Iterator[None]:
    """Tests that change the default space leave it as they found it."""
    before = pk.get_default_space()
    yield
    pk.set_default_space(before)


@pytest.fixture(params=ALL_SPACES, ids=lambda s: s.name)
def space(request: pytest.FixtureRequest) -> pk.ExecutionSpace:
    """Each execution space: OpenMP, Serial and Debug (plain Python)."""
    return request.param


@pytest.fixture(params=NATIVE_SPACES, ids=lambda s: s.name)
def native_space(request: pytest.FixtureRequest) -> pk.ExecutionSpace:
    """The compiled spaces only."""
    return request.param


@pytest.fixture
def make_module(tmp_path: Path) -> Callable[..., ModuleType]:
    """``make_module(source, name=None)``: a module of kernels written to a tmp dir."""

    def make(source: str, name: str | None = None) -> ModuleType:
        return load_module(tmp_path, source, name)

    return make
