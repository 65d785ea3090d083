"""How a kernel stop is printed: in pdb's form, for CPU and GPU kernels alike.

pdb prints where it stopped as ``> /path/prog.py(18)yAx()`` and the line as
``-> source``; editors that follow a pdb session (Emacs' pdbtrack, IDE terminals) read
the first one to show the file. A kernel stop keeps both and says, on the line between,
which thread stopped and why::

    > /work/main/examples/yax.py(18)yAx()
    OpenMP thread 1 (j=10) hit breakpoint 1
    -> temp2 += A_view[j][i] * x_view[i]
"""

from __future__ import annotations

import linecache
import re

from .targets.base import FrameInfo

#: The ``file:line: `` that starts a failed check's message (the stop line says where).
_FAULT_PLACE = re.compile(r"^\S+:\d+: ")
#: The thread a failed check's message names at its end (the stop line names it).
_FAULT_THREAD = re.compile(r" \((?:OpenMP thread \d+|block [^)]*)\)$")


def python_function(function: str | None) -> str:
    """The Python name of a kernel frame's function: ``pk_kernel::yAx(long, ...)`` ->
    ``yAx``, ``pk_kernel::pk_fn_twice(double)`` -> ``twice``, ``<module>`` as it is."""
    name = (function or "??").split("(")[0].split("::")[-1]
    name = name.removeprefix("pk_fn_")  # @pk.function helpers (see translate.lower)
    return name[:-1] if name.endswith("_") else name


def location_line(frame: FrameInfo | None) -> str:
    """pdb's ``> /path/prog.py(18)yAx()``."""
    if frame is None or not frame.file:
        return "> <unknown>"
    return f"> {frame.file}({frame.line}){python_function(frame.function)}()"


def source_line(frame: FrameInfo | None) -> str:
    """pdb's ``-> source`` for ``frame``, or "" when the line cannot be read."""
    if frame is None or not frame.file or not frame.line:
        return ""
    text = linecache.getline(frame.file, frame.line).strip()
    return f"-> {text}" if text else ""


def fault_text(message: str) -> str:
    """A failed check's message without the place and thread the stop line gives."""
    return _FAULT_THREAD.sub("", _FAULT_PLACE.sub("", message.strip()))


def stop_text(frame: FrameInfo | None, who: str, why: str = "", notes: tuple[str, ...] = ()) -> str:
    """The whole stop: where (pdb's form), ``who`` (the thread) and ``why``, the source
    line, then ``notes`` (one a line)."""
    lines = [location_line(frame), f"{who} {why}".rstrip()]
    source = source_line(frame)
    if source:
        lines.append(source)
    lines.extend(notes)
    return "\n".join(lines)
