"""Transactions from the disk as DataFrame operations: the answers of
:mod:`codegen.forensics.transactions`, row for row (a test compares them), by the same
definitions.

The input (:func:`read_transactions`) is the batch rows (``kafka-log`` with ``rows=batches``)
of the data partitions and of ``__consumer_offsets``, the decoded ``__transaction_state``, and
the offset commits of ``__consumer_offsets``, cut at ``as_of``. Nothing is collected to the
driver but the file listing, one number (*now*) and the partitions with open transactions
(:func:`open_transactions` reads the commits of those only).

- :func:`partition_summaries`: per partition, at the cut, its log end, last stable offset,
  committed count, open transactions and aborted ranges: :func:`codegen.dumps.views.transactions
  .summarize` of its batch rows (``applyInArrow`` per partition), which the command line runs
  on the files.
- :func:`partition_transactions`, :func:`aborted_ranges`: those as rows.
- :func:`coordinator_states`: each transactional id's latest ``__transaction_state`` record.
- :func:`transactional_ids`: each transactional id's history as the Python API gives it: its
  states over time, producer id and epoch changes (fencing), transactions, latest state.
- :func:`coordinator_transactions`: each transactional id's transactions with start, end,
  duration and outcome (the Python API's labels and fencing rule).
- :func:`open_transactions`: the open ones at ``now``, judged by
  :func:`codegen.dumps.views.transactions.judge_open` (``mapInArrow``): whether they hang (Kafka's
  ``find-hanging`` rule, or the ``loose`` one), why, what comes next and when, the command that
  would abort them; for ``__consumer_offsets`` the groups whose offsets they keep pending
  (:func:`codegen.dumps.views.transactions.pending_groups`).

The rules that are sequential or worded (a transaction's outcome, fencing) are the Python API's
own functions, run on the few rows involved (each transactional id's records in one Arrow
group), so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from codegen.dumps import storage
from codegen.dumps.coordinator import CONSUMER_OFFSETS, TRANSACTION_STATE
from codegen.dumps.segments import segment_file_info
from codegen.dumps.storage import RemotePath, StoragePath
from codegen.dumps.views.transactions import DEFAULT_MAX_TIMEOUT_MS, FIND_HANGING, RULES
from codegen.forensics.groups import AsOf
from codegen.forensics.inputs import Cut, InputError, discover
from codegen.forensics.partition_transactions import data_partitions
from codegen.forensics.transactional_ids import TransactionalId, replay
from spark_udfs.session import kafka_log_reader

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = [
    "TransactionInputs",
    "aborted_ranges",
    "coordinator_states",
    "coordinator_transactions",
    "newest_timestamp",
    "open_transactions",
    "partition_summaries",
    "partition_transactions",
    "producer_owners",
    "read_transactions",
    "transactional_id_schema",
    "transactional_ids",
]


@dataclass(frozen=True)
class TransactionInputs:
    """What :func:`read_transactions` reads, cut at ``as_of``."""

    segments: DataFrame
    """The segments of each partition read (one replica per partition): ``topic, partition,
    segment, baseOffset, file``."""
    batches: DataFrame
    """Their batch rows with ``segment`` (:data:`codegen.dumps.batch_rows.BATCH_SCHEMA`)."""
    coordinator: DataFrame | None
    """The decoded ``__transaction_state`` records (None without one), with ``timestampMs``."""
    coordinator_batches: DataFrame | None
    """The batch rows of ``__transaction_state`` the cut keeps (None without one)."""
    commits: DataFrame | None
    """The offset commits and markers of ``__consumer_offsets``
    (:func:`spark_udfs.compacted.commit_columns`), None without it."""
    cut: Cut
    """``as_of`` for each partition (:func:`spark_udfs.forensics.resolve_cut`); its ``now`` is
    the report's *now* (None without a cut: :func:`newest_timestamp`)."""


def read_transactions(
    spark: SparkSession,
    path: StoragePath | str | Sequence[StoragePath | str],
    as_of: AsOf | None = None,
) -> TransactionInputs:
    """The inputs of the transaction answers under ``path`` (broker log dirs, partition folders,
    globs; one or several, as the command line's PATH...), cut at ``as_of`` (a time, or a
    ``__consumer_offsets`` offset and the other partitions at its moment, as ``--as-of``; whole
    batches by their headers)."""
    from pyspark.sql import functions as F

    from spark_udfs.compacted import commit_columns
    from spark_udfs.forensics.inputs import (
        batch_rows,
        cut_rows,
        is_given_file,
        kept_batches,
        read_dump,
        resolve_cut,
    )
    from spark_udfs.functions import decode_transaction_state

    paths = [path] if isinstance(path, str | Path | RemotePath) else list(path)
    dirs = discover(paths)
    replicas = data_partitions(dirs)
    if not replicas and not dirs.partitions(TRANSACTION_STATE):
        raise InputError(
            "expected __transaction_state-N or data partition folders (or broker log dirs "
            f"holding them) for transactions; {', '.join(map(str, paths))} holds {dirs.describe()}"
        )
    offsets = dirs.coordinator_replicas(CONSUMER_OFFSETS)
    cut = resolve_cut(spark, paths, as_of)
    logs = [(r, n, f) for r in [*replicas, *offsets] for n, f in enumerate(r.logs())]
    listing = [
        (r.topic, r.partition, n, segment_file_info(f).base_offset, str(f)) for r, n, f in logs
    ]
    ddl = "topic string, partition int, segment int, baseOffset long, file string"
    segments = spark.createDataFrame(listing, ddl)
    # a DataFrame of its own for the join: the two sides of a cogroup must not share one
    named = spark.createDataFrame(listing, ddl).select(
        "topic", "partition", "segment", F.col("file").alias("_given")
    )
    batches = (
        batch_rows(spark, [f for *_, f in logs])
        .drop("topic", "partition")
        .join(F.broadcast(named), is_given_file())
        .drop("_given")
    )
    reader = kafka_log_reader(spark, storage.options_of(dirs.given))
    reader = reader.option("includeHeaders", "false")
    files = [
        f for _, fs in dirs.coordinator_segments(TRANSACTION_STATE, TRANSACTION_STATE) for f in fs
    ]
    coordinator = coordinator_batches = None
    if files:
        coordinator = decode_transaction_state(
            cut_rows(reader.load([str(f) for f in files]), files, cut.others)
        )
        coordinator_batches = (
            batch_rows(spark, files)
            if cut.others is None
            else kept_batches(spark, files, cut.others)
        )
    commits = commit_columns(read_dump(spark, paths, cut.consumer_offsets)) if offsets else None
    return TransactionInputs(segments, batches, coordinator, coordinator_batches, commits, cut)


_SUMMARY_DDL = (
    "topic string, partition int, logEndOffset long, lastStableOffset long, gap long, "
    "committed long, newestTimestamp long, whole boolean, reported boolean, "
    "openTransactions array<struct<producerId:long,producerEpoch:smallint,firstOffset:long,"
    "firstTimestamp:long,lastOffset:long,lastTimestamp:long>>, "
    "aborted array<struct<producerId:long,firstOffset:long,lastOffset:long,"
    "lastStableOffset:long>>"
)


def _summary_of(cut: Cut) -> Callable[[tuple[pa.Scalar, ...], pa.Table, pa.Table], pa.Table]:
    def summary(key: tuple[pa.Scalar, ...], segments: pa.Table, batches: pa.Table) -> pa.Table:
        import pyarrow as pa

        from codegen.dumps.views.log_ends import SEGMENT_SCHEMA, segments_at
        from codegen.dumps.views.transactions import summarize

        as_of = cut.of(str(key[0].as_py()))
        at = segments_at(segments.select(SEGMENT_SCHEMA.names).cast(SEGMENT_SCHEMA), batches, as_of)
        row = summarize(at).table(str(key[0].as_py()))
        return row.add_column(0, "partition", pa.array([key[1].as_py()], pa.int32())).add_column(
            0, "topic", pa.array([key[0].as_py()], pa.string())
        )

    return summary


def partition_summaries(inputs: TransactionInputs) -> DataFrame:
    """Per partition read (the data partitions and ``__consumer_offsets``): ``topic,
    partition, logEndOffset, lastStableOffset, gap, committed, newestTimestamp, whole,
    reported, openTransactions, aborted``: :func:`codegen.dumps.views.transactions.summarize` of
    its segments and batch rows at the cut, per partition (``applyInArrow``)."""
    by = ["topic", "partition"]
    return (
        inputs.segments.groupBy(*by)
        .cogroup(inputs.batches.groupBy(*by))
        .applyInArrow(_summary_of(inputs.cut), _SUMMARY_DDL)
    )


def _reported(summaries: DataFrame) -> DataFrame:
    """The partitions the report lists (``reported``:
    :meth:`codegen.dumps.views.transactions.PartitionSummary.reported`)."""
    return summaries.filter("reported")


def newest_timestamp(inputs: TransactionInputs) -> int:
    """The report's *now*: the moment of the cut (``as_of``'s time, or its offset's moment),
    else the newest batch time read (one number), as the command line's: the newest of
    :func:`codegen.dumps.views.cut.newest_batch_time` of each partition's batch rows (its summary's
    ``newestTimestamp``) and of ``__transaction_state``'s, per Arrow batch (``mapInArrow``)."""
    from pyspark.sql import functions as F

    from spark_udfs.forensics.inputs import newest_batch_times

    if inputs.cut.now is not None:
        return inputs.cut.now
    found = [partition_summaries(inputs).agg(F.max("newestTimestamp")).first()]
    if inputs.coordinator_batches is not None:
        newest = inputs.coordinator_batches.select("maxTimestamp", "recordCount", "_error")
        found.append(newest.mapInArrow(newest_batch_times, "_now long").agg(F.max("_now")).first())
    return max((int(r[0]) for r in found if r is not None and r[0] is not None), default=-1)


def partition_transactions(inputs: TransactionInputs) -> DataFrame:
    """``topic, partition, logEndOffset, lastStableOffset, gap, open, committed`` per data
    partition, and per ``__consumer_offsets`` partition with transactions."""
    from pyspark.sql import functions as F

    return _reported(partition_summaries(inputs)).select(
        "topic",
        "partition",
        "logEndOffset",
        "lastStableOffset",
        "gap",
        F.size("openTransactions").cast("long").alias("open"),
        "committed",
    )


def aborted_ranges(inputs: TransactionInputs) -> DataFrame:
    """``topic, partition, producerId, firstOffset, lastOffset, lastStableOffset`` per aborted
    transaction (``lastOffset``: its ABORT marker; the LSO once it was written, Kafka's
    ``lastStableOffset(completedTxn)``), as the ``.txnindex`` holds them."""
    from pyspark.sql import functions as F

    return (
        _reported(partition_summaries(inputs))
        .select("topic", "partition", F.explode("aborted").alias("_a"))
        .select("topic", "partition", "_a.*")
    )


_LATEST_DDL: Final = (
    "transactionalId string, producerId long, producerEpoch int, state string, timeoutMs int, "
    "partitions array<string>, startTimestamp long"
)


def coordinator_states(coordinator: DataFrame) -> DataFrame:
    """Each transactional id's latest record: ``transactionalId, producerId, producerEpoch,
    state, timeoutMs, partitions`` (``topic-partition`` strings), ``startTimestamp``; a
    deleted id has a null state (and null producer, epoch, timeout and start, no
    partitions): the Python API's :meth:`~codegen.forensics.transactional_ids.TransactionalId
    .latest_json` of each id's records (``applyInArrow``, as :func:`transactional_ids`)."""
    return (
        _records(coordinator).groupBy("coordinatorPartition").applyInArrow(_latest_of, _LATEST_DDL)
    )


def _latest_of(records: pa.Table) -> pa.Table:
    """One ``__transaction_state`` partition's records -> each id's latest record."""
    import pyarrow as pa

    from codegen.forensics.transactional_ids import LATEST_SCHEMA

    return pa.Table.from_pylist(
        [tid.latest_json() for tid in _replayed(records)], schema=LATEST_SCHEMA
    )


def _records(coordinator: DataFrame) -> DataFrame:
    """The ``__transaction_state`` records with what :func:`_replayed` reads."""
    from pyspark.sql import functions as F

    from spark_udfs.functions import flat

    return flat(coordinator, "TransactionLog").select(
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


def transactional_ids(coordinator: DataFrame) -> DataFrame:
    """Each transactional id's history, one row per id: the Python API's
    :meth:`~codegen.forensics.transactional_ids.TransactionalId.to_json`, field for field (the
    ``transactions`` command's jsonl line of the id). ``state`` (``deleted`` after a tombstone),
    ``producerId``, ``producerEpoch``, ``timeoutMs`` and ``partitions`` are the latest record's;
    ``states`` holds every record (offset, time, state, producer id and epoch, timeout,
    partitions, start time, and ``change``: ``new producer id`` or ``epoch bump`` when it fenced
    the producer before, else ""); ``fencing`` the records that fenced; ``transactions`` each
    transaction with start, end, duration and outcome.

    Each ``__transaction_state`` partition's records (few next to the data; an id lives in one
    partition) go, in log order, through the Python API's own rules
    (:func:`codegen.forensics.transactional_ids.replay`) in one Arrow group
    (``groupBy(...).applyInArrow``), so the two cannot drift apart: a group per partition, not
    per id (a Python call per id cost more than the rules)."""
    return (
        _records(coordinator)
        .groupBy("coordinatorPartition")
        .applyInArrow(_history, transactional_id_schema())
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
    """One ``__transaction_state`` partition's records (an Arrow table) -> a row per id, its
    history."""
    import pyarrow as pa

    return pa.Table.from_pylist(
        [tid.to_json() for tid in _replayed(records)], schema=_arrow_schema()
    )


def _replayed(records: pa.Table) -> list[TransactionalId]:
    """One partition's records (:func:`_records`, an Arrow table) through the Python API's
    rules, in log order (:func:`codegen.forensics.transactional_ids.replay`, as the command
    reads them)."""
    return list(replay(records.sort_by("offset")).values())


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


def _owners_of(records: pa.Table) -> pa.Table:
    from codegen.dumps.views.transactions import producer_owners as owners

    return owners(records)


def producer_owners(coordinator: DataFrame) -> DataFrame:
    """``producerId, transactionalId``: the transactional id each producer id belongs to,
    :func:`codegen.dumps.views.transactions.producer_owners` of the records naming it (each id's
    ``states`` in :func:`transactional_ids`), per bucket of producer ids (``applyInArrow``; as
    many buckets as shuffle partitions: a Python call per producer id cost more than the rule,
    which takes any number of them)."""
    from pyspark.sql import functions as F

    buckets = int(coordinator.sparkSession.conf.get("spark.sql.shuffle.partitions") or 200)
    named = transactional_ids(coordinator).select(
        "transactionalId", "coordinatorPartition", F.explode("states").alias("_s")
    )
    return (
        named.select(
            "transactionalId",
            "coordinatorPartition",
            "_s.offset",
            "_s.timestamp",
            "_s.producerId",
        )
        .groupBy(F.pmod(F.col("producerId"), F.lit(buckets)))
        .applyInArrow(_owners_of, "producerId long, transactionalId string")
    )


_OPEN_DDL = (
    "topic string, partition int, producerId long, producerEpoch smallint, firstOffset long, "
    "lastOffset long, firstTimestamp long, lastTimestamp long, transactionalId string, "
    "state string, coordinatorProducerId long, coordinatorTimeoutMs int, "
    "coordinatorStartTimestamp long, partitions array<string>, ageMs long, idleMs long, "
    "timeoutMs long, hanging boolean, findHanging boolean, reason string, outlook string, "
    "timesOutAt long, abortCommand string"
)


def _judged(
    now: int, have_coordinator: bool, max_timeout_ms: int, rule: str
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def judge(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from codegen.dumps.views.transactions import judge_open

        for b in batches:
            table = judge_open(
                b,
                now,
                have_coordinator=have_coordinator,
                max_timeout_ms=max_timeout_ms,
                rule=rule,
            )
            yield from table.to_batches()

    return judge


_PENDING_DDL = "partition int, producerId long, firstOffset long, pendingGroups array<string>"


def _pending_of(key: tuple[pa.Scalar, ...], opened: pa.Table, commits: pa.Table) -> pa.Table:
    """A ``__consumer_offsets`` partition's open transactions and commits -> the groups each
    keeps pending (:func:`codegen.dumps.views.transactions.pending_groups`)."""
    import pyarrow as pa

    from codegen.dumps.views.commit_rows import commit_rows
    from codegen.dumps.views.transactions import (
        PENDING_GROUPS_SCHEMA,
        PENDING_SCHEMA,
        pending_commits,
        pending_groups,
    )

    groups = PENDING_GROUPS_SCHEMA.empty_table()
    if opened.num_rows:  # a partition with commits and no open transaction: no row
        pending = PENDING_SCHEMA.empty_table()
        if commits.num_rows:
            pending = pending_commits(opened, commit_rows(commits))
        groups = pending_groups(opened, pending)
    where = pa.array([key[0].as_py()] * groups.num_rows, pa.int32())
    return groups.add_column(0, "partition", where)


def _holding_open(opened: DataFrame) -> set[tuple[str, int]]:
    """The partitions with open transactions (``topic, partition``; a few rows, collected).

    ``open_transactions`` joins the open transactions with the coordinator's records and, per
    ``__consumer_offsets`` partition, with its commits. Were those joins planned whatever the
    open transactions, Spark's adaptive execution would start the stages of every side at
    once, and when the open side came out empty it would drop the join and end the answer with
    the other sides' stages still running: nobody waits for them, they take the cores of what
    runs next, and stopping the session kills their Python workers ("Python worker exited
    unexpectedly"). Joining the commits of the partitions with open transactions only, and
    nothing when none is open, starts only the work the answer uses."""
    rows = opened.select("topic", "partition").distinct().collect()
    return {(str(r[0]), int(r[1])) for r in rows}


def open_transactions(
    inputs: TransactionInputs,
    now: int,
    max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS,
    rule: str = FIND_HANGING,
) -> DataFrame:
    """Per open transaction at ``now``: ``topic, partition, producerId, producerEpoch,
    firstOffset, lastOffset, firstTimestamp, lastTimestamp, ageMs, idleMs, transactionalId,
    timeoutMs, hanging, findHanging, reason, outlook, timesOutAt, abortCommand,
    pendingGroups``, as :func:`codegen.forensics.transactions.transaction_report` gives them:
    :func:`codegen.dumps.views.transactions.judge_open` over the open transactions with their
    transactional id (:func:`producer_owners`) and its latest record
    (:func:`coordinator_states`), in ``mapInArrow``; ``pendingGroups`` (``__consumer_offsets``
    only, else null) from :func:`codegen.dumps.views.transactions.pending_groups` per partition."""
    from pyspark.sql import functions as F

    if rule not in RULES:
        raise ValueError(f"hanging rule {rule!r}: use one of {', '.join(RULES)}")
    summaries = partition_summaries(inputs)
    opened = summaries.select("topic", "partition", F.explode("openTransactions").alias("_t"))
    opened = opened.select("topic", "partition", "_t.*")
    holding = _holding_open(opened)
    if not holding:
        # Nothing is open: the plan below on no rows, which Spark plans to nothing (no job
        # reads the coordinator's records or the commits for an empty answer).
        opened = opened.limit(0)
    coordinator = inputs.coordinator
    if coordinator is None:
        joined = opened.select(
            "*",
            F.lit(None).cast("string").alias("transactionalId"),
            F.lit(None).cast("string").alias("state"),
            F.lit(None).cast("long").alias("coordinatorProducerId"),
            F.lit(None).cast("int").alias("coordinatorTimeoutMs"),
            F.lit(None).cast("long").alias("coordinatorStartTimestamp"),
            F.lit(None).cast("array<string>").alias("partitions"),
        )
    else:
        owners = producer_owners(coordinator).withColumnRenamed("producerId", "_owned")
        latest = coordinator_states(coordinator).select(
            "transactionalId",
            "state",
            F.col("producerId").alias("coordinatorProducerId"),
            F.col("timeoutMs").alias("coordinatorTimeoutMs"),
            F.col("startTimestamp").alias("coordinatorStartTimestamp"),
            "partitions",
        )
        joined = (
            opened.join(owners, opened["producerId"] == owners["_owned"], "left")
            .drop("_owned")
            .join(latest, "transactionalId", "left")
        )
    columns = [c.split(" ")[0] for c in _OPEN_DDL.split(", ")]
    judged = joined.select(*columns[:14]).mapInArrow(
        _judged(now, coordinator is not None, max_timeout_ms, rule), _OPEN_DDL
    )
    out = judged.drop("state", "coordinatorProducerId", "coordinatorTimeoutMs",
                      "coordinatorStartTimestamp", "partitions")  # fmt: skip
    with_open = sorted(p for topic, p in holding if topic == CONSUMER_OFFSETS)
    if inputs.commits is None or not with_open:
        return out.withColumn("pendingGroups", F.lit(None).cast("array<string>"))
    offsets = opened.filter(F.col("topic") == CONSUMER_OFFSETS).select(
        "partition", "producerId", "firstOffset", "lastOffset"
    )
    commits = inputs.commits.withColumn("partition", F.col("partition").cast("int"))
    commits = commits.filter(F.col("partition").isin(with_open))
    pending = (
        offsets.groupBy("partition")
        .cogroup(commits.groupBy("partition"))
        .applyInArrow(_pending_of, _PENDING_DDL)
        .withColumn("topic", F.lit(CONSUMER_OFFSETS))
    )
    # every open transaction of __consumer_offsets has its row; those of data partitions none
    return out.join(pending, ["topic", "partition", "producerId", "firstOffset"], "left")
