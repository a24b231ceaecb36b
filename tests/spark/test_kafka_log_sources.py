"""``kafka-log`` paths (glob patterns, lists), input partitions (files packed and split),
``decode=true`` on a whole broker folder, and ``flat`` (one record type's fields as columns), on
the committed broker folders."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import Any

import pytest

import spark_udfs
from codegen.columnar.topics import TOPICS
from codegen.dumps.coordinator import decode_records
from codegen.dumps.decoded import RECORD, TOMBSTONE
from codegen.dumps.metadata import decode_metadata_records
from codegen.dumps.storage import expand_braces
from spark_udfs import functions
from spark_udfs.datasource import KafkaLogDataSource
from spark_udfs.log_slices import pack_slices

from .conftest import REAL_DATA

pytestmark = pytest.mark.spark

AIBULB = REAL_DATA / "aibulb"  # __cluster_metadata-0, __consumer_offsets-0/-28, my-topic-0


def _files(df: Any) -> set[str]:
    return {r.file for r in df.select("file").distinct().collect()}


def _log_files(folder: Path) -> list[Path]:
    return sorted(f for f in folder.iterdir() if f.suffix in (".log", ".checkpoint"))


def _segments(*folders: Path) -> set[str]:
    return {str(f) for folder in folders for f in _log_files(folder)}


def test_brace_alternatives_expand_like_hadoop_globs() -> None:
    assert expand_braces("a{1,2}b") == ["a1b", "a2b"]
    assert expand_braces("{x,y{1,2}}-*") == ["x-*", "y1-*", "y2-*"]
    assert expand_braces("plain") == ["plain"]


def _write_segments(folder: Path, batches: list[int]) -> list[tuple[Path, str, int]]:
    """One segment per entry of ``batches`` (that many 10-record batches), as broker folders."""
    from codegen.dumps import SegmentWriter

    files = []
    for k, count in enumerate(batches):
        path = folder / f"t-{k}" / "00000000000000000000.log"
        path.parent.mkdir(parents=True)
        with SegmentWriter(path) as w:
            for i in range(count):
                w.write_batch([(b"k%d" % i, b"v" * 100)] * 10)
        files.append((path, "t", k))
    return files


def _read_in_order(parts: list[Any]) -> list[tuple[str, int, int]]:
    return [(sl.path, sl.start, sl.end) for part in parts for sl in part.slices]


def test_files_are_packed_into_partitions_as_spark_packs_its_files(tmp_path: Path) -> None:
    files = _write_segments(tmp_path, [40, 40, 40, 40, 3, 3])
    sizes = [path.stat().st_size for path, _, _ in files]
    whole = [(str(path), 0, size) for (path, _, _), size in zip(files, sizes, strict=True)]
    # Two cores: half the bytes (open costs included) per partition, files whole, so the large
    # files two by two, the first small file after the last two and the other on its own.
    parts = pack_slices(files, open_cost=1000, min_partitions=2)
    assert [len(p.slices) for p in parts] == [2, 3, 1]
    assert _read_in_order(parts) == whole
    # One partition holds what fits in maxBytesPerPartition, a file counting its open cost more.
    parts = pack_slices(files, max_bytes=2 * sizes[0] + 1000, open_cost=1000)
    assert [len(p.slices) for p in parts] == [2, 2, 2] and _read_in_order(parts) == whole
    # Many cores: files are cut at entry boundaries, every byte read once, in order.
    parts = pack_slices(files, open_cost=1000, min_partitions=16)
    assert len(parts) >= 16
    spans = _read_in_order(parts)
    assert [sp[0] for sp in spans] == sorted(sp[0] for sp in spans)
    for (path, _, _), size in zip(files, sizes, strict=True):
        mine = [sp for sp in spans if sp[0] == str(path)]
        assert mine[0][1] == 0 and mine[-1][2] == size
        assert all(a[2] == b[1] for a, b in itertools.pairwise(mine))
    with pytest.raises(ValueError, match="minPartitions must be positive"):
        pack_slices(files, min_partitions=0)


def test_every_slice_starts_on_an_entry_and_the_rows_are_those_of_one_partition(
    tmp_path: Path,
) -> None:
    _write_segments(tmp_path, [40, 40, 3])
    options = {"path": str(tmp_path), "includeHeaders": "false"}
    one = KafkaLogDataSource({**options, "minPartitions": "1"}).reader(None)
    many = KafkaLogDataSource({**options, "minPartitions": "9", "openCostInBytes": "0"}).reader(
        None
    )
    [whole], parts = one.partitions(), many.partitions()
    assert len(parts) >= 9 and len(whole.slices) == 3

    def rows(reader: Any, partitions: list[Any]) -> list[Any]:
        return [row for p in partitions for rb in reader.read(p) for row in rb.to_pylist()]

    got = rows(many, parts)
    assert got == rows(one, [whole]) and not any(r["_error"] for r in got)
    assert len(got) == 830


def test_a_glob_pattern_reads_every_matching_folder(spark: Any) -> None:
    df = spark.read.format("kafka-log").load(str(REAL_DATA / "*" / "__consumer_offsets-*"))
    expected = _segments(*REAL_DATA.glob("*/__consumer_offsets-*"))
    assert len(expected) == 5
    assert _files(df) == expected


def test_lists_of_paths_and_the_paths_option(spark: Any) -> None:
    folders = [AIBULB / "__consumer_offsets-0", REAL_DATA / "ldi-poc" / "__consumer_offsets-6"]
    expected = _segments(*folders)
    as_list = spark.read.format("kafka-log").load([str(f) for f in folders])
    assert _files(as_list) == expected
    option = (
        spark.read.format("kafka-log").option("paths", ",".join(str(f) for f in folders)).load()
    )
    assert _files(option) == expected
    braces = spark.read.format("kafka-log").load(
        str(REAL_DATA / "{aibulb,ldi-poc}" / "__consumer_offsets-{0,6}")
    )
    assert _files(braces) == expected


def test_a_pattern_that_matches_nothing_fails_at_load(spark: Any) -> None:
    pattern = str(REAL_DATA / "*" / "__transaction_state-*")
    with pytest.raises(Exception, match="matches no file or folder") as info:
        spark.read.format("kafka-log").load(pattern)
    assert pattern in str(info.value)


def test_decode_true_on_a_broker_folder(spark: Any) -> None:
    df = spark.read.format("kafka-log").option("decode", "true").load(str(AIBULB))
    value_members = df.schema["decodedValue"].dataType.fieldNames()
    key_members = df.schema["decodedKey"].dataType.fieldNames()
    offsets, metadata = TOPICS["consumer_offsets"], TOPICS["cluster_metadata"]
    by_type = sorted(offsets.values().items()) + sorted(metadata.values().items())
    assert value_members == [name for _, name in by_type]
    assert key_members == [name for _, name in sorted(offsets.keys().items())]
    rows = df.collect()
    by_topic: dict[str, list[Any]] = {}
    for r in rows:
        by_topic.setdefault(r.topic, []).append(r)
    assert set(by_topic) == {"__cluster_metadata", "__consumer_offsets", "my-topic"}
    # The other topic is read plain: its records are there, nothing decoded.
    plain = by_topic["my-topic"]
    assert len(plain) == 16 and all(r.value is not None for r in plain)
    assert all(
        (r.recordType, r.recordName, r.decodedKey, r.decodedValue, r.valueVersion) == (None,) * 5
        for r in plain
    )
    # Each internal topic is decoded as the core decodes it, record for record.
    expected = {
        (str(f), rec.offset, rec.name, rec.kind == TOMBSTONE)
        for folder in AIBULB.glob("__consumer_offsets-*")
        for f in _log_files(folder)
        for rec in decode_records(str(f))
    } | {
        (str(f), rec.offset, rec.name, False)
        for f in _log_files(AIBULB / "__cluster_metadata-0")
        for rec in decode_metadata_records(str(f))
        if rec.kind == RECORD
    }
    got = {
        (r.file, r.offset, r.recordName, r.isTombstone)
        for topic in ("__consumer_offsets", "__cluster_metadata")
        for r in by_topic[topic]
        if r.recordName is not None
    }
    assert got == expected
    topic_record = next(r for r in by_topic["__cluster_metadata"] if r.recordName == "TopicRecord")
    assert topic_record.decodedKey is None
    assert topic_record.decodedValue.TopicRecord.name == "my-topic"


def test_decode_true_with_no_internal_topic_says_so(spark: Any, tmp_path: Path) -> None:
    shutil.copytree(AIBULB / "my-topic-0", tmp_path / "my-topic-0")
    with pytest.raises(Exception, match="found no internal topic to decode"):
        spark.read.format("kafka-log").option("decode", "true").load(str(tmp_path)).collect()


def test_flat_offset_commits(spark: Any) -> None:
    folder = REAL_DATA / "ldi-poc" / "__consumer_offsets-6"
    co = functions.decode_consumer_offsets(spark.read.format("kafka-log").load(str(folder)))
    flat = spark_udfs.flat(co, "OffsetCommit")
    assert flat.columns == [
        "group",
        "topic",
        "partition",
        "offset",
        "leaderEpoch",
        "metadata",
        "commitTimestamp",
        "expireTimestamp",
        "topicId",
        "recordTopic",
        "recordPartition",
        "recordOffset",
        "timestamp",
    ]
    assert {r.recordTopic for r in flat.select("recordTopic").collect()} == {"__consumer_offsets"}
    got = sorted(
        (r.recordOffset, r.group, r.topic, r.partition, r.offset, r.commitTimestamp)
        for r in flat.collect()
    )
    expected = sorted(
        (
            rec.offset,
            rec.key.group,
            rec.key.topic,
            rec.key.partition,
            rec.value.offset,
            rec.value.commit_timestamp,
        )
        for rec in decode_records(str(folder))
        if rec.name == "OffsetCommit" and rec.kind == RECORD
    )
    assert got == expected and len(got) > 0


def test_flat_metadata_records_and_unknown_names(spark: Any) -> None:
    df = spark.read.format("kafka-log").option("decode", "true").load(str(AIBULB))
    topics = spark_udfs.flat(df, "TopicRecord", keep=["topic", "offset"])
    assert topics.columns == ["name", "topicId", "topic", "offset"]
    assert {r.topic for r in topics.collect()} == {"__cluster_metadata"}
    expected = {
        rec.value.name
        for f in _log_files(AIBULB / "__cluster_metadata-0")
        for rec in decode_metadata_records(str(f))
        if rec.name == "TopicRecord"
    }
    assert {r.name for r in topics.collect()} == expected
    with pytest.raises(ValueError, match=r"no record named 'Offsets'.*OffsetCommit.*TopicRecord"):
        spark_udfs.flat(df, "Offsets")
    raw = spark.read.format("kafka-log").load(str(AIBULB))
    with pytest.raises(ValueError, match="flat needs decoded records"):
        spark_udfs.flat(raw, "OffsetCommit")


def test_the_record_loops_give_the_same_rows(spark: Any) -> None:
    """``recordLoop=native`` (the columnar loop in C) and ``pure`` read a broker folder, with
    and without decode and headers, into the same rows; a wrong value fails at load."""
    for options in ({}, {"decode": "true"}, {"includeHeaders": "false"}):
        frames = {
            loop: spark.read.format("kafka-log")
            .options(recordLoop=loop, **options)
            .load(str(AIBULB))
            .orderBy("file", "batchPosition", "offset")
            .collect()
            for loop in ("native", "pure")
        }
        assert frames["native"] == frames["pure"] and len(frames["native"]) > 100, options
    with pytest.raises(Exception, match="recordLoop"):
        spark.read.format("kafka-log").option("recordLoop", "fast").load(str(AIBULB)).collect()


def _json_rows(df: Any, *columns: str) -> list[tuple[Any, ...]]:
    """``columns`` of every row, structs as JSON text (comparable, maps included)."""
    from pyspark.sql import functions as F

    return sorted(
        tuple(r)
        for r in df.select("file", "offset", *(F.to_json(F.struct(c)) for c in columns)).collect()
    )


def test_record_types_narrow_the_unions_and_decode_only_those_records(spark: Any) -> None:
    full = spark.read.format("kafka-log").option("decode", "true").load(str(AIBULB))
    narrow = (
        spark.read.format("kafka-log")
        .options(decode="true", recordTypes="OffsetCommit, TopicRecord")
        .load(str(AIBULB))
    )
    assert narrow.schema["decodedKey"].dataType.fieldNames() == ["OffsetCommitKey"]
    assert narrow.schema["decodedValue"].dataType.fieldNames() == [
        "OffsetCommitValue",
        "TopicRecord",
    ]
    chosen = "recordName IN ('OffsetCommit', 'TopicRecord')"
    members = ("decodedKey.OffsetCommitKey", "decodedValue.OffsetCommitValue")
    assert full.filter(chosen).count() > 10
    assert _json_rows(narrow.filter(chosen), *members, "decodedValue.TopicRecord") == _json_rows(
        full.filter(chosen), *members, "decodedValue.TopicRecord"
    )
    # Every record is still there, named; the others are not decoded.
    assert _json_rows(narrow, "recordType", "recordName", "key", "value") == _json_rows(
        full, "recordType", "recordName", "key", "value"
    )
    others = narrow.filter(f"NOT ({chosen}) AND recordName IS NOT NULL").collect()
    assert {r.recordName for r in others} >= {"GroupMetadata", "PartitionRecord"}
    assert all((r.decodedKey, r.decodedValue) == (None, None) for r in others)
    # As for a record type the specs do not know: a coordinator record's value is not read.
    assert all(
        (r.valueVersion, r.isTombstone) == (None, False)
        for r in others
        if r.topic == "__consumer_offsets"
    )


def test_columns_returns_only_those_with_the_error_columns(spark: Any) -> None:
    folder = str(AIBULB / "__consumer_offsets-0")
    full = spark.read.format("kafka-log").options(decode="true", mode="permissive").load(folder)
    some = (
        spark.read.format("kafka-log")
        .options(decode="true", mode="permissive", columns="decodedValue,offset,file")
        .load(folder)
    )
    # The source's order, and the error columns whether named or not.
    assert some.columns == ["offset", "file", "_error", "decodedValue", "_decode_error"]
    assert sorted(map(tuple, some.collect())) == sorted(
        map(tuple, full.select(some.columns).collect())
    )
    raw = spark.read.format("kafka-log").option("columns", "offset,headers").load(folder)
    assert raw.columns == ["offset", "headers", "_error"]
    assert raw.count() == full.count()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"decode": "true", "recordTypes": "OffsetCommit,Nope"}, r"recordTypes names \['Nope'\]"),
        ({"recordTypes": "OffsetCommit"}, "recordTypes selects records to decode; add decode"),
        ({"columns": "offset,nope"}, r"columns names \['nope'\], which this read does not have"),
    ],
)
def test_unknown_record_types_and_columns_say_what_there_is(
    spark: Any, options: dict[str, str], message: str
) -> None:
    folder = str(AIBULB / "__consumer_offsets-0")
    with pytest.raises(Exception, match=message) as info:
        spark.read.format("kafka-log").options(**options).load(folder).collect()
    if "Nope" in message:
        assert "GroupMetadata" in str(info.value)  # the names to use


def test_a_record_that_fails_to_decode_names_its_topic_partition_and_offset(
    spark: Any, tmp_path: Path
) -> None:
    from codegen.dumps import SegmentWriter

    key = b"\x00\x01" + b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x00"  # OffsetCommitKey
    (tmp_path / "__consumer_offsets-3").mkdir()
    with SegmentWriter(tmp_path / "__consumer_offsets-3" / "00000000000000000000.log") as w:
        w.write_batch([(key, b"\x00\x03\x00\x00"), (key, b"\x00\x03\x00")], base_offset=40)
    reader = spark.read.format("kafka-log").options(decode="true", columns="decodedValue")
    with pytest.raises(Exception, match="topic __consumer_offsets, partition 3, offset 40"):
        reader.load(str(tmp_path)).collect()


def test_batch_rows_are_the_header_pass_of_each_file(spark: Any, tmp_path: Path) -> None:
    """``rows=batches``: one row per log entry, the header pass's fields, split files too;
    a damaged entry is one row with ``_error``."""
    from codegen.dumps.batch_rows import batch_rows

    damaged = tmp_path / "t-0" / "00000000000000000000.log"
    damaged.parent.mkdir()
    data = bytearray((AIBULB / "my-topic-0" / "00000000000000000000.log").read_bytes())
    data[70] ^= 0x40  # the first batch's CRC no longer matches
    damaged.write_bytes(bytes(data))
    paths = [*_log_files(AIBULB / "__consumer_offsets-0"), damaged]
    df = (
        spark.read.format("kafka-log")
        .option("rows", "batches")
        .option("maxBytesPerPartition", 2000)
        .load([str(p) for p in paths])
    )
    got = sorted(
        (r.file, r.batchPosition, r.baseOffset, r.lastOffset, r.maxTimestamp, r._error)
        for r in df.collect()
    )
    expected = sorted(
        (str(p), *(row[k] for k in ("batchPosition", "baseOffset", "lastOffset", "maxTimestamp",
                                     "_error")))
        for p in paths
        for row in batch_rows(p).to_pylist()
    )  # fmt: skip
    assert got == expected and len(got) > 30
    assert [e for *_, e in got if e] == [e for *_, e in expected if e] != []
    reader = spark.read.format("kafka-log").option("rows", "batches").option("decode", "true")
    with pytest.raises(Exception, match="rows=batches reads batch headers only; decode"):
        reader.load(str(damaged))
