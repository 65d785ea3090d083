"""Whether a pkdb command line asks for an MPI session (loaded before anything else:
plain ``pkdb prog.py`` must not pay for the MPI front end)."""

from __future__ import annotations

from collections.abc import Sequence

#: The options that make a session an MPI one (``--rank`` runs the rank side).
MPI_OPTIONS = frozenset({"--np", "--rank", "--launcher"})
#: pkdb's options that take a value (their value may look like anything).
_WITH_VALUE = frozenset({"-x", "--command-file", "-c", "--command", *MPI_OPTIONS})


def wants_mpi(argv: Sequence[str]) -> bool:
    """True when one of pkdb's own options (those before the program) is an MPI one."""
    index = 0
    while index < len(argv):
        token = argv[index]
        if token in ("--", "-m") or token == "-" or not token.startswith("-"):
            return False  # the program (or module) starts here
        name = token.partition("=")[0]
        if name in MPI_OPTIONS:
            return True
        index += 2 if token in _WITH_VALUE else 1
    return False


#: The MPI session's options that take a value.
_MPI_WITH_VALUE = _WITH_VALUE | {"--start-timeout", "--patience"}


def split_mpi_argv(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(pkdb's part, the program's arguments)`` of an MPI session's command line:
    pkdb's options end at the program path (as :func:`pkdb.command_line.split_argv`)."""
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":
            return list(argv[: index + 2]), list(argv[index + 2 :])
        if token == "-" or not token.startswith("-"):
            return list(argv[: index + 1]), list(argv[index + 1 :])
        index += 2 if token in _MPI_WITH_VALUE else 1
    return list(argv), []
