"""What the built distribution says about itself: its license (PEP 639), its type hints
(PEP 561) and the C extensions it carries."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    # Built as pip installs it, in an isolated build environment: a fresh venv's own
    # setuptools may predate the license metadata pyproject.toml asks for.
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
         "-w", str(out), str(ROOT)],
        check=True, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    (path,) = out.glob("pkernels-*.whl")
    return zipfile.ZipFile(path)


def test_the_wheel_declares_its_license_in_the_current_form(wheel: zipfile.ZipFile) -> None:
    metadata = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    text = wheel.read(metadata).decode()
    assert "License-Expression: BSD-3-Clause" in text, text[:600]
    assert "License-File: LICENSE" in text
    assert any(n.endswith("licenses/LICENSE") for n in wheel.namelist())


def test_both_packages_ship_their_type_hints(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    assert {"pkernels/py.typed", "pkdb/py.typed"} <= names, sorted(names)[:20]


def test_the_runtime_headers_kernels_include_are_in_the_wheel(wheel: zipfile.ZipFile) -> None:
    from pkernels.build.runtime import INCLUDE_DIR

    shipped = {n for n in wheel.namelist() if n.startswith("pkernels/include/")}
    headers = {f"pkernels/{p.relative_to(INCLUDE_DIR.parent).as_posix()}"
               for p in INCLUDE_DIR.rglob("*.hpp")}  # fmt: skip
    assert "pkernels/include/pkernels/cpu.hpp" in headers
    assert headers == shipped
