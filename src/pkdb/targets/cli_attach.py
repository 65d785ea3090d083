"""Attach through the debugger's command line, then speak MI on a second user interface.

Why: cuda-gdb 13 crashes (SIGSEGV in ``mi_interp::on_target_resumed``) when it attaches
to a process that has a CUDA context while an MI interpreter is one of its user
interfaces: at attach it calls into the process to start the CUDA debugger API, the
process creates a thread during that call, and MI's notification of it faults
(``-target-attach``, ``attach`` through ``-interpreter-exec``, synchronous or not: each
crashed on an H200 machine; the command-line ``attach`` works). So the debugger starts
with its command line on pipes, attaches there, and only then opens an MI interface on a
pseudo-terminal (gdb's ``new-ui mi3 TTY``), which :class:`~pkdb.targets.mi.MiSession`
speaks from then on. gdb accepts the same sequence, which the tests use.
"""

from __future__ import annotations

import os
import pty
import subprocess
import threading
import time
import tty
from collections.abc import Sequence

from .errors import TargetError
from .mi import MiSession
from .spawn import spawn_debugger

#: The command-line settings every session gets before it attaches (mi-async and
#: non-stop cannot change once a process is attached).
CLI_BASE = (
    "set mi-async on",
    "set pagination off",
    "set confirm off",
    "set width 0",
    "set height 0",
)


#: What the command line says when an attach is refused.
_REFUSALS = ("ptrace:", "Can't attach", "No such process", "not permitted")


def cli_command(mi_command: str) -> str:
    """The command-line form of an MI setting (``-gdb-set x y`` -> ``set x y``;
    ``-interpreter-exec console "C"`` -> ``C``)."""
    text = mi_command.strip()
    if text.startswith("-gdb-set "):
        return "set " + text[len("-gdb-set ") :]
    prefix = '-interpreter-exec console "'
    if text.startswith(prefix) and text.endswith('"'):
        return text[len(prefix) : -1].replace('\\"', '"').replace("\\\\", "\\")
    raise ValueError(f"no command-line form for {mi_command!r}")


class CommandLine:
    """A debugger's command-line interface on pipes: commands in, their output back (a
    marker echoed after each command tells where its output ends)."""

    def __init__(self, argv: Sequence[str]) -> None:
        try:
            self.process = spawn_debugger(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,  # errors in order with the output
                # Own session: a Ctrl-C at the terminal must not reach the debugger.
                start_new_session=True,
            )
        except OSError as exc:
            raise TargetError(f"cannot start {argv[0]}: {exc}") from exc
        self._lines: list[str] = []
        self._changed = threading.Condition()
        self._count = 0
        # Lines are kept while a command runs only: once the MI session owns the process,
        # the command line still prints every stop, which nobody reads.
        self._running = False
        threading.Thread(target=self._read, name="cli-reader", daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        for raw in iter(stream.readline, b""):
            with self._changed:
                if not self._running:
                    continue
                self._lines.append(raw.decode(errors="replace").rstrip("\n"))
                del self._lines[:-2000]  # what a long attach prints is not kept
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def run(self, command: str, timeout: float) -> list[str]:
        """Run ``command``; the lines it printed. Raises :class:`TargetError` when the
        debugger ends or does not finish within ``timeout`` seconds."""
        self._count += 1
        marker = f"PKDB-DONE-{self._count}"
        stdin = self.process.stdin
        assert stdin is not None
        with self._changed:
            self._running = True
        try:
            stdin.write(f"{command}\necho {marker}\\n\n".encode())
            stdin.flush()
        except OSError as exc:
            raise TargetError(f"the debugger is gone: {exc}", command) from exc
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for i, line in enumerate(self._lines):
                    if line.endswith(marker):
                        output, self._lines = self._lines[:i], []
                        self._running = False
                        return output
                if self.process.poll() is not None:
                    raise TargetError(f"the debugger ended while running {command!r}", command)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TargetError(f"no answer to {command!r} within {timeout} s", command)
                self._changed.wait(min(left, 0.5))


def attach_through_cli(
    argv: Sequence[str],
    pid: int,
    settings: Sequence[str],
    timeout: float = 60.0,
    after_attach: Sequence[str] = (),
) -> tuple[CommandLine, MiSession]:
    """Start the debugger ``argv`` (its command line), apply ``settings`` (command-line
    commands), attach to ``pid``, run ``after_attach``, then open an MI interface on a
    new pseudo-terminal.
    Returns the command line (idle from then on: the MI session owns the process) and
    the MI session. The process is stopped (all of it, or every thread in non-stop mode).
    """
    cli = CommandLine(argv)
    try:
        for command in (*CLI_BASE, *settings):
            cli.run(command, timeout)
        output = cli.run(f"attach {int(pid)}", timeout)
        refused = [line for line in output if any(word in line for word in _REFUSALS)]
        if refused:
            raise TargetError(f"cannot attach to process {pid}: {refused[0].strip()}")
        for command in after_attach:
            cli.run(command, timeout)
        master, slave = pty.openpty()
        try:
            tty.setraw(slave)  # no echo, no line editing: MI records pass as written
            cli.run(f"new-ui mi3 {os.ttyname(slave)}", timeout)
        finally:
            os.close(slave)  # the debugger opened the terminal itself
        session = MiSession([str(argv[0])], process=cli.process, channel=master)
        if not session.command("-thread-info", timeout).payload.get("threads"):
            session.close()
            raise TargetError(f"cannot attach to process {pid}: {' '.join(output)[-300:]}")
    except BaseException:
        _end(cli)
        raise
    return cli, session


def _end(cli: CommandLine) -> None:
    process = cli.process
    if process.poll() is None:
        try:
            if process.stdin:
                process.stdin.close()
            process.wait(3)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()
