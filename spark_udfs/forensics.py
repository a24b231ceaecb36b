"""Group forensics as distributed DataFrame operations: the answers of ``codegen.forensics``.

Every function takes the decoded ``__consumer_offsets`` records (:func:`read_dump`, or
:func:`spark_udfs.functions.decode_consumer_offsets` over ``kafka-log`` rows) and returns a
DataFrame: nothing is collected to the driver. The group answers run the Python API's own
view on the executors, one replay per ``__consumer_offsets`` partition
(:mod:`spark_udfs.group_views`); the offset answers run the command line's definitions
(:mod:`codegen.views.offsets` per ``__consumer_offsets`` partition, then
:mod:`codegen.forensics.lag` per data partition with its log ends) in ``applyInArrow``. The
semantics are those of the Python API, row for row (a test compares them):

- :func:`downgrade_findings`: per partition, what a release's group coordinator makes of it
  (every record its loader reads, the live records it would lose or skip), by
  :func:`codegen.forensics.downgrade.partition_findings`. The release table is the one of
  :mod:`codegen.forensics.releases`.
- :func:`group_states`: each group (classic, consumer, share, streams, and the deleted ones)
  at the end of the (possibly ``as_of``-cut) log, with its members in detail (client id, host,
  instance id, assignors, subscribed topics, assignment, member epoch) and its KIP-726
  assignor inventory, as :func:`codegen.forensics.groups.group_reports` gives them.
- :func:`group_timelines`: every group's events (rebalances, members joining and leaving,
  protocol conversions, assignor changes, offset deletions, deletion, member epochs), and
  :func:`member_epochs`, the member and assignment epochs over time (KAFKA-19779).
- :func:`offset_history`, :func:`partition_lag`, :func:`group_lag`: every commit that took
  effect with the log end offset and lag at its time, and the Burrow-like status per
  partition and group of :mod:`codegen.forensics.lag`, against the log ends of
  :func:`read_log_ends` (segments, empty segments and ``replication-offset-checkpoint``
  files, the highest replica, each partition saying where its end came from).
- :func:`read_share_states`, :func:`share_lag`: share groups' partitions from
  ``__share_group_state`` (replayed on the driver by :mod:`codegen.forensics.shares`) and
  their lag (KIP-1226).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

from codegen.dumps.segments import segment_file_info
from codegen.dumps.storage import StoragePath
from codegen.forensics import lag as lag_views
from codegen.forensics.cluster import cluster_metadata
from codegen.forensics.downgrade import (
    LiveRecord,
    LiveRecords,
    dump_partitions,
    partition_findings,
    scan_partition,
)
from codegen.forensics.groups import AsOf
from codegen.forensics.inputs import REPLICATION_CHECKPOINT, LogEnd, as_log_dirs
from codegen.forensics.lag import DEFAULT_MIN_COMMITS, DEFAULT_WINDOW
from codegen.forensics.releases import release
from codegen.forensics.shares import DELIVERY_STATES, share_states
from spark_udfs.compacted import commit_columns
from spark_udfs.functions import decode_consumer_offsets
from spark_udfs.group_views import (
    EVENT_DETAIL_FIELDS,
    GROUP_STATES_SCHEMA,
    GROUP_TIMELINES_SCHEMA,
    MEMBER_EPOCHS_SCHEMA,
    group_events,
    group_rows,
    member_epoch_rows,
    replayed,
)
from spark_udfs.session import kafka_log_reader

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "downgrade_findings",
    "group_lag",
    "group_states",
    "group_timelines",
    "log_ends",
    "member_epochs",
    "offset_history",
    "partition_lag",
    "read_dump",
    "read_log_ends",
    "read_share_states",
    "share_lag",
]

_EARLIEST: Final = -(1 << 63)
"""The time of a log end known at any time (empty segments, a checkpoint)."""


# ------------------------------------------------------------------------------------ input


def _millis(col: str) -> Column:
    from pyspark.sql import functions as F

    return F.floor(F.unix_micros(F.col(col)) / 1000).cast("long")


def _cut(raw: DataFrame, as_of: AsOf | None) -> DataFrame:
    """Rows of the batches ``as_of`` keeps (whole batches, as the Python views cut them)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    raw = raw.withColumn("timestampMs", _millis("timestamp"))
    if as_of is None:
        return raw
    batch = Window.partitionBy("file", "batchPosition")
    cut = raw.withColumn("_base", F.min("offset").over(batch)).withColumn(
        "_maxTs", F.max("timestampMs").over(batch)
    )
    keep = F.lit(True)
    if as_of.offset is not None:
        keep = keep & (F.col("_base") <= F.lit(as_of.offset))
    if as_of.timestamp_ms is not None:
        keep = keep & (F.col("_maxTs") <= F.lit(as_of.timestamp_ms))
    return cut.filter(keep).drop("_base", "_maxTs")


def read_dump(
    spark: SparkSession, path: StoragePath | Sequence[StoragePath | str], as_of: AsOf | None = None
) -> DataFrame:
    """The decoded ``__consumer_offsets`` records under ``path`` (broker log dirs, partition
    folders, segments and globs; one replica per partition), cut at ``as_of``, with
    ``timestampMs``. Only the file listing runs on the driver."""
    files = [str(f) for _, found in dump_partitions(path) for f in found]
    raw = kafka_log_reader(spark).option("includeHeaders", "false").load(files)
    return decode_consumer_offsets(_cut(raw, as_of))


def read_log_ends(
    spark: SparkSession, path: StoragePath | Sequence[StoragePath | str]
) -> DataFrame | None:
    """Log end offsets of the data partitions among ``path`` (broker log dirs, partition
    folders and globs, as :mod:`codegen.forensics.inputs` finds them: every
    ``<topic>-<partition>`` folder of a topic that is not internal, those next to a partition
    folder given, and the brokers' ``replication-offset-checkpoint`` files), or None when there
    are none. As :class:`codegen.forensics.inputs.LogEnds`: per partition, each replica's
    segments (the end over time; an empty active segment adds its base offset) or empty
    segments (the active segment's base offset) and each checkpoint's high watermark are
    candidates, and the highest wins (segments before a checkpoint at the same end); rows as
    :func:`log_ends`. The file listing and the checkpoints (a few lines each) are read on the
    driver; the segments on the executors."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    dirs = as_log_dirs(path)
    keys = sorted(
        {
            k
            for k in (*dirs.replicas, *dirs.neighbours, *dirs.checkpoints)
            if not k[0].startswith("__")
        }
    )
    # Candidates in the order LogEnds compares them (the first of equal ends wins).
    replicas: list[tuple[str, int, int, str, int | None]] = []
    files: list[tuple[str, int]] = []
    checkpoints: list[tuple[str, int, int, str, int]] = []
    for k in keys:
        n = 0
        for r in dirs.replicas.get(k) or dirs.neighbours.get(k) or []:
            logs = r.logs()
            if not logs:
                continue
            replicas.append((*k, n, str(r.folder), segment_file_info(logs[-1]).base_offset))
            files.extend((str(f), n) for f in logs)
            n += 1
        for hw, checkpoint in dirs.checkpoints.get(k, []):
            checkpoints.append((*k, n, str(checkpoint), hw))
            n += 1
    if not replicas and not checkpoints:
        return None
    candidate = "topic string, partition int, _replica int, _where string"
    folders = spark.createDataFrame(replicas, f"{candidate}, _activeBase long")
    marks = spark.createDataFrame(checkpoints, f"{candidate}, endOffset long")
    # Per batch of each replica, the end over time (running maxima within the replica).
    running = Window.partitionBy("topic", "partition", "_replica").orderBy("file", "batchPosition")
    running = running.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    steps = _empty_steps(spark)
    if files:
        segment_files = spark.createDataFrame(files, "_given string, _replica int")
        raw = kafka_log_reader(spark).option("includeHeaders", "false").load([f for f, _ in files])
        # The source names a relative path given from the server's folder (Spark Connect).
        given = (F.col("file") == F.col("_given")) | F.col("file").endswith(
            F.concat(F.lit("/"), F.col("_given"))
        )
        steps = (
            _batch_ends(raw.withColumn("timestampMs", _millis("timestamp")))
            .join(F.broadcast(segment_files), given)
            .select(
                "topic",
                F.col("partition").cast("int").alias("partition"),
                "_replica",
                F.max("_ts").over(running).alias("endTime"),
                F.max("_end").over(running).alias("endOffset"),
            )
        )
    per_replica = steps.groupBy("topic", "partition", "_replica").agg(
        F.max("endTime").alias("_lastTime"), F.max("endOffset").alias("_lastEnd")
    )
    replica_ends = folders.join(per_replica, ["topic", "partition", "_replica"], "left").filter(
        F.col("_lastEnd").isNotNull() | F.col("_activeBase").isNotNull()
    )
    # The active segment's base offset: past the last batch (records removed), or the whole
    # log end of a replica whose segments are empty.
    active = replica_ends.select(
        "topic",
        "partition",
        "_replica",
        F.coalesce(F.col("_lastTime"), F.lit(_EARLIEST)).alias("endTime"),
        F.greatest(F.col("_lastEnd"), F.col("_activeBase")).alias("endOffset"),
    )
    candidates = replica_ends.select(
        "topic",
        "partition",
        "_replica",
        "_where",
        F.greatest(F.col("_lastEnd"), F.col("_activeBase")).alias("_last"),
        F.lit(True).alias("history"),
        F.when(F.col("_lastEnd").isNull(), F.lit("empty segments"))
        .otherwise(F.lit("segments"))
        .alias("_source"),
    ).unionByName(
        marks.select(
            "topic",
            "partition",
            "_replica",
            "_where",
            F.col("endOffset").alias("_last"),
            F.lit(False).alias("history"),
            F.lit(REPLICATION_CHECKPOINT).alias("_source"),
        )
    )
    best = candidates.groupBy("topic", "partition").agg(
        F.max(
            F.struct("_last", "history", (-F.col("_replica")).alias("_rank"), "_source", "_where")
        ).alias("_best"),
        F.count("*").alias("_n"),
    )
    source = F.concat(
        F.col("_best._source"),
        F.lit(": "),
        F.col("_best._where"),
        F.when(
            F.col("_n") > 1,
            F.concat(F.lit("; the highest of "), F.col("_n"), F.lit(" replicas/checkpoints")),
        ).otherwise(F.lit("")),
    )
    rows = steps.unionByName(active).unionByName(
        marks.select(
            "topic", "partition", "_replica", F.lit(_EARLIEST).alias("endTime"), "endOffset"
        )
    )
    return (
        rows.join(F.broadcast(best), ["topic", "partition"])
        .filter(F.col("_replica") == -F.col("_best._rank"))
        .select(
            "topic",
            "partition",
            "endTime",
            "endOffset",
            source.alias("logEndSource"),
            F.col("_best.history").alias("history"),
        )
    )


def _empty_steps(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame(
        [], "topic string, partition int, _replica int, endTime long, endOffset long"
    )


def _batch_ends(data: DataFrame) -> DataFrame:
    """Per batch (``file, batchPosition``): its newest timestamp ``_ts`` and ``_end``, one
    past its newest offset."""
    from pyspark.sql import functions as F

    return (
        data.filter(F.col("_error").isNull())
        .groupBy("topic", "partition", "file", "batchPosition")
        .agg(F.max("timestampMs").alias("_ts"), (F.max("offset") + 1).alias("_end"))
    )


def log_ends(data: DataFrame) -> DataFrame:
    """Log end offsets over time of data partitions from their ``kafka-log`` rows (with
    ``timestampMs``): per batch ``topic, partition, endTime, endOffset, logEndSource,
    history``, where ``endTime`` is the newest batch timestamp so far and ``endOffset`` one
    past the newest offset so far (running maxima, as :class:`codegen.forensics.inputs.LogEnds`);
    ``logEndSource`` is ``segments: <folder>`` and ``history`` true. Rows hold no empty
    segment nor checkpoint: :func:`read_log_ends` reads those.

    The batch of a row is its (file, batchPosition); a batch's last offset is its newest
    record's offset (a compacted batch whose last records were removed ends earlier here)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    running = (
        Window.partitionBy("topic", "partition")
        .orderBy("file", "batchPosition")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    folder = F.regexp_replace(F.col("file"), r"/[^/]*$", "")
    return _batch_ends(data).select(
        "topic",
        "partition",
        F.max("_ts").over(running).alias("endTime"),
        F.max("_end").over(running).alias("endOffset"),
        F.concat(
            F.lit("segments: "), F.min(folder).over(Window.partitionBy("topic", "partition"))
        ).alias("logEndSource"),
        F.lit(True).alias("history"),
    )


# ------------------------------------------------------------------------------------ downgrade

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
"""The ``kafka-log`` columns :func:`codegen.views.live.live_rows` reads: only the raw bytes
travel, the few live records are decoded on the executors."""


def _scan_of(rows: pa.Table, partition: int) -> LiveRecords:
    """One ``__consumer_offsets`` partition's rows read as ``downgrade-check`` reads its files
    (:func:`codegen.forensics.downgrade.scan_partition`): its live records, and every record by
    kind."""
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
    return pa.Table.from_pylist(live, schema=_arrow_schema(_LIVE_DDL))


def live_records(decoded: DataFrame) -> DataFrame:
    """Records live after compaction: ``partition, offset, recordType, name, valueVersion,
    group`` (the last record per key in apply order, tombstones removed), as
    :func:`codegen.forensics.downgrade.live_records` gives them."""
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
        return pa.Table.from_pylist(found, schema=_arrow_schema(_FINDINGS_DDL))

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


# ------------------------------------------------------------------------------------ groups

_DETAIL_FIELDS: Final = EVENT_DETAIL_FIELDS


def group_states(decoded: DataFrame, shares: DataFrame | None = None) -> DataFrame:
    """Each group at the end of ``decoded`` (cut it with :func:`read_dump`'s ``as_of``), as
    :func:`codegen.forensics.groups.group_reports` lists them: ``partition, group, type, state,
    protocolType, protocol, generation, epoch, members, committedOffsets, assignors``. Each
    partition's records are replayed on the executors through the command line's
    :class:`codegen.forensics.groups.GroupsView` (:mod:`spark_udfs.group_views`).

    ``type`` is ``classic``, ``consumer``, ``share`` or ``streams``; a deleted group is listed
    with ``type`` null and state ``Dead`` (its timeline is in :func:`group_timelines`), and a
    group that only has committed offsets is an ``Empty`` classic group, as Kafka loads it.
    ``members`` is sorted by member id, each ``memberId, clientId, clientHost, instanceId,
    assignors, subscribedTopics, assignment, memberEpoch`` (a classic member's ``assignors`` is
    null: the log does not hold the list it advertised). ``assignors`` is the KIP-726
    inventory (``chosen, chosenOverTime, advertised, common, subscriptionVersions,
    cooperativeSwitch, why``) of :func:`codegen.forensics.groups.assignor_inventory`; null for
    a dead group. With ``shares`` (:func:`read_share_states`), a share group's
    ``sharePartitions`` are its partitions' states, by topic and partition (null for the other
    groups, and without ``shares``)."""
    from pyspark.sql import functions as F

    full = replayed(decoded, group_rows, GROUP_STATES_SCHEMA)
    share_partitions: Column = F.lit(None).cast(f"array<struct<{_SHARE_PARTITION_FIELDS}>>")
    if shares is not None:
        per_group = shares.groupBy("group").agg(
            F.sort_array(
                F.collect_list(F.struct(*(c for c in shares.columns if c != "group")))
            ).alias("_shares")
        )
        full = full.join(F.broadcast(per_group), "group", "left")
        share_partitions = F.when(
            F.col("type") == "share",
            F.coalesce(
                F.col("_shares"), F.array().cast(f"array<struct<{_SHARE_PARTITION_FIELDS}>>")
            ),
        )
    return full.select(
        "partition",
        "group",
        "type",
        "state",
        "protocolType",
        "protocol",
        "generation",
        "epoch",
        "members",
        "committedOffsets",
        "assignors",
        share_partitions.alias("sharePartitions"),
    )


def group_timelines(decoded: DataFrame) -> DataFrame:
    """Every group's timeline, as :class:`codegen.forensics.groups.GroupsView` records it (the
    view itself, replayed per partition on the executors): ``partition, group, applyOffset,
    offset, eventIndex, timestamp, kind, detail``, one row per event; a group's timeline is its
    rows ordered by ``applyOffset, offset, eventIndex`` (``applyOffset``: the record's offset,
    or for a transactional record the offset of the marker that committed it).

    Kinds: ``created`` and ``group-deleted`` (``type``), ``protocol-conversion`` (``from``,
    ``to``), ``rebalance`` (``generation`` of a classic group or ``epoch`` of the others, and
    ``previous``), ``member-joined`` and ``member-left`` (``member``), ``assignor-changed``
    (``previousProtocol``, ``protocol``), ``offset-deleted`` (``topic``, ``partition``) and
    ``member-epoch`` (``member, memberEpoch, previousMemberEpoch, assigned``: per topic id the
    partitions and their assignment epochs, KAFKA-19779). ``detail`` has every field; those
    the kind does not give are null."""
    return replayed(decoded, group_events, GROUP_TIMELINES_SCHEMA)


def member_epochs(decoded: DataFrame) -> DataFrame:
    """The member and assignment epochs over time of consumer-protocol groups (KAFKA-19779):
    one row per partition of each current member assignment record (the ``member-epoch``
    events of :func:`group_timelines`), ``partition, group, applyOffset, offset, timestamp,
    member, memberEpoch, previousMemberEpoch, topicId, topicPartition, assignmentEpoch`` (null
    where the record has no assignment epochs). An assignment without partitions gives one row
    with ``topicId`` null."""
    return replayed(decoded, member_epoch_rows, MEMBER_EPOCHS_SCHEMA)


# ------------------------------------------------------------------------------------ lag

_HISTORY_DDL: Final = (
    "logPartition int, applyIndex long, group string, topic string, partition int, "
    "recordOffset long, commitTimestamp long, offset long, leaderEpoch int, metadata string, "
    "expireTimestamp long, isTombstone boolean"
)
_OFFSET_HISTORY_DDL: Final = (
    "group string, topic string, partition int, seq int, recordOffset long, "
    "commitTimestamp long, offset long, leaderEpoch int, logEndOffset long, lag long"
)
_PARTITION_LAG_DDL: Final = (
    "group string, topic string, partition int, live boolean, deletedAt array<long>, "
    "windowCommits long, logEndOffset long, logEndSource string, lag long, status string, "
    "now long"
)
_ENDS_DDL: Final = (
    "topic string, partition int, endTime long, endOffset long, logEndSource string, "
    "history boolean"
)


def _commit_history(decoded: DataFrame) -> DataFrame:
    """Every commit and tombstone that took effect (:func:`codegen.views.offsets.history`, one
    log partition per call), with ``applyIndex``, its place in its log partition's history."""
    return (
        commit_columns(decoded)
        .groupBy("topic", "partition")
        .applyInArrow(_history_of, _HISTORY_DDL)
    )


def _history_of(key: tuple[pa.Scalar, ...], rows: pa.Table) -> pa.Table:
    import pyarrow as pa

    from codegen.views.offsets import commit_rows, history

    done = history(commit_rows(rows))
    n = done.num_rows
    return done.add_column(0, "applyIndex", pa.array(range(n), pa.int64())).add_column(
        0, "logPartition", pa.repeat(key[1].cast(pa.int32()), n)
    )


def _by_data_partition(
    history: DataFrame, ends: DataFrame | None, answer: Callable[..., pa.Table], ddl: str
) -> DataFrame:
    """``answer(history, ends)`` per data partition (``topic, partition``): its commits' rows
    and its log end rows (none without ``ends``)."""
    by_key = history.groupBy("topic", "partition")
    if ends is None:
        ends = history.sparkSession.createDataFrame([], _ENDS_DDL)
    return by_key.cogroup(ends.groupBy("topic", "partition")).applyInArrow(answer, ddl)


def _log_end(ends: pa.Table) -> LogEnd | None:
    """A data partition's :class:`codegen.forensics.inputs.LogEnd` from its :func:`log_ends`
    rows (running maxima: in time order, the ends grow)."""
    if not ends.num_rows:
        return None
    ordered = ends.sort_by([("endTime", "ascending"), ("endOffset", "ascending")])
    source, _, where = str(ordered.column("logEndSource")[0].as_py()).partition(": ")
    return LogEnd(
        ordered.column("endTime").to_pylist(),
        ordered.column("endOffset").to_pylist(),
        source,
        where,
        bool(ordered.column("history")[0].as_py()),
    )


def _keyed(history: pa.Table) -> Iterator[lag_views.KeyedCommits]:
    """The command line's commits by key (:func:`codegen.forensics.lag.keyed_commits`) of each
    log partition among ``history`` rows."""
    import pyarrow.compute as pc

    from codegen.views.offsets import HISTORY_SCHEMA

    for lp in sorted(set(history.column("logPartition").to_pylist())):
        rows = history.filter(pc.equal(history.column("logPartition"), lp))
        yield lag_views.keyed_commits(rows.sort_by("applyIndex").select(HISTORY_SCHEMA.names))


def _offset_history_of(history: pa.Table, ends: pa.Table) -> pa.Table:
    import numpy as np
    import pyarrow as pa

    end = _log_end(ends)
    tables: list[pa.Table] = []
    for kc in _keyed(history):
        log_end, lag, known = lag_views.commit_lags(kc, [end] * len(kc.keys))
        counts = np.diff(kc.bounds)
        key_of = np.repeat(np.arange(len(kc.keys)), counts)
        columns = {
            "group": pa.array([k[0] for k in kc.keys]).take(key_of),
            "topic": pa.array([k[1] for k in kc.keys]).take(key_of),
            "partition": pa.array([k[2] for k in kc.keys], pa.int32()).take(key_of),
            "seq": pa.array(np.arange(len(key_of)) - np.repeat(kc.bounds[:-1], counts), pa.int32()),
            "recordOffset": kc.record_offset,
            "commitTimestamp": kc.commit_timestamp,
            "offset": kc.offset,
            "leaderEpoch": pa.array(kc.leader_epoch, pa.int32()),
            "logEndOffset": pa.array(log_end, mask=~known),
            "lag": pa.array(lag, mask=~known),
        }
        tables.append(pa.table(columns, schema=_arrow_schema(_OFFSET_HISTORY_DDL)))
    if not tables:
        return _arrow_schema(_OFFSET_HISTORY_DDL).empty_table()
    return pa.concat_tables(tables)


def _arrow_schema(ddl: str) -> pa.Schema:
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


def offset_history(decoded: DataFrame, ends: DataFrame | None = None) -> DataFrame:
    """Every commit that took effect: ``group, topic, partition, seq`` (its place in the
    partition's history, from 0), ``recordOffset, commitTimestamp, offset, leaderEpoch,
    logEndOffset, lag``; the log end offset and lag at the commit's time are null without
    ``ends`` (:func:`log_ends`) for that partition. The command line's definitions
    (:func:`codegen.views.offsets.history` per log partition,
    :func:`codegen.forensics.lag.commit_lags` per data partition)."""
    history = _commit_history(decoded)
    return _by_data_partition(history, ends, _offset_history_of, _OFFSET_HISTORY_DDL)


def _partition_lag_of(window: int, min_commits: int) -> Callable[[pa.Table, pa.Table], pa.Table]:
    def answer(history: pa.Table, ends: pa.Table) -> pa.Table:
        import pyarrow as pa

        out: list[dict[str, Any]] = []
        if history.num_rows:
            end = _log_end(ends)
            now = history.column("_now")[0].as_py()
            for kc in _keyed(history.drop_columns(["_now"])):
                reports = lag_views.partition_lags(
                    kc, [end] * len(kc.keys), now, window, min_commits
                )
                for report in reports:
                    out.append(
                        {
                            "group": report.group,
                            "topic": report.topic,
                            "partition": report.partition,
                            "live": report.live,
                            "deletedAt": report.deleted_at,
                            "windowCommits": min(len(report.history), window),
                            "logEndOffset": report.log_end_offset,
                            "logEndSource": report.log_end_source,
                            "lag": report.lag,
                            "status": report.status,
                            "now": now,
                        }
                    )
        return pa.Table.from_pylist(out, schema=_arrow_schema(_PARTITION_LAG_DDL))

    return answer


def partition_lag(
    decoded: DataFrame,
    ends: DataFrame | None = None,
    window: int = DEFAULT_WINDOW,
    now: int | None = None,
    min_commits: int = DEFAULT_MIN_COMMITS,
) -> DataFrame:
    """Per (group, topic, partition): ``live, deletedAt, windowCommits, logEndOffset,
    logEndSource, lag, status`` at *now* (given, else the newest timestamp of the dump and of
    ``ends``) over the last ``window`` commits, by the rules of
    :func:`codegen.forensics.lag.window_statuses`. A partition whose log end is only a
    checkpoint's (``history`` false in ``ends``) has its lag now and no status. The command
    line's definitions (:func:`codegen.forensics.lag.partition_lags` per data partition)."""
    from pyspark.sql import functions as F

    if window < 1:
        raise ValueError(f"--window {window}: give at least 1 commit")
    if min_commits < 1:
        raise ValueError(f"--min-commits {min_commits}: give at least 1 commit")
    min_commits = min(min_commits, window)
    if now is None:
        newest = decoded.select(F.max("timestampMs").alias("_now"))
        if ends is not None:
            newest = newest.unionByName(ends.select(F.max("endTime").alias("_now")))
        now_col = newest.agg(F.max("_now").cast("long").alias("_now"))
    else:
        now_col = decoded.sparkSession.range(1).select(F.lit(now).cast("long").alias("_now"))
    history = _commit_history(decoded).crossJoin(F.broadcast(now_col))
    answer = _partition_lag_of(window, min_commits)
    return _by_data_partition(history, ends, answer, _PARTITION_LAG_DDL)


def _group_lag_of(key: tuple[pa.Scalar, ...], partitions: pa.Table) -> pa.Table:
    import pyarrow as pa

    status = lag_views.group_status(partitions.column("status").to_pylist())
    return pa.table(
        {"group": [key[0].as_py()], "status": [status]},
        schema=_arrow_schema("group string, status string"),
    )


def group_lag(partitions: DataFrame) -> DataFrame:
    """A group's status from its partitions' (:func:`partition_lag`), as
    :func:`codegen.forensics.lag.group_status` gives it: ``ERR`` when one is ``STOP``,
    ``STALL`` or ``REWIND``, else ``WARN`` when one is ``WARN``, else ``OK``; null when none
    has a status."""
    return (
        partitions.select("group", "status")
        .groupBy("group")
        .applyInArrow(_group_lag_of, "group string, status string")
    )


# ----------------------------------------------------------------------------- share groups

_IN_FLIGHT_TYPE: Final = (
    "struct<firstOffset:bigint,lastOffset:bigint,deliveryState:string,deliveryCount:int>"
)
_SHARE_PARTITION_FIELDS: Final = (
    "topic:string,topicId:string,partition:int,startOffset:bigint,stateEpoch:int,"
    "leaderEpoch:int,snapshotEpoch:int,deliveryCompleteCount:int,delivered:bigint,"
    f"inFlight:array<{_IN_FLIGHT_TYPE}>"
)
_SHARE_STATE_SCHEMA: Final = (
    "group string, topic string, topicId string, partition int, startOffset long, "
    "stateEpoch int, leaderEpoch int, snapshotEpoch int, deliveryCompleteCount int, "
    f"delivered long, inFlight array<{_IN_FLIGHT_TYPE}>"
)


def read_share_states(
    spark: SparkSession, path: StoragePath | Sequence[StoragePath | str]
) -> DataFrame:
    """Every share partition's state at the end of the ``__share_group_state`` partitions
    among ``path`` (no row when there are none): ``group, topic, topicId, partition,
    startOffset, stateEpoch, leaderEpoch, snapshotEpoch, deliveryCompleteCount, delivered,
    inFlight`` (each batch ``firstOffset, lastOffset, deliveryState, deliveryCount``), as
    :func:`codegen.forensics.shares.share_states` gives them (the topic's name from
    ``__cluster_metadata``, null without it; ``delivered``: the records at or after the start
    offset whose delivery is complete). The state is replayed on the driver: one snapshot per
    share partition and its updates, small next to the offset commits."""
    dirs = as_log_dirs(path)
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
        for s in share_states(dirs, cluster_metadata(dirs))
    ]
    return spark.createDataFrame(rows, _SHARE_STATE_SCHEMA)


def share_lag(states: DataFrame, ends: DataFrame | None = None) -> DataFrame:
    """Share partitions (:func:`read_share_states`) with ``logEndOffset``, ``logEndSource`` (the
    partition's last log end in ``ends``, :func:`read_log_ends`) and ``lag``: the log end offset
    minus the start offset minus the records after it already delivered, never below 0
    (KIP-1226, as ``listShareGroupOffsets``); null without a log end (or a topic name)."""
    from pyspark.sql import functions as F

    if ends is None:
        last = states.sparkSession.createDataFrame(
            [], "topic string, partition int, logEndOffset long, logEndSource string"
        )
    else:
        last = ends.groupBy("topic", "partition").agg(
            F.max("endOffset").cast("long").alias("logEndOffset"),
            F.first("logEndSource").alias("logEndSource"),
        )
    end = F.col("logEndOffset")
    return states.join(F.broadcast(last), ["topic", "partition"], "left").withColumn(
        "lag",
        F.when(
            end.isNotNull(),
            F.greatest(end - F.col("startOffset") - F.col("delivered"), F.lit(0)),
        ),
    )
