"""Tiny ELF reader for the bundle: the libraries a file links (DT_NEEDED) and debug info.

Used by packaging/gpuviz.spec to keep only the shared libraries the kept Qt plugins and
Python extensions really need, and by tests/test_bundle.py to check that every library the
bundle expects from the system is provided by a package the .deb depends on. Pure Python, so
the build needs neither objdump nor readelf (ldd would give the transitive closure of the
build machine, which is not what we want here).
"""

from __future__ import annotations

import struct
from pathlib import Path

ELF_MAGIC = b"\x7fELF"
SHT_DYNAMIC = 6
DT_NULL, DT_NEEDED = 0, 1


def is_elf(path: str | Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == ELF_MAGIC
    except OSError:
        return False


def _sections(data: bytes) -> tuple[list[tuple], str, str]:
    """Section headers as (name_offset, type, offset, size, link), plus struct formats."""
    if data[:4] != ELF_MAGIC:
        raise ValueError("not an ELF file")
    is64 = data[4] == 2
    order = "<" if data[5] == 1 else ">"
    if is64:
        shoff, = struct.unpack_from(order + "Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", data, 0x3A)
        header = order + "IIQQQQIIQQ"
        dyn = order + "qQ"
    else:
        shoff, = struct.unpack_from(order + "I", data, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", data, 0x2E)
        header = order + "IIIIIIIIII"
        dyn = order + "iI"
    sections = []
    for index in range(shnum):
        name, kind, _flags, _addr, offset, size, link, *_ = struct.unpack_from(
            header, data, shoff + index * shentsize)
        sections.append((name, kind, offset, size, link))
    return sections, dyn, shstrndx


def _string(data: bytes, start: int) -> str:
    end = data.index(b"\0", start)
    return data[start:end].decode("utf-8", "replace")


def needed(path: str | Path) -> list[str]:
    """The DT_NEEDED sonames of an ELF shared object or executable, in link order."""
    data = Path(path).read_bytes()
    sections, dyn, _ = _sections(data)
    names: list[str] = []
    size = struct.calcsize(dyn)
    for _name, kind, offset, length, link in sections:
        if kind != SHT_DYNAMIC:
            continue
        strtab_offset = sections[link][2]
        for position in range(offset, offset + length, size):
            tag, value = struct.unpack_from(dyn, data, position)
            if tag == DT_NULL:
                break
            if tag == DT_NEEDED:
                names.append(_string(data, strtab_offset + value))
    return names


def has_debug_info(path: str | Path) -> bool:
    """True if the file carries DWARF sections (.debug_info), which strip --strip-debug drops."""
    data = Path(path).read_bytes()
    sections, _, shstrndx = _sections(data)
    if not 0 <= shstrndx < len(sections):
        return False
    names_offset = sections[shstrndx][2]
    return any(_string(data, names_offset + name) == ".debug_info"
               for name, *_ in sections)
