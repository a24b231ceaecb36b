"""Spark tests in local[2]: UDFs in both modes, topic functions, kafka-log, compacted views."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codegen.dumps import SegmentReader, SegmentWriter
from codegen.dumps.coordinator import decode_batches
from codegen.dumps.views.compacted import CompactedView
from generated.offset_commit_value import OffsetCommitValue
from spark_udfs import compacted, functions
from spark_udfs.schema import message_schema

from .conftest import REAL_DATA

pytestmark = pytest.mark.spark
H = struct.Struct(">h")
ROOT = Path(__file__).resolve().parents[2]


def _values_df(spark: Any) -> Any:
    ocv = OffsetCommitValue
    rows: list[tuple[int, bytes | None]] = [
        (i, H.pack(3) + ocv(offset=i, metadata="m", commit_timestamp=i).encode(3))
        for i in range(3000)
    ]
    rows[5] = (5, None)
    rows[1700] = (1700, b"\x00\x03\x00\x00")
    return spark.createDataFrame(rows, "offset long, value binary").repartition(2)


def test_schema_is_all_nullable() -> None:
    schema = message_schema("GroupMetadataValue")
    assert schema["members"].nullable
    assert schema.simpleString().startswith("struct<protocolType:string,generation:int")


@pytest.mark.spark_connect
def test_permissive_keeps_every_row(spark: Any) -> None:
    df = _values_df(spark)
    out = df.select(
        "offset", functions.decode_offset_commit_value("value", mode="permissive").alias("d")
    ).select("offset", "d.*")
    rows = out.collect()
    assert len(rows) == 3000 and len({r.offset for r in rows}) == 3000
    errors = {r.offset: r._decode_error for r in rows if r._decode_error}
    assert list(errors) == [1700] and "field offset" in errors[1700]
    bad = next(r for r in rows if r.offset == 1700)
    assert bad.decoded is None
    assert next(r for r in rows if r.offset == 5).decoded is None
    assert next(r for r in rows if r.offset == 42).decoded.offset == 42


@pytest.mark.spark_connect
def test_failfast_names_the_error_and_position(spark: Any) -> None:
    df = _values_df(spark)
    col = functions.decode_offset_commit_value("value", position=["offset"])
    with pytest.raises(Exception) as info:
        df.select(col.alias("d")).write.format("noop").mode("overwrite").save()
    text = str(info.value)
    assert "MalformedKafkaRecordError" in text and "MALFORMED_KAFKA_RECORD" in text
    assert "offset 1700" in text and "mode='PERMISSIVE'" in text


@pytest.mark.spark_connect
def test_topic_function_on_real_consumer_offsets(spark: Any) -> None:
    df = spark.read.format("kafka-log").load(str(REAL_DATA / "mscaldas-spooldir"))
    co = functions.decode_consumer_offsets(df.filter("topic = '__consumer_offsets'"))
    rows = co.collect()
    assert len(rows) == 11
    names = sorted({r.recordName for r in rows})
    assert names == ["GroupMetadata", "OffsetCommit"]
    assert sum(r.isTombstone for r in rows) == 1
    gm = next(r for r in rows if r.recordName == "GroupMetadata")
    assert gm.valueVersion == 2 and gm.decodedValue.GroupMetadataValue.protocolType is not None


@pytest.mark.spark_connect
def test_data_source_matches_the_segment_reader(spark: Any) -> None:
    df = spark.read.format("kafka-log").load(str(REAL_DATA))
    counts = {(r.file): r["count"] for r in df.groupBy("file").count().collect()}
    for path, n in counts.items():
        summary = SegmentReader(path).read_all()
        assert n == summary.records + summary.errors, path
    snap = df.filter(df.file.endswith(".checkpoint")).select("topic").distinct().collect()
    assert {r.topic for r in snap} == {"__cluster_metadata"}
    cm = functions.decode_cluster_metadata(df.filter("topic = '__cluster_metadata'"))
    assert cm.filter("_error is null and not isControl and recordName is null").count() == 0


def test_data_source_reports_corrupt_batches_and_splits(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t-0" / "00000000000000000000.log"
    path.parent.mkdir()
    with SegmentWriter(path) as w:
        for i in range(50):
            w.write_batch([(b"k%d" % i, b"v" * 100)] * 10)
    data = bytearray(path.read_bytes())
    data[200] ^= 0xFF  # corrupt the first batch's records (CRC mismatch)
    data += b"\x00\x00\x00\x00\x00\x00\x00\x99\x00\x00\x10\x00tail"  # torn tail
    path.write_bytes(bytes(data))
    df = spark.read.format("kafka-log").option("maxBytesPerPartition", "4096").load(str(tmp_path))
    assert df.rdd.getNumPartitions() > 3
    rows = df.collect()
    errors = [r for r in rows if r._error]
    assert [e._error.split(":")[0] for e in errors] == ["crc-mismatch", "truncated-tail"]
    assert len(rows) == 49 * 10 + 2
    assert sorted(r.offset for r in rows if not r._error) == list(range(10, 500))


@pytest.mark.spark_connect
def test_inline_decode_option(spark: Any) -> None:
    df = (
        spark.read.format("kafka-log")
        .option("decode", "true")
        .load(str(REAL_DATA / "ldi-poc" / "__consumer_offsets-6"))
    )
    assert {r.recordName for r in df.collect()} == {"OffsetCommit", "GroupMetadata"}


@pytest.mark.spark_connect
def test_compacted_views_match_the_pure_python_views(spark: Any, dump: Any) -> None:
    expected_offsets: dict[tuple[str, str, int], tuple[int, int]] = {}
    expected_groups: dict[str, tuple[Any, ...]] = {}
    for f in dump.files:
        view = CompactedView().add_batches(decode_batches(f))
        for o in view.offset_rows():
            expected_offsets[(o.group, o.topic, o.partition)] = (o.offset, o.record_offset)
        for g in view.group_rows():
            expected_groups[g.group] = (g.type, g.state, len(g.members))
    raw = spark.read.format("kafka-log").load(str(dump.files[0].parent.parent))
    decoded = functions.decode_consumer_offsets(raw)
    got = {
        (r.group, r.topic, r.partition): (r.offset, r.recordOffset)
        for r in compacted.committed_offsets(decoded).collect()
    }
    assert got == expected_offsets
    groups = {
        r.group: (r.type, r.state, r.members) for r in compacted.group_states(decoded).collect()
    }
    assert groups == expected_groups
    assert decoded.filter("isNewerVersion").count() == dump.newer


@pytest.mark.spark_connect
def test_sql_registration(spark: Any) -> None:
    names = functions.register_sql_functions(spark, messages=False)
    assert "decode_consumer_offsets" in names
    spark.read.format("kafka-log").load(
        str(REAL_DATA / "aibulb" / "__consumer_offsets-28")
    ).createOrReplaceTempView("co28")
    rows = spark.sql(
        "SELECT d.* FROM (SELECT decode_consumer_offsets(key, value, isControl) AS d FROM co28)"
    ).collect()
    assert [r.recordName for r in rows] == ["GroupMetadata"] * 4
    assert [r.isTombstone for r in rows].count(True) == 1


LOCAL_CLUSTER = """
import os, sys
sys.path.insert(0, sys.argv[2])  # the driver only: executors get the package from addPyFile
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local-cluster[2,1,1024]")
         .config("spark.ui.enabled", "false").config("spark.executor.memory", "1g").getOrCreate())
from spark_udfs.session import register_data_source, ship_package
ship_package(spark)
register_data_source(spark)
from spark_udfs import functions
df = spark.read.format("kafka-log").load(sys.argv[1])
out = functions.decode_consumer_offsets(df, mode="PERMISSIVE")
names = sorted((r.recordName, r["count"]) for r in out.groupBy("recordName").count().collect())
pids = set(spark.sparkContext.parallelize(range(4), 4).map(lambda _: os.getpid()).collect())
print("RESULT", names, len(pids), os.getpid() in pids)
from spark_udfs.workers import worker_backends
print("BACKENDS", sorted(set(worker_backends(spark, 4).values()), key=str))
spark.stop()
"""


@pytest.mark.slow
class TestLocalCluster:
    """Separate executor JVMs and Python workers: nothing may rely on driver-only state."""

    def test_decode_in_local_cluster(self, tmp_path: Path) -> None:
        script = tmp_path / "lc.py"
        script.write_text(LOCAL_CLUSTER)
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": ""}
        target = str(REAL_DATA / "ldi-poc" / "__consumer_offsets-6")
        result = subprocess.run(
            [sys.executable, str(script), target, str(ROOT)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=400,
            check=False,
        )
        line = next((x for x in result.stdout.splitlines() if x.startswith("RESULT")), None)
        assert line is not None, result.stderr[-3000:]
        assert line == "RESULT [('GroupMetadata', 6), ('OffsetCommit', 7)] 2 False"
        # The zip holds no compiled engine and comes first on the workers' sys.path: its copy
        # of the package uses the engine installed in their Python (this checkout's, built from
        # the same sources), so no worker reads with the pure backend and the client is not
        # warned. tests/test_shipped_engine.py has an installed engine of other sources.
        assert "BACKENDS [None]" in result.stdout.splitlines(), result.stdout + result.stderr
        assert "NativeFallbackWarning" not in result.stderr, result.stderr[-3000:]
