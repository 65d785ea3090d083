"""The command line of ``pkdb``: its options, and the commands of -c and -x.

Loaded by :mod:`pkdb.cli` after it has started the program's process (argparse is not
needed to start it, and the program loads meanwhile).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

USAGE = """\
pkdb [options] PROGRAM [ARGS...]
       pkdb [options] -m MODULE [ARGS...]"""

DESCRIPTION = """\
Debug a Python program that runs pkernels (PyKokkos-style) kernels: pdb for the
Python code, on-device debugging for the kernels, one session.

Required: the program to debug, a Python file (PROGRAM) or a module run as
'python -m' runs it (-m MODULE); what follows it are the program's arguments.
Kernel debugging needs gdb and g++ with OpenMP (cuda-gdb and CuPy for pk.Cuda
kernels); pkdb says so when one is missing.

The program starts stopped before its first line, as under 'python -m pdb'.
Every pdb command works at the (pkdb) prompt, plus: run (start or continue),
restart, info breakpoints, set NAME VALUE / show [NAME]; 'help' lists them all.
The session survives the program: when it exits or crashes, pkdb says how and
you can 'run' or 'restart' it (breakpoints are kept) or 'quit'.

Exit status: the program's, when its last run ended during the session (128 +
N when signal N killed it, as a shell says); 0 when the session ends with the
program still running (quit at a stop); 2 for a command-line error, 1 when the
program is not there."""

EPILOG = """\
Commands from -x and -c run in the order given, at the first stop; each is
shown after the prompt, so the output reads like a session. Then pkdb reads
the terminal -- or, when stdin is not a terminal, stdin, and quits at its end.

examples:
  pkdb yax.py                         debug yax.py interactively
  pkdb -c 'break 9' -c run yax.py     stop at line 9, then go on by hand
  pkdb -x session.pkdb prog.py a b    run commands from a file (CI)
  pkdb -m mypackage.run --n 10        debug a module, as python -m runs it
  pkdb --np 4 halo.py                 an MPI program: one session over 4 ranks
  python -m pkdb prog.py              the same as pkdb prog.py"""


class _OrderedCommands(argparse.Action):
    """Collects -c and -x in one list, in command-line order."""

    def __call__(self, parser, namespace, values, option_string=None):  # noqa: ANN001
        items = list(getattr(namespace, self.dest) or [])
        items.append((self.const, values))
        setattr(namespace, self.dest, items)


class _Version(argparse.Action):
    """--version: the versions, found only when asked for (pkdb's start does not wait
    for gdb --version)."""

    def __call__(self, parser, namespace, values, option_string=None):  # noqa: ANN001
        print(version_text())
        parser.exit(0)


def add_session_options(parser: argparse.ArgumentParser) -> None:
    """The options of a debugging session, whether of one program or of MPI ranks:
    ``-x FILE``, ``-c CMD`` (kept in their order in ``commands``) and
    ``--debug-all-kernels``."""
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pkdb",
        usage=USAGE,
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_session_options(parser)
    parser.add_argument(
        "-m",
        metavar="MODULE",
        dest="module",
        help="debug MODULE run as a script, as 'python -m MODULE' runs it (instead of PROGRAM)",
    )
    parser.add_argument(
        "--np",
        metavar="N",
        help="debug an MPI program (mpi4py) over N ranks, in one session; its own "
        "options: pkdb --np N --help",
    )
    parser.add_argument(
        "--version",
        action=_Version,
        nargs=0,
        help="show the versions of pkdb, pkernels, Python and gdb, and exit",
    )
    parser.add_argument("program", nargs="?", help="the Python program to debug (a file)")
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
        if token == "-m":  # -m MODULE ends pkdb's part, as in `python -m`
            return list(argv[: index + 2]), list(argv[index + 2 :])
        if token == "-" or not token.startswith("-"):
            return list(argv[: index + 1]), list(argv[index + 1 :])
        index += 2 if token in _OPTIONS_WITH_VALUE else 1
    return list(argv), []


def version_text() -> str:
    """``pkdb 0.1.0 (pkernels 0.1.0, Python 3.11.7, gdb 13.1)``."""
    import platform
    import re
    import shutil
    import subprocess

    from pkernels import __version__

    gdb = shutil.which("gdb")
    found = "no gdb"
    if gdb is not None:
        try:
            first = subprocess.run(
                [gdb, "--version"], capture_output=True, text=True, timeout=10
            ).stdout.splitlines()[0]
            number = re.search(r"(\d+\.\d+(?:\.\d+)?)\s*$", first)
            found = f"gdb {number.group(1) if number else first}"
        except (OSError, IndexError, subprocess.SubprocessError):
            found = "gdb (version unknown)"
    python = platform.python_version()
    return f"pkdb {__version__} (pkernels {__version__}, Python {python}, {found})"


def read_commands(items: Sequence[tuple[str, str]]) -> list[str]:
    """The command lines of the -c / -x options, in order. OSError for a bad file."""
    lines: list[str] = []
    for kind, value in items:
        if kind == "command":
            lines.append(value)
            continue
        # Bytes that are not UTF-8 come through as surrogates: refused line by line.
        with open(value, encoding="utf-8", errors="surrogateescape") as script:
            for raw in script:
                line = raw.strip()
                if line and not line.startswith("#"):
                    lines.append(line)
    return lines
