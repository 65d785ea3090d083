"""A release-build kernel that crashes under pkdb stops at its Python line anyway.

Kernels without breakpoints run their release builds with no debugger attached
(breakpoint skipping). While one runs, a small C library of ours (:data:`PARKING_SOURCE`,
compiled once through pkernels' build cache) parks a thread that gets a fatal signal: it
writes ``"<signal> <tid>"`` to a pipe and waits. This module's thread reads that pipe,
has the front end attach gdb to the running kernel (a ``KernelLaunch`` naming the
signal), then releases the parked thread: the faulting instruction runs again, now under
gdb, which stops it at the Python line (release builds carry line tables).
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import threading
from collections.abc import Callable
from typing import Any

#: The signal handler that parks a crashing thread (async-signal-safe: write, read,
#: sigaction), and ``pk_crash_parking(on)`` to install or remove it.
PARKING_SOURCE = r"""
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <sys/syscall.h>
#define FAILED_CHECK 256
extern "C" {
// Crash parking, for a debugger that is not attached yet (pkdb, while a release build
// runs): a fatal signal writes "<signal> <thread id>\n" to the fd in $PKDB_CRASH_FD,
// then waits for a byte on $PKDB_CRASH_RELEASE_FD (the debugger attaches meanwhile),
// restores the default action and returns, so the faulting instruction runs again, now
// under the debugger. Installed by pk_crash_parking(1), removed by pk_crash_parking(0).
static int pk_crash_fd = -1, pk_crash_release_fd = -1;
static void pk_crash_park(int sig, siginfo_t*, void*) {
    char text[48];
    int n = 0;
    long values[2] = {sig, (long)syscall(SYS_gettid)};
    for (int k = 0; k < 2; ++k) {
        char digits[24];
        int d = 0;
        long v = values[k];
        do { digits[d++] = (char)('0' + v % 10); v /= 10; } while (v > 0 && d < 20);
        while (d > 0) text[n++] = digits[--d];
        text[n++] = k == 0 ? ' ' : '\n';
    }
    if (write(pk_crash_fd, text, n) == n) {
        char c;
        while (read(pk_crash_release_fd, &c, 1) < 0 && errno == EINTR) {
        }
    }
    if (sig == FAILED_CHECK) return;
    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, nullptr);
}
static int installed = 0;
// A failed check of a checked release build (its fault() calls this, found by dlsym):
// parked as a crash is, reported as "256 <thread id>", while parking is installed; the
// thread then goes on into pk_fault_hook, where the debugger attached meanwhile stops it.
__attribute__((visibility("default"))) void pk_crash_check_failed(void) {
    if (installed) pk_crash_park(FAILED_CHECK, nullptr, nullptr);
}
// Installing saves the program's own actions (Python's faulthandler, say); removing
// puts them back.
__attribute__((visibility("default"))) int pk_crash_parking(int on) {
    static const int signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    static struct sigaction saved[5];
    const char* fd = std::getenv("PKDB_CRASH_FD");
    const char* release = std::getenv("PKDB_CRASH_RELEASE_FD");
    if (on == installed) return 1;
    if (on && (fd == nullptr || release == nullptr)) return 0;
    if (on) {
        pk_crash_fd = std::atoi(fd);
        pk_crash_release_fd = std::atoi(release);
        struct sigaction action;
        std::memset(&action, 0, sizeof action);
        action.sa_sigaction = pk_crash_park;
        action.sa_flags = SA_SIGINFO;
        sigemptyset(&action.sa_mask);
        for (int k = 0; k < 5; ++k) sigaction(signals[k], &action, &saved[k]);
    } else {
        for (int k = 0; k < 5; ++k) sigaction(signals[k], &saved[k], nullptr);
    }
    installed = on;
    return 1;
}
}
"""

#: What the parking library reports instead of a signal number for a checked build's
#: failed check (the thread is held all the same; see ``pk_crash_check_failed``).
FAILED_CHECK = 256


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
        #: The loaded parking library, once built (in the watch thread: the program does
        #: not wait for g++ the first time).
        self.library: Any = None
        self.ready = threading.Event()  # set once the library is loaded (or failed to)
        self._wakeup_read: int | None = None
        self._on_interrupt: Callable[[], None] | None = None

    def start(self) -> None:
        self._thread.start()

    def _load(self) -> None:
        from pkernels.build.compiler import build

        try:
            module = build(PARKING_SOURCE, False, "pkdb crash parking")
            # Global: a checked build's failed check finds pk_crash_check_failed by name.
            library = ctypes.CDLL(str(module.library), mode=ctypes.RTLD_GLOBAL)
            library.pk_crash_parking.argtypes = [ctypes.c_int]
            self.library = library
        except Exception:  # noqa: BLE001 - without it a crash just ends the program
            self.library = None
        finally:
            self.ready.set()

    def watch_interrupts(self, on_interrupt: Callable[[], None]) -> None:
        """Also call ``on_interrupt()`` (in the watch thread) when Ctrl-C reaches the
        program: Python's own handler only runs once native code returns, but its C part
        writes the signal to a wakeup fd at once. Call from the main thread, before
        :meth:`start`. (A program that sets its own wakeup fd, as asyncio does, replaces
        this one: Ctrl-C then waits for the kernel, as without pkdb.)"""
        read, write = os.pipe()
        os.set_blocking(write, False)
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        self._wakeup_read = read
        self._on_interrupt = on_interrupt

    def _watch(self) -> None:
        self._load()
        sources = [self._notify_read]
        if self._wakeup_read is not None:
            sources.append(self._wakeup_read)
        pending = b""  # the start of a report not read whole yet
        while True:
            ready, _, _ = select.select(sources, [], [])
            if self._wakeup_read in ready:
                signals = os.read(self._wakeup_read, 64)
                if signal.SIGINT in signals and self._on_interrupt is not None:
                    try:
                        self._on_interrupt()
                    except Exception:  # noqa: BLE001 - Ctrl-C then just reaches Python
                        pass
            if self._notify_read not in ready:
                continue
            data = os.read(self._notify_read, 4096)
            if not data:
                return
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                try:
                    signal_number, thread_id = (int(word) for word in line.split()[:2])
                    self._on_crash(signal_number, thread_id)
                except Exception:  # noqa: BLE001 - the program must not hang on a parked thread
                    pass
                finally:
                    # One byte per parked thread: a byte left over would let the thread of
                    # a later failed check go on before the debugger is there.
                    os.write(self._release_write, b"x")
