"""Complex kernel locals at a kernel stop: ``p z`` is NumPy's complex, computing as the
kernel does; so are a complex argument and a reduce's complex accumulator."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from pkdb_harness import write

from pkdb import complex_values
from pkdb.structs import parse_struct

KERNEL_PROMPT = r"\(pkdb-openmp\) "
a0 = 1 + 2j  # a[0] of the program

PROGRAM = """
import numpy as np
import pkernels as pk


@pk.workunit
def products(i, a, b, out):
    z = a[i] * b[i]
    out[i] = z / 3


@pk.workunit
def scaled_sum(i, acc: pk.Acc[pk.complex128], a, w):
    for k in range(2):
        acc += a[i] * w


a = np.array([1 + 2j, 0.1 - 0.3j, -2.5 + 1e-300j])
b = np.array([0.7 - 1j, 3 + 0j, 1e300 + 1j])
out = np.zeros(3, np.complex128)
pk.parallel_for(3, products, a=a, b=b, out=out)
print("out", out.tolist())
print("total", pk.parallel_reduce(3, scaled_sum, a=a, w=0.5 - 1j))
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
    s.cmd("break 14 if i == 0 and k == 1")  # acc += a[i] * w, once added at index 0
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert "products.py(8)products()" in stop
    assert s.cmd("p z == a[i] * b[i]", KERNEL_PROMPT).strip() in ("True", "np.True_")
    assert "np.complex128(" in s.cmd("p z", KERNEL_PROMPT)
    assert s.cmd("p type(z).__name__", KERNEL_PROMPT).strip() == "'complex128'"
    s.cmd("clear 1", KERNEL_PROMPT)
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert "out [" in stop and "products.py(14)scaled_sum()" in stop
    # the complex argument and the thread's complex accumulator: NumPy's complex128
    assert "w = np.complex128(0.5-1j)" in s.cmd("args", KERNEL_PROMPT)
    assert s.cmd("p w, type(w).__name__", KERNEL_PROMPT).strip() == (
        "(np.complex128(0.5-1j), 'complex128')"
    )
    assert s.cmd("p acc", KERNEL_PROMPT).strip() == repr(np.complex128(a0 * (0.5 - 1j)))
    assert s.cmd("p acc == a[i] * w", KERNEL_PROMPT).strip() in ("True", "np.True_")
    s.cmd("clear 2", KERNEL_PROMPT)
    assert "total (" in s.cmd("continue")
    s.quit()
