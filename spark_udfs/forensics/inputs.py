"""What the Spark forensics read: the decoded ``__consumer_offsets`` records of a dump
(:func:`read_dump`), cut at ``--as-of`` by whole batches (:func:`cut_rows`,
:func:`resolve_cut`), the batch rows of files (:func:`batch_rows`), and the data partitions'
log ends (:func:`read_log_ends`: segments, empty segments and ``replication-offset-checkpoint``
files, the highest replica, each partition saying where its end came from)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Final

from codegen.dumps import storage
from codegen.dumps.segments import segment_file_info
from codegen.dumps.storage import StoragePath
from codegen.dumps.views.log_ends import EARLIEST, REPLICATION_CHECKPOINT
from codegen.forensics.coordinator_logs import dump_partitions
from codegen.forensics.groups import AsOf
from codegen.forensics.inputs import NO_CUT, Cut, as_log_dirs
from codegen.forensics.shares import DELIVERY_STATES, share_states
from spark_udfs.functions import decode_consumer_offsets
from spark_udfs.session import kafka_log_reader

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, SparkSession


__all__ = [
    "ENDS_DDL",
    "SHARE_PARTITION_FIELDS",
    "SHARE_STATE_SCHEMA",
    "arrow_schema",
    "batch_rows",
    "cut_rows",
    "epoch_millis",
    "is_given_file",
    "kept_batches",
    "log_ends",
    "newest_batch_times",
    "read_dump",
    "read_log_ends",
    "read_share_states",
    "resolve_cut",
]


def epoch_millis(col: str) -> Column:
    from pyspark.sql import functions as F

    return F.floor(F.unix_micros(F.col(col)) / 1000).cast("long")


def is_given_file(listed: str = "_given") -> Column:
    """A ``kafka-log`` row's ``file`` is the listed file ``listed`` (the source names a
    relative path given from the server's folder, over Spark Connect)."""
    from pyspark.sql import functions as F

    return (F.col("file") == F.col(listed)) | F.col("file").endswith(
        F.concat(F.lit("/"), F.col(listed))
    )


def batch_rows(spark: SparkSession, files: Sequence[StoragePath | str]) -> DataFrame:
    """The batch rows of ``files`` (``kafka-log`` with ``rows=batches``: one row per log entry,
    its header's fields); files in object storage read with their store's options."""
    reader = kafka_log_reader(spark, storage.options_of(files))
    return reader.option("rows", "batches").load([str(f) for f in files])


def _kept(as_of: AsOf) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def keep(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from codegen.dumps.views.cut import kept_batches

        for b in batches:
            yield kept_batches(b, as_of)

    return keep


def kept_batches(spark: SparkSession, files: Sequence[StoragePath | str], as_of: AsOf) -> DataFrame:
    """The batch rows of ``files`` the cut keeps (:func:`codegen.dumps.views.cut.kept_batches` per
    Arrow batch), and those that could not be read."""
    rows = batch_rows(spark, files)
    return rows.mapInArrow(_kept(as_of), rows.schema)


def cut_rows(raw: DataFrame, files: Sequence[StoragePath | str], as_of: AsOf | None) -> DataFrame:
    """``kafka-log`` rows of the batches ``as_of`` keeps (whole batches, by their headers, as
    the command line cuts them), and the rows that could not be read, with ``timestampMs``."""
    from pyspark.sql import functions as F

    raw = raw.withColumn("timestampMs", epoch_millis("timestamp"))
    if as_of is None:
        return raw
    kept = (
        kept_batches(raw.sparkSession, files, as_of)
        .select(F.col("file").alias("_keptFile"), F.col("batchPosition").alias("_keptAt"))
        .withColumn("_kept", F.lit(True))
    )
    on = (F.col("file") == F.col("_keptFile")) & (F.col("batchPosition") == F.col("_keptAt"))
    return (
        raw.join(kept, on, "left")
        .filter(F.col("_kept").isNotNull() | F.col("_error").isNotNull())
        .drop("_keptFile", "_keptAt", "_kept")
    )


def read_dump(
    spark: SparkSession, path: StoragePath | Sequence[StoragePath | str], as_of: AsOf | None = None
) -> DataFrame:
    """The decoded ``__consumer_offsets`` records under ``path`` (broker log dirs, partition
    folders, segments and globs; one replica per partition), cut at ``as_of`` (whole batches,
    by their headers, as ``--as-of``), with ``timestampMs``. Only the file listing runs on the
    driver."""
    files = [f for _, found in dump_partitions(path) for f in found]
    reader = kafka_log_reader(spark, storage.options_of(files)).option("includeHeaders", "false")
    raw = reader.load([str(f) for f in files])
    return decode_consumer_offsets(cut_rows(raw, files, as_of))


def resolve_cut(
    spark: SparkSession, path: StoragePath | Sequence[StoragePath | str], as_of: AsOf | None
) -> Cut:
    """``as_of`` for every partition under ``path``, as :func:`codegen.forensics.inputs
    .resolve_cut` gives it: a ``__consumer_offsets`` offset's moment (the newest timestamp of
    the batches with records it keeps) is one number the executors compute."""
    from pyspark.sql import functions as F

    if as_of is None:
        return NO_CUT
    if as_of.offset is None:
        return Cut(as_of, as_of, as_of.timestamp_ms)
    files = [f for _, found in dump_partitions(path) for f in found]
    newest = (
        kept_batches(spark, files, as_of)
        .select("maxTimestamp", "recordCount", "_error")
        .mapInArrow(newest_batch_times, "_now long")
        .agg(F.max("_now"))
        .first()
    )
    moment = -1 if newest is None or newest[0] is None else int(newest[0])
    return Cut(as_of, AsOf(timestamp_ms=moment), moment)


def newest_batch_times(chunks: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """:func:`codegen.dumps.views.cut.newest_batch_time` of each Arrow batch of batch rows."""
    import pyarrow as pa

    from codegen.dumps.views.cut import newest_batch_time

    for chunk in chunks:
        yield pa.RecordBatch.from_pydict(
            {"_now": [newest_batch_time(chunk)]}, schema=pa.schema([pa.field("_now", pa.int64())])
        )


_CANDIDATE_DDL: Final = (
    "topic string, partition int, candidate int, source string, where string, "
    "history boolean, endTime long, endOffset long"
)


def _replica_steps(
    cut: AsOf | None,
) -> Callable[[tuple[pa.Scalar, ...], pa.Table, pa.Table], pa.Table]:
    def steps(key: tuple[pa.Scalar, ...], listing: pa.Table, batches: pa.Table) -> pa.Table:
        import pyarrow as pa

        from codegen.dumps.views.log_ends import (
            SEGMENT_SCHEMA,
            candidate_rows,
            log_end_steps,
            segments_at,
        )

        schema = arrow_schema(_CANDIDATE_DDL)
        if not listing.num_rows:
            return schema.empty_table()
        segments = listing.select(SEGMENT_SCHEMA.names).cast(SEGMENT_SCHEMA)
        found = log_end_steps(segments_at(segments, batches, cut))
        if found is None:
            return schema.empty_table()
        rows = candidate_rows(int(key[2].as_py()), str(listing.column("where")[0]), found)
        n = rows.num_rows
        return rows.add_column(0, "partition", pa.repeat(key[1].cast(pa.int32()), n)).add_column(
            0, "topic", pa.repeat(key[0].cast(pa.string()), n)
        )

    return steps


def _best_end(key: tuple[pa.Scalar, ...], candidates: pa.Table) -> pa.Table:
    import pyarrow as pa

    from codegen.dumps.views.log_ends import CANDIDATE_SCHEMA, best_log_end

    found = best_log_end(candidates.select(CANDIDATE_SCHEMA.names).cast(CANDIDATE_SCHEMA))
    schema = arrow_schema(ENDS_DDL)
    if found is None:
        return schema.empty_table()
    steps, source, where, history, _ = found
    n = steps.num_rows
    return pa.table(
        {
            "topic": pa.repeat(key[0].cast(pa.string()), n),
            "partition": pa.repeat(key[1].cast(pa.int32()), n),
            "endTime": steps.column("endTime"),
            "endOffset": steps.column("endOffset"),
            "logEndSource": pa.repeat(pa.scalar(f"{source}: {where}"), n),
            "history": pa.repeat(pa.scalar(history), n),
        },
        schema=schema,
    )


def read_log_ends(
    spark: SparkSession, path: StoragePath | Sequence[StoragePath | str], as_of: AsOf | None = None
) -> DataFrame | None:
    """Log end offsets over time of the data partitions among ``path`` (broker log dirs,
    partition folders and globs, as :mod:`codegen.forensics.inputs` finds them: every
    ``<topic>-<partition>`` folder of a topic that is not internal, those next to a partition
    folder given, and the brokers' ``replication-offset-checkpoint`` files) at ``as_of``, or
    None when there are none: ``topic, partition, endTime, endOffset, logEndSource, history``,
    as :class:`codegen.forensics.inputs.LogEnds` gives them, by the same definitions
    (:mod:`codegen.dumps.views.log_ends`): each replica's log end over time from its batch rows
    (``kafka-log`` ``rows=batches``), then the highest candidate of each partition, both in
    ``applyInArrow``. At a cut the checkpoints (written at the end) are left out. The file
    listing and the checkpoints (a few lines each) are read on the driver."""
    from pyspark.sql import functions as F

    dirs = as_log_dirs(path)
    cut = None if as_of is None else resolve_cut(spark, dirs.given, as_of).others
    keys = sorted(
        {
            k
            for k in (*dirs.replicas, *dirs.neighbours, *dirs.checkpoints)
            if not k[0].startswith("__")
        }
    )
    listing: list[tuple[str, int, int, str, int, str, int | None]] = []
    segments: list[StoragePath] = []
    checkpoints: list[tuple[str, int, int, str, str, bool, int, int]] = []
    for k in keys:
        replicas = dirs.replicas.get(k) or dirs.neighbours.get(k) or []
        for n, r in enumerate(replicas):
            for m, f in enumerate(r.logs()):
                listing.append((*k, n, str(r.folder), m, str(f), segment_file_info(f).base_offset))
                segments.append(f)
        if cut is None:
            for m, (hw, checkpoint) in enumerate(dirs.checkpoints.get(k, [])):
                where = str(checkpoint)
                number = len(replicas) + m
                checkpoints.append((*k, number, REPLICATION_CHECKPOINT, where, False, EARLIEST, hw))
    if not listing and not checkpoints:
        return None
    candidates = spark.createDataFrame(checkpoints, _CANDIDATE_DDL)
    if listing:
        ddl = (
            "topic string, partition int, _replica int, where string, segment int, "
            "_given string, baseOffset long"
        )
        files = spark.createDataFrame(listing, ddl)
        # a DataFrame of its own for the join: the two sides of a cogroup must not share one
        named = spark.createDataFrame(listing, ddl).drop("where", "baseOffset")
        batches = (
            batch_rows(spark, segments)
            .drop("topic", "partition")
            .join(F.broadcast(named), is_given_file())
        )
        group = ["topic", "partition", "_replica"]
        steps = (
            files.groupBy(*group)
            .cogroup(batches.groupBy(*group))
            .applyInArrow(_replica_steps(cut), _CANDIDATE_DDL)
        )
        candidates = steps.unionByName(candidates)
    return candidates.groupBy("topic", "partition").applyInArrow(_best_end, ENDS_DDL)


_SEGMENT_NAME_DDL: Final = (
    "topic string, partition int, _replica int, segment int, baseOffset long, where string"
)


def _segment_names(chunks: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Segment rows with their base offset read from the file's name as the command line
    reads it (:func:`codegen.dumps.segments.segment_file_info`) and their folder."""
    import posixpath

    import pyarrow as pa

    for chunk in chunks:
        files = chunk.column("file").to_pylist()
        yield (
            chunk.drop_columns(["file"])
            .append_column(
                "baseOffset",
                pa.array([segment_file_info(f).base_offset for f in files], pa.int64()),
            )
            .append_column("where", pa.array([posixpath.dirname(f) for f in files], pa.string()))
        )


def log_ends(batches: DataFrame) -> DataFrame:
    """Log end offsets over time of data partitions from their batch rows (:func:`batch_rows`,
    ``kafka-log`` with ``rows=batches``): ``topic, partition, endTime, endOffset,
    logEndSource, history`` by the definitions of :mod:`codegen.dumps.views.log_ends`, each
    partition's files its segments (in name order), ``logEndSource`` ``segments: <folder>``.
    Rows hold no checkpoint nor other replica: :func:`read_log_ends` reads those."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by_partition = Window.partitionBy("topic", "partition").orderBy("file")
    numbered = batches.withColumn(
        "segment", (F.dense_rank().over(by_partition) - 1).cast("int")
    ).withColumn("_replica", F.lit(0))
    segments = (
        numbered.select("topic", "partition", "_replica", "segment", "file")
        .distinct()
        .mapInArrow(_segment_names, _SEGMENT_NAME_DDL)
    )
    group = ["topic", "partition", "_replica"]
    steps = (
        segments.groupBy(*group)
        .cogroup(numbered.groupBy(*group))
        .applyInArrow(_replica_steps(None), _CANDIDATE_DDL)
    )
    return steps.groupBy("topic", "partition").applyInArrow(_best_end, ENDS_DDL)


ENDS_DDL: Final = (
    "topic string, partition int, endTime long, endOffset long, logEndSource string, "
    "history boolean"
)


def arrow_schema(ddl: str) -> pa.Schema:
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int": pa.int32(),
        "long": pa.int64(),
        "boolean": pa.bool_(),
        "array<long>": pa.list_(pa.int64()),
    }
    return pa.schema(
        [(name, types[kind]) for name, kind in (f.strip().split(" ", 1) for f in ddl.split(","))]
    )


# ----------------------------------------------------------------------------- share groups


_IN_FLIGHT_TYPE: Final = (
    "struct<firstOffset:bigint,lastOffset:bigint,deliveryState:string,deliveryCount:int>"
)
SHARE_PARTITION_FIELDS: Final = (
    "topic:string,topicId:string,partition:int,startOffset:bigint,stateEpoch:int,"
    "leaderEpoch:int,snapshotEpoch:int,deliveryCompleteCount:int,delivered:bigint,"
    f"inFlight:array<{_IN_FLIGHT_TYPE}>"
)
SHARE_STATE_SCHEMA: Final = (
    "group string, topic string, topicId string, partition int, startOffset long, "
    "stateEpoch int, leaderEpoch int, snapshotEpoch int, deliveryCompleteCount int, "
    f"delivered long, inFlight array<{_IN_FLIGHT_TYPE}>"
)


def read_share_states(
    spark: SparkSession, path: StoragePath | Sequence[StoragePath | str], as_of: AsOf | None = None
) -> DataFrame:
    """Every share partition's state at the end of the ``__share_group_state`` partitions
    among ``path``, or at ``as_of`` (no row when there are none): ``group, topic, topicId,
    partition, startOffset, stateEpoch, leaderEpoch, snapshotEpoch, deliveryCompleteCount,
    delivered, inFlight`` (each batch ``firstOffset, lastOffset, deliveryState, deliveryCount``), as
    :func:`codegen.forensics.shares.share_states` gives them (the topic's name from
    ``__cluster_metadata``, null without it; ``delivered``: the records at or after the start
    offset whose delivery is complete). The state is replayed on the driver: one snapshot per
    share partition and its updates, small next to the offset commits."""
    dirs = as_log_dirs(path)
    cut = None if as_of is None else resolve_cut(spark, dirs.given, as_of).others
    rows = [
        (
            s.group,
            s.topic,
            s.topic_id,
            s.partition,
            s.start_offset,
            s.state_epoch,
            s.leader_epoch,
            s.snapshot_epoch,
            s.delivery_complete_count,
            s.delivered,
            [
                (
                    b.first_offset,
                    b.last_offset,
                    DELIVERY_STATES.get(b.delivery_state, str(b.delivery_state)),
                    b.delivery_count,
                )
                for b in s.in_flight
            ],
        )
        for s in share_states(dirs, cut=cut)
    ]
    return spark.createDataFrame(rows, SHARE_STATE_SCHEMA)
