"""A partition's transactions and the hanging ones, from batch rows (Arrow in, Arrow out): the
one definition the ``transactions`` command and Spark (``spark_udfs.transactions``,
``applyInArrow`` per partition and ``mapInArrow`` over the open transactions) run.

:func:`partition_transactions` reads a partition's transactional batches and markers in log
order (:data:`codegen.dumps.batch_rows.BATCH_SCHEMA` rows, as :func:`codegen.dumps.views.log_ends
.segments_at` keeps them): per producer, a transaction runs from its first batch to the
COMMIT or ABORT marker that ends it; those without one are open. An aborted range's last
stable offset is Kafka's ``lastStableOffset(completedTxn)``: the first offset of the oldest
other transaction open then, else one past the marker. The partition's last stable offset is
the first offset of its oldest open transaction, else its log end.

:func:`judge_open` says which open transactions hang, by the rule of Kafka's
``kafka-transactions.sh find-hanging`` (KIP-664, ``TransactionsCommand``): a transaction is
listed when its producer's last write on the partition is older than the maximum transaction
timeout (``currentTime - lastTimestamp > maxTransactionTimeoutMs``, 15 minutes by default) and
the coordinator does not list the partition for it: no transactional id has its producer id
now (``ListTransactions``), the id is gone, or the id's transaction does not hold the partition
(``DescribeTransactions``: the partitions of an ongoing transaction, and those still waiting
for markers while it commits or aborts). The open transactions that do not hang say what comes
next and when (``timesOutAt``). The ``loose`` rule (an option, never the default) also flags a
transaction older than its timeout from its first batch, or one the coordinator does not list,
however young; its abort command is still given only where ``find-hanging`` lists it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

import numpy as np
import pyarrow as pa

from codegen.dumps.coordinator import CONSUMER_OFFSETS
from codegen.dumps.views.compaction import NO_MARKER
from codegen.dumps.views.cut import newest_batch_time
from codegen.dumps.views.log_ends import SegmentsAt, log_end_steps
from codegen.text import utc_text

__all__ = [
    "ABORTED_SCHEMA",
    "DEFAULT_MAX_TIMEOUT_MS",
    "FIND_HANGING",
    "JUDGED_SCHEMA",
    "LOOSE",
    "OPEN_SCHEMA",
    "OWNED_SCHEMA",
    "OWNER_SCHEMA",
    "PENDING_GROUPS_SCHEMA",
    "PENDING_SCHEMA",
    "RULES",
    "SUMMARY_SCHEMA",
    "TO_JUDGE_SCHEMA",
    "Judgement",
    "PartitionSummary",
    "PartitionTransactions",
    "abort_command",
    "judge",
    "judge_open",
    "partition_transactions",
    "pending_commits",
    "pending_groups",
    "producer_owners",
    "summarize",
]

DEFAULT_MAX_TIMEOUT_MS: Final = 900_000
"""``transaction.max.timeout.ms``'s default, and ``find-hanging``'s ``--max-transaction-timeout``
(15 minutes)."""
FIND_HANGING: Final = "find-hanging"
LOOSE: Final = "loose"
RULES: Final = (FIND_HANGING, LOOSE)
_ABORT: Final = 0
_COMMIT: Final = 1
_ONGOING: Final = "Ongoing"
_MARKERS_PENDING: Final = frozenset({"PrepareCommit", "PrepareAbort", "PrepareEpochFence"})

OPEN_SCHEMA: Final = pa.schema(
    [
        pa.field("producerId", pa.int64()),
        pa.field("producerEpoch", pa.int16()),
        pa.field("firstOffset", pa.int64()),
        pa.field("firstTimestamp", pa.int64()),
        pa.field("lastOffset", pa.int64()),
        pa.field("lastTimestamp", pa.int64()),
    ]
)
"""An open transaction: its producer, first and last offset, the newest timestamp of its first
batch and of its producer's last batch (the producer state's ``lastTimestamp``)."""
ABORTED_SCHEMA: Final = pa.schema(
    [
        pa.field("producerId", pa.int64()),
        pa.field("firstOffset", pa.int64()),
        pa.field("lastOffset", pa.int64()),
        pa.field("lastStableOffset", pa.int64()),
    ]
)
"""An aborted range: first offset to the ABORT marker, with the LSO once it was written."""


class PartitionTransactions(NamedTuple):
    open: pa.Table
    """:data:`OPEN_SCHEMA`, by first offset."""
    aborted: pa.Table
    """:data:`ABORTED_SCHEMA`, in marker order."""
    committed: int
    """COMMIT markers that ended a transaction."""


def partition_transactions(batches: pa.Table) -> PartitionTransactions:
    """The transactions of a partition's batch rows (readable, in log order)."""
    transactional = batches.filter(
        pa.array(
            np.asarray(batches.column("isTransactional").fill_null(False).to_numpy(), np.bool_)
            & (np.asarray(batches.column("magic").fill_null(0).to_numpy(), np.int64) >= 2)
        )
    )
    rows = transactional.select(
        ["producerId", "producerEpoch", "baseOffset", "lastOffset", "maxTimestamp", "isControl"]
    ).to_pylist()
    controls = transactional.column("controls").to_pylist()
    open_txns: dict[int, list[int]] = {}
    aborted: list[tuple[int, int, int, int]] = []
    committed = 0
    for row, marks in zip(rows, controls, strict=True):
        pid = row["producerId"]
        if not row["isControl"]:
            txn = open_txns.get(pid)
            if txn is None:
                open_txns[pid] = [
                    row["producerEpoch"],
                    row["baseOffset"],
                    row["maxTimestamp"],
                    row["lastOffset"],
                    row["maxTimestamp"],
                ]
            else:
                txn[3], txn[4] = row["lastOffset"], row["maxTimestamp"]
            continue
        for mark in marks or ():
            if mark["type"] not in (_ABORT, _COMMIT):
                continue
            ended = open_txns.pop(pid, None)
            if ended is None:
                continue  # a marker for a producer with nothing open here: nothing to end
            if mark["type"] == _COMMIT:
                committed += 1
                continue
            lso = min((t[1] for t in open_txns.values()), default=mark["offset"] + 1)
            aborted.append((pid, ended[1], mark["offset"], lso))
    ordered = sorted(open_txns.items(), key=lambda kv: kv[1][1])
    open_table = pa.table(
        {
            "producerId": [pid for pid, _ in ordered],
            "producerEpoch": [t[0] for _, t in ordered],
            "firstOffset": [t[1] for _, t in ordered],
            "firstTimestamp": [t[2] for _, t in ordered],
            "lastOffset": [t[3] for _, t in ordered],
            "lastTimestamp": [t[4] for _, t in ordered],
        },
        schema=OPEN_SCHEMA,
    )
    aborted_table = pa.Table.from_pylist(
        [dict(zip(ABORTED_SCHEMA.names, a, strict=True)) for a in aborted], schema=ABORTED_SCHEMA
    )
    return PartitionTransactions(open_table, aborted_table, committed)


SUMMARY_SCHEMA: Final = pa.schema(
    [
        pa.field("logEndOffset", pa.int64()),
        pa.field("lastStableOffset", pa.int64()),
        pa.field("gap", pa.int64()),
        pa.field("committed", pa.int64()),
        pa.field("newestTimestamp", pa.int64()),
        pa.field("whole", pa.bool_()),
        pa.field("reported", pa.bool_()),
        pa.field("openTransactions", pa.list_(pa.struct(list(OPEN_SCHEMA)))),
        pa.field("aborted", pa.list_(pa.struct(list(ABORTED_SCHEMA)))),
    ]
)
"""One row per partition (:meth:`PartitionSummary.table`)."""
_TRANSACTIONS_ONLY: Final = frozenset({CONSUMER_OFFSETS})
"""Topics whose partitions the transactions report lists only when they hold transactions."""


class PartitionSummary(NamedTuple):
    """A partition at a cut: its log end, its transactions, its newest batch time
    (:func:`codegen.dumps.views.cut.newest_batch_time`, -1 without a batch with records) and whether
    the cut kept all of it."""

    log_end_offset: int
    transactions: PartitionTransactions
    newest_timestamp: int
    whole: bool

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the oldest open transaction, else the log end."""
        first = self.transactions.open.column("firstOffset").to_pylist()
        return min(first, default=self.log_end_offset)

    @property
    def gap(self) -> int:
        """The offsets a ``read_committed`` consumer cannot read yet: log end minus LSO."""
        return self.log_end_offset - self.last_stable_offset

    def reported(self, topic: str) -> bool:
        """Whether the transactions report lists the partition: every data partition, and a
        ``__consumer_offsets`` one only with transactions (open, committed or aborted)."""
        t = self.transactions
        return (
            topic not in _TRANSACTIONS_ONLY
            or t.open.num_rows > 0
            or t.aborted.num_rows > 0
            or t.committed > 0
        )

    def table(self, topic: str) -> pa.Table:
        """The partition of ``topic`` as one :data:`SUMMARY_SCHEMA` row."""
        return pa.Table.from_pylist(
            [
                {
                    "logEndOffset": self.log_end_offset,
                    "lastStableOffset": self.last_stable_offset,
                    "gap": self.gap,
                    "committed": self.transactions.committed,
                    "newestTimestamp": self.newest_timestamp,
                    "whole": self.whole,
                    "reported": self.reported(topic),
                    "openTransactions": self.transactions.open.to_pylist(),
                    "aborted": self.transactions.aborted.to_pylist(),
                }
            ],
            schema=SUMMARY_SCHEMA,
        )


def summarize(at: SegmentsAt) -> PartitionSummary:
    """A partition's replica at a cut (:func:`codegen.dumps.views.log_ends.segments_at`) summed up:
    its log end (:func:`codegen.dumps.views.log_ends.log_end_steps`) and transactions."""
    steps = log_end_steps(at)
    return PartitionSummary(
        0 if steps is None else int(steps.ends[-1]),
        partition_transactions(at.batches),
        newest_batch_time(at.batches),
        at.whole,
    )


PENDING_SCHEMA: Final = pa.schema(
    [
        pa.field("producerId", pa.int64()),
        pa.field("firstOffset", pa.int64()),
        pa.field("group", pa.string()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
    ]
)
"""An offset commit an open transaction of ``__consumer_offsets`` holds (the transaction by
its producer and first offset)."""


def pending_commits(open_txns: pa.Table, commits: pa.Table) -> pa.Table:
    """The offset commits the open transactions of a ``__consumer_offsets`` partition hold
    (:data:`PENDING_SCHEMA`, in log order): the transactional commits of each one's producer
    from its first offset to its last. ``commits``: the partition's rows of
    :data:`codegen.dumps.views.commit_rows.COMMIT_ROW_SCHEMA`. Until the transaction ends, a
    consumer of the group asking for stable offsets gets ``UNSTABLE_OFFSET_COMMIT`` for the
    partition."""
    spans = {
        pid: (first, last)
        for pid, first, last in zip(
            open_txns.column("producerId").to_pylist(),
            open_txns.column("firstOffset").to_pylist(),
            open_txns.column("lastOffset").to_pylist(),
            strict=True,
        )
    }
    candidates = commits.filter(
        pa.array(
            np.asarray(commits.column("isTransactional").fill_null(False).to_numpy(), np.bool_)
            & (np.asarray(commits.column("marker").fill_null(NO_MARKER).to_numpy()) == NO_MARKER)
            & ~np.asarray(commits.column("isTombstone").fill_null(False).to_numpy(), np.bool_)
            & np.isin(
                np.asarray(commits.column("producerId").fill_null(-1).to_numpy(), np.int64),
                np.fromiter(spans, np.int64, len(spans)),
            )
        )
    ).sort_by("recordOffset")
    rows = []
    for r in candidates.select(
        ["producerId", "recordOffset", "group", "topic", "partition", "offset"]
    ).to_pylist():
        first, last = spans[r["producerId"]]
        if first <= r["recordOffset"] <= last:
            rows.append({**r, "firstOffset": first})
    return pa.Table.from_pylist(rows, schema=PENDING_SCHEMA)


PENDING_GROUPS_SCHEMA: Final = pa.schema(
    [
        pa.field("producerId", pa.int64()),
        pa.field("firstOffset", pa.int64()),
        pa.field("pendingGroups", pa.list_(pa.string())),
    ]
)
"""An open transaction of ``__consumer_offsets`` and the groups whose offsets it keeps
pending."""


def pending_groups(open_txns: pa.Table, pending: pa.Table) -> pa.Table:
    """The groups each open transaction of a ``__consumer_offsets`` partition keeps pending
    (:data:`PENDING_GROUPS_SCHEMA`, one row per transaction of ``open_txns``, in its order;
    names sorted, each once; none when it holds no commit): those of its commits in
    ``pending`` (:func:`pending_commits`)."""
    groups: dict[tuple[int, int], set[str]] = {
        (pid, first): set()
        for pid, first in zip(
            open_txns.column("producerId").to_pylist(),
            open_txns.column("firstOffset").to_pylist(),
            strict=True,
        )
    }
    for pid, first, group in zip(
        pending.column("producerId").to_pylist(),
        pending.column("firstOffset").to_pylist(),
        pending.column("group").to_pylist(),
        strict=True,
    ):
        groups[(pid, first)].add(group)
    return pa.table(
        {
            "producerId": [k[0] for k in groups],
            "firstOffset": [k[1] for k in groups],
            "pendingGroups": [sorted(g) for g in groups.values()],
        },
        schema=PENDING_GROUPS_SCHEMA,
    )


OWNED_SCHEMA: Final = pa.schema(
    [
        pa.field("transactionalId", pa.string()),
        pa.field("coordinatorPartition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.int64()),
        pa.field("producerId", pa.int64()),
    ]
)
"""A ``__transaction_state`` value record naming a producer id: its id, where it is, its time
(``transactionLastUpdateTimestampMs``)."""
OWNER_SCHEMA: Final = pa.schema(
    [pa.field("producerId", pa.int64()), pa.field("transactionalId", pa.string())]
)


def producer_owners(records: pa.Table) -> pa.Table:
    """The transactional id each producer id belongs to (:data:`OWNER_SCHEMA`, by producer id),
    from the records that name it (:data:`OWNED_SCHEMA` columns): the id of the newest one,
    by its time, then its coordinator partition and offset. The coordinator hands a producer
    id out once, so two ids name it only when one moved on; offsets of different coordinator
    partitions do not compare, times do."""
    named = records.select(OWNED_SCHEMA.names).cast(OWNED_SCHEMA)
    named = named.filter(named.column("producerId").is_valid())
    if not named.num_rows:
        return OWNER_SCHEMA.empty_table()
    ordered = named.sort_by(
        [
            ("producerId", "ascending"),
            ("timestamp", "ascending"),
            ("coordinatorPartition", "ascending"),
            ("offset", "ascending"),
        ]
    )
    pid = np.asarray(ordered.column("producerId").to_numpy(), np.int64)
    newest = np.flatnonzero(np.append(pid[1:] != pid[:-1], True))
    return pa.table(
        {
            "producerId": ordered.column("producerId").take(newest),
            "transactionalId": ordered.column("transactionalId").take(newest),
        },
        schema=OWNER_SCHEMA,
    )


def abort_command(topic: str, partition: int, start_offset: int) -> str:
    """The live command (KIP-664) that writes the ABORT marker ending a hanging transaction."""
    return (
        "kafka-transactions.sh --bootstrap-server HOST:PORT abort "
        f"--topic {topic} --partition {partition} --start-offset {start_offset}"
    )


@dataclass(frozen=True, slots=True)
class Judgement:
    """What :func:`judge` says of one open transaction."""

    hanging: bool
    """By the rule asked for."""
    find_hanging: bool
    """Whether ``kafka-transactions.sh find-hanging`` lists it (its abort command is given)."""
    reason: str
    """Why it hangs ("" when it does not)."""
    outlook: str
    """What comes next for it: who ends it and when."""
    timeout_ms: int
    """Its transactional id's timeout, else the maximum transaction timeout."""
    times_out_at: int | None
    """When the coordinator aborts it (a listed, ongoing one), or when ``find-hanging`` starts
    listing it (one the coordinator does not list); None when neither applies."""


def judge(
    topic: str,
    partition: int,
    producer_id: int,
    first_timestamp: int,
    last_timestamp: int,
    now: int,
    transactional_id: str | None,
    *,
    latest_state: str | None,
    latest_producer_id: int | None,
    latest_timeout_ms: int | None,
    latest_start_timestamp: int | None,
    latest_partitions: Collection[tuple[str, int]],
    have_coordinator: bool,
    max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS,
    rule: str = FIND_HANGING,
) -> Judgement:
    """One open transaction judged at ``now`` (see the module doc). ``transactional_id``: the
    coordinator's id whose records name this producer id (None: none does); ``latest_*``: that
    id's latest record (``latest_state`` None: the id was deleted)."""
    if rule not in RULES:
        raise ValueError(f"hanging rule {rule!r}: use one of {', '.join(RULES)}")
    idle = now - last_timestamp
    age = now - first_timestamp
    stale = idle > max_timeout_ms
    unlisted = _unlisted(
        topic,
        partition,
        producer_id,
        transactional_id,
        latest_state,
        latest_producer_id,
        latest_partitions,
        have_coordinator,
    )
    timeout = max_timeout_ms
    if latest_state is not None and latest_timeout_ms:
        timeout = latest_timeout_ms
    listed = have_coordinator and not unlisted
    find_hanging = stale and not listed
    stale_text = (
        f"its producer's last write was {idle} ms ago, longer than the maximum transaction "
        f"timeout of {max_timeout_ms} ms"
    )
    reasons: list[str] = []
    if find_hanging:
        reasons += [*unlisted, stale_text]
        if not have_coordinator:
            reasons.append("(no __transaction_state in the input: judged by its age only)")
    elif rule == LOOSE and (unlisted or age > timeout):
        reasons += unlisted
        if age > timeout:
            reasons.append(f"open {age} ms, longer than its timeout of {timeout} ms")
        reasons.append(
            "(the loose rule: kafka-transactions find-hanging does not list it, so no abort "
            "command is given)"
        )
    outlook, times_out_at = _outlook(
        listed, latest_state, latest_start_timestamp, timeout, last_timestamp, max_timeout_ms
    )
    return Judgement(
        bool(reasons), find_hanging, "; ".join(reasons), outlook, timeout, times_out_at
    )


def _unlisted(
    topic: str,
    partition: int,
    producer_id: int,
    transactional_id: str | None,
    latest_state: str | None,
    latest_producer_id: int | None,
    latest_partitions: Collection[tuple[str, int]],
    have_coordinator: bool,
) -> list[str]:
    """Why the coordinator does not list the transaction ([] when it does, or is not known)."""
    if not have_coordinator:
        return []
    if transactional_id is None:
        return [f"no transactional id of the coordinator has producer id {producer_id}"]
    if latest_state is None:
        return [f"the coordinator deleted transactional id {transactional_id!r}"]
    if latest_producer_id != producer_id:
        return [
            f"{transactional_id!r} now has producer id {latest_producer_id} (this transaction's "
            f"producer {producer_id} was replaced)"
        ]
    if (topic, partition) not in latest_partitions:
        return [
            f"the coordinator's state of {transactional_id!r} is {latest_state}, which does not "
            f"list {topic}-{partition}"
        ]
    return []


def _outlook(
    listed: bool,
    state: str | None,
    start: int | None,
    timeout: int,
    last_timestamp: int,
    max_timeout_ms: int,
) -> tuple[str, int | None]:
    if listed and state == _ONGOING and start is not None and start >= 0:
        return (
            f"the coordinator lists it (Ongoing since {_iso(start)}, timeout {timeout} ms): it "
            f"aborts it at {_iso(start + timeout)} unless the producer ends it first",
            start + timeout,
        )
    if listed and state in _MARKERS_PENDING:
        return (f"the coordinator lists it ({state}): it is writing the markers that end it", None)
    if listed:
        return (f"the coordinator lists it ({state})", None)
    at = last_timestamp + max_timeout_ms
    return (
        f"unless its markers come, kafka-transactions find-hanging lists it from {_iso(at)} "
        f"(its producer's last write plus the maximum transaction timeout, {max_timeout_ms} ms)",
        at,
    )


def _iso(ms: int) -> str:
    """Epoch milliseconds as an ISO-8601 UTC time (as the commands print times); the number
    where no time is (before 1970, past what a datetime holds)."""
    return utc_text(ms, none=f"{ms} (epoch ms)")


TO_JUDGE_SCHEMA: Final = pa.schema(
    [
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("producerId", pa.int64()),
        pa.field("firstOffset", pa.int64()),
        pa.field("firstTimestamp", pa.int64()),
        pa.field("lastTimestamp", pa.int64()),
        pa.field("transactionalId", pa.string()),
        pa.field("state", pa.string()),
        pa.field("coordinatorProducerId", pa.int64()),
        pa.field("coordinatorTimeoutMs", pa.int32()),
        pa.field("coordinatorStartTimestamp", pa.int64()),
        pa.field("partitions", pa.list_(pa.string())),
    ]
)
"""The columns :func:`judge_open` reads: an open transaction, and its transactional id's
latest record (null where none; ``state`` null for a deleted id; ``partitions`` as
``topic-partition`` strings)."""
JUDGED_SCHEMA: Final = pa.schema(
    [
        pa.field("ageMs", pa.int64()),
        pa.field("idleMs", pa.int64()),
        pa.field("timeoutMs", pa.int64()),
        pa.field("hanging", pa.bool_()),
        pa.field("findHanging", pa.bool_()),
        pa.field("reason", pa.string()),
        pa.field("outlook", pa.string()),
        pa.field("timesOutAt", pa.int64()),
        pa.field("abortCommand", pa.string()),
    ]
)
"""The columns :func:`judge_open` adds (``abortCommand`` null unless ``find-hanging`` lists
the transaction)."""


def _listed(partitions: list[str] | None) -> set[tuple[str, int]]:
    out: set[tuple[str, int]] = set()
    for text in partitions or []:
        topic, _, number = text.rpartition("-")
        out.add((topic, int(number)))
    return out


def judge_open(
    rows: pa.Table | pa.RecordBatch,
    now: int,
    *,
    have_coordinator: bool,
    max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS,
    rule: str = FIND_HANGING,
) -> pa.Table:
    """Open transactions (:data:`TO_JUDGE_SCHEMA` columns, and any others, kept) with the
    columns of :data:`JUDGED_SCHEMA`: :func:`judge` of each at ``now``."""
    table = rows if isinstance(rows, pa.Table) else pa.Table.from_batches([rows])
    out: dict[str, list[Any]] = {name: [] for name in JUDGED_SCHEMA.names}
    for r in table.select(TO_JUDGE_SCHEMA.names).to_pylist():
        j = judge(
            r["topic"],
            r["partition"],
            r["producerId"],
            r["firstTimestamp"],
            r["lastTimestamp"],
            now,
            r["transactionalId"],
            latest_state=r["state"],
            latest_producer_id=r["coordinatorProducerId"],
            latest_timeout_ms=r["coordinatorTimeoutMs"],
            latest_start_timestamp=r["coordinatorStartTimestamp"],
            latest_partitions=_listed(r["partitions"]),
            have_coordinator=have_coordinator,
            max_timeout_ms=max_timeout_ms,
            rule=rule,
        )
        values = (
            max(now - r["firstTimestamp"], 0),
            max(now - r["lastTimestamp"], 0),
            j.timeout_ms,
            j.hanging,
            j.find_hanging,
            j.reason,
            j.outlook,
            j.times_out_at,
            abort_command(r["topic"], r["partition"], r["firstOffset"]) if j.find_hanging else None,
        )
        for values_of, value in zip(out.values(), values, strict=True):
            values_of.append(value)
    for name, values_of in out.items():
        table = table.append_column(
            JUDGED_SCHEMA.field(name), pa.array(values_of, JUDGED_SCHEMA.field(name).type)
        )
    return table
