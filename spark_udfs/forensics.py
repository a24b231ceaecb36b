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
  :func:`codegen.forensics.partition_findings.partition_findings`. The release table is the one of
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

from codegen.dumps import storage
from codegen.dumps.segments import segment_file_info
from codegen.dumps.storage import StoragePath
from codegen.forensics import lag as lag_views
from codegen.forensics.burrow import DEFAULT_MIN_COMMITS, DEFAULT_WINDOW, group_status
from codegen.forensics.cluster import cluster_metadata
from codegen.forensics.commits import KeyedCommits, keyed_commits
from codegen.forensics.coordinator_partitions import (
    LiveRecord,
    LiveRecords,
    dump_partitions,
    scan_partition,
)
from codegen.forensics.groups import AsOf
from codegen.forensics.inputs import NO_CUT, Cut, LogEnd, as_log_dirs
from codegen.forensics.partition_findings import partition_findings
from codegen.forensics.releases import release
from codegen.forensics.shares import DELIVERY_STATES, share_states
from codegen.views.log_ends import EARLIEST, REPLICATION_CHECKPOINT
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

# ------------------------------------------------------------------------------------ input


def _millis(col: str) -> Column:
    from pyspark.sql import functions as F

    return F.floor(F.unix_micros(F.col(col)) / 1000).cast("long")


def _given_file(listed: str = "_given") -> Column:
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
        from codegen.views.cut import kept_batches

        for b in batches:
            yield kept_batches(b, as_of)

    return keep


def kept_batches(spark: SparkSession, files: Sequence[StoragePath | str], as_of: AsOf) -> DataFrame:
    """The batch rows of ``files`` the cut keeps (:func:`codegen.views.cut.kept_batches` per
    Arrow batch), and those that could not be read."""
    rows = batch_rows(spark, files)
    return rows.mapInArrow(_kept(as_of), rows.schema)


def _cut(raw: DataFrame, files: Sequence[StoragePath | str], as_of: AsOf | None) -> DataFrame:
    """``kafka-log`` rows of the batches ``as_of`` keeps (whole batches, by their headers, as
    the command line cuts them), and the rows that could not be read, with ``timestampMs``."""
    from pyspark.sql import functions as F

    raw = raw.withColumn("timestampMs", _millis("timestamp"))
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
    return decode_consumer_offsets(_cut(raw, files, as_of))


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
        .filter(F.col("_error").isNull() & (F.col("recordCount") > 0))
        .agg(F.max("maxTimestamp"))
        .first()
    )
    moment = -1 if newest is None or newest[0] is None else int(newest[0])
    return Cut(as_of, AsOf(timestamp_ms=moment), moment)


_CANDIDATE_DDL: Final = (
    "topic string, partition int, candidate int, source string, where string, "
    "history boolean, endTime long, endOffset long"
)


def _replica_steps(
    cut: AsOf | None,
) -> Callable[[tuple[pa.Scalar, ...], pa.Table, pa.Table], pa.Table]:
    def steps(key: tuple[pa.Scalar, ...], listing: pa.Table, batches: pa.Table) -> pa.Table:
        import pyarrow as pa

        from codegen.views.log_ends import (
            SEGMENT_SCHEMA,
            candidate_rows,
            log_end_steps,
            segments_at,
        )

        schema = _arrow_schema(_CANDIDATE_DDL)
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

    from codegen.views.log_ends import CANDIDATE_SCHEMA, best_log_end

    found = best_log_end(candidates.select(CANDIDATE_SCHEMA.names).cast(CANDIDATE_SCHEMA))
    schema = _arrow_schema(_ENDS_DDL)
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
    (:mod:`codegen.views.log_ends`): each replica's log end over time from its batch rows
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
            .join(F.broadcast(named), _given_file())
        )
        group = ["topic", "partition", "_replica"]
        steps = (
            files.groupBy(*group)
            .cogroup(batches.groupBy(*group))
            .applyInArrow(_replica_steps(cut), _CANDIDATE_DDL)
        )
        candidates = steps.unionByName(candidates)
    return candidates.groupBy("topic", "partition").applyInArrow(_best_end, _ENDS_DDL)


def log_ends(batches: DataFrame) -> DataFrame:
    """Log end offsets over time of data partitions from their batch rows (:func:`batch_rows`,
    ``kafka-log`` with ``rows=batches``): ``topic, partition, endTime, endOffset,
    logEndSource, history`` by the definitions of :mod:`codegen.views.log_ends`, each
    partition's files its segments (in name order), ``logEndSource`` ``segments: <folder>``.
    Rows hold no checkpoint nor other replica: :func:`read_log_ends` reads those."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by_partition = Window.partitionBy("topic", "partition").orderBy("file")
    numbered = batches.withColumn(
        "segment", (F.dense_rank().over(by_partition) - 1).cast("int")
    ).withColumn("_replica", F.lit(0))
    segments = numbered.select(
        "topic",
        "partition",
        "_replica",
        "segment",
        F.regexp_extract(F.col("file"), r"(\d+)\.log$", 1).cast("long").alias("baseOffset"),
        F.regexp_replace(F.col("file"), r"/[^/]*$", "").alias("where"),
    ).distinct()
    group = ["topic", "partition", "_replica"]
    steps = (
        segments.groupBy(*group)
        .cogroup(numbered.groupBy(*group))
        .applyInArrow(_replica_steps(None), _CANDIDATE_DDL)
    )
    return steps.groupBy("topic", "partition").applyInArrow(_best_end, _ENDS_DDL)


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
    return pa.Table.from_pylist(live, schema=_arrow_schema(_LIVE_DDL))


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


def _keyed(history: pa.Table) -> Iterator[KeyedCommits]:
    """The command line's commits by key (:func:`codegen.forensics.commits.keyed_commits`) of each
    log partition among ``history`` rows."""
    import pyarrow.compute as pc

    from codegen.views.offsets import HISTORY_SCHEMA

    for lp in sorted(set(history.column("logPartition").to_pylist())):
        rows = history.filter(pc.equal(history.column("logPartition"), lp))
        yield keyed_commits(rows.sort_by("applyIndex").select(HISTORY_SCHEMA.names))


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
    :func:`codegen.forensics.burrow.window_statuses`. A partition whose log end is only a
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

    status = group_status(partitions.column("status").to_pylist())
    return pa.table(
        {"group": [key[0].as_py()], "status": [status]},
        schema=_arrow_schema("group string, status string"),
    )


def group_lag(partitions: DataFrame) -> DataFrame:
    """A group's status from its partitions' (:func:`partition_lag`), as
    :func:`codegen.forensics.burrow.group_status` gives it: ``ERR`` when one is ``STOP``,
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
        for s in share_states(dirs, lambda: cluster_metadata(dirs), cut=cut)
    ]
    return spark.createDataFrame(rows, _SHARE_STATE_SCHEMA)


def _share_lag_of(now: int | None) -> Callable[[pa.Table, pa.Table], pa.Table]:
    def answer(states: pa.Table, ends: pa.Table) -> pa.Table:
        import pyarrow as pa

        from codegen.forensics.lag import end_at
        from codegen.forensics.shares import share_lag

        end = _log_end(ends)
        n = states.num_rows
        at = None if end is None else (end.last if now is None else end_at(end, now))
        source = None if end is None else f"{end.source}: {end.where}"
        lags = [
            None if at is None else share_lag(at, start, delivered)
            for start, delivered in zip(
                states.column("startOffset").to_pylist(),
                states.column("delivered").to_pylist(),
                strict=True,
            )
        ]
        return (
            states.append_column("logEndOffset", pa.array([at] * n, pa.int64()))
            .append_column("logEndSource", pa.array([source] * n, pa.string()))
            .append_column("lag", pa.array(lags, pa.int64()))
        )

    return answer


def share_lag(
    states: DataFrame, ends: DataFrame | None = None, now: int | None = None
) -> DataFrame:
    """Share partitions (:func:`read_share_states`) with ``logEndOffset``, ``logEndSource`` (the
    partition's log end in ``ends``, :func:`read_log_ends`: at ``now``, else its last) and
    ``lag`` by :func:`codegen.forensics.shares.share_lag` (KIP-1226, as
    ``listShareGroupOffsets``), per partition in ``applyInArrow``; null without a log end (or a
    topic name)."""
    if ends is None:
        ends = states.sparkSession.createDataFrame([], _ENDS_DDL)
    ddl = f"{_SHARE_STATE_SCHEMA}, logEndOffset long, logEndSource string, lag long"
    by = ["topic", "partition"]
    return states.groupBy(*by).cogroup(ends.groupBy(*by)).applyInArrow(_share_lag_of(now), ddl)
