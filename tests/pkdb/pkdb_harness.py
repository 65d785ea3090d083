"""Drive real pkdb sessions in tests: through a PTY (pexpect) or as a plain subprocess."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pexpect

SRC = Path(__file__).resolve().parents[2] / "src"
PROMPT = r"\(pkdb\) "
TIMEOUT = 10  # seconds for any one expected output; sessions take well under 1 s


def pkdb_env(home: Path) -> dict[str, str]:
    """The environment of a test session: no ~/.pdbrc, a dumb terminal (no escape
    sequences from readline), and this checkout's pkdb importable in the debuggee."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONSTARTUP", "PYTHONINSPECT"}}
    env["HOME"] = str(home)
    env["TERM"] = "dumb"
    # A compile slowed down by a loaded machine would add a line to exact transcripts.
    env["PKERNELS_COMPILE_NOTICE"] = "off"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    return env


def write(directory: Path, name: str, source: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(source).lstrip("\n"))
    return path


def normalize(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "")


class PtySession:
    """``python -m pkdb`` on a pseudo-terminal, waiting for prompts like a user."""

    def __init__(self, program: Path, *args: str, options: tuple[str, ...] = ()) -> None:
        self.program = program
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "pkdb", *options, str(program), *args],
            cwd=str(program.parent),
            env=pkdb_env(program.parent),
            encoding="utf-8",
            codec_errors="replace",  # the terminal echoes bytes a test types that are not UTF-8
            timeout=TIMEOUT,
            dimensions=(24, 200),
        )
        self.child.delaybeforesend = None  # pkdb reads whole lines; no need to pace input
        self.banner = self.wait_prompt()

    def wait_prompt(self, prompt: str = PROMPT) -> str:
        """Everything printed up to the next prompt."""
        self.child.expect(prompt)
        return normalize(self.child.before)

    def cmd(self, line: str, prompt: str = PROMPT) -> str:
        """Type ``line``; its output up to the next prompt (without the echoed line)."""
        self.child.sendline(line)
        output = self.wait_prompt(prompt)
        _echo, _, rest = output.partition("\n")
        return rest

    def quit(self) -> int:
        """``quit``; pkdb's exit status."""
        self.child.sendline("quit")
        self.child.expect(pexpect.EOF)
        self.child.close()
        return self.child.exitstatus

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


def run_scripted(
    program: Path,
    *options: str,
    args: tuple[str, ...] = (),
    stdin: str | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """pkdb without a terminal (stdout and stderr merged, as a CI log would show);
    ``env``: variables to add to :func:`pkdb_env`'s."""
    return subprocess.run(
        [sys.executable, "-m", "pkdb", *options, str(program), *args],
        cwd=program.parent,
        env=pkdb_env(program.parent) | (env or {}),
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=30,
    )


def process_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (a zombie counts as gone: only an init that
    never reaps keeps it in the table)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def gdb_children(pid: int) -> set[int]:
    """gdb processes started by the pkdb front end ``pid`` (alive, not zombies)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        state, ppid = fields[0], int(fields[1])
        if ppid == pid and state != "Z" and b"interpreter=mi3" in cmdline:
            found.add(int(entry.name))
    return found


def kernel_stop(file: str, line: int | str, why: str = "", detail: str | None = None) -> str:
    """A regex of a CPU kernel stop as pkdb prints it, in pdb's form::

        > /path/FILE(LINE)function()
        OpenMP thread N (DETAIL) WHY

    ``line`` and ``detail`` are regexes (``detail``: what the parentheses hold, e.g.
    ``j=10``; by default any, or none); group 1 is the thread number, then ``line``'s and
    ``detail``'s groups."""
    details = r"(?: \([^)]*\))?" if detail is None else rf" \({detail}\)"
    tail = f" {why}" if why else ""
    return (
        rf"> \S*{re.escape(file)}\({line}\)\S*\(\)\n(?:OpenMP|Serial) thread (\d+)"
        rf"{details}{tail}"
    )


def program_pid(session: PtySession) -> int:
    """The pid of the program the pkdb of ``session`` debugs (its child that is not gdb)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == session.child.pid and b"interpreter=mi3" not in cmdline:
            return int(entry.name)
    raise AssertionError("pkdb has no program process")


def cpu_seconds(pid: int) -> float:
    """CPU time ``pid`` (all its threads) has used."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def wait_busy(session: PtySession, seconds: float = 0.3, timeout: float = 30.0) -> None:
    """Wait until the program has run ``seconds`` of CPU time from now: a kernel it just
    launched is running (rather than sleeping a guessed while)."""
    pid = program_pid(session)
    start = cpu_seconds(pid)
    assert wait_until(lambda: cpu_seconds(pid) >= start + seconds, timeout), "not running"


def row(table: str, label: str) -> list[str]:
    """The cells of the row starting with ``label`` of a table pkdb printed
    (``parallel_launch``'s), split at 2+ blanks."""
    for line in table.splitlines():
        if line.startswith(label):
            return re.split(r"\s{2,}", line[len(label) :].strip())
    raise AssertionError(f"no row {label!r} in:\n{table}")


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


# The bug of the paper's Ewald code: a particle exactly on the box boundary gets cell
# index ncells, one past the end of `counter`.
EWALD = """
import numpy as np
import pkernels as pk


@pk.workunit
def bin_particles(p, pos, box, ncells, counter):
    cell = int(pos[p] / box * ncells)
    pk.atomic_add(counter, [cell], 1)


pos = np.linspace(0.0, 1.0, 33)
counter = np.zeros(8, dtype=np.int64)
pk.parallel_for(len(pos), bin_particles, pos=pos, box=1.0, ncells=8, counter=counter)
print("counts", counter)
"""
