"""Live internal topics: Spark's Kafka source over ``__consumer_offsets`` and friends.

:func:`read_internal_topic` reads an internal topic from a running cluster with
``spark.read.format("kafka")`` (or ``spark.readStream``); the topic functions of
:mod:`spark_udfs.functions` decode its ``key`` and ``value`` columns. :func:`as_log_rows` gives
those rows the columns of the ``kafka-log`` source that :mod:`spark_udfs.compacted` needs, so the
compacted views work on live data too. :func:`latest_committed_offsets` and
:func:`track_committed_offsets` keep a table of committed offsets per (group, topic, partition)
up to date from a stream (``docs/spark.md``, "Live topics").

Spark's Kafka source (``org.apache.spark:spark-sql-kafka-0-10_2.13``) is not part of PySpark:
:func:`connector_conf` hands its jars to a new session as local files (``spark.jars``).

Two differences from reading the log files, both from the Kafka consumer underneath:

- the consumer never returns control records, so transactional offset commits are read with
  ``kafka.isolation.level=read_committed`` (aborted ones are skipped, open ones wait) and take
  effect at their own offset rather than at their commit marker's;
- compaction and transaction markers leave gaps in the offsets, so ``failOnDataLoss`` is off.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spark_udfs.compacted import committed_offset_columns
from spark_udfs.connect import is_connect

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = [
    "CONNECTOR",
    "DEFAULT_CONNECTOR_JARS",
    "ConnectorMissingError",
    "LiveTopicError",
    "as_log_rows",
    "connector_conf",
    "connector_jars",
    "latest_committed_offsets",
    "partition_count",
    "read_internal_topic",
    "track_committed_offsets",
]

CONNECTOR = "org.apache.spark:spark-sql-kafka-0-10_2.13"
"""Maven coordinates (without version) of Spark's Kafka source."""

DEFAULT_CONNECTOR_JARS = Path(".cache") / "spark-kafka" / "jars"
"""Where ``make setup`` (``tests/broker/spark-kafka/fetch.sh``) puts the connector's jars, from a
checkout's root."""

FETCH_COMMAND = "make spark-kafka-setup"

_OFFSET_FETCHING = "spark.sql.streaming.kafka.useDeprecatedOffsetFetching"
"""Spark's default offset fetching (through an admin client) drops internal topics from a
subscription (``TopicDescription.isInternal``); the consumer-based one reads them."""


class LiveTopicError(RuntimeError):
    """The cluster could not say how many partitions a topic has (unreachable, not allowed,
    or no such topic)."""


class ConnectorMissingError(RuntimeError):
    """The folder given for Spark's Kafka source has no ``spark-sql-kafka`` jar."""


def connector_jars(folder: Path = DEFAULT_CONNECTOR_JARS) -> list[Path]:
    """The jars in ``folder``: Spark's Kafka source and what it needs beyond PySpark.

    Raises :class:`ConnectorMissingError` when ``folder`` has no ``spark-sql-kafka`` jar.
    """
    jars = sorted(folder.glob("*.jar")) if folder.is_dir() else []
    if not any(j.name.startswith("spark-sql-kafka-0-10_") for j in jars):
        raise ConnectorMissingError(
            f"{folder} has no spark-sql-kafka-0-10 jar ({CONNECTOR}); run `{FETCH_COMMAND}` in "
            "the checkout, or give the folder that holds the connector's jars"
        )
    return jars


def connector_conf(folder: Path = DEFAULT_CONNECTOR_JARS) -> dict[str, str]:
    """Session settings that put the connector's jars on Spark's class path (``spark.jars``).

    Pass them as ``extra_conf`` of :func:`spark_udfs.session.get_session`; they only apply when
    the session starts the JVM.
    """
    return {"spark.jars": ",".join(str(j.resolve()) for j in connector_jars(folder))}


def read_internal_topic(
    spark: SparkSession,
    bootstrap_servers: str,
    topic: str,
    *,
    streaming: bool = False,
    options: Mapping[str, str] | None = None,
    partitions: int | None = None,
) -> DataFrame:
    """``topic`` from its first record with Spark's Kafka source, as a batch (up to the latest
    offsets now) or as a stream.

    Columns: ``key, value, topic, partition, offset, timestamp, timestampType``. ``options`` are
    passed on to the source and win over the defaults here (``startingOffsets=earliest``,
    ``kafka.isolation.level=read_committed``, ``failOnDataLoss=false``; batch reads also
    ``endingOffsets=latest``). Switches the session to the consumer-based offset fetching, the
    one that can read internal topics.

    ``partitions``: the topic's partition count, which is otherwise asked of the cluster with
    the connector's admin client on the driver; a Spark Connect client cannot run that, so over
    Spark Connect give it (the broker's ``offsets.topic.num.partitions``,
    ``transaction.state.log.num.partitions`` or ``share.coordinator.state.topic.num.partitions``)
    or an ``assign`` option.
    """
    spark.conf.set(_OFFSET_FETCHING, "true")
    given = dict(options or {})
    settings = {"kafka.bootstrap.servers": bootstrap_servers}
    if not {"assign", "subscribe", "subscribePattern"} & set(given):
        # Assigned partitions: a subscription would make the source's driver consumer join a
        # consumer group, i.e. write group records into __consumer_offsets.
        count = (
            partitions
            if partitions is not None
            else partition_count(spark, topic, {**settings, **given})
        )
        settings["assign"] = json.dumps({topic: list(range(count))})
    settings |= {
        "startingOffsets": "earliest",
        "kafka.isolation.level": "read_committed",
        "failOnDataLoss": "false",
    }
    if not streaming:
        settings["endingOffsets"] = "latest"
    settings.update(given)
    reader = spark.readStream if streaming else spark.read
    return reader.format("kafka").options(**settings).load()


def partition_count(spark: SparkSession, topic: str, options: Mapping[str, str]) -> int:
    """How many partitions ``topic`` has, asked with the connector's Kafka admin client.

    ``options``: the source's options; the ``kafka.``-prefixed ones (bootstrap servers,
    security settings) configure the client. A Spark Connect client has no JVM to run it in:
    there this raises :class:`LiveTopicError` saying what to give instead.
    """
    if is_connect(spark):
        raise LiveTopicError(
            f"cannot ask the cluster how many partitions {topic!r} has over Spark Connect (the "
            "admin client runs in the driver's JVM, which a Connect client cannot reach); give "
            "partitions=N to read_internal_topic or track_committed_offsets, with the broker's "
            "setting for that topic (offsets.topic.num.partitions for __consumer_offsets, "
            "default 50), or an assign option"
        )
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    props = jvm.java.util.Properties()
    for key, value in options.items():
        if key.startswith("kafka."):
            props.setProperty(key[len("kafka.") :], value)
    from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]

    admin = jvm.org.apache.kafka.clients.admin.Admin.create(props)
    try:
        topics = admin.describeTopics(jvm.java.util.List.of(topic)).allTopicNames()
        description = topics.get(_ADMIN_TIMEOUT_S, jvm.java.util.concurrent.TimeUnit.SECONDS)
        count: int = description.get(topic).partitions().size()
    except Py4JJavaError as exc:
        cause = exc.java_exception.getCause() or exc.java_exception
        raise LiveTopicError(
            f"cannot describe topic {topic!r} at {options.get('kafka.bootstrap.servers')}: "
            f"{cause.toString()}; check the bootstrap servers, the kafka.* security options and "
            "that the topic exists (an internal topic appears once the cluster first uses it)"
        ) from None
    finally:
        admin.close()
    return count


_ADMIN_TIMEOUT_S = 60


def as_log_rows(df: DataFrame) -> DataFrame:
    """Rows of Spark's Kafka source (decoded or not) with the ``kafka-log`` source's columns
    that :mod:`spark_udfs.compacted` reads: ``isControl`` and ``isTransactional`` false,
    ``producerId`` -1, ``_error`` null.

    Read with ``read_committed`` (:func:`read_internal_topic` does), so the rows hold committed
    records only and every record counts as a plain one.
    """
    from pyspark.sql import functions as F

    return df.select(
        "*",
        F.lit(False).alias("isControl"),
        F.lit(False).alias("isTransactional"),
        F.lit(-1).cast("long").alias("producerId"),
        F.lit(None).cast("string").alias("_error"),
    )


def latest_committed_offsets(decoded: DataFrame) -> DataFrame:
    """Per (group, topic, partition), the last offset commit seen: a stateful aggregation that
    works on a stream as well as on a batch.

    ``decoded``: :func:`~spark_udfs.functions.decode_consumer_offsets` over rows of
    :func:`read_internal_topic` (no control records). Columns: ``group, topic, partition,
    deleted`` (the last record was a tombstone) and the columns of
    :func:`spark_udfs.compacted.committed_offsets`. A group's records all live in one partition
    of ``__consumer_offsets``, so the record offset orders the commits of a key.
    """
    from pyspark.sql import functions as F

    rec = decoded.filter(F.col("recordName").isin("OffsetCommit", "LegacyOffsetCommit"))
    keys, value = committed_offset_columns()
    latest = (
        rec.select(
            *(c.alias(n) for n, c in keys.items()), F.col("offset").alias("_o"), value.alias("_p")
        )
        .groupBy(*keys)
        .agg(F.max_by("_p", "_o").alias("_p"))
    )
    return latest.select(
        *keys, F.col("_p").isNull().alias("deleted"), *(F.col(f"_p.{f}").alias(f) for f in _FIELDS)
    )


_FIELDS = (
    "offset",
    "leaderEpoch",
    "metadata",
    "commitTimestamp",
    "expireTimestamp",
    "recordOffset",
)


def track_committed_offsets(
    spark: SparkSession,
    bootstrap_servers: str,
    table: Path | str,
    checkpoint: Path | str,
    *,
    trigger: Mapping[str, Any] | None = None,
    options: Mapping[str, str] | None = None,
    decode: Callable[[DataFrame], DataFrame] | None = None,
    partitions: int | None = None,
) -> StreamingQuery:
    """Start a stream that keeps ``table`` (Parquet) equal to the committed offsets per (group,
    topic, partition) of the cluster's ``__consumer_offsets``.

    The offsets live in the query's state (under ``checkpoint``); after each micro-batch the
    whole table (deleted keys left out) is rewritten, so it is at most one batch behind.
    ``trigger`` is passed to ``DataStreamWriter.trigger`` (default: a micro-batch every 10
    seconds; ``{"availableNow": True}`` reads what is there and stops); ``decode`` replaces
    :func:`~spark_udfs.functions.decode_consumer_offsets` (e.g. ``for_package(...)`` for another
    release's specs); ``partitions`` as for :func:`read_internal_topic` (needed over Spark
    Connect).
    """
    from spark_udfs.functions import decode_consumer_offsets

    raw = read_internal_topic(
        spark,
        bootstrap_servers,
        "__consumer_offsets",
        streaming=True,
        options=options,
        partitions=partitions,
    )
    latest = latest_committed_offsets((decode or decode_consumer_offsets)(raw))
    table = str(table)

    def publish(batch: DataFrame, _batch_id: int) -> None:
        live = batch.filter(~batch.deleted).drop("deleted")
        live.orderBy("group", "topic", "partition").write.mode("overwrite").parquet(table)

    return (
        latest.writeStream.outputMode("complete")
        .foreachBatch(publish)
        .option("checkpointLocation", str(checkpoint))
        .trigger(**dict(trigger or {"processingTime": "10 seconds"}))
        .start()
    )
