"""Is a compiled file (a kernel's shared object, a cubin) a whole ELF file?

A file cut short (a full disk while the linker wrote it: ld can even exit 0 then, the
file ending at the last full page) passes ``dlopen``'s first checks, and the process
dies of SIGBUS when it touches the pages past the end. Reading the headers is enough
to tell: every segment and section the file declares must lie inside it.
"""

from __future__ import annotations

import struct

_MAGIC = b"\x7fELF"
_SHT_NOBITS = 8  # .bss: takes no room in the file


def elf_problem(data: bytes) -> str | None:
    """Why ``data`` (a file's contents) is not a complete ELF file, or None when it is."""
    size = len(data)
    if size < 16 or data[:4] != _MAGIC:
        return f"not an ELF file ({size} bytes)"
    wide = {1: False, 2: True}.get(data[4])
    order = {1: "<", 2: ">"}.get(data[5])
    if wide is None or order is None:
        return "not an ELF file (unknown class or byte order)"
    header = order + ("HHIQQQIHHHHHH" if wide else "HHIIIIIHHHHHH")
    if size < 16 + struct.calcsize(header):
        return f"cut short: {size} bytes, less than its ELF header"
    (_, _, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum, _) = struct.unpack_from(
        header, data, 16
    )
    for what, offset, entsize, count in (
        ("program headers", phoff, phentsize, phnum),
        ("section headers", shoff, shentsize, shnum),
    ):
        if count and offset + entsize * count > size:
            return f"cut short: {size} bytes, its {what} end at byte {offset + entsize * count}"
    segment = order + ("IIQQQQQQ" if wide else "IIIIIIII")
    for k in range(phnum if phentsize >= struct.calcsize(segment) else 0):
        fields = struct.unpack_from(segment, data, phoff + k * phentsize)
        offset, filesz = (fields[2], fields[5]) if wide else (fields[1], fields[4])
        if offset + filesz > size:
            return f"cut short: {size} bytes, a segment ends at byte {offset + filesz}"
    section = order + ("IIQQQQIIQQ" if wide else "IIIIIIIIII")
    for k in range(shnum if shentsize >= struct.calcsize(section) else 0):
        fields = struct.unpack_from(section, data, shoff + k * shentsize)
        kind, offset, length = fields[1], fields[4], fields[5]
        if kind != _SHT_NOBITS and offset + length > size:
            return f"cut short: {size} bytes, a section ends at byte {offset + length}"
    return None
