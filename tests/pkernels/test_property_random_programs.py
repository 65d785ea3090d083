"""Property test of control flow: random kernel bodies (if/elif/else, for over range with
one to three arguments and negative or variable steps, while, break, continue, early
return, augmented assignments) are compiled, run, and must leave exactly what the same
function leaves when Python runs it on Python ints and floats.

Every value stays bounded (assignments reduce modulo a prime, loops are short and while
loops carry a counter), so Python and the kernel compute with the same numbers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pkt_support import load_module, run_python

import pkernels as pk

LOCALS = ("s", "t")
MODULUS = 1009

TEMPLATE = """\
import pkernels as pk


@pk.workunit
def random_program(i, A, out):
    a = A[i]
    s = 0
    t = 1
    f: float = 0.5
{body}
    out[i, 0] = s
    out[i, 1] = t
    out[i, 2] = f
"""


@st.composite
def int_exprs(draw, names: tuple[str, ...], depth: int = 2) -> str:
    """An int expression over ``names``; divisors are non-zero constants."""
    if depth == 0 or draw(st.booleans()):
        if draw(st.booleans()):
            return draw(st.sampled_from(names))
        value = draw(st.integers(-9, 9))
        return str(value) if value >= 0 else f"({value})"
    left = draw(int_exprs(names, depth - 1))
    op = draw(st.sampled_from(["+", "-", "*", "//", "%", "min", "max", "abs"]))
    if op in ("//", "%"):
        divisor = draw(st.sampled_from([-7, -3, -2, 2, 3, 5, 11]))
        return f"({left} {op} {divisor if divisor > 0 else f'({divisor})'})"
    right = draw(int_exprs(names, depth - 1))
    if op in ("min", "max"):
        return f"{op}({left}, {right})"
    if op == "abs":
        return f"abs({left})"
    return f"({left} {op} {right})"


@st.composite
def conditions(draw, names: tuple[str, ...]) -> str:
    left = draw(int_exprs(names, 1))
    right = draw(int_exprs(names, 1))
    op = draw(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]))
    cond = f"{left} {op} {right}"
    extra = draw(st.sampled_from(["", "and", "or", "not"]))
    if extra == "not":
        return f"not ({cond})"
    if extra:
        return f"({cond}) {extra} ({draw(int_exprs(names, 1))} % 2 == 0)"
    return cond


@st.composite
def blocks(draw, names: tuple[str, ...], depth: int, in_loop: bool, indent: int) -> list[str]:
    """Lines of a block of 1..3 statements, indented by ``indent`` levels."""
    pad = "    " * indent
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        kinds = ["assign", "augassign", "float"]
        if depth > 0:
            kinds += ["if", "for", "while"]
        if in_loop:
            kinds += ["break", "continue"]
        kinds.append("return")
        kind = draw(st.sampled_from(kinds))
        if kind == "assign":
            target = draw(st.sampled_from(LOCALS))
            lines.append(f"{pad}{target} = {draw(int_exprs(names))} % {MODULUS}")
        elif kind == "augassign":
            target = draw(st.sampled_from(LOCALS))
            op = draw(st.sampled_from(["+=", "-="]))
            lines.append(f"{pad}{target} {op} {draw(int_exprs(names, 1))} % {MODULUS}")
        elif kind == "float":
            lines.append(f"{pad}f = f * 0.5 + {draw(st.sampled_from(names))}")
        elif kind in ("break", "continue"):
            lines.append(f"{pad}if {draw(conditions(names))}:")
            lines.append(f"{pad}    {kind}")
        elif kind == "return":
            lines.append(f"{pad}if {draw(conditions(names))}:")
            lines.append(f"{pad}    out[i, 3] = s + t")
            lines.append(f"{pad}    return")
        elif kind == "if":
            lines.append(f"{pad}if {draw(conditions(names))}:")
            lines += draw(blocks(names, depth - 1, in_loop, indent + 1))
            for _ in range(draw(st.integers(0, 2))):
                lines.append(f"{pad}elif {draw(conditions(names))}:")
                lines += draw(blocks(names, depth - 1, in_loop, indent + 1))
            if draw(st.booleans()):
                lines.append(f"{pad}else:")
                lines += draw(blocks(names, depth - 1, in_loop, indent + 1))
        elif kind == "for":
            var = f"j{indent}"
            lines.append(f"{pad}for {var} in {draw(ranges(names))}:")
            lines += draw(blocks((*names, var), depth - 1, True, indent + 1))
        else:  # while, with a counter that bounds it
            counter = f"w{indent}"
            lines.append(f"{pad}{counter} = 0")
            lines.append(f"{pad}while {counter} < {draw(st.integers(0, 6))}:")
            lines.append(f"{pad}    {counter} += 1")
            lines += draw(blocks((*names, counter), depth - 1, True, indent + 1))
    return lines


@st.composite
def ranges(draw, names: tuple[str, ...]) -> str:
    small = st.sampled_from(["a % 5", "i % 4", "3", "-2", "0", "a % 7 - 3", "s % 4"])
    form = draw(st.integers(1, 3))
    if form == 1:
        return f"range({draw(small)})"
    start, stop = draw(small), draw(small)
    if form == 2:
        return f"range({start}, {stop})"
    # A non-zero step: a constant, or one computed from the data (either sign).
    step = draw(st.sampled_from(["1", "2", "-1", "-3", "a % 3 + 1", "-(i % 2) - 1"]))
    return f"range({start}, {stop}, {step})"


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("random_programs")


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    body=blocks(("a", "i", "s", "t"), depth=2, in_loop=False, indent=1),
    data=st.lists(st.integers(-20, 20), min_size=12, max_size=12),
)
def test_random_programs_match_python(program_dir, body, data):
    module = load_module(program_dir, TEMPLATE.format(body="\n".join(body)))
    a = np.array(data, dtype=np.int64)
    n = len(a)
    expected = run_python(module.random_program, n, A=a, out=np.zeros((n, 4)))["out"]
    for space in (pk.OpenMP, pk.Serial):
        out = np.zeros((n, 4))
        pk.parallel_for(pk.RangePolicy(space, 0, n), module.random_program, A=a, out=out)
        np.testing.assert_array_equal(out, expected, err_msg="\n".join(body))
