"""Session settings (``set NAME VALUE`` / ``show [NAME]``), owned by the front end.

Each setting is declared once in :data:`SETTINGS` with its type, default and help. The
front end sends the values to the agent at every start and on every change, where the
kernel dispatch hook reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


class SettingError(ValueError):
    """Unknown setting, or a value it does not accept."""


_TRUE = {"on", "true", "yes", "1", "enable", "enabled"}
_FALSE = {"off", "false", "no", "0", "disable", "disabled"}


def parse_bool(text: str) -> bool:
    word = text.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise SettingError(f"expected on or off, not {text.strip()!r}")


def format_bool(value: Any) -> str:
    return "on" if value else "off"


@dataclass(frozen=True)
class Setting:
    """One setting: its name, default, help line, and how to read and show a value."""

    name: str
    default: Any
    doc: str
    parse: Callable[[str], Any] = parse_bool
    format: Callable[[Any], str] = format_bool


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "debug_all_kernels",
        False,
        "Build every kernel for debugging (-O0 -g, bounds checks), not only kernels "
        "with a breakpoint; kernels without one otherwise run their release build.",
    ),
    Setting(
        "fast_debug_builds",
        True,
        "Under debug_all_kernels, a range parallel_for or parallel_reduce (or an "
        "MDRangePolicy parallel_for) with no breakpoint runs release code when it is "
        "proven before the launch that the debug build's checks cannot fail (every view "
        "index in range, no integer division by zero, no float converted to an integer); "
        "Ctrl-C then stops the first thread "
        "to begin its next index, in the debug build. Likewise a range parallel_for or "
        "parallel_reduce whose breakpoints all have conditions on the index and scalar "
        "arguments only ('break 18 if j == 10') runs the indices where a condition holds "
        "in the debug build and the others as release code, so gdb does not test the "
        "condition in every other index. off: the debug build runs every index.",
    ),
    Setting(
        "parallel_launch_checks",
        True,
        "parallel_launch runs its OpenMP and Serial clauses as checked release builds "
        "(-O3 code keeping the debug build's checks, 1.1-2.9x the release build's time): "
        "an index out of range fails that clause with KernelIndexError, not the program. "
        "off: release builds, unchecked (an index out of range may corrupt the program's "
        "memory or end it), for timing clauses at release speed.",
    ),
    Setting(
        "checks",
        True,
        "A kernel with no breakpoint runs its checked release build (-O3 code keeping the "
        "debug build's checks) unless pkernels proves before the launch that no check can "
        "fail: an index out of range, an integer division by zero or a float no integer "
        "holds then stops the kernel at its Python line, as in a debug build, instead of "
        "corrupting memory (on pk.Cuda: raises the Kernel*Error naming the line, block and "
        "thread when the launch returns). off: release builds, unchecked, for raw speed.",
    ),
)


class Settings:
    """Current values of the session settings."""

    def __init__(self, specs: tuple[Setting, ...] = SETTINGS) -> None:
        self._specs = {spec.name: spec for spec in specs}
        self._values = {spec.name: spec.default for spec in specs}

    def __iter__(self) -> Iterator[Setting]:
        return iter(self._specs.values())

    def names(self) -> list[str]:
        return list(self._specs)

    def spec(self, name: str) -> Setting:
        try:
            return self._specs[name]
        except KeyError:
            known = ", ".join(self._specs)
            raise SettingError(f"no setting {name!r} (settings: {known})") from None

    def get(self, name: str) -> Any:
        return self._values[self.spec(name).name]

    def set(self, name: str, text: str) -> Any:
        """Parse ``text`` for setting ``name`` and store it; returns the new value."""
        spec = self.spec(name)
        value = spec.parse(text)
        self._values[name] = value
        return value

    def set_value(self, name: str, value: Any) -> None:
        self._values[self.spec(name).name] = value

    def describe(self, name: str) -> str:
        """``name = value`` as ``show`` prints it."""
        spec = self.spec(name)
        return f"{spec.name} = {spec.format(self._values[name])}"

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)
