"""Value types of the log-segment layer: batches, records, control records and errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Final, NamedTuple

from codegen.dumps.compression import Codec
from codegen.slotted import FrozenSlotted

__all__ = [
    "NO_CONTROLS",
    "NO_HEADERS",
    "BatchHeader",
    "ControlRecord",
    "ControlType",
    "ErrorKind",
    "Header",
    "HeaderColumns",
    "RawRecord",
    "ReadError",
    "Record",
    "RecordBatch",
    "RecordError",
    "SegmentError",
    "SegmentSummary",
    "TimestampType",
    "error_line",
    "increment_sequence",
]

RawRecord = tuple[int, int, bytes | None, bytes | None]
"""``(offset, timestamp, key, value)`` as yielded by the raw-records mode."""

_INT32_MAX: Final = 0x7FFFFFFF


class TimestampType(IntEnum):
    """``TimestampType`` ids; legacy v0 messages have none."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlType(IntEnum):
    """Control record types (the int16 after the version in a control record key)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


class ErrorKind(StrEnum):
    """Why a stretch of a segment could not be decoded."""

    TRUNCATED_TAIL = "truncated-tail"
    """The file ends inside a batch (a torn write, or a fetch response cut at its size limit)."""
    ZERO_PADDING = "zero-padding"
    """The rest of the file is zero bytes (preallocated or unclean shutdown)."""
    BAD_LENGTH = "bad-length"
    """A length field is impossible."""
    BAD_MAGIC = "bad-magic"
    """Magic byte other than 0, 1 or 2."""
    BAD_HEADER = "bad-header"
    """A batch header field is impossible (unknown codec, negative record count)."""
    CRC_MISMATCH = "crc-mismatch"
    """Stored and computed checksums differ."""
    COMPRESSION = "compression"
    """The compressed payload does not decompress."""
    TOO_LARGE = "too-large"
    """The batch, compressed or not, is larger than the configured cap (``max_batch_size``)."""
    TOO_MANY_RECORDS = "too-many-records"
    """The batch holds more records than the configured cap (``max_batch_records``)."""
    CORRUPT_RECORDS = "corrupt-records"
    """The records inside the batch do not parse."""
    CORRUPT_CONTROL = "corrupt-control"
    """A control record key or end-transaction marker is malformed."""


def increment_sequence(sequence: int, increment: int) -> int:
    """Add to a producer sequence number, wrapping past ``Integer.MAX_VALUE`` as Kafka does."""
    if sequence > _INT32_MAX - increment:
        return increment - (_INT32_MAX - sequence) - 1
    return sequence + increment


@dataclass(slots=True)
class Header:
    """A record header. Kafka reads the key as UTF-8; it is kept as bytes here (see ``name``)."""

    key: bytes
    value: bytes | None

    @property
    def name(self) -> str:
        return self.key.decode("utf-8", "replace")


NO_HEADERS: Final[tuple[Header, ...]] = ()


@dataclass(slots=True)
class Record:
    """One record with Kafka's derived offset, timestamp and sequence.

    ``key``/``value`` are ``None`` when null (length -1) and ``b""`` when empty. ``sequence`` is -1
    when the batch has no producer sequence (and always for legacy messages). ``attributes`` is the
    record's own attribute byte (unused by Kafka; the legacy message attributes for v0/v1).
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    sequence: int
    attributes: int


@dataclass(slots=True)
class ControlRecord(Record):
    """A record of a control batch, with its key (and end-transaction marker) decoded.

    ``marker_version``/``coordinator_epoch`` are set for ABORT and COMMIT only; KRaft control types
    keep their value in ``value`` (decoded at version 0 by the metadata layer).
    """

    control_version: int = 0
    control_type: int = -1
    marker_version: int | None = None
    coordinator_epoch: int | None = None

    @property
    def type_name(self) -> str:
        try:
            return ControlType(self.control_type).name
        except ValueError:
            return "UNKNOWN"


@dataclass(slots=True)
class RecordBatch:
    """A v2 record batch, or one legacy v0/v1 log entry (a message or a compressed wrapper).

    ``position`` and ``size`` locate the entry in the file (``size`` includes the 12-byte offset and
    length prefix). For legacy entries ``last_offset`` is the entry's own offset and
    ``base_offset`` the first inner record's; producer fields are -1 and
    ``partition_leader_epoch`` is -1. ``record_count`` is the count stored in a v2 header (the
    number of messages for legacy entries).
    """

    file: str
    position: int
    size: int
    magic: int
    base_offset: int
    last_offset: int
    partition_leader_epoch: int
    crc: int
    crc_valid: bool
    attributes: int
    codec: Codec
    timestamp_type: TimestampType
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    records: list[Record] = field(default_factory=list)

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & 0x10)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & 0x20)

    @property
    def has_delete_horizon(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & 0x40)

    @property
    def delete_horizon_ms(self) -> int | None:
        """The delete horizon (KIP-534), stored in ``baseTimestamp`` when attribute bit 6 is set."""
        return self.base_timestamp if self.has_delete_horizon else None

    @property
    def last_offset_delta(self) -> int:
        return self.last_offset - self.base_offset

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return -1
        return increment_sequence(self.base_sequence, self.last_offset - self.base_offset)

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


NO_CONTROLS: Final[tuple[tuple[int, int], ...]] = ()


class BatchHeader(NamedTuple):
    """What a log entry's header says, read without its records (see
    :meth:`~codegen.dumps.segments.SegmentReader.batch_headers`).

    The fields are :class:`RecordBatch`'s. ``controls`` is ``(offset, control type)`` per record
    of a control batch (its key checked, and an ABORT/COMMIT marker's value, as
    :func:`~codegen.dumps.batches.decode_entry` checks them); empty for every other entry.
    """

    position: int
    size: int
    magic: int
    base_offset: int
    last_offset: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    attributes: int
    record_count: int
    controls: tuple[tuple[int, int], ...]

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & 0x10)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & 0x20)


class HeaderColumns(NamedTuple):
    """A run of v2 batch headers as columns, one item per batch, each a ``bytes`` of a
    native-endian array (``batch_header_columns`` in ``codegen/native/batch_columns.h``): what
    :class:`BatchHeader` says of each, but the first timestamp and base sequence, and the
    control records of all of them, batch ``i``'s being ``control_bounds[i]:control_bounds[i +
    1]``. Positions are in the file read."""

    position: bytes
    """int64"""
    size: bytes
    """int64"""
    base_offset: bytes
    """int64"""
    last_offset: bytes
    """int64"""
    max_timestamp: bytes
    """int64"""
    producer_id: bytes
    """int64"""
    producer_epoch: bytes
    """int16"""
    attributes: bytes
    """int16"""
    record_count: bytes
    """int32"""
    control_bounds: bytes
    """int32, one more item than batches"""
    control_offset: bytes
    """int64"""
    control_type: bytes
    """int16"""


@dataclass(slots=True)
class SegmentError:
    """A stretch of a file that could not be decoded, with the reason.

    ``position``/``size`` cover the bytes skipped (for a torn tail or an unreadable remainder,
    everything up to the end of the file). ``base_offset`` is the offset field of the entry when
    it could be read.
    """

    kind: ErrorKind
    file: str
    position: int
    size: int
    base_offset: int | None
    reason: str

    def __str__(self) -> str:
        at = f"{self.file}@{self.position}"
        off = "" if self.base_offset is None else f" (base offset {self.base_offset})"
        return f"{at}: {self.kind}{off}: {self.reason}"


class RecordError(FrozenSlotted):
    """A record read that did not decode: its batch's file and position (None: not known), its
    offset and the reason."""

    file: str | None
    position: int
    offset: int
    reason: str

    def __str__(self) -> str:
        at = "" if self.file is None else f"{self.file}@{self.position}: "
        return f"{at}offset {self.offset}: {self.reason}"


ReadError = SegmentError | RecordError
"""What a reader reports of damaged input and goes on past."""


def error_line(error: ReadError) -> str:
    """The line an error is reported with on stderr (``dump``, ``groups``, ``lag``)."""
    kind = "segment" if isinstance(error, SegmentError) else "record"
    return f"{kind} error: {error}"


@dataclass(slots=True)
class SegmentSummary:
    """Counts over everything read so far from one file."""

    file: str
    size: int = 0
    batches: int = 0
    records: int = 0
    control_batches: int = 0
    control_records: int = 0
    errors: int = 0
    error_bytes: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
