"""The rules the transactions and lag answers share between the command line and Spark, case by
case: which transactional id owns a producer id, which partitions the report lists and their
gap, which groups an open transaction keeps pending, and *now* without ``--as-of``."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from codegen.dumps.batch_rows import BATCH_SCHEMA
from codegen.dumps.views.log_ends import EARLIEST, SEGMENT_SCHEMA, segments_at
from codegen.dumps.views.transactions import (
    ABORTED_SCHEMA,
    OPEN_SCHEMA,
    OWNED_SCHEMA,
    PENDING_SCHEMA,
    PartitionSummary,
    PartitionTransactions,
    pending_groups,
    producer_owners,
    summarize,
)
from codegen.forensics.lag import newest_time


def _owners(*rows: tuple[str, int, int, int, int | None]) -> dict[int, str]:
    table = pa.Table.from_pylist(
        [dict(zip(OWNED_SCHEMA.names, r, strict=True)) for r in rows], schema=OWNED_SCHEMA
    )
    out = producer_owners(table)
    pids, names = out.column("producerId").to_pylist(), out.column("transactionalId").to_pylist()
    return dict(zip(pids, names, strict=True))


def test_a_producer_id_belongs_to_the_id_of_its_newest_record() -> None:
    # (transactionalId, coordinatorPartition, offset, timestamp, producerId)
    owners = _owners(
        ("old", 0, 90, 1_000, 7),  # a higher offset, but in another partition and older
        ("new", 1, 3, 2_000, 7),
        ("only", 0, 5, 1_500, 8),
        ("tombstone", 0, 6, 1_600, None),  # names no producer id
    )
    assert owners == {7: "new", 8: "only"}


def test_same_time_falls_back_to_partition_then_offset() -> None:
    assert _owners(("a", 1, 2, 5, 9), ("b", 0, 50, 5, 9)) == {9: "a"}
    assert _owners(("a", 0, 2, 5, 9), ("b", 0, 1, 5, 9)) == {9: "a"}
    assert _owners() == {}


def _summary(open_rows: list[dict[str, Any]], committed: int, aborted: int) -> PartitionSummary:
    aborted_rows = [
        {"producerId": 1, "firstOffset": 0, "lastOffset": 1, "lastStableOffset": 2}
    ] * aborted
    found = PartitionTransactions(
        pa.Table.from_pylist(open_rows, schema=OPEN_SCHEMA),
        pa.Table.from_pylist(aborted_rows, schema=ABORTED_SCHEMA),
        committed,
    )
    return PartitionSummary(10, found, 5, True)


def test_reported_partitions_and_gap() -> None:
    opened = {
        "producerId": 3,
        "producerEpoch": 0,
        "firstOffset": 4,
        "firstTimestamp": 1,
        "lastOffset": 6,
        "lastTimestamp": 2,
    }
    quiet = _summary([], 0, 0)
    assert (quiet.last_stable_offset, quiet.gap) == (10, 0)
    assert quiet.reported("orders") and not quiet.reported("__consumer_offsets")
    busy = _summary([opened], 0, 0)
    assert (busy.last_stable_offset, busy.gap) == (4, 6)
    assert busy.reported("__consumer_offsets")
    assert _summary([], 1, 0).reported("__consumer_offsets")
    assert _summary([], 0, 1).reported("__consumer_offsets")
    row = busy.table("__consumer_offsets").to_pylist()[0]
    assert (row["lastStableOffset"], row["gap"], row["reported"]) == (4, 6, True)
    assert not quiet.table("__consumer_offsets").to_pylist()[0]["reported"]


def _batches(*rows: tuple[int, int | None, str | None]) -> pa.Table:
    empty = dict.fromkeys(BATCH_SCHEMA.names)
    return pa.Table.from_pylist(
        [{**empty, "maxTimestamp": t, "recordCount": n, "_error": e} for t, n, e in rows],
        schema=BATCH_SCHEMA,
    )


def test_newest_time_reads_batches_with_records_and_ends_over_time() -> None:
    batches = _batches((100, 2, None), (900, 0, None), (800, None, "corrupt: crc"), (300, 1, None))
    assert newest_time(batches) == 300
    ends = pa.table({"endTime": [EARLIEST, 250, 400], "history": [False, True, True]})
    assert newest_time(batches, ends) == 400
    assert newest_time(ends=pa.table({"endTime": [EARLIEST], "history": [False]})) == -1
    assert newest_time() == -1
    # parts of a dump: the newest of their times is the whole's
    halves = [newest_time(b) for b in batches.to_batches(max_chunksize=2)]
    assert max(halves) == newest_time(batches)


def test_a_partitions_newest_time_is_its_newest_batch_with_records() -> None:
    """summarize's newestTimestamp (the transactions' *now* of a partition) is the rule of the
    lag's *now*: an empty batch (compaction kept its header) and an unreadable one do not
    count."""
    batches = _batches((100, 2, None), (900, 0, None), (800, None, "corrupt: crc"), (300, 1, None))
    offsets = {
        "baseOffset": [0, 2, None, 3],
        "lastOffset": [1, 2, None, 3],
        "batchPosition": [0, 1, 2, 3],
    }
    for name, values in offsets.items():
        at = batches.schema.get_field_index(name)
        batches = batches.set_column(at, name, pa.array(values, pa.int64()))
    batches = batches.append_column("segment", pa.array([0] * batches.num_rows, pa.int32()))
    segments = pa.Table.from_pylist([dict.fromkeys(SEGMENT_SCHEMA.names, 0)], schema=SEGMENT_SCHEMA)
    assert summarize(segments_at(segments, batches, None)).newest_timestamp == 300
    empty = batches.slice(0, 0)
    assert summarize(segments_at(segments, empty, None)).newest_timestamp == -1


def test_pending_groups_are_each_open_transactions_groups_once_sorted() -> None:
    opened = pa.table(
        {"producerId": [30, 31, 32], "firstOffset": [4, 9, 12], "lastOffset": [8, 11, 15]}
    )
    commit = dict.fromkeys(PENDING_SCHEMA.names)
    pending = pa.Table.from_pylist(
        [{**commit, "producerId": 30, "firstOffset": 4, "group": g} for g in ("g-b", "g-a", "g-b")]
        + [{**commit, "producerId": 31, "firstOffset": 9, "group": "g-c"}],
        schema=PENDING_SCHEMA,
    )
    rows = pending_groups(opened, pending).to_pylist()
    assert rows == [
        {"producerId": 30, "firstOffset": 4, "pendingGroups": ["g-a", "g-b"]},
        {"producerId": 31, "firstOffset": 9, "pendingGroups": ["g-c"]},
        {"producerId": 32, "firstOffset": 12, "pendingGroups": []},  # holds no commit
    ]
    assert pending_groups(opened.slice(0, 0), PENDING_SCHEMA.empty_table()).num_rows == 0
