"""The hotswap rule table in-process: signatures, per-line vs everywhere rules, commands."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pkdb.agent.hotswap import HotswapTable, run_command, signature_difference
from pkdb.agent.live_scope import LiveScope
from pkernels import hooks

SOURCE = """
import numpy as np
import pkernels as pk


@pk.workunit
def fill(i, out, value):
    out[i] = value


@pk.workunit
def fill_plus(i, out, value):
    out[i] = value + 10


@pk.workunit
def fill_minus(i, out, value):
    out[i] = value - 10


@pk.workunit
def fill_renamed(i, dest, value):
    dest[i] = value


@pk.workunit
def fill_more(i, out, value, extra):
    out[i] = value + extra


@pk.workunit
def fill_reordered(i, value, out):
    out[i] = value


@pk.workunit
def fill_broken(i, out, value):
    out[i] = value + undefined_name


def plain(i, out, value):
    out[i] = value


def two_sites(a, b):
    pk.parallel_for(pk.RangePolicy(pk.Serial, 0, len(a)), fill, out=a, value=1.0)
    pk.parallel_for(
        pk.RangePolicy(pk.Serial, 0, len(b)),
        fill,
        out=b,
        value=2.0,
    )
"""
_LINES = textwrap.dedent(SOURCE).lstrip("\n").splitlines()
LINE_FIRST = next(n for n, t in enumerate(_LINES, 1) if "value=1.0" in t)  # one-line dispatch
LINE_SECOND = next(n for n, t in enumerate(_LINES, 1) if t.strip() == "pk.parallel_for(")
LINE_SECOND_LAST = next(n for n, t in enumerate(_LINES, 1) if "value=2.0" in t)  # inside it


@pytest.fixture
def mod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PKERNELS_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "hs_kernels.py"
    path.write_text(textwrap.dedent(SOURCE).lstrip("\n"))
    spec = importlib.util.spec_from_file_location("hs_kernels", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["hs_kernels"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("hs_kernels", None)


class Applier:
    """The kernel observer's use of the table, alone."""

    def __init__(self, table: HotswapTable) -> None:
        self.table = table
        self.announced: list[str] = []

    def dispatch_started(self, dispatch) -> None:
        self.table.apply(dispatch, self.announced.append)


def run_sites(mod, table: HotswapTable) -> tuple[float, float, list[str]]:
    applier = Applier(table)
    hooks.add_observer(applier)
    try:
        a, b = np.zeros(2), np.zeros(2)
        mod.two_sites(a, b)
    finally:
        hooks.remove_observer(applier)
    return a[0], b[0], applier.announced


def scope_of(mod) -> LiveScope:
    return LiveScope(globals=vars(mod), main_file=mod.__file__)


def test_signature_difference(mod) -> None:
    assert signature_difference(mod.fill, mod.fill_plus) is None
    assert signature_difference(mod.fill, mod.fill_renamed) == (
        "it lacks parameter 'out'; it has parameter 'dest' in addition"
    )
    assert signature_difference(mod.fill, mod.fill_more) == "it has parameter 'extra' in addition"
    assert signature_difference(mod.fill_more, mod.fill) == "it lacks parameter 'extra'"
    assert signature_difference(mod.fill, mod.fill_reordered) == (
        "same names in another order: parameter 2 is 'value', not 'out'"
    )


def test_per_line_rule_beats_everywhere_rule(mod) -> None:
    table = HotswapTable()
    scope = scope_of(mod)
    assert run_sites(mod, table)[:2] == (1.0, 2.0)
    ok, text = run_command(table, "fill fill_plus", scope)
    assert ok and text == "Hotswap 1: fill -> fill_plus at every call site"
    # any line of a call spanning several lines names that call site
    ok, text = run_command(table, f"{LINE_SECOND_LAST} fill fill_minus", scope)
    assert ok and text == f"Hotswap 2: fill -> fill_minus at hs_kernels.py:{LINE_SECOND_LAST}"
    a, b, announced = run_sites(mod, table)
    assert (a, b) == (11.0, -8.0)
    assert announced == [
        f"[hotswap 1] hs_kernels.py:{LINE_FIRST}: fill_plus runs instead of fill",
        f"[hotswap 2] hs_kernels.py:{LINE_SECOND}: fill_minus runs instead of fill",
    ]
    assert run_sites(mod, table)[2] == []  # announced once per rule
    assert [r.hits for r in table.rules] == [2, 2]
    # the same OLD and place again: the rule is replaced, keeping its number
    ok, text = run_command(table, f"hs_kernels.py:{LINE_FIRST} fill fill_minus", scope)
    assert ok and text.startswith(f"Hotswap 3: fill -> fill_minus at hs_kernels.py:{LINE_FIRST}")
    ok, text = run_command(table, f"hs_kernels.py:{LINE_FIRST} fill fill_plus", scope)
    assert text.startswith("Hotswap 3: fill -> fill_plus")
    ok, text = run_command(table, "clear 1 2", scope)
    assert ok and text.count("Deleted hotswap rule") == 2
    assert run_sites(mod, table)[:2] == (11.0, 2.0)
    assert run_command(table, "clear", scope) == (True, "Deleted all hotswap rules.")
    assert run_sites(mod, table)[:2] == (1.0, 2.0)


def test_refusals_leave_no_rule(mod) -> None:
    table = HotswapTable()
    scope = scope_of(mod)
    cases = {
        "fill fill_more": "does not take the parameters of fill(i, out, value): it has "
        "parameter 'extra' in addition. fill keeps running.",
        "fill plain": "plain is not a @pk.workunit (it is a function)",
        "fill fill": "fill and fill are the same workunit",
        "fill nowhere": "nowhere: NameError: name 'nowhere' is not defined",
        "fill fill_plus(1)": "'fill_plus(1)' is not a name",
        "x:y fill fill_plus": "'x:y' is not a call-site line",
        "nofile.py:3 fill fill_plus": "'nofile.py' not found",
        "1 2 3 4": "usage: hotswap",
        "clear one": "hotswap clear takes rule numbers",
        "clear 5": "no hotswap rule 5",
    }
    for arg, message in cases.items():
        ok, text = run_command(table, arg, scope)
        assert not ok and message in text, (arg, text)
    assert table.rules == []
    assert run_command(table, "", scope) == (True, "No hotswap rules.")
    assert run_sites(mod, table)[:2] == (1.0, 2.0)


def test_listing(mod) -> None:
    table = HotswapTable()
    scope = scope_of(mod)
    run_command(table, "fill fill_plus", scope)
    run_command(table, f"{LINE_FIRST} fill fill_minus", scope)
    ok, text = run_command(table, "3 fill fill_minus", scope)  # not a call site: a note
    assert ok and text.endswith(
        "(note: line 3 is not in a parallel_* call; the rule waits for one there)"
    )
    run_command(table, "clear 3", scope)
    run_sites(mod, table)
    assert run_command(table, "", scope)[1].splitlines() == [
        "Num  Where             Old   New         Swapped",
        "1    every call site   fill  fill_plus   1",
        f"2    hs_kernels.py:{LINE_FIRST}  fill  fill_minus  1",
    ]


def test_a_new_kernel_that_does_not_translate_is_not_swapped_in(mod) -> None:
    table = HotswapTable()
    ok, text = run_command(table, "fill fill_broken", scope_of(mod))
    assert ok, text  # its parameters match: the rule is accepted
    a, b, announced = run_sites(mod, table)
    assert (a, b) == (1.0, 2.0)  # fill ran at both call sites
    assert len(announced) == 1  # once per argument signature, not per dispatch
    assert announced[0].startswith(
        f"[hotswap 1] hs_kernels.py:{LINE_FIRST}: fill_broken cannot run here, fill runs: "
        "TranslationError: "
    )
    assert "undefined_name" in announced[0]
    assert table.rules[0].hits == 0
