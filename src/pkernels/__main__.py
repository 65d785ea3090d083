"""``python -m pkernels prog.py [args...]`` (or ``python -m pkernels -m module [args...]``):
run a program written for PyKokkos unchanged, with ``import pykokkos`` giving pkernels
(see :mod:`pkernels.pykokkos_alias`). The program sees ``sys.argv`` as ``python
prog.py args...`` would give it, and its own folder first on ``sys.path``.

``python -m pkernels cache info|clear``: the kernel cache (see
:mod:`pkernels.cache_command`); a program named ``cache`` runs as ``./cache``."""

from __future__ import annotations

import os
import runpy
import sys

from pkernels.pykokkos_alias import install

USAGE = "usage: python -m pkernels prog.py [args...] | -m module [args...] | cache info|clear"


def main(argv: list[str]) -> int:
    """Run the program ``argv`` names; returns the exit status for usage errors."""
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    if argv[0] == "cache":
        from pkernels.cache_command import main as cache_main

        return cache_main(argv)
    install()
    if argv[0] == "-m":
        if len(argv) < 2:
            print(USAGE, file=sys.stderr)
            return 2
        sys.argv = argv[1:]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    program = argv[0]
    if not os.path.exists(program):
        print(f"python -m pkernels: can't open file {program!r}", file=sys.stderr)
        return 2
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(program))
    runpy.run_path(program, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
