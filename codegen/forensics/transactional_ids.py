"""Transactional ids from ``__transaction_state``, the transaction coordinator's log: per id
its states over time (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort,
PrepareEpochFence, Dead), producer id and epoch, timeout and partitions, the fencings they show,
and its transactions, each from its first Ongoing record to the Complete* record that ends it
with its outcome (:func:`add_state_change`, the one definition of these rules)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

import pyarrow as pa

from codegen.dumps.batch_rows import batch_rows
from codegen.dumps.coordinator import TRANSACTION_STATE, decode_batches
from codegen.dumps.decoded import RECORD, TOMBSTONE
from codegen.dumps.model import SegmentError
from codegen.dumps.views.cut import AsOf, kept_batches, newest_batch_time
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


def _partitions_of(value: Any) -> tuple[tuple[str, int], ...]:
    return tuple(
        sorted((t.topic, p) for t in (value.transaction_partitions or []) for p in t.partition_ids)
    )


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
            newest = max(
                newest, newest_batch_time(rows if as_of is None else kept_batches(rows, as_of))
            )
            for item in decode_batches(f, TRANSACTION_STATE, errors=errors):
                if isinstance(item, SegmentError):
                    continue
                batch = item.batch
                if as_of is not None and as_of.excludes(batch.base_offset, batch.max_timestamp):
                    continue
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
