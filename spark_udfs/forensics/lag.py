"""Committed offsets and lag in Spark: the command line's definitions
(:mod:`codegen.dumps.views.offsets` per ``__consumer_offsets`` partition, then
:mod:`codegen.forensics.lag` per data partition with its log ends) in ``applyInArrow``; share
groups' partitions from ``__share_group_state`` (replayed on the driver by
:mod:`codegen.forensics.shares`) and their lag (KIP-1226)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final

from codegen.dumps.storage import StoragePath
from codegen.forensics import lag as lag_views
from codegen.forensics.burrow import DEFAULT_MIN_COMMITS, DEFAULT_WINDOW, group_status
from codegen.forensics.commits import KeyedCommits, keyed_commits
from codegen.forensics.coordinator_logs import dump_partitions
from codegen.forensics.groups import AsOf
from codegen.forensics.inputs import LogEnd
from spark_udfs.forensics.inputs import (
    ENDS_DDL,
    SHARE_STATE_SCHEMA,
    arrow_schema,
    batch_rows,
    resolve_cut,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession


__all__ = [
    "group_lag",
    "lag_now",
    "offset_history",
    "partition_lag",
    "share_lag",
]


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


_RAW_COLUMNS: Final = (
    "topic",
    "partition",
    "offset",
    "timestamp",
    "key",
    "value",
    "producerId",
    "isTransactional",
    "isControl",
)


def _commit_history(decoded: DataFrame) -> DataFrame:
    """Every commit and tombstone that took effect (:func:`codegen.dumps.views.offsets.history`, one
    log partition per call), with ``applyIndex``, its place in its log partition's history.

    Only the raw columns travel, sorted by offset within each log partition: the executors
    decode the commits as the command line does (:func:`codegen.dumps.views.commits
    .decode_commits`), where shuffling the decoded structs made the JVM turn every commit into
    rows and back into Arrow."""
    from pyspark.sql import functions as F

    rows = decoded
    if "_error" in decoded.columns:  # a damaged batch: no commit of it takes effect
        rows = rows.filter(F.col("_error").isNull())
    by = ("topic", "partition")
    ordered = rows.select(*_RAW_COLUMNS).repartition(*by).sortWithinPartitions(*by, "offset")
    return ordered.groupBy(*by).applyInArrow(_history_of, _HISTORY_DDL)


def _history_of(key: tuple[pa.Scalar, ...], rows: pa.Table) -> pa.Table:
    import numpy as np
    import pyarrow as pa

    from codegen.dumps.views.commit_rows import commit_rows
    from codegen.dumps.views.commits import commit_keys, decode_commits
    from codegen.dumps.views.offsets import history

    control = np.asarray(rows.column("isControl").fill_null(False).to_numpy(zero_copy_only=False))
    wanted = rows.filter(pa.array(commit_keys(rows.column("key"), control) | control))
    parts = [commit_rows(decode_commits(b)[0]) for b in wanted.to_batches(max_chunksize=65_536)]
    done = history(pa.concat_tables(parts) if parts else commit_rows(decode_commits(wanted)[0]))
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
        ends = history.sparkSession.createDataFrame([], ENDS_DDL)
    return by_key.cogroup(ends.groupBy("topic", "partition")).applyInArrow(answer, ddl)


def _log_end(ends: pa.Table) -> LogEnd | None:
    """A data partition's :class:`codegen.forensics.inputs.LogEnd` from its :func:`log_ends`
    rows (running maxima: in time order, the ends grow)."""
    if not ends.num_rows:
        return None
    ordered = ends.sort_by([("endTime", "ascending"), ("endOffset", "ascending")])
    source, _, where = str(ordered.column("logEndSource")[0].as_py()).partition(": ")
    return LogEnd(
        ordered.column("endTime").to_numpy(),
        ordered.column("endOffset").to_numpy(),
        source,
        where,
        bool(ordered.column("history")[0].as_py()),
    )


def _keyed(history: pa.Table) -> Iterator[KeyedCommits]:
    """The command line's commits by key (:func:`codegen.forensics.commits.keyed_commits`) of each
    log partition among ``history`` rows."""
    import pyarrow.compute as pc

    from codegen.dumps.views.offsets import HISTORY_SCHEMA

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
        tables.append(pa.table(columns, schema=arrow_schema(_OFFSET_HISTORY_DDL)))
    if not tables:
        return arrow_schema(_OFFSET_HISTORY_DDL).empty_table()
    return pa.concat_tables(tables)


def offset_history(decoded: DataFrame, ends: DataFrame | None = None) -> DataFrame:
    """Every commit that took effect: ``group, topic, partition, seq`` (its place in the
    partition's history, from 0), ``recordOffset, commitTimestamp, offset, leaderEpoch,
    logEndOffset, lag``; the log end offset and lag at the commit's time are null without
    ``ends`` (:func:`log_ends`) for that partition. The command line's definitions
    (:func:`codegen.dumps.views.offsets.history` per log partition,
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
        return pa.Table.from_pylist(out, schema=arrow_schema(_PARTITION_LAG_DDL))

    return answer


def _newest_time_of(part: str) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def newest(chunks: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        for chunk in chunks:
            yield pa.RecordBatch.from_pydict(
                {"_now": [lag_views.newest_time(**{part: chunk})]},
                schema=pa.schema([pa.field("_now", pa.int64())]),
            )

    return newest


def _newest_of(batches: DataFrame | None, ends: DataFrame | None, spark: SparkSession) -> DataFrame:
    """One row, ``_now``: :func:`codegen.forensics.lag.newest_time` of ``batches`` (batch rows)
    and of ``ends`` (:func:`read_log_ends` rows), per Arrow batch (``mapInArrow``), then the
    newest of those; -1 without either."""
    from functools import reduce

    from pyspark.sql import functions as F

    parts = [spark.range(1).select(F.lit(-1).cast("long").alias("_now"))]
    if batches is not None:
        newest = batches.select("maxTimestamp", "recordCount", "_error")
        parts.append(newest.mapInArrow(_newest_time_of("batches"), "_now long"))
    if ends is not None:
        newest = ends.select("endTime", "history")
        parts.append(newest.mapInArrow(_newest_time_of("ends"), "_now long"))
    return reduce(lambda a, b: a.unionByName(b), parts).agg(F.max("_now").alias("_now"))


def _newest_time(decoded: DataFrame, ends: DataFrame | None) -> DataFrame:
    """:func:`_newest_of` the batches ``decoded``'s records come from (their files' batch rows
    joined with ``decoded``'s ``file, batchPosition``: ``decoded`` is read twice more) and
    ``ends``. The listing of ``decoded``'s files is collected."""
    from pyspark.sql import functions as F

    spark = decoded.sparkSession
    batches = None
    files = sorted(r[0] for r in decoded.select("file").distinct().collect() if r[0] is not None)
    if files:
        read = decoded.select(
            F.col("file").alias("_read"), F.col("batchPosition").alias("_at")
        ).distinct()
        on = (F.col("file") == F.col("_read")) & (F.col("batchPosition") == F.col("_at"))
        batches = batch_rows(spark, files).join(read, on, "left_semi")
    return _newest_of(batches, ends, spark)


def lag_now(
    spark: SparkSession,
    path: StoragePath | Sequence[StoragePath | str],
    ends: DataFrame | None = None,
    as_of: AsOf | None = None,
) -> int:
    """*now* of the lag of the dump under ``path``, as the command line finds it
    (:func:`codegen.forensics.lag.lag_chunks`): the moment of the cut at ``as_of``
    (:func:`resolve_cut`), else :func:`codegen.forensics.lag.newest_time` of the batch rows of
    every ``__consumer_offsets`` file under ``path`` (``kafka-log`` ``rows=batches``: the
    headers, not the records) and of ``ends`` (:func:`read_log_ends`), one number the executors
    compute. :func:`partition_lag`'s ``now`` for the records of :func:`read_dump` on the same
    ``path`` and ``as_of``: without it, :func:`partition_lag` reads those records twice more to
    find the batches they come from."""
    cut = resolve_cut(spark, path, as_of)
    if cut.now is not None:
        return cut.now
    files = [f for _, found in dump_partitions(path) for f in found]
    batches = batch_rows(spark, files) if files else None
    newest = _newest_of(batches, ends, spark).first()
    return -1 if newest is None or newest[0] is None else int(newest[0])


def partition_lag(
    decoded: DataFrame,
    ends: DataFrame | None = None,
    window: int = DEFAULT_WINDOW,
    now: int | None = None,
    min_commits: int = DEFAULT_MIN_COMMITS,
) -> DataFrame:
    """Per (group, topic, partition): ``live, deletedAt, windowCommits, logEndOffset,
    logEndSource, lag, status`` at *now* (given: :func:`lag_now` when ``decoded`` is
    :func:`read_dump`'s, one pass over the batch headers; else
    :func:`codegen.forensics.lag.newest_time` of the batches of ``decoded`` and of ``ends``, as
    the command line's, which reads ``decoded`` twice more) over the last
    ``window`` commits, by the rules of :func:`codegen.forensics.burrow.window_judgements`. A
    partition whose log end is only a checkpoint's (``history`` false in ``ends``) has its lag
    now and no status. The command line's definitions
    (:func:`codegen.forensics.lag.partition_lags` per data partition)."""
    from pyspark.sql import functions as F

    if window < 1:
        raise ValueError(f"--window {window}: give at least 1 commit")
    if min_commits < 1:
        raise ValueError(f"--min-commits {min_commits}: give at least 1 commit")
    min_commits = min(min_commits, window)
    if now is None:
        now_col = _newest_time(decoded, ends)
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
        schema=arrow_schema("group string, status string"),
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
        ends = states.sparkSession.createDataFrame([], ENDS_DDL)
    ddl = f"{SHARE_STATE_SCHEMA}, logEndOffset long, logEndSource string, lag long"
    by = ["topic", "partition"]
    return states.groupBy(*by).cogroup(ends.groupBy(*by)).applyInArrow(_share_lag_of(now), ddl)
