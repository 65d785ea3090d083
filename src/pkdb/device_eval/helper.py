"""The evaluation helper process (see :mod:`pkdb.device_eval`).

Requests arrive as JSON lines on stdin, answers leave as JSON lines on the real stdout
(what an evaluation prints is captured and sent as text). Requests: ``init`` (the
program's import path and working directory), ``launch`` (the names of a new GPU launch,
as :func:`pkdb.agent.device_snapshot.snapshot` describes them), ``eval`` (an expression),
``exec`` (statements; kernel variables they assign come back, for cuda-gdb to store),
``eval_many`` (one expression over the values of several threads).
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import pickle
import pprint
import sys
import traceback
import types
from typing import Any

_MISSING = object()


class Namespaces:
    """What evaluations see: the call site's names, the kernel's views, the kernel's
    variables of the thread in focus (given with each request)."""

    def __init__(self) -> None:
        self.names: dict[str, Any] = {}
        self.views: dict[str, Any] = {}
        self._opened: dict[tuple[int, str], int] = {}  # (base, handle) -> mapped pointer

    def launch(self, names: dict[str, Any], views: dict[str, Any]) -> list[str]:
        """Take a launch's names; what could not be had (name: reason)."""
        problems = []
        self.names, self.views = {}, {}
        sources = []
        for name, description in names.items():
            try:
                if description["kind"] == "source":
                    sources.append((name, description))
                    continue
                self.names[name] = self._value(description)
            except Exception as exc:  # noqa: BLE001 - that name is left out, with the reason
                problems.append(f"{name}: {type(exc).__name__}: {exc}")
        for name, description in views.items():
            try:
                self.views[name] = self._value(description)
            except Exception as exc:  # noqa: BLE001
                problems.append(f"{name}: {type(exc).__name__}: {exc}")
        for name, description in sources:  # once the names they read are there
            try:
                self._define(name, description)
            except Exception as exc:  # noqa: BLE001
                problems.append(f"{name}: {type(exc).__name__}: {exc}")
        return problems

    def _value(self, description: dict[str, Any]) -> Any:
        kind = description["kind"]
        if kind == "value":
            return pickle.loads(base64.b64decode(description["pickle"]))
        if kind == "module":
            import importlib

            return importlib.import_module(description["name"])
        if kind == "device":
            return self._device_array(description)
        if kind == "fields":  # a workload's self: the fields its kernel reads
            fields = description["fields"]
            return types.SimpleNamespace(**{n: self._value(d) for n, d in fields.items()})
        raise ValueError(f"unknown kind {kind!r}")

    def _device_array(self, d: dict[str, Any]) -> Any:
        import cupy

        if not d["base"]:  # an empty array
            return cupy.empty(d["shape"], dtype=d["dtype"])
        cupy.cuda.Device(d["device"]).use()
        key = (d["base"], d["handle"])
        mapped = self._opened.get(key)
        if mapped is None:
            for old in [k for k in self._opened if k[0] == d["base"]]:  # memory reused
                cupy.cuda.runtime.ipcCloseMemHandle(self._opened.pop(old))
            mapped = cupy.cuda.runtime.ipcOpenMemHandle(bytes.fromhex(d["handle"]))
            self._opened[key] = mapped
        memory = cupy.cuda.UnownedMemory(mapped, d["size"], owner=self, device_id=d["device"])
        pointer = cupy.cuda.MemoryPointer(memory, d["offset"])
        return cupy.ndarray(d["shape"], dtype=d["dtype"], memptr=pointer, strides=d["strides"])

    def _define(self, name: str, d: dict[str, Any]) -> None:
        """Define a kernel or helper again, at its own file and lines (the translator
        reads its source from there)."""
        import textwrap

        source = textwrap.dedent(d["source"])
        padded = "\n" * (d["line"] - 1) + source
        scope = dict(self.names)
        exec(compile(padded, d["file"], "exec"), scope)  # noqa: S102 - the program's code
        if name in scope:
            self.names[name] = scope[name]
            for other, value in scope.items():
                if other not in self.names and callable(value):
                    self.names[other] = value

    def scope(self, kernel_values: dict[str, Any]) -> dict[str, Any]:
        from pkdb.teams import decode_values

        scope = dict(self.names)
        scope.update(self.views)
        scope.update(decode_values(kernel_values))
        return scope


def _plain(value: Any) -> int | float | bool | None:
    """A kernel variable's new value as a JSON number (NumPy scalars too), or None."""
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        value = value.item()
    return value if isinstance(value, int | float | bool) else None


def _answer(out: Any, request_id: Any, ok: bool, text: str = "", **data: Any) -> None:
    out.write(json.dumps({"id": request_id, "ok": ok, "text": text, "data": data}) + "\n")
    out.flush()


def _error_text(exc: BaseException) -> str:
    return traceback.format_exception_only(type(exc), exc)[-1].strip()


def handle(namespaces: Namespaces, request: dict[str, Any]) -> tuple[bool, str, dict[str, Any]]:
    """One request: (ok, text, data)."""
    op = request.get("op")
    if op == "init":
        for entry in reversed(request.get("python_path", [])):
            if entry not in sys.path:
                sys.path.insert(0, entry)
        if request.get("cwd"):
            os.chdir(request["cwd"])
        try:
            import cupy  # noqa: F401 - imported now, while nobody waits
        except ImportError:
            pass  # device arrays are then left out, each with the reason
        return True, "", {}
    if op == "launch":
        problems = namespaces.launch(request.get("names", {}), request.get("views", {}))
        return True, "", {"problems": problems}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        if op == "eval":
            value = eval(request["expr"], namespaces.scope(request.get("locals", {})))  # noqa: S307
            text = pprint.pformat(value) if request.get("pretty") else repr(value)
            return True, printed.getvalue() + text, {}
        if op == "exec":
            kernel_values = request.get("locals", {})
            scope = namespaces.scope(kernel_values)
            before = {name: scope.get(name, _MISSING) for name in kernel_values}
            code = compile(request["source"], "<pkdb eval>", "single")
            exec(code, scope)  # noqa: S102 - the user's statement
            changed = {
                name: scope[name]
                for name in kernel_values
                if name in scope and scope[name] is not before[name]
            }
            for name, value in list(scope.items()):  # new names stay for later evaluations
                if name not in kernel_values and name not in namespaces.views:
                    namespaces.names[name] = value
            writes = {n: _plain(v) for n, v in changed.items() if _plain(v) is not None}
            return True, printed.getvalue(), {"kernel_writes": writes}
        if op == "eval_many":
            values = []
            code = compile(request["expr"], "<pkdb parallel_print>", "eval")
            for kernel_values in request.get("per_thread", []):
                try:
                    values.append(repr(eval(code, namespaces.scope(kernel_values))))  # noqa: S307
                except Exception as exc:  # noqa: BLE001 - that thread's error, in its cell
                    values.append(f"*** {_error_text(exc)}")
            return True, printed.getvalue(), {"values": values}
    return False, f"unknown request {op!r}", {}


def main() -> None:
    """Serve requests until stdin closes (the front end went away)."""
    out = sys.stdout
    sys.stdout = sys.stderr  # stray prints must not break the protocol
    namespaces = Namespaces()
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        try:
            ok, text, data = handle(namespaces, request)
        except BaseException as exc:  # noqa: BLE001 - SystemExit too: the user's error
            ok, text, data = False, _error_text(exc), {}
        try:
            _answer(out, request.get("id"), ok, text, **data)
        except (TypeError, ValueError) as exc:  # a value JSON cannot carry
            _answer(out, request.get("id"), False, f"cannot answer: {exc}")
