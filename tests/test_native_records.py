"""The native record loop (``codegen/native/records.c``) gives what the pure loop gives.

Three decoders read each segment: the reference (the segment reader's raw mode, then
``CoordinatorDecoder.decode`` per record, control records through ``control_record``), a
decoder with the pure record loop and one with the native loop. Their batches, records
(record errors included) and segment errors must be equal, with CRC checks on and off; the
native loop runs with the pure generated readers and with the native engine's readers
(then against a reference read with the pure ones). Inputs: every segment under
``tests/data``, Hypothesis segments holding every record type of the three coordinator
topics at every value version (plus tombstones, null keys, unknown types, newer versions,
odd values, headers, control batches, legacy entries, every codec), every truncation and
byte mutation of the records of a few batches, offsets and timestamps past int64, and the
key cache's limit. Well-formed batches must never reach the reference parser.

The native modules are compiled once per session into the tmp dir. Without a C compiler the
tests skip and say so; with ``SPECGEN_REQUIRE_NATIVE=1`` (set it in CI) that fails instead.
"""

from __future__ import annotations

import importlib.util
import io
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from corpus import KAFKA_DATA, TEST_DATA, corpus_settings
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from strategies import coordinator_records
from v2_batches import record_bytes_variants, reference_batches, with_records

from codegen.dumps import (
    Codec,
    ControlType,
    Header,
    NewRecord,
    SegmentError,
    SegmentReader,
    SegmentWriter,
    TimestampType,
    coordinator,
    coordinator_types,
    encode_record_batch,
)
from codegen.dumps.batches import parse_v2_raw
from codegen.dumps.compression import decompress
from codegen.dumps.coordinator import (
    CONSUMER_OFFSETS,
    COORDINATOR_TOPICS,
    CoordinatorDecoder,
    decode_records,
    record_types,
)
from codegen.dumps.decoded import DecodedBatch, DecodedRecord
from codegen.dumps.dumplog_json import DumpLogAborted, dump_log_lines
from codegen.dumps.model import RecordBatch
from codegen.dumps.writer import _varint
from codegen.runtime import backends

SEGMENTS = sorted(TEST_DATA.rglob("*.log"))
READERS = ["pure readers", "native readers"]

Items = list[DecodedBatch | SegmentError]
_CODECS = tuple(Codec(i) for i in range(5))  # a loop's codecs by id


# ------------------------------------------------------------------------------ the modules


@pytest.fixture(scope="session")
def native(records_module: ModuleType) -> Iterator[ModuleType]:
    """The record loop module (and the engine), compiled for this session; the coordinator's
    decoders made before it are forgotten."""
    coordinator._native_records.cache_clear()
    coordinator._shared_decoder.cache_clear()
    yield records_module
    coordinator._shared_decoder.cache_clear()


ReaderMaps = dict[Any, dict[int, Any]]


def _coordinator_classes() -> list[Any]:
    return [
        cls
        for topic in COORDINATOR_TOPICS
        for rt in record_types(topic).values()
        for cls in (rt.key_class, rt.value_class)
    ]


@pytest.fixture(scope="session")
def native_readers(native: ModuleType) -> ReaderMaps:
    """The engine's readers of every coordinator key and value class, at every version, made
    as the native backend makes them."""
    engine = importlib.import_module("codegen.native._engine")
    return {
        cls: backends.native_readers(engine, cls._NATIVE_CLASSES, cls._NATIVE_TABLES)[0]
        for cls in _coordinator_classes()
    }


@contextmanager
def readers_installed(maps: ReaderMaps | None) -> Iterator[None]:
    """Decoders built meanwhile read keys and values with these readers (None: the pure)."""
    saved = {cls: cls._READERS for cls in maps or {}}
    try:
        for cls, readers in (maps or {}).items():
            cls._READERS = readers
        coordinator_types._all_record_types.cache_clear()
        coordinator._shared_decoder.cache_clear()
        yield
    finally:
        for cls, readers in saved.items():
            cls._READERS = readers
        coordinator_types._all_record_types.cache_clear()
        coordinator._shared_decoder.cache_clear()


# ------------------------------------------------------------------------------ comparing


def decoded_items(
    decoder: CoordinatorDecoder, data: bytes, verify_crc: bool, runs: bool = False
) -> Items:
    """The reader's items with the decoder's loops; ``runs``: its native loop also reads runs
    of plain batches in one call each (as the dump commands read)."""
    reader = SegmentReader(data, verify_crc=verify_crc)
    loop = decoder.native_loop if runs else None
    return [
        item if isinstance(item, SegmentError) else DecodedBatch(*item)
        for item in reader.decoded_batches(decoder.decode_v2_records, decoder.decode_rows, loop)
    ]


@dataclass
class Fallbacks:
    """How often decoders handed a batch to the reference parser."""

    count: int = 0


@pytest.fixture
def fallbacks(monkeypatch: pytest.MonkeyPatch) -> Fallbacks:
    seen = Fallbacks()

    def counted(*args: Any) -> Any:
        seen.count += 1
        return parse_v2_raw(*args)

    monkeypatch.setattr(coordinator, "parse_v2_raw", counted)
    return seen


def assert_loops_agree(
    data: bytes,
    topic: str = CONSUMER_OFFSETS,
    maps: ReaderMaps | None = None,
    fallbacks: Fallbacks | None = None,
    crc_checks: tuple[bool, ...] = (True, False),
) -> Items:
    """Reference, pure loop and native loop (a batch at a time, and in runs) give the same
    items; returns them."""
    expected: Items = []
    for verify_crc in crc_checks:
        expected = reference_batches(data, topic, verify_crc)  # always with the pure readers
        with readers_installed(maps):
            pure = CoordinatorDecoder(topic, native=False)
            native = CoordinatorDecoder(topic, native=True)
            assert native.native and not pure.native
            assert decoded_items(pure, data, verify_crc) == expected
            before = fallbacks.count if fallbacks else 0
            assert decoded_items(native, data, verify_crc) == expected
            assert decoded_items(native, data, verify_crc, runs=True) == expected
            if fallbacks is not None:
                assert fallbacks.count == before, "a well-formed batch reached the reference"
    return expected


def reader_maps(which: str, native_readers: ReaderMaps) -> ReaderMaps | None:
    """The readers a variant installs: the engine's, or the pure ones (whatever the active
    backend is)."""
    if which == "native readers":
        return native_readers
    return {cls: dict(cls._PURE_READERS) for cls in native_readers}


# ------------------------------------------------------------------------------ real data


@pytest.mark.parametrize("which", READERS)
@pytest.mark.parametrize("path", SEGMENTS, ids=lambda p: str(p.relative_to(TEST_DATA)))
def test_segments_in_test_data(path: Path, which: str, native_readers: ReaderMaps) -> None:
    """Every segment of tests/data read as __consumer_offsets (others give unknown records).

    An active segment rolled just before shutdown holds no byte, and reads as nothing.
    """
    data = path.read_bytes()
    items = assert_loops_agree(data, maps=reader_maps(which, native_readers))
    assert bool(items) == bool(data)


# ------------------------------------------------------------------------------ every record type


_headers = st.lists(
    st.builds(Header, st.binary(max_size=4), st.none() | st.binary(max_size=130)), max_size=2
)


def _records(topic: str) -> st.SearchStrategy[list[NewRecord]]:
    record = st.builds(
        lambda kv, timestamp, headers, offset_delta: NewRecord(
            kv[0], kv[1], timestamp=timestamp, headers=headers, offset_delta=offset_delta
        ),
        coordinator_records(topic),
        st.one_of(st.none(), st.integers(-(2**40), 2**40)),
        st.one_of(st.just(()), _headers),
        st.one_of(st.none(), st.none(), st.integers(0, 2**31 - 1)),
    )
    return st.lists(record, min_size=1, max_size=8)


@st.composite
def _segment(draw: st.DrawFn, topic: str) -> bytes:
    out = io.BytesIO()
    writer = SegmentWriter(out, base_offset=draw(st.sampled_from([0, 1 << 40])))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["batch", "batch", "batch", "control", "legacy"]))
        if kind == "batch":
            transactional = draw(st.booleans())
            log_append = draw(st.booleans())
            writer.write_batch(
                draw(_records(topic)),
                timestamp=1_700_000_000_000,
                codec=draw(st.sampled_from(list(Codec))),
                timestamp_type=1 if log_append else 0,  # type: ignore[arg-type]
                log_append_time=1_800_000_000_000,
                transactional=transactional,
                producer_id=9 if transactional else -1,
                producer_epoch=0 if transactional else -1,
                base_sequence=draw(st.sampled_from([-1, 0, 2**31 - 2])),
            )
        elif kind == "control":
            writer.write_control(
                draw(st.sampled_from(list(ControlType))),
                producer_id=9,
                producer_epoch=0,
                coordinator_epoch=3,
            )
        else:
            pairs = draw(st.lists(coordinator_records(topic), min_size=1, max_size=3))
            writer.write_legacy(pairs, magic=draw(st.sampled_from([0, 1])))
    return out.getvalue()


_SETTINGS = corpus_settings("SPECGEN_NATIVE_EXAMPLES", 12, HealthCheck.function_scoped_fixture)


@pytest.mark.parametrize("which", READERS)
@pytest.mark.parametrize("topic", list(COORDINATOR_TOPICS))
def test_every_record_type(
    topic: str, which: str, native_readers: ReaderMaps, fallbacks: Fallbacks
) -> None:
    maps = reader_maps(which, native_readers)

    @_SETTINGS
    @given(data=_segment(topic))
    def check(data: bytes) -> None:
        assert_loops_agree(data, topic, maps, fallbacks)

    check()


def _dump_log(path: Path, topic: str, backend: str) -> tuple[str, list[object]]:
    """``--format dump-log``'s text of a file, and what it observed, read with one backend."""
    seen: list[object] = []
    backends.use_backend(backend)
    try:
        assert coordinator.native_record_loop_enabled() == (backend == "native")
        text = "\n".join(dump_log_lines(str(path), topic, observe=seen.append))
    except DumpLogAborted as exc:  # a keyless record: the text up to it, and why
        text = f"aborted: {exc}"
    finally:
        backends.use_backend(None)
    return text, seen


@pytest.mark.parametrize("topic", list(COORDINATOR_TOPICS))
def test_dump_log_text_is_the_same_with_either_loop(
    topic: str, native: ModuleType, tmp_path: Path
) -> None:
    """dump-log reads v2 data batches with the native loop when none of their records has
    headers (the records it gives do not keep them), else with the reference: the text, and
    the batches and records it observes, are the reference's either way."""

    @_SETTINGS
    @given(data=_segment(topic))
    def check(data: bytes) -> None:
        path = tmp_path / "00000000000000000000.log"
        path.write_bytes(data)
        assert _dump_log(path, topic, "native") == _dump_log(path, topic, "pure")

    check()


def test_the_loop_counts_records_with_headers(native: ModuleType) -> None:
    decoder = CoordinatorDecoder(CONSUMER_OFFSETS, native=True)
    loop: Any = decoder._native_loop
    plain = NewRecord(_oc_key("g", "t", 1), _oc_value(3))
    headed = NewRecord(_oc_key("g", "t", 1), None, headers=(Header(b"h", None),))
    for records, with_headers in (([plain, plain], 0), ([headed, plain, headed], 2)):
        data = _batch(records)
        batch = next(iter(SegmentReader(data)))
        assert isinstance(batch, RecordBatch)
        got = decoder.native_v2_records(data, 61, len(data), batch)
        assert loop.with_headers == with_headers
        assert (got is None) == bool(with_headers)


def test_well_formed_batches_stay_in_the_native_loop(
    native: ModuleType, fallbacks: Fallbacks
) -> None:
    """Odd keys and values are records of their own, not malformed batches."""
    data = _written(
        [
            _batch(
                [
                    NewRecord(_oc_key("g", "t", 1), _oc_value(3)),
                    NewRecord(_oc_key("g" * 70, "t" * 9000, 2), None),
                    NewRecord(None, _oc_value(3)),
                    NewRecord(None, None),
                    NewRecord(b"", b""),
                    NewRecord(_oc_key("g", "t", 1) + b"\x00", _oc_value(3) + b"\x00"),
                    NewRecord(_oc_key("g", "t", 1), b"\x00\x09\x00"),
                    NewRecord(b"\x00\x63\x00\x01g", b"\x7f\xff"),
                    NewRecord(
                        _oc_key("g", "t", 2),
                        _oc_value(4),
                        headers=[Header(b"h", None), Header(b"", b"v" * 200)],
                        timestamp=-(2**40),
                        offset_delta=2**31 - 1,
                    ),
                ],
                codec=Codec.LZ4,
            )
        ]
    )
    items = assert_loops_agree(data, fallbacks=fallbacks)
    kinds = [r.kind for item in items if isinstance(item, DecodedBatch) for r in item.records]
    assert kinds == [
        "record",
        "tombstone",
        "error",
        "error",
        "error",
        "record",
        "error",
        "unknown",
        "record",
    ]


# ------------------------------------------------------------------------------ malformed records


def _oc_key(group: str, topic: str, partition: int) -> bytes:
    from generated.offset_commit_key import OffsetCommitKey

    key = OffsetCommitKey(group=group, topic=topic, partition=partition)
    return b"\x00\x01" + key.encode(0)


def _oc_value(version: int) -> bytes:
    from generated.offset_commit_value import OffsetCommitValue

    value = OffsetCommitValue(offset=7, metadata="m", commit_timestamp=1_700_000_000_000)
    return struct.pack(">h", version) + value.encode(version)


def _batch(records: list[NewRecord], **kwargs: Any) -> bytes:
    return encode_record_batch(records, timestamp=1_700_000_000_000, **kwargs)


def _written(batches: list[bytes]) -> bytes:
    return b"".join(batches)


# Small batches whose record bytes are cut and mutated at every position.
_FEW_BATCHES: list[Callable[[], bytes]] = [
    lambda: _batch(
        [
            NewRecord(_oc_key("g", "t", 1), _oc_value(3)),
            NewRecord(_oc_key("g", "t", 1), None, headers=[Header(b"k", b"v"), Header(b"", None)]),
            NewRecord(None, _oc_value(4), timestamp=-(2**35), offset_delta=300),
        ]
    ),
    lambda: _batch(
        [
            NewRecord(_oc_key("g" * 64, "t", 0), _oc_value(1), headers=[Header(b"h", b"x")]),
            NewRecord(b"\x00\x63", b""),
        ],
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        log_append_time=1_800_000_000_000,
    ),
]


@pytest.mark.parametrize("which", READERS)
@pytest.mark.parametrize("case", range(len(_FEW_BATCHES)))
def test_every_truncation_and_byte_mutation(
    case: int, which: str, native_readers: ReaderMaps
) -> None:
    """Records cut short or with a byte changed (under a valid CRC) reach both loops; the
    native one gives the reference's records or its error."""
    maps = reader_maps(which, native_readers)
    plain = _FEW_BATCHES[case]()
    body = plain[61:]
    errors = 0
    for variant in record_bytes_variants(body):
        # The CRC is valid: checking it or not takes the same path.
        items = assert_loops_agree(with_records(plain, variant), maps=maps, crc_checks=(True,))
        errors += sum(isinstance(i, SegmentError) for i in items)
    assert errors > len(body)  # most cuts and many mutations are malformed batches


def test_whole_segment_truncations(native: ModuleType) -> None:
    """Every cut of a small segment: torn tails and batches cut short."""
    data = _FEW_BATCHES[0]() + _FEW_BATCHES[1]()
    for n in range(0, len(data), 3):
        assert_loops_agree(data[:n])


# ------------------------------------------------------------------------------ edges


def _record(ts_delta: int, offset_delta: int, key: bytes, value: bytes | None) -> bytes:
    body = bytes([0]) + _varint(ts_delta) + _varint(offset_delta) + _varint(len(key)) + key
    body += _varint(-1) if value is None else _varint(len(value)) + value
    body += _varint(0)  # no headers
    return _varint(len(body)) + body


def _padded(value: int, size: int) -> bytes:
    """The zig-zag varint of ``value`` written in ``size`` bytes (non-canonical when longer)."""
    u = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    for _ in range(size - 1):
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u & 0x7F)
    return bytes(out)


@pytest.mark.parametrize("field", range(8))
def test_long_and_overlong_varints(field: int, native: ModuleType, fallbacks: Fallbacks) -> None:
    """Each varint of a record padded to its longest form (read) and one byte more (not)."""
    key, value = _oc_key("g", "t", 1), _oc_value(3)
    header_key, header_value = b"h", b"v"
    # (value, longest form) per field: record size, timestamp and offset delta, key and value
    # length, header count, header key and value length.
    longest = [5, 10, 5, 5, 5, 5, 5, 5]

    def record(sizes: list[int]) -> bytes:
        parts = [5, 1, 2, len(key), len(value), 1, len(header_key), len(header_value)]
        ints = [_padded(v, n) for v, n in zip(parts, sizes, strict=True)]
        body = bytes([0]) + ints[1] + ints[2] + ints[3] + key + ints[4] + value + ints[5]
        body += ints[6] + header_key + ints[7] + header_value
        return _padded(len(body), sizes[0]) + body

    plain = _batch([NewRecord(None, None)] * 2)
    for extra in (0, 1):
        sizes = [1] * 8
        sizes[field] = longest[field] + extra
        body = record([1] * 8) + record(sizes)
        (item,) = assert_loops_agree(
            with_records(plain, body), fallbacks=None if extra else fallbacks, crc_checks=(True,)
        )
        assert isinstance(item, SegmentError) == bool(extra)


def test_offsets_and_timestamps_past_int64(native: ModuleType) -> None:
    """base + delta beyond int64 stays exact (Python ints), as in the pure loop."""
    base_ts = 2**63 - 10
    plain = _batch([NewRecord(None, None)] * 3, base_offset=2**63 - 2)
    plain = plain[:27] + struct.pack(">q", base_ts) + plain[35:]
    key = _oc_key("g", "t", 1)
    body = (
        _record(2**62, 2**31 - 1, key, _oc_value(3))
        + _record(-(2**63), 0, key, None)
        + _record(0, 1, key, None)
    )
    (decoded,) = assert_loops_agree(with_records(plain, body))
    assert isinstance(decoded, DecodedBatch)
    assert [r.offset for r in decoded.records] == [2**63 - 2 + 2**31 - 1, 2**63 - 2, 2**63 - 1]
    assert [r.timestamp for r in decoded.records] == [base_ts + 2**62, base_ts - 2**63, base_ts]


def test_key_cache_is_cleared_past_its_limit(native: ModuleType) -> None:
    decoder = CoordinatorDecoder(CONSUMER_OFFSETS, native=True)
    loop: Any = decoder._native_loop
    assert loop is not None
    many = [NewRecord(_oc_key("g", str(i), 0), None) for i in range(2**16 + 1)]
    few = [NewRecord(_oc_key("g", "t", 0), None)]
    data = _written([_batch(many), _batch(few)])
    expected = reference_batches(data)
    reader = SegmentReader(data)
    items = reader.decoded_batches(decoder.decode_v2_records, decoder.decode_rows)
    first = next(items)
    assert loop.cached_keys == 2**16 + 1
    second = next(items)
    assert loop.cached_keys == 1  # cleared before the second batch
    assert isinstance(first, tuple) and isinstance(second, tuple)
    assert [DecodedBatch(*first), DecodedBatch(*second)] == expected
    loop.clear_keys()
    assert loop.cached_keys == 0


def test_the_environment_picks_the_loop(
    native: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = (KAFKA_DATA / "ldi-poc" / "__consumer_offsets-6").joinpath("00000000000000000000.log")
    monkeypatch.delenv(backends.ENVIRONMENT_VARIABLE, raising=False)
    assert coordinator.native_record_loop_enabled()
    assert coordinator.coordinator_decoder(CONSUMER_OFFSETS).native
    native_records = list(decode_records(data, include_control=True))
    monkeypatch.setenv(backends.ENVIRONMENT_VARIABLE, "pure")
    assert not coordinator.native_record_loop_enabled()
    assert not coordinator.coordinator_decoder(CONSUMER_OFFSETS).native
    assert list(decode_records(data, include_control=True)) == native_records
    assert len(native_records) == 13


def test_record_loop_checks_what_it_is_given(native: ModuleType) -> None:
    @dataclass(slots=True)
    class OtherRecord:
        offset: int

    with pytest.raises(TypeError, match="not the slotted DecodedRecord"):
        native.RecordLoop(OtherRecord, len, len, "record", "tombstone")
    with pytest.raises(TypeError, match="callable"):
        native.RecordLoop(DecodedRecord, None, len, "record", "tombstone")

    def bad_key(key: bytes) -> Any:
        return ("not", "a", "known", "key")

    loop = native.RecordLoop(DecodedRecord, bad_key, len, "record", "tombstone")
    body = _batch([NewRecord(_oc_key("g", "t", 1), None)])[61:]
    with pytest.raises(TypeError, match="new_key must return"):
        loop(body, 0, len(body), 1, 0, 0, False, 0)
    with pytest.raises(ValueError, match="bad bounds"):
        loop(body, 0, len(body) + 1, 1, 0, 0, False, 0)
    keys: list[bytes] = []
    decoder = CoordinatorDecoder(CONSUMER_OFFSETS)

    def counted_key(key: bytes) -> Any:
        keys.append(key)
        return decoder._key_entry(key)

    loop = native.RecordLoop(DecodedRecord, counted_key, decoder.decode, "record", "tombstone")
    with pytest.raises(native.MalformedRecords, match="record 1 at byte"):
        loop(body + b"\x00", 0, len(body) + 1, 2, 0, 0, False, 0)
    assert keys == []  # the batch is parsed whole before anything is decoded
    assert len(loop(body, 0, len(body), 1, 0, 0, False, 0)) == 1
    assert len(keys) == 1


def test_record_loop_reads_newer_versions_itself(native: ModuleType) -> None:
    """A value version newer than the specs (read at the newest flexible one, as decode reads
    it) is decoded in the loop: the record decode gives, newer_than_spec, no slow call."""
    from generated.offset_commit_value import OffsetCommitValue

    newest = OffsetCommitValue.HIGHEST_VERSION
    decoder = CoordinatorDecoder(CONSUMER_OFFSETS)
    slow_calls: list[bytes | None] = []

    def slow(key: bytes | None, value: bytes | None, offset: int, ts: int) -> DecodedRecord:
        slow_calls.append(value)
        return decoder.decode(key, value, offset, ts)

    newer = _oc_value(newest)
    newer = struct.pack(">h", newest + 1) + newer[2:]
    left_over = newer + b"\x00"  # bytes after the value: decode's note, so the slow path
    records = [NewRecord(_oc_key("g", "t", 1), v) for v in (newer, _oc_value(newest), left_over)]
    body = _batch(records)[61:]
    loop = native.RecordLoop(DecodedRecord, decoder._key_entry, slow, "record", "tombstone")
    got = loop(body, 0, len(body), 3, 0, 0, False, 0)
    assert got == [decoder.decode(r.key, r.value, i, 0) for i, r in enumerate(records)]
    assert [r.newer_than_spec for r in got] == [True, False, True]
    assert got[0].value_version == newest + 1 and got[2].note
    assert slow_calls == [left_over]


@pytest.mark.parametrize("run", [1, 2, 5, 4096])
def test_runs_of_batches_stop_where_the_reader_must_read(
    run: int, native: ModuleType, monkeypatch: pytest.MonkeyPatch, fallbacks: Fallbacks
) -> None:
    """The native loop's runs of plain batches end at a compressed batch, a control batch, a
    legacy entry, a batch whose CRC or records are bad and at the run's limit of records: the
    reader reads those as before, and the items are the reference's."""
    from codegen.dumps import encode_control_batch, segments
    from codegen.dumps.writer import encode_legacy_entry

    monkeypatch.setattr(segments, "_LOOP_RUN", run)
    plain = [NewRecord(_oc_key("g", "t", p), _oc_value(3)) for p in range(3)]
    good = [_batch(plain, base_offset=10 * i) for i in range(8)]
    bad_crc = bytearray(good[3])
    bad_crc[-1] ^= 1
    data = _written(
        [
            good[0],
            good[1],
            _batch(plain, base_offset=20, codec=Codec.LZ4),
            good[2],
            encode_control_batch(ControlType.COMMIT, base_offset=31, producer_id=5),
            bytes(bad_crc),
            good[4],
            with_records(good[5], good[5][61:-1] + b"\x7f"),  # its last record cut short
            encode_legacy_entry([NewRecord(b"k", b"v")], magic=1, offset=60),
            good[6],
            good[7],
        ]
    )
    before = fallbacks.count
    items = assert_loops_agree(data)
    assert [type(i).__name__ for i in items].count("SegmentError") >= 2
    assert fallbacks.count > before  # the batch cut short: only the reference says why
    decoder = CoordinatorDecoder(CONSUMER_OFFSETS, native=True)
    loop = decoder.native_loop
    args = (True, 1 << 20, 1 << 20, RecordBatch, "f", _CODECS)
    types = (TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME)
    got, pos = loop.batches(data, 0, *args, types, run, None)  # 3 records a batch
    assert [b.base_offset for b, _ in got] == ([0] if run <= 3 else [0, 10])
    assert pos == sum(len(b) for b in good[: len(got)])
    at_lz4 = len(good[0]) + len(good[1])
    assert loop.batches(data, at_lz4, *args, types, run, None) == ([], at_lz4)
    # given the reader's decompress function, the run goes on through the lz4 batch
    got, pos = loop.batches(data, at_lz4, *args, types, 6, decompress)
    assert [(b.base_offset, b.codec) for b, _ in got] == [(20, Codec.LZ4), (20, Codec.NONE)]
    assert [r.value for r in got[0][1]] == [r.value for r in got[1][1]]


def test_runs_check_what_they_are_given(native: ModuleType) -> None:
    loop = CoordinatorDecoder(CONSUMER_OFFSETS, native=True).native_loop
    data = _batch([NewRecord(_oc_key("g", "t", 1), _oc_value(3))])
    args = (True, 1 << 20, 1 << 20, RecordBatch, "f", _CODECS)
    types = (TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME)
    with pytest.raises(TypeError, match="11 arguments"):
        loop.batches(data, 0)
    with pytest.raises(TypeError, match="tuple of 2"):
        loop.batches(data, 0, *args, (), 10, None)
    with pytest.raises(TypeError, match="tuple of 5"):
        loop.batches(data, 0, *args[:-1], Codec.NONE, types, 10, None)
    with pytest.raises(ValueError, match="outside"):
        loop.batches(data, len(data) + 1, *args, types, 10, None)
    ((batch, records),) = loop.batches(data, 0, *args, types, 10, None)[0]
    assert batch.file == "f" and batch.records == [] and len(records) == 1
