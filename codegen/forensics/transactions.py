"""Transactions from the disk: the coordinator's view, open transactions, stuck last stable
offsets, producer state, aborted ranges and hanging transactions.

Three sources, each optional but not all absent:

- ``__transaction_state`` (the transaction coordinator's log): per transactional id its states
  over time (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort,
  PrepareEpochFence, Dead), producer id and epoch, timeout and partitions. A transaction runs
  from its first Ongoing record to the Complete* record that ends it.
- the data partitions: their transactional batches and COMMIT/ABORT markers give, per
  partition, the transactions still open at the end (producer id, epoch, first offset, first
  batch time), the last stable offset (LSO) they imply (the first offset of the oldest open
  transaction, else the log end) and the aborted ranges (first offset to the ABORT marker);
  the ``.txnindex`` files give the aborted ranges the broker indexed, checked against the
  markers; the newest ``.snapshot`` gives the broker's producer state.
- ``__consumer_offsets``: the groups whose committed offset on a partition has reached its
  stuck LSO (a ``read_committed`` consumer cannot read past it).

A transaction open on a partition *hangs* by the rule of Kafka's ``kafka-transactions.sh
find-hanging`` (KIP-664): its producer's last write on the partition is older than the maximum
transaction timeout (``max_timeout_ms``, the broker's ``transaction.max.timeout.ms`` default of
15 minutes) and the coordinator does not list the partition for it (no transactional id has its
producer id now, the id is gone, or its transaction does not hold the partition). The open
transactions that do not hang say what comes next and when. The rules are defined once, in
:mod:`codegen.views.transactions`; ``rule="loose"`` (an option, never the default) flags more.
Without ``__transaction_state`` only the age can be judged, and each hanging transaction says
so. Open transactions in ``__consumer_offsets`` (transactional offset commits,
``sendOffsetsToTransaction``) are found the same way, with the groups whose offsets they keep
pending.

*Now* is the ``as_of`` time (for a ``__consumer_offsets`` offset, the moment of
:func:`codegen.forensics.inputs.resolve_cut`), else the newest batch timestamp read. With
``as_of`` the batches and records written after it are left out, as if the disks had been
copied then.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, NamedTuple

import pyarrow as pa

from codegen.dumps import storage
from codegen.dumps.arrow import record_batches
from codegen.dumps.compacted import CompactedView
from codegen.dumps.coordinator import CONSUMER_OFFSETS, TRANSACTION_STATE, decode_batches
from codegen.dumps.decoded import RECORD, TOMBSTONE
from codegen.dumps.model import SegmentError
from codegen.dumps.segments import segment_file_info
from codegen.dumps.storage import RemotePath, StoragePath
from codegen.forensics.inputs import (
    InputError,
    LogDirs,
    PartitionFolder,
    discover,
    replica_at,
    resolve_cut,
)
from codegen.views.consumer_offsets import batches_kept, decode_commits
from codegen.views.cut import AsOf, kept_positions
from codegen.views.offsets import commit_rows
from codegen.views.transactions import (
    DEFAULT_MAX_TIMEOUT_MS,
    FIND_HANGING,
    TO_JUDGE_SCHEMA,
    abort_command,
    judge_open,
    pending_commits,
    summarize,
)

__all__ = [
    "DEFAULT_MAX_TIMEOUT_MS",
    "FENCE_WINDOW_MS",
    "INTERNAL_TOPICS",
    "ONGOING",
    "STATES",
    "AbortedRange",
    "BlockedGroup",
    "CoordinatorTransaction",
    "OpenTransaction",
    "PartitionTransactions",
    "StateChange",
    "TransactionReport",
    "TransactionalId",
    "abort_command",
    "add_state_change",
    "collector_paused",
    "data_partitions",
    "transaction_report",
]

STATES: Final = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}
"""``TransactionState`` ids of Kafka's transaction coordinator (the record's status byte)."""

ONGOING: Final = "Ongoing"
FENCE_WINDOW_MS: Final = 1000
"""An abort followed this soon by the id's re-initialization (Empty with a new epoch) is a
fencing: a new producer instance's InitProducerId aborted the open transaction."""
_ENDING: Final = frozenset({"PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort"})
_TV2: Final = 2
INTERNAL_TOPICS: Final = frozenset(
    {TRANSACTION_STATE, CONSUMER_OFFSETS, "__cluster_metadata", "__share_group_state"}
)
"""Topics whose partitions are not read as data partitions."""


class StateChange(NamedTuple):
    """One ``__transaction_state`` record of a transactional id (a named tuple: one is made
    per record, and a tuple is the cheapest immutable value to make)."""

    offset: int
    """Offset of the record in its ``__transaction_state`` partition."""
    timestamp: int
    """The record's last-update time (the batch time for a tombstone)."""
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    partitions: tuple[tuple[str, int], ...]
    start_timestamp: int
    change: str = ""
    """What changed the producer: ``new producer id`` or ``epoch bump`` (fencing), else ""."""

    def to_json(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "timestamp": self.timestamp,
            "state": self.state,
            "producerId": self.producer_id,
            "producerEpoch": self.producer_epoch,
            "timeoutMs": self.timeout_ms,
            "partitions": [f"{t}-{p}" for t, p in self.partitions],
            "startTimestamp": self.start_timestamp,
            "change": self.change,
        }


@dataclass(slots=True)
class CoordinatorTransaction:
    """One transaction as the coordinator logged it: from Ongoing to its Complete* record."""

    producer_id: int
    producer_epoch: int
    start_timestamp: int
    partitions: tuple[tuple[str, int], ...]
    end_timestamp: int | None = None
    outcome: str = "open"
    """``committed``, ``aborted``, ``aborted (timed out)``, ``aborted (fenced)`` or ``open``."""

    @property
    def duration_ms(self) -> int | None:
        return None if self.end_timestamp is None else self.end_timestamp - self.start_timestamp

    def to_json(self) -> dict[str, Any]:
        return {
            "producerId": self.producer_id,
            "producerEpoch": self.producer_epoch,
            "startTimestamp": self.start_timestamp,
            "endTimestamp": self.end_timestamp,
            "durationMs": self.duration_ms,
            "outcome": self.outcome,
            "partitions": [f"{t}-{p}" for t, p in self.partitions],
        }


@dataclass(slots=True)
class TransactionalId:
    """A transactional id's history in ``__transaction_state``."""

    transactional_id: str
    coordinator_partition: int
    changes: list[StateChange] = field(default_factory=list)
    transactions: list[CoordinatorTransaction] = field(default_factory=list)
    deleted_at: int | None = None
    """Offset of the tombstone that removed the id (expired), None while it lives."""

    @property
    def latest(self) -> StateChange | None:
        return self.changes[-1] if self.changes and self.deleted_at is None else None

    def to_json(self) -> dict[str, Any]:
        last = self.changes[-1] if self.changes else None
        return {
            "kind": "transactional-id",
            "transactionalId": self.transactional_id,
            "coordinatorPartition": self.coordinator_partition,
            "state": "deleted" if self.deleted_at is not None else (last and last.state),
            "producerId": last and last.producer_id,
            "producerEpoch": last and last.producer_epoch,
            "timeoutMs": last and last.timeout_ms,
            "partitions": [] if last is None else [f"{t}-{p}" for t, p in last.partitions],
            "deletedAt": self.deleted_at,
            "fencing": [c.to_json() for c in self.changes if c.change],
            "transactions": [t.to_json() for t in self.transactions],
            "states": [c.to_json() for c in self.changes],
        }


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
    what :func:`codegen.views.transactions.judge` says of it."""

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

    @property
    def abort_command(self) -> str | None:
        """The command that ends it, where ``find-hanging`` lists it."""
        if not self.find_hanging:
            return None
        return abort_command(self.topic, self.partition, self.first_offset)

    @property
    def pending_groups(self) -> list[str]:
        return sorted({c.group for c in self.pending_commits})

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

    @property
    def last_stable_offset(self) -> int:
        return min((t.first_offset for t in self.open), default=self.log_end_offset)

    @property
    def gap(self) -> int:
        return self.log_end_offset - self.last_stable_offset

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


@dataclass(slots=True)
class TransactionReport:
    now: int
    coordinator: str | None
    """The ``__transaction_state`` read ("" none)."""
    transactional_ids: list[TransactionalId]
    partitions: list[PartitionTransactions]
    errors: list[SegmentError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    offset_partitions: list[PartitionTransactions] = field(default_factory=list)
    """The ``__consumer_offsets`` partitions with transactional offset commits."""
    rule: str = FIND_HANGING

    @property
    def open(self) -> list[OpenTransaction]:
        """Every open transaction: of the data partitions, then of ``__consumer_offsets``."""
        return [t for p in [*self.partitions, *self.offset_partitions] for t in p.open]

    @property
    def hanging(self) -> list[OpenTransaction]:
        return [t for t in self.open if t.hanging]

    def lines(self) -> list[dict[str, Any]]:
        """The jsonl output: transactional ids, partitions (the data partitions, then those of
        ``__consumer_offsets``), then one line per hanging one."""
        out = [t.to_json() for t in self.transactional_ids]
        out += [p.to_json() for p in [*self.partitions, *self.offset_partitions]]
        out += [{"kind": "hanging", **t.to_json()} for t in self.hanging]
        return out


def _partitions_of(value: Any) -> tuple[tuple[str, int], ...]:
    return tuple(
        sorted((t.topic, p) for t in (value.transaction_partitions or []) for p in t.partition_ids)
    )


def _coordinator(
    dirs: LogDirs, as_of: AsOf | None, errors: list[SegmentError]
) -> tuple[dict[str, TransactionalId], str | None, int]:
    ids: dict[str, TransactionalId] = {}
    partitions = dirs.partitions(TRANSACTION_STATE)
    if not partitions:
        return ids, None, -1
    newest = -1
    read: list[str] = []
    for partition, files in dirs.coordinator_segments(TRANSACTION_STATE, TRANSACTION_STATE):
        read.append(str(files[0].parent))
        for f in files:
            for item in decode_batches(f, TRANSACTION_STATE, errors=errors):
                if isinstance(item, SegmentError):
                    continue
                batch = item.batch
                if as_of is not None and as_of.excludes(batch.base_offset, batch.max_timestamp):
                    continue
                newest = max(newest, batch.max_timestamp)
                for rec in item.records:
                    if rec.kind not in (RECORD, TOMBSTONE) or rec.name != "TransactionLog":
                        continue
                    name = rec.key.transactional_id  # type: ignore[union-attr]
                    tid = ids.get(name)
                    if tid is None:
                        tid = ids[name] = TransactionalId(name, partition)
                    if rec.value is None:
                        tid.deleted_at = rec.offset
                        continue
                    _add_change(tid, rec.offset, rec.value)
    return ids, ", ".join(read), newest


def _add_change(tid: TransactionalId, offset: int, value: Any) -> None:
    add_state_change(
        tid,
        offset,
        status=value.transaction_status,
        producer_id=value.producer_id,
        producer_epoch=value.producer_epoch,
        timeout_ms=value.transaction_timeout_ms,
        partitions=_partitions_of(value),
        last_update_ms=value.transaction_last_update_timestamp_ms,
        start_ms=value.transaction_start_timestamp_ms,
        transaction_version=value.client_transaction_version,
    )


def add_state_change(
    tid: TransactionalId,
    offset: int,
    *,
    status: int,
    producer_id: int,
    producer_epoch: int,
    timeout_ms: int,
    partitions: tuple[tuple[str, int], ...],
    last_update_ms: int,
    start_ms: int,
    transaction_version: int,
) -> None:
    """Add one ``__transaction_state`` value record (in log order) to ``tid``: its state
    change, the fencing it shows, and the transaction it starts, extends or ends with its
    outcome (a value after the id's tombstone revives it). The one definition of these rules,
    for the Python API and the Spark functions."""
    tid.deleted_at = None
    state = STATES.get(status) or f"status {status}"
    before = tid.changes[-1] if tid.changes else None
    # Transaction version 2 (KIP-890) bumps the epoch, or moves to the next producer id, as
    # every transaction ends: not a fencing.
    ending = state in _ENDING and transaction_version >= _TV2
    change = ""
    if before is None or ending:
        pass
    elif producer_id != before.producer_id:
        change = "new producer id"
    elif producer_epoch != before.producer_epoch:
        change = "epoch bump"
    step = StateChange(
        offset,
        last_update_ms,
        state,
        producer_id,
        producer_epoch,
        timeout_ms,
        partitions,
        start_ms,
        change,
    )
    tid.changes.append(step)
    current = tid.transactions[-1] if tid.transactions else None
    if (
        current is not None
        and current.outcome == "aborted"
        and change
        and state == "Empty"
        and before is not None
        and before.state == "CompleteAbort"
        and step.timestamp - before.timestamp <= FENCE_WINDOW_MS
    ):
        # A new instance's InitProducerId aborted the transaction, then took the id.
        current.outcome = "aborted (fenced)"
    if current is not None and current.outcome != "open":
        current = None
    if state == ONGOING and current is None:
        tid.transactions.append(
            CoordinatorTransaction(producer_id, producer_epoch, step.start_timestamp, partitions)
        )
    elif state == ONGOING and current is not None:
        current.partitions = partitions
    elif state in ("CompleteCommit", "CompleteAbort") and current is not None:
        current.end_timestamp = step.timestamp
        # A coordinator that aborts a transaction for its timeout, or for a new producer
        # instance (InitProducerId), bumps the epoch; only the time tells the two apart.
        since = _since_ongoing(tid)
        bumped = any(c.change or c.state == "PrepareEpochFence" for c in since)
        timed_out = step.timestamp - current.start_timestamp >= step.timeout_ms > 0
        tv2 = transaction_version >= _TV2
        if state == "CompleteCommit":
            current.outcome = "committed"
        elif timed_out and (bumped or tv2):
            current.outcome = "aborted (timed out)"
        elif bumped:
            current.outcome = "aborted (fenced)"
        else:
            current.outcome = "aborted"


def _since_ongoing(tid: TransactionalId) -> list[StateChange]:
    out: list[StateChange] = []
    for c in reversed(tid.changes):
        if c.state == ONGOING:
            break
        out.append(c)
    return out


def _scan_partition(
    replica: PartitionFolder, as_of: AsOf | None, errors: list[SegmentError]
) -> tuple[PartitionTransactions, int]:
    """A partition from its batch rows (records are not read: a transaction's batches, and the
    markers that end it, say all it needs), and its newest batch time."""
    result = PartitionTransactions(replica.topic, replica.partition, str(replica.folder))
    at = replica_at(replica.logs(), as_of, errors)
    summary = summarize(at)
    result.log_end_offset = summary.log_end_offset
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
    from codegen.dumps.log_files import TxnIndexError, read_transaction_index

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
    from codegen.dumps.log_files import LogFileError, producer_entry_json, read_producer_snapshot

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


def _committed_offsets(
    dirs: LogDirs, as_of: AsOf | None, errors: list[SegmentError]
) -> dict[tuple[str, int], list[BlockedGroup]]:
    out: dict[tuple[str, int], list[BlockedGroup]] = {}
    for _, files in dirs.coordinator_segments(CONSUMER_OFFSETS):
        view = CompactedView()
        for f in files:
            for item in decode_batches(f, CONSUMER_OFFSETS, errors=errors):
                if isinstance(item, SegmentError):
                    continue
                b = item.batch
                if as_of is not None and as_of.excludes(b.base_offset, b.max_timestamp):
                    continue
                view.add_batch(item)
        for c in view.offsets.values():
            out.setdefault((c.topic, c.partition), []).append(BlockedGroup(c.group, c.offset))
    return out


def _judge_all(
    txns: list[OpenTransaction],
    ids: dict[str, TransactionalId],
    have_coordinator: bool,
    now: int,
    max_timeout_ms: int,
    rule: str,
) -> None:
    """Each open transaction judged at ``now`` (:func:`codegen.views.transactions.judge_open`):
    its transactional id is the one whose records name its producer id (the latest)."""
    by_producer: dict[int, TransactionalId] = {}
    for tid in ids.values():
        for c in tid.changes:
            by_producer[c.producer_id] = tid
    rows = []
    for t in txns:
        owner = by_producer.get(t.producer_id)
        latest = owner.latest if owner is not None else None
        rows.append(
            {
                "topic": t.topic,
                "partition": t.partition,
                "producerId": t.producer_id,
                "firstOffset": t.first_offset,
                "firstTimestamp": t.first_timestamp,
                "lastTimestamp": t.last_timestamp,
                "transactionalId": None if owner is None else owner.transactional_id,
                "state": None if latest is None else latest.state,
                "coordinatorProducerId": None if latest is None else latest.producer_id,
                "coordinatorTimeoutMs": None if latest is None else latest.timeout_ms,
                "coordinatorStartTimestamp": None if latest is None else latest.start_timestamp,
                "partitions": [] if latest is None else [f"{a}-{b}" for a, b in latest.partitions],
            }
        )
    table = pa.Table.from_pylist(rows, schema=TO_JUDGE_SCHEMA)
    judged = judge_open(
        table, now, have_coordinator=have_coordinator, max_timeout_ms=max_timeout_ms, rule=rule
    )
    columns = judged.select(
        ["transactionalId", "ageMs", "idleMs", "timeoutMs", "hanging", "findHanging", "reason",
         "outlook", "timesOutAt"]
    ).to_pylist()  # fmt: skip
    for t, j in zip(txns, columns, strict=True):
        t.transactional_id = j["transactionalId"]
        t.age_ms, t.idle_ms, t.timeout_ms = j["ageMs"], j["idleMs"], j["timeoutMs"]
        t.hanging, t.find_hanging = j["hanging"], j["findHanging"]
        t.reason, t.outlook, t.times_out_at = j["reason"], j["outlook"], j["timesOutAt"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector within. A report holds an object or two per
    ``__transaction_state`` record and no cycles: the collector would only rescan them (and all
    else the process holds) as they grow, about a third of the time, so it pauses while they
    are read (and, in the command, written)."""
    pause = gc.isenabled()
    if pause:
        gc.disable()
    try:
        yield
    finally:
        if pause:
            gc.enable()


def transaction_report(
    path: StoragePath | str | Sequence[StoragePath | str] | LogDirs,
    transactional_id: str | None = None,
    as_of: AsOf | None = None,
    max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS,
    rule: str = FIND_HANGING,
) -> TransactionReport:
    """The transactions of a cluster's disks (see the module's description); ``rule``:
    ``find-hanging`` (Kafka's) or ``loose`` (:mod:`codegen.views.transactions`).

    Raises :class:`~codegen.forensics.inputs.InputError` when the paths hold neither
    ``__transaction_state`` nor data partitions, or ``transactional_id`` is not in the dump.
    """
    dirs = (
        path
        if isinstance(path, LogDirs)
        else discover([path] if isinstance(path, str | Path | RemotePath) else list(path))
    )
    data = data_partitions(dirs)
    if not data and not dirs.partitions(TRANSACTION_STATE):
        raise InputError(
            "expected __transaction_state-N or data partition folders (or broker log dirs "
            f"holding them) for transactions; {', '.join(map(str, dirs.given))} holds "
            f"{dirs.describe()}"
        )
    cut = resolve_cut(dirs, as_of)
    errors: list[SegmentError] = []
    partitions: list[PartitionTransactions] = []
    offset_partitions: list[PartitionTransactions] = []
    with collector_paused():
        ids, coordinator, newest = _coordinator(dirs, cut.others, errors)
        for replica in data:
            result, latest = _scan_partition(replica, cut.others, errors)
            partitions.append(result)
            newest = max(newest, latest)
        for replica in dirs.coordinator_replicas(CONSUMER_OFFSETS):
            result, latest = _scan_partition(replica, cut.consumer_offsets, errors)
            newest = max(newest, latest)
            if result.open or result.aborted_from_markers or result.committed:
                _pending_commits(replica, result, cut.consumer_offsets)
                offset_partitions.append(result)
    now = cut.now if cut.now is not None else newest
    txns = [t for p in [*partitions, *offset_partitions] for t in p.open]
    _judge_all(txns, ids, coordinator is not None, now, max_timeout_ms, rule)
    committed = (
        _committed_offsets(dirs, cut.consumer_offsets, errors)
        if any(p.open for p in partitions)
        else {}
    )
    for p in partitions:
        for txn in p.open:
            if txn.hanging:
                txn.blocked_groups = sorted(
                    (
                        g
                        for g in committed.get((p.topic, p.partition), [])
                        if g.committed_offset >= p.last_stable_offset
                    ),
                    key=lambda g: g.group,
                )
    notes: list[str] = []
    if coordinator is None:
        notes.append(
            "no __transaction_state in the input: transactional ids are unknown, and open "
            "transactions are judged by their age only"
        )
    if not data:
        notes.append("no data partition in the input: open transactions and LSOs are unknown")
    chosen = sorted(ids.values(), key=lambda t: t.transactional_id)
    if transactional_id is not None:
        chosen = [t for t in chosen if t.transactional_id == transactional_id]
        if not chosen:
            raise InputError(
                f"transactional id {transactional_id!r} is not in the dump's "
                "__transaction_state; run without --transactional-id to list them"
            )
        pids = {c.producer_id for c in chosen[0].changes}

        def involved(p: PartitionTransactions) -> bool:
            return (
                any(t.producer_id in pids for t in p.open)
                or any(a.producer_id in pids for a in p.aborted_from_markers)
                or any((p.topic, p.partition) in c.partitions for c in chosen[0].changes)
            )

        partitions = [p for p in partitions if involved(p)]
        offset_partitions = [p for p in offset_partitions if involved(p)]
    return TransactionReport(
        now, coordinator, chosen, partitions, errors, notes, offset_partitions, rule
    )


def _pending_commits(
    replica: PartitionFolder, result: PartitionTransactions, as_of: AsOf | None
) -> None:
    """The offset commits each open transaction of a ``__consumer_offsets`` partition holds
    (:func:`codegen.views.transactions.pending_commits`)."""
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
    for row in pending_commits(opened, pa.concat_tables(tables)).to_pylist():
        by_start[(row["producerId"], row["firstOffset"])].pending_commits.append(
            PendingCommit(row["group"], row["topic"], row["partition"], row["offset"])
        )
