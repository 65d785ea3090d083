"""The Debug space checks a workunit as the compiled spaces do, once per argument signature.

At the first dispatch of a workunit with arguments of new types, the translator lowers
it to typed IR (no C++ is written or compiled): what it refuses (``assert``, a dict, a
float stored into an integer local ...) raises the same ``TranslationError`` as on
OpenMP, at the same dispatch, as PyKokkos does. The local types it found then type the
Python form the Debug space runs (``translate.pytyped``). Forms are kept per workunit
and signature, as compiled builds are, so later dispatches only look them up.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from ..api.reducers import Reducer
from ..errors import TranslationError
from ..translate.kernel import check_reducer, lower_workunit
from ..translate.pytyped import LocalTypes
from ..translate.source import KernelSource
from .marshal import argument_type
from .python_arguments import check_argument_types

_forms: dict[tuple[Any, Any], tuple[types.CodeType, Callable[..., Any]]] = {}


def checked_form(
    workunit: Callable[..., Any],
    operation: str,
    kwargs: dict[str, Any],
    rank: int,
    reducer: Reducer,
    make: Callable[[LocalTypes | None], Callable[..., Any]],
) -> Callable[..., Any]:
    """The Debug space's form of ``workunit`` for these arguments (``rank``: 1 for a
    range, an MDRangePolicy's rank, or ``TEAM``): ``make(local_types)``, made at the
    first dispatch of this signature after the translator checked the workunit (None
    for a workunit without source, which runs unchecked); made again when the
    workunit's code changed (pkdb's hotswap). Arguments that do not fit the workunit
    raise DispatchError; the values of integer arguments are the caller's to check
    (``python_arguments.check_argument_values``, at every dispatch)."""
    from ..backends.specialise import specialization_key

    key, names = specialization_key(workunit, operation, kwargs, rank, "python", reducer)
    code = workunit.__code__
    found = _forms.get((workunit, key))
    if found is not None and found[0] is code:
        return found[1]
    check_argument_types(workunit, kwargs)  # with the messages of python_arguments
    try:
        KernelSource.of(workunit)
    except TranslationError:  # no source (exec, a prompt): nothing to check it against
        local_types = None
    else:
        arg_types = {name: argument_type(name, kwargs[name]) for name in names}
        kernel, _ = lower_workunit(workunit, operation, arg_types, rank, reducer)
        check_reducer(workunit, kernel, reducer)
        local_types = LocalTypes.of(kernel)
    form = make(local_types)
    _forms[(workunit, key)] = (code, form)
    return form
