"""Legacy log entries: v0/v1 messages (magic 0 and 1), alone or as a compressed wrapper of
inner messages, decoded as :class:`RecordBatch` values like v2 batches (a wrapper's inner
messages are its records) or a :class:`SegmentError` saying why not.
"""

from __future__ import annotations

import struct
import zlib
from typing import Final

from codegen.dumps.compression import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    CompressionError,
    decompress,
)
from codegen.dumps.entry_format import (
    CODECS,
    ENTRY_HEADER,
    I32,
    I64,
    LOG_OVERHEAD,
    MIN_LEGACY_SIZE,
    MIN_V1_SIZE,
    TIMESTAMP_TYPES,
    U32,
    TooManyRecords,
    entry_error,
    too_many_records,
)
from codegen.dumps.model import (
    NO_HEADERS,
    ErrorKind,
    Record,
    RecordBatch,
    SegmentError,
    TimestampType,
)
from codegen.dumps.varints import MalformedRecord

__all__ = ["decode_legacy", "legacy_record_checksums"]

_LEGACY_HEADER: Final = struct.Struct(">qiIBB")
"""A legacy entry's log header and the message's crc, magic and attributes."""


def _parse_legacy_message(
    data: bytes, start: int, end: int
) -> tuple[int, int, int, bytes | None, bytes | None]:
    """(magic, attributes, timestamp, key, value) of the message in ``data[start:end]``."""
    if end - start < MIN_LEGACY_SIZE:
        raise MalformedRecord(f"message of {end - start} bytes is shorter than the minimum")
    magic = data[start + 4]
    attrs = data[start + 5]
    pos = start + 6
    if magic == 1:
        if end - start < MIN_V1_SIZE:
            raise MalformedRecord(f"v1 message of {end - start} bytes is shorter than the minimum")
        timestamp = I64.unpack_from(data, pos)[0]
        pos += 8
    elif magic == 0:
        timestamp = -1
    else:
        raise MalformedRecord(f"unknown magic byte ({magic})")
    n = I32.unpack_from(data, pos)[0]
    pos += 4
    key: bytes | None = None
    if n >= 0:
        if pos + n + 4 > end:
            raise MalformedRecord(f"key size {n} runs past the end of the message")
        key = data[pos : pos + n]
        pos += n
    elif n != -1:
        raise MalformedRecord(f"invalid key size {n}")
    n = I32.unpack_from(data, pos)[0]
    pos += 4
    value: bytes | None = None
    if n >= 0:
        if pos + n > end:
            raise MalformedRecord(f"value size {n} runs past the end of the message")
        value = data[pos : pos + n]
        pos += n
    elif n != -1:
        raise MalformedRecord(f"invalid value size {n}")
    if pos != end:
        raise MalformedRecord(f"{end - pos} bytes left after the message value")
    return magic, attrs, timestamp, key, value


def _inner_messages(
    inner: bytes,
    wrapper_offset: int,
    wrapper_magic: int,
    wrapper_ts: int,
    log_append: bool,
    verify_crc: bool,
    max_records: int,
) -> list[Record]:
    items: list[tuple[int, int, int, bytes | None, bytes | None]] = []
    n = len(inner)
    p = 0
    while p < n:
        if len(items) == max_records:
            raise TooManyRecords(too_many_records(f"{max_records + 1} or more", max_records))
        if p + LOG_OVERHEAD > n:
            raise MalformedRecord(f"inner message set ends with {n - p} stray bytes")
        ioff, isize = ENTRY_HEADER.unpack_from(inner, p)
        if isize < MIN_LEGACY_SIZE or p + LOG_OVERHEAD + isize > n:
            raise MalformedRecord(f"inner message at byte {p} has invalid size {isize}")
        mstart = p + LOG_OVERHEAD
        mend = mstart + isize
        if verify_crc:
            stored = U32.unpack_from(inner, mstart)[0]
            computed = zlib.crc32(memoryview(inner)[mstart + 4 : mend])
            if stored != computed:
                raise MalformedRecord(
                    f"inner message at offset {ioff} is corrupt "
                    f"(stored crc = {stored}, computed crc = {computed})"
                )
        _, iattrs, its, ikey, ivalue = _parse_legacy_message(inner, mstart, mend)
        if iattrs & 0x07:
            raise MalformedRecord(f"inner message at offset {ioff} is itself compressed")
        items.append((ioff, iattrs, its, ikey, ivalue))
        p = mend
    if not items:
        return []
    shift = wrapper_offset - items[-1][0] if wrapper_magic > 0 else 0
    out: list[Record] = []
    for ioff, iattrs, its, ikey, ivalue in items:
        ts = wrapper_ts if log_append else its
        out.append(Record(ioff + shift, ts, ikey, ivalue, NO_HEADERS, -1, iattrs))
    return out


def decode_legacy(
    buf: bytes, file: str, position: int, max_size: int, verify_crc: bool, max_records: int
) -> RecordBatch | SegmentError:
    total = len(buf)
    offset, _size, crc, magic, attrs = _LEGACY_HEADER.unpack_from(buf)
    computed = zlib.crc32(memoryview(buf)[16:])
    if verify_crc and computed != crc:
        return entry_error(
            ErrorKind.CRC_MISMATCH,
            file,
            position,
            total,
            offset,
            f"message is corrupt (stored crc = {crc}, computed crc = {computed})",
        )
    try:
        _, _, timestamp, key, value = _parse_legacy_message(buf, LOG_OVERHEAD, total)
    except (MalformedRecord, struct.error) as exc:
        kind = ErrorKind.BAD_MAGIC if "magic" in str(exc) else ErrorKind.CORRUPT_RECORDS
        return entry_error(kind, file, position, total, offset, str(exc))
    codec_id = attrs & 0x07
    ts_type = TimestampType.NO_TIMESTAMP_TYPE if magic == 0 else TIMESTAMP_TYPES[(attrs >> 3) & 1]
    if codec_id > 4:
        return entry_error(
            ErrorKind.BAD_HEADER,
            file,
            position,
            total,
            offset,
            f"unknown compression type id {codec_id}",
        )
    if codec_id == 0:
        records = [Record(offset, timestamp, key, value, NO_HEADERS, -1, attrs)]
    else:
        if value is None:
            return entry_error(
                ErrorKind.CORRUPT_RECORDS,
                file,
                position,
                total,
                offset,
                "found invalid compressed record set with null value",
            )
        try:
            inner = decompress(codec_id, value, max_size)
        except CompressionError as exc:
            kind = ErrorKind.TOO_LARGE if exc.too_large else ErrorKind.COMPRESSION
            return entry_error(kind, file, position, total, offset, exc.message)
        try:
            records = _inner_messages(
                inner,
                offset,
                magic,
                timestamp,
                ts_type == TimestampType.LOG_APPEND_TIME,
                verify_crc,
                max_records,
            )
        except (MalformedRecord, struct.error) as exc:
            kind = (
                ErrorKind.TOO_MANY_RECORDS
                if isinstance(exc, TooManyRecords)
                else ErrorKind.CORRUPT_RECORDS
            )
            return entry_error(kind, file, position, total, offset, str(exc))
    return RecordBatch(
        file,
        position,
        total,
        magic,
        records[0].offset if records else offset,
        offset,
        -1,
        crc,
        computed == crc,
        attrs,
        CODECS[codec_id],
        ts_type,
        timestamp,
        timestamp,
        -1,
        -1,
        -1,
        len(records),
        records,
    )


def legacy_record_checksums(
    buf: bytes, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
) -> list[tuple[int, bool]]:
    """(stored CRC, whether it matches) of each record of a legacy v0/v1 entry, in order.

    ``buf`` is the whole entry (log header included) as :func:`decode_entry` read it: an
    uncompressed message is its own record; a compressed wrapper's records are its inner
    messages. Kafka's ``kafka-dump-log`` prints these after every legacy record.
    """
    _, _, crc, _, attrs = _LEGACY_HEADER.unpack_from(buf)
    if not attrs & 0x07:
        return [(crc, zlib.crc32(memoryview(buf)[16:]) == crc)]
    value = _parse_legacy_message(buf, LOG_OVERHEAD, len(buf))[4]
    inner = decompress(attrs & 0x07, value or b"", max_size)
    out: list[tuple[int, bool]] = []
    p = 0
    while p + LOG_OVERHEAD + MIN_LEGACY_SIZE <= len(inner):
        size = ENTRY_HEADER.unpack_from(inner, p)[1]
        start = p + LOG_OVERHEAD
        stored = U32.unpack_from(inner, start)[0]
        out.append((stored, zlib.crc32(memoryview(inner)[start + 4 : start + size]) == stored))
        p = start + size
    return out
