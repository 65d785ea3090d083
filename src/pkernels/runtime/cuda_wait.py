"""Waiting for a Cuda launch to finish, cheaply for a short kernel and without keeping a
core busy for a long one.

A Cuda launch returns once its kernel ran (as the CPU spaces do), so every launch ends
with :func:`wait_for_stream`. A stream or device synchronisation would spin a core for
the kernel's whole run (CUDA's default schedule, with fewer GPUs than cores), which an
OpenMP kernel running at the same time (pkdb's ``parallel_launch``) needs. A blocking-sync
event sleeps instead, but the driver wakes a thread sleeping on one late: on an H100
(bench/bench_cuda_wait.py, medians of 30 rounds) a 1 ms kernel took 1.132 ms waited for
that way, 1.065 ms with a spinning stream synchronisation, 1.077 ms with this wait; a
one-element kernel 36.4, 14.4 and 20.4 us. So the wait polls the stream (cudaStreamQuery)
for :data:`SPIN_SECONDS` (a short kernel is done by then), then naps between polls (each
nap a few tens of microseconds: little of a core, and a late answer of at most a nap) for
up to :data:`NAP_SECONDS`, and only a kernel still running after that sleeps on an event.
While it naps, the thread's timer slack (Linux's allowance for waking a sleeper late, 50
us by default, which made a 20 us nap last 60-80 us) is 1 us, and is put back after.
The event is made once per thread and GPU (making and destroying one per launch cost
microseconds of its own).
"""

from __future__ import annotations

import ctypes
import sys
import threading
import time
from typing import Any

#: How long a launch's wait polls its stream without pause (seconds): a kernel done
#: within it is seen done at once (a nap answers some 15-25 us late).
SPIN_SECONDS = 200e-6
#: How long it then polls between naps (seconds) before it sleeps on an event.
NAP_SECONDS = 20e-3
_NAP = 10e-6  # asked of time.sleep (with the slack below, a nap lasts some 15-25 us)
_NAP_SLACK_NS = 1000  # the thread's timer slack while it naps
_NOT_READY = 600  # cudaErrorNotReady: what cudaStreamQuery answers while work is queued
_PR_SET_TIMERSLACK, _PR_GET_TIMERSLACK = 29, 30  # prctl(2)


def _prctl() -> Any:
    """libc's prctl on Linux, else None (naps keep the system's slack there)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None).prctl
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_int
    function.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                         ctypes.c_ulong]  # fmt: skip
    return function


_PRCTL = _prctl()


class _ThreadEvents(threading.local):
    def __init__(self) -> None:
        self.by_device: dict[int, Any] = {}  # device id -> its cupy.cuda.Event


_events = _ThreadEvents()


def wait_for_stream(cp: Any, prints: bool = False, spun: bool = False) -> None:
    """Return once the work queued so far on this thread's current CuPy stream is done;
    raise CUDA's error (CuPy's ``CUDARuntimeError``) where a kernel failed. ``prints``: a
    kernel that printed; its lines reach stdout now (a synchronisation flushes device
    printf's buffer, a query that finds the kernel done does not). ``spun``: the caller
    polled the stream for :data:`SPIN_SECONDS` already (the C launcher): nap at once."""
    runtime = cp.cuda.runtime
    if prints:
        _event(cp).synchronize()
        return
    # Polled on the stream itself: recording an event first cost a short launch some
    # microseconds; the event is only needed to sleep on.
    stream = cp.cuda.get_current_stream().ptr
    status = runtime.streamQuery(stream)
    if status == _NOT_READY:
        start = time.perf_counter()
        spin_until = start + (0.0 if spun else SPIN_SECONDS)
        nap_until = start + NAP_SECONDS
        while status == _NOT_READY and time.perf_counter() < spin_until:
            status = runtime.streamQuery(stream)
        if status == _NOT_READY:
            status = _nap_until_done(runtime, stream, nap_until)
    if status != 0:  # still running: sleep until it is done; or failed: raise its error
        event = _event(cp)
        event.synchronize()


def _event(cp: Any) -> Any:
    """A blocking-sync event recorded now on the current stream (one kept per thread and
    GPU: making and destroying one per launch cost microseconds of its own)."""
    device = cp.cuda.runtime.getDevice()
    event = _events.by_device.get(device)
    if event is None:  # the thread's first on this GPU
        event = _events.by_device[device] = cp.cuda.Event(block=True, disable_timing=True)
    event.record()
    return event


def _nap_until_done(runtime: Any, stream: int, until: float) -> int:
    """Poll the stream between naps until its work is done or ``until``; its last
    status."""
    slack = _PRCTL(_PR_GET_TIMERSLACK, 0, 0, 0, 0) if _PRCTL is not None else -1
    if slack > _NAP_SLACK_NS:
        _PRCTL(_PR_SET_TIMERSLACK, _NAP_SLACK_NS, 0, 0, 0)
    try:
        status = _NOT_READY
        while status == _NOT_READY and time.perf_counter() < until:
            time.sleep(_NAP)
            status = runtime.streamQuery(stream)
        return status
    finally:
        if slack > _NAP_SLACK_NS:
            _PRCTL(_PR_SET_TIMERSLACK, slack, 0, 0, 0)
