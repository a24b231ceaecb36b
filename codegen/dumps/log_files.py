"""The other files of a partition folder, as ``kafka-dump-log`` prints them.

``.index`` (offset index: int32 relative offset, int32 position), ``.timeindex`` (int64
timestamp, int32 relative offset), ``.txnindex`` (aborted transactions: an int16 version, then
the generated ``AbortedTxn`` body at that version) and producer-state ``.snapshot``
files (an int16 version, then the generated ``ProducerSnapshot`` body: a CRC-32C of the rest
and the producer entries). The index dumps check each entry against the segment next to the
index, as Kafka's tool does, and collect what does not match in an :class:`IndexReport`,
printed on stderr at the end of the run. The texts are Kafka's.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from codegen.dumps import storage
from codegen.dumps.entry_format import CRC32C
from codegen.dumps.model import RecordBatch, SegmentError
from codegen.dumps.remote_storage import remote_file_name
from codegen.dumps.segments import SegmentReader
from codegen.dumps.storage import StoragePath
from codegen.runtime import DecodeError, InvalidLength, UnexpectedNull
from generated.aborted_txn import AbortedTxn
from generated.producer_snapshot import ProducerEntry, ProducerSnapshot

__all__ = [
    "TXN_ENTRY_SIZE",
    "AbortedTxnEntry",
    "IndexReport",
    "LogFileError",
    "ProducerEntry",
    "TxnIndexError",
    "dump_index_file",
    "producer_entry_json",
    "read_producer_snapshot",
    "read_transaction_index",
]

_OFFSET_ENTRY: Final = struct.Struct(">ii")
_TIME_ENTRY: Final = struct.Struct(">qi")
_TXN_VERSION: Final = struct.Struct(">h")
TXN_ENTRY_SIZE: Final = 34
"""Bytes of one ``.txnindex`` entry: the int16 version and the four int64 of ``AbortedTxn`` v0."""
_TXN_CURRENT_VERSION: Final = 0
_SNAPSHOT_VERSION: Final = struct.Struct(">h")
_SNAPSHOT_CRC_END: Final = 6
"""The int16 version and the uint32 CRC: the CRC covers the bytes after them."""
_SNAPSHOT_COUNT: Final = struct.Struct(">i")
_INT32_MAX: Final = 0x7FFFFFFF


class LogFileError(Exception):
    """Kafka's tool reports this message on stderr: it stops the run (a corrupt index, a
    missing segment) when ``fatal``, else goes on with the next file (a corrupt snapshot)."""

    def __init__(self, message: str, *, fatal: bool = True) -> None:
        super().__init__(message)
        self.fatal = fatal


@dataclass(slots=True)
class IndexReport:
    """What the index checks found, by absolute file path (printed after all files)."""

    offset_mismatches: dict[str, dict[int, int]] = field(default_factory=dict)
    """index offset -> last offset of the batch at the indexed position."""
    timestamp_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    @property
    def problems(self) -> int:
        return (
            sum(len(m) for m in self.offset_mismatches.values())
            + sum(len(m) for m in self.timestamp_mismatches.values())
            + sum(len(m) for m in self.out_of_order.values())
            + sum(len(m) for m in self.not_found.values())
        )

    def lines(self) -> Iterator[str]:
        """Kafka's stderr blocks, in its order."""
        for file, mismatches in self.offset_mismatches.items():
            yield f"Mismatches in :{file}"
            for index_offset in sorted(mismatches, reverse=True):
                yield f"  Index offset: {index_offset}, log offset: {mismatches[index_offset]}"
        for file, pairs in self.timestamp_mismatches.items():
            yield f"Found timestamp mismatch in :{file}"
            for a, b in pairs:
                yield f"  Index timestamp: {a}, log timestamp: {b}"
        for file, pairs in self.out_of_order.items():
            yield f"Found out of order timestamp in :{file}"
            for a, b in pairs:
                yield f"  Index timestamp: {a}, Previously indexed timestamp: {b}"
        for file, pairs in self.not_found.items():
            yield f"The following indexed offsets are not found in :{file}"
            for a, b in pairs:
                yield f"Indexed offset: {a}, found log offset: {b}"


def _base_offset(path: StoragePath) -> int:
    """The base offset a file's name starts with: ``<offset>.<suffix>``, or a remote segment's
    ``<offset>-<segment id>.<suffix>`` (Kafka's tool cannot read those names; we can)."""
    stem = path.name.split(".")[0]
    if stem.isdigit():
        return int(stem)
    remote = remote_file_name(path.name)
    if remote is None:
        raise LogFileError(f"{path}: the file name does not start with a base offset")
    return remote[0]


def _sibling(path: StoragePath, suffix: str) -> StoragePath:
    return path.parent / (path.name.split(".")[0] + suffix)


def _entries(data: bytes, size: int, layout: struct.Struct) -> list[tuple[int, ...]]:
    n = len(data) // size
    return [layout.unpack_from(data, i * size) for i in range(n)]


def _batches_from(segment: bytes, position: int, limit: int) -> Iterator[RecordBatch]:
    """The batches from ``position`` on, within ``limit`` bytes, up to the first error."""
    for item in SegmentReader(segment[position : position + limit], verify_crc=False):
        if isinstance(item, SegmentError):
            return
        yield item


def _read_segment(path: StoragePath) -> bytes:
    log = _sibling(path, ".log")
    try:
        return log.read_bytes()
    except OSError as exc:
        raise LogFileError(f"{log} (the segment of {path.name}): {exc.strerror}") from None


def _offset_index(
    path: StoragePath,
    report: IndexReport,
    verify_only: bool,
    sanity_only: bool,
    max_message_size: int,
) -> Iterator[str]:
    base = _base_offset(path)
    data = path.read_bytes()
    entries = [(base + rel, pos) for rel, pos in _entries(data, 8, _OFFSET_ENTRY)]
    segment = _read_segment(path)
    if not entries:
        yield f"{path} is empty."
        return
    if sanity_only:
        last = entries[-1][0]
        if last < base:
            raise LogFileError(
                f"Corrupt index found, index file ({storage.absolute(path)}) has non-zero size "
                f"but the last offset is {last} which is less than the base offset {base}."
            )
        if len(data) % 8:
            raise LogFileError(
                f"Index file {storage.absolute(path)} is corrupt, found {len(data)} bytes which "
                "is neither positive nor a multiple of 8."
            )
        yield f"{path} passed sanity check."
        return
    for i, (offset, position) in enumerate(entries):
        if offset == base and i > 0:
            return  # the zero entries of a preallocated index
        first = next(_batches_from(segment, position, max_message_size), None)
        if first is None:
            raise LogFileError(
                f"{path}: no batch at position {position} of the segment for offset {offset}"
            )
        if first.last_offset != offset:
            mismatches = report.offset_mismatches.setdefault(storage.absolute(path), {})
            mismatches[offset] = first.last_offset
        if not verify_only:
            yield f"offset: {offset} position: {position}"


def _lookup(offsets: list[tuple[int, int]], target: int) -> int:
    """Position of the offset-index entry for ``target``: Kafka's binary search for the
    largest entry at or below it (which a broken index can make differ from a scan), or 0."""
    if not offsets or offsets[0][0] > target:
        return 0
    lo, hi = 0, len(offsets) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        found = offsets[mid][0]
        if found > target:
            hi = mid - 1
        elif found < target:
            lo = mid
        else:
            return offsets[mid][1]
    return offsets[lo][1]


def _time_index(
    path: StoragePath, report: IndexReport, verify_only: bool, sanity_only: bool
) -> Iterator[str]:
    base = _base_offset(path)
    segment = _read_segment(path)
    index_path = _sibling(path, ".index")
    try:
        index_data = index_path.read_bytes()
    except OSError as exc:
        raise LogFileError(
            f"{index_path} (the offset index of {path.name}): {exc.strerror}"
        ) from None
    offsets = [(base + rel, pos) for rel, pos in _entries(index_data, 8, _OFFSET_ENTRY)]
    data = path.read_bytes()
    entries = [(ts, base + rel) for ts, rel in _entries(data, 12, _TIME_ENTRY)]
    if sanity_only:
        where = storage.absolute(path)
        if entries:
            last_ts, last_offset = entries[-1]
            if last_ts < entries[0][0]:
                raise LogFileError(
                    f"Corrupt time index found, time index file ({where}) has non-zero size but "
                    f"the last timestamp is {last_ts} which is less than the first timestamp "
                    f"{entries[0][0]}"
                )
            if last_offset < base:
                raise LogFileError(
                    f"Corrupt time index found, time index file ({where}) has non-zero size but "
                    f"the last offset is {last_offset} which is less than the first offset {base}"
                )
        if len(data) % 12:
            raise LogFileError(
                f"Time index file {where} is corrupt, found {len(data)} bytes which is neither "
                "positive nor a multiple of 12."
            )
        yield f"{path} passed sanity check."
        return
    where = storage.absolute(path)
    previous = -1
    for i, (timestamp, offset) in enumerate(entries):
        if offset == base and i > 0:
            return
        position = _lookup(offsets, offset)
        match = next(
            (b for b in _batches_from(segment, position, len(segment)) if b.last_offset >= offset),
            None,
        )
        if match is None:
            report.not_found.setdefault(where, []).append((offset, -1))
        elif match.last_offset != offset:
            report.not_found.setdefault(where, []).append((offset, match.last_offset))
        else:
            newest = max((r.timestamp for r in match.records), default=-1)
            if newest != timestamp:
                report.timestamp_mismatches.setdefault(where, []).append((timestamp, newest))
            if previous >= timestamp:
                report.out_of_order.setdefault(where, []).append((timestamp, previous))
        if not verify_only:
            yield f"timestamp: {timestamp} offset: {offset}"
        previous = timestamp


class TxnIndexError(ValueError):
    """A ``.txnindex`` entry of a version other than 0 (Kafka's broker and tool stop there), or
    a file whose size is not a multiple of 34 bytes."""

    def __init__(self, message: str, position: int, *, torn: bool = False) -> None:
        super().__init__(message)
        self.position = position
        self.torn = torn


@dataclass(frozen=True, slots=True)
class AbortedTxnEntry:
    """One entry of a ``.txnindex``: where it is, its version and the decoded ``AbortedTxn``."""

    position: int
    version: int
    txn: AbortedTxn

    def to_json(self) -> dict[str, int]:
        return {"position": self.position, "version": self.version, **self.txn.to_json(0)}


def read_transaction_index(
    path: StoragePath | str, data: bytes | None = None
) -> Iterator[AbortedTxnEntry]:
    """The entries of an aborted-transaction index, each body read by the generated
    ``AbortedTxn`` codec at the entry's int16 version. Raises :class:`TxnIndexError` at an
    entry of a version outside 0..0 (what Kafka 4.4.0's ``TransactionIndex`` refuses) or a torn
    last entry, after yielding those before it."""
    raw = storage.path(path).read_bytes() if data is None else data
    for position in range(0, len(raw) - TXN_ENTRY_SIZE + 1, TXN_ENTRY_SIZE):
        (version,) = _TXN_VERSION.unpack_from(raw, position)
        if not AbortedTxn.LOWEST_VERSION <= version <= AbortedTxn.HIGHEST_VERSION:
            raise TxnIndexError(
                f"Unexpected aborted transaction version {version} in transaction index "
                f"{storage.absolute(path)}, supported version range is "
                f"{AbortedTxn.LOWEST_VERSION} to {AbortedTxn.HIGHEST_VERSION}",
                position,
            )
        body = raw[position + _TXN_VERSION.size : position + TXN_ENTRY_SIZE]
        yield AbortedTxnEntry(position, version, AbortedTxn.decode(body, version))
    torn = len(raw) % TXN_ENTRY_SIZE
    if torn:
        raise TxnIndexError(
            f"the last {torn} bytes at position {len(raw) - torn} are not a whole "
            f"{TXN_ENTRY_SIZE}-byte entry",
            len(raw) - torn,
            torn=True,
        )


def _txn_index(path: StoragePath) -> Iterator[str]:
    """DumpLogSegments' lines. Its 4.3 ``AbortedTxn`` takes the first byte of the int16 for the
    version and refuses only one above 0, so version 1 prints as 0 and -1 as -1 (4.4.0 reads the
    int16, as :func:`read_transaction_index` does); it reads every entry before printing any,
    and ignores a torn tail."""
    raw = path.read_bytes()
    lines = []
    for position in range(0, len(raw) - TXN_ENTRY_SIZE + 1, TXN_ENTRY_SIZE):
        version = int.from_bytes(raw[position : position + 1], signed=True)
        if version > _TXN_CURRENT_VERSION:
            raise LogFileError(
                f"Unexpected aborted transaction version {version} in transaction index "
                f"{storage.absolute(path)}, current version is {_TXN_CURRENT_VERSION}"
            )
        body = raw[position + _TXN_VERSION.size : position + TXN_ENTRY_SIZE]
        txn = AbortedTxn.decode(body, _TXN_CURRENT_VERSION)
        lines.append(
            f"version: {version} producerId: {txn.producer_id} "
            f"firstOffset: {txn.first_offset} lastOffset: {txn.last_offset} "
            f"lastStableOffset: {txn.last_stable_offset}"
        )
    yield from lines


def _first_sequence(last: int, delta: int) -> int:
    """Kafka's ``decrementSequence``: sequences wrap at ``Integer.MAX_VALUE``."""
    if last < delta:
        return _INT32_MAX - (delta - last) + 1
    return last - delta


class _CorruptSnapshot(Exception):
    pass


def _kafka_schema_error(exc: DecodeError, data: bytes) -> str:
    """What Kafka's generated ``ProducerSnapshot`` reader says of the bytes our codec refused:
    its texts for a null or too-long entry array, and the message of Java's
    ``BufferUnderflowException`` (none: "null") where the bytes end too soon."""
    if isinstance(exc, UnexpectedNull):
        return "non-nullable field producerEntries was serialized as null"
    if isinstance(exc, InvalidLength) and len(data) >= _SNAPSHOT_CRC_END + _SNAPSHOT_COUNT.size:
        (count,) = _SNAPSHOT_COUNT.unpack_from(data, _SNAPSHOT_CRC_END)
        remaining = len(data) - _SNAPSHOT_CRC_END - _SNAPSHOT_COUNT.size
        if count > remaining:  # Kafka compares the count with the bytes, not the entries' size
            return (
                f"Tried to allocate a collection of size {count}, but there are only "
                f"{remaining} bytes remaining."
            )
    return "null"


def _producer_snapshot_body(data: bytes) -> ProducerSnapshot:
    """The generated ``ProducerSnapshot`` of a ``.snapshot`` file's bytes, checked as Kafka's
    ``ProducerStateManager.readSnapshot`` checks them (version, schema, then the CRC; bytes
    after the entries are covered by the CRC and otherwise ignored)."""
    try:
        if len(data) < _SNAPSHOT_VERSION.size:
            raise _CorruptSnapshot("null")
        (version,) = _SNAPSHOT_VERSION.unpack_from(data)
        if not ProducerSnapshot.LOWEST_VERSION <= version <= ProducerSnapshot.HIGHEST_VERSION:
            raise _CorruptSnapshot(f"Snapshot contained an unknown file version {version}")
        try:
            snapshot, _ = ProducerSnapshot.read(data, _SNAPSHOT_VERSION.size, version)
        except DecodeError as exc:
            raise _CorruptSnapshot(_kafka_schema_error(exc, data)) from None
    except _CorruptSnapshot as exc:
        raise _CorruptSnapshot(f"Snapshot failed schema validation: {exc}") from None
    computed = CRC32C(memoryview(data)[_SNAPSHOT_CRC_END:])
    if computed != snapshot.crc:
        raise _CorruptSnapshot(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {snapshot.crc}. "
            f"Computed crc: {computed}"
        )
    return snapshot


def producer_entry_json(entry: ProducerEntry) -> dict[str, int]:
    """A producer of a snapshot as the reports name its fields (``producerEpoch`` and
    ``lastTimestamp`` for the spec's ``Epoch`` and ``Timestamp``)."""
    return {
        "producerId": entry.producer_id,
        "producerEpoch": entry.epoch,
        "lastSequence": entry.last_sequence,
        "lastOffset": entry.last_offset,
        "offsetDelta": entry.offset_delta,
        "lastTimestamp": entry.timestamp,
        "coordinatorEpoch": entry.coordinator_epoch,
        "currentTxnFirstOffset": entry.current_txn_first_offset,
    }


def read_producer_snapshot(path: StoragePath, data: bytes | None = None) -> list[ProducerEntry]:
    """The producers of a ``.snapshot`` file (the generated ``ProducerSnapshot``'s entries).
    Raises :class:`LogFileError` (not fatal) with Kafka's message when it is corrupt."""
    try:
        raw = path.read_bytes() if data is None else data
        return _producer_snapshot_body(raw).producer_entries
    except _CorruptSnapshot as exc:
        raise LogFileError(f"{path}: {exc}", fatal=False) from None


def _producer_snapshot(path: StoragePath) -> tuple[list[str], str | None]:
    """The lines of a producer-state snapshot, and Kafka's message when it is corrupt (Kafka
    prints it on stderr and goes on with the next file)."""
    try:
        entries = _producer_snapshot_body(path.read_bytes()).producer_entries
    except _CorruptSnapshot as exc:
        return [], str(exc)
    lines = []
    for e in entries:
        first = e.current_txn_first_offset
        txn = f"OptionalLong[{first}]" if first >= 0 else "OptionalLong.empty"
        line = (
            f"producerId: {e.producer_id} producerEpoch: {e.epoch} coordinatorEpoch: "
            f"{e.coordinator_epoch} currentTxnFirstOffset: {txn} lastTimestamp: {e.timestamp}"
        )
        if e.last_offset >= 0:
            line += (
                f" firstSequence: {_first_sequence(e.last_sequence, e.offset_delta)} "
                f"lastSequence: {e.last_sequence} lastOffset: {e.last_offset} "
                f"offsetDelta: {e.offset_delta} timestamp: {e.timestamp}"
            )
        lines.append(line)
    return lines, None


def dump_index_file(
    path: StoragePath,
    report: IndexReport,
    *,
    verify_only: bool = False,
    sanity_only: bool = False,
    max_message_size: int = 5 * 1024 * 1024,
) -> Iterator[str]:
    """The stdout lines of ``kafka-dump-log`` for an index, transaction index or producer-state
    snapshot (after its ``Dumping`` line); mismatches go to ``report``.

    Raises :class:`LogFileError` where Kafka's tool stops with an error, and for a corrupt
    producer snapshot (which Kafka reports on stderr before going on).
    """
    suffix = path.suffix
    if suffix == ".index":
        yield from _offset_index(path, report, verify_only, sanity_only, max_message_size)
    elif suffix == ".timeindex":
        yield from _time_index(path, report, verify_only, sanity_only)
    elif suffix == ".txnindex":
        yield from _txn_index(path)
    elif suffix == ".snapshot":
        lines, error = _producer_snapshot(path)
        yield from lines
        if error is not None:
            raise LogFileError(error, fatal=False)
    else:
        raise ValueError(f"{path}: not an index or producer-state snapshot")
