"""The segment reader against real Kafka data files and transcribed byte vectors.

Real files: ``tests/data/kafka-data``. Vectors: the log-format categories of
``tests/data/vectors/vectors.jsonl``; each vector's ``description`` says what its bytes are.
Where they come from: ``tests/data/PROVENANCE.md``.
"""

from __future__ import annotations

import struct
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from corpus import data_path
from vector_tools import load_vectors

from codegen.dumps import (
    Codec,
    ControlRecord,
    ErrorKind,
    RecordBatch,
    SegmentError,
    SegmentReader,
    TimestampType,
    decode_legacy_message,
    encode_record_batch,
    parse_control_key,
    parse_end_txn_marker,
    segment_file_info,
    summarize,
)
from codegen.dumps.writer import NewRecord

DATA_DIR = data_path("kafka-data")

# From PROVENANCE.md: batches, records, codecs, control batches, LogAppendTime batches.
MANIFEST: dict[str, tuple[int, int, dict[str, int], int, int]] = {
    "ldi-poc/bootstrap.checkpoint": (3, 3, {"none": 3}, 2, 0),
    "ldi-poc/__cluster_metadata-0/00000000000000000000.log": (4814, 4929, {"none": 4814}, 1, 0),
    "ldi-poc/__consumer_offsets-6/00000000000000000000.log": (13, 13, {"none": 13}, 0, 0),
    "aibulb/__cluster_metadata-0/00000000000000000000.log": (11318, 11372, {"none": 11318}, 1, 0),
    "aibulb/__cluster_metadata-0/00000000000000007259-0000000001.checkpoint": (
        3,
        60,
        {"none": 3},
        2,
        0,
    ),
    "aibulb/__consumer_offsets-0/00000000000000000000.log": (28, 28, {"none": 28}, 0, 0),
    "aibulb/__consumer_offsets-28/00000000000000000000.log": (4, 4, {"none": 4}, 0, 0),
    "aibulb/my-topic-0/00000000000000000000.log": (16, 16, {"none": 16}, 0, 0),
    "mscaldas-spooldir/__consumer_offsets-0/00000000000000000000.log": (6, 6, {"none": 6}, 0, 0),
    "mscaldas-spooldir/__consumer_offsets-13/00000000000000000000.log": (5, 5, {"none": 5}, 0, 0),
    "mscaldas-spooldir/_confluent-controlcenter-5-1-2-1-actual-group-consumption-rekey-0/"
    "00000000000000000000.log": (12, 14, {"lz4": 12}, 0, 12),
    "mscaldas-spooldir/docker-connect-offsets-0/00000000000000000000.log": (
        8,
        8,
        {"none": 8},
        0,
        0,
    ),
}


def _items(source: Any, **kwargs: Any) -> list[RecordBatch | SegmentError]:
    return list(SegmentReader(source, **kwargs))


def _batches(items: list[RecordBatch | SegmentError]) -> list[RecordBatch]:
    return [i for i in items if isinstance(i, RecordBatch)]


def _assert_covers(items: list[RecordBatch | SegmentError], size: int) -> None:
    """Items are in file order and account for every byte exactly once."""
    pos = 0
    for item in items:
        assert item.position == pos
        pos += item.size
    assert pos == size


# ---------------------------------------------------------------------------------------------
# real files


def test_every_data_file_is_listed() -> None:
    found = {
        str(p.relative_to(DATA_DIR))
        for p in DATA_DIR.rglob("*")
        if p.suffix in (".log", ".checkpoint")
    }
    assert found == set(MANIFEST)


@pytest.mark.parametrize("rel", sorted(MANIFEST))
def test_real_file_decodes_fully(rel: str) -> None:
    path = DATA_DIR / rel
    n_batches, n_records, codecs, n_control, n_append = MANIFEST[rel]
    reader = SegmentReader(path)
    items = list(reader)
    assert not reader.errors, [str(e) for e in reader.errors[:3]]
    _assert_covers(items, path.stat().st_size)
    batches = _batches(items)
    assert len(batches) == n_batches
    assert sum(len(b.records) for b in batches) == n_records
    assert all(b.crc_valid and b.magic == 2 for b in batches)
    assert Counter(b.codec.name.lower() for b in batches) == codecs
    assert sum(b.is_control for b in batches) == n_control
    assert sum(b.timestamp_type == TimestampType.LOG_APPEND_TIME for b in batches) == n_append
    for b in batches:
        assert b.record_count == len(b.records)
        assert [r.offset for r in b.records] == sorted(r.offset for r in b.records)
        assert b.base_offset <= b.records[0].offset
        assert b.records[-1].offset <= b.last_offset
    s = reader.summary
    assert (s.batches, s.records, s.errors, s.control_batches) == (
        n_batches,
        n_records,
        0,
        n_control,
    )
    assert summarize(path) == s


@pytest.mark.parametrize("rel", sorted(MANIFEST))
def test_raw_mode_matches_objects(rel: str) -> None:
    path = DATA_DIR / rel
    objects = [
        (r.offset, r.timestamp, r.key, r.value)
        for b in _batches(_items(path))
        for r in b.records
        if not b.is_control
    ]
    reader = SegmentReader(path)
    assert list(reader.raw_records()) == objects
    assert not reader.errors
    assert len(list(reader.raw_records(include_control=True))) == MANIFEST[rel][1]


def test_lz4_topic_with_log_append_time() -> None:
    rel = next(k for k in MANIFEST if "controlcenter" in k)
    batches = _batches(_items(DATA_DIR / rel))
    for b in batches:
        assert b.codec == Codec.LZ4
        assert b.timestamp_type == TimestampType.LOG_APPEND_TIME
        assert all(r.timestamp == b.max_timestamp for r in b.records)
    assert sum(len(b.records) for b in batches) == 14


def test_snapshot_control_records() -> None:
    batches = _batches(_items(DATA_DIR / "ldi-poc/bootstrap.checkpoint"))
    controls = [r for b in batches for r in b.records if isinstance(r, ControlRecord)]
    assert [c.type_name for c in controls] == ["SNAPSHOT_HEADER", "SNAPSHOT_FOOTER"]
    assert all(c.marker_version is None and c.value is not None for c in controls)
    data = [r for b in batches if not b.is_control for r in b.records]
    # __cluster_metadata records have null keys and a frame version 1 value.
    assert len(data) == 1 and data[0].key is None and data[0].value is not None
    assert data[0].value[0] == 1


def test_cluster_metadata_leader_change() -> None:
    rel = "aibulb/__cluster_metadata-0/00000000000000000000.log"
    batches = _batches(_items(DATA_DIR / rel))
    control = [b for b in batches if b.is_control]
    assert len(control) == 1
    (rec,) = control[0].records
    assert isinstance(rec, ControlRecord) and rec.type_name == "LEADER_CHANGE"
    assert not control[0].is_transactional
    assert all(r.key is None for b in batches if not b.is_control for r in b.records)


def test_consumer_offsets_tombstones_and_keys() -> None:
    rel = "mscaldas-spooldir/__consumer_offsets-0/00000000000000000000.log"
    records = [r for b in _batches(_items(DATA_DIR / rel)) for r in b.records]
    assert sum(r.value is None for r in records) == 1
    assert all(r.key is not None and struct.unpack_from(">h", r.key)[0] == 1 for r in records)
    rel = "aibulb/__consumer_offsets-28/00000000000000000000.log"
    records = [r for b in _batches(_items(DATA_DIR / rel)) for r in b.records]
    assert [r.value is None for r in records].count(True) == 1
    assert {struct.unpack_from(">h", r.key or b"")[0] for r in records} == {2}


def test_bytes_and_path_sources_agree() -> None:
    rel = "aibulb/__consumer_offsets-0/00000000000000000000.log"
    path = DATA_DIR / rel
    from_path = _items(path, name="x")
    from_bytes = _items(path.read_bytes(), name="x")
    from_view = _items(memoryview(bytearray(path.read_bytes())), name="x")
    assert from_path == from_bytes == from_view


def test_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "00000000000000000000.log"
    empty.write_bytes(b"")
    reader = SegmentReader(empty)
    assert list(reader) == []
    assert reader.summary.batches == 0 and reader.summary.errors == 0


# ---------------------------------------------------------------------------------------------
# vectors


def _ids(vectors: list[dict[str, Any]]) -> list[str]:
    return [v["id"] for v in vectors]


def _trailing_zeros(expect: dict[str, Any], size: int) -> int:
    """Vectors whose source test appends zero bytes say so with a ``size_in_bytes`` key."""
    for key, value in expect.items():
        if key.startswith("size_in_bytes(with") and "trailing zero" in key:
            return int(value) - size
    return 0


def _check_batch_fields(batch: RecordBatch, expect: dict[str, Any]) -> None:
    simple = {
        "baseOffset": batch.base_offset,
        "partitionLeaderEpoch": batch.partition_leader_epoch,
        "magic": batch.magic,
        "lastOffsetDelta": batch.last_offset_delta,
        "baseTimestamp": batch.base_timestamp,
        "maxTimestamp": batch.max_timestamp,
        "producerId": batch.producer_id,
        "producerEpoch": batch.producer_epoch,
        "baseSequence": batch.base_sequence,
        "attributes": batch.attributes,
        "isControl": batch.is_control,
        "is_control_batch": batch.is_control,
        "version": batch.magic,
    }
    for key, actual in simple.items():
        if key in expect:
            assert actual == expect[key], key
    for key in ("codec", "compression"):
        if key in expect:
            assert batch.codec.name.lower() == str(expect[key]).lower()
    records = expect.get("records")
    if isinstance(records, int):
        assert len(batch.records) == records
    elif isinstance(records, list):
        assert len(batch.records) == len(records)
        for rec, exp in zip(batch.records, records, strict=True):
            assert rec.attributes == exp["attributes"]
            assert rec.timestamp - batch.base_timestamp == exp["timestampDelta"]
            assert rec.offset - batch.base_offset == exp["offsetDelta"]
            assert rec.key == bytes.fromhex(exp["key"])
            assert rec.value == bytes.fromhex(exp["value"])
            assert [(h.key, h.value) for h in rec.headers] == [
                (bytes.fromhex(h["key"]), bytes.fromhex(h["value"])) for h in exp["headers"]
            ]
    for key, value in expect.items():
        if key.startswith("records[0]."):
            field = key.removeprefix("records[0].")
            rec = batch.records[0]
            if field in ("key", "value"):
                actual = getattr(rec, field)
                assert (None if actual is None else actual.decode()) == value
            elif field == "timestamp":
                assert rec.timestamp == value
            elif field == "timestamp_type":
                assert int(batch.timestamp_type) == value
            elif field == "headers":
                got = [[h.name, None if h.value is None else h.value.decode()] for h in rec.headers]
                assert got == [list(h) for h in value]
            elif field == "checksum":
                assert batch.crc == value
            elif field == "version":
                assert isinstance(rec, ControlRecord) and rec.control_version == value
            elif field == "type":
                assert isinstance(rec, ControlRecord) and rec.control_type == value
            elif field in ("abort", "commit"):
                assert isinstance(rec, ControlRecord)
                assert (rec.type_name == field.upper()) == value
            else:
                raise AssertionError(f"unhandled expectation {key}")
    if "value" in expect and isinstance(expect["value"], str) and "records" in expect:
        assert batch.records[0].value == expect["value"].encode()
    if "headers" in expect:
        assert [(h.name, (h.value or b"").decode()) for h in batch.records[0].headers] == [
            tuple(h) for h in expect["headers"]
        ]


RECORD_BATCH_VECTORS = load_vectors("record_batch")


@pytest.mark.parametrize("vector", RECORD_BATCH_VECTORS, ids=_ids(RECORD_BATCH_VECTORS))
def test_record_batch_vector(vector: dict[str, Any]) -> None:
    data = bytes.fromhex(vector["hex"])
    expect = vector["expect"]
    crc_broken = vector.get("crc_matches") is False
    zeros = _trailing_zeros(expect, len(data))
    items = _items(data + bytes(zeros))
    _assert_covers(items, len(data) + zeros)
    errors = [i for i in items if isinstance(i, SegmentError)]
    if crc_broken:
        # The source test never checks the CRC; a checking reader must flag it, and can still
        # decode the batch when told to.
        assert [e.kind for e in errors] == [ErrorKind.CRC_MISMATCH]
        items = _items(data, verify_crc=False)
        assert all(isinstance(i, RecordBatch) and not i.crc_valid for i in items)
        assert [i.crc for i in _batches(items)] == [vector["crc_stored"]]
        errors = []
    if zeros:
        assert [(e.kind, e.size) for e in errors] == [(ErrorKind.ZERO_PADDING, zeros)]
    else:
        assert errors == []
    batches = _batches(items)
    assert all(b.crc_valid for b in batches) or crc_broken
    if "batches" in expect:
        assert len(batches) == expect["batches"]
    if "valid_bytes" in expect:
        assert sum(b.size for b in batches) == expect["valid_bytes"]
    comment = expect.get("source_comment")
    if comment is not None:
        (batch,) = batches
        if "values" in comment:
            assert [r.value for r in batch.records] == [v.encode() for v in comment["values"]]
        else:
            assert [r.value for r in batch.records] == [comment["value"].encode()]
        return
    if "batches" in expect:
        first = {k.removeprefix("first_batch."): v for k, v in expect.items() if "first_" in k}
        last = {k.removeprefix("last."): v for k, v in expect.items() if k.startswith("last.")}
        rec0 = {k: v for k, v in expect.items() if k.startswith("records[0].")}
        _check_batch_fields(batches[0], first | rec0)
        if last:
            _check_batch_fields(batches[-1], last)
        return
    (batch,) = batches
    _check_batch_fields(batch, expect)


def test_aiokafka_segment_values_per_batch() -> None:
    (vector,) = [v for v in RECORD_BATCH_VECTORS if v["id"] == "aiokafka/segment-v2-3-batches"]
    batches = _batches(_items(bytes.fromhex(vector["hex"])))
    assert [[r.value for r in b.records] for b in batches] == [[b"123"], [b"", b""], [b"123"]]


LEGACY_VECTORS = load_vectors("legacy_message")


def _check_legacy(batches: list[RecordBatch], vector: dict[str, Any]) -> None:
    expect = vector["expect"]
    if "messages" in expect:
        assert len(batches) == expect["messages"]
        assert [b.records[0].value for b in batches] == [v.encode() for v in vector["values"]]
        first = batches[0]
        rec = first.records[0]
        assert rec.key is None and rec.value == expect["records[0].value"].encode()
        assert first.crc == expect["records[0].checksum"]
        ts = expect["records[0].timestamp"]
        assert rec.timestamp == (-1 if ts is None else ts)
        if ts is not None:
            assert first.timestamp_type == expect["records[0].timestamp_type"]
        else:
            assert first.timestamp_type == TimestampType.NO_TIMESTAMP_TYPE
        assert [b.base_offset for b in batches] == list(range(len(batches)))
        return
    (batch,) = batches
    assert batch.magic == expect["magic"]
    assert batch.codec.name.lower() == expect["codec"]
    if "timestamp" in expect:
        assert batch.base_timestamp == expect["timestamp"]
    if batch.codec == Codec.NONE:
        (rec,) = batch.records
        assert rec.key is None and rec.value is None
        return
    if "inner_message_count" in expect:
        assert len(batch.records) == expect["inner_message_count"]
        offsets = [r.offset for r in batch.records]
        if batch.magic == 1:
            # Inner offsets are relative; the wrapper's own offset is the last absolute one.
            assert offsets == list(
                range(batch.last_offset - len(offsets) + 1, batch.last_offset + 1)
            )
        else:
            # v0 inner offsets are absolute, as written (sarama writes 0..n-1).
            assert offsets == list(range(len(offsets)))
    else:
        # A wrapper around an empty (not null) compressed value: no inner messages.
        assert batch.records == []


@pytest.mark.parametrize("vector", LEGACY_VECTORS, ids=_ids(LEGACY_VECTORS))
def test_legacy_message_vector(vector: dict[str, Any]) -> None:
    data = bytes.fromhex(vector["hex"])
    expect = vector["expect"]
    if vector["encoding"].startswith("single legacy message"):
        bare = decode_legacy_message(data, offset=5)
        assert isinstance(bare, RecordBatch), bare
        assert bare.crc_valid
        _check_legacy([bare], vector)
        # As a segment entry with a synthesized 12-byte log header.
        entry = struct.pack(">qi", 5, len(data)) + data
        items = _items(entry)
        assert all(isinstance(i, RecordBatch) for i in items)
        _check_legacy(_batches(items), vector)
        assert not [i for i in items if isinstance(i, SegmentError)]
        return
    zeros = _trailing_zeros(expect, len(data))
    items = _items(data + bytes(zeros))
    _assert_covers(items, len(data) + zeros)
    errors = [i for i in items if isinstance(i, SegmentError)]
    assert [(e.kind, e.size) for e in errors] == (
        [(ErrorKind.ZERO_PADDING, zeros)] if zeros else []
    )
    batches = _batches(items)
    assert all(b.crc_valid for b in batches)
    _check_legacy(batches, vector)


LEGACY_ERROR_VECTORS = load_vectors("legacy_message_error")


@pytest.mark.parametrize("vector", LEGACY_ERROR_VECTORS, ids=_ids(LEGACY_ERROR_VECTORS))
def test_legacy_message_error_vector(vector: dict[str, Any]) -> None:
    data = bytes.fromhex(vector["hex"])
    expected = vector["expect"]["error"]
    if vector["encoding"].startswith("single legacy message"):
        result = decode_legacy_message(data)
        assert isinstance(result, SegmentError)
        assert result.kind == ErrorKind.BAD_MAGIC
        assert "unknown magic byte (2)" in result.reason and "unknown magic byte (2)" in expected
        return
    # offset 3, size 3 and three bytes: Kafka's reader raises CorruptRecordException.
    reader = SegmentReader(data)
    items = list(reader)
    assert [(e.kind, e.position, e.size, e.base_offset) for e in reader.errors] == [
        (ErrorKind.BAD_LENGTH, 0, len(data), 3)
    ]
    assert items == reader.errors


CONTROL_VECTORS = load_vectors("control_record")


@pytest.mark.parametrize("vector", CONTROL_VECTORS, ids=_ids(CONTROL_VECTORS))
def test_control_record_vector(vector: dict[str, Any]) -> None:
    key = bytes.fromhex(vector["hex"])
    expect = vector["expect"]
    epoch = expect.get("coordinatorEpoch", 0)
    value = struct.pack(">hi", 0, epoch)
    batch_bytes = encode_record_batch(
        [NewRecord(key, value)], control=True, transactional=True, producer_id=9
    )
    items = _items(batch_bytes)
    version = struct.unpack_from(">h", key)[0]
    if version < 0:
        # aiokafka reads the fields unsigned; Kafka reads int16 and rejects a negative version.
        assert vector["source_reads_unsigned"]
        (err,) = items
        assert isinstance(err, SegmentError) and err.kind == ErrorKind.CORRUPT_CONTROL
        assert "invalid version found for control record: -1" in err.reason
        with pytest.raises(ValueError):
            parse_control_key(key)
        return
    (batch,) = items
    assert isinstance(batch, RecordBatch) and batch.is_control and batch.is_transactional
    (rec,) = batch.records
    assert isinstance(rec, ControlRecord)
    assert (rec.control_version, rec.control_type) == parse_control_key(key)
    assert rec.control_version == expect.get("version", rec.control_version)
    if isinstance(expect.get("type"), int):
        assert rec.control_type == expect["type"]
    if "marker" in expect:
        assert rec.type_name == expect["marker"]
    if isinstance(expect.get("type"), str):
        name = expect["type"]
        if name.startswith("unknown"):
            assert rec.type_name == "UNKNOWN" and rec.control_type == 128
        else:
            assert f"{rec.type_name}({rec.control_type})" == name
    if rec.type_name in ("ABORT", "COMMIT"):
        assert (rec.marker_version, rec.coordinator_epoch) == (0, epoch)
    else:
        assert rec.coordinator_epoch is None


def test_end_txn_marker_parsing() -> None:
    assert parse_end_txn_marker(struct.pack(">hi", 0, 7)) == (0, 7)
    assert parse_end_txn_marker(struct.pack(">hi", 3, 7) + b"xx") == (3, 7)
    for bad in (None, b"\x00\x00\x00", struct.pack(">hi", -1, 7)):
        with pytest.raises(ValueError):
            parse_end_txn_marker(bad)


def _fetch_v10_records(frame: bytes) -> list[tuple[int, bytes]]:
    """(position, records bytes) of every partition of a framed FetchResponse v10."""
    pos = 8  # int32 size + int32 correlation id
    pos += 4 + 2 + 4  # throttle_time_ms, error_code, session_id
    (n_topics,) = struct.unpack_from(">i", frame, pos)
    pos += 4
    out = []
    for _ in range(n_topics):
        (name_len,) = struct.unpack_from(">h", frame, pos)
        pos += 2 + name_len
        (n_parts,) = struct.unpack_from(">i", frame, pos)
        pos += 4
        for _ in range(n_parts):
            pos += 4 + 2 + 8 + 8 + 8  # partition, error, high watermark, LSO, log start
            (n_aborted,) = struct.unpack_from(">i", frame, pos)
            pos += 4 + max(n_aborted, 0) * 16
            (size,) = struct.unpack_from(">i", frame, pos)
            pos += 4
            out.append((pos, frame[pos : pos + max(size, 0)]))
            pos += max(size, 0)
    assert pos == len(frame)
    return out


FETCH_VECTORS = load_vectors("fetch_response_records")


@pytest.mark.parametrize("vector", FETCH_VECTORS, ids=_ids(FETCH_VECTORS))
def test_fetch_response_records_vector(vector: dict[str, Any]) -> None:
    frame = bytes.fromhex(vector["hex"])
    ((pos, records),) = _fetch_v10_records(frame)
    inferred = vector["inferred"]
    assert (pos, len(records)) == (
        inferred["records_field_offset_in_hex_bytes"],
        inferred["records_field_length"],
    )
    reader = SegmentReader(records, name=vector["id"])
    items = list(reader)
    _assert_covers(items, len(records))
    assert reader.errors == []
    batches = _batches(items)
    got = [(r.key, r.value) for b in batches for r in b.records]
    expected = [
        (m["key"].encode(), m["value"].encode()) for m in vector["expect"]["messages_in_order"]
    ]
    assert got == expected
    formats = []
    for b in batches:
        codec = b.codec.name.lower()
        if b.magic == 2 or b.codec != Codec.NONE:
            formats.append(f"v{b.magic}/{codec} x{len(b.records)}")
        else:
            formats.append(f"v{b.magic}/{codec}")
    assert formats == inferred["formats_in_order"]
    offsets = [r.offset for b in batches for r in b.records]
    assert offsets == list(range(len(offsets)))
    assert offsets[-1] + 1 == inferred["highWatermark"]


def test_file_names() -> None:
    info = segment_file_info(
        DATA_DIR / "aibulb/__cluster_metadata-0/00000000000000007259-0000000001.checkpoint"
    )
    assert (info.kind, info.snapshot_end_offset, info.snapshot_epoch) == ("snapshot", 7259, 1)
    assert segment_file_info(DATA_DIR / "ldi-poc/bootstrap.checkpoint").kind == "snapshot"
    for rel in MANIFEST:
        info = segment_file_info(DATA_DIR / rel)
        if info.kind == "log":
            assert info.base_offset == 0
            first = _batches(_items(DATA_DIR / rel))[0]
            assert first.base_offset >= info.base_offset
    assert segment_file_info("00000000000000000013.snapshot").kind == "other"
