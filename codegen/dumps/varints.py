"""Zig-zag varints and record headers of the v2 record format, for the reference record loop.

Malformed bytes raise :class:`MalformedRecord`; a read past the end of the data raises
``IndexError``.
"""

from __future__ import annotations

from codegen.dumps.model import Header
from codegen.runtime.errors import BufferUnderflow, InvalidLength
from codegen.runtime.wire import read_uvarint


class MalformedRecord(Exception):
    """The bytes being parsed are malformed (message = reason)."""


def _read_unsigned(data: bytes, pos: int, max_bytes: int, too_long: str) -> tuple[int, int]:
    """The runtime's unsigned varint of at most ``max_bytes`` bytes at ``pos``, with this
    module's errors: IndexError where the bytes end inside it, MalformedRecord where it is
    longer."""
    try:
        return read_uvarint(data, pos, "", max_bytes)
    except BufferUnderflow:
        raise IndexError("the record ends inside a varint") from None
    except InvalidLength:
        raise MalformedRecord(too_long) from None


def read_zigzag32(data: bytes, pos: int) -> tuple[int, int]:
    """Zig-zag varint of at most 5 bytes at ``pos``; returns (value, next position)."""
    result, pos = _read_unsigned(data, pos, 5, "varint is longer than 5 bytes")
    result &= 0xFFFFFFFF
    return (result >> 1) ^ -(result & 1), pos


def read_zigzag64(data: bytes, pos: int) -> tuple[int, int]:
    """Zig-zag varlong of at most 10 bytes at ``pos``; returns (value, next position)."""
    result, pos = _read_unsigned(data, pos, 10, "varlong is longer than 10 bytes")
    result &= 0xFFFFFFFFFFFFFFFF
    return (result >> 1) ^ -(result & 1), pos


def read_headers(data: bytes, pos: int, end: int) -> tuple[tuple[Header, ...], int]:
    """The header list of a record at ``pos`` (which ends at ``end``); returns (headers, next)."""
    count, pos = read_zigzag32(data, pos)
    if count < 0:
        raise MalformedRecord(f"invalid negative header count {count}")
    if count > (end - pos) // 2:
        raise MalformedRecord(f"header count {count} does not fit in the record")
    out: list[Header] = []
    for _ in range(count):
        n, pos = read_zigzag32(data, pos)
        if n < 0:
            raise MalformedRecord(f"invalid negative header key size {n}")
        key = data[pos : pos + n]
        pos += n
        n, pos = read_zigzag32(data, pos)
        value: bytes | None
        if n >= 0:
            value = data[pos : pos + n]
            pos += n
        elif n == -1:
            value = None
        else:
            raise MalformedRecord(f"invalid header value size {n}")
        if pos > end:
            raise MalformedRecord("header runs past the end of the record")
        out.append(Header(key, value))
    return tuple(out), pos
