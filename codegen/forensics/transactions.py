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

The coordinator's view is read by :mod:`codegen.forensics.transactional_ids`, the partitions by
:mod:`codegen.forensics.partition_transactions`; this module joins them into one report.

A transaction open on a partition *hangs* by the rule of Kafka's ``kafka-transactions.sh
find-hanging`` (KIP-664): its producer's last write on the partition is older than the maximum
transaction timeout (``max_timeout_ms``, the broker's ``transaction.max.timeout.ms`` default of
15 minutes) and the coordinator does not list the partition for it (no transactional id has its
producer id now, the id is gone, or its transaction does not hold the partition). The open
transactions that do not hang say what comes next and when. The rules are defined once, in
:mod:`codegen.dumps.views.transactions`; ``rule="loose"`` (an option, never the default) flags more.
Without ``__transaction_state`` only the age can be judged, and each hanging transaction says
so. Open transactions in ``__consumer_offsets`` (transactional offset commits,
``sendOffsetsToTransaction``) are found the same way, with the groups whose offsets they keep
pending.

*Now* is the ``as_of`` time (for a ``__consumer_offsets`` offset, the moment of
:func:`codegen.forensics.inputs.resolve_cut`), else the newest batch time read (the newest
header time of the batches with records, :func:`codegen.dumps.views.cut.newest_batch_time`, the rule
of the lag's *now*; Spark's ``spark_udfs.transactions.newest_timestamp`` runs it too). With
``as_of`` the batches and records written after it are left out, as if the disks had been
copied then.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pyarrow as pa

from codegen.dumps.coordinator import CONSUMER_OFFSETS, TRANSACTION_STATE, decode_batches
from codegen.dumps.model import SegmentError
from codegen.dumps.storage import RemotePath, StoragePath
from codegen.dumps.views.compacted import CompactedView
from codegen.dumps.views.cut import AsOf
from codegen.dumps.views.transactions import (
    DEFAULT_MAX_TIMEOUT_MS,
    FIND_HANGING,
    OWNED_SCHEMA,
    TO_JUDGE_SCHEMA,
    abort_command,
    judge_open,
    producer_owners,
)
from codegen.forensics.inputs import (
    InputError,
    LogDirs,
    discover,
    resolve_cut,
)
from codegen.forensics.partition_transactions import (
    BlockedGroup,
    OpenTransaction,
    PartitionTransactions,
    add_pending_commits,
    data_partitions,
    scan_partition,
)
from codegen.forensics.transactional_ids import (
    LATEST_SCHEMA,
    TransactionalId,
    read_transactional_ids,
)
from codegen.gc_pause import gc_paused

__all__ = [
    "DEFAULT_MAX_TIMEOUT_MS",
    "TransactionReport",
    "abort_command",
    "transaction_report",
]


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


_NO_OWNER: Final[dict[str, Any]] = {**{n: None for n in LATEST_SCHEMA.names}, "partitions": []}
"""The latest record of no transactional id (a producer id none names)."""


def _judge_all(
    txns: list[OpenTransaction],
    ids: dict[str, TransactionalId],
    have_coordinator: bool,
    now: int,
    max_timeout_ms: int,
    rule: str,
) -> None:
    """Each open transaction judged at ``now`` (:func:`codegen.dumps.views.transactions.judge_open`)
    with its transactional id: :func:`codegen.dumps.views.transactions.producer_owners` of the
    records naming its producer id."""
    wanted = {t.producer_id for t in txns}
    named = pa.Table.from_pylist(
        [
            {
                "transactionalId": tid.transactional_id,
                "coordinatorPartition": tid.coordinator_partition,
                "offset": c.offset,
                "timestamp": c.timestamp,
                "producerId": c.producer_id,
            }
            for tid in ids.values()
            for c in tid.changes
            if c.producer_id in wanted
        ],
        schema=OWNED_SCHEMA,
    )
    owners = producer_owners(named)
    by_producer = {
        pid: ids[name]
        for pid, name in zip(
            owners.column("producerId").to_pylist(),
            owners.column("transactionalId").to_pylist(),
            strict=True,
        )
    }
    rows = []
    for t in txns:
        owner = by_producer.get(t.producer_id)
        latest = _NO_OWNER if owner is None else owner.latest_json()
        rows.append(
            {
                "topic": t.topic,
                "partition": t.partition,
                "producerId": t.producer_id,
                "firstOffset": t.first_offset,
                "firstTimestamp": t.first_timestamp,
                "lastTimestamp": t.last_timestamp,
                "transactionalId": latest["transactionalId"],
                "state": latest["state"],
                "coordinatorProducerId": latest["producerId"],
                "coordinatorTimeoutMs": latest["timeoutMs"],
                "coordinatorStartTimestamp": latest["startTimestamp"],
                "partitions": latest["partitions"],
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


def transaction_report(
    path: StoragePath | str | Sequence[StoragePath | str] | LogDirs,
    transactional_id: str | None = None,
    as_of: AsOf | None = None,
    max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS,
    rule: str = FIND_HANGING,
) -> TransactionReport:
    """The transactions of a cluster's disks (see the module's description); ``rule``:
    ``find-hanging`` (Kafka's) or ``loose`` (:mod:`codegen.dumps.views.transactions`).

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
    # The GC paused: a report holds an object or two per __transaction_state record and no
    # cycles; each collection would rescan them as they grow (a third of the time).
    with gc_paused():
        ids, coordinator, newest = read_transactional_ids(dirs, cut.others, errors)
        for replica in data:
            result, latest = scan_partition(replica, cut.others, errors)
            partitions.append(result)
            newest = max(newest, latest)
        for replica in dirs.coordinator_replicas(CONSUMER_OFFSETS):
            result, latest = scan_partition(replica, cut.consumer_offsets, errors)
            newest = max(newest, latest)
            if result.reported:
                add_pending_commits(replica, result, cut.consumer_offsets)
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
