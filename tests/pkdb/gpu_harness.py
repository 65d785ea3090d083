"""What pkdb's GPU sessions share (test_gpu_session.py, test_gpu_session_more.py): the
reason to skip without CuPy, a GPU or cuda-gdb, the marks, the prompts, and a session
with time for the first GPU stop."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pkdb_harness import PtySession

GPU_PROMPT = r"\(pkdb-cuda\) "
HOST_PROMPT = r"\(pkdb\) "
FIRST_STOP = 120  # seconds: NVRTC -G compile, cuda-gdb attach, the helper's start


def gpu_missing() -> str | None:
    """Why GPU sessions cannot run here, or None when they can."""
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no GPU"
    except Exception as exc:  # noqa: BLE001
        return f"no GPU ({exc})"
    from pkdb.targets.base import TargetError
    from pkdb.targets.factory import cuda_gdb_path

    try:
        cuda_gdb_path()
    except TargetError:
        return "cuda-gdb is not installed"
    return None


MISSING = gpu_missing()
#: A GPU test module's ``pytestmark``: marked ``gpu``, skipped with the reason.
GPU_MARKS = [
    pytest.mark.gpu,
    pytest.mark.skipif(MISSING is not None, reason=f"needs a GPU and cuda-gdb: {MISSING}"),
]


def gpu_session(program: Path, *args: str, options: tuple[str, ...] = ()) -> PtySession:
    """``pkdb PROGRAM ARGS`` on a PTY, waiting up to :data:`FIRST_STOP` for any output."""
    session = PtySession(program, *args, options=options)
    session.child.timeout = FIRST_STOP
    return session


def run(session: PtySession, line: str, prompt: str = GPU_PROMPT) -> str:
    """Type ``line``; its output up to ``prompt`` (a GPU stop's by default), stripped."""
    return session.cmd(line, prompt).strip()


def continue_to_the_end(session: PtySession) -> str:
    """``continue`` from a stop until the program has exited and the host prompt is
    back (or a host prompt comes first): what was printed."""
    out = session.cmd("continue", r"The program exited|" + HOST_PROMPT)
    return out + (session.wait_prompt(HOST_PROMPT) if "exited" in out else "")


def yax_agrees_with_cupy(out: str) -> bool:
    """examples/yax_gpu.py printed its result, and CuPy's, the same."""
    m = re.search(r"yAx = ([\d.]+) \(CuPy: ([\d.]+)\)", out)
    return m is not None and m.group(1) == m.group(2)


def descendants(pid: int) -> set[int]:
    """The processes below ``pid`` (children, theirs, ...) that are alive now: the
    program, the debugger, the evaluation helper of a pkdb session."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z":
            parents[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def gpu_stop(file: str, line: int | str, function: str, who_why: str) -> str:
    """A regex (for ``re.M``) of a GPU stop as pkdb prints it, in pdb's form::

        > /path/FILE(LINE)FUNCTION()
        CUDA WHO_WHY

    ``line``, ``function`` and ``who_why`` are regexes (``who_why``: e.g. ``block 0,
    thread 10 \\(j=10\\) hit breakpoint 1``), whose groups the match keeps."""
    return rf"^> \S*{re.escape(file)}\({line}\){function}\(\)\nCUDA {who_why}$"
