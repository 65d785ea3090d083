"""GPU kernel-mode command logic (pkdb.commands.gpu) on a fake cuda-gdb and the real
evaluation helper: what each command asks of cuda-gdb and what it shows. The real
sessions on a GPU are tests/pkdb/test_gpu_session.py."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fake_cuda_gdb import FakeCudaGdb

from pkdb.agent.device_snapshot import describe
from pkdb.gpu_frontend import GpuFrontend
from pkdb.gpu_session import GpuKernelSession, GpuStop
from pkdb.kernel_protocol import KernelLaunch
from pkdb.modes import CudaKernelMode
from pkdb.settings import Settings
from pkdb.targets.base import FrameInfo, StopEvent, TargetError
from pkdb.targets.cuda_gdb import CudaFocus

PROGRAM = """\
import pkernels as pk


@pk.workunit
def yAx(j, acc, cols, y_view, x_view, A_view):
    temp2: float = 0
    for i in range(cols):
        temp2 += A_view[j][i] * x_view[i]
    acc += y_view[j] * temp2
"""


class Console:
    """The front end as the GPU commands see it, recording what they print."""

    def __init__(self, session: GpuKernelSession) -> None:
        self.gpu = session
        self.kernel_displays: dict[str, str] = {}
        self.state: dict[str, Any] = {"breakpoints": [], "next_breakpoint": 3}
        self.settings = Settings()
        self.mode = CudaKernelMode()
        self.argv: list[str] = []
        self.output: list[str] = []
        self.resumed: list[bool] = []

    def message(self, text: str) -> None:
        self.output.append(text)

    def error(self, text: str) -> None:
        self.output.append(f"*** {text}")

    def resume_gpu(self, *, stepping: bool = False) -> None:
        self.resumed.append(stepping)

    def run(self, line: str) -> str:
        self.output.clear()
        self.mode.execute(self, line)
        return "\n".join(self.output)


@pytest.fixture
def console(tmp_path: Path):
    source = tmp_path / "yax.py"
    source.write_text(PROGRAM)

    def values(block: int, thread: int) -> dict[str, str]:
        j = block * 256 + thread
        return {"j": str(j), "cols": "64", "y_view": "{data = 0x7f00, extent = {512}, stride = {1}}",
                "temp2": f"{j * 0.5}", "i": "3", "pk_it1": "3"}  # fmt: skip

    fake = FakeCudaGdb(str(source), 8, blocks=2, threads=256, values=values)
    session = GpuKernelSession()
    session.controller = fake  # type: ignore[assignment]
    session.launch = KernelLaunch(
        id=1, pid=1, kernel="yAx", space="cuda", operation="reduce", filename=str(source),
        first_line=4, last_line=9, library="", source="kernel.cu", index="j",
        views={"y_view": {"rank": 1, "dtype": "float64", "shape": [512]}},
        call_stack=[[str(source), 20, "<module>"], [str(source), 30, "run"]],
        variable_kinds={"temp2": "float", "j": "int", "i": "int", "cols": "int"},
        cuda_geometry={"kind": "range", "blocks": 2, "threads": 256, "begins": [0],
                       "ends": [512]},
    )  # fmt: skip
    session.evaluator.start(sys.executable, list(sys.path), str(tmp_path))
    session.evaluator.launch({"y": describe([1.0, 2.0, 3.0]), "scale": describe(2.0)}, {})
    session.stop = GpuStop(StopEvent("breakpoint-hit", breakpoint=1), CudaFocus(0, (0, 0, 0),
                                                                              (10, 0, 0)))  # fmt: skip
    fake.focus_now = session.stop.focus
    yield Console(session)
    session.evaluator.stop()


def test_print_reads_kernel_variables_from_cuda_gdb_and_evaluates_python(console):
    assert console.run("p j") == "10"
    assert console.run("p temp2") == "5.0"  # a float as Python shows it
    assert console.run("p temp2 * scale + j") == repr(5.0 * 2.0 + 10)
    assert console.run("p sum(y)") == "6.0"
    assert console.run("p nope").startswith("*** NameError")
    assert console.run("p") == "*** print needs an expression, e.g. 'p y_view[j]'"


def test_thread_by_index_and_by_number(console):
    fake = console.gpu.controller
    assert "Switching to thread 300 (block 1, thread 44, j=300)" in console.run("thread j=300")
    assert fake.focus_now.block == (1, 0, 0) and fake.focus_now.thread == (44, 0, 0)
    assert console.run("p j") == "300"
    console.run("thread 12")
    assert console.run("p j") == "12"
    assert "not one of this kernel's indices" in console.run("thread k=3")
    assert "outside the launch's range" in console.run("thread j=512")
    console.run("cuda block 1 thread 2")
    assert console.run("p j") == "258"
    assert console.run("cuda") == "kernel 0, block 1, thread 2"


def test_where_shows_kernel_frames_then_the_host_frames(console):
    lines = console.run("where").splitlines()
    assert lines[0].startswith("> #0 ") and lines[0].endswith("yax.py:8 (yAx)")
    assert lines[1].endswith("yax.py:30 (run)") and lines[2].endswith("yax.py:20 (<module>)")
    assert console.run("up").splitlines()[0].endswith("(30)run()")
    assert console.gpu.kernel_values() == {}  # a host frame: no kernel variables


def test_breakpoints_at_a_stop_are_told_to_pdb_after_the_kernel(console):
    assert console.run("break 9 if j == 4") == f"Breakpoint 3 at {console.gpu.launch.filename}:9"
    fake = console.gpu.controller
    assert fake.inserted[-1].line == 9 and fake.conditions[fake.inserted[-1].number] == "(j == 4)"
    assert [d.action for d in console.gpu.deferred] == ["break"]
    assert console.run("break 9 if j.real").startswith("*** ")  # no C equivalent: refused
    assert "Deleted breakpoint 3" in console.run("clear 3")
    assert [d.action for d in console.gpu.deferred] == ["break", "clear"]
    assert console.run("clear 7") == "*** No breakpoint numbered 7"


def test_locals_args_and_statements(console):
    assert console.run("locals").splitlines() == ["temp2 = 5.0", "i = 3"]
    assert "y_view = <device view of float64, shape (512,)>" in console.run("args")
    console.run("eval temp2 = temp2 + 1")
    assert "evaluate temp2 = 6.0" in console.gpu.controller.commands


def test_a_helpers_scalar_parameters_are_its_arguments(console):
    """A helper's scalar parameter arrives as pk_arg_<name> (shown "<optimized out>" by
    cuda-gdb) and is copied into a local of its own name (CudaEmitter.copied_param):
    ``args``, ``locals`` and ``p`` show it as the parameter it is."""
    fake = console.gpu.controller
    fake.values = lambda block, thread: {"pk_arg_v": "<optimized out>", "w": "1.5", "v": "5.5"}
    fake.arguments = ("pk_arg_v",)
    assert console.run("args").splitlines() == ["v = 5.5"]
    assert console.run("locals").splitlines() == ["w = 1.5"]
    assert console.run("p v + 0.25") == "5.75"


def test_until_breaks_at_the_next_line_for_the_focused_thread(console):
    console.run("until")
    bp = console.gpu.controller.inserted[-1]
    assert bp.line == 9 and bp.temporary
    assert bp.condition == "j == 10"  # the thread's own index: what cuda-gdb reads right
    assert console.resumed == [False]
    console.run("next")
    assert console.gpu.controller.commands[-1] == "next" and console.resumed[-1] is True


def test_parallel_print_over_the_focused_block(console):
    lines = console.run("parallel_print j * 2 threads 3:6").splitlines()
    assert lines == [f"thread {n:>6} (block 0, thread {n}): {2 * n}" for n in range(3, 7)]
    assert console.gpu.controller.focus_now.thread == (10, 0, 0)  # focus put back
    said = console.run("parallel_print j threads 6:3")
    assert said == "*** thread range 6:3 runs backwards: the first number comes first"


def test_threads_table_and_held_commands(console):
    table = console.run("info cuda threads").splitlines()
    assert "512" in table[1] and table[1].startswith("*")
    assert "held whole" in console.run("hotswap yAx other")


def test_stop_text_names_kernel_line_block_thread_and_index(console):
    frontend = GpuFrontend.__new__(GpuFrontend)
    frontend.session = console.gpu
    console.gpu.gdb_numbers[1] = 1
    text = frontend.stop_text(StopEvent("breakpoint-hit", breakpoint=1))
    # pdb's form, which editors following pdb read: where, then who and why, then the line
    assert text.splitlines() == [
        f"> {console.gpu.launch.filename}(8)yAx()",
        "CUDA block 0, thread 10 (j=10) hit breakpoint 1",
        "-> temp2 += A_view[j][i] * x_view[i]",
    ]


def test_an_index_range_maps_to_blocks_as_the_launch_does():
    from pkernels.runtime.cuda_geometry import box_shape, range_shape

    session = GpuKernelSession()
    # A reduce's box of 100 x 30 on at most 4 blocks: blocks of 32 x 8 threads (j along x,
    # i along y), a grid of 1 x 4, so i runs in y position i % 32 (a grid-stride loop).
    shape = box_shape([0, 0], [100, 30], 256, max_blocks=4)
    assert (shape.grid, shape.block) == ((1, 4, 1), (32, 8, 1))
    session.launch = KernelLaunch(
        id=1, pid=1, kernel="k", space="cuda", operation="reduce", filename="f.py",
        first_line=1, last_line=2, library="", source="", index="i, j",
        cuda_geometry={"kind": "box", **shape.as_geometry(), "begins": [0, 0],
                       "ends": [100, 30]},
    )  # fmt: skip
    block, thread = session.thread_of_index([50, 7])
    assert (block, thread) == ((0, 2, 0), (7, 2, 0))  # 50 % 32 = 18: block 2, thread 2
    number = session.number_of_thread(block, thread)
    assert number == 2 * 256 + 2 * 32 + 7
    assert session.thread_of_number(number) == (block, thread)
    with pytest.raises(TargetError, match="outside the launch's range 0..30"):
        session.thread_of_index([50, 30])
    # A range: global thread (i - begin) % (blocks * threads), along x.
    session.launch.cuda_geometry = {
        "kind": "range", **range_shape(10, 5000, 256, max_blocks=4).as_geometry(),
        "begins": [10], "ends": [5000],
    }  # fmt: skip
    assert session.thread_of_index([10 + 1507]) == ((1, 0, 0), (227, 0, 0))  # 1507 % 1024
    session.launch.cuda_geometry = {"kind": "team", "blocks": 3, "threads": 8}
    assert session.thread_of_index([7, 5]) == ((1, 0, 0), (5, 0, 0))
    assert session.thread_number(CudaFocus(0, (2, 0, 0), (3, 0, 0))) == 19


def test_the_frames_a_stop_shows_are_the_python_ones():
    frames = [FrameInfo(0, "pk_fault_hook", "kernel.cu", "kernel.cu", 150, 1),
              FrameInfo(1, "pk_kernel::yAx", "/p/y.py", "/p/y.py", 8, 2)]  # fmt: skip
    session = GpuKernelSession()
    session.controller = type("C", (), {"stack": lambda self, max_depth=None: frames})()
    assert [f.line for f in session.python_frames()] == [8]


def test_a_release_team_fault_between_launches_goes_on_unseen(console):
    """cuda-gdb stays attached between GPU launches: a release team kernel's fault stops
    in pk_fault_hook then; the launch itself reports it when it returns."""
    session = console.gpu
    session.launch = None
    session.stop = None
    session.fault_breakpoint = 5
    fake = session.controller
    focus = {"kernel": "1", "blockIdx": "(0,0,0)", "threadIdx": "(0,0,0)"}
    fake.events.append(StopEvent("breakpoint-hit", breakpoint=5, raw={"CudaFocus": focus}))
    frontend = GpuFrontend.__new__(GpuFrontend)
    frontend.session = session
    frontend.frontend = console
    frontend.stepping = 0
    assert frontend.check_stop() is False
    assert fake.commands[-1] == "continue" and session.stop is None


def test_list_and_longlist_show_the_kernel_source_at_the_stop(console):
    listed = console.run("ll").splitlines()
    assert listed[0].endswith("@pk.workunit") and listed[1].endswith(
        "def yAx(j, acc, cols, y_view, x_view, A_view):"
    )
    assert [line.split()[:2] for line in listed if "->" in line] == [["8", "->"]]
    assert "acc += y_view[j] * temp2" in console.run("list")
    assert [line.split()[0] for line in console.run("list 4, 2").splitlines()] == ["4", "5", "6"]
    assert console.run("list x") == "*** usage: list [FIRST[, LAST]] or list . (got 'x')"


def test_struct_fields_and_float32_read_as_on_the_cpu(console):
    """The GPU front end reads variables through the CPU's conversion (typed_values):
    a classtype's float field gdb shows as 0 is 0.0, a float32 local NumPy's float32."""
    fake, launch = console.gpu.controller, console.gpu.launch
    fake.values = lambda block, thread: {"j": "10", "p": "{x = 0, id = 3}", "h": "2"}
    launch.variable_kinds |= {"p.x": "float", "p.id": "int", "h": "float32"}
    assert console.run("p p.x") == "0.0"
    assert console.run("p p.id + 1") == "4"
    assert console.run("p type(h).__name__, h / 3") == repr(("float32", np.float32(2) / 3))
    assert console.run("locals").splitlines() == ["p = struct(x=0.0, id=3)", "h = np.float32(2.0)"]


def test_a_random_pool_is_the_programs_pool_not_the_launch_key(console):
    """The kernel holds a pool's launch key (a uint64): p shows the program's pool, which
    the helper has by the kernel's parameter name; args shows both; a workload's pool
    field is named as the method writes it (self.pool)."""
    import pkernels as pk

    session, fake = console.gpu, console.gpu.controller
    fake.values = lambda block, thread: {"j": "10", "pool": "977", "self_pool": "978"}
    fake.arguments += ("pool", "self_pool")
    pool = pk.Random_XorShift64_Pool(5, 4)
    session.launch.pools = {"pool": repr(pool), "self_pool": repr(pool)}
    session.launch.field_names = {"self_pool": "self.pool"}
    session.evaluator.launch({"pool": describe(pool)}, {})
    assert console.run("p pool") == repr(pool)
    assert console.run("p pool.seed + j") == "15"
    args = console.run("args").splitlines()
    assert f"pool = {pool!r} (this launch's key: 977)" in args
    assert f"self.pool = {pool!r} (this launch's key: 978)" in args
    assert not [line for line in args if line.startswith("self_pool")]


def test_the_launch_snapshot_names_pools_by_kernel_parameter():
    """A pool passed inline (no name at the call site) is the helper's under the
    kernel's parameter name, over a call-site name that differs."""
    import pkernels as pk
    from pkdb.agent.device_snapshot import snapshot

    pool = pk.Random_XorShift64_Pool(3, 8)
    described = snapshot(None, {}, {"pool": pool})
    assert set(described["names"]) == {"pool"} and described["views"] == {}
    from pkdb.device_eval.helper import Namespaces

    namespaces = Namespaces()
    assert namespaces.launch(described["names"], {}) == []
    assert repr(namespaces.scope({})["pool"]) == repr(pool)


def test_a_scratch_view_is_read_from_the_device_as_an_array(console):
    """A team's scratch view lives in the block's shared memory, which the helper cannot
    map: its elements come through cuda-gdb (gdb prints a whole double as 4) and the
    helper sees a NumPy array of them, typed by the view's C++ type, as on the CPU."""
    fake = console.gpu.controller
    fake.values = lambda block, thread: {
        "j": "10", "s": "{data = 0x7f0000001000, extent = {4}, stride = {1}}"
    }  # fmt: skip
    fake.types = {"s": "pk_rt::View<double, 1, 1>"}  # its layout, LAST_UNIT, as a number
    fake.expressions = {"*s.data@4": "{4, 5, 6, 7.5}"}
    assert console.run("p s") == "array([4. , 5. , 6. , 7.5])"
    assert console.run("p s[1:3] * 2") == "array([10., 12.])"
    assert console.run("p s[0]") == "np.float64(4.0)"
    assert console.run("locals") == "s = view(shape=(4,), dtype=float64)"


def test_ctrl_c_with_the_focus_on_the_host_focuses_a_kernel_thread(console):
    """Ctrl-C reaches the program's host threads: cuda-gdb's focus may be on one of them.
    While a kernel is debugged that stop is the user's: pkdb focuses a device thread at
    a Python line. Another host signal without a device focus is passed over."""
    session, fake = console.gpu, console.gpu.controller
    session.stop = None
    fake.focus_now = None  # type: ignore[assignment]  # cuda-gdb: focus on a host thread
    fake.events.append(StopEvent("signal-received", signal_name="SIGINT"))
    stop = session.poll_stop(0.0)
    assert stop is not None and stop.focus == CudaFocus(0, (0, 0, 0), (0, 0, 0))
    assert "continue" not in fake.commands
    session.stop = None
    fake.focus_now = None  # type: ignore[assignment]
    fake.events.append(StopEvent("signal-received", signal_name="SIGUSR1"))
    assert session.poll_stop(0.0) is None and fake.commands[-1] == "continue"


def test_a_workloads_self_reaches_the_helper_with_its_fields():
    """At a GPU stop in a workload method, p self.pool and p self.scale see the fields
    the kernel reads (args names them so)."""
    import pkernels as pk
    from pkdb.agent.device_snapshot import snapshot
    from pkdb.device_eval.helper import Namespaces

    pool = pk.Random_XorShift64_Pool(7, 16)
    described = snapshot(None, {}, None, ("self", {"pool": pool, "scale": 2.0}))
    namespaces = Namespaces()
    assert namespaces.launch(described["names"], {}) == []
    owner = namespaces.scope({})["self"]
    assert repr(owner.pool) == repr(pool) and owner.scale == 2.0


def test_a_scratch_copy_is_typed_by_the_views_cpp_type():
    from pkdb import memviews

    copy = memviews.encode_copy([1, 2, 3, 4], "pk_rt::View<float, 2, 1>", [2, 2])
    array = memviews.decode_copy(copy)
    assert array.dtype == np.float32 and array.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    # Any layout (the third argument: 0 strided, 2 first axis unit-stride; once a bool).
    for layout in ("0", "2", "true", "false"):
        ctype = f"const pk_rt::RView<long, 2, {layout}> &"
        assert memviews.decode_copy(memviews.encode_copy([1, 2], ctype, [1, 2])).dtype == np.int64
    assert memviews.encode_copy([1, 2], "pk_rt::View<double, 2, 1>", [2]) is None  # rank
    complex_view = "pk_rt::View<pk_rt::complex<double>, 1, 1>"
    assert memviews.encode_copy(["{re = 1, im = 2}"], complex_view, [1]) is None
    assert memviews.decode_copy([1, 2]) == [1, 2]  # anything else as it is


def test_a_kernel_view_is_read_by_its_own_strides_whatever_its_layout():
    """gdb's rendering of a CPU kernel's view of a Fortran-order array (its type names
    the layout, 2: the first axis has stride 1; the struct still holds every stride)."""
    from pkdb import memviews

    array = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    text = f"{{data = 0x{array.ctypes.data:x}, extent = {{2, 3}}, stride = {{1, 2}}}}"
    value = memviews.encode(text, "const pk_rt::View<double, 2, 2> &")
    assert value is not None
    np.testing.assert_array_equal(memviews.resolve(value), array)


class _MemoryReader:
    """cuda-gdb's answer to ``*s.data@N``: the elements 0.0, 1.0, ... N - 1."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def evaluate(self, expression: str, frame: int = 0) -> str:
        self.asked.append(expression)
        count = int(expression.rsplit("@", 1)[1])
        return "{" + ", ".join(str(float(k)) for k in range(count)) + "}"

    def variable_types(self, frame: int = 0) -> dict[str, str]:
        return {}  # the element type unknown: the elements as a list


def test_a_scratch_view_is_read_by_its_strides():
    session = GpuKernelSession()
    reader = session.controller = _MemoryReader()  # type: ignore[assignment]
    column_major = "{data = 0x7f00, extent = {2, 3}, stride = {1, 2}}"
    assert session._scratch_values("s", column_major, 0) == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]
    row_major = "{data = 0x7f00, extent = {2, 3}, stride = {3, 1}}"
    assert session._scratch_values("s", row_major, 0) == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    padded = "{data = 0x7f00, extent = {4}, stride = {2}}"  # every other element
    assert session._scratch_values("s", padded, 0) == [0.0, 2.0, 4.0, 6.0]
    assert reader.asked == ["*s.data@6", "*s.data@6", "*s.data@7"]


def test_a_scratch_view_of_unknown_type_is_typed_by_its_data_pointer(console):
    """Where cuda-gdb names no C++ type for the view, the type its data pointer prints
    with ("(@shared double *) 0x...") types the copy."""
    fake = console.gpu.controller
    fake.values = lambda block, thread: {
        "j": "10", "s": "{data = (@shared double *) 0x1000, extent = {4}, stride = {1}}"
    }  # fmt: skip
    fake.types = {}
    fake.expressions = {"*s.data@4": "{4, 5, 6, 7}"}
    assert console.run("p s") == "array([4., 5., 6., 7.])"


def test_a_cuda_exception_stops_at_the_line_that_raised_it(console):
    """A warp stops past the instruction whose CUDA exception it raised (the exception is
    imprecise): the stop, `where` and `p` are at the raising line cuda-gdb names, for the
    thread stopped there; another thread's frame is its own."""
    session, fake = console.gpu, console.gpu.controller
    source = session.launch.filename
    fake.raised_at = (source, 7)  # the store; the warp is at line 8
    fake.events.append(
        StopEvent("signal-received", signal_name="CUDA_EXCEPTION_14",
                  signal_meaning="Warp Illegal Address")
    )  # fmt: skip
    session.stop = None
    event = session.poll_stop(0.0).event
    frontend = GpuFrontend.__new__(GpuFrontend)
    frontend.session = session
    lines = frontend.stop_text(event).splitlines()
    assert lines[0] == f"> {source}(7)yAx()"
    assert lines[1].endswith("received CUDA_EXCEPTION_14 (Warp Illegal Address)")
    assert lines[2] == "-> for i in range(cols):"
    assert console.run("p j") == "10"
    console.run("cuda block 0 thread 11")
    assert session.location(0).line == 8


def test_a_release_builds_exception_without_a_line_names_the_raising_one(console):
    """A release build's warp may stop in code with no line at all: the raising line is
    then the only Python frame."""
    session, fake = console.gpu, console.gpu.controller
    fake.frames = [FrameInfo(0, "pk_cuda_entry", None, None, None, 0x10)]
    fake.raised_at = ("/p/k.py", 12)
    fake.events.append(StopEvent("signal-received", signal_name="CUDA_EXCEPTION_14"))
    session.stop = None
    session.poll_stop(0.0)
    frame = session.location(0)
    assert (frame.file, frame.line, frame.function) == ("/p/k.py", 12, "pk_cuda_entry")
    fake.raised_at = ("/usr/include/pkernels/cuda.hpp", 40)  # not a Python line: not used
    fake.events.append(StopEvent("signal-received", signal_name="CUDA_EXCEPTION_14"))
    session.stop = None
    session.poll_stop(0.0)
    assert session.python_frames() == []


def test_the_error_pc_cuda_gdb_prints_is_read_with_its_line():
    from pkdb.targets.cuda_gdb import exception_pc

    assert exception_pc("CUDA Exception: Warp Illegal Address\n"
                        "The exception was triggered at PC 0x555555ef1200 (bug.py:11)\n"
                        ) == ("0x555555ef1200", ("bug.py", 11))  # fmt: skip
    with_function = (
        "The exception was triggered at PC 0x7fff20cd8fb0  k<64>(char const*, int)  (/a/k.py:692)"
    )
    assert exception_pc(with_function) == ("0x7fff20cd8fb0", ("/a/k.py", 692))
    assert exception_pc("The exception was triggered at PC 0x7ff35529cff0\n") == (
        "0x7ff35529cff0",
        None,
    )
    assert exception_pc("Thread 1 received signal SIGSEGV") is None
