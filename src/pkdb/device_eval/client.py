"""The front end's side of the evaluation helper (see :mod:`pkdb.device_eval`)."""

from __future__ import annotations

import itertools
import json
import os
import select
import signal
import subprocess
import time
from typing import Any

#: Seconds an evaluation may take before the front end stops waiting (Ctrl-C too).
EVALUATION_PATIENCE = 600.0
#: The helper's start (Python, CuPy, a CUDA context): waited for at the first request.
START_PATIENCE = 60.0


class EvaluationError(Exception):
    """The helper is gone, or did not answer in time."""


class DeviceEvaluator:
    """One helper process, started on demand and kept for the session."""

    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None
        self._ids = itertools.count(1)
        self._buffer = b""
        self._launch: dict[str, Any] | None = None  # sent with the next request
        self._last_launch: dict[str, Any] | None = None  # sent again to a new helper
        self._start_args: tuple[str, list[str], str] | None = None
        self._pending_init = False
        self.problems: list[str] = []  # names the helper could not have, last launch

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, python: str, python_path: list[str], cwd: str) -> None:
        """Start the helper (returns at once; its start overlaps what follows)."""
        if self.running:
            return
        self._start_args = (python, python_path, cwd)
        import pkdb

        own = os.path.dirname(os.path.dirname(os.path.abspath(pkdb.__file__)))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [own, env.get("PYTHONPATH")]))
        self._process = subprocess.Popen(
            [python or "python3", "-m", "pkdb.device_eval"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd or None,
            env=env,
            start_new_session=True,  # a Ctrl-C at the terminal is not the helper's
        )
        self._buffer = b""
        self._send({"id": 0, "op": "init", "python_path": python_path, "cwd": cwd})
        self._pending_init = True
        self._launch = self._last_launch

    def launch(self, names: dict[str, Any], views: dict[str, Any]) -> None:
        """A new GPU launch: its names replace the last one's (sent with the next request,
        so that the launch itself never waits for the helper)."""
        self._launch = self._last_launch = {"op": "launch", "names": names, "views": views}

    def request(self, op: str, timeout: float = EVALUATION_PATIENCE, **args: Any) -> dict[str, Any]:
        """Send one request and wait for its answer: ``{"ok", "text", "data"}``. A helper
        that was stopped (Ctrl-C, a time-out) is started again first."""
        if not self.running and self._start_args is not None:
            self.start(*self._start_args)
        if not self.running:
            raise EvaluationError("the evaluation helper is not running")
        if self._pending_init:
            self._wait_for(0, START_PATIENCE)
            self._pending_init = False
        if self._launch is not None:
            launch, self._launch = self._launch, None
            answer = self._call(launch, START_PATIENCE)
            self.problems = answer.get("data", {}).get("problems", [])
        return self._call({"op": op, **args}, timeout)

    def _call(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        request_id = next(self._ids)
        self._send({"id": request_id, **request})
        return self._wait_for(request_id, timeout)

    def _send(self, request: dict[str, Any]) -> None:
        assert self._process is not None and self._process.stdin is not None
        try:
            self._process.stdin.write((json.dumps(request) + "\n").encode())
            self._process.stdin.flush()
        except OSError as exc:
            raise EvaluationError(f"the evaluation helper is gone: {exc}") from None

    def _wait_for(self, request_id: int, timeout: float) -> dict[str, Any]:
        assert self._process is not None and self._process.stdout is not None
        stream = self._process.stdout
        deadline = time.monotonic() + timeout
        while True:
            line, _, rest = self._buffer.partition(b"\n")
            if _:
                self._buffer = rest
                try:
                    answer = json.loads(line)
                except ValueError:
                    continue
                if answer.get("id") == request_id:
                    return answer
                continue  # an answer nobody waits for any more
            left = deadline - time.monotonic()
            if left <= 0:
                self.stop()  # busy with what the user gave up on: a fresh one next time
                raise EvaluationError(f"the evaluation did not finish within {timeout:.0f} s")
            try:
                ready, _, _ = select.select([stream], [], [], min(left, 0.5))
            except KeyboardInterrupt:
                self.stop()
                raise
            if ready:
                chunk = os.read(stream.fileno(), 1 << 16)
                if not chunk:
                    self.stop()
                    raise EvaluationError("the evaluation helper ended")
                self._buffer += chunk

    def stop(self) -> None:
        """End the helper (the next GPU launch starts another)."""
        process, self._process = self._process, None
        if process is None:
            return
        try:
            if process.stdin:
                process.stdin.close()
            process.wait(2)
        except (OSError, subprocess.TimeoutExpired):
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except OSError:
                pass
            process.wait()
        for stream in (process.stdout,):
            if stream:
                stream.close()
