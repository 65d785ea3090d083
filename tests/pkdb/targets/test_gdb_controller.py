"""GdbController against a real gdb attached to a real OpenMP kernel loaded by Python.

The kernel library maps its statements to Python lines with ``#line`` directives (as
pkernels does), so breakpoints, frames and steps speak Python lines.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import time

import pytest

from pkdb.targets import GdbController, StopEvent, TargetError

N, M = 32, 4
EXPECTED = N * sum(range(M))  # A = 1, x = 0..M-1, y = 1


def process_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (absent, or a zombie nobody reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def hit(gdb: GdbController, timeout: float = 10.0, thread_id: int | None = None) -> StopEvent:
    event = gdb.wait_for_stop(timeout, thread_id)
    assert event is not None, "no stop within the timeout"
    return event


def both_threads_at(gdb: GdbController, line: int) -> list[StopEvent]:
    """Wait until both kernel threads have stopped (at ``line``); their events."""
    events = [hit(gdb), hit(gdb)]
    for e in events:
        assert e.reason == "breakpoint-hit", e
        assert e.frame is not None and e.frame.line == line
    assert events[0].thread_id != events[1].thread_id
    return events


def test_attach_leaves_every_thread_running(attached, debuggee):
    assert attached.attached_pid == debuggee.pid
    threads = attached.threads()
    # main thread (OpenMP master), the agent thread, one OpenMP worker
    assert len(threads) >= 3
    assert all(t.state == "running" for t in threads)
    assert attached.stopped_threads() == []
    assert {t.os_tid for t in threads} >= {debuggee.pid, debuggee.agent_tid}
    assert attached.poll_stop() is None
    debuggee.send("ping")
    debuggee.expect("pong")


def test_breakpoint_on_python_line_holds_only_kernel_threads(attached, debuggee, kernels):
    bp = attached.insert_breakpoint("yax.py", 7)
    assert (bp.number, bp.file, bp.line, bp.pending) == (1, str(kernels.yax_py), 7, False)
    assert bp.location == "yax.py:7"
    debuggee.send("yax")
    first, second = both_threads_at(attached, 7)
    assert first.breakpoint == 1
    assert first.frame.fullname == str(kernels.yax_py)
    assert first.frame.function == "py_yAx"
    stopped = set(attached.stopped_threads())
    assert stopped == {first.thread_id, second.thread_id}

    by_tid = {t.os_tid: t for t in attached.threads()}
    agent = by_tid[debuggee.agent_tid]
    assert agent.state == "running" and agent.frame is None
    assert by_tid[debuggee.pid].state == "stopped"  # the main thread is the OpenMP master
    # The agent thread still runs while the kernel is held, on the live arrays...
    debuggee.send("ping")
    assert debuggee.expect("pong") == f"pong {float(N)}"
    debuggee.send(f"sety {N - 1} 2.0")  # ... and a write there is seen by the kernel.
    debuggee.expect("ok")

    attached.delete_breakpoint(bp.number)
    assert attached.breakpoints() == []
    attached.continue_()
    assert debuggee.expect("result") == f"result {float(EXPECTED + sum(range(M)))}"


def test_inspect_a_stopped_kernel_thread(attached, debuggee, kernels):
    attached.insert_breakpoint(str(kernels.yax_py), 8)
    debuggee.send("yax")
    event = hit(attached)
    tid = event.thread_id
    j = int(attached.evaluate("j", tid))
    assert 0 <= j < N
    assert attached.evaluate("M * 2", tid) == str(2 * M)
    assert attached.evaluate("x_view[1] + x_view[2]", tid) == "3"
    assert attached.locals(tid) == {"i": "0", "temp2": "0"}
    args = attached.args(tid)
    assert list(args) == ["j", "acc", "M", "A_view", "x_view", "y_view"]
    assert args["j"] == str(j) and args["M"] == str(M)

    frames = attached.stack(tid)
    assert (frames[0].level, frames[0].function, frames[0].line) == (0, "py_yAx", 8)
    assert frames[0].location == f"{kernels.yax_py}:8"
    assert frames[1].fullname == str(kernels.dir / "yax_gen.cpp")  # the OpenMP region
    assert "_omp_fn" in frames[1].function
    assert len(attached.stack(tid, max_depth=2)) == 2

    infos = {t.id: t for t in attached.threads()}
    assert infos[tid].stopped and infos[tid].frame.line == 8
    attached.select_thread(tid)
    assert [t.id for t in attached.threads() if t.current] == [tid]
    assert attached.evaluate("j") == str(j)  # the selected thread is the default

    address = int(attached.evaluate("(long) x_view", tid))
    data = attached.read_memory(address, 8 * M, tid)
    assert struct.unpack(f"{M}d", data) == tuple(float(i) for i in range(M))

    text = attached.send_raw("info threads")
    assert "Target Id" in text and "yax.py:8" in text and "(running)" in text
    assert attached.send_raw("print j + 1", tid).strip() == f"$1 = {j + 1}"
    assert attached.send_raw(f"-data-evaluate-expression --thread {tid} j") == (
        f'^done,value="{j}"\n'
    )
    with pytest.raises(TargetError, match='No symbol "nosuch" in current context'):
        attached.evaluate("nosuch", tid)
    with pytest.raises(TargetError, match="nosuch"):
        attached.send_raw("print nosuch", tid)


def test_code_questions_and_thread_states_at_a_stop(attached, debuggee, kernels):
    """The protocol's questions that commands used to put to gdb as CLI text or /proc."""
    attached.insert_breakpoint("yax.py", 8)
    debuggee.send("yax")
    event = hit(attached)
    tid = event.thread_id
    here = attached.stack(tid)[0]
    assert attached.line_of_address(here.address, tid) == (str(kernels.yax_py), 8)
    assert (attached.function_at(here.address) or "").split("(")[0] == "py_yAx"
    assert attached.function_at(0x10) is None
    assert attached.type_of("M * 0.5", tid) == "double"
    assert attached.type_of("j", tid) == attached.variable_types(tid)["j"]
    attached.load_symbols("/libgomp.so")  # gdb reads them (already read: no error)
    # The agent thread waits for a command in a read: asleep; the held thread is not.
    agent = next(t.id for t in attached.threads() if t.os_tid == debuggee.agent_tid)
    assert attached.thread_asleep(agent) and not attached.thread_asleep(tid)
    attached.delete_breakpoint(attached.breakpoints()[0].number)
    attached.continue_()
    assert debuggee.expect("result") == f"result {float(EXPECTED)}"


def test_conditional_breakpoint(attached, debuggee):
    bp = attached.insert_breakpoint("yax.py", 7, condition="j == 10")
    assert bp.condition == "j == 10"
    debuggee.send("yax")
    event = hit(attached)
    assert event.reason == "breakpoint-hit" and event.frame.line == 7
    assert attached.evaluate("j", event.thread_id) == "10"
    assert attached.wait_for_stop(0.2) is None  # no other thread satisfies it
    (listed,) = attached.breakpoints()
    assert (listed.condition, listed.hit_count) == ("j == 10", 1)

    attached.set_condition(bp.number, "j == 20")
    assert attached.breakpoints()[0].condition == "j == 20"
    attached.continue_([event.thread_id])
    event = hit(attached)
    assert attached.evaluate("j", event.thread_id) == "20"
    attached.set_condition(bp.number, None)
    assert attached.breakpoints()[0].condition is None
    attached.delete_breakpoint(bp.number)
    attached.continue_()
    assert debuggee.expect("result") == f"result {float(EXPECTED)}"


def test_step_and_next_move_one_thread_by_python_line(attached, debuggee):
    bp = attached.insert_breakpoint("yax.py", 7)
    debuggee.send("yax")
    mover, held = both_threads_at(attached, 7)
    attached.delete_breakpoint(bp.number)
    held_j = attached.evaluate("j", held.thread_id)
    tid = mover.thread_id

    lines = []
    for command in (attached.next, attached.next, attached.step, attached.next):
        command(tid)
        event = hit(attached, thread_id=tid)
        assert event.reason == "end-stepping-range" and event.thread_id == tid
        lines.append(event.frame.line)
    assert lines == [8, 7, 8, 7]  # the loop, line by Python line
    assert attached.evaluate("i", tid) == "1"  # stopped before the increment of line 7

    # Until the loop is done, then past the last line of the kernel body.
    for _ in range(5):
        attached.next(tid)
        if hit(attached, thread_id=tid).frame.line == 9:
            break
    assert attached.evaluate("temp2", tid) == str(sum(range(M)))
    attached.finish(tid)
    event = hit(attached, thread_id=tid)
    assert event.reason == "function-finished"
    assert "_omp_fn" in event.frame.function and event.frame.file.endswith("yax_gen.cpp")

    # The other kernel thread never moved.
    assert held.thread_id in attached.stopped_threads()
    assert attached.evaluate("j", held.thread_id) == held_j
    assert attached.stack(held.thread_id)[0].line == 7
    attached.continue_()
    assert debuggee.expect("result") == f"result {float(EXPECTED)}"


def test_continue_only_some_threads(attached, debuggee):
    bp = attached.insert_breakpoint("yax.py", 6)
    debuggee.send("yax")
    a, b = both_threads_at(attached, 6)
    ja, jb = (int(attached.evaluate("j", e.thread_id)) for e in (a, b))
    assert {ja % 2, jb % 2} == {0, 1}  # schedule(static, 1) over two threads

    attached.continue_([a.thread_id])
    again = hit(attached)
    assert again.thread_id == a.thread_id and again.breakpoint == bp.number
    assert int(attached.evaluate("j", a.thread_id)) == ja + 2
    assert int(attached.evaluate("j", b.thread_id)) == jb  # held all along
    assert set(attached.stopped_threads()) == {a.thread_id, b.thread_id}

    attached.disable_breakpoint(bp.number)
    assert attached.breakpoints()[0].enabled is False
    # A running thread is skipped. (With the breakpoint disabled first: enabled, `a` could
    # hit it again between the two continues, and be resumed twice: a race under load.)
    attached.continue_([a.thread_id, a.thread_id])
    assert attached.stopped_threads() == [b.thread_id]
    attached.continue_()
    assert debuggee.expect("result") == f"result {float(EXPECTED)}"
    assert attached.poll_stop() is None
    assert attached.breakpoints()[0].hit_count == 3


def test_temporary_breakpoint_and_interrupt(attached, debuggee):
    bp = attached.insert_breakpoint("yax.py", 9, temporary=True)
    assert bp.temporary
    debuggee.send("yax")
    event = hit(attached)
    assert event.frame.line == 9 and event.breakpoint == bp.number
    assert attached.breakpoints() == []
    attached.continue_()
    assert debuggee.expect("result") == f"result {float(EXPECTED)}"

    agent = next(t.id for t in attached.threads() if t.os_tid == debuggee.agent_tid)
    attached.interrupt([agent])
    event = hit(attached, thread_id=agent)
    assert event.reason == "signal-received" and event.thread_id == agent
    assert event.interrupted and event.signal_name == "0"
    assert attached.stopped_threads() == [agent]
    attached.continue_([agent])
    debuggee.send("ping")
    debuggee.expect("pong")

    attached.interrupt()
    everyone = {t.id for t in attached.threads()}
    stopped = set()
    while stopped != everyone:
        stopped.add(hit(attached).thread_id)
    assert attached.drain_stops(0.05) == []
    assert all(t.stopped for t in attached.threads())
    debuggee.send("ping")
    assert debuggee.silent(0.2)
    attached.continue_()
    debuggee.expect("pong")


def test_pending_breakpoint_in_a_library_loaded_later(attached, debuggee, kernels):
    bp = attached.insert_breakpoint("faulty.py", 11, condition="j == 7")
    assert bp.pending and bp.file is None and bp.locations == 0
    debuggee.send(f"faulty {kernels.faulty_so} 0")
    event = hit(attached)
    assert event.frame.fullname == str(kernels.faulty_py) and event.frame.line == 11
    assert attached.evaluate("j", event.thread_id) == "7"
    (resolved,) = attached.breakpoints()
    assert not resolved.pending and resolved.line == 11
    attached.delete_breakpoint(bp.number)
    attached.continue_()
    assert debuggee.expect("result") == f"result {float(N - 1)}"


def test_bounds_check_hook_stops_at_the_python_line(attached, debuggee, kernels):
    bp = attached.set_breakpoint_on_function("pk_bounds_fail")
    assert bp.pending and bp.location == "pk_bounds_fail"
    debuggee.send(f"faulty {kernels.faulty_so} 1")
    event = hit(attached)
    assert event.reason == "breakpoint-hit" and event.frame.function == "pk_bounds_fail"
    args = attached.args(event.thread_id)
    assert (args["index"], args["extent"]) == ("105", str(N))
    assert args["view"].endswith('"x"')  # e.g. 0x7f... "x"
    assert attached.evaluate("view", event.thread_id).endswith('"x"')
    frames = attached.stack(event.thread_id)
    kernel_frame = next(f for f in frames if f.file == str(kernels.faulty_py))
    assert kernel_frame.line == 8 and kernel_frame.function == "py_faulty"
    assert attached.locals(event.thread_id, kernel_frame.level) == {"k": "105"}
    attached.continue_()
    debuggee.expect("result")


def test_segfault_stops_the_faulting_thread_at_the_python_line(attached, debuggee, kernels):
    debuggee.send(f"faulty {kernels.faulty_so} 2")
    event = hit(attached)
    assert (event.reason, event.signal_name) == ("signal-received", "SIGSEGV")
    assert not event.interrupted
    assert event.frame.file == str(kernels.faulty_py) and event.frame.line == 10
    assert attached.evaluate("j", event.thread_id) == "3"
    assert attached.locals(event.thread_id) == {"k": "103"}
    # The agent thread is still alive, the session goes on.
    debuggee.send("ping")
    debuggee.expect("pong")


@pytest.mark.parametrize("code", [0, 9])
def test_process_exit_is_a_stop_event(attached, debuggee, code):
    debuggee.send(f"exit {code}")
    debuggee.expect("bye")
    event = hit(attached)
    assert event.reason == "exited" and event.exit_code == code and event.exited
    assert attached.attached_pid is None
    with pytest.raises(TargetError, match="not attached"):
        attached.continue_()


def test_close_detaches_and_leaves_no_gdb(gdb, debuggee):
    gdb.attach(debuggee.pid)
    gdb.insert_breakpoint("yax.py", 8)
    debuggee.send("yax")
    hit(gdb)
    gdb_pid = gdb.gdb_pid
    gdb.close()
    gdb.close()  # idempotent
    assert not gdb.alive and process_gone(gdb_pid)
    # Detached: the held threads run on, the breakpoint is gone from the process.
    assert debuggee.expect("result") == f"result {float(EXPECTED)}"
    debuggee.send("yax")
    assert debuggee.expect("result") == f"result {float(EXPECTED)}"
    with pytest.raises(TargetError):
        gdb.threads()


def test_detach_then_attach_again(gdb, debuggee):
    gdb.attach(debuggee.pid)
    with pytest.raises(TargetError, match="already attached"):
        gdb.attach(debuggee.pid)
    gdb.detach()
    assert gdb.attached_pid is None
    gdb.attach(debuggee.pid)
    gdb.insert_breakpoint("yax.py", 9, condition="j == 31")
    debuggee.send("yax")
    event = hit(gdb)
    assert gdb.evaluate("temp2", event.thread_id) == str(sum(range(M)))
    gdb.detach()
    assert debuggee.expect("result") == f"result {float(EXPECTED)}"


def test_attach_errors(gdb):
    with pytest.raises(TargetError) as info:
        gdb.attach(2**22 + 12345)  # no such process
    assert "ptrace" in info.value.message or "No such process" in info.value.message
    assert gdb.attached_pid is None and gdb.alive


OWNER = """
import os, signal, sys
sys.path.insert(0, {src!r})
from pkdb.targets import GdbController
g = GdbController()
g.attach({pid})
g.insert_breakpoint("yax.py", 8)
print(g.gdb_pid, flush=True)
event = g.wait_for_stop(10)
print("held", event.thread_id, flush=True)
if {how!r} == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
sys.exit(0)  # without closing the controller
"""


@pytest.mark.parametrize("how", ["sigkill", "exit"])
def test_gdb_dies_with_its_owner(kernels, debuggee, how):
    """An owner that dies (or forgets close) while a kernel thread is held leaks no gdb,
    and gdb detaches on its way out: the kernel runs to the end."""
    src = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "src"))
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER.format(src=src, pid=debuggee.pid, how=how)],
        stdout=subprocess.PIPE,
        text=True,
    )
    gdb_pid = int(owner.stdout.readline())
    debuggee.send("yax")
    assert owner.stdout.readline().startswith("held")
    owner.wait(10)
    deadline = time.monotonic() + 5
    while not process_gone(gdb_pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert process_gone(gdb_pid)
    assert debuggee.expect("result") == f"result {float(EXPECTED)}"
    debuggee.send("yax")
    assert debuggee.expect("result") == f"result {float(EXPECTED)}"


def test_gdb_missing():
    with pytest.raises(TargetError, match="not found"):
        GdbController("no-such-gdb-binary")
