"""Preparing ``parallel_launch`` clauses in the live program and running them at once."""

from __future__ import annotations

import contextlib
import inspect
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..clause_thread import clause_thread as _clause_thread
from ..live_scope import LiveScope
from .syntax import SPACE_WORD, ClauseText

#: In kernel mode the front end waits for the agent's reply; say we are alive this often.
KEEPALIVE_SECONDS = 2.0


@dataclass
class Clause:
    """One clause, evaluated: what its thread runs, and what it reports."""

    text: ClauseText
    workunit: Any = None
    operation: str = "for"
    policy: Any = None
    kwargs: dict[str, Any] = field(default_factory=dict)
    copied: dict[str, Any] = field(default_factory=dict)  # name -> the program's array
    shared: set[str] = field(default_factory=set)
    error: str | None = None
    result: Any = None
    seconds: float | None = None
    compiled: bool = False

    @property
    def number(self) -> int:
        return self.text.number

    @property
    def ok(self) -> bool:
        return self.error is None


def infer_operation(workunit: Any) -> str:
    """``reduce`` for ``(i, acc, ...)`` (by name or a ``pk.Acc`` annotation), ``scan``
    for ``(i, acc, last_pass, ...)``, else ``for``."""
    from pkernels.api.types import AccAnnotation

    params = list(inspect.signature(workunit).parameters)
    if len(params) >= 3 and params[2] == "last_pass":
        return "scan"
    if len(params) >= 2:
        if params[1] == "acc":
            return "reduce"
        try:
            annotation = inspect.get_annotations(workunit, eval_str=True).get(params[1])
        except Exception:  # noqa: BLE001 - an annotation that does not evaluate
            annotation = workunit.__annotations__.get(params[1])
        if isinstance(annotation, AccAnnotation) or "Acc[" in str(annotation):
            return "reduce"
    return "for"


def is_array(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype") and hasattr(value, "copy")


def _copy(value: Any) -> Any:
    try:
        return value.copy(order="K")  # keeps the subclass (pk.View) and the layout
    except TypeError:
        return value.copy()


def _on_device(value: Any) -> bool:
    return type(value).__module__.startswith("cupy")


def _device_copy(value: Any) -> Any:
    """A Cuda clause's own copy of an array: on the GPU (a CuPy array stays one)."""
    import cupy  # a Cuda clause only runs where CuPy is installed

    return value.copy() if _on_device(value) else cupy.asarray(value)


def _on_space(policy: Any, space: Any) -> Any:
    """``policy`` on another execution space (the clause's ``pk.SPACE`` word)."""
    import copy

    from pkernels.api.policies import MDRangePolicy, RangePolicy

    if isinstance(policy, RangePolicy):
        return RangePolicy(space, policy.begin, policy.end)
    if isinstance(policy, MDRangePolicy):
        return MDRangePolicy(space, list(policy.begins), list(policy.ends), policy.tiling)
    moved = copy.copy(policy)  # a TeamPolicy: keep its team and scratch sizes
    moved.team_scratch, moved.thread_scratch = (
        list(policy.team_scratch),
        list(policy.thread_scratch),
    )
    moved.space = space
    return moved


def prepare(text: ClauseText, scope: LiveScope) -> Clause:
    """Evaluate a clause in the live program and take its copies. An error is kept in
    the clause (it is reported, and the clause does not run)."""
    from pkernels.api.decorators import marker_of
    from pkernels.api.policies import as_policy
    from pkernels.api.spaces import ExecutionSpace

    clause = Clause(text)
    try:
        workunit = _evaluate(scope, text.kernel, "the kernel")
        marker = marker_of(workunit)
        if marker is None or marker.kind != "workunit":
            raise ValueError(f"{text.kernel} is not a @pk.workunit")
        clause.workunit = workunit
        clause.operation = text.operation or infer_operation(workunit)
        policy = as_policy(_evaluate(scope, text.policy, "the policy"))
        if text.space is not None:
            match = SPACE_WORD.match(text.space)
            if match is not None:
                space = ExecutionSpace[match["name"]]
            else:
                space = _evaluate(scope, text.space, "the space")
                if not isinstance(space, ExecutionSpace):
                    raise ValueError(f"{text.space} is not an execution space (pk.OpenMP ...)")
            policy = _on_space(policy, space)
        clause.policy = policy
        on_gpu = policy.space is ExecutionSpace.Cuda
        for argument in text.arguments:
            value = _evaluate(scope, argument.expr, argument.name)
            if argument.mut or not is_array(value):
                if argument.mut:
                    if on_gpu and not _on_device(value) and is_array(value):
                        raise ValueError(
                            f"mut:{argument.name}: a Cuda clause cannot share a host array; "
                            "drop mut: (the clause then gets a device copy) or pass a CuPy array"
                        )
                    clause.shared.add(argument.name)
                clause.kwargs[argument.name] = value
            else:
                clause.copied[argument.name] = value
                clause.kwargs[argument.name] = _device_copy(value) if on_gpu else _copy(value)
    except Exception as exc:  # noqa: BLE001 - reported in the clause's column
        clause.error = _describe(exc)
    return clause


def _evaluate(scope: LiveScope, text: str, what: str) -> Any:
    try:
        return scope.evaluate(text)
    except SyntaxError as exc:
        raise ValueError(f"{what}: cannot read {text!r}: {exc.msg}") from None


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _run_clause(
    clause: Clause, spare_a_core: bool = False, turn: threading.Lock | None = None
) -> None:
    """Run one clause (in its own thread). ``spare_a_core``: an OpenMP clause runs on one
    thread fewer than the machine has, leaving a core to the thread that drives a Cuda
    clause's GPU at the same time (otherwise one OpenMP thread shares a core with it).
    ``turn``: held while the clause's kernel runs (see :func:`launch`)."""
    import pkernels as pk
    from pkernels.api.decorators import marker_of

    if spare_a_core:
        gomp = _libgomp()
        if gomp is not None:  # the calling thread's setting: only this clause's regions
            gomp.omp_set_num_threads(max(1, gomp.omp_get_max_threads() - 1))

    dispatch = {"for": pk.parallel_for, "reduce": pk.parallel_reduce, "scan": pk.parallel_scan}
    marker = marker_of(clause.workunit)
    before = len(marker.specializations)
    _clause_thread.active = True
    try:
        with turn if turn is not None else contextlib.nullcontext():
            start = time.perf_counter()
            try:
                clause.result = dispatch[clause.operation](
                    clause.policy, clause.workunit, **clause.kwargs
                )
            finally:
                clause.seconds = time.perf_counter() - start
    except Exception as exc:  # noqa: BLE001 - reported in the clause's column
        clause.error = _describe(exc)
    finally:
        _clause_thread.active = False
    clause.compiled = len(marker.specializations) > before


def _libgomp() -> Any:
    """The OpenMP runtime the kernels use (loaded by them already), or None."""
    import ctypes

    try:
        return ctypes.CDLL("libgomp.so.1")
    except OSError:
        return None


def launch(clauses: list[Clause], keepalive: Callable[[], None] | None = None) -> float:
    """Run every prepared clause that has no error, concurrently (clauses of one compiled
    kernel one after another); the wall time."""
    from pkernels.api.spaces import ExecutionSpace

    runnable = [c for c in clauses if c.ok]
    gpu = any(c.policy.space is ExecutionSpace.Cuda for c in runnable)
    # Compiled clauses of one kernel take turns: they run one library (its OpenMP and
    # Serial launchers alike), whose checks keep one fault record, which each launch
    # clears first; run together, one clause's failure could be cleared by, or reported
    # as, the other's. (Debug-space clauses run Python: no record.)
    turns: dict[int, threading.Lock] = {}

    def turn(c: Clause) -> threading.Lock | None:
        if c.policy.space is ExecutionSpace.Debug:
            return None
        return turns.setdefault(id(c.workunit), threading.Lock())

    threads = [
        threading.Thread(
            target=_run_clause,
            args=(c, gpu and c.policy.space is ExecutionSpace.OpenMP, turn(c)),
            name=f"pkdb-parallel-launch-{c.number}",
            daemon=True,
        )
        for c in runnable
    ]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    last_sign = start
    for thread in threads:
        while True:
            thread.join(timeout=0.25 if keepalive is not None else None)
            if not thread.is_alive():
                break
            now = time.perf_counter()
            if keepalive is not None and now - last_sign >= KEEPALIVE_SECONDS:
                keepalive()
                last_sign = now
    return time.perf_counter() - start


def pristine_originals(clauses: list[Clause]) -> dict[int, Any]:
    """What each copied array held before the launch, to tell which clauses wrote their
    copy: the program's array itself, unless a ``mut:`` argument may write it meanwhile
    (then a snapshot)."""
    import numpy as np

    shared = [c.kwargs[n] for c in clauses for n in c.shared if is_array(c.kwargs[n])]
    pristine: dict[int, Any] = {}
    for clause in clauses:
        for original in clause.copied.values():
            if id(original) in pristine:
                continue
            at_risk = any(_may_share(original, s, np) for s in shared)
            pristine[id(original)] = _copy(original) if at_risk else original
    return pristine


def _may_share(a: Any, b: Any, np: Any) -> bool:
    try:
        return bool(np.may_share_memory(a, b))
    except TypeError:
        return a is b
