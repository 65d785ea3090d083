"""More of pkdb on the GPU, each a user's session through a real terminal: CUDA
exceptions stopped at the Python line (a debug build, and a release build while
cuda-gdb is attached), Ctrl-C in a running kernel, a team's scratch memory, hotswap,
parallel_launch, a random pool at a GPU stop, a workload's pool field.

Marked ``gpu``: they skip without CuPy, a GPU and cuda-gdb. Run them on a GPU machine:
``python3 -m pytest -q tests/pkdb/test_gpu_session_more.py``.
"""

from __future__ import annotations

import re
import time

from gpu_harness import (
    GPU_MARKS,
    GPU_PROMPT,
    HOST_PROMPT,
    descendants,
    gpu_session,
    gpu_stop,
    run,
)
from pkdb_harness import process_gone, row, wait_until, write

pytestmark = GPU_MARKS

#: How a CUDA exception stops (cuda-gdb's signal name and meaning, e.g.
#: ``CUDA_EXCEPTION_14 (Warp Illegal Address)``): group 1 is the meaning.
CUDA_EXCEPTION = r"received CUDA_EXCEPTION_\d+ \(([^)\n]*)\)"

#: What the user sees when the program's kernel faulted and it could not go on: the
#: CUDA error (CuPy's "an illegal memory access was encountered", or "unspecified
#: launch failure"), or the program's end by a signal or with an error status.
FAULT_ENDING = (
    r"(?i)illegal (memory access|address)|launch failure|killed by signal|exited with code [1-9]"
)


# -- a CUDA exception in a debug build -----------------------------------------------------

WILD_PROGRAM = """
import cupy as cp
import pkernels as pk


@pk.workunit
def store(i, x, stride):
    x[i * stride] = 1.0
    if stride < 0:
        x[0] = -1.0


small = cp.zeros(4)
# A view whose shape claims far more memory than it has (a raw pointer given the wrong
# shape): its indices pass the view's bounds check and land far outside the allocation.
wild = cp.ndarray((1 << 45,), dtype=cp.float64, memptr=small.data)
pk.parallel_for(pk.RangePolicy(pk.Cuda, 1, 33), store, x=wild, stride=1 << 34)
print("survived")
"""
WILD_STORE = 7  # x[i * stride] = 1.0
WILD_NEVER = 9  # x[0] = -1.0: never reached


def test_an_illegal_address_in_a_debug_build_stops_at_its_line(tmp_path):
    """A breakpoint the kernel never reaches makes it run its -G build under cuda-gdb;
    its write through a wild pointer stops the faulting warp at the Python line, with
    the kernel's variables there."""
    program = write(tmp_path, "wild_gpu.py", WILD_PROGRAM)
    session = gpu_session(program)
    try:
        run(session, f"break {WILD_NEVER}", HOST_PROMPT)
        out = run(session, "continue")
        who = rf"block 0, thread (\d+) \(i=(\d+)\) {CUDA_EXCEPTION}"
        m = re.search(gpu_stop("wild_gpu.py", WILD_STORE, "store", who), out, re.M)
        assert m, out
        thread, index, meaning = int(m[1]), int(m[2]), m[3]
        assert "illegal address" in meaning.lower(), meaning
        assert index == thread + 1  # the launch begins at index 1
        assert "-> x[i * stride] = 1.0" in out
        assert run(session, "p i") == str(index)
        assert run(session, "p stride") == str(1 << 34)
        where = run(session, "where").splitlines()
        assert where[0].startswith("> #0 ") and where[0].endswith(
            f"wild_gpu.py:{WILD_STORE} (store)"
        )
        out = session.cmd("continue", HOST_PROMPT)
        assert re.search(FAULT_ENDING, out), out
        assert "survived" not in out
    finally:
        session.close()


# -- a CUDA exception in a release build, cuda-gdb attached --------------------------------

RELEASE_PROGRAM = """
import cupy as cp
import pkernels as pk


@pk.workunit
def store(i, x, stride):
    x[i * stride] = 1.0


small = cp.zeros(64)
pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 64), store, x=small, stride=1)
print("first", float(small.sum()), flush=True)
wild = cp.ndarray((1 << 45,), dtype=cp.float64, memptr=small.data)
pk.parallel_for(pk.RangePolicy(pk.Cuda, 1, 33), store, x=wild, stride=1 << 34)
print("survived")
"""
RELEASE_STORE = 7


def test_an_illegal_address_in_a_release_build_stops_at_its_line(tmp_path):
    """cuda-gdb stays attached after a GPU stop: a later launch without breakpoints runs
    its release build (unchecked), and its CUDA exception still stops at the Python
    line (release builds carry line tables) with the block and thread, saying that
    a release build has no variables and how to see them."""
    program = write(tmp_path, "release_gpu.py", RELEASE_PROGRAM)
    session = gpu_session(program)
    try:
        run(session, f"break {RELEASE_STORE} if i == 3", HOST_PROMPT)
        out = run(session, "continue")
        assert re.search(r"CUDA block 0, thread 3 \(i=3\) hit breakpoint 1$", out, re.M), out
        run(session, "clear 1")
        out = run(session, "continue")  # the first launch ends; the second faults
        assert "first 64.0" in out
        who = rf"block 0, thread (\d+) {CUDA_EXCEPTION}"  # no index: no variables
        m = re.search(gpu_stop("release_gpu.py", RELEASE_STORE, r"\S+", who), out, re.M)
        assert m, out
        assert "illegal address" in m[2].lower(), m[2]
        assert "(a release build: no variables;" in out
        out = session.cmd("continue", HOST_PROMPT)
        assert re.search(FAULT_ENDING, out), out
        assert "survived" not in out
    finally:
        session.close()


# -- Ctrl-C while a kernel runs ------------------------------------------------------------

SPIN_PROGRAM = """
import cupy as cp
import pkernels as pk


@pk.workunit
def spin(i, out, n):
    total: float = 0.0
    k: int = 0
    while k < n:
        total += 0.5
        k += 1
    if n < 0:
        out[i] = -1.0
    out[i] = total


out = cp.zeros(64)
pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 64), spin, out=out, n=10)
print("warm", float(out[0]), flush=True)
pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 64), spin, out=out, n=1 << 40)
print("spun", float(out[0]))
"""
SPIN_LOOP = range(9, 12)  # while k < n: ... k += 1
SPIN_NEVER = 13  # out[i] = -1.0: never reached


def test_ctrl_c_stops_a_running_gpu_kernel_and_quit_leaves_no_process(tmp_path):
    """A breakpoint the kernel never reaches: its debug build runs under cuda-gdb, long.
    Ctrl-C stops it at a kernel line in a device thread; quit ends the program, cuda-gdb
    and the evaluation helper."""
    program = write(tmp_path, "spin_gpu.py", SPIN_PROGRAM)
    session = gpu_session(program)
    try:
        run(session, f"break {SPIN_NEVER}", HOST_PROMPT)
        session.child.sendline("continue")
        # The first launch (n=10) compiles the debug build and attaches cuda-gdb; the
        # second spins for hours at -G. The host thread sleeps while it waits for the GPU
        # (no CPU time to watch for): give the second launch a moment to start.
        session.child.expect("warm 5.0")
        time.sleep(3)
        session.child.sendintr()
        # The terminal echoes the Ctrl-C as "^C" where the stop text then begins.
        out = session.wait_prompt(GPU_PROMPT).replace("^C", "")
        who = r"block (\d+), thread (\d+) \(i=(\d+)\) interrupted"
        m = re.search(gpu_stop("spin_gpu.py", r"(\d+)", "spin", who), out, re.M)
        assert m, out
        line, block, thread, index = (int(g) for g in m.groups())
        assert line in SPIN_LOOP, out
        assert block == 0 and index == thread, out  # 64 indices: one block of 256 threads
        assert run(session, "p i") == str(index)
        assert run(session, "p n") == str(1 << 40)
        assert run(session, "p 0 < k < n") == "True"  # deep in its loop
        assert "spun" not in out
        below = descendants(session.child.pid)
        assert len(below) >= 2, below  # the program and cuda-gdb at least
        assert session.quit() == 0
        assert wait_until(lambda: all(process_gone(p) for p in below), timeout=30), [
            p for p in below if not process_gone(p)
        ]
    finally:
        session.close()


# -- a team's scratch memory ----------------------------------------------------------------

SCRATCH_PROGRAM = """
import cupy as cp
import pkernels as pk


@pk.workunit
def reverse_rows(team_member: pk.TeamMember, out, inp, m: int):
    row: int = team_member.league_rank()
    s: pk.ScratchView1D[pk.double] = pk.ScratchView1D(team_member.team_scratch(0), m)

    def stage(i: int):
        s[i] = inp[row, i]

    pk.parallel_for(pk.TeamThreadRange(team_member, m), stage)
    team_member.team_barrier()
    out[row, 0] = s[m - 1]


inp = cp.arange(12.0).reshape(3, 4)
out = cp.zeros((3, 4))
policy = pk.TeamPolicy(pk.Cuda, 3, 2).set_scratch_size(0, pk.PerTeam(32))
pk.parallel_for(policy, reverse_rows, out=out, inp=inp, m=4)
print("first", out[:, 0].get().tolist())
"""
SCRATCH_AFTER_BARRIER = 15  # out[row, 0] = s[m - 1]


def test_a_teams_scratch_view_holds_what_the_team_wrote(tmp_path):
    """Level-0 scratch is the block's shared memory: after the team filled it and passed
    the barrier, p shows the row the team copied there, whole and sliced."""
    program = write(tmp_path, "scratch_gpu.py", SCRATCH_PROGRAM)
    session = gpu_session(program)
    try:
        run(session, f"break {SCRATCH_AFTER_BARRIER} if team_member.league_rank() == 1",
            HOST_PROMPT)  # fmt: skip
        out = run(session, "continue")
        who = r".*league 1, team_rank \d\) hit breakpoint 1"
        stop = gpu_stop("scratch_gpu.py", SCRATCH_AFTER_BARRIER, "reverse_rows", who)
        assert re.search(stop, out, re.M), out
        assert run(session, "p row") == "1"
        assert run(session, "p s") == "array([4., 5., 6., 7.])"
        assert run(session, "p s[m - 1]") == "np.float64(7.0)"
        assert run(session, "p s[1:3] * 2") == "array([10., 12.])"
        assert "s = view(shape=(4,), dtype=float64)" in run(session, "locals")
        run(session, "clear 1")
        out = session.cmd("continue", r"The program exited")
        assert "first [3.0, 7.0, 11.0]" in out
    finally:
        session.close()


# -- hotswap with a breakpoint in the GPU kernel ---------------------------------------------

HOTSWAP_PROGRAM = """
import cupy as cp
import pkernels as pk


@pk.workunit
def scale(i, out, x, factor):
    out[i] = x[i] * factor


@pk.workunit
def scale_plus(i, out, x, factor):
    out[i] = x[i] * factor + 100.0


x = cp.arange(64.0)
out = cp.zeros(64)
pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 64), scale, out=out, x=x, factor=2.0)
print("out", out[:4].get().tolist())
"""
HOTSWAP_PLUS_BODY = 12  # out[i] = x[i] * factor + 100.0
HOTSWAP_DISPATCH = 17


def test_hotswap_runs_the_new_kernel_on_the_gpu_and_stops_in_it(tmp_path):
    program = write(tmp_path, "hotswap_gpu.py", HOTSWAP_PROGRAM)
    session = gpu_session(program)
    try:
        run(session, f"break {HOTSWAP_DISPATCH}", HOST_PROMPT)
        out = run(session, "continue", HOST_PROMPT)
        assert f"hotswap_gpu.py({HOTSWAP_DISPATCH})<module>()" in out, out
        out = run(session, "hotswap scale scale_plus", HOST_PROMPT)
        assert out == "Hotswap 1: scale -> scale_plus at every call site"
        run(session, f"break {HOTSWAP_PLUS_BODY} if i == 3", HOST_PROMPT)
        out = run(session, "continue")
        assert (
            f"[hotswap 1] hotswap_gpu.py:{HOTSWAP_DISPATCH}: scale_plus runs instead of scale"
            in out
        )
        who = r"block 0, thread 3 \(i=3\) hit breakpoint 2"
        stop = gpu_stop("hotswap_gpu.py", HOTSWAP_PLUS_BODY, "scale_plus", who)
        assert re.search(stop, out, re.M), out
        assert run(session, "p factor") == "2.0"
        assert run(session, "p x[i] * factor + 100.0") == "array(106.)"
        run(session, "clear 2")
        out = session.cmd("continue", r"The program exited")
        assert "out [100.0, 102.0, 104.0, 106.0]" in out
    finally:
        session.close()


# -- parallel_launch with a Cuda clause and a breakpoint in its kernel ----------------------

LAUNCH_PROGRAM = """
import cupy as cp
import numpy as np
import pkernels as pk


@pk.workunit
def square(i, out, x):
    out[i] = x[i] * x[i]


n = 16
x = np.arange(16.0)
out = np.zeros(16)
gx = cp.asarray(x)
gout = cp.zeros(16)
pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, n), square, out=gout, x=gx)
print("gpu", float(gout.sum()))
"""
LAUNCH_SQUARE_BODY = 8  # out[i] = x[i] * x[i]
LAUNCH_DISPATCH = 16


def test_parallel_launch_clauses_run_undebugged_and_the_breakpoint_stays(tmp_path):
    """docs/pkdb.md: parallel_launch's clauses ignore breakpoints (they run checked
    release builds side by side): with a breakpoint in the Cuda clause's kernel, both
    clauses finish at the host prompt; the program's own dispatch of that kernel on
    pk.Cuda then stops at the breakpoint."""
    program = write(tmp_path, "launch_gpu.py", LAUNCH_PROGRAM)
    session = gpu_session(program)
    try:
        run(session, f"break {LAUNCH_DISPATCH}", HOST_PROMPT)
        run(session, "continue", HOST_PROMPT)
        run(session, f"break {LAUNCH_SQUARE_BODY} if i == 5", HOST_PROMPT)
        table = run(
            session,
            "parallel_launch square pk.Cuda n out=out x=x ; square pk.OpenMP n out=out x=x",
            HOST_PROMPT,
        )
        assert row(table, "operation") == ["for Cuda 0..16", "for OpenMP 0..16"], table
        assert row(table, "status") == ["ok", "ok"], table
        assert row(table, "  sum") == ["1240.0", "1240.0"], table
        assert "2 of 2 clauses launched concurrently" in table and "none failed" in table
        assert run(session, "p float(gout.sum()), float(out.sum())", HOST_PROMPT) == "(0.0, 0.0)"
        out = run(session, "continue")
        who = r"block 0, thread 5 \(i=5\) hit breakpoint 2"
        stop = gpu_stop("launch_gpu.py", LAUNCH_SQUARE_BODY, "square", who)
        assert re.search(stop, out, re.M), out
        assert run(session, "p x[i]") == "array(5.)"
        run(session, "clear 2")
        out = session.cmd("continue", r"The program exited")
        assert "gpu 1240.0" in out
    finally:
        session.close()


# -- a random pool at a GPU stop -----------------------------------------------------------

POOL_PROGRAM = """
import cupy as cp
import pkernels as pk


@pk.workunit
def jitter(i, out, pool):
    r: float = pk.rand(pk.double)
    out[i] = i + r


out = cp.zeros(64)
policy = pk.RangePolicy(pk.Cuda, 0, 64)
pk.parallel_for(policy, jitter, out=out, pool=pk.Random_XorShift64_Pool(5, 4))
print("whole", [int(v) for v in out[:4].get()])
"""
POOL_STORE = 8  # out[i] = i + r


def test_a_random_pool_at_a_gpu_stop_is_the_programs_pool(tmp_path):
    """The kernel holds only the launch's key of the pool: args shows the program's pool
    with that key (as on the CPU), p pool the pool itself (the helper has it by the
    kernel's parameter name; the call site passed it inline)."""
    import pkernels as pk

    program = write(tmp_path, "pool_gpu.py", POOL_PROGRAM)
    session = gpu_session(program)
    try:
        run(session, f"break {POOL_STORE} if i == 3", HOST_PROMPT)
        out = run(session, "continue")
        assert re.search(r"CUDA block 0, thread 3 \(i=3\) hit breakpoint 1$", out, re.M), out
        pool = "Random_XorShift64_Pool(seed=5, num_states=4)"
        key = pk.Random_XorShift64_Pool(5, 4).launch_key()  # the pool's first launch
        args = run(session, "args").splitlines()
        assert f"pool = {pool} (this launch's key: {key})" in args, args
        assert "out = <device view of float64, shape (64,)>" in args, args
        assert run(session, "p pool") == pool
        assert 0.0 <= float(run(session, "p r")) < 1.0
        run(session, "clear 1")
        out = session.cmd("continue", r"The program exited")
        assert "whole [0, 1, 2, 3]" in out
    finally:
        session.close()


WORKLOAD_PROGRAM = """
import pkernels as pk


@pk.workload
class Walkers:
    def __init__(self) -> None:
        self.steps: pk.View1D[pk.double] = pk.View([64], pk.double, space=pk.CudaSpace)
        self.pool: pk.Random_XorShift64_Pool = pk.Random_XorShift64_Pool(7, 16)

    @pk.workunit
    def step(self, i: int) -> None:
        r: float = pk.rand(pk.double)
        self.steps[i] = i + r


w = Walkers()
pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 64), w.step)
print("whole", [int(v) for v in w.steps.data[:4].get()])
"""
WORKLOAD_STORE = 13  # self.steps[i] = i + r


def test_a_workloads_pool_field_at_a_gpu_stop_is_self_dot_pool(tmp_path):
    """The kernel takes self.pool as its parameter self_pool: args names it self.pool, as
    the method does, and p self.pool is the program's pool."""
    program = write(tmp_path, "walkers_gpu.py", WORKLOAD_PROGRAM)
    session = gpu_session(program)
    try:
        run(session, f"break {WORKLOAD_STORE} if i == 2", HOST_PROMPT)
        out = run(session, "continue")
        assert re.search(r"CUDA block 0, thread 2 \(i=2\) hit breakpoint 1$", out, re.M), out
        pool = "Random_XorShift64_Pool(seed=7, num_states=16)"
        args = run(session, "args").splitlines()
        assert [a for a in args if a.startswith(f"self.pool = {pool} (this launch's key: ")], args
        assert "self.steps = <device view of float64, shape (64,)>" in args, args
        assert not [a for a in args if a.startswith("self_")], args
        assert run(session, "p self.pool") == pool
        assert run(session, "p self.steps.shape") == "(64,)"  # the live device array
        run(session, "clear 1")
        out = session.cmd("continue", r"The program exited")
        assert "whole [0, 1, 2, 3]" in out
    finally:
        session.close()


UNPROVEN_PROGRAM = """
import cupy as cp
import pkernels as pk


@pk.workunit
def gather(i, out, x, where):
    out[i] = x[where[i]]


out = cp.zeros(300)
where = cp.arange(300)
where[77] = 300  # past x's end: an index read from data, which no proof covers
pk.parallel_for(pk.RangePolicy(pk.Cuda, 0, 300), gather, out=out, x=cp.ones(300), where=where)
print("done")
"""


def test_without_a_breakpoint_a_gpu_kernel_runs_checked_and_names_the_failed_index(tmp_path):
    """checks on (pkdb's default): an unproven GPU launch runs the checked build, so the
    index out of range is the program's KernelIndexError with line, block and thread,
    not memory written past the array; no cuda-gdb is needed for it."""
    program = write(tmp_path, "unproven_gpu.py", UNPROVEN_PROGRAM)
    session = gpu_session(program)
    try:
        out = session.cmd("continue", r"Uncaught exception")
        assert "KernelIndexError" in out and "unproven_gpu.py:7" in out, out
        assert "index 300 is out of range for axis 0 of view 'x' with extent 300" in out
        assert re.search(r"\(block \d+, thread \d+\)", out), out
        assert "done" not in out
    finally:
        session.close()
