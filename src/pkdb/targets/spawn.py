"""Start a debugger process that cannot outlive pkdb.

Why: a debugger reads its commands from pkdb and ends when that input closes, but only
when it gets round to reading it. gdb killed with pkdb (SIGKILL gives pkdb no say) while
the program runs under it -- a conditional breakpoint tested on every pass of a loop --
was seen spinning for minutes, orphaned and still attached. Linux's parent-death signal
(``prctl(PR_SET_PDEATHSIG)``, SIGTERM: gdb detaches on its way out, and the program
runs on) ends it with pkdb: a tiny Python shim sets it, then execs the debugger (same
pid). The signal follows the thread that started the debugger: pkdb starts its debuggers
from its main thread, and ``pkdb --np`` from each rank's thread, which lives as long as
the session.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

#: Runs in the child: set the parent-death signal, make sure the parent did not die
#: before that (the signal would never come), then become the debugger.
_SHIM = (
    "import ctypes, os, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, int(sys.argv[1]))\n"  # PR_SET_PDEATHSIG
    "os.getppid() == int(sys.argv[2]) or os._exit(1)\n"
    "os.execvp(sys.argv[3], sys.argv[3:])\n"
)


def spawn_debugger(argv: Sequence[str], **options: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(argv, **options)`` for a debugger that gets SIGTERM when pkdb
    ends (on Linux; elsewhere a plain Popen). Raises OSError as Popen does when the
    debugger cannot be started."""
    if not sys.platform.startswith("linux"):
        return subprocess.Popen(list(argv), **options)
    executable = _resolve(argv[0])  # Popen's error for a missing program, not the shim's
    shim = [sys.executable, "-I", "-S", "-c", _SHIM, str(int(signal.SIGTERM)), str(os.getpid())]
    return subprocess.Popen([*shim, executable, *argv[1:]], **options)


def _resolve(program: str) -> str:
    """``program``'s path as exec would find it, or FileNotFoundError as Popen raises."""
    if os.sep in program:
        found = program if os.access(program, os.X_OK) else None
    else:
        from shutil import which

        found = which(program)
    if found is None:
        raise FileNotFoundError(2, "No such file or directory", program)
    return found
