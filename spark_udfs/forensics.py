"""Group forensics as distributed DataFrame operations: the answers of ``codegen.forensics``.

Every function takes the decoded ``__consumer_offsets`` records (:func:`read_dump`, or
:func:`spark_udfs.functions.decode_consumer_offsets` over ``kafka-log`` rows) and returns a
DataFrame computed with windows, ``groupBy`` and aggregations: nothing is collected to the
driver. Each answer reads ``decoded`` once: the columns it needs are kept on the executors
(``localCheckpoint``, memory then local disk) for the many views it joins. The semantics
are those of the Python API, row for row (a test compares them):

- :func:`downgrade_findings`: per live record (last value per key after compaction, not
  tombstoned, transactional records once committed) that a release cannot load, the rule and
  the reason of :func:`codegen.forensics.downgrade.judge`. The release table is the one of
  :mod:`codegen.forensics.releases`, turned into a small broadcast DataFrame.
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

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from codegen.columnar.topics import union_type
from codegen.dumps.consumer_protocol import decode_assignment, decode_subscription
from codegen.dumps.segments import segment_file_info
from codegen.forensics.cluster import cluster_metadata
from codegen.forensics.downgrade import GROUP_RECORD_PREFIXES, dump_partitions, finding_reason
from codegen.forensics.groups import COOPERATIVE, STREAMS_ASSIGNOR, AsOf, server_assignor_why
from codegen.forensics.inputs import REPLICATION_CHECKPOINT, as_log_dirs
from codegen.forensics.lag import DEFAULT_MIN_COMMITS, DEFAULT_WINDOW, ERROR_STATUSES
from codegen.forensics.releases import release
from codegen.forensics.shares import DELIVERY_STATES, share_states
from spark_udfs.compacted import effective_records
from spark_udfs.functions import decode_consumer_offsets
from spark_udfs.session import kafka_log_reader

if TYPE_CHECKING:
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

_OFFSET_RECORDS: Final = ("OffsetCommit", "LegacyOffsetCommit")
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
    spark: SparkSession, path: Path | Sequence[Path | str], as_of: AsOf | None = None
) -> DataFrame:
    """The decoded ``__consumer_offsets`` records under ``path`` (broker log dirs, partition
    folders, segments and globs; one replica per partition), cut at ``as_of``, with
    ``timestampMs``. Only the file listing runs on the driver."""
    files = [str(f) for _, found in dump_partitions(path) for f in found]
    raw = kafka_log_reader(spark).option("includeHeaders", "false").load(files)
    return decode_consumer_offsets(_cut(raw, as_of))


def read_log_ends(spark: SparkSession, path: Path | Sequence[Path | str]) -> DataFrame | None:
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


def _narrow(decoded: DataFrame) -> DataFrame:
    """``decoded`` read once per answer: the columns the answers read, with the offset commit
    fields in ``commit`` and the decoded key and value kept only for the other records (the
    group records, a small part of a dump), materialized on the executors
    (``localCheckpoint``, lazily: by the answer's first job). Every answer joins several views
    of the records; without this each view would read and decode the files again."""
    from pyspark.sql import functions as F

    is_offset = F.col("recordName").isin(*_OFFSET_RECORDS)
    k = F.coalesce(F.col("decodedKey.OffsetCommitKey"), F.col("decodedKey.LegacyOffsetCommitKey"))
    v_new = F.col("decodedValue.OffsetCommitValue")
    v_old = F.col("decodedValue.LegacyOffsetCommitValue")
    commit = F.struct(
        k.group.alias("group"),
        k.topic.alias("topic"),
        k.partition.alias("partition"),
        F.coalesce(v_new.commitTimestamp, v_old.commitTimestamp).alias("commitTimestamp"),
        F.coalesce(v_new.offset, v_old.offset).alias("offset"),
        F.coalesce(v_new.leaderEpoch, F.lit(-1)).alias("leaderEpoch"),
    )
    return decoded.select(
        "topic",
        "partition",
        "offset",
        "timestampMs",
        "producerId",
        "isTransactional",
        "isControl",
        "_error",
        "key",
        "recordType",
        "recordName",
        "isTombstone",
        F.coalesce(F.col("valueVersion").cast("int"), _int16_prefix("value"), F.lit(-1)).alias(
            "valueVersionOrPrefix"
        ),
        F.col("value").isNull().alias("valueIsNull"),
        _group_column().alias("group"),
        F.when(~is_offset, F.col("decodedKey")).alias("decodedKey"),
        F.when(~is_offset, F.col("decodedValue")).alias("decodedValue"),
        F.when(is_offset, commit).alias("commit"),
    ).localCheckpoint(eager=False)


def _effective(records: DataFrame) -> DataFrame:
    """The records of :func:`_narrow` that take effect (:func:`effective_records`), also
    materialized: the answers read them many times, and the transactional records need a
    shuffle to find their markers."""
    return effective_records(records).localCheckpoint(eager=False)


# ------------------------------------------------------------------------------------ downgrade


def _int16_prefix(col: str) -> Column:
    from pyspark.sql import functions as F

    raw = F.conv(F.hex(F.substring(F.col(col), 1, 2)), 16, 10).cast("int")
    value = F.when(raw >= 32768, raw - 65536).otherwise(raw)
    return F.when(F.length(F.col(col)) >= 2, value)


def _group_column() -> Column:
    """The group id of any coordinator key: ``group`` (empty counts as none) or ``groupId``."""
    from pyspark.sql import functions as F

    named: list[Column] = []
    ids: list[Column] = []
    for spec in union_type("consumer_offsets", "coordinator-key"):
        fields = {f.name for f in spec.type}
        if "group" in fields:
            g = F.col(f"decodedKey.{spec.name}.group")
            named.append(F.when(g != "", g))
        elif "groupId" in fields:
            ids.append(F.col(f"decodedKey.{spec.name}.groupId"))
    return F.coalesce(*named, *ids)


def live_records(decoded: DataFrame) -> DataFrame:
    """Records live after compaction: ``partition, offset, recordType, name, valueVersion,
    group`` (the last record per key in apply order, tombstones removed)."""
    return _live_records(_effective(_narrow(decoded)))


def _live_records(rec: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    payload = F.struct(
        F.col("offset").alias("offset"),
        F.col("recordType").cast("int").alias("recordType"),
        F.coalesce(F.col("recordName"), F.lit("unknown")).alias("name"),
        F.col("valueVersionOrPrefix").alias("valueVersion"),
        F.col("group").alias("group"),
        F.col("valueIsNull").alias("deleted"),
    )
    latest = (
        rec.filter(F.col("key").isNotNull())
        .groupBy("partition", "key")
        .agg(F.max_by(payload, F.struct("applyOffset", "offset")).alias("_p"))
    )
    return latest.filter(~F.col("_p.deleted")).select("partition", "_p.*").drop("deleted")


def _release_table(spark: SparkSession, to: str) -> tuple[DataFrame, bool, str]:
    target = release(to)
    rows = [
        (t, r.name, r.highest_value_version, r.highest_is_flexible)
        for t, r in sorted(target.record_types.items())
    ]
    table = spark.createDataFrame(
        rows, "recordType int, readsName string, highest int, highestIsFlexible boolean"
    )
    return table, target.ignores_unknown, target.line


def downgrade_findings(decoded: DataFrame, to: str) -> DataFrame:
    """Live records release ``to`` cannot load (or skips): ``rule, partition, offset,
    recordType, name, valueVersion, group, reason``, as
    :func:`codegen.forensics.downgrade.check_downgrade` finds them (``rule`` ``ignored`` is not
    blocking). Raises :class:`~codegen.forensics.releases.UnknownReleaseError` for an unknown
    release."""
    from pyspark.sql import functions as F

    table, ignores_unknown, line = _release_table(decoded.sparkSession, to)
    live = live_records(decoded).join(F.broadcast(table), "recordType", "left")
    name, version = F.col("name"), F.col("valueVersion")
    group_state = name.startswith(GROUP_RECORD_PREFIXES[0])
    for prefix in GROUP_RECORD_PREFIXES[1:]:
        group_state = group_state | name.startswith(prefix)
    group_state = (name != "unknown") & group_state
    unknown = F.col("highest").isNull()
    newer = version > F.col("highest")
    readable_newer = F.lit(ignores_unknown) & F.col("highestIsFlexible")
    rule = (
        F.when(unknown & group_state, F.lit("group-conversion"))
        .when(unknown & F.lit(ignores_unknown), F.lit("ignored"))
        .when(unknown, F.lit("unknown-type"))
        .when(newer & ~readable_newer, F.lit("value-version"))
    )
    # The wording is the Python API's own, for the few rows that are findings.
    reason = F.udf(
        lambda partition, offset, rtype, rname, rversion, group: finding_reason(
            partition, offset, rtype, rname, rversion, group, line
        ),
        "string",
    )(
        F.col("partition"),
        F.col("offset"),
        F.col("recordType"),
        name,
        version,
        F.col("group"),
    )
    return (
        live.withColumn("_rule", rule)
        .filter(F.col("_rule").isNotNull())
        .select(
            F.col("_rule").alias("rule"),
            "partition",
            "offset",
            "recordType",
            "name",
            "valueVersion",
            "group",
            reason.alias("reason"),
        )
    )


# ------------------------------------------------------------------------------------ groups

_MEMBER_TYPE: Final = (
    "struct<memberId:string,clientId:string,clientHost:string,instanceId:string,"
    "assignors:array<string>,subscribedTopics:array<string>,"
    "assignment:map<string,array<int>>,memberEpoch:int>"
)
_INVENTORY_TYPE: Final = (
    "struct<chosen:string,chosenOverTime:array<string>,advertised:map<string,array<string>>,"
    "common:array<string>,subscriptionVersions:map<string,int>,cooperativeSwitch:string,"
    "why:string>"
)
_ASSIGNED_TYPE: Final = "map<string,struct<partitions:array<int>,assignmentEpochs:array<int>>>"
_DETAIL_FIELDS: Final = (
    ("type", "string"),
    ("from", "string"),
    ("to", "string"),
    ("generation", "int"),
    ("epoch", "int"),
    ("previous", "int"),
    ("member", "string"),
    ("topic", "string"),
    ("partition", "int"),
    ("protocol", "string"),
    ("previousProtocol", "string"),
    ("memberEpoch", "int"),
    ("previousMemberEpoch", "int"),
    ("assigned", _ASSIGNED_TYPE),
)
_EVENT_TYPE: Final = (
    "struct<kind:string,detail:struct<"
    + ",".join(f"`{name}`:{kind}" for name, kind in _DETAIL_FIELDS)
    + ">>"
)
_GROUP_KINDS: Final = (
    ("ConsumerGroup", "consumer"),
    ("ShareGroup", "share"),
    ("StreamsGroup", "streams"),
)
_STATE_PARTS: Final = ("Metadata", "MemberMetadata", "CurrentMemberAssignment")
_SERVER_ASSIGNOR_WHY: Final = server_assignor_why("")
"""After the group type (``consumer``, ``share``, ``streams``)."""


def _member_payloads(subscription: Column, assignment: Column) -> Column:
    """A classic consumer member's subscribed topics, assignment and subscription version,
    decoded as the Python view decodes them (with its fallbacks for clients that sent older
    layouts)."""
    from pyspark.sql import functions as F

    udf = F.udf(
        lambda sub, asg: _decode_payloads(sub, asg),
        "struct<topics:array<string>,partitions:map<string,array<int>>,version:int>",
    )
    return udf(subscription, assignment)


def _decode_payloads(
    subscription: bytes | None, assignment: bytes | None
) -> tuple[list[str], dict[str, list[int]], int | None]:
    sub = decode_subscription(subscription) if subscription is not None else None
    parts = decode_assignment(assignment).partitions if assignment is not None else {}
    return (sub.topics if sub else []), parts, (sub.version if sub else None)


def _by_member_id(members: Column) -> Column:
    """``members`` sorted by ``memberId`` (maps in the structs make them unorderable)."""
    from pyspark.sql import functions as F

    return F.array_sort(
        members,
        lambda a, b: (
            F.when(a.memberId < b.memberId, -1).when(a.memberId > b.memberId, 1).otherwise(0)
        ),
    )


def _uuid(topic_id: Column) -> Column:
    """A topic id as Python prints a UUID (the decoders give Kafka's base64 form)."""
    from pyspark.sql import functions as F

    return F.regexp_replace(
        F.lower(F.hex(F.unbase64(topic_id))),
        "^(.{8})(.{4})(.{4})(.{4})(.{12})$",
        "$1-$2-$3-$4-$5",
    )


def _of_kinds(
    part: str, field: str, kinds: tuple[str, ...] = ("Consumer", "Share", "Streams")
) -> Column:
    """``field`` of the ``<Kind>Group<part>`` value, whichever kind the record is."""
    from pyspark.sql import functions as F

    return F.coalesce(*(F.col(f"decodedValue.{k}Group{part}Value.{field}") for k in kinds))


def _assignment_values() -> tuple[Column, Column, Column, Column]:
    """A current member assignment record's ``assignment`` (topic id, or streams subtopology,
    -> partitions), ``assigned`` (topic id -> partitions and assignment epochs, as the
    member-epoch event gives them), member epoch and previous member epoch."""
    from pyspark.sql import functions as F

    consumer = F.col("decodedValue.ConsumerGroupCurrentMemberAssignmentValue.assignedPartitions")
    share = F.col("decodedValue.ShareGroupCurrentMemberAssignmentValue.assignedPartitions")
    streams = F.col("decodedValue.StreamsGroupCurrentMemberAssignmentValue.activeTasks")
    assignment = F.coalesce(
        F.map_from_entries(
            F.transform(consumer, lambda t: F.struct(_uuid(t.topicId), t.partitions))
        ),
        F.map_from_entries(F.transform(share, lambda t: F.struct(_uuid(t.topicId), t.partitions))),
        F.map_from_entries(F.transform(streams, lambda t: F.struct(t.subtopologyId, t.partitions))),
    )
    no_epochs = F.lit(None).cast("array<int>")
    assigned = F.coalesce(
        F.map_from_entries(
            F.transform(
                consumer,
                lambda t: F.struct(
                    _uuid(t.topicId),
                    F.struct(
                        t.partitions.alias("partitions"),
                        t.assignmentEpochs.alias("assignmentEpochs"),
                    ),
                ),
            )
        ),
        F.map_from_entries(
            F.transform(
                share,
                lambda t: F.struct(
                    _uuid(t.topicId),
                    F.struct(t.partitions.alias("partitions"), no_epochs.alias("assignmentEpochs")),
                ),
            )
        ),
        F.create_map().cast(_ASSIGNED_TYPE),
    )
    return (
        assignment,
        assigned,
        _of_kinds("CurrentMemberAssignment", "memberEpoch"),
        _of_kinds("CurrentMemberAssignment", "previousMemberEpoch"),
    )


def _group_records(rec: DataFrame) -> DataFrame:
    """The records that make a group's state, in apply order per (partition, group): the
    ``GroupMetadata`` records and the metadata, member and current assignment records of the
    other group types, with ``group, kind, part, isDelete`` and the fields the states and
    timelines read (``generation, protocol, protocolType, memberIds`` of a classic value;
    ``epoch, member, membership`` (``add`` or ``remove``) of the others)."""
    from pyspark.sql import functions as F

    kinds = F.when(F.col("recordName") == "GroupMetadata", F.lit("classic"))
    for prefix, kind in _GROUP_KINDS:
        kinds = kinds.when(F.col("recordName").startswith(prefix), F.lit(kind))
    part = F.regexp_replace(F.col("recordName"), "^(Consumer|Share|Streams)Group", "")
    classic = F.col("decodedValue.GroupMetadataValue")
    member_id = F.coalesce(
        *(
            F.col(f"decodedKey.{k}Group{p}Key.memberId")
            for k in ("Consumer", "Share", "Streams")
            for p in ("MemberMetadata", "CurrentMemberAssignment")
        )
    )
    selected = (
        rec.select(
            "partition",
            "offset",
            "applyOffset",
            "timestampMs",
            "isTombstone",
            "decodedKey",
            "decodedValue",
            "group",
            kinds.alias("kind"),
            F.when(F.col("recordName") == "GroupMetadata", F.lit("GroupMetadata"))
            .otherwise(part)
            .alias("part"),
        )
        .filter(F.col("kind").isNotNull())
        .filter((F.col("kind") == "classic") | F.col("part").isin(*_STATE_PARTS))
    )
    value = ~F.col("isTombstone")
    is_member_part = F.col("part").isin("MemberMetadata", "CurrentMemberAssignment")
    return selected.select(
        "*",
        (F.col("part").isin("GroupMetadata", "Metadata") & F.col("isTombstone")).alias("isDelete"),
        F.struct("applyOffset", "offset").alias("pos"),
        classic.generation.alias("generation"),
        classic.protocol.alias("protocol"),
        classic.protocolType.alias("protocolType"),
        F.array_sort(F.array_distinct(F.transform(classic.members, lambda m: m.memberId))).alias(
            "memberIds"
        ),
        F.when(F.col("part") == "Metadata", _of_kinds("Metadata", "epoch")).alias("epoch"),
        member_id.alias("member"),
        F.when(is_member_part & value, F.lit("add"))
        .when((F.col("part") == "MemberMetadata") & F.col("isTombstone"), F.lit("remove"))
        .alias("membership"),
    )


def _sequenced(grec: DataFrame) -> DataFrame:
    """Group records with the replay's bookkeeping, per (partition, group) in apply order:
    ``beforeType`` (the type of the group before the record; null when there was none),
    ``created`` (the record created the group, or replaced it by one of another type),
    ``segment`` (how many creations so far: the records of one life of the group) and, over
    the whole group, ``lastPos`` and ``last`` (its last record's kind and whether it deletes)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by_group = Window.partitionBy("partition", "group")
    order = by_group.orderBy("applyOffset", "offset")
    so_far = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    prev_alive = ~F.coalesce(F.lag("isDelete").over(order), F.lit(True))
    marked = grec.withColumn("beforeType", F.when(prev_alive, F.lag("kind").over(order)))
    created = ~F.col("isDelete") & (
        F.col("beforeType").isNull() | (F.col("beforeType") != F.col("kind"))
    )
    return (
        marked.withColumn("created", created)
        .withColumn("segment", F.sum(F.col("created").cast("int")).over(so_far))
        .withColumn("last", F.max_by(F.struct("kind", "isDelete", "segment"), "pos").over(by_group))
    )


def _classic_states(seq: DataFrame) -> DataFrame:
    """Classic groups alive at the end: the last record is a ``GroupMetadata`` value."""
    from pyspark.sql import functions as F

    latest = (
        seq.filter(
            (F.col("kind") == "classic")
            & ~F.col("last.isDelete")
            & (F.col("last.kind") == "classic")
            & (F.col("segment") == F.col("last.segment"))
        )
        .groupBy("partition", "group")
        .agg(F.max_by(F.col("decodedValue.GroupMetadataValue"), "pos").alias("_v"))
    )
    members = latest.select(
        "partition", "group", "_v.protocolType", "_v.protocol", F.explode("_v.members").alias("m")
    )
    consumer = F.col("protocolType") == "consumer"
    payload = _member_payloads(
        F.when(consumer, F.col("m.subscription")), F.when(consumer, F.col("m.assignment"))
    )
    detail = members.select(
        "partition",
        "group",
        F.struct(
            F.col("m.memberId").alias("memberId"),
            F.col("m.clientId").alias("clientId"),
            F.col("m.clientHost").alias("clientHost"),
            F.col("m.groupInstanceId").alias("instanceId"),
            F.lit(None).cast("array<string>").alias("assignors"),
            F.coalesce(payload.topics, F.array().cast("array<string>")).alias("subscribedTopics"),
            F.coalesce(payload.partitions, F.create_map().cast("map<string,array<int>>")).alias(
                "assignment"
            ),
            F.lit(None).cast("int").alias("memberEpoch"),
        ).alias("member"),
    )
    by_group = detail.groupBy("partition", "group").agg(
        _by_member_id(F.collect_list("member")).alias("members")
    )
    return latest.join(by_group, ["partition", "group"], "left").select(
        "partition",
        "group",
        F.lit("classic").alias("type"),
        F.when(F.size("_v.members") == 0, "Empty").otherwise("Stable").alias("state"),
        F.col("_v.protocolType").alias("protocolType"),
        F.col("_v.protocol").alias("protocol"),
        F.col("_v.generation").alias("generation"),
        F.lit(None).cast("int").alias("epoch"),
        F.coalesce(F.col("members"), F.array().cast(f"array<{_MEMBER_TYPE}>")).alias("members"),
    )


def _member_states(seq: DataFrame) -> DataFrame:
    """Consumer, share and streams groups alive at the end, from the records of their last
    life (after the deletion, or the record of another type, that ended the previous one)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    current = seq.filter(
        ~F.col("last.isDelete")
        & (F.col("last.kind") != "classic")
        & (F.col("segment") == F.col("last.segment"))
    )
    epochs = (
        current.filter(F.col("part") == "Metadata")
        .groupBy("partition", "group")
        .agg(F.max_by("epoch", "pos").alias("epoch"))
    )
    mem = current.filter(F.col("part") != "Metadata")
    pos = F.col("pos")
    is_meta = F.col("part") == "MemberMetadata"
    removed = is_meta & F.col("isTombstone")
    member_window = Window.partitionBy("partition", "group", "member")
    since = mem.withColumn("_removedAt", F.max(F.when(removed, pos)).over(member_window)).filter(
        F.col("_removedAt").isNull() | (pos > F.col("_removedAt"))
    )
    meta = F.struct(
        _of_kinds("MemberMetadata", "clientId").alias("clientId"),
        _of_kinds("MemberMetadata", "clientHost").alias("clientHost"),
        _of_kinds("MemberMetadata", "instanceId", ("Consumer", "Streams")).alias("instanceId"),
        _of_kinds("MemberMetadata", "subscribedTopicNames", ("Consumer", "Share")).alias(
            "subscribedTopics"
        ),
        F.col("decodedValue.ConsumerGroupMemberMetadataValue.serverAssignor").alias("assignor"),
    )
    assignment, _, member_epoch, _ = _assignment_values()
    asg = F.struct(
        F.col("isTombstone").alias("gone"),
        assignment.alias("assignment"),
        member_epoch.alias("memberEpoch"),
    )
    per_member = since.groupBy("partition", "group", "member").agg(
        F.max_by(F.when(is_meta, meta), F.when(is_meta, pos)).alias("_meta"),
        F.max_by(F.when(~is_meta, asg), F.when(~is_meta, pos)).alias("_asg"),
        F.max(F.when(~is_meta & ~F.col("isTombstone"), F.lit(True))).alias("_anyAsg"),
    )
    # A member exists once a metadata or assignment value created it (after its last removal).
    present = per_member.filter(F.col("_meta").isNotNull() | F.coalesce("_anyAsg", F.lit(False)))
    live_asg = F.when(~F.col("_asg.gone"), F.col("_asg"))
    assignor = F.col("_meta.assignor")
    member = F.struct(
        F.col("member").alias("memberId"),
        F.coalesce(F.col("_meta.clientId"), F.lit("")).alias("clientId"),
        F.coalesce(F.col("_meta.clientHost"), F.lit("")).alias("clientHost"),
        F.col("_meta.instanceId").alias("instanceId"),
        F.when(assignor.isNotNull() & (assignor != ""), F.array(assignor))
        .otherwise(F.array().cast("array<string>"))
        .alias("assignors"),
        F.coalesce(F.col("_meta.subscribedTopics"), F.array().cast("array<string>")).alias(
            "subscribedTopics"
        ),
        F.coalesce(live_asg.assignment, F.create_map().cast("map<string,array<int>>")).alias(
            "assignment"
        ),
        live_asg.memberEpoch.alias("memberEpoch"),
    )
    members = present.groupBy("partition", "group").agg(
        _by_member_id(F.collect_list(member)).alias("members"),
        F.min(live_asg.memberEpoch).alias("_minEpoch"),
    )
    groups = current.select("partition", "group", F.col("last.kind").alias("type")).distinct()
    joined = groups.join(epochs, ["partition", "group"], "left").join(
        members, ["partition", "group"], "left"
    )
    count = F.when(F.col("members").isNull(), 0).otherwise(F.size("members"))
    return joined.select(
        "partition",
        "group",
        "type",
        F.when(count == 0, "Empty")
        .when(F.col("epoch").isNotNull() & (F.col("_minEpoch") < F.col("epoch")), "Reconciling")
        .otherwise("Stable")
        .alias("state"),
        F.col("type").alias("protocolType"),  # as listGroups gives it
        F.lit(None).cast("string").alias("protocol"),
        F.lit(None).cast("int").alias("generation"),
        "epoch",
        F.coalesce(F.col("members"), F.array().cast(f"array<{_MEMBER_TYPE}>")).alias("members"),
    )


def _classic_history(seq: DataFrame) -> DataFrame:
    """Per classic group of consumers: the assignors chosen in order of first use, and each
    member's subscription version in the last ``GroupMetadata`` value of protocol type
    ``consumer`` (what :class:`codegen.forensics.groups.GroupsView` keeps, across deletions)."""
    from pyspark.sql import functions as F

    values = seq.filter(
        (F.col("kind") == "classic") & ~F.col("isTombstone") & (F.col("protocolType") == "consumer")
    )
    chosen = (
        values.filter(F.col("protocol").isNotNull() & (F.col("protocol") != ""))
        .groupBy("partition", "group", "protocol")
        .agg(F.min("pos").alias("_first"))
        .groupBy("partition", "group")
        .agg(F.array_sort(F.collect_list(F.struct("_first", "protocol"))).alias("_chosen"))
        .select("partition", "group", F.col("_chosen.protocol").alias("chosenOverTime"))
    )
    last = values.groupBy("partition", "group").agg(
        F.max_by(F.col("decodedValue.GroupMetadataValue.members"), "pos").alias("_members")
    )
    # (A Python UDF cannot run inside a higher-order function: explode the members.)
    members = last.select("partition", "group", F.explode("_members").alias("m"))
    version = _member_payloads(F.col("m.subscription"), F.lit(None).cast("binary")).version
    versions = members.groupBy("partition", "group").agg(
        F.map_from_entries(F.collect_list(F.struct(F.col("m.memberId"), version))).alias(
            "subscriptionVersions"
        )
    )
    # The last assignor any GroupMetadata value chose (GroupsView.last_protocol).
    last = (
        seq.filter(
            (F.col("kind") == "classic")
            & ~F.col("isTombstone")
            & F.col("protocol").isNotNull()
            & (F.col("protocol") != "")
        )
        .groupBy("partition", "group")
        .agg(F.max_by("protocol", "pos").alias("lastProtocol"))
    )
    return chosen.join(versions, ["partition", "group"], "full").join(
        last, ["partition", "group"], "full"
    )


def _inventory(states: DataFrame) -> Column:
    """The KIP-726 assignor inventory of :func:`codegen.forensics.groups.assignor_inventory`
    from a group state row with ``chosenOverTime`` and ``subscriptionVersions``."""
    from pyspark.sql import functions as F

    members = F.coalesce(F.col("members"), F.array().cast(f"array<{_MEMBER_TYPE}>"))
    ids = F.transform(members, lambda m: m.memberId)
    versions = F.coalesce(F.col("subscriptionVersions"), F.create_map().cast("map<string,int>"))
    old = F.array_sort(F.map_keys(F.map_filter(versions, lambda _, v: v < 1)))
    protocol = F.col("protocol")
    # An empty group has no protocol: judge the one it ran last.
    current = F.when(protocol.isNotNull() & (protocol != ""), protocol).otherwise(
        F.col("lastProtocol")
    )
    chosen_over_time = F.coalesce(F.col("chosenOverTime"), F.array().cast("array<string>"))
    not_consumers = F.col("protocolType").isNotNull() & (F.col("protocolType") != "consumer")
    streams = (current == STREAMS_ASSIGNOR) | F.array_contains(chosen_over_time, STREAMS_ASSIGNOR)
    no_current = current.isNull()
    verdict = (
        F.when(not_consumers | streams | no_current, F.lit(None).cast("string"))
        .when(current == COOPERATIVE, "done")
        .when(F.size(old) > 0, "not-possible")
        .otherwise("two-step")
    )
    why = (
        F.when(
            not_consumers,
            F.concat(
                F.lit("protocol type '"),
                F.col("protocolType"),
                F.lit("': not consumers, no consumer assignor to switch"),
            ),
        )
        .when(
            streams,
            F.lit(
                "a Kafka Streams application (assignor 'stream'): it rebalances cooperatively "
                "from 2.4 on (KIP-429), there is no cooperative-sticky switch to make"
            ),
        )
        .when(
            no_current,
            F.lit(
                "no assignor was ever chosen in the log (only offsets committed): nothing to switch"
            ),
        )
        .when(current == COOPERATIVE, F.lit("the group already runs cooperative-sticky"))
        .when(
            F.size(old) > 0,
            F.concat(
                F.lit("member(s) "),
                F.array_join(old, ", "),
                F.lit(
                    " send consumer-protocol subscription v0, without owned partitions (Java "
                    "clients before 2.4 or other clients without KIP-429): they cannot rebalance "
                    "cooperatively; upgrade those clients first"
                ),
            ),
        )
        .otherwise(
            F.concat(
                F.lit(
                    "the log holds only the chosen assignor's subscription, not each member's "
                    f"list: roll out [{COOPERATIVE}, "
                ),
                current,
                F.lit(f"] to every member, then [{COOPERATIVE}] alone (KIP-429)"),
            )
        )
    )
    classic = F.struct(
        protocol.alias("chosen"),
        F.coalesce(F.col("chosenOverTime"), F.array().cast("array<string>")).alias(
            "chosenOverTime"
        ),
        F.map_from_entries(
            F.transform(ids, lambda m: F.struct(m, F.lit(None).cast("array<string>")))
        ).alias("advertised"),
        F.lit(None).cast("array<string>").alias("common"),
        versions.alias("subscriptionVersions"),
        verdict.alias("cooperativeSwitch"),
        why.alias("why"),
    )
    server = F.array_sort(F.array_distinct(F.flatten(F.transform(members, lambda m: m.assignors))))
    others = F.struct(
        F.when(F.size(server) == 1, server[0]).alias("chosen"),
        server.alias("chosenOverTime"),
        F.map_from_entries(F.transform(members, lambda m: F.struct(m.memberId, m.assignors))).alias(
            "advertised"
        ),
        F.when(F.size(server) > 0, server).alias("common"),
        F.create_map().cast("map<string,int>").alias("subscriptionVersions"),
        F.lit(None).cast("string").alias("cooperativeSwitch"),
        F.concat(F.col("type"), F.lit(_SERVER_ASSIGNOR_WHY)).alias("why"),
    )
    return (
        F.when(F.col("type").isNull(), F.lit(None).cast(_INVENTORY_TYPE))
        .when(F.col("type") == "classic", classic)
        .otherwise(others)
    )


def group_states(decoded: DataFrame, shares: DataFrame | None = None) -> DataFrame:
    """Each group at the end of ``decoded`` (cut it with :func:`read_dump`'s ``as_of``), as
    :func:`codegen.forensics.groups.group_reports` lists them: ``partition, group, type, state,
    protocolType, protocol, generation, epoch, members, committedOffsets, assignors``.

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

    rec = _effective(_narrow(decoded))
    seq = _sequenced(_group_records(rec))
    live = _classic_states(seq).unionByName(_member_states(seq))
    offsets = (
        _latest_offsets(rec)
        .groupBy("partition", "group")
        .agg(F.count("*").alias("committedOffsets"))
    )
    existed = seq.filter(F.col("created")).select("partition", "group").distinct()
    # Only committed offsets, and never a group record: Kafka loads an empty classic group.
    offsets_only = (
        offsets.join(existed, ["partition", "group"], "left_anti")
        .select("partition", "group", "committedOffsets")
        .withColumn("type", F.lit("classic"))
    )
    # Dead: existed and is gone, or never existed and only has its offsets' deletions.
    deleted_offsets = (
        _offset_deletions(rec)
        .select(F.col("_logPartition").alias("partition"), "group")
        .distinct()
        .join(existed, ["partition", "group"], "left_anti")
        .join(offsets, ["partition", "group"], "left_anti")
    )
    dead = (
        existed.join(live, ["partition", "group"], "left_anti")
        .unionByName(deleted_offsets)
        .join(offsets, ["partition", "group"], "left")
        .withColumn("state", F.lit("Dead"))
    )
    full = (
        live.join(offsets, ["partition", "group"], "left")
        .unionByName(offsets_only, allowMissingColumns=True)
        .unionByName(dead, allowMissingColumns=True)
        .join(_classic_history(seq), ["partition", "group"], "left")
    )
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
        F.coalesce(F.col("state"), F.lit("Empty")).alias("state"),
        "protocolType",
        "protocol",
        "generation",
        "epoch",
        F.coalesce(F.col("members"), F.array().cast(f"array<{_MEMBER_TYPE}>")).alias("members"),
        F.coalesce(F.col("committedOffsets"), F.lit(0)).alias("committedOffsets"),
        _inventory(full).alias("assignors"),
        share_partitions.alias("sharePartitions"),
    )


def _event(kind: str | Column, **detail: Column) -> Column:
    """One timeline event: ``kind`` and the ``detail`` struct (the fields the kind gives)."""
    from pyspark.sql import functions as F

    unknown = set(detail) - {name for name, _ in _DETAIL_FIELDS}
    assert not unknown, unknown
    fields = [
        (detail[name] if name in detail else F.lit(None)).cast(spark_type).alias(name)
        for name, spark_type in _DETAIL_FIELDS
    ]
    kind_col = F.lit(kind) if isinstance(kind, str) else kind
    return F.struct(kind_col.alias("kind"), F.struct(*fields).alias("detail"))


def _events_if(condition: Column, events: Column) -> Column:
    from pyspark.sql import functions as F

    return F.when(condition, events).otherwise(F.array().cast(f"array<{_EVENT_TYPE}>"))


def _offset_deletions(rec: DataFrame) -> DataFrame:
    """Tombstones of committed offsets that existed (the key's previous record is a value)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order = Window.partitionBy("_logPartition", "group", "topic", "partition").orderBy(
        "applyOffset", "recordOffset"
    )
    rows = _offset_rows(rec).withColumn("_prevGone", F.lag("isTombstone").over(order))
    return rows.filter(F.col("isTombstone") & ~F.col("_prevGone"))


def _event_columns() -> list[str | Column]:
    """The columns of a timeline event row, from rows whose ``_e`` is the event struct."""
    from pyspark.sql import functions as F

    return [
        "partition",
        "group",
        "applyOffset",
        "offset",
        "eventIndex",
        "timestamp",
        F.col("_e.kind").alias("kind"),
        F.col("_e.detail").alias("detail"),
    ]


def group_timelines(decoded: DataFrame) -> DataFrame:
    """Every group's timeline, as :class:`codegen.forensics.groups.GroupsView` records it:
    ``partition, group, applyOffset, offset, eventIndex, timestamp, kind, detail``, one row per
    event; a group's timeline is its rows ordered by ``applyOffset, offset, eventIndex``.

    Kinds: ``created`` and ``group-deleted`` (``type``), ``protocol-conversion`` (``from``,
    ``to``), ``rebalance`` (``generation`` of a classic group or ``epoch`` of the others, and
    ``previous``), ``member-joined`` and ``member-left`` (``member``), ``assignor-changed``
    (``previousProtocol``, ``protocol``), ``offset-deleted`` (``topic``, ``partition``) and
    ``member-epoch`` (``member, memberEpoch, previousMemberEpoch, assigned``: per topic id the
    partitions and their assignment epochs, KAFKA-19779). ``detail`` has every field; those
    the kind does not give are null."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rec = _effective(_narrow(decoded))
    seq = _sequenced(_group_records(rec))
    order = Window.partitionBy("partition", "group").orderBy("applyOffset", "offset")
    before = order.rowsBetween(Window.unboundedPreceding, -1)
    by_member = (
        Window.partitionBy("partition", "group", "member")
        .orderBy("applyOffset", "offset")
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    protocol = F.col("protocol")
    is_classic_value = (F.col("kind") == "classic") & ~F.col("isTombstone")
    truthy_protocol = F.when(is_classic_value & protocol.isNotNull() & (protocol != ""), protocol)
    epoch_at = F.when(F.col("epoch").isNotNull(), F.struct("segment", "epoch"))
    membership_at = F.when(F.col("membership").isNotNull(), F.struct("segment", "membership"))
    known = seq.select(
        "*",
        F.lag("generation").over(order).alias("_prevGeneration"),
        F.lag("memberIds").over(order).alias("_prevMembers"),
        F.last(truthy_protocol, ignorenulls=True).over(before).alias("_lastProtocol"),
        F.last(F.when(F.col("created"), F.col("kind")), ignorenulls=True)
        .over(before)
        .alias("_lastCreated"),
        F.last(epoch_at, ignorenulls=True).over(before).alias("_prevEpochAt"),
        F.last(membership_at, ignorenulls=True).over(by_member).alias("_prevMembershipAt"),
    )
    created = F.col("created")
    kind = F.col("kind")
    classic_value = is_classic_value
    other = (kind != "classic") & ~F.col("isDelete")
    prev_epoch = F.when(
        F.col("_prevEpochAt.segment") == F.col("segment"), F.col("_prevEpochAt.epoch")
    )
    prev_membership = F.when(
        F.col("_prevMembershipAt.segment") == F.col("segment"),
        F.col("_prevMembershipAt.membership"),
    )
    ids = F.col("memberIds")
    prev_ids = F.when(created, F.array().cast("array<string>")).otherwise(F.col("_prevMembers"))
    joined = F.array_sort(F.array_except(ids, prev_ids))
    left = F.array_sort(F.array_except(prev_ids, ids))
    member = F.col("member")
    _, assigned, member_epoch, previous_member_epoch = _assignment_values()
    events = F.concat(
        _events_if(
            F.col("isDelete") & F.col("beforeType").isNotNull(),
            F.array(_event("group-deleted", type=F.col("beforeType"))),
        ),
        _events_if(created, F.array(_event("created", type=kind))),
        _events_if(
            created & F.col("_lastCreated").isNotNull() & (F.col("_lastCreated") != kind),
            F.array(_event("protocol-conversion", **{"from": F.col("_lastCreated"), "to": kind})),
        ),
        _events_if(
            classic_value & ~created & ~F.col("generation").eqNullSafe(F.col("_prevGeneration")),
            F.array(
                _event(
                    "rebalance",
                    generation=F.col("generation"),
                    previous=F.col("_prevGeneration"),
                )
            ),
        ),
        _events_if(
            other & ~created & F.col("epoch").isNotNull() & ~F.col("epoch").eqNullSafe(prev_epoch),
            F.array(_event("rebalance", epoch=F.col("epoch"), previous=prev_epoch)),
        ),
        _events_if(classic_value, F.transform(joined, lambda m: _event("member-joined", member=m))),
        _events_if(
            other
            & (F.col("membership") == "add")
            & (prev_membership.isNull() | (prev_membership == "remove")),
            F.array(_event("member-joined", member=member)),
        ),
        _events_if(classic_value, F.transform(left, lambda m: _event("member-left", member=m))),
        _events_if(
            other & (F.col("membership") == "remove") & (prev_membership == "add"),
            F.array(_event("member-left", member=member)),
        ),
        _events_if(
            truthy_protocol.isNotNull()
            & F.col("_lastProtocol").isNotNull()
            & (F.col("_lastProtocol") != protocol),
            F.array(
                _event(
                    "assignor-changed", previousProtocol=F.col("_lastProtocol"), protocol=protocol
                )
            ),
        ),
        _events_if(
            (F.col("part") == "CurrentMemberAssignment") & ~F.col("isTombstone"),
            F.array(
                _event(
                    "member-epoch",
                    member=member,
                    memberEpoch=member_epoch,
                    previousMemberEpoch=previous_member_epoch,
                    assigned=assigned,
                )
            ),
        ),
    )
    state_events = known.select(
        "partition",
        "group",
        "applyOffset",
        "offset",
        F.col("timestampMs").alias("timestamp"),
        F.posexplode(events).alias("eventIndex", "_e"),
    ).select(*_event_columns())
    offset_events = (
        _offset_deletions(rec)
        .select(
            F.col("_logPartition").alias("partition"),
            "group",
            "applyOffset",
            F.col("recordOffset").alias("offset"),
            F.lit(0).alias("eventIndex"),
            F.col("timestampMs").alias("timestamp"),
            _event("offset-deleted", topic=F.col("topic"), partition=F.col("partition")).alias(
                "_e"
            ),
        )
        .select(*_event_columns())
    )
    return state_events.unionByName(offset_events)


def member_epochs(decoded: DataFrame) -> DataFrame:
    """The member and assignment epochs over time of consumer-protocol groups (KAFKA-19779):
    one row per partition of each current member assignment record, ``partition, group,
    applyOffset, offset, timestamp, member, memberEpoch, previousMemberEpoch, topicId,
    topicPartition, assignmentEpoch`` (null where the record has no assignment epochs). An
    assignment without partitions gives one row with ``topicId`` null."""
    from pyspark.sql import functions as F

    # The member-epoch events of group_timelines, read from the records they come from.
    grec = _group_records(_effective(_narrow(decoded))).filter(
        (F.col("part") == "CurrentMemberAssignment") & ~F.col("isTombstone")
    )
    _, assigned, member_epoch, previous_member_epoch = _assignment_values()
    events = grec.select(
        "partition",
        "group",
        "applyOffset",
        "offset",
        F.col("timestampMs").alias("timestamp"),
        "member",
        member_epoch.alias("memberEpoch"),
        previous_member_epoch.alias("previousMemberEpoch"),
        assigned.alias("assigned"),
    )
    per_partition = F.flatten(
        F.transform(
            F.map_entries("assigned"),
            lambda e: F.transform(
                e.value.partitions,
                lambda p, i: F.struct(
                    e.key.alias("topicId"),
                    p.alias("topicPartition"),
                    F.try_element_at(e.value.assignmentEpochs, i + 1).alias("assignmentEpoch"),
                ),
            ),
        )
    )
    kept = [
        "partition",
        "group",
        "applyOffset",
        "offset",
        "timestamp",
        "member",
        "memberEpoch",
        "previousMemberEpoch",
    ]
    return events.select(*kept, F.explode_outer(per_partition).alias("_p")).select(
        *kept, "_p.topicId", "_p.topicPartition", "_p.assignmentEpoch"
    )


# ------------------------------------------------------------------------------------ lag


def _offset_rows(rec: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    return rec.filter(F.col("commit").isNotNull()).select(
        F.col("partition").alias("_logPartition"),
        "applyOffset",
        F.col("offset").alias("recordOffset"),
        "isTombstone",
        "timestampMs",
        "commit.group",
        "commit.topic",
        "commit.partition",
        "commit.commitTimestamp",
        "commit.offset",
        "commit.leaderEpoch",
    )


def _latest_offsets(rec: DataFrame) -> DataFrame:
    """Live committed offsets: ``partition`` (of ``__consumer_offsets``), ``group``."""
    from pyspark.sql import functions as F

    rows = _offset_rows(rec)
    latest = rows.groupBy("_logPartition", "group", "topic", "partition").agg(
        F.max_by("isTombstone", F.struct("applyOffset", "recordOffset")).alias("_gone")
    )
    return latest.filter(~F.col("_gone")).select(F.col("_logPartition").alias("partition"), "group")


def offset_history(decoded: DataFrame, ends: DataFrame | None = None) -> DataFrame:
    """Every commit that took effect: ``group, topic, partition, seq`` (its place in the
    partition's history, from 0), ``recordOffset, commitTimestamp, offset, leaderEpoch,
    logEndOffset, lag``; the log end offset and lag at the commit's time are null without
    ``ends`` (:func:`log_ends`) for that partition."""
    return _offset_history(_effective(_narrow(decoded)), ends)


def _offset_history(rec: DataFrame, ends: DataFrame | None) -> DataFrame:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rows = _offset_rows(rec).filter(~F.col("isTombstone"))
    order = Window.partitionBy("group", "topic", "partition").orderBy("applyOffset", "recordOffset")
    commits = rows.withColumn("seq", F.row_number().over(order) - 1)
    if ends is None:
        return commits.select(
            "group",
            "topic",
            "partition",
            "seq",
            "recordOffset",
            "commitTimestamp",
            "offset",
            "leaderEpoch",
            F.lit(None).cast("long").alias("logEndOffset"),
            F.lit(None).cast("long").alias("lag"),
        )
    # An as-of join: each commit takes the last end at or before its time (ends first on ties,
    # the highest end last). A checkpoint's end has no history: no end at a commit's time.
    ends = ends.filter(F.col("history"))
    known = ends.select("topic", "partition").distinct().withColumn("_known", F.lit(True))
    events = commits.select(
        "group",
        "topic",
        "partition",
        "seq",
        "recordOffset",
        "commitTimestamp",
        "offset",
        "leaderEpoch",
        F.col("commitTimestamp").alias("_t"),
        F.lit(1).alias("_k"),
        F.lit(None).cast("long").alias("_end"),
    ).unionByName(
        ends.select(
            "topic",
            "partition",
            F.col("endTime").alias("_t"),
            F.lit(0).alias("_k"),
            F.col("endOffset").cast("long").alias("_end"),
        ),
        allowMissingColumns=True,
    )
    asof = (
        Window.partitionBy("topic", "partition")
        .orderBy("_t", "_k", "_end")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    joined = (
        events.withColumn("_endAt", F.last("_end", ignorenulls=True).over(asof))
        .filter(F.col("_k") == 1)
        .join(F.broadcast(known), ["topic", "partition"], "left")
    )
    end = F.when(F.col("_known"), F.coalesce(F.col("_endAt"), F.lit(0)))
    return joined.select(
        "group",
        "topic",
        "partition",
        "seq",
        "recordOffset",
        "commitTimestamp",
        "offset",
        "leaderEpoch",
        end.alias("logEndOffset"),
        F.when(end.isNotNull(), F.greatest(end - F.col("offset"), F.lit(0))).alias("lag"),
    )


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
    :func:`codegen.forensics.lag.burrow_status`. A partition whose log end is only a
    checkpoint's (``history`` false in ``ends``) has its lag now and no status."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if window < 1:
        raise ValueError(f"--window {window}: give at least 1 commit")
    if min_commits < 1:
        raise ValueError(f"--min-commits {min_commits}: give at least 1 commit")
    min_commits = min(min_commits, window)
    records = _narrow(decoded)
    rec = _effective(records)
    history = _offset_history(rec, ends)
    if now is None:
        newest = records.select(F.max("timestampMs").alias("_now"))
        if ends is not None:
            newest = newest.unionByName(ends.select(F.max("endTime").alias("_now")))
        now_col = newest.agg(F.max("_now").alias("_now"))
    else:
        now_col = decoded.sparkSession.range(1).select(F.lit(now).cast("long").alias("_now"))
    keys = ["group", "topic", "partition"]
    counts = history.groupBy(*keys).agg(F.max("seq").alias("_last"))
    recent = history.join(counts, keys).filter(F.col("seq") > F.col("_last") - window)
    by_seq = Window.partitionBy(*keys).orderBy("seq")
    recent = recent.withColumn("_prevLag", F.lag("lag").over(by_seq)).withColumn(
        "_prevOffset", F.lag("offset").over(by_seq)
    )
    stats = recent.groupBy(*keys).agg(
        F.count("*").alias("_n"),
        F.max(F.col("lag").isNull().cast("int")).alias("_unknown"),
        F.max((F.col("lag") == 0).cast("int")).alias("_zero"),
        F.max_by(F.struct("commitTimestamp", "offset"), "seq").alias("_newest"),
        F.min_by(F.struct("commitTimestamp", "offset"), "seq").alias("_oldest"),
        F.min(
            F.when(F.col("_prevLag").isNotNull(), (F.col("lag") >= F.col("_prevLag")).cast("int"))
        ).alias("_neverShrinks"),
        F.max(
            F.when(F.col("_prevOffset").isNotNull(), F.col("offset") < F.col("_prevOffset")).cast(
                "int"
            )
        ).alias("_rewind"),
    )
    deletions = (
        _offset_rows(rec)
        .groupBy(*keys)
        .agg(
            F.max_by("isTombstone", F.struct("applyOffset", "recordOffset")).alias("_gone"),
        )
    )
    # A tombstone counts as a deletion once the key has a commit before it (in apply order).
    rows = _offset_rows(rec)
    first = (
        rows.filter(~F.col("isTombstone"))
        .groupBy(*keys)
        .agg(F.min(F.struct("applyOffset", "recordOffset")).alias("_first"))
    )
    deleted_at = (
        rows.join(first, keys)
        .filter(F.col("isTombstone") & (F.struct("applyOffset", "recordOffset") > F.col("_first")))
        .groupBy(*keys)
        .agg(F.array_sort(F.collect_list("recordOffset")).alias("deletedAt"))
    )
    end_now: Column = F.lit(None).cast("long")
    end_source: Column = F.lit(None).cast("string")
    with_now = stats.crossJoin(F.broadcast(now_col))
    if ends is not None:
        last_end = (
            ends.crossJoin(F.broadcast(now_col))
            .filter(F.col("endTime") <= F.col("_now"))
            .groupBy("topic", "partition")
            .agg(F.max("endOffset").cast("long").alias("_endNow"))
        )
        known = ends.groupBy("topic", "partition").agg(
            F.lit(True).alias("_known"), F.first("logEndSource").alias("_endSource")
        )
        with_now = with_now.join(last_end, ["topic", "partition"], "left").join(
            F.broadcast(known), ["topic", "partition"], "left"
        )
        end_now = F.when(F.col("_known"), F.coalesce(F.col("_endNow"), F.lit(0)))
        end_source = F.col("_endSource")
    n_ts, o_ts = F.col("_newest.commitTimestamp"), F.col("_oldest.commitTimestamp")
    idle, span = F.col("_now") - n_ts, n_ts - o_ts
    stopped = idle > span
    at_end = end_now.isNotNull() & (F.col("_newest.offset") >= end_now)
    several = F.col("_n") > 1
    never_shrinks = F.coalesce(F.col("_neverShrinks"), F.lit(1)) == 1
    status = (
        F.when(F.col("_unknown") == 1, F.lit(None).cast("string"))
        .when(F.col("_n") < min_commits, "OK")
        .when(F.col("_zero") == 1, "OK")
        .when(stopped & at_end, "OK")
        .when(stopped, "STOP")
        .when(F.coalesce(F.col("_rewind"), F.lit(0)) == 1, "REWIND")
        .when(
            several & (F.col("_newest.offset") == F.col("_oldest.offset")) & never_shrinks,
            "STALL",
        )
        .when(several & never_shrinks, "WARN")
        .otherwise("OK")
    )
    return (
        with_now.join(deletions, keys, "left")
        .join(deleted_at, keys, "left")
        .select(
            *keys,
            (~F.coalesce(F.col("_gone"), F.lit(False))).alias("live"),
            F.coalesce(F.col("deletedAt"), F.array().cast("array<long>")).alias("deletedAt"),
            F.col("_n").alias("windowCommits"),
            end_now.alias("logEndOffset"),
            end_source.alias("logEndSource"),
            F.when(
                end_now.isNotNull(), F.greatest(end_now - F.col("_newest.offset"), F.lit(0))
            ).alias("lag"),
            status.alias("status"),
            F.col("_now").alias("now"),
        )
    )


def group_lag(partitions: DataFrame) -> DataFrame:
    """A group's status from its partitions' (:func:`partition_lag`): ``ERR`` when one is
    ``STOP``, ``STALL`` or ``REWIND``, else ``WARN`` when one is ``WARN``, else ``OK``; null when
    none has a status."""
    from pyspark.sql import functions as F

    s = F.col("status")
    agg = partitions.groupBy("group").agg(
        F.max(s.isin(*ERROR_STATUSES).cast("int")).alias("_err"),
        F.max((s == "WARN").cast("int")).alias("_warn"),
        F.count(s).alias("_known"),
    )
    return agg.select(
        "group",
        F.when(F.col("_known") == 0, F.lit(None).cast("string"))
        .when(F.col("_err") == 1, "ERR")
        .when(F.col("_warn") == 1, "WARN")
        .otherwise("OK")
        .alias("status"),
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


def read_share_states(spark: SparkSession, path: Path | Sequence[Path | str]) -> DataFrame:
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
