"""The header pass (``SegmentReader.batch_headers``): the native pass (``batch_headers`` in
``codegen/native/records.c``) gives the headers and errors the reference
(``read_batch_header`` per entry) gives, and the headers say what the full decoder says. The
native pass into columns (``SegmentReader.batch_header_columns``, ``batch_columns.h``) gives the
same batch rows (``header_rows``) as the reference's headers and errors (``batch_table``),
errors with their positions included.

Inputs: every segment and snapshot under ``tests/data``, synthetic segments with transactional
and control batches (compressed ones too), every codec, legacy entries, control records whose
key or marker is malformed, every truncation and byte mutation of a data and a control batch,
mutated header fields (record count, codec, last offset delta), torn tails, bad CRCs with the
check on and off, offsets past int64. Plain v2 batches, compressed data batches included, must
never reach the reference.
"""

from __future__ import annotations

import struct
from pathlib import Path
from types import ModuleType
from typing import Any

import crc32c
import pyarrow as pa
import pytest
from corpus import TEST_DATA
from hypothesis import given
from hypothesis import strategies as st
from v2_batches import BAD_CONTROL_BATCHES, between_good_batches, with_records

from codegen.dumps import (
    Codec,
    ControlType,
    NewRecord,
    SegmentError,
    SegmentReader,
    encode_control_batch,
    encode_record_batch,
)
from codegen.dumps import segments as dumps_segments
from codegen.dumps.batch_rows import batch_table, header_rows
from codegen.dumps.model import BatchHeader, ControlRecord, RecordBatch
from codegen.dumps.writer import encode_legacy_entry
from codegen.runtime import backends

SEGMENTS = sorted([*TEST_DATA.rglob("*.log"), *TEST_DATA.rglob("*.checkpoint")])
T0 = 1_700_000_000_000


@pytest.fixture
def fallbacks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The positions of the entries the native pass hands to the reference."""
    seen: list[int] = []
    real = dumps_segments.read_batch_header

    def spy(buf: bytes, **options: Any) -> Any:
        seen.append(options["position"])
        return real(buf, **options)

    monkeypatch.setattr(dumps_segments, "read_batch_header", spy)
    return seen


def native_fallbacks(source: Any, fallbacks: list[int]) -> list[int]:
    """The positions the native pass alone hands to the reference for ``source``."""
    fallbacks.clear()
    list(SegmentReader(source).batch_headers(native=True))
    return fallbacks


def both(source: Any, **options: Any) -> list[BatchHeader | SegmentError]:
    """The items of both passes, which must be equal (types included); the native ones."""
    pure = list(SegmentReader(source, **options).batch_headers(native=False))
    fast = list(SegmentReader(source, **options).batch_headers(native=True))
    assert fast == pure, options
    assert [type(i) for i in fast] == [type(i) for i in pure]
    same_rows(source, pure, **options)
    return fast


def same_rows(source: Any, pure: list[BatchHeader | SegmentError], **options: Any) -> None:
    """The batch rows of the native pass into columns are the reference's, at an offset too
    (where the reference's rows cannot be made, its own can neither)."""
    runs = list(SegmentReader(source, **options).batch_header_columns(native=True))
    try:
        expected = batch_table(pure, 100)
    except (OverflowError, pa.ArrowException) as e:
        with pytest.raises(type(e)):
            header_rows(runs, 100)
        return
    got = header_rows(runs, 100)
    assert got.schema == expected.schema
    assert got.to_pylist() == expected.to_pylist(), options


def every_way(source: Any) -> list[BatchHeader | SegmentError]:
    both(source, verify_crc=False)
    both(source, max_batch_size=200)
    both(source, max_batch_records=2)
    return both(source)


def as_header(batch: RecordBatch) -> BatchHeader:
    """What the header pass should say of a batch the full decoder read: its fields of the same
    name, and its control records' offsets and types."""
    fields = {name: getattr(batch, name) for name in BatchHeader._fields if name != "controls"}
    controls = [(r.offset, r.control_type) for r in batch.records if isinstance(r, ControlRecord)]
    return BatchHeader(**fields, controls=tuple(controls))


def _rechecked(batch: bytearray) -> bytes:
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return bytes(batch)


def _transactional_segment() -> bytes:
    data = b"".join(
        [
            encode_record_batch(
                [(b"k%d" % i, b"v" * i) for i in range(5)],
                base_offset=0,
                timestamp=T0,
                producer_id=7,
                producer_epoch=3,
                base_sequence=10,
                transactional=True,
            ),
            encode_control_batch(
                ControlType.COMMIT, base_offset=5, timestamp=T0 + 1, producer_id=7
            ),
            encode_record_batch(
                [(b"k", b"v")] * 3,
                base_offset=6,
                producer_id=8,
                producer_epoch=0,
                transactional=True,
                codec=Codec.ZSTD,
            ),
            encode_control_batch(ControlType.ABORT, base_offset=9, producer_id=8),
            encode_control_batch(ControlType.LEADER_CHANGE, base_offset=10, value=b"\x00\x00"),
            encode_record_batch([], base_offset=11),
        ]
    )
    return data


# ------------------------------------------------------------------------------ agreement


@pytest.mark.parametrize("path", SEGMENTS, ids=lambda p: str(p.relative_to(TEST_DATA)))
def test_segments_in_test_data(path: Path, records_module: ModuleType) -> None:
    got = every_way(path)
    full = list(SegmentReader(path))
    assert got == [i if isinstance(i, SegmentError) else as_header(i) for i in full]


def test_transactional_and_control_batches(
    records_module: ModuleType, fallbacks: list[int]
) -> None:
    data = _transactional_segment()
    got = every_way(data)
    assert got == [as_header(b) for b in SegmentReader(data)]
    assert [h.controls for h in got if isinstance(h, BatchHeader) and h.is_control] == [
        ((5, ControlType.COMMIT),),
        ((9, ControlType.ABORT),),
        ((10, ControlType.LEADER_CHANGE),),
    ]
    # the compressed data batch's header needs no decompression
    assert native_fallbacks(data, fallbacks) == []


@pytest.mark.parametrize("codec", list(Codec))
def test_compressed_batches(codec: Codec, records_module: ModuleType, fallbacks: list[int]) -> None:
    data = b"".join(
        encode_record_batch(
            [NewRecord(b"key%d" % i, bytes(range(i % 50)) * 3) for i in range(n)],
            base_offset=off,
            codec=codec,
            producer_id=1,
            transactional=True,
        )
        for off, n in ((0, 40), (40, 1), (41, 300))
    )
    got = every_way(data)
    assert got == [as_header(b) for b in SegmentReader(data)]
    assert [h.record_count for h in got if isinstance(h, BatchHeader)] == [40, 1, 300]
    assert native_fallbacks(data, fallbacks) == []


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.LZ4])
def test_a_compressed_control_batch_is_read_whole(
    codec: Codec, records_module: ModuleType, fallbacks: list[int]
) -> None:
    marker = encode_control_batch(ControlType.ABORT, base_offset=3, producer_id=4)
    data = with_records(marker, marker[61:], codec)
    (header,) = both(data)
    assert isinstance(header, BatchHeader)
    assert header.controls == ((3, ControlType.ABORT),)
    assert native_fallbacks(data, fallbacks) == [0]


def test_legacy_entries(records_module: ModuleType) -> None:
    data = encode_legacy_entry([(b"a", b"1"), (None, b"2")], magic=0) + encode_legacy_entry(
        [(b"b", b"3")], magic=1, offset=2, timestamp=5, codec=Codec.GZIP
    )
    got = every_way(data)
    assert [h.magic for h in got if isinstance(h, BatchHeader)] == [0, 0, 1]
    assert not any(h.is_transactional or h.controls for h in got if isinstance(h, BatchHeader))


@pytest.mark.parametrize("marker", BAD_CONTROL_BATCHES)
def test_control_records_checked_as_the_decoder_checks_them(
    marker: bytes, records_module: ModuleType
) -> None:
    after = encode_record_batch([(b"k", b"v")], base_offset=1)
    got = every_way(marker + after)
    full = list(SegmentReader(marker + after))
    assert got == [i if isinstance(i, SegmentError) else as_header(i) for i in full]


@pytest.mark.parametrize("kind", ["data", "control"])
def test_every_truncation_and_byte_mutation(kind: str, records_module: ModuleType) -> None:
    """Record bytes cut short or with a byte changed (under a valid CRC), between two good
    batches: the same headers and errors, and the batch after is read."""
    plain = (
        encode_record_batch(
            [NewRecord(b"key", b"value"), NewRecord(None, b"x" * 20, offset_delta=3)],
            producer_id=3,
            transactional=True,
        )
        if kind == "data"
        else encode_control_batch(ControlType.COMMIT, base_offset=4, producer_id=3)
    )
    body = plain[61:]
    variants: list[bytes] = []
    bad = 0
    for variant, data in between_good_batches(plain):
        variants.append(variant)
        got = both(data)
        bad += any(isinstance(i, SegmentError) for i in got)
        last = got[-1]
        assert isinstance(last, BatchHeader) and last.base_offset == 1000
    if kind == "data":
        # Damage inside a data batch's records is not seen without reading them, only
        # record bytes too few for its count (2 records of 7 bytes or more).
        assert bad == sum(len(v) < 2 * 7 for v in variants)
    else:
        assert bad > len(body)


@pytest.mark.parametrize(
    ("at", "fmt", "value"),
    [
        (57, ">i", -1),  # record count
        (57, ">i", 10_000),
        (22, ">B", 0x07),  # codec id 7
        (22, ">B", 0x14),  # lz4, count above its bound
        (23, ">i", -7),  # last offset delta
        (16, ">B", 3),  # magic
    ],
)
def test_mutated_header_fields(at: int, fmt: str, value: int, records_module: ModuleType) -> None:
    batch = bytearray(encode_record_batch([(b"k", b"v")] * 3, base_offset=10))
    struct.pack_into(fmt, batch, at, value)
    if at == 22 and value == 0x14:
        struct.pack_into(">i", batch, 57, 10_000)
    for data in (bytes(batch), _rechecked(batch)):
        every_way(data + encode_record_batch([(b"k", b"v")], base_offset=13))


def test_torn_and_corrupt_segments(records_module: ModuleType) -> None:
    data = _transactional_segment()
    for n in range(0, len(data), 3):
        both(data[:n])
    flipped = bytearray(data)
    flipped[70] ^= 0x40  # inside the first batch's records: its CRC no longer matches
    got = both(bytes(flipped))
    assert isinstance(got[0], SegmentError) and got[0].kind == "crc-mismatch"
    assert isinstance(both(bytes(flipped), verify_crc=False)[0], BatchHeader)
    tail = both(data + bytes(40))[-1]
    assert isinstance(tail, SegmentError) and tail.kind == "zero-padding"
    cut = both(data + struct.pack(">qi", 77, 3) + b"abc")[-1]
    assert isinstance(cut, SegmentError) and cut.kind == "bad-length"


def test_offsets_past_int64(records_module: ModuleType) -> None:
    """A last offset or a marker offset beyond int64 is read by the reference (Python ints)."""
    data = bytearray(encode_record_batch([(b"k", b"v")] * 3, base_offset=2**63 - 2))
    (header,) = both(bytes(data))
    assert isinstance(header, BatchHeader) and header.last_offset == 2**63
    marker = encode_control_batch(ControlType.COMMIT, base_offset=2**63 - 1)
    body = bytearray(marker[61:])
    body[3] = 2  # the record's offset delta: 1
    (header,) = both(with_records(marker, bytes(body)))
    assert isinstance(header, BatchHeader) and header.controls == ((2**63, ControlType.COMMIT),)


def test_many_headers_per_call(records_module: ModuleType, fallbacks: list[int]) -> None:
    """More batches than one native call returns: read across calls, none by the reference."""
    data = b"".join(encode_record_batch([(b"k", b"v")], base_offset=i) for i in range(5000))
    got = both(data)
    assert [h.base_offset for h in got if isinstance(h, BatchHeader)] == list(range(5000))
    assert native_fallbacks(data, fallbacks) == []


def test_column_runs_across_calls_and_errors(
    records_module: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs of header columns shorter than the segment, between entries the reference reads
    (legacy entries, a corrupt batch): the rows in file order, errors where they are."""
    monkeypatch.setattr(dumps_segments, "_COLUMN_RUN", 3)
    good = [encode_record_batch([(b"k", b"v")], base_offset=i) for i in range(7)]
    corrupt = bytearray(good[0])
    corrupt[-1] ^= 0xFF  # its CRC no longer matches
    control = encode_control_batch(ControlType.COMMIT, base_offset=30, producer_id=7)
    data = b"".join(
        [
            *good[:4],
            bytes(corrupt),
            encode_legacy_entry([(b"k", b"v")], magic=1, offset=20),
            *good[4:],
            control,
        ]
    )
    items = list(SegmentReader(data).batch_header_columns(native=True))
    assert [type(i).__name__ for i in items] == [
        "HeaderColumns",  # 3 batches
        "HeaderColumns",  # 1
        "SegmentError",
        "BatchHeader",  # the legacy entry
        "HeaderColumns",  # 3
        "HeaderColumns",  # 1 (the control batch)
    ]
    rows = header_rows(items)
    error = rows.filter(rows.column("_error").is_valid()).to_pylist()
    assert [(e["batchPosition"], e["size"]) for e in error] == [
        (sum(map(len, good[:4])), len(corrupt))
    ]
    both(data)


def test_column_runs_without_the_native_pass(records_module: ModuleType) -> None:
    data = encode_record_batch([(b"k", b"v")]) + encode_control_batch(
        ControlType.ABORT, base_offset=1, producer_id=3
    )
    items = list(SegmentReader(data).batch_header_columns(native=False))
    assert [type(i) for i in items] == [BatchHeader, BatchHeader]
    assert header_rows(items).equals(batch_table(items))


def test_the_backend_picks_the_pass(
    records_module: ModuleType, monkeypatch: pytest.MonkeyPatch, fallbacks: list[int]
) -> None:
    data = encode_record_batch([(b"k", b"v")])
    monkeypatch.setenv(backends.ENVIRONMENT_VARIABLE, "pure")
    assert not dumps_segments.native_headers_enabled()
    list(SegmentReader(data).batch_headers())
    assert fallbacks == [0]
    monkeypatch.setenv(backends.ENVIRONMENT_VARIABLE, "auto")
    assert dumps_segments.native_headers_enabled()
    fallbacks.clear()
    list(SegmentReader(data).batch_headers())
    assert fallbacks == []


def test_the_native_pass_checks_what_it_is_given(records_module: ModuleType) -> None:
    expansion = (0, 0, 0, 0, 0)
    with pytest.raises(TypeError):
        records_module.batch_headers(b"", 0, True, 1, 1, expansion, tuple)
    with pytest.raises(TypeError, match="tuple subclass"):
        records_module.batch_headers(b"", 0, True, 1, 1, expansion, dict, 1)

    class WithDict(tuple[int, ...]):
        pass

    with pytest.raises(TypeError, match="without a __dict__"):
        records_module.batch_headers(b"", 0, True, 1, 1, expansion, WithDict, 1)
    with pytest.raises(TypeError, match="expansion"):
        records_module.batch_headers(b"", 0, True, 1, 1, (0,), BatchHeader, 1)
    with pytest.raises(ValueError, match="outside"):
        records_module.batch_headers(b"abc", 4, True, 1, 1, expansion, BatchHeader, 1)
    with pytest.raises(TypeError, match="7 arguments"):
        records_module.batch_header_columns(b"", 0, True, 1, 1, expansion)
    with pytest.raises(TypeError, match="expansion"):
        records_module.batch_header_columns(b"", 0, True, 1, 1, (0,), 1)
    with pytest.raises(ValueError, match="outside"):
        records_module.batch_header_columns(b"abc", 4, True, 1, 1, expansion, 1)
    columns, pos = records_module.batch_header_columns(b"", 0, True, 1, 1, expansion, 1)
    assert (pos, len(columns), columns[9]) == (0, 12, bytes(4))  # one bound: 0


@given(st.binary(max_size=300), st.integers(0, 15))
def test_the_loops_crc32c_is_the_packages(
    records_module: ModuleType, data: bytes, skip: int
) -> None:
    """The CRC-32C the native loops check batches with (the CPU's instruction or tables), on
    buffers of any length and alignment."""
    view = memoryview(data)[min(skip, len(data)) :]
    expected = crc32c.crc32c(bytes(view))
    assert records_module.crc32c(view) == expected
    assert records_module.crc32c(view, True) == expected
