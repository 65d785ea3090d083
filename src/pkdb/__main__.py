"""``python -m pkdb prog.py [args...]``: the same as the ``pkdb`` console script."""

import sys

from pkdb.cli import main

sys.exit(main())
