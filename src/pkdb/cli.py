"""Command line of ``pkdb`` / ``python -m pkdb``."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from .session import Debuggee

DESCRIPTION = """\
Debug a Python program that runs pkernels (PyKokkos-style) kernels: pdb for the
Python code, on-device debugging for the kernels, one session.

The program starts stopped before its first line, as under 'python -m pdb'.
Every pdb command works at the (pkdb) prompt, plus: run (start or continue),
restart, info breakpoints, set NAME VALUE / show [NAME]; 'help' lists them all.
The session survives the program: when it exits or crashes, pkdb says how and
you can 'run' or 'restart' it (breakpoints are kept) or 'quit'."""

EPILOG = """\
Commands from -x and -c run in the order given, at the first stop; each is
shown after the prompt, so the output reads like a session. Then pkdb reads
the terminal -- or, when stdin is not a terminal, stdin, and quits at its end.

examples:
  pkdb yax.py                         debug yax.py interactively
  pkdb -c 'break 9' -c run yax.py     stop at line 9, then go on by hand
  pkdb -x session.pkdb prog.py a b    run commands from a file (CI)
  python -m pkdb prog.py              the same as pkdb prog.py"""


class _OrderedCommands(argparse.Action):
    """Collects -c and -x in one list, in command-line order."""

    def __call__(self, parser, namespace, values, option_string=None):  # noqa: ANN001
        items = list(getattr(namespace, self.dest) or [])
        items.append((self.const, values))
        setattr(namespace, self.dest, items)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pkdb",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-x",
        "--command-file",
        metavar="FILE",
        dest="commands",
        action=_OrderedCommands,
        const="file",
        help="run the debugger commands in FILE, one per line (blank lines and "
        "lines starting with # are skipped); may be repeated",
    )
    parser.add_argument(
        "-c",
        "--command",
        metavar="CMD",
        dest="commands",
        action=_OrderedCommands,
        const="command",
        help="run the debugger command CMD; may be repeated",
    )
    parser.add_argument(
        "--debug-all-kernels",
        action="store_true",
        help="build and debug every kernel, not only kernels with a breakpoint "
        "(the same as 'set debug_all_kernels on')",
    )
    parser.add_argument("program", help="the Python program to debug")
    parser.add_argument(
        "args", nargs=argparse.REMAINDER, help="arguments of the program (its sys.argv[1:])"
    )
    return parser


_OPTIONS_WITH_VALUE = frozenset({"-x", "--command-file", "-c", "--command"})


def split_argv(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(pkdb's part, the program's arguments)``: pkdb's options end at the program
    path, and what follows is passed on verbatim (argparse would drop a ``--``)."""
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":
            return list(argv[: index + 2]), list(argv[index + 2 :])
        if token == "-" or not token.startswith("-"):
            return list(argv[: index + 1]), list(argv[index + 1 :])
        index += 2 if token in _OPTIONS_WITH_VALUE else 1
    return list(argv), []


def read_commands(items: Sequence[tuple[str, str]]) -> list[str]:
    """The command lines of the -c / -x options, in order. OSError for a bad file."""
    lines: list[str] = []
    for kind, value in items:
        if kind == "command":
            lines.append(value)
            continue
        with open(value, encoding="utf-8") as script:
            for raw in script:
                line = raw.strip()
                if line and not line.startswith("#"):
                    lines.append(line)
    return lines


class _SessionKilled(BaseException):
    """SIGTERM or SIGHUP reached the front end."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_killed(signum: int, frame: object) -> None:
    raise _SessionKilled(signum)


def main(argv: Sequence[str] | None = None) -> int:
    """Run a pkdb session; the exit status of pkdb itself."""
    # Start the program's process first, as a fork of this one (before anything is
    # loaded or any thread runs): it loads the agent while the front end loads. Whatever
    # ends this function before the session takes it over ends the process too.
    debuggee = Debuggee.fork()
    try:
        return _main(argv, debuggee)
    finally:
        if debuggee.poll() is None and not debuggee.adopted:
            debuggee.terminate()


def _main(argv: Sequence[str] | None, debuggee: Debuggee) -> int:
    parser = build_parser()
    own, program_args = split_argv(sys.argv[1:] if argv is None else argv)
    options = parser.parse_args(own)
    options.args = program_args
    if not os.path.exists(options.program):
        parser.exit(1, f"pkdb: error: {options.program} does not exist\n")
    if os.path.isdir(options.program):
        parser.exit(1, f"pkdb: error: {options.program} is a directory\n")
    try:
        script = read_commands(options.commands or [])
    except OSError as exc:
        parser.exit(1, f"pkdb: error: cannot read commands: {exc}\n")

    from .protocol import ENTRY_STOP, Start
    from .settings import Settings

    settings = Settings()
    if options.debug_all_kernels:
        settings.set_value("debug_all_kernels", True)
    # The program may load and stop at its first line while the front end loads.
    start = Start(
        argv=[options.program, *options.args], entry=ENTRY_STOP, state={},
        settings=settings.as_dict(),
    )  # fmt: skip
    debuggee.send(start)
    debuggee.sent_start = start

    from .frontend import Frontend

    frontend = Frontend(
        [options.program, *options.args], settings=settings, script=script, debuggee=debuggee
    )
    debuggee.adopted = True  # the front end ends it from now on
    # Being killed must still end the debuggee: unwind through the `finally` below.
    previous = {
        signum: signal.signal(signum, _raise_killed) for signum in (signal.SIGTERM, signal.SIGHUP)
    }
    try:
        frontend.cmdloop()
    except _SessionKilled as killed:
        return 128 + killed.signum
    finally:
        frontend.close()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
