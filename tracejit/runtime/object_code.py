"""Structural checks of object code read back from the on-disk cache (runtime/disk_cache.py),
before LLVM's linker sees it: the linker trusts its input, and malformed object code makes it
abort the process, or read and write out of bounds. An entry passes only as a relocatable ELF
object for this host's architecture whose headers, sections, symbols and relocations all lie
within the file and refer to each other by valid indices, and which defines every function the
program's IR says it defines. (The authenticated tag is what vouches for the code itself; this
is the second line, against a damaged entry that the tag somehow let through.)"""
from __future__ import annotations

import platform
import struct
import sys
from collections.abc import Iterable

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")
_RELA = struct.Struct("<QQq")
_REL = struct.Struct("<QQ")
_ET_REL = 1
_SHT_SYMTAB, _SHT_STRTAB, _SHT_RELA, _SHT_NOBITS, _SHT_REL = 2, 3, 4, 8, 9
_SHN_LORESERVE = 0xFF00
_STB_GLOBAL, _STB_WEAK = 1, 2
_STT_FUNC = 2
_MACHINES = {"x86_64": 62, "amd64": 62, "aarch64": 183, "arm64": 183}


class BadObject(ValueError):
    """Object code that must not reach the linker; the message says what is wrong."""


def check(obj: bytes, defines: Iterable[str]) -> None:
    """Raise BadObject unless `obj` is well-formed ELF for this host defining `defines`."""
    sections = _sections(obj)
    symbol_counts: dict[int, int] = {}
    defined: set[str] = set()
    for index, (_, kind, _, _, offset, size, link, _, _, entsize) in enumerate(sections):
        if kind == _SHT_SYMTAB:
            names = _section_data(obj, sections, link, want=_SHT_STRTAB)
            symbol_counts[index] = _check_symbols(obj[offset:offset + size], entsize, names,
                                                  sections, defined)
    for index, (_, kind, _, _, offset, size, link, info, _, entsize) in enumerate(sections):
        if kind in (_SHT_RELA, _SHT_REL):
            if link not in symbol_counts:
                raise BadObject(f"relocation section {index} links to {link}, not a symbol table")
            if info >= len(sections):
                raise BadObject(f"relocation section {index} applies to section {info}, "
                                f"of {len(sections)}")
            record = _RELA if kind == _SHT_RELA else _REL
            target_size = sections[info][5]
            for r_offset, r_info, *_ in _records(obj[offset:offset + size], entsize, record):
                if r_offset >= target_size or (r_info >> 32) >= symbol_counts[link]:
                    raise BadObject(f"a relocation of section {index} is out of bounds")
    missing = sorted(set(defines) - defined)
    if missing:
        raise BadObject(f"the object code does not define {missing}")


def _sections(obj: bytes) -> list[tuple]:
    if len(obj) < _EHDR.size:
        raise BadObject(f"{len(obj)} bytes is shorter than an ELF header")
    (ident, e_type, machine, _, _, _, shoff, _, _, _, _, shentsize, shnum,
     shstrndx) = _EHDR.unpack_from(obj)
    if ident[:4] != b"\x7fELF" or ident[4] != 2 or ident[5] != 1 or sys.byteorder != "little":
        raise BadObject("not a 64-bit little-endian ELF object")
    expected = _MACHINES.get(platform.machine().lower())
    if e_type != _ET_REL or expected is None or machine != expected:
        raise BadObject(f"not a relocatable object for {platform.machine()} "
                        f"(type {e_type}, machine {machine})")
    if shentsize != _SHDR.size or shnum == 0 or shstrndx >= shnum:
        raise BadObject("malformed section header table")
    if shoff + shnum * shentsize > len(obj):
        raise BadObject("the section header table runs past the end of the object")
    sections = [_SHDR.unpack_from(obj, shoff + i * shentsize) for i in range(shnum)]
    for index, (_, kind, _, _, offset, size, *_) in enumerate(sections):
        if kind != _SHT_NOBITS and offset + size > len(obj):
            raise BadObject(f"section {index} runs past the end of the object")
    names = _section_data(obj, sections, shstrndx, want=_SHT_STRTAB)
    if any(name >= max(len(names), 1) for name, *_ in sections):
        raise BadObject("a section name lies outside the section-name table")
    return sections


def _section_data(obj: bytes, sections: list[tuple], index: int, want: int) -> bytes:
    if index >= len(sections) or sections[index][1] != want:
        raise BadObject(f"section {index} is not the string table it should be")
    offset, size = sections[index][4], sections[index][5]
    return obj[offset:offset + size]


def _records(data: bytes, entsize: int, record: struct.Struct):
    if entsize != record.size or len(data) % record.size:
        raise BadObject("a table's entry size does not match its records")
    return record.iter_unpack(data)


def _check_symbols(data: bytes, entsize: int, names: bytes, sections: list[tuple],
                   defined: set[str]) -> int:
    count = 0
    for name, info, _, shndx, value, size in _records(data, entsize, _SYM):
        count += 1
        if name >= max(len(names), 1):
            raise BadObject("a symbol's name lies outside its string table")
        if shndx == 0 or shndx >= _SHN_LORESERVE:
            continue  # undefined (bound by the linker), absolute or common
        if shndx >= len(sections):
            raise BadObject(f"a symbol lies in section {shndx}, of {len(sections)}")
        if value + size > sections[shndx][5]:
            raise BadObject("a symbol runs past the end of its section")
        # (a local function symbol is an internal function the IR defines: a parallel loop's
        # chunk body, math's out-of-line paths)
        if info >> 4 in (_STB_GLOBAL, _STB_WEAK) or info & 0xF == _STT_FUNC:
            end = names.find(b"\0", name)
            defined.add(names[name:end if end >= 0 else len(names)].decode("utf-8", "replace"))
    return count
