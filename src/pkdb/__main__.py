"""``python -m pkdb prog.py [args...]``: the same as the ``pkdb`` console script."""

from pkdb.cli import run

run()
