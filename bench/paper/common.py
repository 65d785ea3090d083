"""What every part of the paper report shares: paths, the machine's description, the
sessions' environment, and the shape of a measured section."""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
ROOT = BENCH.parent
EXAMPLES = ROOT / "examples"
for _path in (str(BENCH), str(ROOT / "src")):  # bench_pkdb, _timing, ...; this pkernels
    if _path not in sys.path:
        sys.path.insert(0, _path)


@dataclass
class Machine:
    """Where and how the report was made: printed under every table and figure."""

    command: str
    cpu: str
    cores: int
    python: str
    date: str
    load: str

    @classmethod
    def here(cls, argv: list[str]) -> Machine:
        return cls(
            command="python " + " ".join(shlex.quote(a) for a in argv),
            cpu=cpu_model(),
            cores=os.cpu_count() or 1,
            python=platform.python_version(),
            date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            load=load_average(),
        )

    def caption(self) -> str:
        """One line for a figure: the command and the machine."""
        return f"{self.command}  |  {self.cpu}, {self.cores} cores  |  {self.date}"


@dataclass
class Section:
    """One measured part of the report: a table, what it means, the targets it meets or
    misses, and the figure drawn from it (a PNG name in the report's folder)."""

    key: str
    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    figure: str | None = None
    data: dict[str, Any] = field(default_factory=dict)  # raw numbers, kept in results.json


def require_gpu() -> str:
    """The GPU's name; a RuntimeError when CuPy or a CUDA GPU is missing. The GPU parts
    call it first: their sessions run under pdb and pkdb, which end with status 0 even
    when the program raised (post-mortem, then end of input), so a program that could
    not start would otherwise be timed as if it ran."""
    try:
        import cupy
    except ImportError as error:
        raise RuntimeError("--gpu needs CuPy (pip install -e '.[cuda]')") from error
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as error:
        raise RuntimeError(f"--gpu needs a CUDA GPU: {error}") from error
    if count < 1:
        raise RuntimeError("--gpu needs a CUDA GPU: none found")
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def load_average() -> str:
    try:
        return " ".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        return "?"


def session_env(cache_dir: Path, threads: int | None = None) -> dict[str, str]:
    """The environment of a measured session: this checkout's pkernels and pkdb, a
    private kernel cache, ``threads`` OpenMP threads, sessions started from compiled
    bytecode (as installed) and a dumb terminal."""
    env = dict(os.environ, PKERNELS_CACHE_DIR=str(cache_dir), TERM="dumb")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    return env


def line_of(path: Path, text: str) -> int:
    """The number of the first line of ``path`` that starts (after its indent) with
    ``text``: breakpoints follow the programs as they change."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip().startswith(text):
            return number
    raise LookupError(f"no line starting with {text!r} in {path}")


def session_argv(debugger: str, program: Path, args: list[str], line: int,
                 *options: str) -> list[str]:  # fmt: skip
    """``python -m pdb|pkdb [options]`` scripted as bench_pkdb's sessions: break at a host
    line, continue to it, continue to the end."""
    script = ["-c", f"break {line}", "-c", "continue", "-c", "continue"]
    return [sys.executable, "-m", debugger, *options, *script, str(program), *args]


def git_revision() -> str:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "src"],
                               capture_output=True, text=True).stdout  # fmt: skip
        return out.strip() + (" (src modified)" if dirty.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "?"


def fmt_ratio(median: float, low: float, high: float) -> str:
    return f"{median:.2f}x [{low:.2f}, {high:.2f}]"
