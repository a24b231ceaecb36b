"""Decoding of one log entry: a v2 record batch or a legacy v0/v1 message (or wrapper).

The entry is given as the bytes from its 12-byte log header (``int64 offset``, ``int32 size``)
to its end; a legacy one is read by :mod:`codegen.dumps.legacy`, with the format both share
(:mod:`codegen.dumps.entry_format`). Decoding never raises on bad data: the result is a
:class:`RecordBatch` or a :class:`SegmentError` saying why not.

:func:`parse_v2` is the reference record loop, written for clarity: the native loops
(``codegen/native/records.c``) are the fast ones and give the same records and errors.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Final, TypeVar

from codegen.dumps.compression import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    CompressionError,
    decompress,
    decompressed_size_bound,
)
from codegen.dumps.entry_format import (
    CODECS,
    CRC32C,
    DEFAULT_MAX_BATCH_RECORDS,
    I32,
    I64,
    LOG_OVERHEAD,
    MIN_LEGACY_SIZE,
    MIN_V2_RECORD_SIZE,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPES,
    entry_error,
    too_many_records,
)
from codegen.dumps.legacy import decode_legacy
from codegen.dumps.model import (
    NO_CONTROLS,
    BatchHeader,
    ControlRecord,
    ControlType,
    ErrorKind,
    RawRecord,
    Record,
    RecordBatch,
    SegmentError,
    increment_sequence,
)
from codegen.dumps.varints import (
    MalformedRecord,
    read_headers,
    read_zigzag32,
    read_zigzag64,
)

__all__ = [
    "DEFAULT_MAX_BATCH_RECORDS",
    "LOG_OVERHEAD",
    "MIN_LEGACY_SIZE",
    "MIN_V2_RECORD_SIZE",
    "RECORD_BATCH_OVERHEAD",
    "V2RecordLoop",
    "decode_entry",
    "decode_entry_raw",
    "decode_entry_with",
    "decode_legacy_message",
    "keep_rows",
    "parse_control_key",
    "parse_end_txn_marker",
    "parse_v2",
    "parse_v2_raw",
    "read_batch_header",
]


_V2_HEADER: Final = struct.Struct(">qiiBIhiqqqhii")
_CONTROL_KEY: Final = struct.Struct(">hh")
_END_TXN: Final = struct.Struct(">hi")


DAMAGE: Final = (
    MalformedRecord,
    CompressionError,
    struct.error,
    ValueError,
    LookupError,
    OverflowError,
)
"""What reading damaged bytes can raise: the parsers' and decompressors' own errors, and those of
unpacking, indexing and converting what the bytes say. Decoding catches these (and only these)
as a ``corrupt-records`` error where no earlier check named the damage."""


class _CorruptControl(MalformedRecord):
    """Internal: a control record key or marker value is malformed."""


def _record_size_error(size: int, start: int, pos: int) -> MalformedRecord:
    return MalformedRecord(
        f"invalid record size: expected {size} bytes in record payload, read {pos - start}"
    )


# ---------------------------------------------------------------------------------------------
# record loops


def _read_bytes(data: bytes, pos: int, what: str) -> tuple[bytes | None, int]:
    """A record's key or value at ``pos``: its length (-1: null), then its bytes."""
    n, pos = read_zigzag32(data, pos)
    if n == -1:
        return None, pos
    if n < 0:
        raise MalformedRecord(f"invalid {what} size {n}")
    return data[pos : pos + n], pos + n


def parse_v2(data: bytes, pos: int, end: int, batch: RecordBatch) -> list[Record]:
    """The records of a v2 batch, ``data[pos:end]`` (decompressed): the reference record loop.

    The native loops (``codegen/native/records.c``) give the same records and errors.
    """
    log_append = bool(batch.attributes & 0x08)
    base_seq = batch.base_sequence
    out: list[Record] = []
    for _ in range(batch.record_count):
        size, pos = read_zigzag32(data, pos)
        start = pos
        attributes = data[pos]
        ts_delta, pos = read_zigzag64(data, pos + 1)
        off_delta, pos = read_zigzag32(data, pos)
        key, pos = _read_bytes(data, pos, "key")
        value, pos = _read_bytes(data, pos, "value")
        headers, pos = read_headers(data, pos, start + size)
        if pos != start + size:
            raise _record_size_error(size, start, pos)
        out.append(
            Record(
                offset=batch.base_offset + off_delta,
                timestamp=batch.max_timestamp if log_append else batch.base_timestamp + ts_delta,
                key=key,
                value=value,
                headers=headers,
                sequence=increment_sequence(base_seq, off_delta) if base_seq >= 0 else -1,
                attributes=attributes,
            )
        )
    if pos != end:
        raise MalformedRecord(
            f"{end - pos} bytes left after the last of {batch.record_count} records"
        )
    return out


def parse_v2_raw(data: bytes, pos: int, end: int, batch: RecordBatch) -> list[RawRecord]:
    """The raw mode's :data:`V2RecordLoop`: ``(offset, timestamp, key, value)`` per record."""
    return [(r.offset, r.timestamp, r.key, r.value) for r in parse_v2(data, pos, end, batch)]


# ---------------------------------------------------------------------------------------------
# control records


def parse_control_key(key: bytes | None) -> tuple[int, int]:
    """``(version, type)`` of a control record key; ValueError if it is malformed.

    As in Kafka's ``ControlRecordType.parse``, a key shorter than 4 bytes or with a negative
    version is invalid; a version above 0 is read as version 0; an unknown type is not an error.
    """
    if key is None or len(key) < _CONTROL_KEY.size:
        size = -1 if key is None else len(key)
        raise ValueError(f"invalid value size found for control record key: {size}")
    version, ctype = _CONTROL_KEY.unpack_from(key)
    if version < 0:
        raise ValueError(f"invalid version found for control record: {version}")
    return version, ctype


def parse_end_txn_marker(value: bytes | None) -> tuple[int, int]:
    """``(version, coordinatorEpoch)`` of an ABORT/COMMIT marker value; ValueError if malformed.

    Versions above 0 are read as version 0, as Kafka's ``EndTransactionMarker`` does.
    """
    if value is None or len(value) < _END_TXN.size:
        size = -1 if value is None else len(value)
        raise ValueError(f"invalid value size found for end transaction marker: {size}")
    version, epoch = _END_TXN.unpack_from(value)
    if version < 0:
        raise ValueError(f"invalid version found for end transaction marker: {version}")
    return version, epoch


def _to_control(records: list[Record]) -> list[Record]:
    out: list[Record] = []
    for r in records:
        try:
            version, ctype = parse_control_key(r.key)
            marker_version: int | None = None
            epoch: int | None = None
            if ctype in (ControlType.ABORT, ControlType.COMMIT):
                marker_version, epoch = parse_end_txn_marker(r.value)
        except ValueError as exc:
            raise _CorruptControl(f"control record at offset {r.offset}: {exc}") from None
        out.append(
            ControlRecord(
                r.offset,
                r.timestamp,
                r.key,
                r.value,
                r.headers,
                r.sequence,
                r.attributes,
                version,
                ctype,
                marker_version,
                epoch,
            )
        )
    return out


# ---------------------------------------------------------------------------------------------
# v2 batches


def _check_v2(
    buf: bytes, file: str, position: int, max_size: int, verify_crc: bool, max_records: int
) -> RecordBatch | SegmentError:
    """Check a v2 batch's header (CRC, codec, record count against the bytes and the caps) and
    return it without records; nothing is decompressed."""
    total = len(buf)
    (
        base_offset,
        _length,
        leader_epoch,
        magic,
        crc,
        attrs,
        last_delta,
        base_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_seq,
        count,
    ) = _V2_HEADER.unpack_from(buf)
    computed = CRC32C(memoryview(buf)[21:])
    if verify_crc and computed != crc:
        return entry_error(
            ErrorKind.CRC_MISMATCH,
            file,
            position,
            total,
            base_offset,
            f"record batch is corrupt (stored crc = {crc}, computed crc = {computed})",
        )
    codec_id = attrs & 0x07
    if codec_id > 4:
        return entry_error(
            ErrorKind.BAD_HEADER,
            file,
            position,
            total,
            base_offset,
            f"unknown compression type id {codec_id}",
        )
    if count < 0:
        return entry_error(
            ErrorKind.BAD_HEADER,
            file,
            position,
            total,
            base_offset,
            f"invalid record count {count}",
        )
    stored = total - RECORD_BATCH_OVERHEAD
    bound = decompressed_size_bound(codec_id, stored)
    if bound is not None and count > bound // MIN_V2_RECORD_SIZE:
        return entry_error(
            ErrorKind.CORRUPT_RECORDS,
            file,
            position,
            total,
            base_offset,
            f"record count {count} cannot fit in {stored} bytes of records"
            if codec_id == 0
            else f"record count {count} cannot fit in {stored} bytes of "
            f"{CODECS[codec_id].name.lower()} records (at most {bound} bytes decompressed)",
        )
    if count > max_size // MIN_V2_RECORD_SIZE:
        return entry_error(
            ErrorKind.TOO_LARGE,
            file,
            position,
            total,
            base_offset,
            f"record count {count} needs at least {count * MIN_V2_RECORD_SIZE} bytes of "
            f"records, more than the limit of {max_size} bytes; raise max_batch_size "
            "(--max-batch-bytes) to read this batch",
        )
    if count > max_records:
        return entry_error(
            ErrorKind.TOO_MANY_RECORDS,
            file,
            position,
            total,
            base_offset,
            too_many_records(count, max_records),
        )
    return RecordBatch(
        file,
        position,
        total,
        magic,
        base_offset,
        base_offset + last_delta,
        leader_epoch,
        crc,
        computed == crc,
        attrs,
        CODECS[codec_id],
        TIMESTAMP_TYPES[(attrs >> 3) & 1],
        base_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_seq,
        count,
    )


def _open_v2(
    buf: bytes, file: str, position: int, max_size: int, verify_crc: bool, max_records: int
) -> tuple[RecordBatch, bytes, int, int] | SegmentError:
    """Check a v2 batch and return it without records, plus where its records are.

    The record count is checked against the bytes (and the caps) before anything is
    decompressed or allocated, so the record loops can trust it.
    """
    batch = _check_v2(buf, file, position, max_size, verify_crc, max_records)
    if isinstance(batch, SegmentError):
        return batch
    total, count, base_offset = len(buf), batch.record_count, batch.base_offset
    codec_id = batch.attributes & 0x07
    if codec_id == 0:
        data, start, end = buf, RECORD_BATCH_OVERHEAD, total
    else:
        try:
            data = decompress(codec_id, memoryview(buf)[RECORD_BATCH_OVERHEAD:], max_size)
        except CompressionError as exc:
            kind = ErrorKind.TOO_LARGE if exc.too_large else ErrorKind.COMPRESSION
            return entry_error(kind, file, position, total, base_offset, exc.message)
        start, end = 0, len(data)
    if count > (end - start) // MIN_V2_RECORD_SIZE:
        return entry_error(
            ErrorKind.CORRUPT_RECORDS,
            file,
            position,
            total,
            base_offset,
            f"record count {count} cannot fit in {end - start} bytes of records",
        )
    return batch, data, start, end


def _decode_v2(
    buf: bytes, file: str, position: int, max_size: int, verify_crc: bool, max_records: int
) -> RecordBatch | SegmentError:
    opened = _open_v2(buf, file, position, max_size, verify_crc, max_records)
    if isinstance(opened, SegmentError):
        return opened
    batch, data, start, end = opened
    try:
        records = parse_v2(data, start, end, batch)
        if batch.attributes & 0x20:
            records = _to_control(records)
    except MalformedRecord as exc:
        kind = (
            ErrorKind.CORRUPT_CONTROL
            if isinstance(exc, _CorruptControl)
            else ErrorKind.CORRUPT_RECORDS
        )
        return entry_error(kind, file, position, len(buf), batch.base_offset, str(exc))
    except IndexError:
        return entry_error(
            ErrorKind.CORRUPT_RECORDS,
            file,
            position,
            len(buf),
            batch.base_offset,
            "records run past the end of the batch",
        )
    batch.records = records
    return batch


# ---------------------------------------------------------------------------------------------
# entry points


def decode_entry(
    buf: bytes,
    *,
    file: str = "<bytes>",
    position: int = 0,
    max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    verify_crc: bool = True,
    max_records: int = DEFAULT_MAX_BATCH_RECORDS,
) -> RecordBatch | SegmentError:
    """Decode one complete log entry (log header included; ``len(buf)`` = 12 + size field).

    The caller has checked that the size field matches ``len(buf)``. ``verify_crc=False`` decodes
    batches whose checksum is wrong (``crc_valid`` tells). ``max_size`` caps the decompressed
    size and ``max_records`` the record count of the entry (``too-large`` and
    ``too-many-records`` errors).
    """
    try:
        if len(buf) < LOG_OVERHEAD + 5:
            return entry_error(
                ErrorKind.BAD_LENGTH, file, position, len(buf), None, "entry too short"
            )
        magic = buf[16]
        if magic == 2:
            if len(buf) < RECORD_BATCH_OVERHEAD:
                return entry_error(
                    ErrorKind.BAD_LENGTH,
                    file,
                    position,
                    len(buf),
                    I64.unpack_from(buf)[0],
                    f"record batch size {len(buf) - LOG_OVERHEAD} is smaller than the "
                    f"minimum {RECORD_BATCH_OVERHEAD - LOG_OVERHEAD}",
                )
            return _decode_v2(buf, file, position, max_size, verify_crc, max_records)
        if magic < 2:
            return decode_legacy(buf, file, position, max_size, verify_crc, max_records)
        return entry_error(
            ErrorKind.BAD_MAGIC,
            file,
            position,
            len(buf),
            I64.unpack_from(buf)[0],
            f"unknown magic byte ({magic})",
        )
    except DAMAGE as exc:  # damage no check above names: bad data must not escape
        return entry_error(
            ErrorKind.CORRUPT_RECORDS,
            file,
            position,
            len(buf),
            None,
            f"unexpected {type(exc).__name__}: {exc}",
        )


_Item = TypeVar("_Item")

V2RecordLoop = Callable[[bytes, int, int, RecordBatch], list[_Item]]
"""Parses the records of a checked v2 data batch: ``(data, start, end, batch)`` -> one item per
record, where ``data[start:end]`` holds the (decompressed) records. It raises ``MalformedRecord`` or
IndexError on malformed records, which turn into a ``corrupt-records`` error for the batch."""


def keep_rows(batch: RecordBatch, rows: list[RawRecord]) -> list[RawRecord]:
    """The raw mode's ``other_records`` for :func:`decode_entry_with`: the rows as they are."""
    return rows


def decode_entry_with(
    buf: bytes,
    v2_records: V2RecordLoop[_Item],
    other_records: Callable[[RecordBatch, list[RawRecord]], list[_Item]],
    *,
    file: str = "<bytes>",
    position: int = 0,
    max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    verify_crc: bool = True,
    max_records: int = DEFAULT_MAX_BATCH_RECORDS,
) -> tuple[RecordBatch, list[_Item]] | SegmentError:
    """Decode one log entry, turning its records into items with the caller's functions.

    v2 data batches go through ``v2_records`` straight from the record bytes (a caller can
    decode while it parses). Legacy entries, control batches and anything odd are decoded by
    :func:`decode_entry` and their records passed to ``other_records`` as
    ``(offset, timestamp, key, value)`` tuples (control keys and markers already checked; the
    batch it is given still holds its records). The returned batch has an empty ``records``
    list.
    """
    # Attribute bit 5 (isControl) is in the low byte of the int16 at 21.
    if len(buf) < RECORD_BATCH_OVERHEAD or buf[16] != 2 or buf[22] & 0x20:
        decoded = decode_entry(
            buf,
            file=file,
            position=position,
            max_size=max_size,
            verify_crc=verify_crc,
            max_records=max_records,
        )
        if isinstance(decoded, SegmentError):
            return decoded
        rows = [(r.offset, r.timestamp, r.key, r.value) for r in decoded.records]
        items = other_records(decoded, rows)  # the batch still holds its records here
        decoded.records = []
        return decoded, items
    base_offset: int | None = None
    try:
        opened = _open_v2(buf, file, position, max_size, verify_crc, max_records)
        if isinstance(opened, SegmentError):
            return opened
        batch, data, start, end = opened
        base_offset = batch.base_offset
        items = v2_records(data, start, end, batch)
    except MalformedRecord as exc:
        reason = str(exc)
    except IndexError:
        reason = "records run past the end of the batch"
    except DAMAGE as exc:  # as in decode_entry
        reason = f"unexpected {type(exc).__name__}: {exc}"
    else:
        return batch, items
    return entry_error(ErrorKind.CORRUPT_RECORDS, file, position, len(buf), base_offset, reason)


def read_batch_header(
    buf: bytes,
    *,
    file: str = "<bytes>",
    position: int = 0,
    max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    verify_crc: bool = True,
    max_records: int = DEFAULT_MAX_BATCH_RECORDS,
) -> BatchHeader | SegmentError:
    """The header of one log entry without its records: the reference of the header pass.

    A v2 data batch gets :func:`decode_entry`'s header checks (CRC, codec, record count against
    the bytes and the caps); its records are neither decompressed nor parsed, so damage inside
    them goes unseen. Control batches and legacy entries are decoded whole by
    :func:`decode_entry` (a control batch's records are its markers).
    """
    if len(buf) >= RECORD_BATCH_OVERHEAD and buf[16] == 2 and not buf[22] & 0x20:
        try:
            checked = _check_v2(buf, file, position, max_size, verify_crc, max_records)
        except DAMAGE as exc:  # as in decode_entry
            reason = f"unexpected {type(exc).__name__}: {exc}"
            return entry_error(ErrorKind.CORRUPT_RECORDS, file, position, len(buf), None, reason)
        if isinstance(checked, SegmentError):
            return checked
        batch, controls = checked, NO_CONTROLS
    else:
        decoded = decode_entry(
            buf,
            file=file,
            position=position,
            max_size=max_size,
            verify_crc=verify_crc,
            max_records=max_records,
        )
        if isinstance(decoded, SegmentError):
            return decoded
        batch = decoded
        controls = tuple(
            (r.offset, r.control_type) for r in batch.records if isinstance(r, ControlRecord)
        )
    return BatchHeader(
        batch.position,
        batch.size,
        batch.magic,
        batch.base_offset,
        batch.last_offset,
        batch.base_timestamp,
        batch.max_timestamp,
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        batch.attributes,
        batch.record_count,
        controls,
    )


def decode_entry_raw(
    buf: bytes,
    *,
    file: str = "<bytes>",
    position: int = 0,
    max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    verify_crc: bool = True,
    max_records: int = DEFAULT_MAX_BATCH_RECORDS,
) -> tuple[RecordBatch, list[RawRecord]] | SegmentError:
    """Like :func:`decode_entry`, but records come as ``(offset, timestamp, key, value)`` tuples.

    The returned batch has an empty ``records`` list. Control records are returned as tuples
    too (with their raw key and value) after their keys have been checked.
    """
    return decode_entry_with(
        buf,
        parse_v2_raw,
        keep_rows,
        file=file,
        position=position,
        max_size=max_size,
        verify_crc=verify_crc,
        max_records=max_records,
    )


def decode_legacy_message(
    message: bytes,
    *,
    offset: int = 0,
    max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    verify_crc: bool = True,
    max_records: int = DEFAULT_MAX_BATCH_RECORDS,
) -> RecordBatch | SegmentError:
    """Decode a bare legacy message (starting at its CRC, without the 12-byte log header)."""
    if len(message) < MIN_LEGACY_SIZE:
        return entry_error(
            ErrorKind.BAD_LENGTH,
            "<message>",
            0,
            len(message),
            offset,
            f"message of {len(message)} bytes is shorter than the minimum",
        )
    if message[4] > 1:
        return entry_error(
            ErrorKind.BAD_MAGIC,
            "<message>",
            0,
            len(message),
            offset,
            f"unknown magic byte ({message[4]})",
        )
    buf = I64.pack(offset) + I32.pack(len(message)) + message
    return decode_entry(
        buf, file="<message>", max_size=max_size, verify_crc=verify_crc, max_records=max_records
    )
