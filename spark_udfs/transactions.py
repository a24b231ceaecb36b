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
- :func:`coordinator_states`: each transactional id's latest ``__transaction_state`` record.
- :func:`transactional_ids`: each transactional id's history as the Python API gives it: its
  states over time, producer id and epoch changes (fencing), transactions, latest state.
- :func:`coordinator_transactions`: each transactional id's transactions with start, end,
  duration and outcome (the Python API's labels and fencing rule).
- :func:`open_transactions`: the open ones with their age at ``now``, transactional id,
  whether they hang and why, and the command that would abort them.

The rules that are sequential or worded (a transaction's outcome, fencing, why one hangs) are
the Python API's own functions, run on the few rows involved (each transactional id's records
in one Arrow group, each open transaction in a small UDF), so the two cannot drift apart.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from codegen.dumps.coordinator import TRANSACTION_STATE
from codegen.dumps.model import ControlType
from codegen.dumps.segments import segment_file_info
from codegen.dumps.storage import StoragePath
from codegen.forensics.groups import AsOf
from codegen.forensics.inputs import InputError, discover
from codegen.forensics.transactions import (
    DEFAULT_MAX_TIMEOUT_MS,
    TransactionalId,
    abort_command,
    add_state_change,
    data_partitions,
    hanging_reason,
)
from spark_udfs.session import kafka_log_reader

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = [
    "aborted_ranges",
    "coordinator_states",
    "coordinator_transactions",
    "newest_timestamp",
    "open_transactions",
    "partition_transactions",
    "producer_transactions",
    "read_transactions",
    "transactional_id_schema",
    "transactional_ids",
]


def read_transactions(
    spark: SparkSession, path: StoragePath | str, as_of: AsOf | None = None
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
    state (and null producer, epoch and timeout, no partitions). The latest state of
    :func:`transactional_ids`, the Python API's ``TransactionalId.latest``."""
    from pyspark.sql import functions as F

    live = F.col("deletedAt").isNull()
    return transactional_ids(coordinator).select(
        "transactionalId",
        F.when(live, F.col("producerId")).alias("producerId"),
        F.when(live, F.col("producerEpoch")).alias("producerEpoch"),
        F.when(live, F.col("state")).alias("state"),
        F.when(live, F.col("timeoutMs")).alias("timeoutMs"),
        F.when(live, F.col("partitions"))
        .otherwise(F.array().cast("array<string>"))
        .alias("partitions"),
    )


def transactional_ids(coordinator: DataFrame) -> DataFrame:
    """Each transactional id's history, one row per id: the Python API's
    :meth:`~codegen.forensics.transactions.TransactionalId.to_json`, field for field (the
    ``transactions`` command's jsonl line of the id). ``state`` (``deleted`` after a tombstone),
    ``producerId``, ``producerEpoch``, ``timeoutMs`` and ``partitions`` are the latest record's;
    ``states`` holds every record (offset, time, state, producer id and epoch, timeout,
    partitions, start time, and ``change``: ``new producer id`` or ``epoch bump`` when it fenced
    the producer before, else ""); ``fencing`` the records that fenced; ``transactions`` each
    transaction with start, end, duration and outcome.

    Each id's records (few next to the data) go, in log order, through the Python API's own
    rules (:func:`codegen.forensics.transactions.add_state_change`) in one Arrow group
    (``groupBy(...).applyInArrow``), so the two cannot drift apart."""
    from pyspark.sql import functions as F

    from spark_udfs.functions import flat

    records = flat(coordinator, "TransactionLog").select(
        "transactionalId",
        F.col("partition").cast("int").alias("coordinatorPartition"),
        "offset",
        F.col("transactionStatus").cast("int").alias("status"),
        F.col("producerId").cast("long").alias("producerId"),
        F.col("producerEpoch").cast("int").alias("producerEpoch"),
        F.col("transactionTimeoutMs").cast("int").alias("timeoutMs"),
        F.col("transactionPartitions").alias("partitions"),
        F.col("transactionLastUpdateTimestampMs").alias("lastUpdateMs"),
        F.col("transactionStartTimestampMs").alias("startMs"),
        F.col("clientTransactionVersion").cast("int").alias("version"),
    )
    return records.groupBy("transactionalId", "coordinatorPartition").applyInArrow(
        _history, transactional_id_schema()
    )


def transactional_id_schema() -> StructType:
    """The columns of :func:`transactional_ids`."""
    from pyspark.sql.types import (
        ArrayType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    def struct(*fields: tuple[str, Any]) -> StructType:
        return StructType([StructField(name, typ) for name, typ in fields])

    long, integer, string, names = LongType(), IntegerType(), StringType(), ArrayType(StringType())
    change = struct(
        ("offset", long),
        ("timestamp", long),
        ("state", string),
        ("producerId", long),
        ("producerEpoch", integer),
        ("timeoutMs", integer),
        ("partitions", names),
        ("startTimestamp", long),
        ("change", string),
    )
    transaction = struct(
        ("producerId", long),
        ("producerEpoch", integer),
        ("startTimestamp", long),
        ("endTimestamp", long),
        ("durationMs", long),
        ("outcome", string),
        ("partitions", names),
    )
    return struct(
        ("kind", string),
        ("transactionalId", string),
        ("coordinatorPartition", integer),
        ("state", string),
        ("producerId", long),
        ("producerEpoch", integer),
        ("timeoutMs", integer),
        ("partitions", names),
        ("deletedAt", long),
        ("fencing", ArrayType(change)),
        ("transactions", ArrayType(transaction)),
        ("states", ArrayType(change)),
    )


@cache
def _arrow_schema() -> Any:
    """:func:`transactional_id_schema` as Arrow (once per worker, not once per id)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(transactional_id_schema())


def _history(records: Any) -> Any:
    """One id's ``__transaction_state`` records (an Arrow table) -> its one-row history."""
    import pyarrow as pa

    rows = records.sort_by("offset").to_pylist()  # log order
    tid = TransactionalId(rows[0]["transactionalId"], rows[0]["coordinatorPartition"])
    for r in rows:
        if r["status"] is None:  # a tombstone: the id expired
            tid.deleted_at = r["offset"]
            continue
        add_state_change(
            tid,
            r["offset"],
            status=r["status"],
            producer_id=r["producerId"],
            producer_epoch=r["producerEpoch"],
            timeout_ms=r["timeoutMs"],
            partitions=tuple(
                sorted((t["topic"], p) for t in (r["partitions"] or []) for p in t["partitionIds"])
            ),
            last_update_ms=r["lastUpdateMs"],
            start_ms=r["startMs"],
            transaction_version=r["version"] or 0,
        )
    return pa.Table.from_pylist([tid.to_json()], schema=_arrow_schema())


def coordinator_transactions(coordinator: DataFrame) -> DataFrame:
    """Each transactional id's transactions as the coordinator logged them, from Ongoing to the
    Complete* record that ends them: ``transactionalId, number, producerId, producerEpoch,
    startTimestamp, endTimestamp, durationMs, outcome, partitions`` (``number`` counts from 0
    per id; ``endTimestamp`` and ``durationMs`` null while open). ``outcome`` is the Python
    API's (``committed``, ``aborted``, ``aborted (timed out)``, ``aborted (fenced)``,
    ``open``): the ``transactions`` of :func:`transactional_ids`, one row each."""
    from pyspark.sql import functions as F

    return (
        transactional_ids(coordinator)
        .select("transactionalId", F.posexplode("transactions").alias("number", "_t"))
        .select("transactionalId", "number", "_t.*")
    )


def open_transactions(
    data: DataFrame,
    coordinator: DataFrame | None,
    now: int,
    max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS,
) -> DataFrame:
    """``topic, partition, producerId, producerEpoch, firstOffset, ageMs, transactionalId,
    timeoutMs, hanging, reason, abortCommand`` per open transaction, by the rules of
    :func:`codegen.forensics.transactions.transaction_report`: the transactional id of a
    producer is the id with records of its producer id; ``timeoutMs`` and ``reason`` (why it
    hangs, "" when it does not) come from
    :func:`codegen.forensics.transactions.hanging_reason` per open transaction (they are few);
    ``abortCommand`` (null unless it hangs) is the live command that would end it."""
    from pyspark.sql import functions as F

    txns = producer_transactions(data).filter(F.col("outcome").isNull())
    txns = txns.withColumn("ageMs", F.greatest(F.lit(now) - F.col("firstTimestamp"), F.lit(0)))
    if coordinator is None:
        j = txns.select(
            "*",
            F.lit(None).cast("string").alias("transactionalId"),
            F.lit(None).cast("string").alias("state"),
            F.lit(None).cast("long").alias("_pid"),
            F.lit(None).cast("int").alias("_epoch"),
            F.lit(None).cast("int").alias("_timeout"),
            F.lit(None).cast("array<string>").alias("partitions"),
        )
    else:
        from spark_udfs.functions import flat

        # Python's by_producer: every producer id an id's records name
        owners = (
            flat(coordinator, "TransactionLog")
            .filter(F.col("producerId").isNotNull())
            .groupBy(F.col("producerId").alias("_owned"))
            .agg(F.max_by("transactionalId", "offset").alias("transactionalId"))
        )
        states = coordinator_states(coordinator).select(
            "transactionalId",
            F.col("producerId").alias("_pid"),
            F.col("producerEpoch").alias("_epoch"),
            "state",
            F.col("timeoutMs").alias("_timeout"),
            "partitions",
        )
        j = txns.join(owners, txns["producerId"] == owners["_owned"], "left").join(
            states, "transactionalId", "left"
        )
    have_coordinator = coordinator is not None
    judge = F.udf(
        lambda *row: _judgement(
            *row, have_coordinator=have_coordinator, max_timeout_ms=max_timeout_ms
        ),
        "struct<timeoutMs:long,reason:string,abortCommand:string>",
    )
    judged = j.withColumn(
        "_j",
        judge(
            "topic",
            "partition",
            "producerId",
            "producerEpoch",
            "firstOffset",
            "ageMs",
            "transactionalId",
            "state",
            "_pid",
            "_epoch",
            "_timeout",
            "partitions",
        ),
    )
    return judged.select(
        "topic",
        "partition",
        "producerId",
        "producerEpoch",
        "firstOffset",
        "ageMs",
        "transactionalId",
        F.col("_j.timeoutMs").alias("timeoutMs"),
        (F.col("_j.reason") != "").alias("hanging"),
        F.col("_j.reason").alias("reason"),
        F.col("_j.abortCommand").alias("abortCommand"),
    )


def _judgement(
    topic: str,
    partition: int,
    producer_id: int,
    producer_epoch: int,
    first_offset: int,
    age_ms: int,
    transactional_id: str | None,
    state: str | None,
    latest_producer_id: int | None,
    latest_epoch: int | None,
    latest_timeout_ms: int | None,
    partitions: list[str] | None,
    *,
    have_coordinator: bool,
    max_timeout_ms: int,
) -> tuple[int, str, str | None]:
    """The Python API's timeout, reason and abort command of one open transaction."""
    listed = {(t, int(p)) for t, _, p in (s.rpartition("-") for s in partitions or [])}
    timeout, reason = hanging_reason(
        topic,
        partition,
        producer_id,
        producer_epoch,
        age_ms,
        transactional_id,
        latest_state=state,
        latest_producer_id=latest_producer_id,
        latest_producer_epoch=latest_epoch,
        latest_timeout_ms=latest_timeout_ms,
        latest_partitions=listed,
        have_coordinator=have_coordinator,
        max_timeout_ms=max_timeout_ms,
    )
    return timeout, reason, abort_command(topic, partition, first_offset) if reason else None
