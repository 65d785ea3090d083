"""Session settings: ``set``, ``show``."""

from __future__ import annotations

import textwrap

from ..settings import SettingError
from .registry import Command, Console


def do_set(console: Console, arg: str) -> None:
    """set NAME VALUE
    Change a session setting; 'show' lists them with their values.
    Boolean settings take on/off (also true/false, yes/no, 1/0).

    Settings:
      debug_all_kernels on|off   build and debug every kernel, not only
                                 those with a breakpoint (default off;
                                 the --debug-all-kernels option sets it)
      fast_debug_builds on|off   under debug_all_kernels, run a range
                                 parallel_for or parallel_reduce (or an
                                 MDRangePolicy parallel_for) with no
                                 breakpoint as release code when its launch
                                 is proven unable to fail a check; Ctrl-C
                                 stops a thread as it begins its next
                                 index, in the debug build. With
                                 breakpoints whose conditions use only the
                                 index and scalar arguments ('break 18 if
                                 j == 10'), only the indices where one
                                 holds run in the debug build (default on)
    """
    parts = arg.split(None, 1)
    if len(parts) != 2:
        console.error("Usage: set NAME VALUE (see 'show' for the settings)")
        return
    name, value = parts
    try:
        console.settings.set(name, value)
    except SettingError as exc:
        console.error(str(exc))
        return
    console.settings_changed()
    console.message(console.settings.describe(name))


def do_show(console: Console, arg: str) -> None:
    """show [NAME]
    Show one session setting, or all of them with what they do.
    """
    name = arg.strip()
    if name:
        try:
            console.message(console.settings.describe(name))
        except SettingError as exc:
            console.error(str(exc))
        return
    for spec in console.settings:
        console.message(console.settings.describe(spec.name))
        console.message(textwrap.indent(textwrap.fill(spec.doc, 72), "    "))


COMMANDS = [Command("set", do_set), Command("show", do_show)]
