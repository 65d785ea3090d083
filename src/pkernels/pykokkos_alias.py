"""``import pykokkos`` giving pkernels, for programs written for PyKokkos that should run
unchanged: ``python -m pkernels prog.py`` installs it before running ``prog.py``; a
program (or a ``sitecustomize``) may call :func:`install` itself.

Once installed, ``import pykokkos as pk`` is ``import pkernels as pk`` (the same module
object, so kernels see ``pk.atomic_add`` and the rest as pkernels' own);
``pykokkos.interface`` and ``pykokkos.interface.data_types`` (PyKokkos' public namespace)
are pkernels too, and ``pykokkos.X.Y`` is ``pkernels.X.Y`` where pkernels has that module
(``pykokkos.linalg.l3_blas``). Other ``pykokkos.*`` imports fail as a missing module does.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType

ALIAS = "pykokkos"
# PyKokkos' package re-exports these modules' names at its top level.
_TOP_LEVEL = frozenset({"pykokkos.interface", "pykokkos.interface.data_types"})


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``pykokkos.*`` modules among pkernels' own."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(ALIAS + "."):
            return None
        if fullname in _TOP_LEVEL:
            return importlib.util.spec_from_loader(fullname, self, is_package=True)
        try:
            spec = importlib.util.find_spec(_target_name(fullname))
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            return None
        package = spec.submodule_search_locations is not None
        return importlib.util.spec_from_loader(fullname, self, is_package=package)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        if spec.name in _TOP_LEVEL:
            return sys.modules["pkernels"]
        return importlib.import_module(_target_name(spec.name))

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module is pkernels' own, imported already."""


def _target_name(fullname: str) -> str:
    return "pkernels" + fullname[len(ALIAS) :]


def install() -> None:
    """Make ``import pykokkos`` (and its submodules) give pkernels from now on, in this
    process. Installing twice is harmless; a real PyKokkos imported before stays."""
    import pkernels

    if not any(isinstance(finder, _AliasFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())
    sys.modules.setdefault(ALIAS, pkernels)


def installed() -> bool:
    """Whether ``import pykokkos`` gives pkernels in this process."""
    return sys.modules.get(ALIAS) is sys.modules.get("pkernels")
