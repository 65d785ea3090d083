from collections.abc import Callable
from typing import Any

#: What Launcher expects of its steps and recipes (see _cuda_launch.c).
INTERFACE: int

class Launcher:
    """One loaded Cuda range kernel's launches in C (see cuda_fast.py)."""

    def __init__(
        self,
        steps: tuple[tuple[Any, ...], ...],
        view_type: type,
        recipe: Callable[[int, int], Any],
        slow: Callable[..., Any],
        other: Callable[..., Any],
        wait_rest: Callable[[], Any],
        failed: Callable[[int], Any],
        current_stream: Callable[[], Any],
        spin_seconds: float,
    ) -> None: ...
    def launch(self, space: Any, begin: int, end: int, kwargs: dict[str, Any]) -> Any:
        """Run the kernel over range(begin, end) with ``kwargs``, in C where it can."""

def load_driver(path: str | None) -> bool:
    """Take the CUDA driver's functions from the library at ``path``; True once found."""

def set_enabled(flag: bool) -> bool:
    """Whether Launchers launch in C; the old value."""
