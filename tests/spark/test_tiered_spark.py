"""Tiered storage in Spark: ``kafka-log`` over a real tiered broker's log dir and remote storage
(``tests/data/tiered``) gives each partition's offsets once, from the log start to the log end
the broker answered; ``__remote_log_metadata`` decodes (``decode=true`` and
``decode_remote_log_metadata``) to the values the command line's decoder gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codegen.dumps.metadata import REMOTE_LOG_METADATA, decode_metadata_records

pytestmark = pytest.mark.spark

TIERED = Path(__file__).resolve().parent.parent / "data" / "tiered"
TRUTH = json.loads((TIERED / "truth.json").read_text())


def test_kafka_log_reads_remote_segments_like_local_ones(spark: Any) -> None:
    from pyspark.sql import functions as F

    df = spark.read.format("kafka-log").load([str(TIERED / "logs"), str(TIERED / "remote")])
    rows = (
        df.filter(~F.col("topic").startswith("__") & F.col("_error").isNull())
        .groupBy("topic", "partition")
        .agg(
            F.count("*").alias("n"),
            F.countDistinct("offset").alias("distinct"),
            F.min("offset").alias("first"),
            F.max("offset").alias("last"),
        )
        .collect()
    )
    got = {f"{r['topic']}-{r['partition']}": r for r in rows if r["topic"] is not None}
    for label, answers in TRUTH["partitions"].items():
        r = got[label]
        assert r["n"] == r["distinct"] == answers["latest"] - answers["earliest"], label
        assert (r["first"], r["last"]) == (answers["earliest"], answers["latest"] - 1), label


def test_remote_log_metadata_decodes_in_spark(spark: Any) -> None:
    from spark_udfs.functions import decode_remote_log_metadata

    folder = TIERED / "logs" / "__remote_log_metadata-0"
    decoded = decode_remote_log_metadata(spark.read.format("kafka-log").load(str(folder)))
    rows = decoded.orderBy("offset").collect()
    expected = list(decode_metadata_records(folder, topic=REMOTE_LOG_METADATA))
    assert len(rows) == len(expected) > 0
    for row, rec in zip(rows, expected, strict=True):
        assert (row["recordType"], row["recordName"]) == (rec.record_type, rec.name)
        value = row["decodedValue"][rec.name]
        assert value["remoteLogSegmentState"] == rec.value.remote_log_segment_state
        assert value["brokerId"] == rec.value.broker_id
    with_decode = (
        spark.read.format("kafka-log").option("decode", "true").load(str(folder)).collect()
    )
    assert [r["recordName"] for r in with_decode] == [r["recordName"] for r in rows]


@pytest.mark.parametrize("moment", ["now", "during the killed upload"])
def test_the_tiered_report_is_the_command_lines(spark: Any, moment: str) -> None:
    """Every section of the tiered-storage report, Spark's and the command line's, row for row
    (the same view, run per partition by applyInArrow): at the end, and with --as-of a second
    into the upload the broker was killed in (later records and copies left out)."""
    from codegen.tiered.report import tiered_report as local_report
    from spark_udfs.tiered import tiered_report

    paths = [str(TIERED / "logs"), str(TIERED / "remote")]
    as_of = None
    if moment != "now":
        segments = local_report(paths).sections.segments.to_pylist()
        killed = next(s for s in segments if s["status"] == "upload-abandoned")
        as_of = killed["copyStartedMs"] + 1000
    theirs = tiered_report(spark, paths, as_of_ms=as_of)
    ours = local_report(paths, as_of_ms=as_of)
    if as_of is not None:
        assert "copying" in {s["status"] for s in ours.sections.segments.to_pylist()}

    def key(row: dict[str, Any]) -> str:
        return repr(sorted(row.items()))

    for name in ("partitions", "segments", "events", "epochs", "topics"):
        rows = [r.asDict(recursive=True) for r in theirs[name].collect()]
        expected = ours.sections.section(name).to_pylist()
        assert sorted(rows, key=key) == sorted(expected, key=key), name


def test_a_folder_without_partition_metadata_takes_the_partitions_topic_id(
    spark: Any, tmp_path: Path
) -> None:
    """A local folder without ``partition.metadata`` (an older broker's): its partition's topic
    id comes from the metadata and the remote storage, in Spark as on the command line, so its
    local and remote facts make one partition."""
    import shutil

    from codegen.tiered.report import tiered_report as local_report
    from spark_udfs.tiered import tiered_report

    copy = tmp_path / "tiered"
    shutil.copytree(TIERED, copy)
    (copy / "logs" / "tiered-kept-0" / "partition.metadata").unlink()
    paths = [str(copy / "logs"), str(copy / "remote")]
    ours = local_report(paths).sections.partitions.to_pylist()
    theirs = [r.asDict(recursive=True) for r in tiered_report(spark, paths)["partitions"].collect()]
    kept = [r for r in theirs if r["topic"] == "tiered-kept"]
    assert len(kept) == 1 and kept[0]["topicId"] == TRUTH["topicIds"]["tiered-kept"]
    assert kept[0]["localLog"] and kept[0]["remoteSegments"] > 0

    def key(row: dict[str, Any]) -> str:
        return repr(sorted(row.items()))

    assert sorted(theirs, key=key) == sorted(ours, key=key)
