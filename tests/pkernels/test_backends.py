"""The backend seam: every execution space is run by a backend of one protocol, and the
front door (runtime.dispatch) calls it the same way for every space."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import pkernels as pk
from pkernels import backends
from pkernels.backends.protocol import Launch
from pkernels.runtime import hooks
from pkernels.runtime.hooks import BuildMode

SRC = Path(backends.__file__).resolve().parents[1]


@pk.workunit
def add_one(i, x):
    x[i] += 1


@pk.workunit
def total(i, acc: pk.Acc[float], x):
    acc += x[i]


def test_every_space_has_a_backend_that_names_it():
    spaces = {s for s in pk.ExecutionSpace if s is not pk.ExecutionSpace.Default}
    assert set(backends.BACKENDS) == spaces
    for space, backend in backends.BACKENDS.items():
        assert space in backend.spaces
        for method in ("build_mode", "kernel", "launch", "cached_range_kernel"):
            assert callable(getattr(backend, method))
    assert backends.BACKENDS[pk.OpenMP] is backends.BACKENDS[pk.Serial]  # one C++ build


class RecordingBackend:
    """A backend that runs the body as Python and records what the front door asks."""

    spaces = (pk.Serial,)
    faults: dict = {}

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def build_mode(self, launch: Launch) -> BuildMode:
        self.calls.append(("build_mode", launch.build))
        return BuildMode.RELEASE

    def kernel(self, launch: Launch) -> str:
        self.calls.append(("kernel", (launch.operation, launch.rank, launch.build)))
        return f"kernel of {launch.workunit.__name__}"

    def launch(self, kernel: str, launch: Launch) -> object:
        self.calls.append(("launch", kernel))
        return backends.BACKENDS[pk.Debug].launch(None, launch)

    def cached_range_kernel(self, operation, workunit, kwargs):
        self.calls.append(("cached", operation))
        return None

    def observed_range_kernel(self, operation, workunit, kwargs, build, begin, end):
        self.calls.append(("observed", operation))
        return None


def test_a_new_backend_plugs_in_without_changing_the_front_door(monkeypatch):
    fake = RecordingBackend()
    monkeypatch.setitem(backends.BACKENDS, pk.Serial, fake)
    seen = []

    class Observer:
        def before_launch(self, dispatch, kernel):
            seen.append(kernel)

    x = np.zeros(4)
    pk.parallel_for(pk.RangePolicy(pk.Serial, 0, 4), add_one, x=x)  # the short path first
    assert x.tolist() == [1.0] * 4
    observer = Observer()
    hooks.add_observer(observer)
    try:
        result = pk.parallel_reduce("sum", pk.RangePolicy(pk.Serial, 0, 4), total, x=x)
    finally:
        hooks.remove_observer(observer)
    assert result == 4.0
    assert [name for name, _ in fake.calls] == [
        "cached", "build_mode", "kernel", "launch",  # parallel_for
        "observed", "build_mode", "kernel", "launch",  # the observed reduce: no kernel yet
    ]  # fmt: skip
    assert fake.calls[2] == ("kernel", ("for", 1, BuildMode.RELEASE))
    assert fake.calls[6] == ("kernel", ("reduce", 1, BuildMode.RELEASE))
    assert seen == ["kernel of total"]


def test_the_debug_backend_has_no_kernel_and_no_fault_codes():
    debug = backends.backend_for(pk.Debug)
    assert debug.faults == {}
    x = np.zeros(3)
    pk.parallel_for(pk.RangePolicy(pk.Debug, 0, 3), add_one, x=x)
    assert x.tolist() == [1.0, 1.0, 1.0]


def test_host_and_gpu_builds_report_the_same_fault_codes():
    host, gpu = backends.backend_for(pk.OpenMP), backends.backend_for(pk.Cuda)
    assert host.faults is gpu.faults
    assert host.faults[1] is pk.KernelIndexError and host.faults[2] is pk.KernelZeroDivisionError


def _private_imports() -> list[str]:
    """``from .module import _name`` across src/pkernels, where ``_name`` is not a module."""
    found = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            package = path.parent
            for _ in range(node.level - 1):
                package = package.parent
            where = package.joinpath(*(node.module or "").split(".")) if node.module else package
            for alias in node.names:
                name = alias.name
                if (
                    name.startswith("_")
                    and not name.startswith("__")
                    and not any((where / f"{name}{ext}").exists() for ext in (".py", ".c"))
                ):
                    found.append(f"{path.relative_to(SRC)}: {name}")
    return found


def test_no_module_imports_another_modules_private_names():
    assert _private_imports() == []


@pytest.mark.parametrize("space", [pk.OpenMP, pk.Serial])
def test_guarded_launches_run_the_release_build_where_the_proof_holds(space):
    x = np.zeros(8)
    launch = Launch(
        add_one, add_one.__pkernels__, "for", pk.RangePolicy(space, 0, 8), {"x": x},
        BuildMode.GUARDED, None, pk.Sum, 1,
    )  # fmt: skip
    assert backends.backend_for(space).build_mode(launch) is BuildMode.RELEASE
    launch.policy = pk.RangePolicy(space, 0, 9)  # one past the end: the checked build
    assert backends.backend_for(space).build_mode(launch) is BuildMode.CHECKED


def test_a_guarded_launch_runs_the_build_its_proof_chose():
    # build_mode hands kernel() the build it found on its way (Launch.built): that must
    # be the build it chose, the release one where the proof holds, else the checked one.
    backend, x = backends.backend_for(pk.Serial), np.zeros(8)
    for end, mode in ((8, BuildMode.RELEASE), (9, BuildMode.CHECKED), (8, BuildMode.RELEASE)):
        launch = Launch(
            add_one, add_one.__pkernels__, "for", pk.RangePolicy(pk.Serial, 0, end), {"x": x},
            BuildMode.GUARDED, None, pk.Sum, 1,
        )  # fmt: skip
        launch.build = backend.build_mode(launch)
        kernel = backend.kernel(launch)
        assert (launch.build, kernel.checked) == (mode, mode is BuildMode.CHECKED)
        if mode is BuildMode.CHECKED:
            with pytest.raises(pk.KernelIndexError):  # index 8, caught by the check
                backend.launch(kernel, launch)
