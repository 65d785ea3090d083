"""The Debug space: a workunit's body run as plain Python, index by index, after the
translator's checks (:mod:`pkernels.runtime.python_forms`), on the caller's arrays.
Nothing is compiled; errors are raised where they happen (no fault codes)."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Mapping
from typing import Any

from ..api.policies import MDRangePolicy, RangePolicy
from ..api.reducers import Reducer, Sum
from ..api.spaces import ExecutionSpace
from ..errors import KernelError
from ..runtime.hooks import BuildMode
from ..runtime.python_arguments import check_argument_values
from ..runtime.python_forms import checked_form
from ..runtime.python_teams import run_team_in_python
from ..runtime.python_values import (
    as_python_argument,
    debug_cell,
    index_is_float,
    start_and_type,
)
from ..translate.kernel import TEAM
from ..translate.pyexec import accumulator_form, python_form
from .protocol import Launch


class DebugBackend:
    """The :class:`~.protocol.Backend` of the Debug space."""

    spaces: tuple[ExecutionSpace, ...] = (ExecutionSpace.Debug,)
    faults: Mapping[int, type[KernelError]] = {}

    def build_mode(self, launch: Launch) -> BuildMode:
        return launch.build  # one way to run: the Python body

    def kernel(self, launch: Launch) -> None:
        return None  # the body runs as it is (checked at the launch)

    def launch(self, kernel: None, launch: Launch) -> Any:
        if launch.rank == TEAM:
            return run_team_in_python(
                launch.workunit, launch.operation, launch.policy, launch.kwargs, launch.reducer
            )
        return run_in_python(
            launch.workunit, launch.operation, launch.policy, launch.kwargs, launch.reducer
        )

    def cached_range_kernel(self, operation: str, workunit: Any, kwargs: dict[str, Any]) -> None:
        return None

    def cached_policy_kernel(self, *args: Any) -> None:
        return None

    def observed_range_kernel(self, *args: Any) -> None:
        return None  # the body runs as Python: the full path


def run_in_python(
    workunit: Callable[..., Any],
    operation: str,
    policy: RangePolicy | MDRangePolicy,
    kwargs: dict[str, Any],
    reducer: Reducer = Sum,
) -> Any:
    """The ``Debug`` space: the body as plain Python, index by index (an MDRangePolicy's
    index tuples in row-major order), after the translator's checks (python_forms); a
    reduce's accumulator starts at the reducer's identity (one accumulator: the body's
    own updates are the reduction)."""
    rank = policy.rank if isinstance(policy, MDRangePolicy) else 1
    if operation == "for":
        make_form = functools.partial(python_form, workunit)  # (local_types) -> form
    else:
        make_form = functools.partial(accumulator_form, workunit, rank)
    body = checked_form(workunit, operation, kwargs, rank, reducer, make_form)
    check_argument_values(workunit, kwargs)
    kwargs = {name: as_python_argument(value) for name, value in kwargs.items()}
    if isinstance(policy, MDRangePolicy):
        boxes = itertools.product(*map(range, policy.begins, policy.ends))
        if operation == "for":
            for index in boxes:
                body(*index, **kwargs)
            return None
        assert operation == "reduce"
        start, kind = start_and_type(reducer, workunit, rank)
        acc = debug_cell(reducer, start)
        for index in boxes:
            body(*index, acc[0], __pk_acc=acc, **kwargs)
        return reducer.value_of(acc[0], kind)
    indices: Any = range(policy.begin, policy.end)
    if index_is_float(workunit):
        indices = map(float, indices)
    if operation == "for":
        for i in indices:
            body(i, **kwargs)
        return None
    start, kind = start_and_type(reducer, workunit, 1)
    acc = debug_cell(reducer, start)
    scan = (True,) if operation == "scan" else ()
    for i in indices:
        body(i, acc[0], *scan, __pk_acc=acc, **kwargs)
    # The compiled spaces return a Python int/float/bool; so does this one (not a NumPy
    # scalar picked up from a view element).
    return reducer.value_of(acc[0], kind)
