"""The native columnar record loop (``ColumnBuilder`` in ``codegen/native/records.c``) gives the
Arrow batches the pure loop gives.

``codegen.dumps.arrow.record_batches`` reads each input twice, with ``native=False`` (the pure
loop over ``SegmentReader``: the reference, what ``kafka-log`` read before) and ``native=True``;
every Arrow batch must be equal, column by column, nulls included, and valid Arrow. Inputs:
every segment and snapshot under ``tests/data`` (whole and as slices starting at each entry
boundary), synthetic segments with transactional and control batches, every codec, headers
(keys that are not UTF-8 too), legacy entries, sequences that wrap, log-append time, and
corrupt and torn batches: every truncation and byte mutation of a few batches' records, bad
CRCs, cut tails. Each runs with headers and without, CRC checks on and off, and Arrow batches
of few rows. Well-formed v2 data batches must never reach the reference decoder.

The native modules are compiled once per session into the tmp dir; without a C compiler the
tests skip (``SPECGEN_REQUIRE_NATIVE=1`` makes that a failure).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import crc32c
import pyarrow as pa
import pytest
from corpus import KAFKA_DATA, TEST_DATA
from mapped_pages import mapped_rss
from v2_batches import BAD_CONTROL_BATCHES, between_good_batches, entry_frames, with_records

from codegen.dumps import (
    Codec,
    ControlType,
    Header,
    NewRecord,
    SegmentError,
    TimestampType,
    encode_control_batch,
    encode_record_batch,
)
from codegen.dumps import arrow as dumps_arrow
from codegen.dumps.arrow import RECORD_SCHEMA, record_batches
from codegen.dumps.compression import CompressionError, decompress
from codegen.dumps.writer import encode_legacy_entry
from codegen.runtime import backends

SEGMENTS = sorted([*TEST_DATA.rglob("*.log"), *TEST_DATA.rglob("*.checkpoint")])


@pytest.fixture
def no_fallback(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The positions of the entries the native loop hands to the reference decoder."""
    seen: list[int] = []
    real = dumps_arrow._reference_rows

    def spy(builder: Any, entry: bytes, name: str, pos: int, *rest: Any) -> Any:
        seen.append(pos)
        return real(builder, entry, name, pos, *rest)

    monkeypatch.setattr(dumps_arrow, "_reference_rows", spy)
    return seen


def both(source: Any, **options: Any) -> list[pa.RecordBatch]:
    """The batches of both loops, which must be equal; the native ones."""
    pure = list(record_batches(source, native=False, **options))
    fast = list(record_batches(source, native=True, **options))
    assert [b.num_rows for b in fast] == [b.num_rows for b in pure], options
    for p, f in zip(pure, fast, strict=True):
        f.validate(full=True)
        assert f.schema == RECORD_SCHEMA
        for name in RECORD_SCHEMA.names:
            assert f.column(name).equals(p.column(name)), (name, options)
    return fast


def every_way(source: Any, **options: Any) -> list[pa.RecordBatch]:
    """``both`` with headers and without, CRC checks on and off, and 3 rows per Arrow batch;
    the native batches of the first way."""
    first = None
    for headers in (True, False):
        for verify_crc in (True, False):
            for rows in (10000, 3):
                got = both(
                    source, headers=headers, verify_crc=verify_crc, batch_rows=rows, **options
                )
                first = got if first is None else first
    assert first is not None
    return first


def rows(batches: list[pa.RecordBatch]) -> list[dict[str, Any]]:
    return [row for b in batches for row in b.to_pylist()]


def errors(batches: list[pa.RecordBatch]) -> list[str]:
    return [r["_error"] for r in rows(batches) if r["_error"] is not None]


def boundaries(data: bytes) -> list[int]:
    """The positions of the complete entries of a segment."""
    return [f[0] for f in entry_frames(data) if not isinstance(f, SegmentError)]


# ------------------------------------------------------------------------------ real segments


@pytest.mark.parametrize("path", SEGMENTS, ids=lambda p: str(p.relative_to(TEST_DATA)))
def test_segments_in_test_data(path: Path, records_module: ModuleType) -> None:
    every_way(path)


@pytest.mark.parametrize("path", SEGMENTS, ids=lambda p: str(p.relative_to(TEST_DATA)))
def test_slices_of_segments_in_test_data(path: Path, records_module: ModuleType) -> None:
    """Slices starting on each entry boundary (as the data source plans them), to the next
    boundary but one or to the end; positions are the file's."""
    data = path.read_bytes()
    starts = boundaries(data)[1:40]
    ends = [*starts[2:], len(data)]
    for start, end in zip(starts, ends, strict=False):
        got = both(path, start=start, end=end, batch_rows=5)
        assert all(p >= start for b in got for p in b.column("batchPosition").to_pylist())
    for start in starts[-3:]:
        both(path, start=start)


@pytest.mark.parametrize("path", SEGMENTS, ids=lambda p: str(p.relative_to(TEST_DATA)))
def test_newest_time_of_the_read_is_the_batch_rows(
    path: Path, records_module: ModuleType, no_fallback: list[int]
) -> None:
    """Where the native loop reads every entry itself with its CRC checked, the newest time it
    gives is what the file's batch rows give (``newest_batch_time``, none below 0); where it
    leaves an entry (an error, a legacy entry...), without CRC checks and in the pure loop, it
    gives none."""
    from codegen.dumps.batch_rows import batch_rows
    from codegen.dumps.views.cut import newest_batch_time

    given: dict[tuple[bool, bool], int | None] = {}
    for native in (False, True):
        for verify_crc in (False, True):
            newest: list[int | None] = []
            for _ in record_batches(
                path, native=native, verify_crc=verify_crc, newest_times=newest
            ):
                assert not newest  # given after the last batch
            (given[native, verify_crc],) = newest
    left = bool(no_fallback) or any(
        b.column("_error").null_count < len(b) for b in record_batches(path)
    )
    meant = None if left else max(newest_batch_time(batch_rows(path)), -1)
    assert given == {(False, False): None, (False, True): None, (True, False): None} | {
        (True, True): meant
    }


def test_real_segments_hold_what_the_tests_need(records_module: ModuleType) -> None:
    """The real segments cover errors, control records and transactions (headers only the
    synthetic ones)."""
    found = [rows(both(p)) for p in SEGMENTS]
    flat = [r for f in found for r in f]
    assert any(r["_error"] for r in flat)
    assert any(r["isControl"] for r in flat)
    assert any(r["isTransactional"] for r in flat)


# ------------------------------------------------------------------------------ synthetic


def _transactional_segment() -> bytes:
    parts = [
        encode_record_batch(
            [
                NewRecord(b"k%d" % i, b"v" * i, headers=[Header(b"h", b"x"), Header(b"n", None)])
                for i in range(5)
            ],
            base_offset=0,
            timestamp=1_700_000_000_000,
            producer_id=7,
            producer_epoch=3,
            base_sequence=10,
            transactional=True,
        ),
        encode_control_batch(ControlType.COMMIT, base_offset=5, producer_id=7, producer_epoch=3),
        encode_record_batch(
            [(None, b"tombstone key"), (b"k", None), (b"", b"")],
            base_offset=6,
            producer_id=8,
            producer_epoch=0,
            base_sequence=2**31 - 2,
        ),
        encode_control_batch(ControlType.ABORT, base_offset=9, producer_id=8),
        encode_record_batch(
            [NewRecord(b"a", b"b", headers=[Header(b"\xff\xfebad\xc3", b"v")])],
            base_offset=10,
            timestamp_type=TimestampType.LOG_APPEND_TIME,
            log_append_time=1_800_000_000_000,
        ),
        encode_record_batch([], base_offset=11),
    ]
    return b"".join(parts)


def test_transactional_and_control_batches(
    records_module: ModuleType, no_fallback: list[int]
) -> None:
    data = _transactional_segment()
    got = rows(every_way(data))
    assert [r["offset"] for r in got] == list(range(11))
    assert [r["isControl"] for r in got].count(True) == 2
    assert [r["sequence"] for r in got[5:9]] == [None, 2**31 - 2, 2**31 - 1, 0]
    assert got[0]["headers"] == [{"key": "h", "value": b"x"}, {"key": "n", "value": None}]
    assert got[10]["headers"] == [{"key": "\ufffd\ufffdbad\ufffd", "value": b"v"}]
    # Control batches are read in C too: nothing went to the reference.
    assert no_fallback == []


@pytest.mark.parametrize("codec", list(Codec))
def test_compressed_batches(
    codec: Codec, records_module: ModuleType, no_fallback: list[int]
) -> None:
    data = b"".join(
        encode_record_batch(
            [
                NewRecord(b"key%d" % i, bytes(range(i % 50)) * 3, headers=[Header(b"i", b"%d" % i)])
                for i in range(n)
            ],
            base_offset=off,
            codec=codec,
            producer_id=1,
            base_sequence=0,
        )
        for off, n in ((0, 40), (40, 1), (41, 300))
    )
    got = rows(every_way(data))
    assert len(got) == 341 and not errors([pa.RecordBatch.from_pylist(got, RECORD_SCHEMA)])
    assert no_fallback == []


def test_legacy_entries(records_module: ModuleType) -> None:
    data = encode_legacy_entry([(b"a", b"1"), (None, b"2")], magic=0) + encode_legacy_entry(
        [(b"b", b"3")], magic=1, offset=2, timestamp=5, codec=Codec.GZIP
    )
    got = rows(every_way(data))
    assert [r["offset"] for r in got] == [0, 1, 2]


def _batch(records: list[Any], **kwargs: Any) -> bytes:
    return encode_record_batch(records, timestamp=1_700_000_000_000, **kwargs)


_FEW: list[Callable[[], bytes]] = [
    lambda: _batch(
        [
            NewRecord(b"key", b"value"),
            NewRecord(b"k2", None, headers=[Header(b"k", b"v"), Header(b"", None)]),
            NewRecord(None, b"x" * 200, timestamp=-(2**35), offset_delta=300),
        ],
        producer_id=3,
        base_sequence=5,
    ),
    lambda: _batch(
        [NewRecord(b"g" * 64, b"v", headers=[Header(b"h", b"x")]), NewRecord(b"\x00\x63", b"")],
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        log_append_time=1_800_000_000_000,
    ),
]


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.LZ4])
@pytest.mark.parametrize("case", range(len(_FEW)))
def test_every_truncation_and_byte_mutation(
    case: int, codec: Codec, records_module: ModuleType
) -> None:
    """Records cut short or with a byte changed (under a valid CRC), between two good batches:
    the same rows and error rows, and the batch after is read."""
    plain = _FEW[case]()
    body = plain[61:]
    bad = 0
    for variant, data in between_good_batches(plain, codec):
        got = rows(both(data, headers=(len(variant) % 2 == 0)))
        bad += any(r["_error"] for r in got)
        assert got[-1]["key"] == b"after"
    assert bad > len(body)


@pytest.mark.parametrize(
    "marker",
    [
        *BAD_CONTROL_BATCHES,
        pytest.param(encode_control_batch(ControlType.ABORT, base_offset=2**63 - 1), id="last"),
    ],
)
def test_control_records_checked_as_the_reference_checks_them(
    marker: bytes, records_module: ModuleType
) -> None:
    """A control batch's keys and markers: the reference's rows, or its error row."""
    every_way(_batch([(b"k", b"v")], base_offset=-5) + marker + _batch([(b"k", b"v")]))


def test_control_batch_truncation_and_byte_mutation(records_module: ModuleType) -> None:
    """A control batch's records cut short or with a byte changed (under a valid CRC): the
    same rows and error rows in both loops, and the batch after is read."""
    plain = encode_control_batch(ControlType.COMMIT, base_offset=4, producer_id=3)
    body = plain[61:]
    bad = 0
    for _, data in between_good_batches(plain):
        got = rows(both(data, headers=True))
        bad += any(r["_error"] for r in got)
        assert got[-1]["key"] == b"after"
    assert bad > len(body)


def test_torn_and_corrupt_segments(records_module: ModuleType) -> None:
    """Every cut of a small segment (torn tails, entries cut short), a bad CRC, zero
    padding, an impossible entry size: error rows with their position and base offset."""
    data = _FEW[0]() + _transactional_segment() + _FEW[1]()
    for n in range(0, len(data), 7):
        every_way(data[:n]) if n % 5 == 0 else both(data[:n])
    flipped = bytearray(data)
    flipped[70] ^= 0x40  # inside the first batch's records: its CRC no longer matches
    got = rows(both(bytes(flipped)))
    assert got[0]["_error"].startswith("crc-mismatch: ") and got[0]["batchPosition"] == 0
    assert got[0]["offset"] == 0 and got[0]["timestamp"] is None and got[1]["_error"] is None
    crc_off = rows(both(bytes(flipped), verify_crc=False))
    assert crc_off[0]["_error"] is None
    negative = bytearray(_batch([(b"k", b"v")], base_offset=-3))
    negative[-1] ^= 1
    (row,) = rows(both(bytes(negative)))
    assert row["_error"].startswith("crc-mismatch: ") and row["offset"] is None
    assert errors(both(data + bytes(40))) == ["zero-padding: 40 zero bytes at the end"]
    tail = data + struct.pack(">qi", 77, 3) + b"abc"
    assert errors(both(tail))[0].startswith("bad-length: ")


def test_a_map_of_a_segment_reads_as_its_file(
    tmp_path: Path, records_module: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only map of a segment (real ones, and torn, corrupt, zero-padded ones) gives
    the batches of its file through both loops, its slices too; read whole, the map is read
    where it lies (no read of the file: storage.read_range is not called)."""
    import mmap

    data = _FEW[0]() + _transactional_segment() + _FEW[1]()
    flipped = bytearray(data)
    flipped[70] ^= 0x40
    made = {"torn": data[:-9], "flipped": bytes(flipped), "padded": data + bytes(40)}
    paths = [*SEGMENTS[:12]]
    for name, content in made.items():
        paths.append(tmp_path / f"{name}.log")
        paths[-1].write_bytes(content)
    expected = {p: [every_way(p), both(p, start=boundaries(p.read_bytes())[-1])] for p in paths}

    def no_copy(*args: Any) -> bytes:
        raise AssertionError(f"read_range{args}: the file was read")

    given: list[object] = []
    native = dumps_arrow._native_batches

    def spy(module: ModuleType, data: Any, *rest: Any) -> Any:
        given.append(data)
        return native(module, data, *rest)

    monkeypatch.setattr(dumps_arrow.storage, "read_range", no_copy)
    monkeypatch.setattr(dumps_arrow, "_native_batches", spy)
    for path in paths:
        with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
            given.clear()
            whole = every_way(m, name=str(path))
            assert given and all(d is m for d in given)  # not copied
            last = both(m, name=str(path), start=boundaries(m[:])[-1])
        assert [whole, last] == expected[path], path
    assert any(errors(expected[tmp_path / f"{n}.log"][0]) for n in made)


def test_a_read_only_map_read_whole_gives_its_pages_back(
    tmp_path: Path, records_module: ModuleType
) -> None:
    """The native loop gives back the pages of a read-only map it has read past (they would
    all count in the process's memory by the end of the file), not those of a map the caller
    may have written to; the batches are the file's either way."""
    import mmap

    held = dumps_arrow._MAP_HELD
    path = tmp_path / "large.log"
    path.write_bytes(
        b"".join(
            _batch([(b"k", bytes([i % 251]) * 1000)] * 10, base_offset=10 * i)
            for i in range(4 * held // 10_000)
        )
    )
    expected = list(record_batches(path, native=True, batch_rows=500))
    assert path.stat().st_size > 3 * held and len(expected) > 8
    read: dict[int, int | None] = {}
    for access in (mmap.ACCESS_READ, mmap.ACCESS_COPY):
        with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=access) as m:
            got = list(record_batches(m, name=str(path), native=True, batch_rows=500))
            read[access] = mapped_rss(path)
            assert got == expected
    if read[mmap.ACCESS_READ] is None:
        pytest.skip("no /proc/self/smaps")
    assert read[mmap.ACCESS_READ] <= 2 * held < 3 * held < (read[mmap.ACCESS_COPY] or 0)


def test_many_log_batches_per_arrow_batch(records_module: ModuleType) -> None:
    data = b"".join(_batch([(b"k", b"v")] * 4, base_offset=4 * i) for i in range(10))
    got = both(data, batch_rows=10)
    assert [b.num_rows for b in got] == [12, 12, 12, 4]
    assert got[0].column("batchPosition").to_pylist()[:5] == [0, 0, 0, 0, len(data) // 10]


def test_offsets_and_timestamps_past_int64(records_module: ModuleType) -> None:
    """An offset beyond int64 cannot be an int64 column: both loops say so (OverflowError)."""
    plain = _batch([(None, None)], base_offset=2**63 - 1)
    # size 6, attrs, timestamp delta 0, offset delta 1, null key and value, no headers
    body = bytes([2 * 6, 0, 0, 2, 1, 1, 0])
    data = with_records(plain, body)
    for native_loop in (False, True):
        with pytest.raises(OverflowError):
            list(record_batches(data, native=native_loop))
    # Timestamps wrap when made microseconds, as numpy's int64 does.
    late = encode_record_batch([(b"k", b"v")], timestamp=2**62)
    (row,) = rows(both(late))
    assert row["offset"] == 0


# ------------------------------------------------------------------------------ the seams


def test_the_backend_picks_the_loop(
    records_module: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(backends.ENVIRONMENT_VARIABLE, "pure")
    assert not dumps_arrow.native_columns_enabled()
    monkeypatch.setenv(backends.ENVIRONMENT_VARIABLE, "auto")
    assert dumps_arrow.native_columns_enabled()
    calls: list[bool] = []
    real = dumps_arrow._native_batches

    def spy(*args: Any) -> Iterator[pa.RecordBatch]:
        calls.append(True)
        return real(*args)

    monkeypatch.setattr(dumps_arrow, "_native_batches", spy)
    list(record_batches(_FEW[0]()))
    assert calls == [True]
    monkeypatch.setenv(backends.ENVIRONMENT_VARIABLE, "pure")
    list(record_batches(_FEW[0]()))
    assert calls == [True]


def test_column_builder_checks_what_it_is_given(records_module: ModuleType) -> None:
    builder = records_module.ColumnBuilder(True)
    plain = _FEW[0]()
    with pytest.raises(TypeError):
        builder.add_rows([(1, 2, "not bytes", None, None, None)], 0, 0, -1, -1, False, False)
    assert builder.rows == 0  # nothing half-added
    limits = (True, 1 << 30, 1 << 20, 10000, 1 << 30, None)
    assert builder.add_entries(plain, 0, 0, *limits) == len(plain)
    assert builder.rows == 3
    count, _, _ = builder.finish()
    assert count == 3 and builder.rows == 0


def test_add_entries_stops_at_what_the_caller_reads(records_module: ModuleType) -> None:
    """The C loop over entries takes v2 batches (compressed data batches when given the
    reader's decompress function; control batches whose keys and markers pass the reference's
    checks), and hands back the position of anything else (read by the reference, for its rows
    and errors) or of a due flush."""
    plain = _batch([(b"k", b"v")] * 3)
    lz4 = _batch([(b"k", b"v")], codec=Codec.LZ4, base_offset=3)
    zstd = _batch([(b"k", b"v")] * 2, codec=Codec.ZSTD, base_offset=3)
    broken = bytearray(lz4)
    broken[-4:] = b"\xff\xff\xff\xff"  # the frame's end: lz4 refuses it, the CRC matches
    struct.pack_into(">I", broken, 17, crc32c.crc32c(bytes(broken[21:])))
    bad_lz4 = bytes(broken)
    with pytest.raises(CompressionError):
        decompress(Codec.LZ4, bad_lz4[61:])
    control = encode_control_batch(ControlType.COMMIT, base_offset=4, producer_id=1)
    bad_marker = encode_control_batch(ControlType.COMMIT, base_offset=4, marker_version=-1)
    flipped = bytearray(plain)
    flipped[-2] ^= 1  # a value byte: the records parse, the CRC no longer matches
    cut = plain[:-5]

    def add(
        data: bytes,
        pos: int = 0,
        crc: bool = True,
        rows: int = 10000,
        unpack: Callable[..., bytes] | None = None,
    ) -> tuple[int, int]:
        """Where add_entries stops, and the rows it added."""
        builder = records_module.ColumnBuilder(False)
        limits = (crc, 1 << 30, 1 << 20, rows, 1 << 30, unpack)
        end = builder.add_entries(data, pos, 0, *limits)
        return end, builder.rows

    def refusing(codec: int, data: memoryview, max_size: int) -> bytes:
        raise CompressionError("refused")

    n = len(plain)
    assert add(plain * 2) == (2 * n, 6)
    assert add(plain + control + plain) == (2 * n + len(control), 7)
    for other in (lz4, bad_marker, bytes(flipped), cut, bytes(12)):
        data = plain + other + plain
        assert add(data) == (n, 3)
        assert add(data, n + len(other)) == (len(data), 3)
    # compressed batches: decompressed by the function given, unless it refuses them
    for packed, count in ((lz4, 1), (zstd, 2)):
        data = plain + packed + plain
        assert add(data, unpack=decompress) == (len(data), 6 + count)
        assert add(data, unpack=refusing) == (n, 3)
        assert add(data, unpack=lambda *_: b"\x00" * 6) == (n, 3)  # too short for its count
    assert add(plain + bad_lz4 + plain, unpack=decompress) == (n, 3)
    assert add(bytes(flipped), crc=False) == (n, 3)  # as verifyCrc=false reads it
    assert add(plain * 3, rows=4) == (2 * n, 6)  # after the batch that reaches 4 rows
    builder = records_module.ColumnBuilder(False)
    with pytest.raises(ValueError, match="outside"):
        builder.add_entries(plain, len(plain) + 1, 0, True, 1, 1, 1, 1, None)
    with pytest.raises(TypeError, match="9 arguments"):
        builder.add_entries(plain, 0)


def test_data_source_slices(records_module: ModuleType) -> None:
    """The kafka-log source's slices (a file split at entry boundaries) read through both loops
    give its raw schema, with the slice's topic, partition and file."""
    datasource = pytest.importorskip("spark_udfs.datasource")
    log_slices = pytest.importorskip("spark_udfs.log_slices")
    path = KAFKA_DATA / "ldi-poc" / "__consumer_offsets-6" / "00000000000000000000.log"
    slices = log_slices.plan_slices(path, 2048, "__consumer_offsets", 6)
    assert len(slices) > 3
    total = 0
    for sl in slices:
        pure = list(log_slices.read_slice(sl, native=False, batch_rows=50))
        fast = list(log_slices.read_slice(sl, native=True, batch_rows=50))
        assert fast == pure and all(b.schema == log_slices.RAW_SCHEMA for b in fast)
        for b in fast:
            assert set(b.column("partition").to_pylist()) == {6}
            assert set(b.column("file").to_pylist()) == {str(path)}
        total += sum(b.num_rows for b in fast)
    assert total == sum(b.num_rows for b in record_batches(path))
    with pytest.raises(ValueError, match="recordLoop"):
        datasource._record_loop({"recordloop": "fast"})


def test_a_local_file_read_whole_is_read_from_its_map(
    tmp_path: Path, records_module: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The native loop reads a whole local file from its read-only map (the floor's read and
    every command's: not copied into memory by read()), with the batches and errors of its
    bytes; the map is closed once the batches are taken; a missing file fails at the call; a
    range and an empty file are still read as bytes."""
    import mmap

    data = _FEW[0]() + _transactional_segment() + _FEW[1]()
    made = {"torn": data[:-9], "whole": data, "empty": b""}
    paths = [*SEGMENTS[:12]]
    for name, content in made.items():
        paths.append(tmp_path / f"{name}.log")
        paths[-1].write_bytes(content)
    expected = {p: list(record_batches(p.read_bytes(), name=str(p), native=True)) for p in paths}
    ranged = paths[-2], boundaries(data)[1]
    expected_range = list(record_batches(ranged[0].read_bytes()[ranged[1] :], position=ranged[1],
                                         name=str(ranged[0]), native=True))  # fmt: skip
    given: list[object] = []
    native = dumps_arrow._native_batches

    def noted(module: ModuleType, source: Any, *rest: Any) -> Iterator[pa.RecordBatch]:
        given.append(source)
        return native(module, source, *rest)

    monkeypatch.setattr(dumps_arrow, "_native_batches", noted)
    read: list[object] = []
    real_read = dumps_arrow.storage.read_range

    def counted(*args: Any) -> bytes:
        read.append(args)
        return real_read(*args)

    monkeypatch.setattr(dumps_arrow.storage, "read_range", counted)
    for p in paths:
        given.clear()
        assert list(record_batches(p, native=True)) == expected[p], p
        if p.stat().st_size:
            assert isinstance(given[0], mmap.mmap) and given[0].closed, p
    assert read == []
    taken = record_batches(tmp_path / "whole.log", native=True)
    next(taken)
    taken.close()  # closed early: the map with it
    assert isinstance(given[-1], mmap.mmap) and given[-1].closed
    got = list(record_batches(ranged[0], start=ranged[1], native=True))
    assert got == expected_range and len(read) == 1
    with pytest.raises(FileNotFoundError):
        record_batches(tmp_path / "missing.log", native=True)
