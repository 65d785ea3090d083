"""Which thread runs a ``parallel_launch`` clause (the dispatch observer leaves those
alone). A module of its own so that the observer need not load parallel_launch."""

from __future__ import annotations

import threading

clause_thread = threading.local()


def in_clause() -> bool:
    """True in a thread running a parallel_launch clause."""
    return getattr(clause_thread, "active", False)
