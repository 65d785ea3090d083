"""@pk.classtype value types in kernels and @pk.function helpers: constructors (annotated
and unannotated locals), field reads and writes, methods, classtype parameters and
return values, a classtype field of another classtype. Checked against the same code run
as plain Python on every space, in release and debug builds; unsupported uses raise a
TranslationError at the right line and column."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from pkt_support import ForceDebugBuild, observing, run_python

import pkernels as pk
from pkernels.runtime.marshal import argument_type
from pkernels.translate.kernel import translate_workunit


@pk.classtype
class Particle:
    def __init__(self, x: float, q: float):
        self.x: float = x
        self.q: float = q
        self.id: int = 0

    def energy(self, scale: float) -> float:
        return self.q * self.x * scale

    def move(self, dx: float):
        self.x += dx

    def kick(self, v: pk.View1D[pk.double], i: int):
        v[i] = v[i] + self.q * self.x

    def heavier(self, f: float) -> Particle:
        return Particle(self.x, self.q * f)


@pk.classtype
class Cell:
    """A classtype field of another classtype."""

    def __init__(self, x: float, n: int):
        self.p: Particle = Particle(x, 1.0)
        self.n: int = n
        self.active: bool = n > 0

    def total(self) -> float:
        return self.p.energy(1.0) * self.n


@pk.classtype
class Counter:
    """Unannotated constructor parameter (typed from the call), a pk.int32 field."""

    def __init__(self, start):
        self.count: int = start
        self.hits: pk.int32 = 0
        if start > 2:
            self.hits = 10
            return
        self.count = self.count * 2

    def add(self, k: int):
        self.count += k
        self.hits += 1


@pk.function
def make(i: int, x: pk.View1D[float]) -> Particle:
    p = Particle(x[i], 2.0)
    p.id = i
    return p


@pk.function
def push(p: Particle, by: float):
    """Changes the caller's value, as Python does."""
    p.x += by


@pk.function
def energy_of(p: Particle) -> float:
    return p.energy(1.0)


@pk.workunit
def k_particles(i, x, out):
    p: Particle = Particle(1.0, 2.0)
    p.x = x[i]
    q = make(i, x)
    push(q, 1.0)
    q.move(0.5)
    out[i, 0] = p.energy(2.0)
    out[i, 1] = q.x + q.id
    out[i, 2] = energy_of(make(i, x))  # a temporary, passed by reference
    out[i, 3] = q.heavier(3.0).q
    out[i, 4] = make(i, x).energy(1.5)  # a method of a temporary


@pk.workunit
def k_cells(i, x, out):
    c = Cell(x[i], i)
    c.p.x += 1.0
    c.p.move(0.25)
    push(c.p, 0.5)
    if c.active:
        out[i] = c.total()
    else:
        out[i] = -1.0


@pk.workunit
def k_counter(i, out):
    c = Counter(i)
    for k in range(3):
        c.add(k)
    out[i, 0] = c.count
    out[i, 1] = c.hits


@pk.workunit
def k_loop(i, x, out):
    acc = Particle(0.0, 1.0)
    for k in range(4):
        acc = Particle(acc.x + x[(i + k) % len(x)], acc.q + 1.0)
    out[i] = acc.energy(1.0)


@pk.workunit
def k_method_writes_view(i, x, out):
    p = Particle(x[i], 2.0)
    p.kick(out, i)


@pk.workunit
def k_energy_sum(i, acc, x):
    acc += Particle(x[i], 0.5).energy(2.0)


@pk.workunit
def k_team(team_member: pk.TeamMember, out, x):
    """Classtype values in a team workunit and in its nested bodies."""
    row: int = team_member.league_rank()
    base = Particle(x[row], 1.0)

    def body(i: int):
        p = Particle(x[i], 2.0)
        p.move(base.x)
        out[row, i] = p.energy(1.0)

    pk.parallel_for(pk.TeamThreadRange(team_member, out.extent(1)), body)


@pytest.fixture(params=["release", "debug"])
def build(request):
    """Release builds, or debug builds (-O0 -g, bounds checks) forced by an observer."""
    observer = (
        observing(ForceDebugBuild()) if request.param == "debug" else contextlib.nullcontext()
    )
    with observer:
        yield request.param


def _range(space, n):
    return pk.RangePolicy(space, 0, n)


def _check(space, kernel, n, **arrays):
    """Run ``kernel`` on ``space`` and as plain Python; every array must agree exactly."""
    expected = run_python(kernel, n, **{k: v.copy() for k, v in arrays.items()})
    pk.parallel_for(_range(space, n), kernel, **arrays)
    for name, array in arrays.items():
        np.testing.assert_array_equal(array, expected[name], err_msg=name)


def test_constructors_fields_methods_helpers(space, build) -> None:
    x = np.random.default_rng(5).random(8)
    out = np.zeros((8, 5))
    _check(space, k_particles, 8, x=x, out=out)
    p = Particle(x[3], 2.0)
    assert out[3, 0] == Particle(x[3], 2.0).energy(2.0)
    assert out[3, 1] == x[3] + 1.5 + 3
    assert out[3, 3] == 6.0 and out[3, 4] == p.energy(1.5)


def test_classtype_field_of_a_classtype(space, build) -> None:
    x = np.random.default_rng(6).random(6)
    out = np.zeros(6)
    _check(space, k_cells, 6, x=x, out=out)
    assert out[0] == -1.0 and out[2] == (x[2] + 1.75) * 2


def test_unannotated_constructor_parameters_and_early_return(space, build) -> None:
    out = np.zeros((5, 2), dtype=np.int64)
    _check(space, k_counter, 5, out=out)
    assert out[:, 0].tolist() == [3, 5, 7, 6, 7]
    assert out[:, 1].tolist() == [3, 3, 3, 13, 13]


def test_rebinding_a_local_to_new_values_in_a_loop(space, build) -> None:
    x = np.arange(5, dtype=np.float64)
    out = np.zeros(5)
    _check(space, k_loop, 5, x=x, out=out)


def test_method_writing_a_view(space, build) -> None:
    x = np.arange(4, dtype=np.float64)
    out = np.ones(4)
    _check(space, k_method_writes_view, 4, x=x, out=out)
    np.testing.assert_array_equal(out, 1 + 2 * x)


@pytest.mark.parametrize("space, team", [(pk.OpenMP, 3), (pk.Serial, 1), (pk.Debug, 2)])
def test_classtypes_in_a_team_kernel(space, team, build) -> None:
    x = np.random.default_rng(9).random(6)
    out = np.zeros((4, 6))
    pk.parallel_for(pk.TeamPolicy(space, 4, team), k_team, out=out, x=x)
    np.testing.assert_array_equal(out, 2.0 * (x[None, :] + x[:4, None]))


def test_classtype_in_a_reduce(space, build) -> None:
    x = np.arange(10, dtype=np.float64)
    total = pk.parallel_reduce(_range(space, 10), k_energy_sum, x=x)
    assert total == sum(Particle(v, 0.5).energy(2.0) for v in x)


def test_classtypes_stay_ordinary_python_classes() -> None:
    p = Particle(1.0, 2.0)
    p.move(1.0)
    assert (p.x, p.q, p.id, p.energy(2.0)) == (2.0, 2.0, 0, 8.0)
    assert make(0, np.array([4.0])).x == 4.0
    with pytest.raises(TypeError, match="decorates a class"):
        pk.classtype(make)


def test_structs_in_the_generated_source() -> None:
    x, out = np.zeros(4), np.zeros(4)
    types = {"x": argument_type("x", x), "out": argument_type("out", out)}
    entry = translate_workunit(k_cells, "for", types)
    src = entry.source
    particle = src.index("struct pk_ct_Particle {")
    cell = src.index("struct pk_ct_Cell {")
    assert particle < cell  # the struct a field holds comes first
    assert "    double x;\n    double q;\n    int64_t id;\n" in src[particle:cell]
    assert "pk_ct_Particle p;\n    int64_t n;\n    bool active;" in src[cell:]
    assert "static inline void pk_fn_push_(pk_ct_Particle& p, double by)" in src
    assert entry.variable_kinds.get("c") is None  # a struct, not a scalar, for pkdb
    # its fields' kinds by dotted name, nested ones too, and a helper's struct parameter
    kinds = entry.variable_kinds
    assert (kinds["c.p.x"], kinds["c.p.id"], kinds["c.n"], kinds["c.active"]) == (
        "float",
        "int",
        "int",
        "bool",
    )
    assert kinds["p.q"] == "float"
    assert Particle.__pkernels_classtype__.fields == ("x", "q", "id")
    assert Cell.__pkernels_classtype__.fields == ("p", "n", "active")


# ------------------------------------------------------------------ errors

BAD = """\
from __future__ import annotations

import pkernels as pk


@pk.classtype
class P:
    def __init__(self, x: float, q: float):
        self.x: float = x
        self.q: float = q
        self.id: int = 0

    def no_annotation(self):
        return self.x * 2.0

    def same(self) -> P:
        return self


@pk.classtype
class Holder:
    def __init__(self, x: float):
        self.p: P = P(x, 1.0)


@pk.classtype
class NoAnnotation:
    def __init__(self, x: float):
        self.x: float = x
        self.y = 0


@pk.classtype
class HasView:
    def __init__(self, v):
        self.v: pk.View1D[pk.double] = v


@pk.classtype
class Conditional:
    def __init__(self, x: float):
        if x > 0:
            self.x: float = x


@pk.classtype
class Itself:
    def __init__(self):
        self.me: Itself = Itself()


class Plain:
    def __init__(self, x: float):
        self.x = x


@pk.function
def returns_param(p: P) -> P:
    return p


@pk.function
def rebinds_param(p: P):
    p = P(0.0, 0.0)


@pk.workunit
def dispatch_argument(i, p: P, out):
    out[i] = p.x


@pk.workunit
def unannotated_field(i, out):
    n = NoAnnotation(1.0)
    out[i] = n.x


@pk.workunit
def unannotated_method(i, out):
    p = P(1.0, 2.0)
    out[i] = p.no_annotation()


@pk.workunit
def alias(i, out):
    p = P(1.0, 2.0)
    q = p
    out[i] = q.x


@pk.workunit
def alias_field(i, out):
    h = Holder(1.0)
    p = h.p
    out[i] = p.x


@pk.workunit
def alias_store(i, out):
    h = Holder(1.0)
    p = P(2.0, 3.0)
    h.p = p
    out[i] = h.p.x


@pk.workunit
def alias_return(i, out):
    p = P(1.0, 2.0)
    out[i] = p.same().x


@pk.workunit
def no_field(i, out):
    p = P(1.0, 2.0)
    out[i] = p.y


@pk.workunit
def misspelt_field(i, out):
    p = P(1.0, 2.0)
    out[i] = p.idd


@pk.workunit
def arithmetic(i, out):
    p = P(1.0, 2.0)
    out[i] = p + 1.0


@pk.workunit
def float_into_int_field(i, out):
    p = P(1.0, 2.0)
    p.id = out[i]


@pk.workunit
def view_field(i, out):
    h = HasView(out)
    out[i] = 0.0


@pk.workunit
def return_param(i, out):
    p = P(1.0, 2.0)
    out[i] = returns_param(p).x


@pk.workunit
def rebind_param(i, out):
    p = P(1.0, 2.0)
    rebinds_param(p)


@pk.workunit
def conditional_field(i, out):
    c = Conditional(1.0)
    out[i] = c.x


@pk.workunit
def not_a_classtype(i, out):
    p = Plain(1.0)


@pk.workunit
def contains_itself(i, out):
    s = Itself()


@pk.workunit
def annotated_field_store(i, out):
    p = P(1.0, 2.0)
    p.x: float = 2.0


@pk.workunit
def into_a_view(i, out):
    p = P(1.0, 2.0)
    out[i] = p


@pk.workunit
def field_as_method(i, out):
    p = P(1.0, 2.0)
    out[i] = p.x()


@pk.workunit
def scalar_becomes_struct(i, out):
    p = 1.0
    p = P(1.0, 2.0)
"""

CASES = [
    # kernel, text on the offending line, text the caret points at, message
    ("dispatch_argument", "def dispatch_argument(", "p: P", "a classtype (P) cannot be a "
     "dispatch argument"),
    ("unannotated_field", "self.y = 0", "self.y", "the field self.y has no type annotation"),
    ("unannotated_method", "return self.x * 2.0", "return", "the method P.no_annotation returns "
     "a value but has no return annotation"),
    ("alias", "q = p", "q = p", "assigning `p` to `q` would share one P object in Python but copy "
     "it in C++"),
    ("alias_field", "p = h.p", "p = h.p", "assigning `h.p` to `p` would share one P object"),
    ("alias_store", "h.p = p", "h.p = p", "assigning `p` to `h.p` would share one P object"),
    ("alias_return", "return self", "return", "returning `self` would share one P object"),
    ("no_field", "out[i] = p.y", "p.y", "classtype P has no field 'y'"),
    ("misspelt_field", "out[i] = p.idd", "p.idd", "classtype P has no field 'idd': did you mean "
     "'id'?"),
    ("arithmetic", "out[i] = p + 1.0", "p + 1.0", "a P value cannot be used here"),
    ("float_into_int_field", "p.id = out[i]", "p.id", "the field p.id is an int64 but is "
     "assigned a float"),
    ("view_field", "self.v: pk.View1D", "pk.View1D", "the field 'v' of classtype HasView must be "
     "a number, a bool or a classtype"),
    ("return_param", "    return p\n", "return", "returning `p` would share one P object"),
    ("rebind_param", "p = P(0.0, 0.0)", "p = P(0.0", "cannot rebind the parameter 'p'"),
    ("conditional_field", "self.x: float = x\n", "self.x: float = x\n", "declare the field "
     "self.x at the top level of __init__"),
    ("not_a_classtype", "p = Plain(1.0)", "Plain", "the class 'Plain' is not a classtype"),
    ("contains_itself", "self.me: Itself", "Itself = ", "classtype Itself contains itself"),
    ("annotated_field_store", "p.x: float = 2.0", "p.x: float", "only a classtype's __init__ "
     "declares fields"),
    ("into_a_view", "out[i] = p\n", "p\n", "a P value cannot be used here"),
    ("field_as_method", "out[i] = p.x()", "p.x", "'x' is a field of P, not a method"),
    ("scalar_becomes_struct", "p = P(1.0, 2.0)\n", "p = P(1.0, 2.0)\n", "'p' was a float64 on "
     "line"),
]  # fmt: skip


def _position(line_text: str, caret_text: str, occurrence: int = -1) -> tuple[int, int]:
    """The line number and caret column of ``caret_text`` on the (last) line holding
    ``line_text``."""
    lines = BAD.splitlines(keepends=True)
    matches = [k for k, line in enumerate(lines, 1) if line_text in line]
    lineno = matches[occurrence]
    return lineno, lines[lineno - 1].index(caret_text)


@pytest.mark.parametrize("kernel, line_text, caret_text, message", CASES, ids=[c[0] for c in CASES])
def test_errors(make_module, kernel, line_text, caret_text, message) -> None:
    module = make_module(BAD)
    extra = {"p": 1.0} if kernel == "dispatch_argument" else {}
    with pytest.raises(pk.TranslationError) as info:
        pk.parallel_for(_range(pk.OpenMP, 2), getattr(module, kernel), out=np.zeros(2), **extra)
    err = info.value
    lineno, col = _position(line_text, caret_text)
    assert message in err.reason, err.reason
    assert (err.filename, err.lineno, err.col) == (module.__file__, lineno, col), str(err)
    text = str(err)
    assert text.startswith(f"{module.__file__}:{lineno}:{col + 1}: ")
    assert "\n    " + " " * col + "^" in text
    assert err.hint, "every classtype error says what to write instead"


def test_alias_error_suggests_a_copy(make_module) -> None:
    module = make_module(BAD)
    with pytest.raises(pk.TranslationError) as info:
        pk.parallel_for(_range(pk.Serial, 2), module.alias, out=np.zeros(2))
    assert "Make the copy explicit with the constructor, `P(...)`" in info.value.hint


def test_the_debug_space_refuses_what_translation_refuses(make_module) -> None:
    """Python itself could run these, but a program checked on Debug must not fail on
    OpenMP: the Debug space raises the translator's error at the first dispatch."""
    module = make_module(BAD)
    out = np.zeros(2)
    errors = []
    for space in (pk.Debug, pk.OpenMP):
        with pytest.raises(pk.TranslationError) as info:
            pk.parallel_for(_range(space, 2), module.alias, out=out)
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    assert "would share one P object in Python but copy it in C++" in errors[0]
    assert out.tolist() == [0.0, 0.0]  # nothing ran
