"""pkernels' errors reach the user with the user's line as the innermost frame; their
own frames show with PKERNELS_TRACEBACK=full."""

from __future__ import annotations

import os
import traceback

import numpy as np
import pytest
from pkt_support import ForceDebugBuild, observing

import pkernels as pk
from pkernels.runtime.hooks import BuildMode

PACKAGE = os.path.dirname(pk.__file__)


@pk.workunit
def untranslatable(i, out):
    out[i] = name_nobody_defined  # noqa: F821 - the TranslationError under test


@pk.workunit
def one_past(i, out):
    out[i + 1] = 1.0


def _frames(exc: BaseException) -> list[traceback.FrameSummary]:
    return traceback.extract_tb(exc.__traceback__)


def test_a_translation_error_ends_at_the_dispatch() -> None:
    with pytest.raises(pk.TranslationError) as caught:
        pk.parallel_for(4, untranslatable, out=np.zeros(4))  # the innermost frame
    frames = _frames(caught.value)
    assert frames[-1].filename == __file__ and "pk.parallel_for(4, untranslatable" in (
        frames[-1].line
    ), frames
    assert not any(f.filename.startswith(PACKAGE) for f in frames), frames


def test_a_kernel_error_ends_at_the_dispatch() -> None:
    with (
        observing(ForceDebugBuild(BuildMode.CHECKED)),
        pytest.raises(pk.KernelIndexError) as caught,
    ):
        pk.parallel_reduce(4, lambda_free_sum, x=np.zeros(3))
    frames = _frames(caught.value)
    assert frames[-1].filename == __file__, frames
    assert not any(f.filename.startswith(PACKAGE) for f in frames), frames


@pk.workunit
def lambda_free_sum(i, acc, x):
    acc += x[i]


def test_pkernels_traceback_full_keeps_pkernels_frames(monkeypatch) -> None:
    monkeypatch.setenv("PKERNELS_TRACEBACK", "full")
    with pytest.raises(pk.TranslationError) as caught:
        pk.parallel_for(4, untranslatable, out=np.zeros(4))
    assert any(f.filename.startswith(PACKAGE) for f in _frames(caught.value))


def test_the_api_functions_still_look_like_functions() -> None:
    assert repr(pk.parallel_for) == "<function parallel_for>"
    assert pk.parallel_reduce.__name__ == "parallel_reduce"
    assert "prefix scan" in pk.parallel_scan.__doc__
