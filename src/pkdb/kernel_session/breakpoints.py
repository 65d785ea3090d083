"""pdb's kernel breakpoints in gdb: one gdb breakpoint per pdb breakpoint, their
conditions translated to C, their ignore counts carried from launch to launch."""

from __future__ import annotations

from typing import Any

from ..gdbexpr import ConditionError, python_to_c
from ..kernel_protocol import KernelLaunch
from ..targets.base import TargetError
from .state import SessionState


class SessionBreakpoints(SessionState):
    """The breakpoint part of a kernel session."""

    _told_slow_conditions: set[int]
    _gdb_conditions: set[int]  # pdb breakpoints gdb tests a condition of
    _ignore_set: dict[int, tuple[int, int]]
    _ignore_left: dict[int, tuple[int, int]]

    def sync_breakpoints(self, breakpoints: list[dict[str, Any]]) -> list[str]:
        self._delete_debugger_breakpoints()
        problems = []
        for bp in breakpoints:
            problem = self.insert(bp)
            if problem:
                problems.append(problem)
        return problems

    def insert(self, bp: dict[str, Any]) -> str | None:
        """Set pdb breakpoint ``bp`` in gdb; a problem to report, or None."""
        controller = self.require_controller()
        self.remove(bp["number"])  # one gdb breakpoint per pdb one: a copy would outlive it
        problem = None
        try:
            condition = self.c_condition(bp.get("condition"))
        except ConditionError as exc:  # as pdb does: stop there, and say why
            condition = None
            problem = f"breakpoint {bp['number']}: {exc}; it stops unconditionally"
        temporary = bp.get("temporary", False)
        try:
            inserted = controller.insert_breakpoint(
                bp["file"], bp["line"], condition=condition, temporary=temporary
            )
        except TargetError as exc:
            if condition is None:
                return f"breakpoint {bp['number']}: {exc}; it is not set in this kernel"
            # As pdb does with a condition it cannot evaluate: stop there, say why.
            problem = (
                f"breakpoint {bp['number']}: the condition {bp['condition']!r} cannot be "
                f"evaluated in this kernel ({exc}); it stops unconditionally"
            )
            inserted = controller.insert_breakpoint(bp["file"], bp["line"], temporary=temporary)
        self.gdb_numbers[bp["number"]] = inserted.number
        self._gdb_conditions.discard(bp["number"])
        if inserted.condition:
            self._gdb_conditions.add(bp["number"])
        for location, address in inserted.addresses:
            if any(start <= address < stop for start, stop in self._release_ranges):
                controller.disable_location(location)
        ignore = self._ignore_count(bp)
        if ignore:
            controller.set_ignore_count(inserted.number, ignore)
        self._ignore_set[bp["number"]] = (int(bp.get("ignore", 0)), ignore)
        if not bp.get("enabled", True):
            controller.disable_breakpoint(inserted.number)
        return problem

    def c_condition(self, condition: str | None) -> str | None:
        if not condition:
            return None
        views = {
            name: info["rank"] for name, info in (self.launch.views if self.launch else {}).items()
        }
        return python_to_c(condition, views, self.team_member or None)

    def _ignore_count(self, bp: dict[str, Any]) -> int:
        """``bp``'s ignore count for this launch: what an earlier launch left of it (pdb
        may not have heard yet: the program runs on when a kernel ends), unless the
        user set another since."""
        asked = int(bp.get("ignore", 0))
        earlier = self._ignore_left.get(bp["number"])
        if earlier is not None and asked in earlier:
            return earlier[1]
        return asked

    def note_ignore_counts(self) -> dict[int, int]:
        """At a launch's end: what is left of each ignore count set in it (also kept for
        the next launch); the counts that moved."""
        left = self.ignore_counts()
        moved = {}
        for number, (asked, set_to) in self._ignore_set.items():
            if number in left and set_to:
                self._ignore_left[number] = (asked, left[number])
                if left[number] != asked:
                    moved[number] = left[number]
        self._ignore_set.clear()
        return moved

    def ignore_counts(self) -> dict[int, int]:
        """What is left of each pdb breakpoint's ignore count in gdb, which uses it up
        as threads pass (pdb's own count does not move in a kernel)."""
        left = {b.number: b.ignore for b in self.require_controller().breakpoints()}
        return {n: left.get(g, 0) for n, g in self.gdb_numbers.items()}

    def remove_all(self) -> None:
        for number in list(self.gdb_numbers):
            self.remove(number)

    def _slow_condition_notes(self, launch: KernelLaunch) -> list[str]:
        """Once per breakpoint: a condition pkdb could not evaluate before the launch is
        tested by gdb each time a thread reaches the line, which inside a long loop takes
        a while; the agent says why (``launch.slow_conditions``)."""
        notes = []
        for bp in launch.breakpoints:
            number = bp["number"]
            why = launch.slow_conditions.get(str(number))
            if why is None or number not in self._gdb_conditions:
                continue  # evaluated before the launch, or not given to gdb
            if number not in self._told_slow_conditions:
                self._told_slow_conditions.add(number)
                notes.append(
                    f"note: breakpoint {number}'s condition is tested by gdb each time a "
                    f"thread reaches its line (slow inside a long loop), because {why}"
                )
        return notes
