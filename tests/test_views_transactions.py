"""The rules the transactions and lag answers share between the command line and Spark, case by
case: which transactional id owns a producer id, which partitions the report lists and their
gap, and *now* without ``--as-of``."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from codegen.dumps.batch_rows import BATCH_SCHEMA
from codegen.dumps.views.log_ends import EARLIEST
from codegen.dumps.views.transactions import (
    ABORTED_SCHEMA,
    OPEN_SCHEMA,
    OWNED_SCHEMA,
    PartitionSummary,
    PartitionTransactions,
    producer_owners,
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
