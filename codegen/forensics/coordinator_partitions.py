"""Coordinator partitions as a downgrade reads them: the partitions of a topic among the paths
given (one replica each: :mod:`codegen.forensics.coordinator_logs`), and per partition its live
records (after compaction, by key) and every record it holds by kind (what a release's loader
meets, :mod:`codegen.forensics.loaded`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from codegen.dumps.arrow import record_batches
from codegen.dumps.coordinator import CONSUMER_OFFSETS, CoordinatorDecoder, coordinator_decoder
from codegen.dumps.decoded import ERROR, RECORD, TOMBSTONE, UNKNOWN, DecodedRecord
from codegen.dumps.model import SegmentError
from codegen.dumps.storage import StoragePath
from codegen.dumps.views.compacted import CompactedView
from codegen.dumps.views.live import LiveKeys, LiveRow
from codegen.forensics.coordinator_logs import dump_partitions
from codegen.forensics.inputs import LogDirs
from codegen.forensics.loaded import LoadedPartition, group_of
from codegen.slotted import Slotted

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "LiveRecord",
    "LiveRecords",
    "live_records",
    "scan_partition",
    "scan_partitions",
]


class LiveRecord(Slotted):
    """A record still live after compaction."""

    partition: int
    offset: int
    record_type: int
    name: str
    """Record name from our specs (``OffsetCommit``, ``ConsumerGroupMetadata``...), or
    ``unknown`` for a type our specs do not have."""
    value_version: int
    group: str | None
    """The group (or, in ``__transaction_state``, the transactional id) the record is of."""


class LiveRecords(CompactedView):
    """The compacted view, also keeping every live record by (record type, key bytes)."""

    def __init__(self, partition: int) -> None:
        super().__init__()
        self.partition = partition
        self.live: dict[bytes, LiveRecord] = {}
        self.loaded: LoadedPartition | None = None
        """Every record of the partition by kind, when it was read from files or rows."""

    def add(self, rec: DecodedRecord) -> None:
        super().add(rec)
        if rec.kind not in (RECORD, TOMBSTONE, UNKNOWN, ERROR) or rec.key_bytes is None:
            return
        if rec.value_bytes is None:
            self.live.pop(rec.key_bytes, None)
            return
        self.live[rec.key_bytes] = self.live_record(rec)

    def live_record(self, rec: DecodedRecord) -> LiveRecord:
        """What is judged of a live record (not a tombstone)."""
        assert rec.value_bytes is not None
        version = rec.value_version
        if version < 0 and len(rec.value_bytes) >= 2:
            version = int.from_bytes(rec.value_bytes[:2], "big", signed=True)
        return LiveRecord(
            self.partition,
            rec.offset,
            rec.record_type,
            rec.name if rec.kind != UNKNOWN and rec.name else "unknown",
            version,
            group_of(rec.key),
        )

    def take_live(self, live: list[LiveRow], decoder: CoordinatorDecoder) -> None:
        """The live records from the columnar view (:meth:`codegen.dumps.views.live.LiveKeys
        .records`), for a view fed no records: only :attr:`live` is filled, and only the keys
        are decoded (a live record is judged by its type, its value's version and its group)."""
        for offset, version, key in live:
            rtype, name, key_obj = decoder.decode_key(key)
            self.live[key] = LiveRecord(
                self.partition, offset, rtype, name or "unknown", version, group_of(key_obj)
            )


def live_records(
    path: StoragePath | Sequence[StoragePath | str] | LogDirs,
    errors: list[SegmentError] | None = None,
    topic: str = CONSUMER_OFFSETS,
) -> list[LiveRecords]:
    """The live records of each ``topic`` partition under ``path`` (:attr:`LiveRecords.live`;
    read from columns, so the views hold no group state), each with every record it holds by
    kind (:attr:`LiveRecords.loaded`)."""
    return scan_partitions(dump_partitions(path, topic), topic, errors)


def scan_partition(
    topic: str,
    partition: int,
    source: Callable[[], Iterable[pa.RecordBatch]],
    decoder: CoordinatorDecoder,
) -> LiveRecords:
    """One coordinator partition read from ``kafka-log`` rows in log order (``source`` gives
    them, again when the group records' order must be walked): its live records, and every
    record by kind (what its loader meets)."""
    view = LiveRecords(partition)
    loaded = LoadedPartition(topic, partition, source=source)
    keys = LiveKeys()
    for rb in source():
        keys.add(rb)
        loaded.add(rb, decoder)
    if not keys.complete:  # rows out of log order: the reference orders them
        keys = LiveKeys(native=False)
        for rb in source():
            keys.add(rb)
    view.take_live(keys.records(), decoder)
    view.loaded = loaded
    return view


def scan_partitions(
    partitions: list[tuple[int, list[StoragePath]]], topic: str, errors: list[SegmentError] | None
) -> list[LiveRecords]:
    decoder = coordinator_decoder(topic)
    views: list[LiveRecords] = []
    for partition, files in partitions:
        found: list[SegmentError] = []

        def batches(
            files: Sequence[StoragePath] = files, found: list[SegmentError] = found
        ) -> Iterator[pa.RecordBatch]:
            for f in files:
                yield from record_batches(f, headers=False, batch_rows=32768, segment_errors=found)

        views.append(scan_partition(topic, partition, batches, decoder))
        if errors is not None:
            errors.extend(found)
            found.clear()
    return views
