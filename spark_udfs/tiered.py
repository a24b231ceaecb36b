"""Tiered storage from the disk in Spark: the view of :mod:`codegen.dumps.views.tiered`, the one the
command line runs (``python -m codegen tiered``), row for row (a test compares them).

:func:`tiered_facts` reads the facts: the ``__remote_log_metadata`` partitions through
``kafka-log`` and :func:`~spark_udfs.functions.decode_remote_log_metadata`, turned into events
by :func:`codegen.dumps.views.tiered_facts.metadata_facts` on the executors (``mapInArrow``);
the remote storage's listing and the local segments' batch headers read on the driver
(:mod:`codegen.tiered.inputs`: a listing and headers, not the records). :func:`tiered_report`
runs :func:`codegen.dumps.views.tiered.partition_view` per partition (``groupBy(topic, topicId,
partition).applyInArrow``) for each section, and :func:`codegen.dumps.views.tiered.topic_totals`
per topic::

    from spark_udfs.tiered import tiered_report

    sections = tiered_report(spark, ["/data/broker-1/logs", "s3://bucket/tiered"])
    sections["partitions"].show()    # also segments, events, epochs, topics
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from codegen.dumps.storage import StoragePath
from codegen.dumps.views.tiered import partition_view, topic_totals
from codegen.dumps.views.tiered_facts import metadata_facts
from codegen.dumps.views.tiered_schemas import FACT_SCHEMA, PARTITION_KEYS, SECTIONS, TOPIC_SCHEMA
from codegen.tiered.inputs import find_inputs, local_facts, remote_facts, with_topic_ids
from codegen.tiered.report import DEFAULT_STUCK_AFTER_MS
from spark_udfs.session import kafka_log_reader

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["tiered_facts", "tiered_report"]


def _spark_schema(schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def _events(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for rb in batches:
        yield from metadata_facts(rb).to_batches()


def tiered_facts(
    spark: SparkSession, paths: Sequence[str | StoragePath], as_of_ms: int | None = None
) -> tuple[DataFrame, bool, bool]:
    """The facts (:data:`codegen.dumps.views.tiered_schemas.FACT_SCHEMA`) of ``paths`` as of
    ``as_of_ms`` (the command line's), and whether metadata and a remote storage were read."""
    from pyspark.sql import functions as F

    from spark_udfs.functions import decode_remote_log_metadata

    inputs = find_inputs(list(paths))
    local = local_facts(inputs, as_of_ms)
    remote = remote_facts(inputs)
    files = _frame(spark, remote)
    metadata = inputs.metadata_partitions
    if not metadata:
        local = with_topic_ids(pa.concat_tables([remote, local])).slice(remote.num_rows)
        return files.unionByName(_frame(spark, local)), False, bool(inputs.remote_roots)
    rows = (
        kafka_log_reader(spark)
        .option("includeHeaders", "false")
        .load([str(r.folder) for r in metadata.values()])
    )
    decoded = decode_remote_log_metadata(rows.filter(~F.col("isControl")), mode="PERMISSIVE")
    events = decoded.mapInArrow(_events, _spark_schema(FACT_SCHEMA))
    if as_of_ms is not None:
        later = (
            events.groupBy("segmentId")
            .agg(F.min("recordTimeMs").alias("firstMs"))
            .filter(F.col("firstMs") > as_of_ms)
            .select("segmentId")
        )
        files = files.join(later, "segmentId", "left_anti").select(*FACT_SCHEMA.names)
        events = events.filter(F.coalesce(F.col("recordTimeMs"), F.lit(0)) <= as_of_ms)
    remote_read = events.unionByName(files)
    if local.num_rows and local.column("topicId").null_count:
        # a folder without partition.metadata: its id from the partition's other facts, as
        # the command line takes it (codegen.tiered.inputs.with_topic_ids)
        known = (
            remote_read.filter(F.col("topicId").isNotNull())
            .select("topic", "partition", "topicId")
            .distinct()
            .collect()
        )
        local = with_topic_ids(local, [(r["topic"], r["partition"], r["topicId"]) for r in known])
    return remote_read.unionByName(_frame(spark, local)), True, bool(inputs.remote_roots)


def _frame(spark: SparkSession, facts: pa.Table) -> DataFrame:
    return spark.createDataFrame(facts.to_pylist(), _spark_schema(FACT_SCHEMA))


def _newest(facts: DataFrame) -> int:
    from pyspark.sql import functions as F

    row = facts.agg(
        F.max(F.when(F.col("timeMs") >= 0, F.col("timeMs"))).alias("a"),
        F.max(F.when(F.col("recordTimeMs") >= 0, F.col("recordTimeMs"))).alias("b"),
    ).first()
    found = [] if row is None else [v for v in (row["a"], row["b"]) if v is not None]
    return int(max(found, default=-1))


def _section(
    name: str, now: int, stuck_after_ms: int, has_metadata: bool, has_listing: bool, past: bool
) -> Any:
    """The function ``applyInArrow`` runs per partition for section ``name`` (one argument:
    Spark passes the group's key too to a function of two)."""

    def view(table: pa.Table) -> pa.Table:
        return partition_view(
            table,
            now,
            stuck_after_ms,
            has_metadata=has_metadata,
            has_listing=has_listing,
            past=past,
        )[name]

    return view


def tiered_report(
    spark: SparkSession,
    paths: Sequence[str | StoragePath],
    as_of_ms: int | None = None,
    stuck_after_ms: int = DEFAULT_STUCK_AFTER_MS,
) -> dict[str, DataFrame]:
    """The sections of :class:`codegen.dumps.views.tiered_schemas.TieredSections` (``partitions``,
    ``segments``, ``events``, ``epochs``, ``topics``) as DataFrames."""
    facts, has_metadata, has_listing = tiered_facts(spark, paths, as_of_ms)
    facts = facts.cache()
    now = as_of_ms if as_of_ms is not None else _newest(facts)
    past = as_of_ms is not None
    keyed = facts.filter(facts["topic"].isNotNull()).groupBy(*PARTITION_KEYS)
    out: dict[str, DataFrame] = {}
    for name, schema in SECTIONS.items():
        view = _section(name, now, stuck_after_ms, has_metadata, has_listing, past)
        out[name] = keyed.applyInArrow(view, _spark_schema(schema))
    out["topics"] = (
        out["partitions"]
        .groupBy("topic", "topicId")
        .applyInArrow(topic_totals, _spark_schema(TOPIC_SCHEMA))
    )
    return out
