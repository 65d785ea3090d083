"""Run as a script between pkdb and its debugger: ``python -I -S debugger_shim.py OWNER
GRACE PROGRAM ARGS...`` (see :mod:`pkdb.targets.spawn`).

It asks Linux for SIGTERM when its parent (pkdb, pid OWNER) ends, starts a watchdog, then
becomes the debugger (exec: same pid, and the parent-death signal survives the exec).
gdb usually detaches and quits on that SIGTERM; one busy with a program that runs under
it was seen ignoring it, spinning orphaned for good. The watchdog (detached from both, so
it is neither's child) waits for the owner to end, gives the debugger GRACE seconds to
quit, then kills it; it ends as soon as the debugger does.

Standard library only, imported fast: it runs before every debugger pkdb starts.
"""

import ctypes
import os
import select
import signal
import sys

_PR_SET_PDEATHSIG = 1


def _watch(owner: int, debugger: int, grace: float) -> None:
    """The watchdog's life: kill ``debugger`` if it outlives ``owner`` by ``grace`` s."""
    try:
        owner_fd, debugger_fd = os.pidfd_open(owner), os.pidfd_open(debugger)
    except OSError:
        return  # one is gone already (or no pidfds: Linux < 5.3): nothing to watch
    ready, _, _ = select.select([owner_fd, debugger_fd], [], [])
    if debugger_fd in ready:
        return  # the debugger ended first, as it should
    ready, _, _ = select.select([debugger_fd], [], [], grace)
    if not ready:
        os.kill(debugger, signal.SIGKILL)


def main() -> None:
    owner, grace, argv = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))
    if os.getppid() != owner:
        os._exit(1)  # the owner ended before the signal was set: it would never come
    debugger = os.getpid()
    if os.fork() == 0:
        # Double fork: the watchdog is reparented away, so the debugger never sees it
        # as a child of its own (gdb reaps children it does not know of).
        os.setsid()
        if os.fork() == 0:
            for fd in range(3):
                os.close(fd)  # the debugger's pipes: pkdb must see EOF when it ends
            try:
                _watch(owner, debugger, grace)
            finally:
                os._exit(0)
        os._exit(0)
    os.wait()
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main()
