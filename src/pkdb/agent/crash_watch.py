"""A release-build kernel that crashes under pkdb stops at its Python line anyway.

Kernels without breakpoints run their release builds with no debugger attached
(breakpoint skipping). For them the kernel runtime parks a thread that gets a fatal
signal (``pk_crash_parking`` in the C++ prelude): it writes ``"<signal> <tid>"`` to a
pipe and waits. This module's thread reads that pipe, has the front end attach gdb to
the running kernel (a :class:`~pkdb.kernel_protocol.KernelLaunch` naming the signal),
then releases the parked thread: the faulting instruction runs again, now under gdb,
which stops it at the Python line (release builds carry line tables).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

#: Bytes written to release the parked threads (every thread that crashed waits for one).
_RELEASE_ALL = b"x" * 256


class CrashWatch:
    """The pipes the kernel runtime's crash parking uses, and the thread that serves them."""

    def __init__(self, on_crash: Callable[[int, int], None]) -> None:
        """``on_crash(signal, thread id)`` runs in the watch thread, the crashed thread
        parked; when it returns, the thread is released."""
        self._on_crash = on_crash
        self._notify_read, notify_write = os.pipe()
        self._release_read, self._release_write = os.pipe()
        # Read by pk_crash_parking() in the kernel libraries (same process: not inherited).
        os.environ["PKDB_CRASH_FD"] = str(notify_write)
        os.environ["PKDB_CRASH_RELEASE_FD"] = str(self._release_read)
        self._thread = threading.Thread(target=self._watch, name="pkdb-crash-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _watch(self) -> None:
        while True:
            data = os.read(self._notify_read, 64)
            if not data:
                return
            try:
                signal_number, thread_id = (int(word) for word in data.split()[:2])
                self._on_crash(signal_number, thread_id)
            except Exception:  # noqa: BLE001 - the program must not hang on a parked thread
                pass
            finally:
                os.write(self._release_write, _RELEASE_ALL)
