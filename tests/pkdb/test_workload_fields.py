"""A workload method stopped in a kernel: its fields are named as the method writes them.

pkernels passes a workload's fields to the kernel as parameters named ``self_<field>``;
at a stop ``args`` and ``locals`` show them as ``self.<field>`` (what the user wrote and
what ``p`` evaluates), never under the kernel's internal name.
"""

from __future__ import annotations

from pathlib import Path

from pkdb_harness import write

KERNEL_PROMPT = r"\(pkdb-openmp\) "

PROGRAM = """
import numpy as np
import pkernels as pk


@pk.workload
class Walkers:
    def __init__(self) -> None:
        self.steps: pk.View1D[pk.double] = pk.View([4], pk.double)
        self.scale: float = 2.0
        self.pool: pk.Random_XorShift64_Pool = pk.Random_XorShift64_Pool(7, 16)

    @pk.workunit
    def step(self, i: int) -> None:
        r: float = pk.rand(pk.double)
        self.steps[i] = self.scale * i + r


w = Walkers()
pk.parallel_for(pk.RangePolicy(pk.OpenMP, 0, 4), w.step)
print("whole parts", [int(v) for v in w.steps])
"""


def test_args_show_a_workloads_fields_as_self_dot_field(tmp_path: Path, kernel_pty) -> None:
    s = kernel_pty(write(tmp_path, "walkers.py", PROGRAM))
    s.cmd("break 15 if i == 2")  # self.steps[i] = self.scale * i + r
    stop = s.cmd("continue", KERNEL_PROMPT)
    assert "walkers.py(15)step()" in stop, stop
    args = s.cmd("args", KERNEL_PROMPT).strip().splitlines()
    pool = "Random_XorShift64_Pool(seed=7, num_states=16)"
    assert args[0] == "i = 2", args
    assert "self.steps = view(shape=(4,), dtype=float64)" in args, args
    assert "self.scale = 2.0" in args, args
    assert [a for a in args if a.startswith(f"self.pool = {pool} (this launch's key: ")], args
    assert not [a for a in args if a.startswith("self_")], args  # no internal names
    assert "self_" not in s.cmd("locals", KERNEL_PROMPT)
    # What args shows is what p evaluates
    assert s.cmd("p self.pool", KERNEL_PROMPT).strip() == pool
    assert s.cmd("p self.scale * i", KERNEL_PROMPT).strip() == "4.0"
    s.cmd("clear 1", KERNEL_PROMPT)
    assert "whole parts [0, 2, 4, 6]" in s.cmd("continue")
    assert s.quit() == 0
