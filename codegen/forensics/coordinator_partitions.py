"""Coordinator partitions as a downgrade reads them: the partitions of a topic among the paths
given (one replica each: :mod:`codegen.forensics.coordinator_logs`), and per partition its live
records (after compaction, by key) and every record it holds by kind (what a release's loader
meets, :mod:`codegen.forensics.loaded`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from codegen.columnar.decode import Rows, decode_rows, distinct
from codegen.columnar.package import codecs
from codegen.dumps.arrow import record_batches
from codegen.dumps.coordinator import CONSUMER_OFFSETS, CoordinatorDecoder, coordinator_decoder
from codegen.dumps.decoded import ERROR, RECORD, TOMBSTONE, UNKNOWN, DecodedRecord
from codegen.dumps.model import SegmentError
from codegen.dumps.storage import StoragePath
from codegen.dumps.views.compacted import CompactedView
from codegen.dumps.views.effects import engine_function
from codegen.dumps.views.live import LiveColumns, LiveKeys
from codegen.forensics.coordinator_logs import dump_partitions
from codegen.forensics.inputs import LogDirs
from codegen.forensics.loaded import GROUP_FIELDS, LoadedPartition, group_of
from codegen.slotted import Slotted

if TYPE_CHECKING:
    from codegen.dumps.coordinator_types import RecordType

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

    def take_live(self, live: LiveColumns, decoder: CoordinatorDecoder) -> None:
        """The live records from the columnar view (:meth:`codegen.dumps.views.live.LiveKeys
        .records`), for a view fed no records: only :attr:`live` is filled, and only the keys
        are decoded (a live record is judged by its type, its value's version and its group),
        a record type's keys at once (:func:`_key_groups`)."""
        if not len(live.keys):
            return
        keys = live.keys.to_pylist()
        rows = Rows(live.keys)
        types, typed = rows.int16_at(rows.starts, rows.ends)
        types = np.where(typed, types, -1)  # as decode_key: -1 for a key without a type
        groups: list[str | None] = [None] * len(keys)
        names = {}
        for rtype in distinct(types).tolist():
            rt = decoder.types.get(rtype)
            names[rtype] = "unknown" if rt is None or not rt.name else rt.name
            if rt is not None:
                at = np.flatnonzero(types == rtype)
                for i, group in zip(at.tolist(), _key_groups(rt, rows, at, decoder), strict=True):
                    groups[i] = group
        kinds = types.tolist()
        columns = ([self.partition] * len(keys), live.offsets.tolist(), kinds)
        values = (*columns, [names[t] for t in kinds], live.versions.tolist(), groups)
        self.live.update(zip(keys, _live_objects(values), strict=True))


def _live_objects(columns: tuple[Sequence[Any], ...]) -> list[LiveRecord]:
    """``list(map(LiveRecord, *columns))`` (a column per field, in order): by the engine
    (``slot_objects``: each object's slots written, no ``__init__`` run) where built."""
    make = engine_function("slot_objects")
    if make is None:
        return list(map(LiveRecord, *columns))
    made: list[LiveRecord] = make(LiveRecord, LiveRecord._fields, columns)
    return made


def _key_groups(
    rt: RecordType, rows: Rows, at: npt.NDArray[np.intp], decoder: CoordinatorDecoder
) -> list[str | None]:
    """The group (:func:`~codegen.forensics.loaded.group_of`) of keys ``at`` of ``rows``, all
    of record type ``rt``, as :meth:`~codegen.dumps.coordinator.CoordinatorDecoder.decode_key`
    and ``group_of`` read one: the key's reader (its lowest version, bytes after it ignored)
    over the bytes after the type, by the columnar decoder (the engine's, in one call, where
    built); None where the key does not decode or has no group field."""
    fields = {
        f["metadata"]["attr"]: f["name"]
        for f in codecs(decoder.package).schemas[rt.key_class.SPEC_NAME]["fields"]
    }
    named = [fields[a] for a in GROUP_FIELDS if a in fields]
    if not named:
        return [None] * len(at)
    decoded, _ = decode_rows(
        rt.key_class.SPEC_NAME,
        rows,
        rows.starts[at] + 2,
        rows.ends[at],
        np.full(len(at), rt.key_class.LOWEST_VERSION, np.int64),
        trailing_ok=True,
        package=decoder.package,
        fields=frozenset(named),
    )
    columns: list[list[str | None]] = [decoded.field(name).to_pylist() for name in named]
    if len(columns) == 1:
        return columns[0]
    return [next((g for g in row if g is not None), None) for row in zip(*columns, strict=True)]


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
