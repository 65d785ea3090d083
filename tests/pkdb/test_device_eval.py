"""The evaluation helper of GPU stops (pkdb.device_eval), as a real process.

Device arrays need a GPU (tests/pkdb/test_gpu_session.py); everything else it does --
plain values, modules, kernels defined again from their source and dispatched, kernel
variables, statements, errors, a helper that is stopped and comes back -- runs here.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import pkernels as pk
from pkdb.agent.device_snapshot import describe, snapshot
from pkdb.device_eval import DeviceEvaluator


@pk.workunit
def fill(i, out, value: float):
    out[i] = value * i


@pytest.fixture
def helper(tmp_path):
    evaluator = DeviceEvaluator()
    evaluator.start(sys.executable, list(sys.path), str(tmp_path))
    yield evaluator
    evaluator.stop()


def _frame_with(**names) -> types.FrameType:
    def site():
        return sys._getframe()

    frame = site()
    frame.f_globals.update(names)  # this module's globals: the call site's
    return frame


def test_plain_values_modules_and_kernel_variables(helper):
    frame = _frame_with(scale=2.5, label="run 1", small=np.arange(4.0))
    described = snapshot(frame, {})
    helper.launch(described["names"], described["views"])
    answer = helper.request("eval", expr="scale * j + len(label)", locals={"j": 10})
    assert answer["ok"] and answer["text"] == repr(2.5 * 10 + 5)
    assert helper.request("eval", expr="float(np.sum(small))", locals={})["text"] == "6.0"
    answer = helper.request("eval", expr="undefined_name", locals={})
    assert not answer["ok"] and "NameError" in answer["text"]
    answer = helper.request("eval", expr="list(range(30))", locals={}, pretty=True)
    assert answer["text"].count("\n") >= 29  # pprint: one item a line


def test_a_kernel_defined_again_dispatches_in_the_helper(helper, tmp_path):
    described = snapshot(_frame_with(), {})
    assert described["names"]["fill"]["kind"] == "source"
    helper.launch(described["names"], described["views"])
    statement = "out = np.zeros(5); pk.parallel_for(5, fill, out=out, value=2.0); print(out)"
    answer = helper.request("exec", source=statement, locals={})
    assert answer["ok"], answer["text"]
    assert answer["text"].strip() == "[0. 2. 4. 6. 8.]"


def test_statements_return_the_kernel_variables_they_assign(helper):
    helper.launch({}, {})
    answer = helper.request("exec", source="temp2 = temp2 * 2", locals={"temp2": 1.25, "j": 3})
    assert answer["ok"] and answer["data"]["kernel_writes"] == {"temp2": 2.5}
    answer = helper.request("eval_many", expr="j * 10", per_thread=[{"j": 1}, {"j": 2}, {}])
    assert answer["data"]["values"][:2] == ["10", "20"]
    assert answer["data"]["values"][2].startswith("*** NameError")


def test_a_stopped_helper_comes_back_with_the_launch(helper):
    helper.launch({"k": describe(7)}, {})
    assert helper.request("eval", expr="k + 1", locals={})["text"] == "8"
    helper.stop()
    assert not helper.running
    assert helper.request("eval", expr="k + 2", locals={})["text"] == "9"


def test_a_view_travels_as_its_array(helper):
    view = pk.View([3], pk.double)
    view.data[:] = [1.0, 2.0, 4.0]
    helper.launch({"v": describe(view)}, {})
    assert helper.request("eval", expr="float(v.sum())", locals={})["text"] == "7.0"


def test_what_cannot_travel_is_left_out():
    assert describe(lambda: 1) is None  # a plain function of the program
    assert describe(np.zeros(1 << 18)) is None  # 2 MiB: too large to copy
    assert describe(np)["kind"] == "module"
