"""Compacted views of ``__consumer_offsets`` in Spark, without collecting to the driver.

:func:`committed_offsets` runs the command line's definition (:mod:`codegen.dumps.views.offsets`),
:func:`group_states` the command line's group view (:mod:`spark_udfs.group_views`).
:func:`effective_records` is a DataFrame operation with the semantics of
``codegen.dumps.views.compacted``, every record that took effect (what the records of the Kafka
source are compared with):

- a record of a transactional batch counts only when its producer's next end-transaction marker
  in the same partition is a COMMIT, and it takes effect at the marker's offset; records of
  aborted or still open transactions are dropped (a window over (topic, partition, producer id));
- the last record per key in that order wins, and a tombstone deletes the key (``max_by``).

Input: the output of :func:`spark_udfs.functions.decode_consumer_offsets` over rows of the
``kafka-log`` source (it needs ``topic, partition, offset, producerId, isTransactional,
isControl`` and the control key in ``key``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = [
    "commit_columns",
    "committed_offset_columns",
    "committed_offsets",
    "effective_records",
    "group_states",
]


def effective_records(decoded: DataFrame) -> DataFrame:
    """Data records that take effect, with ``applyOffset`` (their position in apply order)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    data = decoded.filter(~F.col("isControl") & F.col("_error").isNull())
    plain = data.filter(~F.col("isTransactional")).withColumn("applyOffset", F.col("offset"))
    control_type = F.substring(F.col("key"), 3, 2)
    markers = decoded.filter(
        F.col("isControl") & F.col("isTransactional") & (F.length("key") >= 4)
    ).select(
        "topic",
        "partition",
        "producerId",
        "offset",
        F.struct(
            F.col("offset").alias("markerOffset"),
            (control_type == F.lit(b"\x00\x01")).alias("committed"),
        ).alias("marker"),
    )
    txn = data.filter(F.col("isTransactional"))
    both = txn.unionByName(markers, allowMissingColumns=True)
    window = (
        Window.partitionBy("topic", "partition", "producerId")
        .orderBy("offset")
        .rowsBetween(Window.currentRow, Window.unboundedFollowing)
    )
    resolved = both.withColumn("_next", F.first("marker", ignorenulls=True).over(window))
    committed = (
        resolved.filter(F.col("recordType").isNotNull() & F.col("_next.committed"))
        .withColumn("applyOffset", F.col("_next.markerOffset"))
        .drop("_next", "marker")
    )
    return plain.unionByName(committed.select(*plain.columns))


def committed_offset_columns() -> tuple[dict[str, Column], Column]:
    """The key columns (``group, topic, partition``) of an offset commit record and its payload:
    a struct of the :func:`committed_offsets` columns, null for a tombstone."""
    from pyspark.sql import functions as F

    k = F.coalesce(F.col("decodedKey.OffsetCommitKey"), F.col("decodedKey.LegacyOffsetCommitKey"))
    v_new = F.col("decodedValue.OffsetCommitValue")
    v_old = F.col("decodedValue.LegacyOffsetCommitValue")
    value = F.when(F.col("isTombstone"), F.lit(None)).otherwise(
        F.struct(
            F.coalesce(v_new.offset, v_old.offset).alias("offset"),
            F.coalesce(v_new.leaderEpoch, F.lit(-1)).alias("leaderEpoch"),
            F.coalesce(v_new.metadata, v_old.metadata).alias("metadata"),
            F.coalesce(v_new.commitTimestamp, v_old.commitTimestamp).alias("commitTimestamp"),
            F.coalesce(v_new.expireTimestamp, F.lit(-1).cast("long")).alias("expireTimestamp"),
            F.col("offset").alias("recordOffset"),
        )
    )
    return {"group": k.group, "topic": k.topic, "partition": k.partition}, value


def committed_offsets(decoded: DataFrame) -> DataFrame:
    """The committed offset per (group, topic, partition): the compacted offsets view.

    Columns: ``group, topic, partition, offset, leaderEpoch, metadata, commitTimestamp,
    expireTimestamp, recordOffset`` (the log offset the commit came from), sorted by key.

    The definition is the command line's (:mod:`codegen.dumps.views.offsets`): each Spark partition
    keeps the newest plain commit per key (``mapInArrow``), then each log partition's commits
    and transaction markers are resolved (``applyInArrow``).
    """
    from codegen.dumps.views.commit_rows import COMMIT_ROW_SCHEMA, OFFSET_SCHEMA

    narrow = commit_columns(decoded)
    rows = narrow.mapInArrow(_reduce_commits, _ddl(COMMIT_ROW_SCHEMA))
    return (
        rows.groupBy("logTopic", "logPartition")
        .applyInArrow(_latest_offsets, _ddl(OFFSET_SCHEMA))
        .orderBy("group", "topic", "partition")
    )


def commit_columns(decoded: DataFrame) -> DataFrame:
    """The columns of ``decoded`` that :func:`codegen.dumps.views.commit_rows.commit_rows` reads
    (the offset-commit members of the key and value unions only): what travels to the views."""
    from pyspark.sql import functions as F

    names = set(decoded.columns)
    wanted = ["offset", "producerId", "isTransactional", "isControl", "key", "recordName"]
    wanted += ["isTombstone", *(c for c in ("timestamp", "_error", "_decode_error") if c in names)]
    log = [
        F.col(c) if c in names else F.lit(None).cast(t).alias(c)
        for c, t in (("topic", "string"), ("partition", "int"))
    ]
    unions = [
        F.struct(*(F.col(f"{union}.{m}").alias(m) for m in members)).alias(union)
        for union, members in _commit_members(decoded).items()
    ]
    return decoded.select(*log, *wanted, *unions)


def _commit_members(decoded: DataFrame) -> dict[str, list[str]]:
    """The offset-commit members of the decoded key and value unions (what the view reads)."""
    from pyspark.sql.types import StructType

    out: dict[str, list[str]] = {}
    for union, members in (
        ("decodedKey", ("OffsetCommitKey", "LegacyOffsetCommitKey")),
        ("decodedValue", ("OffsetCommitValue", "LegacyOffsetCommitValue")),
    ):
        typ = decoded.schema[union].dataType
        assert isinstance(typ, StructType)
        out[union] = [m for m in members if m in typ.fieldNames()]
    return out


def _ddl(schema: pa.Schema) -> str:
    spark_types = {
        pa.string(): "string",
        pa.int8(): "tinyint",
        pa.int32(): "int",
        pa.int64(): "long",
        pa.bool_(): "boolean",
    }
    return ", ".join(f"`{f.name}` {spark_types[f.type]}" for f in schema)


def _reduce_commits(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    from codegen.dumps.views.commit_rows import commit_rows_by_log
    from codegen.dumps.views.reduction import reduce_plain

    # each log partition's slice in log order (as the kafka-log source reads a file) loses its
    # superseded commits before they become commit rows, as on the command line
    left = commit_rows_by_log([pa.Table.from_batches([rb]) for rb in batches])
    chunks = [rows for rows in left if rows.num_rows]
    if chunks:
        yield from reduce_plain(pa.concat_tables(chunks)).to_batches()


def _latest_offsets(rows: pa.Table) -> pa.Table:
    from codegen.dumps.views.offsets import latest

    return latest(rows)


def group_states(decoded: DataFrame) -> DataFrame:
    """Per group: ``group, type, state, protocolType, protocol, leader, generation, epoch,
    members`` (how many), the classic and consumer groups of the compacted view of the command
    line (:meth:`codegen.dumps.views.compacted.CompactedView.group_rows`, replayed per partition on
    the executors by :mod:`spark_udfs.group_views`), by group id.

    States as that view derives them: no members is ``Empty``; a consumer group is
    ``Reconciling`` while a member's epoch is behind the group epoch; otherwise ``Stable``. A
    group that only committed offsets (a consumer that assigns its partitions itself) is a
    classic group in state ``Empty``, as the broker lists it. Share and streams groups are not
    listed.
    """
    from spark_udfs.group_views import COMPACTED_GROUPS_SCHEMA, compacted_groups, replayed

    return replayed(decoded, compacted_groups, COMPACTED_GROUPS_SCHEMA).orderBy("group")
