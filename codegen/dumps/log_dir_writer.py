"""A broker's log folder written as a Kafka 4.4 broker writes it (for synthesized clusters, tests
and benchmarks).

:class:`PartitionLog` keeps a partition folder (``<topic>-<n>``): its segments, rolled when the
next batch would take one past ``segment.bytes``; per segment an offset index and a time index
(an entry when more than ``index.interval.bytes`` were appended since the last one: the batch's
last offset and its position, the largest timestamp so far and its batch's last offset, as
``LogSegment.append`` does; the largest timestamp again when the segment is closed), and an
aborted-transaction index (an entry at each ABORT marker: the producer, its first offset, the
marker's offset and the last stable offset after it); the producers' state as snapshots at each
roll and at shutdown (``<offset>.snapshot``); ``leader-epoch-checkpoint`` and
``partition.metadata``. :class:`LogDir` adds the folder's own files at shutdown:
``meta.properties``, the recovery-point, replication-offset and log-start-offset checkpoints,
the empty cleaner checkpoint and ``.kafka_cleanshutdown``.

Batches are v2 batches made by :mod:`codegen.dumps.writer` at the log's next offset; this module
reads back only their headers (and a control batch's marker).
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Final

from codegen.dumps.batches import decode_entry
from codegen.dumps.compression import Codec
from codegen.dumps.entry_format import CRC32C
from codegen.dumps.model import ControlRecord, ControlType, SegmentError
from codegen.dumps.writer import RecordLike, encode_control_batch, encode_record_batch
from generated.aborted_txn import AbortedTxn
from generated.producer_snapshot import ProducerEntry, ProducerSnapshot

__all__ = [
    "LogDir",
    "PartitionLog",
    "ProducerState",
    "kafka_uuid",
    "partition_folder",
    "write_offset_checkpoint",
]

_V2_HEADER: Final = struct.Struct(">qiiBIhiqqqhii")
_OFFSET_ENTRY: Final = struct.Struct(">ii")
_TIME_ENTRY: Final = struct.Struct(">qi")
_TRANSACTIONAL: Final = 0x10
_CONTROL: Final = 0x20
DEFAULT_SEGMENT_BYTES: Final = 1 << 30
"""``log.segment.bytes``' default (``__consumer_offsets``: ``offsets.topic.segment.bytes``,
100 MiB)."""
INDEX_INTERVAL_BYTES: Final = 4096
"""``index.interval.bytes``' default."""


def kafka_uuid(value: uuid.UUID) -> str:
    """A Uuid as Kafka writes it in its files: base64url without padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


def partition_folder(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def write_offset_checkpoint(path: Path, entries: dict[tuple[str, int], int]) -> None:
    """An offset checkpoint file (version 0): a version line, a count line, then ``topic
    partition offset`` lines."""
    lines = ["0", str(len(entries)), *(f"{t} {p} {o}" for (t, p), o in entries.items())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@dataclass(slots=True)
class ProducerState:
    """What a partition remembers of a producer (its ``.snapshot`` entry)."""

    producer_id: int
    epoch: int
    last_sequence: int = -1
    last_offset: int = -1
    offset_delta: int = 0
    timestamp: int = -1
    coordinator_epoch: int = -1
    txn_first_offset: int = -1
    """The first offset of its open transaction on the partition, -1 for none."""

    def snapshot_entry(self) -> ProducerEntry:
        return ProducerEntry(
            producer_id=self.producer_id,
            epoch=self.epoch,
            last_sequence=self.last_sequence,
            last_offset=self.last_offset,
            offset_delta=self.offset_delta,
            timestamp=self.timestamp,
            coordinator_epoch=self.coordinator_epoch,
            current_txn_first_offset=self.txn_first_offset,
        )


@dataclass(slots=True)
class _Segment:
    base_offset: int
    file: BinaryIO
    size: int = 0
    offset_index: list[tuple[int, int]] = field(default_factory=list)
    time_index: list[tuple[int, int]] = field(default_factory=list)
    txn_index: list[bytes] = field(default_factory=list)
    bytes_since_index_entry: int = 0
    max_timestamp: int = -1
    offset_of_max_timestamp: int = -1

    def time_entry(self) -> None:
        """``TimeIndex.maybeAppend``: the largest timestamp so far, when larger than the last
        entry's."""
        if self.max_timestamp < 0:
            return
        if not self.time_index or self.max_timestamp > self.time_index[-1][0]:
            self.time_index.append((self.max_timestamp, self.offset_of_max_timestamp))


class PartitionLog:
    """Append v2 batches to a partition folder the way a broker's log does (module doc)."""

    def __init__(
        self,
        folder: Path,
        topic_id: uuid.UUID,
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        index_interval_bytes: int = INDEX_INTERVAL_BYTES,
        leader_epoch: int = 0,
        base_offset: int = 0,
    ) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.topic_id = topic_id
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self.leader_epoch = leader_epoch
        self.next_offset = base_offset
        self.producers: dict[int, ProducerState] = {}
        self.segments: list[int] = []
        self.batches = 0
        self.records = 0
        self._segment = self._open(base_offset)

    # -- appending -----------------------------------------------------------------------

    def write_batch(
        self,
        records: Sequence[RecordLike],
        *,
        timestamp: int,
        codec: Codec = Codec.NONE,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        transactional: bool = False,
    ) -> int:
        """Write ``records`` as one batch at the next offset; returns its base offset."""
        return self.append(
            encode_record_batch(
                records,
                base_offset=self.next_offset,
                timestamp=timestamp,
                codec=codec,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                base_sequence=base_sequence,
                transactional=transactional,
                partition_leader_epoch=self.leader_epoch,
            )
        )

    def write_marker(
        self,
        control_type: ControlType,
        *,
        timestamp: int,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
    ) -> int:
        """A COMMIT or ABORT marker at the next offset; returns its offset."""
        return self.append(
            encode_control_batch(
                control_type,
                base_offset=self.next_offset,
                timestamp=timestamp,
                coordinator_epoch=coordinator_epoch,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                partition_leader_epoch=self.leader_epoch,
            )
        )

    def append(self, batch: bytes) -> int:
        """Append one v2 batch that starts at :attr:`next_offset`; returns that offset."""
        header: tuple[int, ...] = _V2_HEADER.unpack_from(batch)
        (base, length, _, magic, _, attrs, last_delta, _, max_ts, pid, epoch, base_seq, count) = (
            header
        )
        if magic != 2 or length + 12 != len(batch):
            raise ValueError("not one v2 batch")
        if base != self.next_offset:
            raise ValueError(
                f"a batch at offset {base}: the log's next offset is {self.next_offset}"
            )
        segment = self._segment
        if segment.size and segment.size + len(batch) > self.segment_bytes:
            segment = self._roll(base)
        last_offset = base + last_delta
        if max_ts > segment.max_timestamp:
            segment.max_timestamp, segment.offset_of_max_timestamp = max_ts, last_offset
        if segment.bytes_since_index_entry > self.index_interval_bytes:
            segment.offset_index.append((last_offset - segment.base_offset, segment.size))
            segment.time_entry()
            segment.bytes_since_index_entry = 0
        segment.bytes_since_index_entry += len(batch)
        segment.file.write(batch)
        segment.size += len(batch)
        self.next_offset = last_offset + 1
        self.batches += 1
        self.records += count
        if pid >= 0:
            if attrs & _CONTROL:
                self._end_transaction(batch, pid, epoch, base, max_ts)
            else:
                self._producer_batch(pid, epoch, base_seq, count, last_offset, last_delta, max_ts)
                if attrs & _TRANSACTIONAL and self.producers[pid].txn_first_offset < 0:
                    self.producers[pid].txn_first_offset = base
        return base

    def _producer(self, pid: int, epoch: int) -> ProducerState:
        state = self.producers.get(pid)
        if state is None:
            state = self.producers[pid] = ProducerState(pid, epoch)
        elif state.epoch != epoch:  # a new epoch forgets the batches of the old one
            state.epoch, state.last_sequence, state.last_offset, state.offset_delta = (
                epoch,
                -1,
                -1,
                0,
            )
        return state

    def _producer_batch(
        self, pid: int, epoch: int, base_seq: int, count: int, last: int, delta: int, ts: int
    ) -> None:
        state = self._producer(pid, epoch)
        state.last_sequence = base_seq + count - 1 if base_seq >= 0 else -1
        state.last_offset, state.offset_delta, state.timestamp = last, delta, ts

    def _end_transaction(self, batch: bytes, pid: int, epoch: int, offset: int, ts: int) -> None:
        decoded = decode_entry(batch)
        if isinstance(decoded, SegmentError) or not decoded.records:
            raise ValueError(f"a control batch at offset {offset} that does not decode: {decoded}")
        (marker,) = decoded.records
        if not isinstance(marker, ControlRecord) or marker.coordinator_epoch is None:
            return  # a control record of another kind (KRaft's)
        control_type, coordinator_epoch = marker.control_type, marker.coordinator_epoch
        state = self._producer(pid, epoch)
        state.coordinator_epoch, state.timestamp = coordinator_epoch, ts
        first, state.txn_first_offset = state.txn_first_offset, -1
        if control_type == ControlType.ABORT and first >= 0:
            others = [
                p.txn_first_offset for p in self.producers.values() if p.txn_first_offset >= 0
            ]
            stable = min(others, default=offset + 1)
            entry = AbortedTxn(
                producer_id=pid, first_offset=first, last_offset=offset, last_stable_offset=stable
            )
            self._segment.txn_index.append(struct.pack(">h", 0) + entry.encode(0))

    # -- segments --------------------------------------------------------------------------

    def _name(self, base_offset: int, suffix: str) -> Path:
        return self.folder / f"{base_offset:020d}{suffix}"

    def _open(self, base_offset: int) -> _Segment:
        self.segments.append(base_offset)
        return _Segment(base_offset, self._name(base_offset, ".log").open("wb"))

    def _finish(self, segment: _Segment) -> None:
        """A segment becomes inactive: its time index gets the largest timestamp, and the
        indexes are written trimmed to their entries."""
        segment.file.close()
        segment.time_entry()
        base = segment.base_offset
        self._name(base, ".index").write_bytes(
            b"".join(_OFFSET_ENTRY.pack(*e) for e in segment.offset_index)
        )
        self._name(base, ".timeindex").write_bytes(
            b"".join(_TIME_ENTRY.pack(ts, off - base) for ts, off in segment.time_index)
        )
        if segment.txn_index:
            self._name(base, ".txnindex").write_bytes(b"".join(segment.txn_index))

    def _roll(self, base_offset: int) -> _Segment:
        self._finish(self._segment)
        self._snapshot(base_offset)
        self._segment = self._open(base_offset)
        return self._segment

    def _snapshot(self, offset: int) -> None:
        """The producers' state as of ``offset``: the generated ``ProducerSnapshot`` at version
        1 after its version, its CRC-32C over what follows the CRC."""
        entries = [self.producers[pid].snapshot_entry() for pid in sorted(self.producers)]
        unsigned = ProducerSnapshot(crc=0, producer_entries=entries).encode(1)
        body = ProducerSnapshot(crc=CRC32C(unsigned[4:]), producer_entries=entries).encode(1)
        self._name(offset, ".snapshot").write_bytes(struct.pack(">h", 1) + body)

    def close(self) -> None:
        """Shut down cleanly: the active segment's indexes, a snapshot at the log end, the
        leader epoch and the topic id."""
        self._finish(self._segment)
        self._snapshot(self.next_offset)
        (self.folder / "leader-epoch-checkpoint").write_text(f"0\n1\n{self.leader_epoch} 0\n")
        (self.folder / "partition.metadata").write_text(
            f"version: 0\ntopic_id: {kafka_uuid(self.topic_id)}"
        )


class LogDir:
    """A broker's log folder: its partitions (:meth:`partition`) and, at :meth:`close`, the
    files a broker writes beside them when it shuts down cleanly."""

    def __init__(
        self, folder: Path, *, node_id: int, cluster_id: uuid.UUID, directory_id: uuid.UUID
    ) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.directory_id = directory_id
        self.partitions: dict[tuple[str, int], PartitionLog] = {}

    def partition(
        self, topic: str, partition: int, topic_id: uuid.UUID, **options: int
    ) -> PartitionLog:
        log = PartitionLog(self.folder / partition_folder(topic, partition), topic_id, **options)
        self.partitions[(topic, partition)] = log
        return log

    def close(self, *, broker_epoch: int, now_ms: int) -> None:
        ends: dict[tuple[str, int], int] = {}
        for key, log in self.partitions.items():
            log.close()
            ends[key] = log.next_offset
        write_offset_checkpoint(self.folder / "recovery-point-offset-checkpoint", ends)
        write_offset_checkpoint(self.folder / "replication-offset-checkpoint", ends)
        write_offset_checkpoint(self.folder / "log-start-offset-checkpoint", {})
        (self.folder / "cleaner-offset-checkpoint").write_bytes(b"")
        when = _dt.datetime.fromtimestamp(now_ms / 1000, tz=_dt.UTC)
        (self.folder / "meta.properties").write_text(
            "#\n"
            f"#{when.strftime('%a %b %d %H:%M:%S UTC %Y')}\n"
            f"node.id={self.node_id}\n"
            f"directory.id={kafka_uuid(self.directory_id)}\n"
            "version=1\n"
            f"cluster.id={kafka_uuid(self.cluster_id)}\n"
        )
        (self.folder / ".kafka_cleanshutdown").write_text(
            json.dumps({"version": 0, "brokerEpoch": broker_epoch}, separators=(",", ":"))
        )
