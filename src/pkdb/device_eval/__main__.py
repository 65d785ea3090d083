"""``python -m pkdb.device_eval``: the evaluation helper of GPU kernel stops."""

from .helper import main

main()
