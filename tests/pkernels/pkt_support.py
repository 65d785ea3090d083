"""Helpers shared by the pkernels tests (imported by name: tests/pkernels is on sys.path)."""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import os
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import numpy as np

import pkernels as pk
from pkernels import hooks
from pkernels.runtime.hooks import BuildMode

ALL_SPACES = [pk.OpenMP, pk.Serial, pk.Debug]
NATIVE_SPACES = [pk.OpenMP, pk.Serial]


_module_counter = itertools.count()


def load_module(directory: Path, source: str, name: str | None = None) -> ModuleType:
    """Write ``source`` to ``directory/<name>.py`` and import it as a fresh module.

    Kernels must live in files (the translator reads their source), so tests that
    generate kernels write them here. Each call gets a unique module name unless one is
    given; bytecode is not written, so rewriting a file is always seen.
    """
    name = name or f"pk_test_gen_{os.getpid()}_{next(_module_counter)}"
    path = directory / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    dont_write = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = dont_write
    return module


class PyView:
    """A view over nested Python lists: elements are Python ints, floats and bools.

    Running a workunit directly on these (see :func:`run_python`) gives what plain
    Python computes for the kernel body, independently of NumPy's scalar types and of
    pkernels itself: the oracle the compiled spaces are checked against.
    """

    def __init__(self, data: list, shape: tuple[int, ...]) -> None:
        self.data = data
        self.shape = shape

    @classmethod
    def of(cls, array: np.ndarray) -> PyView:
        return cls(array.tolist(), array.shape)

    def _walk(self, key: object) -> tuple[list, int, tuple]:
        key = key if isinstance(key, tuple) else (key,)
        if len(key) > len(self.shape):
            raise IndexError("too many indices")
        node = self.data
        for axis, k in enumerate(key):
            if not 0 <= k < self.shape[axis]:
                raise IndexError(f"index {k} out of range for axis {axis}")
        for k in key[:-1]:
            node = node[k]
        return node, key[-1], key

    def __getitem__(self, key: object) -> object:
        node, last, key = self._walk(key)
        if len(key) < len(self.shape):
            return PyView(node[last], self.shape[len(key) :])
        return node[last]

    def __setitem__(self, key: object, value: object) -> None:
        node, last, key = self._walk(key)
        assert len(key) == len(self.shape), "assign whole elements"
        node[last] = value

    def __len__(self) -> int:
        return self.shape[0]

    def extent(self, axis: int) -> int:
        return self.shape[axis]

    def to_numpy(self, dtype: object) -> np.ndarray:
        return np.array(self.data, dtype=dtype).reshape(self.shape)


def run_python(workunit, n: int, /, **kwargs):
    """Run ``workunit`` for ``i in range(n)`` as plain Python on PyViews of the arrays.

    Returns the kwargs with every array replaced by the NumPy array of the results (same
    dtype as the array passed in).
    """
    py = {k: PyView.of(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    for i in range(n):
        workunit(i, **py)
    return {
        k: py[k].to_numpy(v.dtype) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()
    }


class ForceDebugBuild:
    """A dispatch observer that asks for the debug build (-O0 -g, checks) of every kernel,
    or the build ``mode`` names, and remembers the kernels it saw launched."""

    def __init__(self, mode: BuildMode = BuildMode.DEBUG) -> None:
        self.mode = mode
        self.launched: list = []

    def dispatch_started(self, dispatch) -> None:
        dispatch.build = self.mode

    def before_launch(self, dispatch, kernel) -> None:
        self.launched.append(kernel)


@contextlib.contextmanager
def observing(observer):
    """Register ``observer`` for the duration of a ``with`` block."""
    hooks.add_observer(observer)
    try:
        yield observer
    finally:
        hooks.remove_observer(observer)
