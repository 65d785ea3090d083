"""Errors: unsupported constructs raise TranslationError at the first dispatch, pointing
at the file, line and column with the source line, a caret and a hint; compiler failures
name the generated source."""

from __future__ import annotations

import functools
import re
import textwrap

import numpy as np
import pytest

import pkernels as pk
from pkernels.build.compiler import build

BAD_KERNELS = """\
import math

import pkernels as pk

SCALE = 3


@pk.workunit
def good(i, out):
    out[i] = i


@pk.workunit
def list_comprehension(i, x, out):
    vals = [x[j] for j in range(3)]
    out[i] = 0


@pk.workunit
def text_value(i, out):
    name = "hello"
    out[i] = 0


@pk.workunit
def none_value(i, out):
    best = None
    out[i] = 0


@pk.workunit
def walrus(i, out):
    out[i] = (k := 2)


@pk.workunit
def yields(i, out):
    yield i


@pk.workunit
def round_digits(i, x, out):
    out[i] = round(x[i], 2)


@pk.workunit
def try_statement(i, out):
    try:
        out[i] = 1
    except Exception:
        pass


@pk.workunit
def uses_lambda(i, out):
    f = lambda v: v + 1
    out[i] = 0


@pk.workunit
def reads_global(i, out):
    out[i] = SCALE * i


@pk.workunit
def slices_view(i, x, out):
    out[i] = x[1:3]


@pk.workunit
def wrong_rank(i, m, out):
    out[i] = m[i]


@pk.workunit
def float_index(i, x, out):
    out[i] = x[i * 0.5]


@pk.workunit
def unknown_function(i, out):
    out[i] = frobnicate(i)


@pk.workunit
def float_into_int_local(i, x, out):
    k = 0
    k = x[i]
    out[i] = k


@pk.workunit
def float_augassign_into_int_local(i, x, out):
    total = 0
    total += x[i] / 2
    out[i] = total


@pk.workunit
def returns_value(i, out):
    return i


@pk.workunit
def while_else(i, out):
    while i > 0:
        i -= 1
    else:
        out[i] = 1


@pk.workunit
def nested_def(i, out):
    def inner(v):
        return v
    out[i] = 1


@pk.workunit
def imports_inside(i, out):
    import os
    out[i] = 1


@pk.workunit
def method_call(i, x, out):
    out[i] = x.sum()


@pk.workunit
def unpack_too_many(i, out):
    a, b = 1, 2, 3
    out[i] = a


@pk.workunit
def unpack_a_name(i, out):
    pair = i
    a, b = pair
    out[i] = a


@pk.workunit
def unpack_nested(i, out):
    (a, b), c = (1, 2), 3
    out[i] = a


@pk.workunit
def unpack_starred(i, out):
    a, *rest = 1, 2, 3
    out[i] = a


@pk.workunit
def modf_as_value(i, x, out):
    out[i] = math.modf(x[i])


@pk.classtype
class Pair:
    def __init__(self, x: float):
        self.x: float = x


@pk.workunit
def unpack_classtypes(i, out):
    p: Pair = Pair(1.0)
    q: Pair = Pair(2.0)
    p, q = q, p
    out[i] = p.x


@pk.workunit
def chained_with_tuple(i, out):
    a, b = c = 1, 2
    out[i] = a


@pk.workunit
def in_operator(i, out):
    if i in out:
        out[i] = 1


@pk.workunit
def loop_over_view(i, x, out):
    for v in x:
        out[i] = v


@pk.workunit
def unknown_math(i, out):
    out[i] = math.factorial(i)


@pk.workunit
def math_lacks_fmin(i, out):
    out[i] = math.fmin(out[i], 1.0)


@pk.workunit
def undefined_name(i, out):
    out[i] = nothing_here


@pk.workunit
def view_in_arithmetic(i, x, out):
    out[i] = x + 1


@pk.workunit
def bool_local_gets_int(i, out):
    flag = i > 2
    flag = 5
    out[i] = flag


@pk.function
def twice_int(n: int) -> int:
    return n * 2


@pk.workunit
def float_to_int_helper(i, x, out):
    out[i] = twice_int(x[i])


@pk.function
def add_both(a: float, b: float) -> float:
    return a + b


@pk.workunit
def helper_short_of_an_argument(i, x, out):
    out[i] = add_both(x[i])


@pk.classtype
class Scaled:
    def __init__(self, x: float):
        self.x: float = x

    def times(self, k: int) -> float:
        return self.x * k


@pk.workunit
def constructor_with_too_many(i, out):
    p = Scaled(1.0, 2.0)
    out[i] = p.x


@pk.workunit
def method_given_a_float(i, x, out):
    p = Scaled(1.0)
    out[i] = p.times(x[i])


@pk.function
def returns_none(value) -> None:
    return value


@pk.workunit
def calls_none_helper(i, out):
    returns_none(i)


@pk.workunit
def greek_letters(i, x, out):
    α = 0.5
    out[i] = α * frob(x[i])


@pk.workunit
def negative_index(i, x, out):
    out[i] = x[-1]


@pk.workunit
def huge_literal(i, out):
    out[i] = 2**70


@pk.workunit
def literal_zero_division(i, out):
    out[i] = i + 7 % 0


@pk.workunit
def atomic_value(i, out):
    old = pk.atomic_add(out, [i], 1.0)
    out[i] = old


@pk.workunit
def literal_past_narrow_type(i, u, out):
    out[i] = u[i] + 300


@pk.workunit
def bits_of_uint64_and_int64(i, w, out):
    out[i] = w[i] & i


@pk.function
def sign_of(v: float) -> int:
    if v > 0:
        return 1
    elif v < 0:
        return -1


@pk.workunit
def helper_without_return(i, x, out):
    out[i] = sign_of(x[i])


@pk.function
def halved(n: int) -> int:
    return n / 2


@pk.workunit
def helper_returns_float_as_int(i, out):
    out[i] = halved(i)


@pk.workunit
def float_into_annotated_int(i, out):
    n: int = 2.5
    out[i] = n


@pk.workunit
def float_into_index(i, out):
    i = i * 0.5
    out[0] = i


@pk.workunit
def assigned_on_one_branch(i, x, out):
    if x[i] > 0:
        maybe = 1.0
    out[i] = maybe


@pk.workunit
def assigned_in_loop_only(i, out):
    for j in range(i):
        last = j
    out[i] = last


@pk.workunit
def read_before_the_loop_assigns(i, x, out):
    for j in range(4):
        if j > 0:
            out[i] += prev
        prev = x[j]


def make_indented():
    @pk.workunit
    def indented(i, out):
        out[i] = {1: 2}[1]

    return indented
"""

# name, kwargs maker, text on the offending line, text the caret points at, message regex
CASES = [
    (
        "list_comprehension",
        "x",
        "vals = [x[j]",
        "[x[j]",
        r"a list comprehension is not supported in kernels",
    ),
    ("try_statement", "", "try:", "try:", r"try/except is not supported"),
    ("uses_lambda", "", "f = lambda", "lambda", r"a lambda is not supported"),
    ("reads_global", "", "out[i] = SCALE", "SCALE", r"global variable 'SCALE'"),
    (
        "slices_view",
        "x",
        "x[1:3]",
        "1:3",
        r"a slice of a view here: assign the subview to a name first",
    ),
    ("wrong_rank", "m", "out[i] = m[i]", "m[i]", r"rank 2 .* 1 indices"),
    ("float_index", "x", "x[i * 0.5]", "i * 0.5", r"indices must be integers"),
    ("unknown_function", "", "frobnicate(i)", "frobnicate", r"'frobnicate' is not defined"),
    ("float_into_int_local", "x", "k = x[i]", "k = x[i]", r"'k' is an integer"),
    ("float_augassign_into_int_local", "x", "total += x", "total +=", r"'total' is an integer"),
    ("returns_value", "", "return i", "return i", r"returns nothing"),
    ("while_else", "", "while i > 0", "while", r"while \.\.\. else"),
    ("nested_def", "", "def inner", "def inner", r"nested functions"),
    ("imports_inside", "", "import os", "import os", r"import is not supported"),
    ("method_call", "x", "x.sum()", "x.sum()", r"unsupported call"),
    (
        "unpack_too_many",
        "",
        "a, b = 1, 2, 3",
        "a, b",
        r"too many values to unpack \(expected 2, got 3\)",
    ),
    ("unpack_a_name", "", "a, b = pair", "pair", r"only a tuple of values can be unpacked"),
    ("unpack_nested", "", "(a, b), c", "(a, b)", r"nested unpacking is not supported"),
    ("unpack_starred", "", "*rest", "*rest", r"starred unpacking is not supported"),
    ("modf_as_value", "x", "math.modf(x[i])", "math.modf", r"math.modf\(\) returns two values"),
    ("chained_with_tuple", "", "a, b = c", "a, b", r"chained assignment with a tuple target"),
    ("unpack_classtypes", "", "p, q = q, p", "q, p", r"a Pair value cannot be unpacked"),
    ("in_operator", "", "if i in out", "i in out", r"the comparison `in` is not supported"),
    ("loop_over_view", "x", "for v in x", "x:", r"only loop over range"),
    ("unknown_math", "", "math.factorial", "math.factorial", r"math\.factorial"),
    ("math_lacks_fmin", "", "math.fmin", "math.fmin", r"math module has no fmin\(\)"),
    ("undefined_name", "", "nothing_here", "nothing_here", r"'nothing_here' is not defined"),
    ("view_in_arithmetic", "x", "out[i] = x + 1", "x + 1", r"index"),
    ("bool_local_gets_int", "", "flag = 5", "flag = 5", r"'flag' is a bool"),
    # A call whose arguments do not fit the helper: reported at the call, with the def.
    (
        "float_to_int_helper",
        "x",
        "out[i] = twice_int(x[i])",
        "x[i])",
        r"'n' is annotated int64 but the call passes a float \(float64\) \(twice_int is "
        r"defined on line \d+\)$",
    ),
    (
        "helper_short_of_an_argument",
        "x",
        "out[i] = add_both(x[i])",
        "add_both(x[i])",
        r"add_both\(\) takes 2 arguments \(a, b\), called with 1 \(add_both is defined on line "
        r"\d+\)$",
    ),
    (
        "constructor_with_too_many",
        "",
        "p = Scaled(1.0, 2.0)",
        "Scaled(1.0, 2.0)",
        r"Scaled\(\) takes 1 argument \(x\), called with 2 \(Scaled.__init__ is defined on ",
    ),
    (
        "method_given_a_float",
        "x",
        "p.times(x[i])",
        "x[i])",
        r"'k' is annotated int64 but the call passes a float \(float64\) \(Scaled.times is ",
    ),
    ("calls_none_helper", "", "return value", "return value", r"annotated `-> None`"),
    ("text_value", "", 'name = "hello"', '"hello"', r"text \(a str\) cannot be a value"),
    ("none_value", "", "best = None", "None", r"None cannot be a value"),
    ("walrus", "", "(k := 2)", "k := 2", r"assignment expression \(:=\) is not supported"),
    ("yields", "", "yield i", "yield i", r"yield is not supported"),
    ("round_digits", "x", "round(x[i], 2)", "round(x[i], 2)", r"round\(\) in kernels takes one"),
    # Python counts from the end; a C++ view would read before its first element.
    ("negative_index", "x", "x[-1]", "-1", r"the index -1 is negative"),
    # Python's integers do not overflow; a kernel's int64 would wrap without a word.
    ("huge_literal", "", "2**70", "2**70", r"2 \*\* 70 is 1180591620717411303424, which"),
    ("literal_zero_division", "", "7 % 0", "7 % 0", r"7 % 0 divides by zero"),
    # NumPy raises OverflowError (the literal takes uint8); C++ would wrap 300 to 44.
    ("literal_past_narrow_type", "u", "u[i] + 300", "u[i] + 300", r"300 does not fit in uint8"),
    ("bits_of_uint64_and_int64", "w", "w[i] & i", "w[i] & i", r"no integer type holds"),
    # Python's pk.atomic_add returns None; C++ would give a number.
    ("atomic_value", "", "old = pk.atomic_add", "pk.atomic_add", r"atomic_add returns nothing"),
    # C++ would run off the end of a non-void function; Python returns None.
    (
        "helper_without_return",
        "x",
        "elif v < 0:",
        "elif",
        r"sign_of\(\) is annotated `-> int` but can reach its end without a return: when the "
        r"condition on line \d+ is false and the condition on line \d+ is false \(there is no",
    ),
    # Python keeps the float (the Debug space returns 0.5); C++ would truncate it.
    ("helper_returns_float_as_int", "", "return n / 2", "return", r"returns a float \(float64\)"),
    ("float_into_annotated_int", "", "n: int = 2.5", "n: int", r"'n', declared int64, is assig"),
    ("float_into_index", "", "i = i * 0.5", "i = i", r"the index 'i' \(an int64\) is assigned a"),
    # Python raises UnboundLocalError; a compiled kernel would read whatever is there.
    (
        "assigned_on_one_branch",
        "x",
        "out[i] = maybe",
        "maybe",
        r"'maybe' may have no value here: it is not assigned when the condition on line \d+ is fal",
    ),
    (
        "assigned_in_loop_only",
        "",
        "out[i] = last",
        "last",
        r"'last' may have no value here: it is assigned in the for loop on line \d+, which may "
        r"run zero times",
    ),
    (
        "read_before_the_loop_assigns",
        "x",
        "out[i] += prev",
        "prev",
        r"'prev' has no value here in the first pass of the for loop on line \d+",
    ),
    # Columns count characters, not UTF-8 bytes.
    ("greek_letters", "x", "α * frob", "frob", r"'frob' is not defined"),
]

ARGS = {
    "": lambda: {},
    "x": lambda: {"x": np.zeros(4)},
    "m": lambda: {"m": np.zeros((4, 4))},
    "u": lambda: {"u": np.zeros(4, np.uint8)},
    "w": lambda: {"w": np.zeros(4, np.uint64)},
}


@pytest.fixture(scope="module")
def bad_module(tmp_path_factory):
    from pkt_support import load_module

    directory = tmp_path_factory.mktemp("bad_kernels")
    # Importing a module of bad kernels is fine: nothing is translated before dispatch.
    return load_module(directory, BAD_KERNELS)


def _line_of(text: str, needle: str) -> tuple[int, str]:
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return number, line
    raise AssertionError(f"{needle!r} not in the module")


@pytest.mark.parametrize(
    "name, args, line_text, caret_text, message", CASES, ids=[c[0] for c in CASES]
)
def test_unsupported_construct(bad_module, name, args, line_text, caret_text, message):
    kernel = getattr(bad_module, name)
    kwargs = {**ARGS[args](), "out": np.zeros(4)}
    with pytest.raises(pk.TranslationError) as info:
        pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 4), kernel, **kwargs)
    err = info.value
    lineno, source_line = _line_of(BAD_KERNELS, line_text)
    col = source_line.index(caret_text)
    path = bad_module.__file__
    text = str(err)
    assert text.startswith(f"{path}:{lineno}:{col + 1}: "), text
    assert re.search(message, text.splitlines()[0]), text
    lines = text.splitlines()
    assert lines[1] == "    " + source_line
    assert lines[2] == "    " + " " * col + "^"
    assert (err.filename, err.lineno, err.col) == (path, lineno, col)
    assert err.hint and text.endswith(err.hint), f"no hint in:\n{text}"


def test_a_bad_call_of_a_helper_names_the_line_of_its_def(bad_module):
    with pytest.raises(pk.TranslationError) as info:
        pk.parallel_for(4, bad_module.float_to_int_helper, x=np.zeros(4), out=np.zeros(4))
    def_line, _ = _line_of(BAD_KERNELS, "def twice_int(n: int)")
    call_line, _ = _line_of(BAD_KERNELS, "out[i] = twice_int(x[i])")
    assert info.value.lineno == call_line
    assert info.value.reason.endswith(f"(twice_int is defined on line {def_line})")


def test_indented_kernel_caret(bad_module):
    kernel = bad_module.make_indented()
    with pytest.raises(pk.TranslationError) as info:
        pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 2), kernel, out=np.zeros(2))
    lineno, source_line = _line_of(BAD_KERNELS, "{1: 2}")
    col = source_line.index("{1: 2}")
    text = str(info.value)
    assert text.startswith(f"{bad_module.__file__}:{lineno}:{col + 1}: ")
    assert text.splitlines()[2] == "    " + " " * col + "^"


def test_bad_kernels_do_not_raise_until_dispatched(tmp_path):
    from pkt_support import load_module

    module = load_module(tmp_path, BAD_KERNELS)  # defining them is fine
    assert module.try_statement.__pkernels__.kind == "workunit"
    module.make_indented()  # decorating one at run time too
    with pytest.raises(pk.TranslationError):
        pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 1), module.try_statement, out=np.zeros(1))


def test_error_is_raised_at_every_dispatch_and_good_kernels_still_run(bad_module):
    for _ in range(2):
        with pytest.raises(pk.TranslationError):
            pk.parallel_for(
                pk.RangePolicy(pk.OpenMP, 0, 2), bad_module.try_statement, out=np.zeros(2)
            )
    out = np.zeros(3)
    pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 3), bad_module.good, out=out)
    assert out.tolist() == [0, 1, 2]


def test_translation_error_is_not_system_exit(bad_module):
    try:
        pk.parallel_for(pk.RangePolicy(pk.Serial, 0, 2), bad_module.uses_lambda, out=np.zeros(2))
    except SystemExit:  # pragma: no cover - the failure this test exists for
        pytest.fail("a translation error must not exit the interpreter")
    except pk.TranslationError:
        pass
    else:  # pragma: no cover
        pytest.fail("no TranslationError")


def test_kernel_without_source_file():
    namespace: dict = {}
    exec("def k(i, out):\n    out[i] = 1\n", {"pk": pk}, namespace)  # noqa: S102
    kernel = pk.workunit(namespace["k"])
    with pytest.raises(pk.TranslationError, match="cannot read the source") as info:
        pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 2), kernel, out=np.zeros(2))
    assert info.value.hint


def test_compile_error_names_the_generated_source():
    source = textwrap.dedent(
        """\
        #line 12 "/somewhere/kernel_file.py"
        static int broken( {
        """
    )
    with pytest.raises(pk.CompileError) as info:
        build(source, False, "workunit broken_kernel")
    text = str(info.value)
    assert "workunit broken_kernel" in text
    assert "/somewhere/kernel_file.py:12" in text  # the Python line, thanks to #line
    match = re.search(r"Generated source: (\S+)", text)
    assert match, text
    generated = match.group(1)
    assert generated.endswith(".cpp")
    with open(generated) as f:
        assert "static int broken(" in f.read()
    assert "bug in pkernels" in text


def test_compile_error_is_not_cached():
    source = "#error first attempt fails\n"
    for _ in range(2):
        with pytest.raises(pk.CompileError, match="first attempt fails"):
            build(source, True, "workunit again")


def test_an_argument_of_the_wrong_type_is_also_a_type_error(make_module):
    module = make_module(
        """
import pkernels as pk

@pk.workunit
def k(i: int, arr: pk.View1D[pk.int32], scale: int):
    arr[i] = scale
"""
    )
    with pytest.raises(TypeError, match=r"'arr' is annotated View1D\[int32\] but the array"):
        pk.parallel_for(2, module.k, arr=np.zeros(2), scale=1)
    with pytest.raises(pk.ArgumentTypeError, match=r"'scale' is annotated int64 but receives"):
        pk.parallel_for(2, module.k, arr=np.zeros(2, np.int32), scale=1.5)


def _passing_through(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


@_passing_through
@pk.workunit
def wrapped_fill(i, x):
    x[i] = 1.0


def test_a_workunit_wrapped_by_another_decorator_is_refused_with_a_message(space):
    with pytest.raises(pk.DispatchError, match="wrapped by another decorator"):
        pk.parallel_for(pk.RangePolicy(space, 0, 2), wrapped_fill, x=np.zeros(2))


def test_a_range_past_int64_is_refused_when_the_policy_is_made():
    with pytest.raises(ValueError, match="RangePolicy end 1180591620717411303424 is outside"):
        pk.RangePolicy(pk.OpenMP, 0, 2**70)


def test_a_bad_call_of_a_helper_from_another_file_names_that_file(make_module):
    helpers = make_module(
        """
import pkernels as pk


@pk.function
def scale_by(v: float, k: int) -> float:
    return v * k
""",
        name="pk_test_call_site_helpers",
    )
    kernels = make_module(
        """
import pkernels as pk
from pk_test_call_site_helpers import scale_by


@pk.workunit
def uses_it(i, x, out):
    out[i] = scale_by(x[i], 0.5)
"""
    )
    with pytest.raises(pk.TranslationError) as info:
        pk.parallel_for(2, kernels.uses_it, x=np.zeros(2), out=np.zeros(2))
    err = info.value
    assert (err.filename, err.lineno) == (kernels.__file__, 8)
    assert err.source_line.strip() == "out[i] = scale_by(x[i], 0.5)"
    assert err.col == err.source_line.index("0.5")
    assert err.reason == (
        "'k' is annotated int64 but the call passes a float (float64) (scale_by is defined on "
        f"line 6 of {helpers.__file__})"
    )
