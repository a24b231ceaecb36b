"""Writing log entries in Kafka's on-disk format: v2 record batches and legacy v0/v1 messages.

Used to synthesize segments for tests, benchmarks and demos. :class:`SegmentWriter` streams
entries to a file (nothing is kept in memory but the batch being written) and tracks the next
offset; the ``encode_*`` functions return the bytes of one entry.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import BinaryIO, Final, cast

from codegen.dumps.compression import Codec, compress
from codegen.dumps.entry_format import CRC32C
from codegen.dumps.model import ControlType, Header, TimestampType
from codegen.runtime.wire import uvarint

__all__ = [
    "NewRecord",
    "SegmentWriter",
    "encode_control_batch",
    "encode_legacy_entry",
    "encode_record_batch",
    "frame_v2_batch",
]

_V2_HEADER: Final = struct.Struct(">qiiBIhiqqqhii")
_ENTRY: Final = struct.Struct(">qi")
_CONTROL_KEY: Final = struct.Struct(">hh")
_END_TXN: Final = struct.Struct(">hi")
_I32: Final = struct.Struct(">i")
_I64: Final = struct.Struct(">q")


@dataclass(slots=True)
class NewRecord:
    """A record to write. ``timestamp=None`` uses the batch timestamp; ``offset_delta=None``
    uses the record's index in the batch."""

    key: bytes | None
    value: bytes | None
    timestamp: int | None = None
    headers: Sequence[Header] = ()
    offset_delta: int | None = None
    attributes: int = 0


RecordLike = NewRecord | tuple[bytes | None, bytes | None]
"""A :class:`NewRecord`, or a ``(key, value)`` pair."""


def _varint(value: int) -> bytes:
    """Zig-zag varint (also used for varlongs: Python ints do not overflow)."""
    return uvarint(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


_SMALL: Final = tuple(_varint(i) for i in range(-1, 64))


def _zz(value: int) -> bytes:
    return _SMALL[value + 1] if -1 <= value < 63 else _varint(value)


def _encode_pairs(pairs: Sequence[tuple[bytes | None, bytes | None]]) -> bytes:
    """The records of ``(key, value)`` pairs at the batch's timestamp, offset deltas 0, 1, ...:
    :func:`_encode_records`' result for them, in fewer steps (most batches written are such)."""
    parts: list[bytes] = []
    append = parts.append
    for index, (key, value) in enumerate(pairs):
        # attributes 0, timestamp delta 0, the offset delta, then key, value, no headers
        head = b"\0\0" + (_SMALL[index + 1] if index < 63 else _varint(index))
        k = _SMALL[0] if key is None else _zz(len(key)) + key
        v = _SMALL[0] if value is None else _zz(len(value)) + value
        body_size = len(head) + len(k) + len(v) + 1
        append(_SMALL[body_size + 1] if body_size < 63 else _varint(body_size))
        append(head)
        append(k)
        append(v)
        append(b"\0")
    return b"".join(parts)


def _encode_records(
    records: Sequence[RecordLike], base_timestamp: int
) -> tuple[bytes, int, int, int]:
    """Encoded records plus (count, last offset delta, max timestamp)."""
    if records and all(type(rec) is tuple for rec in records):
        pairs = cast("Sequence[tuple[bytes | None, bytes | None]]", records)
        return _encode_pairs(pairs), len(records), len(records) - 1, base_timestamp
    parts: list[bytes] = []
    max_ts = -1
    last_delta = -1
    for index, rec in enumerate(records):
        if isinstance(rec, NewRecord):
            key, value = rec.key, rec.value
            ts = base_timestamp if rec.timestamp is None else rec.timestamp
            delta = index if rec.offset_delta is None else rec.offset_delta
            headers = rec.headers
            attrs = rec.attributes
        else:
            key, value = rec
            ts, delta, headers, attrs = base_timestamp, index, (), 0
        body = [bytes((attrs,)), _zz(ts - base_timestamp), _zz(delta)]
        if key is None:
            body.append(_zz(-1))
        else:
            body += (_zz(len(key)), key)
        if value is None:
            body.append(_zz(-1))
        else:
            body += (_zz(len(value)), value)
        body.append(_zz(len(headers)))
        for h in headers:
            body += (_zz(len(h.key)), h.key)
            if h.value is None:
                body.append(_zz(-1))
            else:
                body += (_zz(len(h.value)), h.value)
        encoded = b"".join(body)
        parts.append(_zz(len(encoded)))
        parts.append(encoded)
        max_ts = max(max_ts, ts)
        last_delta = max(last_delta, delta)
    return b"".join(parts), len(records), last_delta, max_ts


def encode_record_batch(
    records: Sequence[RecordLike],
    *,
    base_offset: int = 0,
    timestamp: int = 0,
    codec: Codec = Codec.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    control: bool = False,
    partition_leader_epoch: int = 0,
    delete_horizon_ms: int | None = None,
    compression_level: int | None = None,
    snappy_framing: bool = True,
) -> bytes:
    """One v2 record batch, log header included.

    ``timestamp`` is the base timestamp (and the timestamp of records that give none).
    With ``timestamp_type=LOG_APPEND_TIME`` the max timestamp is ``log_append_time`` (the
    broker's clock; default: the largest record timestamp). ``delete_horizon_ms`` sets attribute
    bit 6 and is stored as the base timestamp, as the log cleaner does. An empty ``records``
    gives an empty batch (lastOffsetDelta 0 is used, as after compaction of a whole batch).
    """
    base_ts = timestamp if delete_horizon_ms is None else delete_horizon_ms
    payload, count, last_delta, max_ts = _encode_records(records, base_ts)
    if count == 0:
        last_delta, max_ts = 0, -1
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        if log_append_time is not None:
            max_ts = log_append_time
    elif timestamp_type != TimestampType.CREATE_TIME:
        raise ValueError("a v2 batch has CREATE_TIME or LOG_APPEND_TIME")
    if codec != Codec.NONE:
        payload = compress(codec, payload, level=compression_level, snappy_framing=snappy_framing)
    attrs = int(codec)
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attrs |= 0x08
    if transactional:
        attrs |= 0x10
    if control:
        attrs |= 0x20
    if delete_horizon_ms is not None:
        attrs |= 0x40
    return frame_v2_batch(
        payload,
        attributes=attrs,
        record_count=count,
        last_offset_delta=last_delta,
        base_offset=base_offset,
        base_timestamp=base_ts,
        max_timestamp=max_ts,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        partition_leader_epoch=partition_leader_epoch,
    )


def frame_v2_batch(
    payload: bytes,
    *,
    attributes: int,
    record_count: int,
    last_offset_delta: int,
    base_offset: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = 0,
) -> bytes:
    """A v2 batch around ``payload``, its records as stored (compressed when ``attributes``
    name a codec): the header with its CRC-32C. :func:`encode_record_batch` makes the payload;
    a writer that puts the same records at many offsets (a synthesized topic) frames one
    payload again and again."""
    header = bytearray(
        _V2_HEADER.pack(
            base_offset,
            49 + len(payload),
            partition_leader_epoch,
            2,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            record_count,
        )
    )
    crc = CRC32C(payload, CRC32C(memoryview(header)[21:]))
    struct.pack_into(">I", header, 17, crc)
    return bytes(header) + payload


def encode_control_batch(
    control_type: int,
    *,
    base_offset: int = 0,
    timestamp: int = 0,
    coordinator_epoch: int = 0,
    marker_version: int = 0,
    value: bytes | None = None,
    key_version: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    transactional: bool | None = None,
    partition_leader_epoch: int = 0,
) -> bytes:
    """A control batch with one control record.

    For ABORT/COMMIT the value is the end-transaction marker (``marker_version``,
    ``coordinator_epoch``) unless ``value`` is given; for other types ``value`` is written as is.
    Transaction markers are transactional by default, KRaft control batches are not.
    """
    key = _CONTROL_KEY.pack(key_version, control_type)
    is_marker = control_type in (ControlType.ABORT, ControlType.COMMIT)
    if value is None and is_marker:
        value = _END_TXN.pack(marker_version, coordinator_epoch)
    return encode_record_batch(
        [NewRecord(key, value)],
        base_offset=base_offset,
        timestamp=timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transactional=is_marker if transactional is None else transactional,
        control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


def _legacy_message(
    magic: int, attrs: int, timestamp: int, key: bytes | None, value: bytes | None
) -> bytes:
    parts = [bytes((magic, attrs))]
    if magic == 1:
        parts.append(_I64.pack(timestamp))
    for field in (key, value):
        if field is None:
            parts.append(_I32.pack(-1))
        else:
            parts += (_I32.pack(len(field)), field)
    body = b"".join(parts)
    return struct.pack(">I", zlib.crc32(body)) + body


def encode_legacy_entry(
    records: Sequence[RecordLike],
    *,
    magic: int,
    offset: int = 0,
    timestamp: int = 0,
    codec: Codec = Codec.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    compression_level: int | None = None,
    snappy_framing: bool = True,
    lz4_legacy_header_checksum: bool | None = None,
) -> bytes:
    """Legacy v0/v1 log entries for ``records`` starting at ``offset``.

    With ``codec=NONE`` every record becomes its own entry (the result is their concatenation).
    Otherwise one compressed wrapper holds them all: its offset is the last inner offset, inner
    offsets are relative (0..n-1) for v1 and absolute for v0, and the wrapper timestamp is the
    largest inner one (or ``timestamp`` with LOG_APPEND_TIME, which then applies to all). By
    default LZ4 wrappers of v0 carry the wrong header checksum of Kafka 0.8/0.9.
    """
    if magic not in (0, 1):
        raise ValueError("legacy magic is 0 or 1")
    log_append = magic == 1 and timestamp_type == TimestampType.LOG_APPEND_TIME
    ts_bit = 0x08 if log_append else 0
    items: list[tuple[int, bytes | None, bytes | None]] = []
    for rec in records:
        if isinstance(rec, NewRecord):
            ts = timestamp if rec.timestamp is None else rec.timestamp
            items.append((ts, rec.key, rec.value))
        else:
            items.append((timestamp, rec[0], rec[1]))
    if codec == Codec.NONE:
        out = []
        for i, (ts, key, value) in enumerate(items):
            msg = _legacy_message(magic, ts_bit, ts, key, value)
            out.append(_ENTRY.pack(offset + i, len(msg)) + msg)
        return b"".join(out)
    inner = []
    for i, (ts, key, value) in enumerate(items):
        msg = _legacy_message(magic, 0, ts, key, value)
        inner.append(_ENTRY.pack(i if magic == 1 else offset + i, len(msg)) + msg)
    if lz4_legacy_header_checksum is None:
        lz4_legacy_header_checksum = magic == 0
    packed = compress(
        codec,
        b"".join(inner),
        level=compression_level,
        snappy_framing=snappy_framing,
        lz4_legacy_header_checksum=lz4_legacy_header_checksum,
    )
    wrapper_ts = timestamp if log_append else max((t for t, _, _ in items), default=timestamp)
    msg = _legacy_message(magic, int(codec) | ts_bit, wrapper_ts, None, packed)
    return _ENTRY.pack(offset + max(len(items) - 1, 0), len(msg)) + msg


class SegmentWriter:
    """Append entries to a segment file, tracking the next offset and the byte position.

    ``target`` is a path (opened for writing, or appending with ``append=True``) or a binary file
    object (left open on :meth:`close`).
    """

    def __init__(
        self,
        target: str | os.PathLike[str] | BinaryIO,
        *,
        base_offset: int = 0,
        append: bool = False,
    ) -> None:
        if isinstance(target, str | os.PathLike):
            self._fh: BinaryIO = open(target, "ab" if append else "wb")  # noqa: SIM115
            self._owned = True
        else:
            self._fh = target
            self._owned = False
        self.next_offset = base_offset
        self.position = 0
        if append or not self._owned:
            try:
                self.position = self._fh.tell()
            except OSError:  # a pipe: positions count from here
                self.position = 0
        self.batches = 0
        self.records = 0

    def __enter__(self) -> SegmentWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._owned:
            self._fh.close()
        else:
            self._fh.flush()

    def write_bytes(self, data: bytes) -> int:
        """Write raw bytes (a prepared entry, garbage, padding); returns their position."""
        pos = self.position
        self._fh.write(data)
        self.position += len(data)
        return pos

    def write_batch(
        self,
        records: Sequence[RecordLike],
        *,
        base_offset: int | None = None,
        timestamp: int = 0,
        codec: Codec = Codec.NONE,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
        log_append_time: int | None = None,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        transactional: bool = False,
        partition_leader_epoch: int = 0,
        delete_horizon_ms: int | None = None,
        compression_level: int | None = None,
        snappy_framing: bool = True,
    ) -> int:
        """Write one v2 batch (at the next offset unless given); returns its position."""
        start = self.next_offset if base_offset is None else base_offset
        data = encode_record_batch(
            records,
            base_offset=start,
            timestamp=timestamp,
            codec=codec,
            timestamp_type=timestamp_type,
            log_append_time=log_append_time,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            transactional=transactional,
            partition_leader_epoch=partition_leader_epoch,
            delete_horizon_ms=delete_horizon_ms,
            compression_level=compression_level,
            snappy_framing=snappy_framing,
        )
        last_delta = _I32.unpack_from(data, 23)[0]
        self.next_offset = start + max(last_delta, 0) + 1
        self.batches += 1
        self.records += len(records)
        return self.write_bytes(data)

    def write_control(
        self,
        control_type: int,
        *,
        base_offset: int | None = None,
        timestamp: int = 0,
        coordinator_epoch: int = 0,
        value: bytes | None = None,
        producer_id: int = -1,
        producer_epoch: int = -1,
        transactional: bool | None = None,
        partition_leader_epoch: int = 0,
    ) -> int:
        """Write a control batch with one record (a COMMIT/ABORT marker by default)."""
        start = self.next_offset if base_offset is None else base_offset
        data = encode_control_batch(
            control_type,
            base_offset=start,
            timestamp=timestamp,
            coordinator_epoch=coordinator_epoch,
            value=value,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            transactional=transactional,
            partition_leader_epoch=partition_leader_epoch,
        )
        self.next_offset = start + 1
        self.batches += 1
        self.records += 1
        return self.write_bytes(data)

    def write_legacy(
        self,
        records: Sequence[RecordLike],
        *,
        magic: int,
        base_offset: int | None = None,
        timestamp: int = 0,
        codec: Codec = Codec.NONE,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    ) -> int:
        """Write legacy v0/v1 entries (one per record, or one compressed wrapper)."""
        start = self.next_offset if base_offset is None else base_offset
        data = encode_legacy_entry(
            records,
            magic=magic,
            offset=start,
            timestamp=timestamp,
            codec=codec,
            timestamp_type=timestamp_type,
        )
        self.next_offset = start + len(records)
        self.batches += len(records) if codec == Codec.NONE else 1
        self.records += len(records)
        return self.write_bytes(data)

    def write_batches(
        self, batches: Iterable[Sequence[RecordLike]], *, codec: Codec = Codec.NONE
    ) -> None:
        """Write each sequence of records as one v2 batch."""
        for records in batches:
            self.write_batch(records, codec=codec)
