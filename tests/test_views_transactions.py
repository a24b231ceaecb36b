"""The rules the transactions and lag answers share between the command line and Spark, case by
case: which partitions the report lists and their gap."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from codegen.dumps.views.transactions import (
    ABORTED_SCHEMA,
    OPEN_SCHEMA,
    PartitionSummary,
    PartitionTransactions,
)


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
