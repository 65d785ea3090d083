"""Command lines that are not UTF-8 text.

The front end reads its input (terminal, stdin, ``-x`` files, ``-c`` arguments) with
Python's ``surrogateescape`` error handler, so bytes that are not UTF-8 reach it as
lone surrogates instead of ending the session; such a line is refused with where the
bad byte is, before anything tries to send it on (JSON and gdb take text only).
"""

from __future__ import annotations

import sys
from typing import TextIO

_SURROGATES = range(0xDC80, 0xDD00)  # surrogateescape's: one per undecodable byte


def undecodable(line: str) -> str | None:
    """The error to show for ``line`` when it holds bytes that are not UTF-8, or None."""
    for column, char in enumerate(line, start=1):
        if ord(char) in _SURROGATES or 0xD800 <= ord(char) <= 0xDFFF:
            byte = ord(char) - 0xDC00 if ord(char) in _SURROGATES else None
            what = f"byte 0x{byte:02x}" if byte is not None else f"character U+{ord(char):04X}"
            return (
                f"the line is not valid UTF-8 text ({what} at column {column}); it was not "
                "run. pkdb reads UTF-8: check the terminal's encoding (locale)"
            )
    return None


def tolerate_undecodable_bytes(*streams: TextIO) -> None:
    """Have ``streams`` (the front end's stdin and stdout) pass bytes that are not UTF-8
    through as lone surrogates (read) and back as the same bytes (written), instead of
    raising: a typo in a terminal set to Latin-1 must not end the session."""
    for stream in streams or (sys.stdin, sys.stdout):
        try:
            stream.reconfigure(errors="surrogateescape")  # type: ignore[union-attr,attr-defined]
        except (AttributeError, ValueError, OSError):
            pass  # not a text file (a test's StringIO), or closed
