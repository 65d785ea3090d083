"""MiSession: token routing, stream collection, stray bytes, death and timeouts.

Real gdb where it can answer; a few-line stand-in debugger for what gdb never does (stray
``\\x01`` bytes as cuda-gdb emits them, dying mid-command, never answering).
"""

from __future__ import annotations

import shutil
import sys
import textwrap
import time

import pytest

from pkdb.targets.base import TargetError
from pkdb.targets.mi import MiSession, mi_quote

GDB = shutil.which("gdb")
needs_gdb = pytest.mark.skipif(GDB is None, reason="gdb is not installed (apt-get install gdb)")

# Answers every command "N-cmd" with "\x01N^done,echo="cmd"", after stream and async records
# that also carry the stray byte; "-die" exits without answering, "-mute" never answers.
FAKE_DEBUGGER = textwrap.dedent(
    r"""
    import sys
    out = sys.stdout
    out.write("\x01=thread-group-added,id=\"i1\"\n(gdb) \n")
    out.flush()
    for line in sys.stdin:
        token, _, cmd = line.strip().partition("-")
        if cmd == "die":
            sys.exit(3)
        if cmd == "mute":
            continue
        out.write('\x01~"said: %s\\n"\n' % cmd)
        out.write('\x01*stopped,reason="breakpoint-hit",thread-id="7"\n')
        out.write('\x01%s^done,echo="%s"\n(gdb) \n' % (token, cmd))
        out.flush()
    """
)


@pytest.fixture
def fake(tmp_path):
    script = tmp_path / "fake_debugger.py"
    script.write_text(FAKE_DEBUGGER)
    session = MiSession([sys.executable, str(script)], keep_async=True)
    yield session
    session.close()


def test_mi_quote():
    assert mi_quote('a "b" \\c\n') == '"a \\"b\\" \\\\c\\n"'


def test_stray_bytes_are_ignored(fake):
    result = fake.command("-hello there")
    assert result.message == "done"
    assert result.payload == {"echo": "hello there"}
    assert result.console == "said: hello there\n"
    records = []
    while (r := fake.next_async(0.5)) is not None:
        records.append((r["kind"], r["message"], r["payload"]))
        if r["message"] == "stopped" and len(records) >= 3:
            break
    assert ("notify", "thread-group-added", {"id": "i1"}) in records
    assert ("exec", "stopped", {"reason": "breakpoint-hit", "thread-id": "7"}) in records


def test_a_dying_debugger_fails_the_waiting_command_at_once(fake):
    start = time.monotonic()
    with pytest.raises(TargetError, match="not running"):
        fake.command("-die", timeout=10)
    assert time.monotonic() - start < 5
    assert not fake.alive
    with pytest.raises(TargetError):
        fake.command("-hello")


def test_command_timeout_then_the_session_goes_on(fake):
    with pytest.raises(TargetError, match="no answer"):
        fake.command("-mute", timeout=0.2)
    assert fake.command("-again").payload == {"echo": "again"}


def test_pkdb_mi_log_records_the_traffic_with_times(tmp_path, monkeypatch):
    log = tmp_path / "mi.log"
    monkeypatch.setenv("PKDB_MI_LOG", str(log))
    script = tmp_path / "fake_debugger.py"
    script.write_text(FAKE_DEBUGGER)
    with MiSession([sys.executable, str(script)]) as session:
        session.command("-hello there")
    lines = log.read_text().splitlines()
    sent = [line for line in lines if " > " in line]
    read = [line for line in lines if " < " in line]
    assert [line.split(" > ", 1)[1] for line in sent][:2] == ["1-gdb-version", "2-hello there"]
    assert any(line.endswith('2^done,echo="hello there"') for line in read)
    seconds = [float(line.split()[0]) for line in lines]
    assert seconds == sorted(seconds)
    assert all(line.split()[1] == str(session.pid) for line in lines)


def test_not_an_mi_command(fake):
    with pytest.raises(ValueError):
        fake.command("info threads")


@needs_gdb
def test_real_gdb_results_errors_and_console():
    with MiSession() as mi:
        pid = mi.pid
        assert "GNU gdb" in mi.command("-gdb-version").console
        assert mi.command("-data-evaluate-expression 6*7").payload == {"value": "42"}
        assert mi.console("print 1 + 2") == "$1 = 3\n"
        with pytest.raises(TargetError, match='Undefined command: "nosuch"') as info:
            mi.command("-interpreter-exec console nosuch")
        assert info.value.command == "-interpreter-exec console nosuch"
        with pytest.raises(TargetError, match="Undefined MI command"):
            mi.command("-no-such-command")
        # Many commands in a row: each returns as soon as its own result arrives.
        for i in range(100):
            assert mi.command(f"-data-evaluate-expression {i}+1").payload["value"] == str(i + 1)
    assert not mi.alive
    assert gone(pid)


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True
