"""The random pools a kernel launch names for pkdb: the kernel holds only a pool's launch
key, so the launch message carries the program's pool, by the kernel's parameter name."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

import pkernels as pk
from pkdb.agent.launch_message import field_names, launch_pools


@pk.workload
class Walkers:
    def __init__(self) -> None:
        self.steps: pk.View1D[pk.double] = pk.View([4], pk.double)
        self.pool: pk.Random_XorShift64_Pool = pk.Random_XorShift64_Pool(7, 16)

    @pk.workunit
    def step(self, i: int) -> None:
        self.steps[i] = pk.rand(pk.double)


@pk.workunit
def fill(i, out, pool):
    out[i] = pk.rand(pk.double)


def test_a_keyword_pool_and_a_workload_field_by_kernel_parameter_name() -> None:
    pool = pk.Random_XorShift1024_Pool(3, 8)
    dispatch = SimpleNamespace(workunit=fill, kwargs={"out": np.zeros(4), "pool": pool, "n": 2})
    assert launch_pools(dispatch) == {"pool": "Random_XorShift1024_Pool(seed=3, num_states=8)"}
    walkers = Walkers()
    dispatch = SimpleNamespace(workunit=walkers.step, kwargs={})
    assert launch_pools(dispatch) == {"self_pool": "Random_XorShift64_Pool(seed=7, num_states=16)"}
    assert walkers.pool.launches == 0  # naming the pool draws no launch key


def test_a_workloads_fields_are_named_as_the_method_writes_them() -> None:
    # The kernel takes self.pool as the parameter self_pool: args shows self.pool.
    names = field_names(Walkers().step)
    assert names == {"self_steps": "self.steps", "self_pool": "self.pool"}
    assert field_names(fill) == {}
