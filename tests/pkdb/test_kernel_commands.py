"""Kernel-mode command logic on an in-memory controller (fake_controller.py): what the
commands ask of the target and what they tell the user, with no terminal session, no
gdb and no program. The same commands on real gdb and PTY sessions are
test_kernel_session.py, test_partial_continue.py and the others beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fake_controller import FakeController

from pkdb.kernel_protocol import KernelLaunch, KernelReply
from pkdb.kernel_session import KernelSession
from pkdb.modes import KernelMode
from pkdb.settings import Settings
from pkdb.targets.base import FrameInfo, StopEvent

PROGRAM = """\
import pkernels as pk


@pk.workunit
def yAx(j, acc, cols, y_view, x_view, A_view):
    temp2: float = 0
    for i in range(cols):
        temp2 += A_view[j][i] * x_view[i]
    acc += y_view[j] * temp2
"""
LOOP_LINE, FOR_LINE, LAST_LINE = 8, 7, 9
PID = 1001  # the program's pid: its main thread (gdb's thread 1) is OpenMP thread 0


class Console:
    """The front end as kernel commands see it: the kernel session, pdb's breakpoints as
    the agent numbers them, and what the commands print."""

    def __init__(self, kernel: KernelSession) -> None:
        self.kernel = kernel
        self.kernel_displays: dict[str, str] = {}
        self.state: dict[str, Any] = {"breakpoints": []}
        self.settings = Settings()
        self.mode = KernelMode("openmp")
        self.argv: list[str] = []
        self.output: list[str] = []
        self.resumed = 0
        self.watched: list[list[int]] = []

    program_live = True

    def message(self, text: str) -> None:
        self.output.append(text)

    def error(self, text: str) -> None:
        self.output.append(f"*** {text}")

    def report_kernel_stop(self, event: StopEvent) -> None:
        frame = event.frame
        self.output.append(f"stopped at line {frame.line if frame else None}")

    def resume_kernel(self) -> None:
        self.resumed += 1

    def watch_partial_continue(self, threads: list[int]) -> None:
        self.watched.append(list(threads))

    def debug_rest_of_launch(self) -> None:
        pass

    def kernel_request(self, action: str, **args: Any) -> KernelReply:
        """pdb's side of ``break``: the next number of the session's single numbering."""
        assert action == "break", action
        number = 1 + max((b["number"] for b in self.state["breakpoints"]), default=0)
        bp = {"number": number, "enabled": True, "ignore": 0, **args}
        self.state["breakpoints"].append(bp)
        return KernelReply(reply_to=0, data=bp)

    def run(self, line: str) -> str:
        self.output.clear()
        self.mode.execute(self, line)
        return "\n".join(self.output)


def launch(source: Path, breakpoints: list[dict[str, Any]]) -> KernelLaunch:
    return KernelLaunch(
        id=1, pid=PID, kernel="yAx", space="openmp", operation="reduce",
        filename=str(source), first_line=4, last_line=9, library="/tmp/yax.so",
        source="kernel.cpp", index="j",
        views={"y_view": {"rank": 1, "dtype": "float64", "shape": [8]}},
        breakpoints=breakpoints,
    )  # fmt: skip


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "yax.py"
    path.write_text(PROGRAM)
    return path


@pytest.fixture
def fake(source: Path) -> FakeController:
    """Three kernel threads that have not begun: OpenMP threads 0 and 2 loop twice, 1
    once (gdb's thread 1 is the program's main thread: OpenMP thread 0)."""
    fake = FakeController(str(source), pid=PID)
    fake.add_thread(0, None, [6, 7, 8, 7, 8, 7, 9], os_tid=PID)  # the main thread
    fake.add_thread(1, None, [6, 7, 8, 7, 9])
    fake.add_thread(2, None, [6, 7, 8, 7, 8, 7, 9])
    return fake


def held_at_line(fake: FakeController, source: Path, line: int) -> Console:
    """A session whose threads all stopped at ``line`` (pdb breakpoint 1), as at the
    prompt after the first kernel stop."""
    kernel = KernelSession(make_controller=lambda space: fake)
    bp = {"number": 1, "file": str(source), "line": line, "enabled": True}
    problems = kernel.begin(launch(source, [bp]))
    assert problems == []
    stop = kernel.poll_stop(0.0)
    assert stop is not None
    console = Console(kernel)
    console.state["breakpoints"] = [bp]
    return console


# -- breakpoints: numbering and conditions ----------------------------------------------


def test_a_launch_sets_pdbs_breakpoints_with_their_conditions_in_c(fake, source):
    kernel = KernelSession(make_controller=lambda space: fake)
    breakpoints = [
        {"number": 3, "file": str(source), "line": 8, "condition": "y_view[j] > 1.5"},
        {"number": 5, "file": str(source), "line": 9, "condition": "j == 1", "ignore": 2},
        {"number": 6, "file": str(source), "line": 6, "enabled": False},
    ]
    assert kernel.begin(launch(source, breakpoints)) == []
    by_line = {b.line: b for b in fake.breakpoints() if b.line}
    assert by_line[8].condition == "(y_view.data[(j) * y_view.stride[0]] > 1.5)"
    assert by_line[9].condition == "(j == 1)" and by_line[9].ignore == 2
    assert not by_line[6].enabled
    # pdb's numbers map to the target's own, both ways
    assert kernel.pdb_number(by_line[8].number) == 3
    assert kernel.gdb_numbers[5] == by_line[9].number
    assert kernel.pdb_number(999) is None
    assert "symbols /libgomp.so" in fake.calls and "sigint stop" in fake.calls


def test_a_condition_pkdb_cannot_translate_or_the_target_refuses_stops_unconditionally(
    fake, source
):
    fake.rejected_conditions.add("(nope == 1)")
    kernel = KernelSession(make_controller=lambda space: fake)
    problems = kernel.begin(launch(source, [
        {"number": 1, "file": str(source), "line": 8, "condition": "[x for x in y_view]"},
        {"number": 2, "file": str(source), "line": 9, "condition": "nope == 1"},
    ]))  # fmt: skip
    assert problems[0].startswith("breakpoint 1: unsupported in a kernel condition")
    assert problems[0].endswith("it stops unconditionally")
    assert problems[1].startswith("breakpoint 2: the condition 'nope == 1' cannot be evaluated")
    assert [b.condition for b in fake.breakpoints() if b.line] == [None, None]


def test_setting_a_breakpoint_again_replaces_the_targets_copy(fake, source):
    kernel = KernelSession(make_controller=lambda space: fake)
    kernel.begin(launch(source, []))
    kernel.insert({"number": 4, "file": str(source), "line": 8})
    first = kernel.gdb_numbers[4]
    kernel.insert({"number": 4, "file": str(source), "line": 8, "condition": "j == 2"})
    assert f"delete {first}" in fake.calls
    assert [(b.line, b.condition) for b in fake.breakpoints() if b.line] == [(8, "(j == 2)")]
    kernel.remove(4)
    assert [b for b in fake.breakpoints() if b.line] == []


def test_break_at_a_kernel_stop_takes_pdbs_next_number(fake, source):
    console = held_at_line(fake, source, LOOP_LINE)
    assert console.run("break 9 if j == 1") == f"Breakpoint 2 at {source}:9"
    assert console.kernel.pdb_number(console.kernel.gdb_numbers[2]) == 2
    assert console.run("break 8 if [x for x in y_view]") == (
        f"Breakpoint 3 at {source}:8\n*** breakpoint 3: unsupported in a kernel condition: "
        "'[x for x in y_view]'; it stops unconditionally"
    )
    assert console.run("break x:y").startswith("*** usage: break")


# -- the first stop, and thread selection ------------------------------------------------


def test_the_first_stop_holds_every_other_thread(fake, source):
    console = held_at_line(fake, source, LOOP_LINE)
    stop = console.kernel.require_stop()
    assert stop.thread == 1 and stop.event.breakpoint == console.kernel.gdb_numbers[1]
    # all three ran to line 8 (a breakpoint) before the prompt
    assert sorted(stop.stopped) == [1, 2, 3]
    assert all(t.line == LOOP_LINE and t.stopped for t in fake.threads_by_id.values())


def test_thread_n_selects_by_openmp_number(fake, source):
    console = held_at_line(fake, source, LOOP_LINE)
    assert console.run("thread 2") == f"[Switching to thread 2 at {source}:{LOOP_LINE}]"
    assert console.kernel.require_stop().thread == 3  # gdb's id of OpenMP thread 2
    assert console.run("thread 0").startswith("[Switching to thread 0 ")
    assert console.kernel.require_stop().thread == 1
    assert console.run("thread 7") == "*** no stopped kernel thread 7 (see 'threads')"
    assert console.run("thread one") == "*** usage: thread N (see 'threads' for the numbers)"
    assert console.kernel.require_stop().thread == 1  # a refused switch moves nothing


# -- continue threads A:B --------------------------------------------------------------


@pytest.mark.parametrize(
    ("arg", "said"),
    [
        ("threads", "*** usage: continue [threads A:B]"),
        ("threads 1 2", "*** usage: continue [threads A:B]"),
        ("all", "*** usage: continue [threads A:B]"),
        ("threads a:b", "*** thread range expected, like 2:5, got 'a:b'"),
        ("threads 1:x", "*** thread range expected, like 2:5, got '1:x'"),
        ("threads 2:0", "*** thread range 2:0 runs backwards: the first number comes first"),
        ("threads 5:9", "*** no stopped kernel thread has a number from 5 to 9"),
    ],
)
def test_continue_threads_refuses_bad_ranges_and_resumes_nothing(fake, source, arg, said):
    console = held_at_line(fake, source, LOOP_LINE)
    before = list(fake.calls)
    assert console.run(f"continue {arg}") == said
    assert fake.calls == before and console.resumed == 0 and console.watched == []


def test_continue_threads_resumes_only_those_and_watches_them(fake, source):
    console = held_at_line(fake, source, LOOP_LINE)
    assert console.run("continue threads 1:2") == "Resuming threads 1, 2"
    assert console.watched == [[2, 3]] and console.resumed == 1
    assert fake.calls[-1] == "continue [2, 3]"
    assert fake.threads_by_id[1].stopped  # thread 0 stays held
    assert console.run("continue threads 0") == "Resuming thread 0"


def test_continue_threads_refuses_threads_done_with_their_iterations(fake, source):
    console = held_at_line(fake, source, LAST_LINE)
    fake.threads_by_id[2].line = None  # OpenMP thread 1 ran out of lines, held at the end
    assert console.run("continue threads 1") == (
        "*** thread 1 is outside the kernel's lines (done, or an idle runtime thread); resume "
        "a thread at a kernel line, or 'continue' them all"
    )
    assert console.resumed == 0


# -- until and next ----------------------------------------------------------------------


def test_until_refuses_lines_not_ahead_in_this_function(fake, source):
    console = held_at_line(fake, source, LOOP_LINE)
    assert console.run("until 5") == "*** line 5 is not past the current line 8"
    assert console.run("until 20") == "*** line 20 is past the end of this function (line 9)"
    assert console.run("until x") == "*** a line number expected, got 'x'"
    assert all(t.line == LOOP_LINE for t in fake.threads_by_id.values())


def test_until_runs_the_loop_out_to_the_next_line_in_this_thread_only(fake, source):
    console = held_at_line(fake, source, LOOP_LINE)
    # a breakpoint in the loop stops it on the way, as pdb's until does
    assert console.run("until") == f"stopped at line {LOOP_LINE}"
    console.kernel.remove(1)  # 'clear 1'
    assert console.run("until") == f"stopped at line {LAST_LINE}"
    assert f"break {source}:{LAST_LINE} thread 1" in fake.calls  # for this thread only
    assert fake.threads_by_id[1].line == LAST_LINE
    assert fake.threads_by_id[2].line == LOOP_LINE == fake.threads_by_id[3].line
    # its breakpoints on the lines ahead, for this thread only, are gone again
    assert [b.line for b in fake.breakpoints() if b.line] == []


def test_next_goes_line_by_line_then_says_the_thread_is_done(fake, source):
    console = held_at_line(fake, source, LAST_LINE)
    fake.threads_by_id[1].route = []  # thread 0 is at its last line
    assert console.run("next") == (
        "Thread 0 has run all its iterations; it waits at the end of the kernel for the "
        "other threads ('threads' lists them, 'continue' lets them finish)."
    )
    assert 1 in console.kernel.require_stop().finished
    assert console.run("next").startswith("*** thread 0 has run all its iterations")
    console.run("thread 1")
    fake.threads_by_id[2].route = [7]
    assert console.run("next") == "stopped at line 7"


def test_a_thread_inside_the_runtime_headers_is_in_kernel_code(fake, source, monkeypatch):
    # A thread interrupted in a runtime helper (an atomic's CAS loop, a team barrier) is
    # in a header of pkernels/include, not in kernel.cpp: it is still in the kernel.
    from pkernels.build.runtime import INCLUDE_DIR

    console = held_at_line(fake, source, LOOP_LINE)
    header = str(INCLUDE_DIR / "pkernels" / "cpu.hpp")
    helper = FrameInfo(0, "pk_rt::atomic_apply", "cpu.hpp", header, 400, 0x1000)
    elsewhere = FrameInfo(0, "gomp_team_barrier_wait", "bar.c", "/usr/lib/bar.c", 7, 0x9000)
    monkeypatch.setattr(fake, "stack", lambda thread, max_depth=None: [helper])
    assert console.kernel.in_kernel_code(2)
    monkeypatch.setattr(fake, "stack", lambda thread, max_depth=None: [elsewhere])
    assert not console.kernel.in_kernel_code(2)
