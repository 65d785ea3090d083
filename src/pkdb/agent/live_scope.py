"""Where ``hotswap`` and ``parallel_launch`` evaluate the names the user types.

In host mode that is pdb's current frame; at a kernel stop it is the dispatch call
site (its globals and locals, the kernel's views by parameter name, and the kernel's
scalar locals in the selected thread). Either way: the live program, no copies.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class LiveScope:
    """The names of the live program, plus how to find its source files."""

    globals: dict[str, Any]
    locals: Mapping[str, Any] = field(default_factory=dict)
    #: The program's main file: a bare line number in ``hotswap LINE ...`` refers to it.
    main_file: str | None = None
    #: Resolve a file name the user typed to an absolute path (pdb's ``lookupmodule``).
    lookup_file: Callable[[str], str | None] | None = None

    def evaluate(self, text: str) -> Any:
        """``text`` as a Python expression over the live names."""
        code = compile(text.strip(), "<pkdb>", "eval")
        namespace = self.locals
        if "pk" not in self.globals and "pk" not in namespace:
            # `pk.OpenMP`, `pk.RangePolicy(0, N)` work even where the program spelled
            # its import differently.
            import pkernels

            namespace = {**namespace, "pk": pkernels}
        return eval(code, self.globals, namespace)

    def resolve_file(self, name: str) -> str | None:
        """The absolute path of a file name typed by the user, or None."""
        if self.lookup_file is not None:
            found = self.lookup_file(name)
            if found:
                return os.path.abspath(found)
        candidates = [name]
        if self.main_file:
            candidates.append(os.path.join(os.path.dirname(self.main_file), name))
        return next((os.path.abspath(c) for c in candidates if os.path.isfile(c)), None)


def call_site_scope(dispatch: Any, kernel_locals: Mapping[str, Any], debugger: Any) -> LiveScope:
    """The scope of a kernel stop: the call site's names, the kernel's views (the
    caller's arrays, under the kernel's parameter names) and its scalar locals."""
    if dispatch is None:
        raise RuntimeError("no kernel is being debugged")
    frame = dispatch.frame
    namespace: dict[str, Any] = dict(frame.f_locals) if frame is not None else {}
    namespace.update(dispatch.kwargs)
    namespace.update(kernel_locals)
    return LiveScope(
        globals=frame.f_globals if frame is not None else {},
        locals=namespace,
        main_file=getattr(debugger, "mainpyfile", None) or None,
        lookup_file=getattr(debugger, "lookupmodule", None),
    )
