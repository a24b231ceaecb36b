"""Transactions from the disk as DataFrame operations: the answers of
:mod:`codegen.forensics.transactions`, row for row (a test compares them).

The input is ``kafka-log`` rows of the data partitions (:func:`read_transactions`). Each
transactional batch is reduced to one row (its producer, epoch, offsets, time, and for a
control batch the marker type); per (topic, partition, producer id) in log order, a batch
belongs to the transaction numbered by the markers before it, and the marker with that number
ends it. So nothing is collected to the driver but the file listing.

- :func:`producer_transactions`: every transaction of a partition (first and last offset, first
  batch time, the marker offset and outcome, null while open).
- :func:`aborted_ranges`: the aborted ones with the last stable offset once their ABORT marker
  was written (Kafka's ``lastStableOffset(completedTxn)``), as the ``.txnindex`` holds them.
- :func:`partition_transactions`: per partition the log end, the LSO the open transactions
  imply, the gap, and the open and committed counts.
- :func:`open_transactions`: the open ones with their age at ``now``, transactional id and
  whether they hang (the coordinator's latest state of the id, from ``__transaction_state``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from codegen.dumps.coordinator import TRANSACTION_STATE
from codegen.dumps.model import ControlType
from codegen.dumps.segments import segment_file_info
from codegen.forensics.groups import AsOf
from codegen.forensics.inputs import InputError, discover
from codegen.forensics.transactions import DEFAULT_MAX_TIMEOUT_MS, ONGOING, STATES, data_partitions
from spark_udfs.session import kafka_log_reader

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "aborted_ranges",
    "coordinator_states",
    "newest_timestamp",
    "open_transactions",
    "partition_transactions",
    "producer_transactions",
    "read_transactions",
]


def read_transactions(
    spark: SparkSession, path: Path | str, as_of: AsOf | None = None
) -> tuple[DataFrame, DataFrame | None, DataFrame]:
    """The data partitions' ``kafka-log`` rows under ``path`` (cut at ``as_of``, whole batches),
    the decoded ``__transaction_state`` records (None without one), and per partition the base
    offset of its last segment (``topic, partition, activeBase``; the log end of an empty
    active segment)."""
    from pyspark.sql import functions as F

    from spark_udfs.forensics import _cut
    from spark_udfs.functions import decode_transaction_state

    if as_of is not None and as_of.offset is not None:
        raise InputError("--as-of takes a time for transactions, not a log offset")
    dirs = discover([path])
    replicas = data_partitions(dirs)
    if not replicas and not dirs.partitions(TRANSACTION_STATE):
        raise InputError(f"{path}: expected __transaction_state-N or data partition folders")
    reader = kafka_log_reader(spark).option("includeHeaders", "false")
    data = _cut(reader.load([str(r.folder) for r in replicas]), as_of)
    files = [
        f for _, fs in dirs.coordinator_segments(TRANSACTION_STATE, TRANSACTION_STATE) for f in fs
    ]
    coordinator = (
        decode_transaction_state(_cut(reader.load([str(f) for f in files]), as_of))
        if files
        else None
    )
    bases = [
        (
            r.topic,
            r.partition,
            0 if as_of is not None else segment_file_info(r.logs()[-1]).base_offset or 0,
        )
        for r in replicas
    ]
    active = spark.createDataFrame(bases, "topic string, partition int, activeBase long")
    return data.withColumn("partition", F.col("partition").cast("int")), coordinator, active


def newest_timestamp(data: DataFrame, coordinator: DataFrame | None) -> int:
    """The report's *now* without ``as_of``: the newest record time read (one number)."""
    from pyspark.sql import functions as F

    frames = [data] + ([coordinator] if coordinator is not None else [])
    found = [f.agg(F.max("timestampMs")).first() for f in frames]
    return max((int(r[0]) for r in found if r is not None and r[0] is not None), default=-1)


def _batches(data: DataFrame) -> DataFrame:
    """One row per transactional batch: producer, epoch, offsets, newest time, marker type
    (the control key's int16 type: 0 ABORT, 1 COMMIT; null for a data batch)."""
    from pyspark.sql import functions as F

    ctype = F.conv(F.hex(F.substring("key", 3, 2)), 16, 10).cast("int")
    return (
        data.filter(F.col("_error").isNull() & F.col("isTransactional"))
        .groupBy("topic", "partition", "file", "batchPosition", "producerId")
        .agg(
            F.first("producerEpoch").alias("producerEpoch"),
            F.first("isControl").alias("isControl"),
            F.min("offset").alias("firstOffset"),
            F.max("offset").alias("lastOffset"),
            F.max("timestampMs").alias("timestampMs"),
            F.first(F.when(F.col("isControl"), ctype)).alias("marker"),
        )
    )


def producer_transactions(data: DataFrame) -> DataFrame:
    """Per transaction of a partition: ``topic, partition, producerId, producerEpoch,
    firstOffset, lastOffset, firstTimestamp, endOffset, outcome`` (``committed`` or
    ``aborted``; ``endOffset`` and ``outcome`` null while open)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    b = _batches(data).filter(
        ~F.col("isControl") | F.col("marker").isin(int(ControlType.ABORT), int(ControlType.COMMIT))
    )
    order = Window.partitionBy("topic", "partition", "producerId").orderBy("file", "batchPosition")
    b = b.withColumn(
        "_n",
        F.coalesce(
            F.sum(F.col("isControl").cast("int")).over(
                order.rowsBetween(Window.unboundedPreceding, -1)
            ),
            F.lit(0),
        ),
    )
    keys = ["topic", "partition", "producerId", "_n"]
    txns = (
        b.filter(~F.col("isControl"))
        .groupBy(*keys)
        .agg(
            F.min_by("producerEpoch", "firstOffset").alias("producerEpoch"),
            F.min("firstOffset").alias("firstOffset"),
            F.max("lastOffset").alias("lastOffset"),
            F.min_by("timestampMs", "firstOffset").alias("firstTimestamp"),
        )
    )
    markers = b.filter(F.col("isControl")).select(
        *keys,
        F.col("firstOffset").alias("endOffset"),
        F.when(F.col("marker") == int(ControlType.COMMIT), "committed")
        .otherwise("aborted")
        .alias("outcome"),
    )
    return txns.join(markers, keys, "left").drop("_n")


def aborted_ranges(data: DataFrame) -> DataFrame:
    """``topic, partition, producerId, firstOffset, lastOffset, lastStableOffset`` per aborted
    transaction (``lastOffset``: its ABORT marker)."""
    from pyspark.sql import functions as F

    txns = producer_transactions(data)
    aborted = txns.filter(F.col("outcome") == "aborted").alias("a")
    others = txns.alias("o")
    # other producers' transactions open when the marker was written
    during = aborted.join(
        others,
        (F.col("a.topic") == F.col("o.topic"))
        & (F.col("a.partition") == F.col("o.partition"))
        & (F.col("a.producerId") != F.col("o.producerId"))
        & (F.col("o.firstOffset") < F.col("a.endOffset"))
        & (F.col("o.endOffset").isNull() | (F.col("o.endOffset") > F.col("a.endOffset"))),
        "left",
    )
    return (
        during.groupBy(
            F.col("a.topic").alias("topic"),
            F.col("a.partition").alias("partition"),
            F.col("a.producerId").alias("producerId"),
            F.col("a.firstOffset").alias("firstOffset"),
            F.col("a.endOffset").alias("lastOffset"),
        )
        .agg(F.min("o.firstOffset").alias("_other"))
        .select(
            "topic",
            "partition",
            "producerId",
            "firstOffset",
            "lastOffset",
            F.coalesce("_other", F.col("lastOffset") + 1).alias("lastStableOffset"),
        )
    )


def partition_transactions(data: DataFrame, active: DataFrame) -> DataFrame:
    """``topic, partition, logEndOffset, lastStableOffset, gap, open, committed`` per data
    partition."""
    from pyspark.sql import functions as F

    ends = (
        data.filter(F.col("_error").isNull())
        .groupBy("topic", "partition")
        .agg((F.max("offset") + 1).alias("_end"))
        .join(active, ["topic", "partition"], "full")
        .select(
            "topic",
            "partition",
            F.greatest(F.coalesce("_end", F.lit(0)), F.coalesce("activeBase", F.lit(0))).alias(
                "logEndOffset"
            ),
        )
    )
    txns = (
        producer_transactions(data)
        .groupBy("topic", "partition")
        .agg(
            F.min(F.when(F.col("outcome").isNull(), F.col("firstOffset"))).alias("_firstOpen"),
            F.count(F.when(F.col("outcome").isNull(), 1)).alias("open"),
            F.count(F.when(F.col("outcome") == "committed", 1)).alias("committed"),
        )
    )
    joined = ends.join(txns, ["topic", "partition"], "left")
    lso = F.coalesce("_firstOpen", "logEndOffset")
    return joined.select(
        "topic",
        "partition",
        "logEndOffset",
        lso.alias("lastStableOffset"),
        (F.col("logEndOffset") - lso).alias("gap"),
        F.coalesce("open", F.lit(0)).alias("open"),
        F.coalesce("committed", F.lit(0)).alias("committed"),
    )


def coordinator_states(coordinator: DataFrame) -> DataFrame:
    """Each transactional id's latest record: ``transactionalId, producerId, producerEpoch,
    state, timeoutMs, partitions`` (``topic-partition`` strings); a deleted id has a null
    state."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from spark_udfs.functions import flat

    rows = flat(coordinator, "TransactionLog")
    latest = Window.partitionBy("transactionalId").orderBy(F.col("offset").desc())
    names = F.create_map(*[x for k, v in STATES.items() for x in (F.lit(k), F.lit(v))])
    parts = F.flatten(
        F.transform(
            F.coalesce("transactionPartitions", F.array()),
            lambda t: F.transform(
                t["partitionIds"], lambda p: F.concat_ws("-", t["topic"], p.cast("string"))
            ),
        )
    )
    return (
        rows.withColumn("_rank", F.row_number().over(latest))
        .filter(F.col("_rank") == 1)
        .select(
            "transactionalId",
            "producerId",
            "producerEpoch",
            F.when(F.col("transactionStatus").isNotNull(), names[F.col("transactionStatus")]).alias(
                "state"
            ),
            F.col("transactionTimeoutMs").alias("timeoutMs"),
            parts.alias("partitions"),
        )
    )


def open_transactions(
    data: DataFrame,
    coordinator: DataFrame | None,
    now: int,
    max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS,
) -> DataFrame:
    """``topic, partition, producerId, producerEpoch, firstOffset, ageMs, transactionalId,
    timeoutMs, hanging`` per open transaction, by the rules of
    :func:`codegen.forensics.transactions.transaction_report` (the transactional id of a
    producer: the id whose latest record has its producer id)."""
    from pyspark.sql import functions as F

    txns = producer_transactions(data).filter(F.col("outcome").isNull())
    txns = txns.withColumn("ageMs", F.greatest(F.lit(now) - F.col("firstTimestamp"), F.lit(0)))
    if coordinator is None:
        hanging = F.col("ageMs") > max_timeout_ms
        return txns.select(
            "topic",
            "partition",
            "producerId",
            "producerEpoch",
            "firstOffset",
            "ageMs",
            F.lit(None).cast("string").alias("transactionalId"),
            F.lit(max_timeout_ms).alias("timeoutMs"),
            hanging.alias("hanging"),
        )
    states = coordinator_states(coordinator).select(
        "transactionalId",
        F.col("producerId").alias("_pid"),
        F.col("producerEpoch").alias("_epoch"),
        "state",
        F.col("timeoutMs").alias("_timeout"),
        "partitions",
    )
    j = txns.join(states, txns["producerId"] == states["_pid"], "left")
    timeout = F.when(
        F.col("_timeout").isNotNull() & (F.col("_timeout") > 0), F.col("_timeout")
    ).otherwise(F.lit(max_timeout_ms))
    listed = (
        (F.col("state") == ONGOING)
        & F.array_contains(
            "partitions", F.concat_ws("-", F.col("topic"), F.col("partition").cast("string"))
        )
        & (F.col("_epoch") <= F.col("producerEpoch"))
    )
    hanging = F.col("transactionalId").isNull() | ~listed | (F.col("ageMs") > timeout)
    return j.select(
        "topic",
        "partition",
        "producerId",
        "producerEpoch",
        "firstOffset",
        "ageMs",
        "transactionalId",
        timeout.alias("timeoutMs"),
        hanging.alias("hanging"),
    )
