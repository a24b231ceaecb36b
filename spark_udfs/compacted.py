"""Compacted views of ``__consumer_offsets`` as distributed DataFrame operations.

The same semantics as ``codegen.dumps.compacted`` (the pure-Python core), without collecting
anything to the driver:

- a record of a transactional batch counts only when its producer's next end-transaction marker
  in the same partition is a COMMIT, and it takes effect at the marker's offset; records of
  aborted or still open transactions are dropped (a window over (topic, partition, producer id));
- the last record per key in that order wins, and a tombstone deletes the key (``max_by``).

Input: the output of :func:`spark_udfs.functions.decode_consumer_offsets` over rows of the
``kafka-log`` source (it needs ``topic, partition, offset, producerId, isTransactional,
isControl`` and the control key in ``key``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["committed_offset_columns", "committed_offsets", "effective_records", "group_states"]


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


def _latest(df: DataFrame, keys: dict[str, Column], payload: Column) -> DataFrame:
    """Per key, the payload of the last record in apply order (null payload = deleted)."""
    from pyspark.sql import functions as F

    order = F.struct("applyOffset", "offset")
    return (
        df.select(
            *(c.alias(n) for n, c in keys.items()), order.alias("_order"), payload.alias("_p")
        )
        .groupBy(*keys)
        .agg(F.max_by("_p", "_order").alias("_p"))
    )


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
    """
    from pyspark.sql import functions as F

    rec = effective_records(decoded).filter(
        F.col("recordName").isin("OffsetCommit", "LegacyOffsetCommit")
    )
    keys, value = committed_offset_columns()
    latest = _latest(rec, keys, value)
    return (
        latest.filter(F.col("_p").isNotNull())
        .select("group", "topic", "partition", "_p.*")
        .orderBy("group", "topic", "partition")
    )


def group_states(decoded: DataFrame) -> DataFrame:
    """Per group: ``group, type, state, protocolType, protocol, leader, generation, epoch,
    members`` (how many), the classic and consumer groups of the compacted view of the command
    line (:meth:`codegen.dumps.compacted.CompactedView.group_rows`, replayed per partition on
    the executors by :mod:`spark_udfs.group_views`), by group id.

    States as that view derives them: no members is ``Empty``; a consumer group is
    ``Reconciling`` while a member's epoch is behind the group epoch; otherwise ``Stable``. A
    group that only committed offsets (a consumer that assigns its partitions itself) is a
    classic group in state ``Empty``, as the broker lists it. Share and streams groups are not
    listed.
    """
    from spark_udfs.group_views import COMPACTED_GROUPS_SCHEMA, compacted_groups, replayed

    return replayed(decoded, compacted_groups, COMPACTED_GROUPS_SCHEMA).orderBy("group")
