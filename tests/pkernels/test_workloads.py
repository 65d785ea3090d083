"""Workload classes: @pk.workload, @pk.main, @pk.callback, @pk.workunit methods reading
``self.*`` fields, pk.execute; checked against NumPy on every space."""

from __future__ import annotations

import contextlib
import sys

import numpy as np
import pytest
from pkt_support import ForceDebugBuild, observing

import pkernels as pk


@pk.workload
class RandomSum:
    """The PyKokkos tutorial's random-sum workload."""

    def __init__(self, n: int) -> None:
        self.N = n
        self.total = 0
        self.a = pk.View([n], pk.int64)
        self.a[:] = np.random.default_rng(7).integers(0, 10, n)
        self.reported: list[float] = []

    @pk.main
    def run(self) -> None:
        self.total = pk.parallel_reduce(self.N, self.my_reduction)

    @pk.callback
    def results(self) -> None:
        self.reported.append(self.total)

    @pk.workunit
    def my_reduction(self, i: int, accumulator: pk.Acc[pk.double]):
        accumulator += self.a[i]


@pk.workload
class Saxpy:
    """Fields of every kind: a scalar, an input view, an output view; plus a kwarg."""

    def __init__(self, n: int, a: float) -> None:
        self.n = n
        self.a = a
        self.x = np.linspace(0.0, 1.0, n)
        self.y = np.zeros(n)

    @pk.main
    def run(self) -> None:
        pk.parallel_for("saxpy", self.n, self.saxpy, shift=1.0)

    @pk.workunit
    def saxpy(self, i, shift):
        self.y[i] = self.a * self.x[i] + shift


@pk.workload
class AssignsAField:
    def __init__(self) -> None:
        self.count = 0

    @pk.main
    def run(self) -> None:
        pk.parallel_for(4, self.bad)

    @pk.workunit
    def bad(self, i):
        self.count = i


def test_random_sum_workload(space) -> None:
    workload = RandomSum(1000)
    pk.execute(space, workload)
    assert workload.total == float(workload.a.sum())
    assert workload.reported == [workload.total]  # the callback ran after main


def test_fields_scalars_views_and_keyword_arguments(space) -> None:
    workload = Saxpy(64, 3.0)
    pk.execute(space, workload)
    np.testing.assert_array_equal(workload.y, 3.0 * workload.x + 1.0)


def test_fields_are_read_at_each_dispatch(native_space) -> None:
    workload = Saxpy(16, 2.0)
    pk.execute(native_space, workload)
    workload.a = -1.0  # the same compiled kernel, new field values
    workload.x = workload.x[::-1].copy()
    pk.execute(native_space, workload)
    np.testing.assert_array_equal(workload.y, -1.0 * workload.x + 1.0)


def test_execute_uses_the_space_then_restores_the_default() -> None:
    pk.set_default_space(pk.Serial)
    seen = []

    @pk.workload
    class Probe:
        @pk.main
        def run(self) -> None:
            seen.append(pk.get_default_space())

    pk.execute(pk.OpenMP, Probe())
    pk.execute(pk.ExecutionSpace.Default, Probe())
    assert seen == [pk.OpenMP, pk.Serial]
    assert pk.get_default_space() is pk.Serial


def test_assigning_a_field_in_a_kernel_is_a_translation_error() -> None:
    with pytest.raises(pk.TranslationError) as info:
        pk.execute(pk.OpenMP, AssignsAField())
    message = str(info.value)
    assert "cannot assign the field self.count" in message
    assert "self.count = i" in message and "^" in message


def test_execute_needs_a_workload_with_a_main_method() -> None:
    class Plain:
        pass

    @pk.workload
    class NoMain:
        pass

    with pytest.raises(TypeError, match="@pk.workload"):
        pk.execute(pk.OpenMP, Plain())
    with pytest.raises(TypeError, match="no @pk.main"):
        pk.execute(pk.OpenMP, NoMain())


# ------------------------------------------------------------------ @pk.function methods


@pk.workload
class ScaledRandomSum:
    """The random-sum workload, its samples computed by @pk.function methods that read
    ``self.*`` fields (a view and scalars), call each other, and write a view field."""

    def __init__(self, n: int, seed: int, scale: float) -> None:
        self.N = n
        self.seed = seed
        self.scale = scale
        self.w = np.linspace(0.0, 1.0, n)
        self.out = np.zeros(n)
        self.total = 0.0

    @pk.main
    def run(self) -> None:
        self.total = pk.parallel_reduce(self.N, self.my_reduction)
        pk.parallel_for(self.N, self.fill)

    @pk.function
    def weight(self, i: int) -> float:
        return self.w[i] * self.scale

    @pk.function
    def sample(self, i: int) -> float:
        return pk.rand(self.seed, i) * self.weight(i)

    @pk.function
    def put(self, i: int, v: float):
        self.out[i] = v

    @pk.workunit
    def my_reduction(self, i: int, accumulator: pk.Acc[pk.double]):
        accumulator += self.sample(i)

    @pk.workunit
    def fill(self, i: int):
        self.put(i, self.sample(i) + i)


@pk.workload
class DoubledWeights(ScaledRandomSum):
    """Another ``weight``, so workunits of its own (with the same bodies)."""

    @pk.function
    def weight(self, i: int) -> float:
        return 2.0 * self.w[i] * self.scale

    @pk.workunit
    def my_reduction(self, i: int, accumulator: pk.Acc[pk.double]):
        accumulator += self.sample(i)

    @pk.workunit
    def fill(self, i: int):
        self.put(i, self.sample(i) + i)


@pk.workload
class SameMethods(ScaledRandomSum):
    """Inherits everything: shares the base class's workunits and their builds."""


@pk.classtype
class Scaled:
    def __init__(self, scale: float) -> None:
        self.sum: float = 0.0
        self.scale: float = scale

    def add(self, v: float):
        self.sum += v * self.scale


@pk.workload
class Depths:
    """A recursive @pk.function method, atomics on a view field through a method, and a
    classtype value in a workunit method."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.base = 3
        self.depth = np.zeros(n, dtype=np.int64)
        self.counts = np.zeros(4, dtype=np.int64)

    @pk.main
    def run(self) -> None:
        pk.parallel_for(self.n, self.walk)

    @pk.function
    def steps(self, k: int) -> int:
        if k <= 0:
            return self.base
        return self.steps(k - 1) + 1

    @pk.function
    def tally(self, k: int):
        pk.atomic_add(self.counts, [k % 4], 1)

    @pk.workunit
    def walk(self, i: int):
        acc = Scaled(2.0)
        acc.add(self.steps(i % 5))
        self.depth[i] = int(acc.sum)
        self.tally(i)


def _samples(workload: ScaledRandomSum, factor: float = 1.0) -> np.ndarray:
    return np.array(
        [
            pk.rand(workload.seed, i) * (factor * workload.w[i] * workload.scale)
            for i in range(workload.N)
        ]
    )


@pytest.fixture(params=["release", "debug"])
def build(request):
    """Release builds, or debug builds (-O0 -g, bounds checks) forced by an observer."""
    observer = (
        observing(ForceDebugBuild()) if request.param == "debug" else contextlib.nullcontext()
    )
    with observer:
        yield request.param


def test_function_methods_reading_fields(space, build) -> None:
    workload = ScaledRandomSum(500, 11, 3.0)
    pk.execute(space, workload)
    samples = _samples(workload)
    if space is pk.OpenMP:  # the threads' partial sums are added in another order
        assert workload.total == pytest.approx(sum(samples), rel=1e-12)
    else:
        assert workload.total == sum(samples)
    np.testing.assert_array_equal(workload.out, samples + np.arange(500))


def test_function_methods_resolve_in_the_object_class(space) -> None:
    base, doubled = ScaledRandomSum(64, 5, 1.5), DoubledWeights(64, 5, 1.5)
    same = SameMethods(64, 6, 0.5)
    for workload in (base, doubled, same, base):
        pk.execute(space, workload)
    np.testing.assert_array_equal(base.out, _samples(base) + np.arange(64))
    np.testing.assert_array_equal(doubled.out, _samples(doubled, 2.0) + np.arange(64))
    np.testing.assert_array_equal(same.out, _samples(same) + np.arange(64))


OVERRIDES = """\
import pkernels as pk


@pk.workload
class Base:
    def __init__(self) -> None:
        self.n = 4

    @pk.main
    def run(self) -> None:
        pk.parallel_for(self.n, self.work)

    @pk.function
    def f(self, i: int) -> int:
        return i

    @pk.workunit
    def work(self, i):
        x = self.f(i)


@pk.workload
class Derived(Base):
    @pk.function
    def f(self, i: int) -> int:
        return 2 * i
"""


def test_a_shared_workunit_calling_an_overridden_method_is_refused(make_module) -> None:
    module = make_module(OVERRIDES)
    pk.execute(pk.Serial, module.Base())
    with pytest.raises(pk.TranslationError) as info:
        pk.execute(pk.Debug, module.Derived())
    assert "Derived overrides f, which the workunit Base.work calls" in info.value.reason
    assert info.value.lineno == OVERRIDES.splitlines().index("    def work(self, i):") + 1
    assert "Override the workunit in Derived too" in info.value.hint


def test_recursive_methods_atomics_and_classtypes(space, build) -> None:
    workload = Depths(50)
    pk.execute(space, workload)
    np.testing.assert_array_equal(workload.depth, 2 * (3 + np.arange(50) % 5))
    np.testing.assert_array_equal(workload.counts, np.bincount(np.arange(50) % 4))


def test_fields_a_method_writes_count_as_written(native_space) -> None:
    workload = ScaledRandomSum(8, 1, 1.0)
    workload.out.flags.writeable = False
    with pytest.raises(pk.DispatchError, match="self_out: the kernel writes to this array"):
        pk.execute(native_space, workload)


METHOD_ERRORS = """\
import pkernels as pk


@pk.workload
class Bad:
    def __init__(self) -> None:
        self.count = 0
        self.n = 4

    @pk.main
    def run(self) -> None:
        pk.parallel_for(self.n, self.assigns)

    @pk.function
    def bump(self, i: int):
        self.count = i

    def plain(self, i: int) -> int:
        return i

    @pk.workunit
    def assigns(self, i):
        self.bump(i)

    @pk.workunit
    def calls_plain(self, i):
        x = self.plain(i)

    @pk.workunit
    def calls_workunit(self, i):
        self.assigns(i)

    @pk.workunit
    def reads_a_typo(self, i):
        x = self.cuont + i

    @pk.function
    def twice_n(self) -> int:
        return 2 * self.nn

    @pk.workunit
    def calls_a_typo(self, i):
        x = self.twice_n() + i
"""


@pytest.mark.parametrize(
    "workunit, line_text, caret_text, message",
    [
        ("assigns", "self.count = i", "self.count", "cannot assign the field self.count"),
        ("calls_plain", "x = self.plain(i)", "self.plain(i)", "Bad.plain is not a @pk.function"),
        ("calls_workunit", "self.assigns(i)", "self.assigns(i)", "Bad.assigns is a workunit"),
        # A field the object lacks: where it is read, with the fields it has.
        (
            "reads_a_typo",
            "self.cuont + i",
            "self.cuont",
            "Bad has no field 'cuont': did you mean 'count'?",
        ),
        (
            "calls_a_typo",
            "return 2 * self.nn",
            "self.nn",
            "Bad has no field 'nn': did you mean 'n'?",
        ),
    ],  # fmt: skip
)
@pytest.mark.parametrize("space", [pk.OpenMP, pk.Debug], ids=lambda s: s.name)
def test_function_method_errors(
    make_module, workunit, line_text, caret_text, message, space
) -> None:
    module = make_module(METHOD_ERRORS)
    bad = module.Bad()
    with pytest.raises(pk.TranslationError) as info:
        pk.parallel_for(pk.RangePolicy(space, 0, 4), getattr(bad, workunit))
    err = info.value
    lines = METHOD_ERRORS.splitlines()
    lineno = next(k for k, line in enumerate(lines, 1) if line_text in line)
    col = lines[lineno - 1].index(caret_text)
    assert message in err.reason
    assert (err.filename, err.lineno, err.col) == (module.__file__, lineno, col)
    assert str(err).startswith(f"{module.__file__}:{lineno}:{col + 1}: ")
    assert "\n    " + " " * col + "^" in str(err) and err.hint
    if "no field" in message:
        assert err.hint.startswith("The fields of this Bad object: count, n ")


@pk.workload
class BareFieldMain:
    """PyKokkos compiles @pk.main to C++, where `n` means self.n (ParRes' stencil)."""

    limit = 100  # a class attribute: not a field

    def __init__(self, n: int) -> None:
        self.n = n
        self.out = np.zeros(n)
        self.total = 0.0
        self.seen = []

    @pk.main
    def run(self) -> None:
        count: int = n  # noqa: F821 - the PyKokkos idiom this test is about
        pk.parallel_for(count, self.fill)
        self.total = pk.parallel_reduce(n, self.add)  # noqa: F821
        self.seen.append(total)  # noqa: F821 - read live: the value just assigned
        self.seen.append(len(out))  # noqa: F821

    @pk.workunit
    def fill(self, i: int):
        self.out[i] = 2.0 * i

    @pk.workunit
    def add(self, i: int, acc: pk.Acc[pk.double]):
        acc += self.out[i]


@pk.workload
class ClassAttributeInMain(BareFieldMain):
    @pk.main
    def run(self) -> None:
        pk.parallel_for(limit, self.fill)  # noqa: F821


COUNTER = 0
N = 100


@pk.workload
class PythonFirst:
    """Only names Python cannot resolve are fields: globals, builtins and modules win."""

    def __init__(self) -> None:
        self.N = 4
        self.np = "a field named like a module"
        self.len = 3
        self.seen: list = []

    @pk.main
    def run(self) -> None:
        global COUNTER
        COUNTER += 1
        self.seen += [
            N,
            np.float64(2.0).item(),
            len("ab"),
            globals() is vars(sys.modules[__name__]),
        ]


@pk.workload
class Slotted:
    __slots__ = ("n", "r")

    def __init__(self) -> None:
        self.n, self.r = 3, 0

    @pk.main
    def run(self) -> None:
        self.r = self.n


def test_main_keeps_pythons_own_names():
    before = COUNTER
    work = PythonFirst()
    pk.execute(pk.OpenMP, work)
    assert COUNTER == before + 1  # a `global` write reaches the module
    assert work.seen == [100, 2.0, 2, True]
    slotted = Slotted()
    pk.execute(pk.OpenMP, slotted)
    assert slotted.r == 3


def test_main_reads_the_workloads_fields_without_self_as_pykokkos():
    work = BareFieldMain(5)
    pk.execute(pk.OpenMP, work)
    assert work.out.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
    assert work.seen == [20.0, 5]
    with pytest.raises(NameError) as info:  # only instance fields are in scope
        pk.execute(pk.OpenMP, ClassAttributeInMain(3))
    assert "write self.limit: only the workload's fields are in scope" in info.value.__notes__[0]


@pk.workload
class PrintsFromMain:
    """PyKokkos' gups.py calls C's printf bare in its main (compiled to C++ there)."""

    def __init__(self, n: int) -> None:
        self.n = n

    @pk.main
    def run(self) -> None:
        printf("Initializing %d views...\n", self.n)  # noqa: F821
        printf("done\n")  # noqa: F821


def test_main_calls_printf_bare_as_pykokkos(capfd):
    pk.execute(pk.OpenMP, PrintsFromMain(3))
    assert capfd.readouterr().out == "Initializing 3 views...\ndone\n"


def test_dispatching_an_undecorated_function_says_what_to_write():
    def plain(i, out):
        out[i] = 1

    with pytest.raises(pk.DispatchError, match="decorate it with @pk.workunit"):
        pk.parallel_for(4, plain, out=np.zeros(4))
