"""Start a debugger process that cannot outlive pkdb.

Why: a debugger reads its commands from pkdb and ends when that input closes, but only
when it gets round to reading it. gdb killed with pkdb (SIGKILL gives pkdb no say) while
the program runs under it -- a conditional breakpoint tested on every pass of a loop --
was seen spinning for minutes, orphaned and still attached. So every debugger starts
through :mod:`pkdb.targets.debugger_shim`: Linux's parent-death signal
(``prctl(PR_SET_PDEATHSIG)``) sends it SIGTERM when pkdb ends (gdb detaches on its way
out, and the program runs on), and a watchdog kills it should it still be there
:data:`GRACE_SECONDS` later (gdb busy with a running program was seen ignoring the
SIGTERM). The signal follows the thread that started the debugger: pkdb starts its
debuggers from its main thread, and ``pkdb --np`` from each rank's thread, which lives as
long as the session."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: The script that sets the parent-death signal, starts the watchdog, then execs.
_SHIM = Path(__file__).with_name("debugger_shim.py")
#: Seconds a debugger may take to quit after pkdb ended before the watchdog kills it.
GRACE_SECONDS = 5.0


def spawn_debugger(argv: Sequence[str], **options: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(argv, **options)`` for a debugger that gets SIGTERM when pkdb
    ends (on Linux; elsewhere a plain Popen). Raises OSError as Popen does when the
    debugger cannot be started."""
    if not sys.platform.startswith("linux"):
        return subprocess.Popen(list(argv), **options)
    executable = _resolve(argv[0])  # Popen's error for a missing program, not the shim's
    shim = [sys.executable, "-I", "-S", str(_SHIM), str(os.getpid()), str(GRACE_SECONDS)]
    return subprocess.Popen([*shim, executable, *argv[1:]], **options)


def _resolve(program: str) -> str:
    """``program``'s path as exec would find it (a path with a directory is taken as it
    is), or FileNotFoundError as Popen raises."""
    found = shutil.which(program)
    if found is None:
        raise FileNotFoundError(2, "No such file or directory", program)
    return found
