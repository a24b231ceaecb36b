"""Transactions per partition from its replica on disk: the transactional batches and
COMMIT/ABORT markers give the transactions still open at the end (producer id, epoch, first
offset, first batch time), the last stable offset (LSO) they imply and the aborted ranges; the
``.txnindex`` files give the aborted ranges the broker indexed, checked against the markers; the
newest ``.snapshot`` gives the broker's producer state. In ``__consumer_offsets``, the offset
commits each open transaction holds (:func:`add_pending_commits`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import pyarrow as pa

from codegen.dumps import storage
from codegen.dumps.arrow import record_batches
from codegen.dumps.coordinator import CONSUMER_OFFSETS, TRANSACTION_STATE
from codegen.dumps.log_files import (
    LogFileError,
    TxnIndexError,
    producer_entry_json,
    read_producer_snapshot,
    read_transaction_index,
)
from codegen.dumps.model import SegmentError
from codegen.dumps.segments import segment_file_info
from codegen.dumps.storage import StoragePath
from codegen.dumps.views.commit_rows import commit_rows
from codegen.dumps.views.commits import decode_commits
from codegen.dumps.views.cut import AsOf, batches_kept, kept_positions
from codegen.dumps.views.transactions import (
    abort_command,
    pending_commits,
    pending_groups,
    summarize,
)
from codegen.forensics.inputs import LogDirs, PartitionFolder, replica_at

__all__ = [
    "INTERNAL_TOPICS",
    "AbortedRange",
    "BlockedGroup",
    "OpenTransaction",
    "PartitionTransactions",
    "PendingCommit",
    "add_pending_commits",
    "data_partitions",
    "scan_partition",
]

INTERNAL_TOPICS: Final = frozenset(
    {TRANSACTION_STATE, CONSUMER_OFFSETS, "__cluster_metadata", "__share_group_state"}
)
"""Topics whose partitions are not read as data partitions."""


@dataclass(frozen=True, slots=True)
class AbortedRange:
    producer_id: int
    first_offset: int
    last_offset: int
    """Offset of the ABORT marker."""
    last_stable_offset: int

    def to_json(self) -> dict[str, int]:
        return {
            "producerId": self.producer_id,
            "firstOffset": self.first_offset,
            "lastOffset": self.last_offset,
            "lastStableOffset": self.last_stable_offset,
        }


@dataclass(frozen=True, slots=True)
class BlockedGroup:
    group: str
    committed_offset: int

    def to_json(self) -> dict[str, Any]:
        return {"group": self.group, "committedOffset": self.committed_offset}


@dataclass(slots=True)
class PendingCommit:
    """An offset commit an open transaction holds in ``__consumer_offsets``: until the
    transaction ends, a consumer of ``group`` asking for stable offsets gets
    ``UNSTABLE_OFFSET_COMMIT`` for the partition."""

    group: str
    topic: str
    partition: int
    offset: int

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
        }


@dataclass(slots=True)
class OpenTransaction:
    """A transaction with records on a partition and no COMMIT/ABORT marker after them, and
    what :func:`codegen.dumps.views.transactions.judge` says of it."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    first_offset: int
    first_timestamp: int
    last_offset: int
    last_timestamp: int
    """The newest timestamp of its producer's last batch here (the producer state's)."""
    age_ms: int = 0
    """From its first batch to now."""
    idle_ms: int = 0
    """From its producer's last write to now (what find-hanging compares)."""
    transactional_id: str | None = None
    timeout_ms: int | None = None
    hanging: bool = False
    find_hanging: bool = False
    """Whether ``kafka-transactions.sh find-hanging`` lists it."""
    reason: str = ""
    outlook: str = ""
    times_out_at: int | None = None
    blocked_groups: list[BlockedGroup] = field(default_factory=list)
    pending_commits: list[PendingCommit] = field(default_factory=list)
    """For a transaction in ``__consumer_offsets``: the offset commits it holds."""
    pending_groups: list[str] = field(default_factory=list)
    """For a transaction in ``__consumer_offsets``: the groups whose offsets it keeps pending
    (:func:`codegen.dumps.views.transactions.pending_groups`)."""

    @property
    def abort_command(self) -> str | None:
        """The command that ends it, where ``find-hanging`` lists it."""
        if not self.find_hanging:
            return None
        return abort_command(self.topic, self.partition, self.first_offset)

    def to_json(self) -> dict[str, Any]:
        doc = {
            "topic": self.topic,
            "partition": self.partition,
            "producerId": self.producer_id,
            "producerEpoch": self.producer_epoch,
            "firstOffset": self.first_offset,
            "lastOffset": self.last_offset,
            "firstTimestamp": self.first_timestamp,
            "lastTimestamp": self.last_timestamp,
            "ageMs": self.age_ms,
            "idleMs": self.idle_ms,
            "transactionalId": self.transactional_id,
            "timeoutMs": self.timeout_ms,
            "hanging": self.hanging,
            "findHanging": self.find_hanging,
            "reason": self.reason,
            "outlook": self.outlook,
            "timesOutAt": self.times_out_at,
            "blockedGroups": [g.to_json() for g in self.blocked_groups],
            "abortCommand": self.abort_command,
        }
        if self.topic == CONSUMER_OFFSETS:
            doc["pendingGroups"] = self.pending_groups
            doc["pendingCommits"] = [c.to_json() for c in self.pending_commits]
        return doc


@dataclass(slots=True)
class PartitionTransactions:
    """A data partition's transactions: open ones, the LSO, aborted ranges, producers."""

    topic: str
    partition: int
    folder: str
    log_end_offset: int = 0
    last_stable_offset: int = 0
    gap: int = 0
    """Log end minus last stable offset."""
    reported: bool = True
    """Whether the report lists it (a ``__consumer_offsets`` partition: with transactions)."""
    open: list[OpenTransaction] = field(default_factory=list)
    aborted_from_markers: list[AbortedRange] = field(default_factory=list)
    aborted_from_index: list[AbortedRange] = field(default_factory=list)
    index_problems: list[str] = field(default_factory=list)
    """Differences between the markers' aborted ranges and the ``.txnindex`` entries."""
    committed: int = 0
    """Transactions committed on this partition (COMMIT markers that closed one)."""
    producers: list[dict[str, int]] = field(default_factory=list)
    """The newest ``.snapshot``'s producers."""
    snapshot: str | None = None
    """The ``.snapshot`` file read (its base offset is the log offset it was taken at)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "partition",
            "topic": self.topic,
            "partition": self.partition,
            "folder": self.folder,
            "logEndOffset": self.log_end_offset,
            "lastStableOffset": self.last_stable_offset,
            "gap": self.gap,
            "committedTransactions": self.committed,
            "openTransactions": [t.to_json() for t in self.open],
            "abortedFromMarkers": [a.to_json() for a in self.aborted_from_markers],
            "abortedFromIndex": [a.to_json() for a in self.aborted_from_index],
            "indexProblems": self.index_problems,
            "snapshot": self.snapshot,
            "producers": self.producers,
        }


def scan_partition(
    replica: PartitionFolder, as_of: AsOf | None, errors: list[SegmentError]
) -> tuple[PartitionTransactions, int]:
    """A partition from its batch rows (records are not read: a transaction's batches, and the
    markers that end it, say all it needs), and its newest batch time."""
    result = PartitionTransactions(replica.topic, replica.partition, str(replica.folder))
    at = replica_at(replica.logs(), as_of, errors)
    summary = summarize(at)
    result.log_end_offset = summary.log_end_offset
    result.last_stable_offset, result.gap = summary.last_stable_offset, summary.gap
    result.reported = summary.reported(result.topic)
    found = summary.transactions
    result.committed = found.committed
    result.open = [
        OpenTransaction(result.topic, result.partition, **_snake(row))
        for row in found.open.to_pylist()
    ]
    result.aborted_from_markers = [AbortedRange(**_snake(row)) for row in found.aborted.to_pylist()]
    _index_ranges(replica, result, at.whole)
    _snapshot(replica, result, at.whole)
    return result, summary.newest_timestamp


def _snake(row: dict[str, Any]) -> dict[str, Any]:
    """Arrow columns' names as the fields' (``firstOffset`` -> ``first_offset``)."""
    return {"".join(f"_{c.lower()}" if c.isupper() else c for c in k): v for k, v in row.items()}


def _index_ranges(replica: PartitionFolder, result: PartitionTransactions, whole: bool) -> None:
    """The aborted ranges the ``.txnindex`` files hold (at a cut, those whose ABORT marker is
    below the log end then), checked against the markers'."""
    indexes = [f for f in storage.listdir(replica.folder) if f.suffix == ".txnindex"]
    for path in indexes:
        try:
            for entry in read_transaction_index(path):
                t = entry.txn
                result.aborted_from_index.append(
                    AbortedRange(t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)
                )
        except TxnIndexError as exc:
            result.index_problems.append(f"{path.name}@{exc.position}: {exc}")
    if not indexes:
        return
    if not whole:
        end = result.log_end_offset
        result.aborted_from_index = [a for a in result.aborted_from_index if a.last_offset < end]
    first = _first_offset(replica)
    markers = {
        (a.producer_id, a.first_offset, a.last_offset): a for a in result.aborted_from_markers
    }
    indexed = {(a.producer_id, a.first_offset, a.last_offset): a for a in result.aborted_from_index}
    for k, a in sorted(markers.items(), key=lambda kv: kv[0][2]):
        other = indexed.get(k)
        if other is None:
            result.index_problems.append(
                f"producer {k[0]} aborted {k[1]}..{k[2]} (ABORT marker) is not in the .txnindex"
            )
        elif other.last_stable_offset != a.last_stable_offset:
            result.index_problems.append(
                f"producer {k[0]} aborted {k[1]}..{k[2]}: the .txnindex says last stable offset "
                f"{other.last_stable_offset}, the markers {a.last_stable_offset}"
            )
    for k in sorted(set(indexed) - set(markers), key=lambda k: k[2]):
        if k[2] >= first:  # an entry whose marker was removed (retention) is expected
            result.index_problems.append(
                f"producer {k[0]} aborted {k[1]}..{k[2]} is in the .txnindex but no ABORT marker "
                "closes such a transaction in the segments"
            )


def _first_offset(replica: PartitionFolder) -> int:
    logs = replica.logs()
    return (segment_file_info(logs[0]).base_offset or 0) if logs else 0


def _snapshot(replica: PartitionFolder, result: PartitionTransactions, whole: bool) -> None:
    """The producers of the newest ``.snapshot``; at a cut, of the newest taken before it:
    a broker takes one as it rolls a segment (named by the log end then, when the batch that
    rolled it was appended) and as it stops, so at a cut those below the log end then."""
    snapshots = sorted(
        (
            f
            for f in storage.listdir(replica.folder)
            if f.suffix == ".snapshot" and (whole or _snapshot_offset(f) < result.log_end_offset)
        ),
        key=_snapshot_offset,
    )
    if not snapshots:
        return
    newest = snapshots[-1]
    result.snapshot = str(newest)
    try:
        result.producers = [producer_entry_json(e) for e in read_producer_snapshot(newest)]
    except LogFileError as exc:
        result.index_problems.append(str(exc))


def _snapshot_offset(path: StoragePath) -> int:
    return int(path.name.split(".")[0] or 0)


def data_partitions(dirs: LogDirs) -> list[PartitionFolder]:
    """One replica of each data partition (not an internal topic) with segments."""
    chosen: list[PartitionFolder] = []
    for (topic, _), replicas in sorted(dirs.replicas.items()):
        if topic in INTERNAL_TOPICS:
            continue
        with_logs = [r for r in replicas if r.logs()]
        if with_logs:
            # The replica holding the most: the highest base offset of its last segment.
            chosen.append(max(with_logs, key=_rank))
    return chosen


def _rank(r: PartitionFolder) -> tuple[int, int]:
    logs = r.logs()
    return (segment_file_info(logs[-1]).base_offset or 0, sum(f.stat().st_size for f in logs))


def add_pending_commits(
    replica: PartitionFolder, result: PartitionTransactions, as_of: AsOf | None
) -> None:
    """The offset commits each open transaction of a ``__consumer_offsets`` partition holds
    (:func:`codegen.dumps.views.transactions.pending_commits`) and the groups whose offsets it keeps
    pending (:func:`codegen.dumps.views.transactions.pending_groups`)."""
    if not result.open:
        return
    tables = []
    for f in replica.logs():
        kept = None if as_of is None else kept_positions(f, as_of)
        for rb in record_batches(f, headers=False):
            if kept is not None:
                rb = rb.filter(pa.array(batches_kept(rb, kept)))
            tables.append(commit_rows(decode_commits(rb)[0]))
    opened = pa.table(
        {
            "producerId": [t.producer_id for t in result.open],
            "firstOffset": [t.first_offset for t in result.open],
            "lastOffset": [t.last_offset for t in result.open],
        }
    )
    by_start = {(t.producer_id, t.first_offset): t for t in result.open}
    pending = pending_commits(opened, pa.concat_tables(tables))
    for row in pending.to_pylist():
        by_start[(row["producerId"], row["firstOffset"])].pending_commits.append(
            PendingCommit(row["group"], row["topic"], row["partition"], row["offset"])
        )
    for row in pending_groups(opened, pending).to_pylist():
        by_start[(row["producerId"], row["firstOffset"])].pending_groups = row["pendingGroups"]
