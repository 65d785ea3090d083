"""Checked release builds (BuildMode.CHECKED, $PKERNELS_CHECKS=1): -O3 code that keeps the
debug build's checks, for every kind of launch. (test_debug_build runs each check test on
both builds that check.)"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from pkt_support import ForceDebugBuild, observing

import pkernels as pk
from pkernels.runtime.hooks import BuildMode


def checked():
    return observing(ForceDebugBuild(BuildMode.CHECKED))


@pk.workunit
def gather_sum(i, acc, idx, x):
    acc += x[idx[i]]


@pk.workunit
def gather_prefix(i, acc, last_pass, idx, x, out):
    acc += x[idx[i]]
    if last_pass:
        out[i] = acc


@pk.workunit
def gather_box(i, j, idx, x, out):
    out[i, j] = x[idx[i], j]


@pk.workunit
def gather_team(team_member, idx, x, out):
    row: int = team_member.league_rank()

    def body(j: int):
        out[row, j] = x[idx[row], j]

    pk.parallel_for(pk.TeamThreadRange(team_member, out.extent(1)), body)


def test_every_kind_of_launch_is_checked_and_otherwise_exact(native_space):
    x = np.arange(12.0).reshape(4, 3)
    flat = x.ravel()
    good, bad = np.array([3, 0, 2, 1]), np.array([3, 0, 17, 1])
    out = np.zeros((4, 3))

    def launches(idx):
        rows = pk.RangePolicy(native_space, 0, 4)
        box = pk.MDRangePolicy(native_space, [0, 0], [4, 3])
        team = pk.TeamPolicy(native_space, 4, pk.AUTO)
        yield lambda: pk.parallel_reduce(rows, gather_sum, idx=idx, x=flat)
        yield lambda: pk.parallel_scan(rows, gather_prefix, idx=idx, x=flat, out=out[:, 0])
        yield lambda: pk.parallel_for(box, gather_box, idx=idx, x=x, out=out)
        yield lambda: pk.parallel_for(team, gather_team, idx=idx, x=x, out=out)

    with checked() as obs:
        results = [launch() for launch in launches(good)]
        np.testing.assert_array_equal(out, x[good])  # the team launch wrote last
        for launch in launches(bad):
            with pytest.raises(pk.KernelIndexError, match=r"index 17 is out of range for axis 0"):
                launch()
    assert {(k.checked, k.debug) for k in obs.launched} == {(True, False)}
    assert len(obs.launched) == 8
    assert results[0] == flat[good].sum()
    prefix = np.zeros(4)
    pk.parallel_scan(
        pk.RangePolicy(native_space, 0, 4), gather_prefix, idx=good, x=flat, out=prefix
    )
    np.testing.assert_array_equal(prefix, np.cumsum(flat[good]))
    assert results[1] == prefix[-1]


PROGRAM = """
import numpy as np
import pkernels as pk


@pk.workunit
def shift(i, k, x, out):
    out[i] = x[i + k]


x, out = np.arange(4.0), np.zeros(4)
pk.parallel_for(4, shift, k=0, x=x, out=out)  # compiled here, then found in the cache
try:
    pk.parallel_for(4, shift, k=1, x=x, out=out)
except pk.KernelIndexError as error:
    print("raised:", error)
"""


def _run_program(tmp_path: Path, checks: str) -> subprocess.CompletedProcess:
    program = tmp_path / "prog.py"
    program.write_text(textwrap.dedent(PROGRAM))
    env = {**os.environ, "PKERNELS_CHECKS": checks}
    return subprocess.run(
        [sys.executable, str(program)], capture_output=True, text=True, env=env, timeout=300
    )


def test_pkernels_checks_makes_every_dispatch_checked(tmp_path):
    # The second dispatch takes the short path of a kernel already compiled: checked too.
    result = _run_program(tmp_path, "1")
    assert result.returncode == 0, result.stderr
    expected = (
        f"raised: {tmp_path / 'prog.py'}:8: index 4 is out of range for axis 0 of view 'x' "
        "with extent 4 (OpenMP thread "
    )  # the thread whose chunk holds index 3: 1 of 2, 3 of 4 or more...
    assert result.stdout.strip().startswith(expected), result.stdout


def test_pkernels_checks_takes_0_or_1(tmp_path):
    result = _run_program(tmp_path, "yes")
    assert result.returncode != 0
    assert "PKERNELS_CHECKS must be 1 (check) or 0 (do not), not 'yes'" in result.stderr


@pk.workunit
def copy_in_range(i, x, out):
    out[i] = x[i] * 2.0


@pk.workunit
def bin_by_value(p, pos, counts):
    cell = int(pos[p] * 4)
    pk.atomic_add(counts, [cell], 1)


def test_guarded_launches_run_release_code_where_proven_and_checked_code_elsewhere(native_space):
    # BuildMode.GUARDED (what pkdb runs a kernel with no breakpoint as): a launch the
    # bounds proof covers runs the release build; one it cannot (an index computed from
    # a float) runs the checked build, so a bad index is KernelIndexError.
    guarded = ForceDebugBuild(BuildMode.GUARDED)
    x, out = np.arange(8.0), np.zeros(8)
    with observing(guarded):
        pk.parallel_for(pk.RangePolicy(native_space, 0, 8), copy_in_range, x=x, out=out)
        assert out.tolist() == [2.0 * v for v in range(8)]
        pos = np.array([0.1, 0.5, 1.0])  # 1.0 bins to 4: one past the end
        with pytest.raises(pk.KernelIndexError, match="index 4 is out of range"):
            pk.parallel_for(
                pk.RangePolicy(native_space, 0, 3), bin_by_value, pos=pos, counts=np.zeros(4, int)
            )
        team_out = np.zeros((2, 3))
        idx = np.array([0, 1])
        pk.parallel_for(
            pk.TeamPolicy(native_space, 2, pk.AUTO),
            gather_team,
            idx=idx,
            x=np.ones((2, 3)),
            out=team_out,
        )
    release, checked_bins, checked_team = guarded.launched
    assert not release.checked and not release.debug
    assert checked_bins.checked and checked_team.checked
