"""Transactional ids from ``__transaction_state``, the transaction coordinator's log: per id
its states over time (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort,
PrepareEpochFence, Dead), producer id and epoch, timeout and partitions, the fencings they show,
and its transactions, each from its first Ongoing record to the Complete* record that ends it
with its outcome (:func:`add_state_change`, the one definition of these rules).

The records come from the engine's columns (:func:`transaction_log_records`: one row per
record with what the rules read) and go through :func:`replay` in log order; Spark's
``spark_udfs.transactions`` replays each id's rows of the same columns the same way."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from codegen.columnar.topics import decode_topic_arrays
from codegen.dumps.arrow import record_batches
from codegen.dumps.batch_rows import batch_rows
from codegen.dumps.coordinator import TRANSACTION_STATE
from codegen.dumps.model import SegmentError
from codegen.dumps.views.cut import AsOf, batches_kept, kept_batches, newest_batch_time
from codegen.forensics.inputs import LogDirs

__all__ = [
    "FENCE_WINDOW_MS",
    "LATEST_SCHEMA",
    "ONGOING",
    "STATES",
    "CoordinatorTransaction",
    "StateChange",
    "TransactionalId",
    "add_state_change",
    "read_transactional_ids",
    "replay",
    "transaction_log_records",
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


LATEST_SCHEMA: Final = pa.schema(
    [
        pa.field("transactionalId", pa.string()),
        pa.field("producerId", pa.int64()),
        pa.field("producerEpoch", pa.int32()),
        pa.field("state", pa.string()),
        pa.field("timeoutMs", pa.int32()),
        pa.field("partitions", pa.list_(pa.string())),
        pa.field("startTimestamp", pa.int64()),
    ]
)
"""A transactional id's latest record (:meth:`TransactionalId.latest_json`)."""


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
        """The record the coordinator holds for the id now; None once a tombstone deleted it
        (a deleted id shows no state)."""
        return self.changes[-1] if self.changes and self.deleted_at is None else None

    def latest_json(self) -> dict[str, Any]:
        """:attr:`latest` as a :data:`LATEST_SCHEMA` row: null state, producer, epoch, timeout
        and start time, and no partitions, for a deleted id (the Spark functions' too)."""
        c = self.latest
        return {
            "transactionalId": self.transactional_id,
            "producerId": None if c is None else c.producer_id,
            "producerEpoch": None if c is None else c.producer_epoch,
            "state": None if c is None else c.state,
            "timeoutMs": None if c is None else c.timeout_ms,
            "partitions": [] if c is None else [f"{t}-{p}" for t, p in c.partitions],
            "startTimestamp": None if c is None else c.start_timestamp,
        }

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


RECORD_COLUMNS: Final = (
    "transactionalId",
    "coordinatorPartition",
    "offset",
    "status",
    "producerId",
    "producerEpoch",
    "timeoutMs",
    "partitions",
    "lastUpdateMs",
    "startMs",
    "version",
)
"""The columns :func:`replay` reads: one ``__transaction_state`` record each (``status`` null
for a tombstone; ``partitions`` the value's ``transactionPartitions``, topics with their
``partitionIds``; ``version`` its ``clientTransactionVersion``)."""

_VALUE_COLUMNS: Final = {
    "status": "transactionStatus",
    "producerId": "producerId",
    "producerEpoch": "producerEpoch",
    "timeoutMs": "transactionTimeoutMs",
    "partitions": "transactionPartitions",
    "lastUpdateMs": "transactionLastUpdateTimestampMs",
    "startMs": "transactionStartTimestampMs",
    "version": "clientTransactionVersion",
}


def transaction_log_records(rb: pa.RecordBatch, partition: int) -> pa.Table:
    """The ``TransactionLog`` records among rows of a ``__transaction_state`` partition (the
    engine's columns, :data:`codegen.dumps.arrow.RECORD_SCHEMA`) as :data:`RECORD_COLUMNS`, in
    log order: the rows that could not be read, control records, records of other types and
    records that do not decode are left out."""
    decoded = decode_topic_arrays(
        "transaction_state", rb.column("key"), rb.column("value"), rb.column("isControl")
    )
    keys = decoded.columns["decodedKey"]
    key = keys.field("TransactionLogKey") if keys.type.num_fields else None
    keep = np.asarray(rb.column("_error").is_null().to_numpy(zero_copy_only=False), np.bool_)
    keep &= np.asarray(
        pc.equal(decoded.columns["recordName"], "TransactionLog").fill_null(False), np.bool_
    )
    if key is not None:
        keep &= np.asarray(key.is_valid(), np.bool_)
    else:
        keep[:] = False
    if decoded.errors:
        keep[list(decoded.errors)] = False
    rows = pa.array(keep)
    values = decoded.columns["decodedValue"]
    value = values.field("TransactionLogValue") if values.type.num_fields else None
    n = int(keep.sum())
    columns: dict[str, pa.Array] = {
        "transactionalId": key.field("transactionalId").filter(rows) if key else pa.nulls(0),
        "coordinatorPartition": pa.repeat(pa.scalar(partition, pa.int32()), n),
        "offset": rb.column("offset").filter(rows),
    }
    for name, field_name in _VALUE_COLUMNS.items():
        columns[name] = value.field(field_name).filter(rows) if value is not None else pa.nulls(n)
    return pa.table(columns)


def replay(
    records: pa.Table, ids: dict[str, TransactionalId] | None = None
) -> dict[str, TransactionalId]:
    """Each transactional id's history after ``records`` (:data:`RECORD_COLUMNS`, in log order)
    added to ``ids`` (new ones made in the order their first record comes): a value record
    through :func:`add_state_change`, a tombstone marks the id deleted."""
    ids = {} if ids is None else ids
    columns = [records.column(name).to_pylist() for name in RECORD_COLUMNS]
    for (
        name,
        coordinator_partition,
        offset,
        status,
        pid,
        epoch,
        timeout,
        parts,
        last,
        start,
        version,
    ) in zip(*columns, strict=True):
        tid = ids.get(name)
        if tid is None:
            tid = ids[name] = TransactionalId(name, coordinator_partition)
        if status is None:  # a tombstone: the id expired
            tid.deleted_at = offset
            continue
        add_state_change(
            tid,
            offset,
            status=status,
            producer_id=pid,
            producer_epoch=epoch,
            timeout_ms=timeout,
            partitions=tuple(
                sorted((t["topic"], p) for t in parts or () for p in t["partitionIds"])
            ),
            last_update_ms=last,
            start_ms=start,
            transaction_version=version or 0,
        )
    return ids


def read_transactional_ids(
    dirs: LogDirs, as_of: AsOf | None, errors: list[SegmentError]
) -> tuple[dict[str, TransactionalId], str | None, int]:
    """Each transactional id's history at ``as_of``, the partition folders read, and the
    newest batch time of the batches kept (:func:`codegen.dumps.views.cut.newest_batch_time`
    of their headers; -1 without one)."""
    ids: dict[str, TransactionalId] = {}
    partitions = dirs.partitions(TRANSACTION_STATE)
    if not partitions:
        return ids, None, -1
    newest = -1
    read: list[str] = []
    for partition, files in dirs.coordinator_segments(TRANSACTION_STATE, TRANSACTION_STATE):
        read.append(str(files[0].parent))
        for f in files:
            rows = batch_rows(f)
            kept = rows if as_of is None else kept_batches(rows, as_of)
            newest = max(newest, newest_batch_time(kept))
            positions = None
            if as_of is not None:
                readable = kept.filter(kept.column("_error").is_null())
                positions = np.asarray(readable.column("batchPosition").to_numpy(), np.int64)
            for rb in record_batches(f, headers=False, batch_rows=32768, segment_errors=errors):
                if positions is not None:
                    rb = rb.filter(pa.array(batches_kept(rb, positions)))
                replay(transaction_log_records(rb, partition), ids)
    return ids, ", ".join(read), newest


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
