from collections.abc import Callable
from typing import Any

class Boundary:
    """Calls ``function``; on failure, ``filter(exception)`` may replace the exception's
    traceback (see ``_boundary.c``)."""

    def __init__(
        self, function: Callable[..., Any], filter: Callable[[BaseException], None]
    ) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    __wrapped__: Callable[..., Any]

# Untraced calls (see _boundary.c).
def set_untraced(on: bool) -> None: ...
def resume_tracing() -> bool: ...
def suspend_tracing() -> bool: ...
