"""Mutated segments give reported errors only: no exception, no hang, no huge allocation.

A segment mixing every entry kind is bit-flipped, truncated, given bad lengths, spliced and
padded. Reading with ``verify_crc=False`` as well lets the corruption reach the decompressors
and the record parsers instead of stopping at the checksum.
"""

from __future__ import annotations

import io
import struct
import tracemalloc
import zlib
from functools import cache

import crc32c
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegen.dumps import (
    Codec,
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
    decompressed_size_bound,
    encode_record_batch,
)
from codegen.dumps.coordinator import decode_batches, decode_records
from codegen.dumps.decoded import DecodedBatch
from codegen.dumps.metadata import decode_metadata_batches, decode_metadata_records

CAP = 256 * 1024
"""Decompressed-size cap used when reading mutants."""


@cache
def base_segment() -> bytes:
    buf = io.BytesIO()
    w = SegmentWriter(buf, base_offset=0)
    recs = [
        NewRecord(b"key-%d" % i, b"value-%d" % i * (i % 4), timestamp=1_000 + i) for i in range(12)
    ]
    recs.append(NewRecord(None, None, headers=(Header(b"h", b"v"), Header(b"n", None))))
    for codec in Codec:
        w.write_batch(recs, codec=codec, timestamp=1_000, producer_id=3, base_sequence=0)
    w.write_batch(
        recs[:3],
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        log_append_time=5_000,
        codec=Codec.LZ4,
    )
    w.write_batch(recs[:4], transactional=True, producer_id=4, producer_epoch=1)
    w.write_control(ControlType.COMMIT, producer_id=4, producer_epoch=1, coordinator_epoch=2)
    w.write_control(ControlType.SNAPSHOT_HEADER, value=b"\x00\x00\x00\x00\x00\x00\x00\x00\x00")
    w.write_legacy(recs[:2], magic=0)
    w.write_legacy(recs[:5], magic=0, codec=Codec.GZIP)
    w.write_legacy(recs[:5], magic=1, codec=Codec.LZ4)
    w.write_legacy(recs[:5], magic=1, codec=Codec.SNAPPY)
    w.write_legacy(recs[:2], magic=1, codec=Codec.ZSTD)
    w.write_batch([(b"z", bytes(50_000))], codec=Codec.ZSTD)
    return buf.getvalue()


def check(data: bytes) -> None:
    """Read ``data`` every way; everything must be accounted for and nothing may escape."""
    for verify in (True, False):
        tracemalloc.start()
        try:
            reader = SegmentReader(data, max_batch_size=CAP, verify_crc=verify)
            items = list(reader)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        # Batches are decompressed one at a time and never beyond the cap.
        assert peak < 4 * CAP + 8 * len(data) + (1 << 20), peak
        pos = 0
        n_records = 0
        for item in items:
            assert isinstance(item, RecordBatch | SegmentError)
            assert item.position == pos and item.size > 0
            pos += item.size
            if isinstance(item, SegmentError):
                assert isinstance(item.kind, ErrorKind)
                assert not item.reason.startswith("unexpected"), item
            else:
                n_records += len(item.records)
                if item.magic == 2:
                    assert len(item.records) == item.record_count
                    assert item.crc_valid or not verify
        assert pos == len(data)
        s = reader.summary
        errors = [i for i in items if isinstance(i, SegmentError)]
        assert (s.records, s.errors) == (n_records, len(errors))
        assert s.batches + s.errors == len(items)
        assert s.error_bytes == sum(e.size for e in errors)
        raw = SegmentReader(data, max_batch_size=CAP, verify_crc=verify)
        rows = list(raw.raw_records(include_control=True))
        assert len(rows) == n_records
        assert [(e.kind, e.position) for e in raw.errors] == [(e.kind, e.position) for e in errors]


def test_base_segment_is_clean() -> None:
    data = base_segment()
    reader = SegmentReader(data)
    items = list(reader)
    assert not reader.errors
    assert len(items) == 16
    assert reader.summary.records == 5 * 13 + 3 + 4 + 1 + 1 + 2 + 5 + 5 + 5 + 2 + 1
    check(data)


_positions = st.integers(min_value=0, max_value=len(base_segment()) - 1)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flips=st.lists(st.tuples(_positions, st.integers(0, 7)), min_size=1, max_size=8))
def test_bit_flips(flips: list[tuple[int, int]]) -> None:
    data = bytearray(base_segment())
    for pos, bit in flips:
        data[pos] ^= 1 << bit
    check(bytes(data))


@settings(max_examples=200, deadline=None)
@given(cut=_positions)
def test_truncation(cut: int) -> None:
    data = base_segment()[:cut]
    check(data)
    items = list(SegmentReader(data))
    errors = [i for i in items if isinstance(i, SegmentError)]
    # Cutting inside an entry leaves exactly one torn tail; cutting between entries leaves none.
    assert len(errors) <= 1
    if errors:
        assert errors[0].kind in (ErrorKind.TRUNCATED_TAIL, ErrorKind.ZERO_PADDING)
        assert errors[0].position + errors[0].size == cut


@settings(max_examples=300, deadline=None)
@given(
    pos=_positions,
    value=st.one_of(
        st.integers(-(2**31), 2**31 - 1),
        st.sampled_from([-1, 0, 1, 13, 14, 48, 49, 2**31 - 1, -(2**31)]),
    ),
    width=st.sampled_from([">i", ">h", ">q", ">b"]),
)
def test_bad_lengths(pos: int, value: int, width: str) -> None:
    data = bytearray(base_segment())
    size = struct.calcsize(width)
    lo, hi = -(2 ** (8 * size - 1)), 2 ** (8 * size - 1) - 1
    pos = min(pos, len(data) - size)
    struct.pack_into(width, data, pos, max(lo, min(hi, value)))
    check(bytes(data))


def _entry_starts(data: bytes) -> list[int]:
    starts = []
    pos = 0
    while pos + 12 <= len(data):
        starts.append(pos)
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    return starts


@settings(max_examples=200, deadline=None)
@given(
    entry=st.integers(0, 15),
    field=st.sampled_from([8, 23, 57]),  # batch length, lastOffsetDelta, record count
    value=st.integers(-(2**31), 2**31 - 1),
)
def test_bad_header_fields_with_valid_crc(entry: int, field: int, value: int) -> None:
    data = bytearray(base_segment())
    start = _entry_starts(bytes(data))[entry]
    if data[start + 16] != 2:
        return
    struct.pack_into(">i", data, start + field, value)
    end = start + 12 + struct.unpack_from(">i", data, start + 8)[0]
    if field != 8 and end <= len(data):
        struct.pack_into(">I", data, start + 17, crc32c.crc32c(bytes(data[start + 21 : end])))
    check(bytes(data))


@settings(max_examples=200, deadline=None)
@given(
    pos=_positions,
    delete=st.integers(0, 40),
    insert=st.binary(max_size=40),
    tail=st.one_of(st.just(b""), st.binary(max_size=30), st.integers(1, 5000).map(bytes)),
)
def test_splices_and_tails(pos: int, delete: int, insert: bytes, tail: bytes) -> None:
    base = base_segment()
    check(base[:pos] + insert + base[pos + delete :] + tail)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=400))
def test_random_bytes(data: bytes) -> None:
    check(data)


@settings(max_examples=200, deadline=None)
@given(
    codec=st.sampled_from([Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD]),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 7)), min_size=1, max_size=4),
)
def test_corrupt_records_inside_valid_batches(codec: Codec, flips: list[tuple[int, int]]) -> None:
    """Corrupt the uncompressed records, then compress and checksum them properly."""
    plain = encode_record_batch(
        [NewRecord(b"k%d" % i, b"v" * i, headers=(Header(b"h", b"x"),)) for i in range(40)],
        base_sequence=5,
        producer_id=1,
    )
    records = bytearray(plain[61:])
    for pos, bit in flips:
        records[pos % len(records)] ^= 1 << bit
    payload = compress(codec, bytes(records))
    header = bytearray(plain[:61])
    struct.pack_into(">i", header, 8, 49 + len(payload))
    struct.pack_into(">h", header, 21, int(codec))
    struct.pack_into(">I", header, 17, crc32c.crc32c(bytes(header[21:]) + payload))
    check(bytes(header) + payload)


def _wrap_v2(codec: Codec, payload: bytes, count: int) -> bytes:
    header = bytearray(encode_record_batch([])[:61])
    struct.pack_into(">i", header, 8, 49 + len(payload))
    struct.pack_into(">h", header, 21, int(codec))
    struct.pack_into(">i", header, 57, count)
    struct.pack_into(">I", header, 17, crc32c.crc32c(bytes(header[21:]) + payload))
    return bytes(header) + payload


def test_decompression_bombs_stop_at_the_cap() -> None:
    huge = bytes(64 * 1024 * 1024)
    zobj = zstandard.ZstdCompressor().compressobj()  # streamed: no content size in the header
    bombs = {
        Codec.ZSTD: zobj.compress(huge) + zobj.flush(),
        Codec.GZIP: compress(Codec.GZIP, huge),
        Codec.LZ4: compress(Codec.LZ4, huge),
        Codec.SNAPPY: compress(Codec.SNAPPY, huge),
    }
    for codec, payload in bombs.items():
        data = _wrap_v2(codec, payload, 1) + encode_record_batch([(b"after", b"bomb")])
        check(data)
        first, second = SegmentReader(data, max_batch_size=CAP)
        assert isinstance(first, SegmentError) and first.kind == ErrorKind.TOO_LARGE, codec
        assert isinstance(second, RecordBatch) and second.records[0].key == b"after"


def test_lz4_output_past_a_decompression_step_is_whole_and_capped() -> None:
    """lz4 output is asked for a step (1 MiB) at a time: frames around and past a step, alone
    and concatenated, come out whole, and the cap still holds to the byte."""
    import os

    import lz4.frame

    from codegen.dumps import compression

    step = compression._LZ4_STEP
    for size in (0, 1, step - 1, step, step + 1, 2 * step + 7):
        payload = (os.urandom(1024) * (size // 1024 + 1))[:size]
        frames = lz4.frame.compress(payload) + lz4.frame.compress(b"tail")
        whole = payload + b"tail"
        assert compression.decompress(Codec.LZ4, frames) == whole
        assert compression.decompress(Codec.LZ4, frames, len(whole)) == whole
        with pytest.raises(compression.CompressionError) as err:
            compression.decompress(Codec.LZ4, frames, len(whole) - 1)
        assert err.value.too_large
        with pytest.raises(compression.CompressionError, match="truncated frame"):
            compression.decompress(Codec.LZ4, lz4.frame.compress(payload + b"x")[:-5])


def test_zstd_header_claiming_a_huge_size() -> None:
    frame = bytearray(zstandard.ZstdCompressor(write_content_size=True).compress(b"x" * 100))
    # Frame header descriptor: make the content size field claim 2**40 bytes (8-byte field).
    frame[4] = (frame[4] & 0x3F) | 0xC0
    fixed = bytes(frame[:5]) + (2**40).to_bytes(8, "little") + bytes(frame[6:])
    data = _wrap_v2(Codec.ZSTD, fixed, 1)
    check(data)
    (err,) = SegmentReader(data, max_batch_size=CAP)
    assert isinstance(err, SegmentError)
    assert err.kind in (ErrorKind.TOO_LARGE, ErrorKind.COMPRESSION)


def test_record_count_beyond_the_bytes_is_rejected_before_parsing() -> None:
    plain = encode_record_batch([(b"k", b"v")] * 3)
    data = _wrap_v2(Codec.NONE, plain[61:], 2**31 - 1)
    (err,) = SegmentReader(data)
    assert isinstance(err, SegmentError) and err.kind == ErrorKind.CORRUPT_RECORDS
    assert "cannot fit" in err.reason


def test_legacy_wrapper_with_corrupt_inner_messages() -> None:
    inner = struct.pack(">qi", 0, 14) + struct.pack(">IBBii", 0, 0, 0, -1, -1)  # bad inner CRC
    packed = compress(Codec.GZIP, inner)
    body = bytes((1, int(Codec.GZIP))) + struct.pack(">q", 0) + struct.pack(">i", -1)
    body += struct.pack(">i", len(packed)) + packed
    msg = struct.pack(">I", zlib.crc32(body)) + body
    data = struct.pack(">qi", 0, len(msg)) + msg
    (err,) = SegmentReader(data)
    assert isinstance(err, SegmentError) and err.kind == ErrorKind.CORRUPT_RECORDS
    assert "inner message" in err.reason
    (batch,) = SegmentReader(data, verify_crc=False)
    assert isinstance(batch, RecordBatch) and len(batch.records) == 1


def test_zero_padded_tail() -> None:
    data = base_segment() + bytes(10_000)
    items = list(SegmentReader(data))
    err = items[-1]
    assert isinstance(err, SegmentError) and err.kind == ErrorKind.ZERO_PADDING
    assert (err.position, err.size) == (len(base_segment()), 10_000)
    assert all(isinstance(i, RecordBatch) for i in items[:-1])


# -- record-count bombs ----------------------------------------------------------------------

TINY_RECORD = b"\x0c\x00\x00\x00\x01\x01\x00"
"""The smallest v2 record (7 bytes): length 6, null key and value, no headers."""


@cache
def record_count_bomb(count: int) -> bytes:
    """A well-formed zstd batch of ``count`` tiny records: 9 M of them (63 MB, within the
    64 MiB cap) take under 6 kB. Compressed in slices, so the test never holds 63 MB."""
    zobj = zstandard.ZstdCompressor(level=19).compressobj()
    parts = []
    rest = count
    while rest:
        n = min(rest, 1 << 20)
        parts.append(zobj.compress(TINY_RECORD * n))
        rest -= n
    parts.append(zobj.flush())
    return _wrap_v2(Codec.ZSTD, b"".join(parts), count)


def _no_decompression(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("decompress called")

    monkeypatch.setattr("codegen.dumps.batches.decompress", refuse)


def test_a_record_count_bomb_is_a_well_formed_batch() -> None:
    (batch,) = SegmentReader(record_count_bomb(1_000))
    assert isinstance(batch, RecordBatch) and len(batch.records) == 1_000
    assert batch.records[-1].key is None and batch.records[-1].value is None


def test_record_count_bomb_is_reported_before_decompressing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = record_count_bomb(9_000_000)
    assert len(data) < 6_000
    # build the decoders' tables (their record types load on first use) before measuring
    list(decode_batches(record_count_bomb(10)))
    list(decode_metadata_batches(record_count_bomb(10)))
    _no_decompression(monkeypatch)
    reason = (
        "record count 9000000 is above the limit of 1000000 records per batch; "
        "raise max_batch_records (--max-batch-records) to read this batch"
    )
    readers = {
        "segments": lambda: list(SegmentReader(data)),
        "raw": lambda: list(SegmentReader(data).raw_batches()),
        "coordinator": lambda: list(decode_batches(data)),
        "metadata": lambda: list(decode_metadata_batches(data)),
    }
    for name, read in readers.items():
        tracemalloc.start()
        try:
            (err,) = read()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert isinstance(err, SegmentError), name
        assert (err.kind, err.position, err.size, err.base_offset) == (
            ErrorKind.TOO_MANY_RECORDS,
            0,
            len(data),
            0,
        ), name
        assert err.reason == reason, name
        assert peak < 256 * 1024, (name, peak)


def test_the_record_cap_is_an_option_everywhere() -> None:
    data = record_count_bomb(20_000) + encode_record_batch([(b"after", b"bomb")], base_offset=1)
    reason = (
        "record count 20000 is above the limit of 10000 records per batch; "
        "raise max_batch_records (--max-batch-records) to read this batch"
    )
    err, after = SegmentReader(data, max_batch_records=10_000)
    assert isinstance(err, SegmentError) and err.kind == ErrorKind.TOO_MANY_RECORDS
    assert err.reason == reason
    assert isinstance(after, RecordBatch) and after.records[0].key == b"after"
    errors: list[SegmentError] = []
    assert [r.offset for r in decode_records(data, errors=errors, max_batch_records=10_000)] == [1]
    assert [(e.kind, e.position) for e in errors] == [(ErrorKind.TOO_MANY_RECORDS, 0)]
    records = list(decode_metadata_records(data, max_batch_records=10_000))
    assert [r.offset for r in records] == [1]
    # Raised, the cap lets the batch through.
    first, _ = SegmentReader(data, max_batch_records=20_000)
    assert isinstance(first, RecordBatch) and len(first.records) == 20_000
    first_decoded, _ = decode_batches(data, max_batch_records=20_000)
    assert isinstance(first_decoded, DecodedBatch) and len(first_decoded.records) == 20_000


def test_a_legacy_wrapper_over_the_record_cap() -> None:
    buf = io.BytesIO()
    SegmentWriter(buf).write_legacy([(b"k", b"v")] * 5, magic=1, codec=Codec.GZIP)
    (err,) = SegmentReader(buf.getvalue(), max_batch_records=3)
    assert isinstance(err, SegmentError) and err.kind == ErrorKind.TOO_MANY_RECORDS
    assert err.reason.startswith("record count 4 or more is above the limit of 3 records")
    (batch,) = SegmentReader(buf.getvalue(), max_batch_records=5)
    assert isinstance(batch, RecordBatch) and len(batch.records) == 5


def test_a_count_the_compressed_bytes_cannot_hold_is_found_before_decompressing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    payload = compress(Codec.GZIP, TINY_RECORD * 1_000)
    count = 1032 * len(payload) // 7 + 1  # deflate expands a byte into 1032 at most
    data = _wrap_v2(Codec.GZIP, payload, count)
    _no_decompression(monkeypatch)
    (err,) = SegmentReader(data)
    assert isinstance(err, SegmentError) and err.kind == ErrorKind.CORRUPT_RECORDS
    assert err.reason == (
        f"record count {count} cannot fit in {len(payload)} bytes of gzip records "
        f"(at most {1032 * len(payload)} bytes decompressed)"
    )


def test_a_count_beyond_the_size_cap_is_found_before_decompressing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = record_count_bomb(20_000)  # zstd: no expansion bound, the size cap decides
    _no_decompression(monkeypatch)
    (err,) = SegmentReader(data, max_batch_size=100_000)
    assert isinstance(err, SegmentError) and err.kind == ErrorKind.TOO_LARGE
    assert err.reason == (
        "record count 20000 needs at least 140000 bytes of records, more than the limit of "
        "100000 bytes; raise max_batch_size (--max-batch-bytes) to read this batch"
    )


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4])
def test_expansion_bounds_hold_for_the_most_compressible_data(codec: Codec) -> None:
    plain = bytes(4 << 20)
    payload = compress(codec, plain, level=9 if codec != Codec.SNAPPY else None)
    bound = decompressed_size_bound(codec, len(payload))
    assert bound is not None and len(plain) <= bound
