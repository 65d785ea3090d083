"""Property tests: random arithmetic expressions become kernel source, are compiled and
run, and must give exactly what Python gives for the same expression text.

Random *kernels* cost a compile each (~0.3 s), so each example packs several
expressions into one kernel, and the example count is moderate. Random *data* through
fixed kernels is cheap and gets more examples.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from pkt_support import load_module

import pkernels as pk

# Intermediate integers stay within 2**53 so Python's exact int -> float conversions and
# the kernel's double arithmetic agree; floats stay finite.
INT_LIMIT = 2**53

INT_VARS = ("a", "b")
FLOAT_VARS = ("x", "y")


class Invalid(Exception):
    """This element's value is outside what the comparison covers (Python raised,
    an integer left the safe range, or a float became inf/nan)."""


def _checked(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if abs(value) > INT_LIMIT:
            raise Invalid
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise Invalid
    else:  # complex from a negative base to a fractional power
        raise Invalid
    return value


@dataclass(frozen=True)
class Node:
    text: str
    is_float: bool
    fn: object  # env -> value, with every intermediate value checked

    def eval(self, env):
        try:
            return _checked(self.fn(env))
        except (ZeroDivisionError, OverflowError, ValueError):
            raise Invalid from None


def leaf_var(name: str) -> Node:
    return Node(name, name in FLOAT_VARS, lambda env: env[name])


def leaf_const(value) -> Node:
    text = repr(value) if value >= 0 else f"({value!r})"
    return Node(text, isinstance(value, float), lambda env: value)


BINARY = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
}


def binary(op: str, left: Node, right: Node) -> Node:
    f = BINARY[op]
    is_float = op == "/" or left.is_float or right.is_float
    return Node(
        f"({left.text} {op} {right.text})",
        is_float,
        lambda env: f(left.eval(env), right.eval(env)),
    )


def as_int(e: Node) -> Node:
    return unary("int", e) if e.is_float else e


def bitwise(op: str, left: Node, right: Node) -> Node:
    """& | ^ on integers (floats are converted with int() first)."""
    f = {"&": operator.and_, "|": operator.or_, "^": operator.xor}[op]
    left, right = as_int(left), as_int(right)
    return Node(
        f"({left.text} {op} {right.text})", False, lambda env: f(left.eval(env), right.eval(env))
    )


def shift(op: str, e: Node, amount: int) -> Node:
    f = operator.lshift if op == "<<" else operator.rshift
    e = as_int(e)
    return Node(f"({e.text} {op} {amount})", False, lambda env: f(e.eval(env), amount))


def compare(op: str, left: Node, right: Node) -> Node:
    """A comparison as a value: a bool, which arithmetic treats as 0 or 1."""
    f = {"<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne}[op]
    return Node(
        f"({left.text} {op} {right.text})", False, lambda env: f(left.eval(env), right.eval(env))
    )


def negate(e: Node) -> Node:
    return Node(f"(not {e.text})", False, lambda env: not e.eval(env))


def power(base: Node, exponent) -> Node:
    is_float = base.is_float or isinstance(exponent, float) or exponent < 0
    if isinstance(exponent, float):  # fractional powers of a non-negative base only
        return Node(
            f"(abs({base.text}) ** {exponent!r})",
            True,
            lambda env: abs(base.eval(env)) ** exponent,
        )
    exp_text = repr(exponent) if exponent >= 0 else f"({exponent})"
    return Node(f"({base.text} ** {exp_text})", is_float, lambda env: base.eval(env) ** exponent)


def unary(kind: str, e: Node) -> Node:
    if kind == "neg":
        return Node(f"(-{e.text})", e.is_float, lambda env: -e.eval(env))
    if kind == "abs":
        return Node(f"abs({e.text})", e.is_float, lambda env: abs(e.eval(env)))
    if kind == "int":
        return Node(f"int({e.text})", False, lambda env: int(e.eval(env)))
    if kind == "float":
        return Node(f"float({e.text})", True, lambda env: float(e.eval(env)))
    if kind == "floor":  # math.floor: an int, for floats and ints alike
        return Node(f"math.floor({e.text})", False, lambda env: math.floor(e.eval(env)))
    if kind == "pkfloor":  # pk.floor: a float
        return Node(f"pk.floor({e.text})", True, lambda env: float(math.floor(e.eval(env))))
    if kind == "sqrt":
        return Node(f"math.sqrt(abs({e.text}))", True, lambda env: math.sqrt(abs(e.eval(env))))
    if kind == "sin":
        return Node(f"math.sin({e.text})", True, lambda env: math.sin(e.eval(env)))
    if kind == "exp":
        return Node(f"math.exp({e.text})", True, lambda env: math.exp(e.eval(env)))
    if kind == "log":
        return Node(
            f"math.log(abs({e.text}) + 1)", True, lambda env: math.log(abs(e.eval(env)) + 1)
        )
    raise AssertionError(kind)


def _same_type(left: Node, right: Node) -> tuple[Node, Node]:
    """Python's min/max/or/if-else keep the chosen operand's type; the kernel gives the
    common type. Mixed operands are made float on both sides so the two agree."""
    if left.is_float != right.is_float:
        left, right = unary("float", left), unary("float", right)
    return left, right


def choose(kind: str, left: Node, right: Node, cond: tuple[Node, str, Node] | None) -> Node:
    left, right = _same_type(left, right)
    if kind in ("min", "max"):
        f = min if kind == "min" else max
        return Node(
            f"{kind}({left.text}, {right.text})",
            left.is_float,
            lambda env: f(left.eval(env), right.eval(env)),
        )
    if kind in ("or", "and"):

        def fn(env):
            first = left.eval(env)
            if (kind == "or") == bool(first):
                return first
            return right.eval(env)

        return Node(f"({left.text} {kind} {right.text})", left.is_float, fn)
    assert cond is not None
    c_left, op, c_right = cond
    compare = {"<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne}[op]

    def pick(env):
        return left.eval(env) if compare(c_left.eval(env), c_right.eval(env)) else right.eval(env)

    text = f"({left.text} if {c_left.text} {op} {c_right.text} else {right.text})"
    return Node(text, left.is_float, pick)


int_consts = st.integers(-6, 6)
float_consts = st.sampled_from([0.5, 1.25, -2.0, 3.0, 0.1, -0.75, 10.0, 1e-3])


def expressions(depth: int = 3) -> st.SearchStrategy[Node]:
    leaves = st.one_of(
        st.sampled_from(INT_VARS + FLOAT_VARS).map(leaf_var),
        int_consts.map(leaf_const),
        float_consts.map(leaf_const),
    )

    def extend(children: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
        comparison = st.tuples(children, st.sampled_from(["<", "<=", "==", "!="]), children)
        return st.one_of(
            st.builds(binary, st.sampled_from(sorted(BINARY)), children, children),
            st.builds(power, children, st.sampled_from([0, 1, 2, 3, -1, -2, 0.5, 1.5])),
            st.builds(
                unary,
                st.sampled_from(
                    ["neg", "abs", "int", "float", "floor", "pkfloor", "sqrt", "sin", "exp", "log"]
                ),
                children,
            ),
            st.builds(
                choose,
                st.sampled_from(["min", "max", "or", "and", "if"]),
                children,
                children,
                comparison,
            ),
            st.builds(bitwise, st.sampled_from(["&", "|", "^"]), children, children),
            st.builds(shift, st.sampled_from(["<<", ">>"]), children, st.integers(0, 5)),
            st.builds(compare, st.sampled_from(["<", "<=", "==", "!="]), children, children),
            st.builds(negate, children),
        )

    return st.recursive(leaves, extend, max_leaves=2**depth)


KERNEL_TEMPLATE = """\
import math

import pkernels as pk


@pk.workunit
def random_kernel(i, A, B, X, Y, out_i, out_f):
    a = A[i]
    b = B[i]
    x = X[i]
    y = Y[i]
{body}
"""

N = 24
ints = hnp.arrays(np.int64, N, elements=st.integers(-40, 40))
floats = hnp.arrays(
    np.float64,
    N,
    elements=st.one_of(
        st.floats(-50, 50, allow_nan=False, allow_infinity=False),
        st.sampled_from([0.0, 1.0, -1.0, 0.1, 0.5, 2.5, -3.0]),
    ),
)


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("random_kernels")


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    exprs=st.lists(expressions(), min_size=4, max_size=8),
    a=ints,
    b=ints,
    x=floats,
    y=floats,
)
def test_random_expressions_match_python(kernel_dir, exprs, a, b, x, y):
    columns = len(exprs)
    expected = np.zeros((N, columns))
    valid = np.zeros((N, columns), dtype=bool)
    for i in range(N):
        env = {"a": int(a[i]), "b": int(b[i]), "x": float(x[i]), "y": float(y[i])}
        for k, e in enumerate(exprs):
            try:
                value = e.eval(env)
            except Invalid:
                continue
            # The evaluator and Python agree on the very text the kernel is made of.
            direct = eval(e.text, {"math": math, "pk": pk}, dict(env))  # noqa: S307
            assert direct == value or (direct != direct and value != value)
            assert isinstance(value, float) == e.is_float or isinstance(value, bool), e.text
            expected[i, k] = value
            valid[i, k] = True
    assume(valid.any())

    body = "\n".join(
        f"    out_{'f' if e.is_float else 'i'}[i, {k}] = {e.text}" for k, e in enumerate(exprs)
    )
    module = load_module(kernel_dir, KERNEL_TEMPLATE.format(body=body))
    out_i = np.zeros((N, columns), np.int64)
    out_f = np.zeros((N, columns))
    try:
        pk.parallel_for(
            pk.RangePolicy(pk.OpenMP, 0, N),
            module.random_kernel,
            A=a,
            B=b,
            X=x,
            Y=y,
            out_i=out_i,
            out_f=out_f,
        )
    except pk.TranslationError as refused:
        _assert_refused_literal_arithmetic(refused)
        assume(False)  # no kernel to compare: the translator refuses it, as it should
    for k, e in enumerate(exprs):
        got = (out_f if e.is_float else out_i)[:, k]
        mask = valid[:, k]
        want = expected[mask, k]
        if e.is_float:
            np.testing.assert_array_equal(got[mask], want, err_msg=e.text)
        else:
            assert got[mask].tolist() == [int(v) for v in want], e.text


_LITERAL_REFUSAL = re.compile(
    r":\d+:\d+: (?P<written>.+?)(?: divides by zero| shifts by a negative count"
    r"|(?: is -?\d+, which)? does not fit in a kernel's 64-bit integers)$",
    re.M,
)


def _assert_refused_literal_arithmetic(refused: Exception) -> None:
    """The translator refuses integer arithmetic of literals alone that Python refuses or
    an int64 cannot hold (``0 % 0``, ``1 << -1``, ``2**70``): the refusal must name such
    an expression, one Python indeed fails on or makes too large."""
    found = _LITERAL_REFUSAL.search(str(refused))
    assert found is not None, refused
    try:
        value = eval(found["written"], {"math": math, "pk": pk})  # noqa: S307
    except (ZeroDivisionError, ValueError):
        return
    assert not -(2**63) <= value < 2**63, refused


# ------------------------------------------------------------------ random data, fixed kernels


@pk.workunit
def int_floor_ops(i, a, b, out):
    out[i, 0] = a[i] // b[i]
    out[i, 1] = a[i] % b[i]
    out[i, 2] = (a[i] < b[i]) + (a[i] == b[i]) * 2
    out[i, 3] = max(a[i], b[i]) - min(a[i], b[i])


@pk.workunit
def float_floor_ops(i, x, y, out):
    out[i, 0] = x[i] // y[i]
    out[i, 1] = x[i] % y[i]
    out[i, 2] = x[i] / y[i]
    out[i, 3] = x[i] * y[i] - x[i]


@pk.workunit
def print_values(i, x):
    print(x[i])


nonzero_int64 = st.integers(-(2**61), 2**61).filter(lambda v: v != 0)


@settings(max_examples=60, deadline=None)
@given(
    a=hnp.arrays(np.int64, 32, elements=st.integers(-(2**61), 2**61)),
    b=hnp.arrays(np.int64, 32, elements=st.one_of(st.integers(-9, 9), nonzero_int64)),
)
def test_integer_floor_division_and_modulo_match_python(a, b):
    b = np.where(b == 0, 1, b)
    out = np.zeros((32, 4), np.int64)
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 32), int_floor_ops, a=a, b=b, out=out)
    for i, (p, q) in enumerate(zip(a.tolist(), b.tolist(), strict=True)):
        assert out[i].tolist() == [p // q, p % q, (p < q) + (p == q) * 2, max(p, q) - min(p, q)]


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=60, deadline=None)
@given(
    x=hnp.arrays(np.float64, 32, elements=finite),
    y=hnp.arrays(np.float64, 32, elements=finite.filter(lambda v: v != 0)),
)
def test_float_floor_division_and_modulo_match_python(x, y):
    out = np.zeros((32, 4))
    with np.errstate(all="ignore"):
        pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 32), float_floor_ops, x=x, y=y, out=out)
    for i, (p, q) in enumerate(zip(x.tolist(), y.tolist(), strict=True)):
        expected = [p // q, p % q, p / q, p * q - p]
        for got, want in zip(out[i].tolist(), expected, strict=True):
            assert got == want or (got != got and want != want), (p, q, got, want)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(x=hnp.arrays(np.float64, st.integers(1, 40), elements=st.floats(width=64)))
def test_printed_floats_are_python_reprs(capfd, x):
    capfd.readouterr()
    pk.parallel_for(pk.RangePolicy(pk.Serial, 0, len(x)), print_values, x=x)
    assert capfd.readouterr().out.splitlines() == [repr(v) for v in x.tolist()]


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(x=hnp.arrays(np.float32, st.integers(1, 40), elements=st.floats(width=32)))
def test_printed_float32_values_are_shortest_single_precision(capfd, x):
    capfd.readouterr()
    pk.parallel_for(pk.RangePolicy(pk.Serial, 0, len(x)), print_values, x=x)
    expected = []
    for v in x:
        # What Python prints for the array's element: NumPy's str() of a float32 (the
        # shortest digits that identify it; fixed notation for 1e-4 <= |v| < 1e6 only).
        expected.append(str(np.float32(v)))
    assert capfd.readouterr().out.splitlines() == expected
