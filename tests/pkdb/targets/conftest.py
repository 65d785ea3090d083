"""Fixtures for the target-debugger tests: a real OpenMP kernel library with ``#line``
directives pointing at Python files (as pkernels generates them), a Python debuggee that
loads it with ctypes, and a real gdb attached to it."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

GDB = shutil.which("gdb")
GXX = shutil.which("g++")

# Python source of the kernels; the C++ below maps its statements to these lines.
YAX_PY = """\
import pkernels as pk


@pk.workunit
def yAx(j, acc, M, A, x, y):
    temp2 = 0.0
    for i in range(M):
        temp2 += A[j][i] * x[i]
    acc += y[j] * temp2
"""

FAULTY_PY = """\
import pkernels as pk


@pk.workunit
def faulty(j, mode, x):
    k = j + 100
    if mode == 1 and j == 5:
        x[k] = 1.0
    if mode == 2 and j == 3:
        x[None] = 2.0
    x[j] = j
"""

#: (python line, C++ statement) pairs; None as line continues the previous statement.
YAX_BODY = [
    (
        5,
        "static void py_yAx(int64_t j, double& acc, int64_t M, const double* A_view, "
        "const double* x_view, const double* y_view) {",
    ),
    (6, "    double temp2 = 0;"),
    (7, "    for (int64_t i = 0; i < M; i += 1) {"),
    (8, "        temp2 += A_view[j * M + i] * x_view[i];"),
    (None, "    }"),
    (9, "    acc += y_view[j] * temp2;"),
    (None, "}"),
]
YAX_ENTRY = """\
extern "C" double pk_launch(int64_t N, int64_t M, const double* A, const double* x,
                            const double* y) {
    double total = 0;
    #pragma omp parallel for num_threads(2) reduction(+:total) schedule(static, 1)
    for (int64_t j = 0; j < N; ++j) {
        py_yAx(j, total, M, A, x, y);
    }
    return total;
}
"""

FAULTY_PRELUDE = """\
extern "C" __attribute__((noinline)) void pk_bounds_fail(const char* view, int64_t index,
                                                         int64_t extent) {
    asm volatile("" ::: "memory");
}
static inline double& pk_at(double* v, const char* name, int64_t i, int64_t n) {
    if (i < 0 || i >= n) { pk_bounds_fail(name, i, n); return v[0]; }
    return v[i];
}
"""
FAULTY_BODY = [
    (5, "static void py_faulty(int64_t j, int64_t mode, double* x_view, int64_t x_n) {"),
    (6, "    int64_t k = j + 100;"),
    (7, "    if (mode == 1 && j == 5) {"),
    (8, '        pk_at(x_view, "x", k, x_n) = 1.0;'),
    (None, "    }"),
    (9, "    if (mode == 2 && j == 3) {"),
    (10, "        *(volatile double*)nullptr = 2.0;"),
    (None, "    }"),
    (11, '    pk_at(x_view, "x", j, x_n) = j;'),
    (None, "}"),
]
FAULTY_ENTRY = """\
extern "C" double pk_launch(int64_t N, int64_t mode, double* x, const double*, const double*) {
    #pragma omp parallel for num_threads(2)
    for (int64_t j = 0; j < N; ++j) {
        py_faulty(j, mode, x, N);
    }
    return x[N - 1];
}
"""

# The debuggee: loads kernel libraries with ctypes and runs them on the main thread (the
# OpenMP master, as in a pkernels program); an "agent" thread keeps answering on stdin
# while kernel threads are held, and can read and write the live arrays.
DRIVER_PY = r"""
import ctypes, os, sys, threading
N, M = 32, 4
A = (ctypes.c_double * (N * M))(*([1.0] * (N * M)))
x = (ctypes.c_double * M)(*range(M))
y = (ctypes.c_double * N)(*([1.0] * N))
xs = (ctypes.c_double * N)()
libs = {}
jobs = []
out_lock = threading.Lock()

def say(*words):
    with out_lock:
        sys.stdout.write(" ".join(map(str, words)) + "\n")
        sys.stdout.flush()

job_ready = threading.Event()

def lib(path):
    if path not in libs:
        l = ctypes.CDLL(path)
        l.pk_launch.restype = ctypes.c_double
        l.pk_launch.argtypes = [ctypes.c_int64, ctypes.c_int64] + [ctypes.c_void_p] * 3
        libs[path] = l
    return libs[path]

def agent():
    say("agent", threading.get_native_id())
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "ping":
            say("pong", sum(y))
        elif words[0] == "sety":
            y[int(words[1])] = float(words[2])
            say("ok")
        else:
            jobs.append(words)
            job_ready.set()
    jobs.append(["exit"])
    job_ready.set()

threading.Thread(target=agent, name="agent", daemon=True).start()
lib(sys.argv[1]).pk_launch(N, M, A, x, y)  # a release run: the OpenMP pool exists already
say("pid", os.getpid())
while True:
    job_ready.wait()
    job_ready.clear()
    while jobs:
        words = jobs.pop(0)
        if words[0] == "exit":
            say("bye")
            sys.exit(int(words[1]) if len(words) > 1 else 0)
        if words[0] == "yax":
            say("result", lib(sys.argv[1]).pk_launch(N, M, A, x, y))
        elif words[0] == "faulty":
            r = lib(words[1]).pk_launch(N, int(words[2]), xs, None, None)
            say("result", r)
"""


def _write_kernel(cpp: Path, py: Path, prelude: str, body, entry: str) -> None:
    """Write generated-style C++: ``#line`` before each statement, reset after the body."""
    lines = ["#include <cstdint>", "#include <omp.h>", prelude]
    lines = "\n".join(lines).splitlines()
    escaped = str(py).replace("\\", "\\\\").replace('"', '\\"')
    for py_line, stmt in body:
        if py_line is not None:
            lines.append(f'#line {py_line} "{escaped}"')
        lines.append(stmt)
    lines.append(f'#line {len(lines) + 2} "{cpp}"')
    lines.extend(entry.splitlines())
    cpp.write_text("\n".join(lines) + "\n")


def _compile(cpp: Path) -> Path:
    so = cpp.with_suffix(".so")
    subprocess.run(
        [GXX, "-O0", "-g", "-fopenmp", "-shared", "-fPIC", str(cpp), "-o", str(so)],
        check=True,
        capture_output=True,
        text=True,
    )
    return so


@dataclass
class Kernels:
    dir: Path
    yax_py: Path
    yax_so: Path
    faulty_py: Path
    faulty_so: Path
    driver: Path


@pytest.fixture(scope="session")
def kernels(tmp_path_factory) -> Kernels:
    if GDB is None:
        pytest.skip("gdb is not installed (apt-get install gdb)")
    if GXX is None:
        pytest.skip("g++ is not installed (apt-get install g++)")
    d = tmp_path_factory.mktemp("kernels")
    yax_py = d / "yax.py"
    yax_py.write_text(YAX_PY)
    faulty_py = d / "faulty.py"
    faulty_py.write_text(FAULTY_PY)
    _write_kernel(d / "yax_gen.cpp", yax_py, "", YAX_BODY, YAX_ENTRY)
    _write_kernel(d / "faulty_gen.cpp", faulty_py, FAULTY_PRELUDE, FAULTY_BODY, FAULTY_ENTRY)
    driver = d / "driver.py"
    driver.write_text(DRIVER_PY)
    return Kernels(
        dir=d,
        yax_py=yax_py,
        yax_so=_compile(d / "yax_gen.cpp"),
        faulty_py=faulty_py,
        faulty_so=_compile(d / "faulty_gen.cpp"),
        driver=driver,
    )


class Debuggee:
    """The driver process: send it lines, read its answers with a timeout."""

    def __init__(self, kernels: Kernels) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(kernels.driver), str(kernels.yax_so)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "OMP_WAIT_POLICY": "passive"},
        )
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        hello = dict(self.expect("").split() for _ in range(2))  # "agent TID", "pid PID"
        self.agent_tid = int(hello["agent"])
        self.pid = int(hello["pid"])
        assert self.pid == self.proc.pid

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.strip())

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def expect(self, prefix: str, timeout: float = 10.0) -> str:
        """The next output line; it must start with ``prefix``."""
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"debuggee said nothing within {timeout} s") from None
        assert line.startswith(prefix), line
        return line

    def silent(self, timeout: float) -> bool:
        """True when the debuggee prints nothing for ``timeout`` seconds."""
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            return True
        self._lines.queue.appendleft(line)
        return False

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(5)


@pytest.fixture
def debuggee(kernels):
    d = Debuggee(kernels)
    yield d
    d.kill()


@pytest.fixture(params=[False, True], ids=["mi", "cli-first"])
def gdb(request):
    """A gdb controller, both ways: MI from the start, and attaching through gdb's
    command line before speaking MI on a second interface (cuda-gdb's way: see
    pkdb.targets.cli_attach)."""
    from pkdb.targets.gdb import GdbController

    if GDB is None:
        pytest.skip("gdb is not installed (apt-get install gdb)")
    controller = GdbController(cli_first=request.param)
    yield controller
    controller.close()


@pytest.fixture
def attached(gdb, debuggee):
    """A gdb attached to the debuggee, every thread running."""
    gdb.attach(debuggee.pid)
    return gdb
