"""``@pk.classtype`` locals at a kernel stop: ``p q.x`` reads a field of the struct; the
same stop shows a random pool argument as the program's pool."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from pkdb_harness import write

import pkernels as pk
from pkdb.structs import StructValue, decode, parse_struct
from pkdb.teams import decode_values
from pkdb.typed_values import from_gdb

KERNEL_PROMPT = r"\(pkdb-openmp\) "

PROGRAM = """
import numpy as np
import pkernels as pk


@pk.classtype
class Particle:
    def __init__(self, x: float, q: float):
        self.x: float = x
        self.q: float = q
        self.id: int = 0


@pk.workunit
def charges(i, xs, out, pool):
    p: Particle = Particle(xs[i], 0.5 * i)
    p.id = i + 100
    out[i] = p.x * p.q
    out[i] += p.id


out = np.zeros(4)
pk.parallel_for(4, charges, xs=np.arange(4.0) + 1, out=out, pool=pk.Random_XorShift64_Pool(5, 4))
print("out", out.tolist())
"""


def test_gdb_struct_text_becomes_fields() -> None:
    text = "{x = 1, q = 2.5, pos = {a = 0, b = -1}, ok = true}"
    assert parse_struct(text) == {"x": 1, "q": 2.5, "pos": {"a": 0, "b": -1}, "ok": True}
    assert parse_struct("@0x7ffc1234: {x = 3}") == {"x": 3}
    assert parse_struct("3") is None and parse_struct("{x = ") is None
    # gdb prints the float -0.0 as -0 (no integer is -0): the field keeps its sign
    signed = parse_struct("{x = -0, n = 0}")
    assert signed == {"x": 0.0, "n": 0} and math.copysign(1, signed["x"]) == -1
    assert type(signed["n"]) is int
    value = StructValue(parse_struct(text))
    assert value.pos.b == -1 and repr(value).startswith("struct(x=1, q=2.5, pos=struct(")
    with pytest.raises(AttributeError, match="no field 'y'"):
        _ = value.y
    with pytest.raises(AttributeError, match="read-only at a stop"):
        value.x = 2


def test_struct_fields_take_the_kinds_pkernels_gives_them() -> None:
    """gdb prints the double 0.0 as 0: the launch's kinds (by dotted field name) make a
    float field a float again, a float32 one NumPy's float32, nested structs too."""
    kinds = {"p.x": "float", "p.n": "int", "p.ok": "bool", "p.pos.a": "float32"}
    kinds |= {"p.pos.z": "complex128", "p.pos.b": "float", "i": "int", "t": "float"}
    text = "{x = 0, n = 0, ok = true, pos = {a = 2, b = -0, z = {re = 0, im = 1}}}"
    sent = from_gdb("p", text, kinds)
    value = decode_values({"p": sent})["p"]  # as the agent gets it, through JSON's types
    assert isinstance(value, StructValue) and value == decode(sent)
    assert type(value.x) is float and value.x == 0.0 and repr(value.x) == "0.0"
    assert type(value.n) is int and value.ok is True
    assert type(value.pos.a) is np.float32 and value.pos.a == 2
    assert type(value.pos.b) is float and math.copysign(1, value.pos.b) == -1
    assert type(value.pos.z) is np.complex128 and value.pos.z == 1j
    # the kinds scalars had already: a number of its kind, a complex, unknown as is
    assert from_gdb("t", "0", kinds) == 0.0 and type(from_gdb("t", "0", kinds)) is float
    assert type(from_gdb("i", "0", kinds)) is int and from_gdb("w", "3", kinds) == 3
    assert from_gdb("p", "<optimized out>", kinds) is None
    # a struct whose field kinds are unknown (an older launch message): gdb's numbers
    assert decode(from_gdb("s", "{x = 0}", {})).x == 0


@pytest.mark.skipif(
    shutil.which("gdb") is None or shutil.which("g++") is None, reason="needs gdb and g++"
)
def test_classtype_local_fields_at_a_kernel_stop(tmp_path: Path, kernel_pty) -> None:
    s = kernel_pty(write(tmp_path, "particles.py", PROGRAM))
    s.cmd("break 18")
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert "particles.py(18)charges()" in stop
    i = int(s.cmd("p i", KERNEL_PROMPT).strip())
    assert s.cmd("p p.id", KERNEL_PROMPT).strip() == str(i + 100)
    assert float(s.cmd("p p.x * 2", KERNEL_PROMPT).strip()) == 2.0 * (i + 1)
    assert "struct(x=" in s.cmd("p p", KERNEL_PROMPT)
    # float fields are floats, whole or zero (gdb prints 1.0 as 1, +0.0 as 0)
    assert s.cmd("p p.x", KERNEL_PROMPT).strip() == repr(float(i + 1))
    s.cmd("send set var p.q = 0", KERNEL_PROMPT)
    assert s.cmd("p p.q", KERNEL_PROMPT).strip() == "0.0"
    assert f"struct(x={float(i + 1)!r}, q=0.0, id={i + 100})" in s.cmd("p p", KERNEL_PROMPT)
    assert "read-only at a stop" in s.cmd("eval p.x = 3", KERNEL_PROMPT)
    # -0.0 (gdb reads the literal -0.0 as 0); gdb shows the field as -0
    s.cmd("send set var p.q = -1.0 * 0", KERNEL_PROMPT)
    assert s.cmd("p p.q", KERNEL_PROMPT).strip() == "-0.0"
    s.cmd(f"send set var p.q = {0.5 * i}", KERNEL_PROMPT)  # as it was: the output below
    # The kernel holds the launch's key of the pool (a uint64): shown with the pool
    key = pk.Random_XorShift64_Pool(5, 4).launch_key()  # the pool's first launch
    pool = "Random_XorShift64_Pool(seed=5, num_states=4)"
    assert f"pool = {pool} (this launch's key: {key})" in s.cmd("args", KERNEL_PROMPT)
    assert s.cmd("p pool", KERNEL_PROMPT).strip() == pool
    s.cmd("clear 1", KERNEL_PROMPT)
    assert "out [100.0, 102.0, 105.0, 109.0]" in s.cmd("continue")
    s.quit()
