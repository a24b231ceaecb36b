"""Downgrade findings in Spark: per ``__consumer_offsets`` partition, what a release's group
coordinator makes of it (every record its loader reads, the live records it would lose or
skip), by :func:`codegen.forensics.partition_findings.partition_findings`, in
``applyInArrow``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from codegen.forensics.coordinator_partitions import (
    LiveRecord,
    LiveRecords,
    scan_partition,
)
from codegen.forensics.partition_findings import partition_findings
from codegen.forensics.releases import release
from spark_udfs.forensics.inputs import arrow_schema

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame


__all__ = [
    "downgrade_findings",
    "live_records",
]


_LIVE_DDL: Final = (
    "partition int, offset long, recordType int, name string, valueVersion int, group string"
)
_FINDINGS_DDL: Final = (
    "rule string, partition int, offset long, recordType int, name string, "
    "valueVersion int, group string, reason string"
)
_LIVE_COLUMNS: Final = (
    "topic",
    "partition",
    "offset",
    "timestamp",
    "producerId",
    "isTransactional",
    "isControl",
    "key",
    "value",
    "_error",
)
"""The ``kafka-log`` columns :func:`codegen.dumps.views.live.live_rows` reads: only the raw bytes
travel, the few live records are decoded on the executors."""


def _scan_of(rows: pa.Table, partition: int) -> LiveRecords:
    """One ``__consumer_offsets`` partition's rows read as ``downgrade-check`` reads its files
    (:func:`codegen.forensics.coordinator_partitions.scan_partition`): its live records, and
    every record by kind."""
    import pyarrow as pa

    from codegen.dumps.coordinator import CONSUMER_OFFSETS, coordinator_decoder

    stamp = rows.column("timestamp").cast(pa.timestamp("us", tz="UTC"))
    rows = rows.set_column(rows.schema.get_field_index("timestamp"), "timestamp", stamp)
    ordered = rows.sort_by("offset")
    return scan_partition(
        CONSUMER_OFFSETS, partition, ordered.to_batches, coordinator_decoder(CONSUMER_OFFSETS)
    )


def _live_of(rows: pa.Table, partition: int) -> list[LiveRecord]:
    """The live records of one ``__consumer_offsets`` partition's rows, by offset."""
    return sorted(_scan_of(rows, partition).live.values(), key=lambda r: r.offset)


def _live_records_of(key: tuple[pa.Scalar, ...], rows: pa.Table) -> pa.Table:
    import pyarrow as pa

    live = [
        {
            "partition": r.partition,
            "offset": r.offset,
            "recordType": r.record_type,
            "name": r.name,
            "valueVersion": r.value_version,
            "group": r.group,
        }
        for r in _live_of(rows, int(key[1].as_py()))
    ]
    return pa.Table.from_pylist(live, schema=arrow_schema(_LIVE_DDL))


def live_records(decoded: DataFrame) -> DataFrame:
    """Records live after compaction: ``partition, offset, recordType, name, valueVersion,
    group`` (the last record per key in apply order, tombstones removed), as
    :func:`codegen.forensics.coordinator_partitions.live_records` gives them."""
    rows = decoded.select(*_LIVE_COLUMNS).groupBy("topic", "partition")
    return rows.applyInArrow(_live_records_of, _LIVE_DDL)


def _findings_of(to: str) -> Callable[[tuple[pa.Scalar, ...], pa.Table], pa.Table]:
    def answer(key: tuple[pa.Scalar, ...], rows: pa.Table) -> pa.Table:
        import pyarrow as pa

        target = release(to)
        found = [
            {
                "rule": b.rule,
                "partition": b.partition,
                "offset": b.offset,
                "recordType": b.record_type,
                "name": b.name,
                "valueVersion": b.value_version,
                "group": b.group,
                "reason": b.reason,
            }
            for b in partition_findings(
                _scan_of(rows, int(key[1].as_py())), target, target.group_loader
            )
        ]
        return pa.Table.from_pylist(found, schema=arrow_schema(_FINDINGS_DDL))

    return answer


def downgrade_findings(decoded: DataFrame, to: str) -> DataFrame:
    """What release ``to``'s default group coordinator makes of each partition (the first
    record it fails on, then the other kinds it cannot read; the live group records it would
    lose; the live records it skips): ``rule, partition, offset, recordType, name,
    valueVersion, group, reason``, as
    :func:`codegen.forensics.downgrade.check_downgrade` finds them (``rule`` ``ignored`` is not
    blocking; the broker's mode unknown), one ``__consumer_offsets`` partition per call.
    Raises :class:`~codegen.forensics.releases.UnknownReleaseError` for an unknown release."""
    release(to)  # an unknown release is an error here, not on the executors
    rows = decoded.select(*_LIVE_COLUMNS).groupBy("topic", "partition")
    return rows.applyInArrow(_findings_of(to), _FINDINGS_DDL)
