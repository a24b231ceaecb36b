"""Round trips through the segment writer and reader, for every codec and both formats."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.dumps import (
    Codec,
    CompressionError,
    ControlRecord,
    ControlType,
    ErrorKind,
    Header,
    NewRecord,
    RecordBatch,
    SegmentError,
    SegmentReader,
    SegmentWriter,
    TimestampType,
    compress,
    decode_entry,
    decompress,
    encode_control_batch,
    encode_legacy_entry,
    encode_record_batch,
)

ALL_CODECS = list(Codec)

RECORDS = [
    NewRecord(b"key-0", b"value-0", timestamp=1_000),
    NewRecord(None, b"null key", timestamp=1_002),
    NewRecord(b"", b"", timestamp=999),  # empty, not null
    NewRecord(b"tombstone", None, timestamp=1_001),
    NewRecord(None, None, timestamp=1_000),
    NewRecord(b"k" * 300, b"v" * 70_000, timestamp=1_000),  # multi-byte varints, > 1 lz4 block
    NewRecord(
        b"h",
        b"with headers",
        timestamp=1_000,
        headers=(Header(b"trace", b"abc"), Header(b"null", None), Header(b"", b"")),
    ),
]


def _only_batches(data: bytes, **kwargs: object) -> list[RecordBatch]:
    items = list(SegmentReader(data, **kwargs))  # type: ignore[arg-type]
    assert all(isinstance(i, RecordBatch) for i in items), [str(i) for i in items]
    return [i for i in items if isinstance(i, RecordBatch)]


@pytest.mark.parametrize("codec", ALL_CODECS, ids=[c.name for c in ALL_CODECS])
def test_v2_round_trip(codec: Codec) -> None:
    data = encode_record_batch(
        RECORDS,
        base_offset=1_000,
        timestamp=1_000,
        codec=codec,
        producer_id=42,
        producer_epoch=3,
        base_sequence=17,
        partition_leader_epoch=5,
    )
    (batch,) = _only_batches(data)
    assert batch.crc_valid and batch.codec == codec and batch.magic == 2
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (42, 3, 17)
    assert batch.partition_leader_epoch == 5
    assert batch.base_offset == 1_000 and batch.last_offset == 1_000 + len(RECORDS) - 1
    assert batch.max_timestamp == 1_002 and batch.timestamp_type == TimestampType.CREATE_TIME
    assert batch.last_sequence == 17 + len(RECORDS) - 1
    assert not (batch.is_transactional or batch.is_control or batch.has_delete_horizon)
    for i, (rec, exp) in enumerate(zip(batch.records, RECORDS, strict=True)):
        assert rec.offset == 1_000 + i
        assert rec.sequence == 17 + i
        assert (rec.timestamp, rec.key, rec.value) == (exp.timestamp, exp.key, exp.value)
        assert rec.headers == tuple(exp.headers)
    rows = list(SegmentReader(data).raw_records())
    assert rows == [(r.offset, r.timestamp, r.key, r.value) for r in batch.records]


@pytest.mark.parametrize("codec", ALL_CODECS, ids=[c.name for c in ALL_CODECS])
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_round_trip(codec: Codec, magic: int) -> None:
    records = [NewRecord(r.key, r.value, timestamp=r.timestamp) for r in RECORDS]
    data = encode_legacy_entry(records, magic=magic, offset=50, codec=codec, timestamp=7)
    batches = _only_batches(data)
    assert len(batches) == (len(records) if codec == Codec.NONE else 1)
    got = [r for b in batches for r in b.records]
    assert [r.offset for r in got] == list(range(50, 50 + len(records)))
    assert [(r.key, r.value) for r in got] == [(r.key, r.value) for r in records]
    if magic == 0:
        assert all(r.timestamp == -1 for r in got)
        assert all(b.timestamp_type == TimestampType.NO_TIMESTAMP_TYPE for b in batches)
    else:
        assert [r.timestamp for r in got] == [r.timestamp for r in records]
    for b in batches:
        assert b.magic == magic and b.codec == codec and b.crc_valid
        assert b.last_offset == b.records[-1].offset
        assert b.producer_id == -1 and b.base_sequence == -1
        assert all(r.sequence == -1 and r.headers == () for r in b.records)


def test_legacy_v1_log_append_time_wrapper() -> None:
    data = encode_legacy_entry(
        [NewRecord(b"a", b"1", timestamp=5), NewRecord(b"b", b"2", timestamp=6)],
        magic=1,
        offset=10,
        codec=Codec.GZIP,
        timestamp=12_345,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
    )
    (batch,) = _only_batches(data)
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in batch.records] == [12_345, 12_345]
    assert [r.offset for r in batch.records] == [10, 11]


def test_legacy_v0_lz4_with_the_old_header_checksum() -> None:
    inner = b"".join(
        struct.pack(">qi", i, 14) + struct.pack(">IBBii", 0, 0, 0, -1, -1) for i in range(2)
    )
    bad = compress(Codec.LZ4, inner, lz4_legacy_header_checksum=True)
    good = compress(Codec.LZ4, inner)
    assert bad != good and bad[:6] == good[:6]
    assert decompress(Codec.LZ4, bad) == inner == decompress(Codec.LZ4, good)
    data = encode_legacy_entry([(b"k", b"v"), (None, b"w")], magic=0, codec=Codec.LZ4)
    (batch,) = _only_batches(data)
    assert [(r.key, r.value) for r in batch.records] == [(b"k", b"v"), (None, b"w")]


@pytest.mark.parametrize("framing", [True, False], ids=["xerial", "raw"])
def test_snappy_framings_are_detected(framing: bool) -> None:
    data = encode_record_batch(RECORDS, codec=Codec.SNAPPY, snappy_framing=framing)
    payload = data[61:]
    assert payload.startswith(b"\x82SNAPPY\x00") == framing
    (batch,) = _only_batches(data)
    assert [r.value for r in batch.records] == [r.value for r in RECORDS]


def test_log_append_time() -> None:
    data = encode_record_batch(
        [NewRecord(b"a", b"1", timestamp=5), NewRecord(b"b", b"2", timestamp=9)],
        timestamp=5,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        log_append_time=77_777,
        codec=Codec.LZ4,
    )
    (batch,) = _only_batches(data)
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert batch.max_timestamp == 77_777
    assert [r.timestamp for r in batch.records] == [77_777, 77_777]
    assert [row[1] for row in SegmentReader(data).raw_records()] == [77_777, 77_777]


def test_delete_horizon() -> None:
    data = encode_record_batch(
        [NewRecord(b"a", None, timestamp=2_000)], timestamp=1_000, delete_horizon_ms=1_500
    )
    (batch,) = _only_batches(data)
    assert batch.has_delete_horizon and batch.delete_horizon_ms == 1_500
    assert batch.base_timestamp == 1_500 and batch.records[0].timestamp == 2_000


def test_sequence_wraps_like_kafka() -> None:
    data = encode_record_batch([(b"a", b"1")] * 3, producer_id=1, base_sequence=2**31 - 2)
    (batch,) = _only_batches(data)
    assert [r.sequence for r in batch.records] == [2**31 - 2, 2**31 - 1, 0]
    assert batch.last_sequence == 0


def test_empty_batch() -> None:
    (batch,) = _only_batches(encode_record_batch([], base_offset=7))
    assert batch.records == [] and batch.record_count == 0 and batch.max_timestamp == -1


@pytest.mark.parametrize("marker", [ControlType.COMMIT, ControlType.ABORT])
def test_transaction_markers(marker: ControlType) -> None:
    buf = io.BytesIO()
    w = SegmentWriter(buf, base_offset=100)
    w.write_batch(
        [(b"k1", b"v1"), (b"k2", b"v2")],
        producer_id=9,
        producer_epoch=2,
        base_sequence=0,
        transactional=True,
        timestamp=10,
    )
    w.write_control(marker, producer_id=9, producer_epoch=2, coordinator_epoch=4, timestamp=11)
    assert w.next_offset == 103 and w.batches == 2 and w.records == 3
    data_batch, marker_batch = _only_batches(buf.getvalue())
    assert data_batch.is_transactional and not data_batch.is_control
    assert marker_batch.is_transactional and marker_batch.is_control
    assert marker_batch.producer_id == 9 and marker_batch.producer_epoch == 2
    (rec,) = marker_batch.records
    assert isinstance(rec, ControlRecord)
    assert rec.offset == 102 and rec.type_name == marker.name
    assert (rec.control_version, rec.control_type) == (0, int(marker))
    assert (rec.marker_version, rec.coordinator_epoch) == (0, 4)
    reader = SegmentReader(buf.getvalue())
    assert list(reader.raw_records()) == [(100, 10, b"k1", b"v1"), (101, 10, b"k2", b"v2")]
    assert reader.summary.control_batches == 1 and reader.summary.control_records == 1


@pytest.mark.parametrize("ctype", [2, 3, 4, 5, 6, 99])
def test_kraft_control_types_keep_their_value(ctype: int) -> None:
    value = b"\x00\x00\x01\x02\x03"
    (batch,) = _only_batches(encode_control_batch(ctype, value=value))
    assert not batch.is_transactional
    (rec,) = batch.records
    assert isinstance(rec, ControlRecord)
    assert rec.value == value and rec.coordinator_epoch is None
    assert rec.type_name == ("UNKNOWN" if ctype == 99 else ControlType(ctype).name)


def test_malformed_marker_value_is_reported() -> None:
    data = encode_control_batch(ControlType.COMMIT, value=b"\x00\x00")
    (err,) = SegmentReader(data)
    assert isinstance(err, SegmentError) and err.kind == ErrorKind.CORRUPT_CONTROL


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD])
def test_decompression_cap_is_an_error_for_that_batch_only(codec: Codec) -> None:
    buf = io.BytesIO()
    w = SegmentWriter(buf)
    w.write_batch([(b"big", bytes(300_000))], codec=codec)
    w.write_batch([(b"small", b"x")], codec=codec)
    data = buf.getvalue()
    assert len(data) < 100_000
    first, second = SegmentReader(data, max_batch_size=100_000)
    assert isinstance(first, SegmentError) and first.kind == ErrorKind.TOO_LARGE
    assert first.base_offset == 0 and first.position == 0
    assert isinstance(second, RecordBatch) and second.records[0].key == b"small"
    with pytest.raises(CompressionError) as info:
        decompress(codec, data[61 : first.size], 100_000)
    assert info.value.too_large


@pytest.mark.parametrize("cap", [32 * 1024, 40_000])
def test_xerial_snappy_cap_error_names_the_limit(cap: int) -> None:
    # Two 32 KiB xerial chunks: the second one is over what is left of the cap.
    payload = compress(Codec.SNAPPY, bytes(64 * 1024))
    with pytest.raises(CompressionError) as info:
        decompress(Codec.SNAPPY, payload, cap)
    assert info.value.too_large
    assert info.value.message == f"snappy: decompressed size exceeds the limit of {cap} bytes"


def test_stored_size_cap() -> None:
    data = encode_record_batch([(b"k", bytes(5_000))])
    (err,) = SegmentReader(data, max_batch_size=1_000)
    assert isinstance(err, SegmentError) and err.kind == ErrorKind.TOO_LARGE
    assert err.size == len(data)


def test_writer_streams_to_a_path(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    positions = []
    with SegmentWriter(path, base_offset=5) as w:
        for i in range(20):
            positions.append(w.write_batch([(b"k%d" % i, b"v")] * 3, codec=Codec(i % 5)))
    with SegmentWriter(path, append=True, base_offset=w.next_offset) as w2:
        positions.append(w2.write_legacy([(b"old", b"msg")], magic=1, codec=Codec.GZIP))
    assert w2.position == path.stat().st_size
    reader = SegmentReader(path)
    batches = [i for i in reader if isinstance(i, RecordBatch)]
    assert not reader.errors
    assert [b.position for b in batches] == positions
    assert len(batches) == 21 and reader.summary.records == 61
    assert [r.offset for b in batches for r in b.records] == list(range(5, 66))


def test_decode_entry_directly() -> None:
    data = encode_record_batch([(b"a", b"b")], base_offset=3)
    batch = decode_entry(data, file="f", position=10)
    assert isinstance(batch, RecordBatch) and (batch.file, batch.position) == ("f", 10)


_bytes_or_none = st.none() | st.binary(max_size=200)
_headers = st.lists(st.builds(Header, st.binary(max_size=20), _bytes_or_none), max_size=3).map(
    tuple
)
_records = st.lists(
    st.builds(
        NewRecord,
        _bytes_or_none,
        _bytes_or_none,
        st.integers(-(2**40), 2**41),
        _headers,
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(
    records=_records,
    codec=st.sampled_from(ALL_CODECS),
    base_offset=st.integers(0, 2**62),
    base_sequence=st.integers(-1, 2**31 - 1),
    timestamp=st.integers(-(2**40), 2**41),
)
def test_v2_round_trip_property(
    records: list[NewRecord], codec: Codec, base_offset: int, base_sequence: int, timestamp: int
) -> None:
    data = encode_record_batch(
        records,
        base_offset=base_offset,
        timestamp=timestamp,
        codec=codec,
        producer_id=1 if base_sequence >= 0 else -1,
        base_sequence=base_sequence,
    )
    (batch,) = _only_batches(data)
    assert [(r.key, r.value, r.timestamp, r.headers) for r in batch.records] == [
        (r.key, r.value, r.timestamp, tuple(r.headers)) for r in records
    ]
    assert [r.offset for r in batch.records] == [base_offset + i for i in range(len(records))]


@settings(max_examples=100, deadline=None)
@given(
    records=st.lists(st.tuples(_bytes_or_none, _bytes_or_none), min_size=1, max_size=20),
    codec=st.sampled_from(ALL_CODECS),
    magic=st.sampled_from([0, 1]),
    offset=st.integers(0, 2**40),
)
def test_legacy_round_trip_property(
    records: list[tuple[bytes | None, bytes | None]], codec: Codec, magic: int, offset: int
) -> None:
    data = encode_legacy_entry(records, magic=magic, offset=offset, codec=codec)
    got = [r for b in _only_batches(data) for r in b.records]
    assert [(r.key, r.value) for r in got] == records
    assert [r.offset for r in got] == [offset + i for i in range(len(records))]
