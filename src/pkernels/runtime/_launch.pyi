from typing import Any

#: What launch() expects of its steps and of the packed entries (see _launch.c).
INTERFACE: int

def launch(
    entry: int, steps: Any, kwargs: dict[str, Any], begin: Any, end: Any, result: Any
) -> int:
    """Marshal a launch's arguments and call the packed entry ``entry`` (see launch.py);
    0 once it ran, else 1 + the step that did not fit."""
