"""Complex kernel locals at a kernel stop: ``p z`` is NumPy's complex, computing as the
kernel does."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from pkdb_harness import write

from pkdb import complex_values
from pkdb.structs import parse_struct

KERNEL_PROMPT = r"\(pkdb-openmp\) "

PROGRAM = """
import numpy as np
import pkernels as pk


@pk.workunit
def products(i, a, b, out):
    z = a[i] * b[i]
    out[i] = z / 3


a = np.array([1 + 2j, 0.1 - 0.3j, -2.5 + 1e-300j])
b = np.array([0.7 - 1j, 3 + 0j, 1e300 + 1j])
out = np.zeros(3, np.complex128)
pk.parallel_for(3, products, a=a, b=b, out=out)
print("out", out.tolist())
"""


def test_gdb_struct_text_becomes_numpys_complex() -> None:
    fields = parse_struct("{re = -1, im = 2.5}")
    value = complex_values.decode(complex_values.from_fields(fields, "complex128"))
    assert type(value) is np.complex128 and value == -1 + 2.5j
    single = complex_values.from_fields({"re": 0.1, "im": 1}, "complex64")
    assert complex_values.decode(single) == np.complex64(0.1 + 1j)
    assert complex_values.from_fields({"re": 1, "im": 2}, "float") is None  # a struct
    assert complex_values.from_fields({"x": 1, "im": 2}, "complex128") is None
    # gdb prints the part -0.0 as -0: NumPy's complex keeps the signs of both zeros
    zeros = complex_values.decode(
        complex_values.from_fields(parse_struct("{re = -0, im = -0}"), "complex128")
    )
    assert np.signbit(zeros.real) and np.signbit(zeros.imag)


@pytest.mark.skipif(
    shutil.which("gdb") is None or shutil.which("g++") is None, reason="needs gdb and g++"
)
def test_complex_local_at_a_kernel_stop(tmp_path: Path, kernel_pty) -> None:
    s = kernel_pty(write(tmp_path, "products.py", PROGRAM))
    s.cmd("break 8")  # out[i] = z / 3
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert "products.py(8)products()" in stop
    assert s.cmd("p z == a[i] * b[i]", KERNEL_PROMPT).strip() in ("True", "np.True_")
    assert "np.complex128(" in s.cmd("p z", KERNEL_PROMPT)
    assert s.cmd("p type(z).__name__", KERNEL_PROMPT).strip() == "'complex128'"
    s.cmd("clear 1", KERNEL_PROMPT)
    assert "out [" in s.cmd("continue")
    s.quit()
