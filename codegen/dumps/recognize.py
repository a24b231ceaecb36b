"""Whether a file holds Kafka log data at all, before anything reads it as such.

A log segment (``.log``) or a KRaft snapshot (``.checkpoint``) is back-to-back log entries, each
starting with its base offset (int64, not negative), its size (int32) and, at byte 16, its magic
byte (2 for record batches, 0 or 1 for the messages of old segments), and each checksummed
(CRC-32C of a v2 batch from its attributes on, CRC-32 of a legacy message from its magic on).
A file whose first entry is none of that is not Kafka data: reading it as such would only
report damage (a text file's first eight bytes make an entry size of gigabytes), so it is a bad
input, named as such, and nothing is read.

Damage stays damage: an empty file (an empty active segment), one of zero bytes (preallocated),
a first entry that frames but whose checksum fails while the next entry frames and checks (or
the file ends with it), and a first entry cut short by the end of the file all start as Kafka
segments; the readers report what is wrong in them.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable
from typing import Final

from codegen.dumps.batches import LOG_OVERHEAD, MIN_LEGACY_SIZE, RECORD_BATCH_OVERHEAD
from codegen.dumps.entry_format import CRC32C
from codegen.dumps.storage import StoragePath
from codegen.errors import BadInputError

__all__ = ["EXPECTED", "NotKafkaData", "not_kafka_reason", "require_kafka_data"]

_HEADER: Final = struct.Struct(">qiIb")  # base offset, size, (crc or leader epoch), magic
_V2_FIELDS: Final = struct.Struct(">Ihiqqqhii")  # crc .. record count, from byte 17
_MIN_SIZE: Final = {0: MIN_LEGACY_SIZE, 1: MIN_LEGACY_SIZE + 8, 2: RECORD_BATCH_OVERHEAD - 12}
_MAGIC_AT: Final = 16
_READ: Final = 1 << 20
"""Bytes read to judge a file: its first entry, and the next one's header, nearly always."""
_FIRST_READ: Final = 1 << 16
"""Bytes read first: where they hold a first entry that frames and checks, that is the answer
the :data:`_READ` bytes give (a segment's first batch is mostly a few KB; reading 1 MB of each
of a dump's segments cost more than judging them)."""

EXPECTED: Final = (
    "a Kafka log segment is back-to-back record batches, each starting with its base offset "
    "(8 bytes), its size (4 bytes) and, at byte 16, its magic byte (2; 0 or 1 in segments "
    "older than Kafka 0.11), checksummed"
)
"""What the error says was expected."""


class NotKafkaData(BadInputError, ValueError):
    """A file given as Kafka log data that is not: the text names the file, what its first
    bytes hold and what a segment holds there."""


def _frame(data: bytes, at: int) -> tuple[int, int] | str:
    """(magic, size) of the entry at ``at`` when its header frames, else why not."""
    if len(data) - at < _HEADER.size:
        return f"{len(data) - at} bytes, fewer than a log entry's header ({_HEADER.size} bytes)"
    base_offset, size, _, magic = _HEADER.unpack_from(data, at)
    if magic not in _MIN_SIZE:
        byte = data[at + _MAGIC_AT]
        shown = f"0x{byte:02x}" + (f" ({chr(byte)!r})" if 0x20 <= byte < 0x7F else "")
        return f"byte {_MAGIC_AT} (the magic byte) is {shown}, not 0, 1 or 2"
    if base_offset < 0:
        return f"the first 8 bytes make a negative base offset ({base_offset})"
    if size < _MIN_SIZE[magic]:
        return (
            f"bytes 8-11 make an entry size of {size}, less than the {_MIN_SIZE[magic]} bytes "
            f"of the smallest magic {magic} entry"
        )
    if magic == 2 and len(data) - at >= RECORD_BATCH_OVERHEAD:
        fields = _V2_FIELDS.unpack_from(data, at + 17)
        attributes, last_delta, count = fields[1], fields[2], fields[8]
        if attributes & 0x07 > 4:
            return f"its batch attributes name compression codec {attributes & 0x07}, not 0-4"
        if last_delta < 0 or count < 0:
            return "its batch header has a negative last offset delta or record count"
    return magic, size


def _checksum_ok(data: bytes, at: int, magic: int, size: int) -> bool:
    entry = memoryview(data)[at : at + LOG_OVERHEAD + size]
    stored: int = struct.unpack_from(">I", entry, 17 if magic == 2 else 12)[0]
    if magic == 2:
        return bool(CRC32C(entry[21:]) == stored)
    return zlib.crc32(entry[16:]) == stored


def not_kafka_reason(data: bytes, file_size: int | None = None) -> str | None:
    """Why the bytes of a file (its first ones: ``file_size`` is the whole file's size) are not
    Kafka log data, or None when they start as a Kafka segment (see the module doc)."""
    total = len(data) if file_size is None else file_size
    if not data.strip(b"\0"):
        return None  # empty, or zero bytes: a preallocated or empty segment
    framed = _frame(data, 0)
    if isinstance(framed, str):
        return framed
    magic, size = framed
    end = LOG_OVERHEAD + size
    if end > total:
        return None  # the first entry is cut short: damage, which the reader reports
    if end > len(data) or _checksum_ok(data, 0, magic, size):
        return None  # a first entry larger than what is read here frames: judged by the reader
    if end == total:
        return None  # its one entry frames but fails its checksum: damage
    following = _frame(data, end)
    if not isinstance(following, str):
        next_magic, next_size = following
        if end + LOG_OVERHEAD + next_size > len(data) or _checksum_ok(
            data, end, next_magic, next_size
        ):
            return None  # the first batch is damaged, the next one is a Kafka entry
    return "its first entry frames, but its checksum does not match and nothing follows it"


def _starts_as_kafka(data: bytes) -> bool:
    """Whether ``data`` (a file's first bytes) start with an entry that frames and whose
    checksum matches: then the file is Kafka data, whatever follows (:func:`not_kafka_reason`
    reads no further than that entry)."""
    if not data.strip(b"\0"):
        return False
    framed = _frame(data, 0)
    if isinstance(framed, str):
        return False
    magic, size = framed
    return LOG_OVERHEAD + size <= len(data) and _checksum_ok(data, 0, magic, size)


def require_kafka_data(files: Iterable[StoragePath]) -> None:
    """Raise :class:`NotKafkaData` for the first of ``files`` that is not Kafka log data."""
    for path in files:
        with path.open("rb") as f:
            data = f.read(_FIRST_READ)
            if len(data) == _FIRST_READ and not _starts_as_kafka(data):
                data += f.read(_READ - _FIRST_READ)  # judged on all the bytes it reads
            size = path.stat().st_size
        reason = not_kafka_reason(data, size)
        if reason is not None:
            raise NotKafkaData(f"not a Kafka log segment: {path}: {reason}; {EXPECTED}")
