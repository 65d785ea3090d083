"""The Debug space agrees with the compiled spaces: it refuses what the translator refuses
(at the first dispatch of each argument signature), its scalar locals hold their kernel
types (each store converts, as into a C++ variable), and ``@pk.function`` helpers make
their list locals as typed arrays. Results are compared with OpenMP and with NumPy."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pkernels as pk
from pkernels.runtime import python_forms

REFUSED = """
import pkernels as pk

@pk.workunit
def uses_assert(i, x):
    assert x[i] >= 0
    x[i] = 1.0

@pk.workunit
def uses_dict(i, x):
    d = {"a": 1.0}
    x[i] = d["a"]

@pk.workunit
def uses_del(i, x):
    t = x[i]
    del t
    x[i] = 1.0

@pk.workunit
def inverts_a_bool(i, x):
    b = x[i] > 0
    x[i] = ~b

@pk.workunit
def uses_try(i, x):
    try:
        x[i] = 1.0
    except IndexError:
        pass

@pk.workunit
def total_with_assert(i, acc, x):
    assert x[i] >= 0
    acc += x[i]

@pk.workunit
def team_with_assert(team_member: pk.TeamMember, x):
    assert x[team_member.league_rank()] >= 0
    x[team_member.league_rank()] = 1.0
"""


@pytest.mark.parametrize(
    "kernel, reason",
    [
        ("uses_assert", "assert is not supported in kernels"),
        ("uses_dict", "a dict is not supported in kernels"),
        ("uses_del", "del is not supported in kernels"),
        ("inverts_a_bool", "~ needs an integer"),
        ("uses_try", "try/except is not supported in kernels"),
    ],
)
def test_the_debug_space_raises_the_translation_error_of_openmp(make_module, kernel, reason):
    module = make_module(REFUSED)
    errors = []
    for space in (pk.Debug, pk.OpenMP):
        x = np.ones(4)
        with pytest.raises(pk.TranslationError) as info:
            pk.parallel_for(pk.RangePolicy(space, 0, 4), getattr(module, kernel), x=x)
        assert x.tolist() == [1.0] * 4  # refused before any index ran
        errors.append(info.value)
    debug, openmp = errors
    assert str(debug) == str(openmp)  # file, line, column, caret and hint
    assert debug.reason.startswith(reason)
    assert debug.filename == module.__file__


def test_reduce_md_range_and_team_dispatches_are_checked_too(make_module):
    module = make_module(REFUSED)
    x = np.ones(4)
    with pytest.raises(pk.TranslationError, match="assert is not supported"):
        pk.parallel_reduce(pk.RangePolicy(pk.Debug, 0, 4), module.total_with_assert, x=x)
    with pytest.raises(pk.TranslationError, match="assert is not supported"):
        pk.parallel_for(pk.TeamPolicy(pk.Debug, 4, 2), module.team_with_assert, x=x)
    md = np.ones((2, 2))
    with pytest.raises(pk.TranslationError, match="a dict is not supported"):
        pk.parallel_for(pk.MDRangePolicy(pk.Debug, [0, 0], [2, 2]), _md_dict, x=md)
    assert x.tolist() == [1.0] * 4 and md.tolist() == [[1.0, 1.0], [1.0, 1.0]]


@pk.workunit
def _md_dict(i, j, x):
    d = {"a": 2.0}
    x[i, j] = d["a"]


@pk.workunit
def keeps_first_type(i, x, y, out):
    t = x[i]
    t = y[i]
    out[i] = t


def test_each_new_argument_signature_is_checked_at_its_first_dispatch():
    # Fine for float arrays; with an integer x, `t` is an integer local assigned a float.
    out = np.zeros(2)
    floats = np.array([1.5, 2.5])
    pk.parallel_for(pk.RangePolicy(pk.Debug, 0, 2), keeps_first_type, x=floats, y=floats, out=out)
    assert out.tolist() == [1.5, 2.5]
    ints = np.array([1, 2])
    for space in (pk.Debug, pk.OpenMP):
        with pytest.raises(pk.TranslationError, match="'t' is an integer"):
            pk.parallel_for(
                pk.RangePolicy(space, 0, 2), keeps_first_type, x=ints, y=floats, out=out
            )


@pk.workunit
def scaled(i, a, x):
    x[i] = a * x[i]


def test_the_translator_runs_once_per_signature(monkeypatch):
    lowered = []
    real = python_forms.lower_workunit

    def counting(*args, **kwargs):
        lowered.append(args[2])  # the argument types
        return real(*args, **kwargs)

    monkeypatch.setattr(python_forms, "lower_workunit", counting)
    x = np.ones(3)
    for _ in range(3):
        pk.parallel_for(pk.RangePolicy(pk.Debug, 0, 3), scaled, a=2.0, x=x)
    assert len(lowered) == 1 and x.tolist() == [8.0] * 3
    pk.parallel_for(pk.RangePolicy(pk.Debug, 0, 3), scaled, a=2, x=x)  # an int: new signature
    pk.parallel_for(pk.RangePolicy(pk.Debug, 0, 3), scaled, a=2, x=x)
    assert len(lowered) == 2 and x.tolist() == [32.0] * 3


# -- typed locals ------------------------------------------------------------------------


@pk.workunit
def widened(i, v16: pk.View1D[pk.int16], out: pk.View1D[pk.int64]):
    n: int = v16[i]
    out[i] = n * 1000


@pk.workunit
def inferred_int(i, v16: pk.View1D[pk.int16], out: pk.View1D[pk.int64]):
    m = 0
    m += v16[i]
    m += v16[i]
    out[i] = m


@pk.workunit
def accumulated(i, f32: pk.View1D[pk.float32], out: pk.View1D[pk.double]):
    t = 0.0
    for j in range(f32.extent(0)):
        t += f32[j]
    out[i] = t


@pk.workunit
def narrow_locals(i, x: pk.View1D[pk.double], out: pk.View2D[pk.double]):
    h: pk.float32 = x[i]  # rounds to float32 at the store
    c: pk.int8 = 100
    c += 100  # wraps in int8
    u: pk.uint8 = 3
    u -= 4  # wraps in uint8
    out[i, 0] = h
    out[i, 1] = c
    out[i, 2] = u
    out[i, 3] = h * 3.0  # float32 arithmetic (a Python float takes the other type)


def _run(space, kernel, n, **kwargs):
    pk.parallel_for(pk.RangePolicy(space, 0, n), kernel, **kwargs)
    return kwargs["out"]


@pytest.mark.parametrize("space", [pk.Debug, pk.OpenMP], ids=["Debug", "OpenMP"])
def test_an_int_local_of_an_int16_element_computes_in_int64(space):
    v16 = np.array([30000, -30000, 7], np.int16)
    out = _run(space, widened, 3, v16=v16, out=np.zeros(3, np.int64))
    assert out.tolist() == (v16.astype(np.int64) * 1000).tolist()
    out = _run(space, inferred_int, 3, v16=v16, out=np.zeros(3, np.int64))
    assert out.tolist() == (v16.astype(np.int64) * 2).tolist()  # no int16 wrap at 60000


@pytest.mark.parametrize("space", [pk.Debug, pk.OpenMP], ids=["Debug", "OpenMP"])
def test_a_float_local_accumulates_float32_elements_in_double(space):
    f32 = (np.arange(1, 2001, dtype=np.float32) / np.float32(3)).astype(np.float32)
    out = _run(space, accumulated, 1, f32=f32, out=np.zeros(1))
    expected = 0.0
    for v in f32.astype(np.float64):  # in order, in double, as the kernel adds
        expected += v
    assert out[0] == expected
    assert out[0] != float(np.cumsum(f32, dtype=np.float32)[-1])  # float32 would differ


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # NumPy's, on Debug
@pytest.mark.parametrize("space", [pk.Debug, pk.OpenMP], ids=["Debug", "OpenMP"])
def test_declared_narrow_locals_round_and_wrap_at_each_store(space):
    x = np.array([0.1, 1.0 / 3.0])
    out = _run(space, narrow_locals, 2, x=x, out=np.zeros((2, 4)))
    h = x.astype(np.float32)
    assert out[:, 0].tolist() == h.astype(np.float64).tolist()
    assert out[:, 1].tolist() == [-56.0, -56.0] and out[:, 2].tolist() == [255.0, 255.0]
    assert out[:, 3].tolist() == (h * np.float32(3.0)).astype(np.float64).tolist()


@pk.workunit
def wrapped_products(i, a: pk.View1D[pk.int64], b: pk.View1D[pk.int64], out):
    p: pk.int32 = a[i] * b[i]  # the int64 product wraps into int32 at the store
    q = a[i] * b[i] * b[i]  # an int64 local: wraps as int64
    out[i, 0] = p
    out[i, 1] = q
    out[i, 2] = p + i  # a repeated value: the same int32 local each time


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # NumPy's, on Debug
@pytest.mark.parametrize("space", [pk.Debug, pk.OpenMP], ids=["Debug", "OpenMP"])
def test_integer_stores_wrap_as_in_c(space):
    # Debug reads int64 elements as Python ints: their product is exact until the store.
    a = np.array([2**40, 3, 70000, 2**40], np.int64)
    b = np.array([2**30, 5, 70000, 2**30], np.int64)
    out = _run(space, wrapped_products, 4, a=a, b=b, out=np.zeros((4, 3), np.int64))
    with np.errstate(over="ignore"):
        p = (a * b).astype(np.int32)
        q = a * b * b
    assert out[:, 0].tolist() == p.tolist() and out[:, 1].tolist() == q.tolist()
    assert out[:, 2].tolist() == (p.astype(np.int64) + np.arange(4)).tolist()


@pk.workunit
def team_accumulated(team_member: pk.TeamMember, f32: pk.View1D[pk.float32], out, n: int):
    r: int = team_member.league_rank()

    def row(j: int):
        t = 0.0
        s: float = j + 1  # a double local: f32[k] * s computes in double
        for k in range(n):
            t += f32[k] * s
        out[r, j] = t

    pk.parallel_for(pk.TeamThreadRange(team_member, 3), row)


@pytest.mark.parametrize("space", [pk.Debug, pk.OpenMP], ids=["Debug", "OpenMP"])
def test_nested_body_locals_are_typed_too(space):
    f32 = np.full(1000, 0.1, np.float32)
    out = np.zeros((2, 3))
    pk.parallel_for(pk.TeamPolicy(space, 2, 1), team_accumulated, f32=f32, out=out, n=1000)
    for j in range(3):
        expected = 0.0
        for v in f32:
            expected += float(v) * (j + 1)
        assert out[:, j].tolist() == [expected, expected]


@pk.workunit
def product_total(i, acc, v16: pk.View1D[pk.int16]):
    p: int = v16[i]
    p *= 1000
    acc += p


def test_a_reduce_body_converts_its_locals(space):
    v16 = np.array([30000, -20000, 5], np.int16)
    total = pk.parallel_reduce(pk.RangePolicy(space, 0, 3), product_total, v16=v16)
    assert total == int(v16.astype(np.int64).sum()) * 1000


# -- helpers -------------------------------------------------------------------------------

HELPERS = """
from typing import List

import pkernels as pk

@pk.function
def truncated(a: float) -> float:
    v: List[int] = [0, 0]
    v[0] = a  # an int element: truncated, as into an int64 view
    return v[0] + 0.5

@pk.function
def rooted(a: float, b: float) -> float:
    w = [a, b]
    return sqrt(w[0] * w[0] + w[1] * w[1])  # bare, no import: as PyKokkos reads it

@pk.function
def outer(a: float) -> float:
    return truncated(a) * 2  # no list itself: calls a helper that makes one

@pk.workunit
def uses_helpers(i, x, out):
    out[i, 0] = truncated(x[i])
    out[i, 1] = rooted(x[i], 1.0)
    out[i, 2] = outer(x[i])
"""


@pytest.mark.parametrize("space", [pk.Debug, pk.OpenMP], ids=["Debug", "OpenMP"])
def test_helpers_make_typed_list_locals_and_read_bare_math(space, make_module):
    module = make_module(HELPERS)
    x = np.array([1.75, -2.5, 3.25])
    out = np.zeros((3, 3))
    pk.parallel_for(pk.RangePolicy(space, 0, 3), module.uses_helpers, x=x, out=out)
    assert out[:, 0].tolist() == [1.5, -1.5, 3.5]  # trunc(x) + 0.5
    assert out[:, 1].tolist() == [math.sqrt(v * v + 1.0) for v in x]
    assert out[:, 2].tolist() == [3.0, -3.0, 7.0]
    assert module.truncated(1.75) == 2.25  # called from host code: Python's list, as written
