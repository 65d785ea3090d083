"""A line on stderr when a kernel's compile takes a while, so that a program that
seems stuck says why: ``pkernels: compiling yAx (release build)...`` once it has taken
longer than ``$PKERNELS_COMPILE_NOTICE`` seconds (1 by default; ``off``: never), then
how long it took. Builds are cached: the next run of the program finds them."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator

_DEFAULT_SECONDS = 1.0


def notice_delay() -> float | None:
    """Seconds a compile may take before it is said; None: never said."""
    text = os.environ.get("PKERNELS_COMPILE_NOTICE", "").strip().lower()
    if text in ("off", "no", "none", "never"):
        return None
    try:
        return float(text) if text else _DEFAULT_SECONDS
    except ValueError:
        return _DEFAULT_SECONDS


@contextlib.contextmanager
def compile_notice(what: str) -> Iterator[None]:
    """Say so on stderr when the compile of ``what`` inside takes a while (a cached
    build takes no time and says nothing)."""
    delay = notice_delay()
    if delay is None:
        yield
        return
    start = time.monotonic()
    said = threading.Event()

    def say() -> None:
        said.set()
        _write(f"pkernels: compiling {what} (once: it is cached for later runs)...\n")

    timer = threading.Timer(delay, say)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        if said.is_set():
            _write(f"pkernels: compiled {what} in {time.monotonic() - start:.1f} s\n")


def _write(text: str) -> None:
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):  # no stderr to say it on
        pass
