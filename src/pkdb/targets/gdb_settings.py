"""What every gdb session is set to, and how pkdb tells gdb from cuda-gdb."""

from __future__ import annotations

import os

SIGINT_PASS = '-interpreter-exec console "handle SIGINT nostop noprint pass"'
SIGINT_STOP = '-interpreter-exec console "handle SIGINT stop print nopass"'
#: Read no shared library's symbols unasked (a CuPy or NumPy process loads dozens: most of
#: an attach's time); a session loads the ones it needs.
NO_AUTO_SYMBOLS = "-gdb-set auto-solib-add off"

#: How gdb and cuda-gdb print, for pkdb to read: no pager, no line wrapping, no
#: questions, values whole on one line.
OUTPUT_SETTINGS: tuple[str, ...] = (
    "-gdb-set pagination off",
    "-gdb-set height 0",
    "-gdb-set width 0",
    "-gdb-set confirm off",
    "-gdb-set print pretty off",
    "-gdb-set print elements 10000",
    "-gdb-set print repeats unlimited",
    "-gdb-set print frame-arguments scalars",
)

#: Settings applied to every session before anything else (order matters: non-stop must
#: be set before attaching).
BASE_SETTINGS: tuple[str, ...] = (
    "-gdb-set mi-async on",
    "-gdb-set non-stop on",
    *OUTPUT_SETTINGS,
    # gdb stays attached after a kernel: its default (stop, nopass) would swallow every
    # later Ctrl-C meant for the host code. set_sigint_stops() turns it on per kernel run.
    SIGINT_PASS,
)

#: Settings that some gdb builds lack; failures are ignored.
OPTIONAL_SETTINGS: tuple[str, ...] = (
    # Never reach out to the network for debug info.
    "-gdb-set debuginfod enabled off",
    # libpython's gdb helpers are not needed and cost time on attach.
    "-gdb-set auto-load python-scripts off",
)

#: Command-line settings some gdb builds lack (errors are printed, not fatal there).
CLI_OPTIONAL_SETTINGS = ("set debuginfod enabled off",)


def is_cuda_gdb(path: str) -> bool:
    """Whether the debugger at ``path`` is NVIDIA's cuda-gdb (by its name)."""
    return os.path.basename(path).startswith("cuda-gdb")


PTRACE_HINT = (
    " (the kernel refused ptrace: attaching needs the same user and, under Yama, "
    "/proc/sys/kernel/yama/ptrace_scope = 0 or CAP_SYS_PTRACE; in a container, "
    "run it with --cap-add=SYS_PTRACE)"
)
