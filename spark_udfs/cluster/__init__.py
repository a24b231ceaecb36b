"""A small, believable Kafka 4.4 cluster's disks, synthesized (``make demo``): one broker's log
folder after about an hour of a web shop's traffic, written as a broker writes it.

What it holds (:func:`write_cluster`):

- data topics (orders, payments, shipments, inventory, clickstream, audit-log) with their
  segments, indexes, producer snapshots and aborted-transaction indexes, written by idempotent
  producers (compressed batches) and, for payments, by a transactional one;
- ``__consumer_offsets`` (``partitions`` partitions, exactly ``records`` records): the groups'
  rebalances and commits (:mod:`spark_udfs.cluster.groups`), payment-service's commits inside
  its transactions;
- ``__transaction_state``: payment-service's transactions (transaction version 2), and a
  reconciliation job's transaction that its coordinator aborted on timeout but whose ABORT
  marker never reached payments-1: a hanging transaction;
- ``__cluster_metadata``: the controller's log (bootstrap, registrations, the topics and their
  configs, a group config, producer id blocks, a no-op every half second) and its bootstrap
  snapshot; ``meta.properties`` and the offset checkpoints.

The story, each part there for a forensics command to find: groups that keep up, a consumer
group whose epochs move forward, one that falls behind and recovers (``analytics-etl``), one
stalled behind the hanging transaction (``fraud-detector``), a rebalance storm
(``recommendations``), a rewind (``search-indexer``), a consumer that stopped
(``email-notifier``), a classic group moved to the consumer protocol (``inventory-sync``), a
deleted group; and a cluster whose metadata version, features and group config keep it from
going back to 3.9. :attr:`ClusterStats.story` names each.
"""

from __future__ import annotations

import heapq
import random
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from codegen.dumps.log_dir_writer import LogDir, PartitionLog
from codegen.dumps.model import ControlType
from spark_udfs.cluster.data import CLICKSTREAM_SEGMENT, START, TOPICS, write_data_topics
from spark_udfs.cluster.groups import (
    MINUTE,
    SECOND,
    Batch,
    GroupSim,
    Story,
    background_commits,
    background_groups,
    background_records,
    fraud_detector,
    story_groups,
)
from spark_udfs.cluster.metadata import BROKER_EPOCH, NODE_ID, write_metadata_log
from spark_udfs.cluster.records import coordinator_partition
from spark_udfs.cluster.transactions import (
    CONSUMER_OFFSETS,
    payment_service,
    plan_transactions,
    transaction_state,
    write_payments,
)

__all__ = ["START", "TOPICS", "ClusterStats", "write_cluster"]

TRANSACTION_STATE: Final = "__transaction_state"
TRANSACTION_STATE_PARTITIONS: Final = 2
OFFSETS_SEGMENT_BYTES: Final = 100 * 1024 * 1024
BACKGROUND_INTERVAL_MIN: Final = 1000
CONFIGS: Final = {
    CONSUMER_OFFSETS: {
        "compression.type": "producer",
        "cleanup.policy": "compact",
        "segment.bytes": str(OFFSETS_SEGMENT_BYTES),
    },
    TRANSACTION_STATE: {
        "compression.type": "uncompressed",
        "cleanup.policy": "compact",
        "min.insync.replicas": "1",
        "segment.bytes": str(OFFSETS_SEGMENT_BYTES),
        "unclean.leader.election.enable": "false",
    },
    "clickstream": {"segment.bytes": str(CLICKSTREAM_SEGMENT), "retention.ms": "86400000"},
    "audit-log": {"retention.ms": "-1"},
}
"""The topics' dynamic configs, as created."""


@dataclass(slots=True)
class ClusterStats:
    """What :func:`write_cluster` wrote."""

    folder: Path
    files: list[Path] = field(default_factory=list)
    """The ``__consumer_offsets`` segments."""
    records: int = 0
    records_asked: int = 0
    batches: int = 0
    tombstones: int = 0
    transactions: int = 0
    aborted: int = 0
    data_records: int = 0
    start: int = START
    end: int = START
    groups: list[str] = field(default_factory=list)
    story: dict[str, str] = field(default_factory=dict)
    """Group or part of the story -> what it shows."""
    lag_page: list[str] = field(default_factory=list)
    """The groups whose lag tells the story (the demo's lag page)."""


def _uuid(rnd: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rnd.getrandbits(128), version=4)


def _duration(records: int, groups: int) -> int:
    """The hour's length: the records asked at the story's pace (about 25 a second) and the
    background groups' (a commit of 12 partitions a second each), from 25 minutes (the
    hanging transaction must be open longer than a broker's transaction.max.timeout.ms at the
    end, or kafka-transactions find-hanging would not list it) to 6 hours."""
    duration = int(records / (25 + 12 * max(groups, 1)) * 1000)
    return min(max(duration, 25 * MINUTE), 6 * 60 * MINUTE)


def _background_interval(
    background: list[GroupSim], start: int, end: int, wanted: int, records: int
) -> tuple[int, int]:
    """The background groups' commit interval whose commits cover ``wanted`` records with the
    fewest to spare, and how many they spare (left out at the start)."""
    if not background:
        if wanted:
            raise ValueError(f"--records {records:,}: give --groups, to write {wanted:,} more")
        return BACKGROUND_INTERVAL_MIN, 0
    interval = BACKGROUND_INTERVAL_MIN
    while background_records(background, start, end, interval) < wanted and interval > 1:
        interval = max(1, interval * 9 // 10)
    longest = end - start  # one commit each at most: what is more is spared
    while (
        interval * 11 // 10 <= longest
        and background_records(background, start, end, interval * 11 // 10) >= wanted
    ):
        interval = interval * 11 // 10
    available = background_records(background, start, end, interval)
    if available < wanted:
        raise ValueError(
            f"--records {records:,}: the background groups cannot write {wanted:,} records; "
            "give more --groups"
        )
    return interval, available - wanted


def write_cluster(
    out: Path,
    records: int = 1_000_000,
    partitions: int = 4,
    groups: int = 20,
    seed: int = 42,
    progress: Callable[[int], None] | None = None,
) -> ClusterStats:
    """Write the cluster's log folder to ``out``: ``__consumer_offsets`` holds exactly
    ``records`` records over ``partitions`` partitions, ``groups`` groups reading clickstream
    among its groups beside the story's; ``progress(written)`` is called at every tenth of
    the records and at the end. Raises ValueError when ``records`` cannot hold the story."""
    rnd = random.Random(seed)
    topic_ids = {spec.name: _uuid(rnd) for spec in TOPICS}
    topic_ids[CONSUMER_OFFSETS] = _uuid(rnd)
    topic_ids[TRANSACTION_STATE] = _uuid(rnd)
    counts = {spec.name: spec.partitions for spec in TOPICS}
    counts[CONSUMER_OFFSETS] = partitions
    counts[TRANSACTION_STATE] = TRANSACTION_STATE_PARTITIONS
    end = START + _duration(records, groups)
    story = Story(rnd, START, end, partitions, {}, topic_ids, counts)
    cluster_id, directory_id = _uuid(rnd), _uuid(rnd)
    log_dir = LogDir(out, node_id=NODE_ID, cluster_id=cluster_id, directory_id=directory_id)
    stats = ClusterStats(out, start=START, end=end, records_asked=records)

    # The data topics first: the consumers' positions follow their log ends.
    stats.data_records, pid_of = write_data_topics(log_dir, story, rnd, first_pid=0)
    txns, txn_pids = plan_transactions(rnd, START, end, len(pid_of), story)
    write_payments(log_dir, topic_ids["payments"], txns, rnd, story)
    stats.transactions = sum(1 for t in txns if not t.hanging)
    stats.aborted = sum(1 for t in txns if not t.committed and not t.hanging)

    # The groups: the story's, payment-service's transactional commits, the background.
    stats.story = story_groups(story)
    fraud_detector(story)
    stats.story["fraud-detector"] = (
        "read_committed on payments, stalled behind the hanging transaction on payments-1"
    )
    payment_service(story, txns)
    stats.story["payment-service"] = "commits its offsets inside its transactions (exactly once)"
    stats.story["payment-reconciler"] = (
        "a transaction its coordinator aborted on timeout whose ABORT marker never reached "
        "payments-1: it hangs"
    )
    stats.lag_page = ["analytics-etl", "fraud-detector", "search-indexer", "email-notifier"]
    background = background_groups(story, groups)
    stats.groups = sorted({*stats.story, *(g.name for g in background)} - {"payment-reconciler"})
    wanted = records - sum(b.size for b in story.batches)
    if wanted < 0:
        least = records - wanted  # the story's own records
        raise ValueError(f"--records {records:,} cannot hold the story: give at least {least:,}")
    bg_start = START + 30 * SECOND
    interval, spare = _background_interval(background, bg_start, end, wanted, records)
    story.batches.sort(key=lambda b: b.time)
    background_stream = background_commits(background, bg_start, end, interval, spare)
    stream = heapq.merge(iter(story.batches), background_stream, key=lambda b: b.time)
    offsets = _write_consumer_offsets(log_dir, story, stream, stats, progress)
    if stats.records != records:
        raise AssertionError(f"{stats.records:,} records written, not {records:,}")

    txn_logs = [
        log_dir.partition(TRANSACTION_STATE, p, topic_ids[TRANSACTION_STATE])
        for p in range(TRANSACTION_STATE_PARTITIONS)
    ]
    group_partition = coordinator_partition("payment-service", partitions)
    for when, tid, record in sorted(transaction_state(txns, group_partition), key=lambda x: x[0]):
        txn_logs[coordinator_partition(tid, TRANSACTION_STATE_PARTITIONS)].write_batch(
            [record], timestamp=when
        )
    producers = len(pid_of) + len(txn_pids)
    blocks = [1000 * n for n in range(producers // 1000 + 1)]  # ids handed out a block at a time
    order = [CONSUMER_OFFSETS, *(s.name for s in TOPICS), TRANSACTION_STATE]
    write_metadata_log(
        log_dir, topic_ids, {t: counts[t] for t in order}, CONFIGS, directory_id, START, end, blocks
    )
    log_dir.close(broker_epoch=BROKER_EPOCH, now_ms=end)
    stats.files = [log.folder / f"{base:020d}.log" for log in offsets for base in log.segments]
    return stats


def _write_consumer_offsets(
    log_dir: LogDir,
    story: Story,
    stream: Iterator[Batch],
    stats: ClusterStats,
    progress: Callable[[int], None] | None,
) -> list[PartitionLog]:
    """The batches, in time order, each to its partition of ``__consumer_offsets``."""
    topic_id = story.topic_ids[CONSUMER_OFFSETS]
    offsets = [
        log_dir.partition(CONSUMER_OFFSETS, p, topic_id, segment_bytes=OFFSETS_SEGMENT_BYTES)
        for p in range(story.offsets_partitions)
    ]
    step = max(stats.records_asked // 10, 1)
    next_report = step
    for batch in stream:
        log = offsets[batch.partition]
        if batch.marker is not None:
            control, pid, epoch, coordinator_epoch = batch.marker
            log.write_marker(
                ControlType(control),
                timestamp=batch.time,
                producer_id=pid,
                producer_epoch=epoch,
                coordinator_epoch=coordinator_epoch,
            )
        elif batch.producer is not None:
            pid, epoch, seq = batch.producer
            log.write_batch(
                batch.records,
                timestamp=batch.time,
                producer_id=pid,
                producer_epoch=epoch,
                base_sequence=seq,
                transactional=True,
            )
        else:  # the group coordinator's batches carry base sequence 0 (a 4.4.0 broker's)
            log.write_batch(batch.records, timestamp=batch.time, base_sequence=0)
        stats.records += batch.size
        stats.batches += 1
        stats.tombstones += sum(1 for _, v in batch.records if v is None)
        if progress is not None and stats.records >= next_report:
            progress(stats.records)
            next_report = (stats.records // step + 1) * step
    if progress is not None and stats.records % step:
        progress(stats.records)
    return offsets
