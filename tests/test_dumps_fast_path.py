"""The coordinator decoder's one-pass record loop (the native one; the pure backend reads with the
reference itself) gives exactly what the reference path gives.

Reference: the segment reader's raw mode (``parse_v2_raw``) and ``CoordinatorDecoder.decode``
per record, control batches through ``control_record``. Fast: ``decode_batches`` (v2 data
batches through ``decode_v2_records``). Segments are written by the project's writer with every
codec, headers, control batches, legacy entries, multi-byte varints and keys and values of every
kind (valid, unknown type, newer or unknown version, truncated, trailing bytes, tombstones,
consumer groups); then their bytes are mutated.
"""

from __future__ import annotations

import io
import struct
from itertools import chain
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from v2_batches import reference_batches, with_records

from codegen.dumps import (
    Codec,
    ControlType,
    Header,
    NewRecord,
    SegmentError,
    SegmentWriter,
    TimestampType,
    encode_record_batch,
)
from codegen.dumps import coordinator as coordinator_module
from codegen.dumps.coordinator import (
    decode_batches,
    decode_records,
)
from codegen.dumps.decoded import DecodedBatch
from codegen.dumps.varints import read_zigzag32
from codegen.dumps.writer import _varint
from generated.group_metadata_key import GroupMetadataKey
from generated.group_metadata_value import GroupMetadataValue, MemberMetadata
from generated.offset_commit_key import OffsetCommitKey
from generated.offset_commit_value import OffsetCommitValue


def _slow(examples: int) -> settings:
    return settings(
        max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )


def assert_same_as_reference(data: bytes) -> None:
    for verify_crc in (True, False):
        errors: list[SegmentError] = []
        fast = list(decode_batches(data, verify_crc=verify_crc, errors=errors))
        assert fast == reference_batches(data, verify_crc=verify_crc)
        assert errors == [item for item in fast if isinstance(item, SegmentError)]
        records = list(decode_records(data, verify_crc=verify_crc, include_control=True))
        assert records == list(
            chain.from_iterable(i.records for i in fast if isinstance(i, DecodedBatch))
        )


# -- records -------------------------------------------------------------------------------------

_texts = st.one_of(
    st.text(alphabet="gt-é", max_size=4),
    st.sampled_from(["g" * 70, "t" * 300, "x" * 9000]),  # two- and three-byte varint lengths
)
_type_prefix = st.sampled_from([b"\x00\x00", b"\x00\x01"])  # both OffsetCommit key types
_offset_commit_key = st.builds(
    lambda prefix, group, topic, partition: (
        prefix + OffsetCommitKey(group=group, topic=topic, partition=partition).encode(0)
    ),
    _type_prefix,
    _texts,
    _texts,
    st.integers(-1, 2**31 - 1),
)


def _offset_commit_value(version: int, offset: int, metadata: str, when: int) -> bytes:
    value = OffsetCommitValue(offset=offset, metadata=metadata, commit_timestamp=when)
    # Version 5 is newer than the specs: read with the flexible version 4.
    return struct.pack(">h", version) + value.encode(min(version, 4))


_offset_commit_value_bytes = st.builds(
    _offset_commit_value,
    st.sampled_from([0, 1, 3, 3, 3, 4, 5]),
    st.integers(-1, 2**63 - 1),
    _texts,
    st.integers(-(2**63), 2**63 - 1),
)


def _group(group: str, protocol_type: str, subscription: bytes) -> tuple[bytes, bytes]:
    member = MemberMetadata(
        member_id="m", client_id="c", client_host="/h", subscription=subscription, assignment=b""
    )
    value = GroupMetadataValue(
        protocol_type=protocol_type, generation=1, protocol="range", members=[member]
    )
    return b"\x00\x02" + GroupMetadataKey(group=group).encode(0), b"\x00\x03" + value.encode(3)


_group_record = st.builds(
    _group,
    _texts,
    st.sampled_from(["consumer", "connect"]),
    st.one_of(st.binary(max_size=8), st.just(bytes.fromhex("000000000001000174ffffffff"))),
)


def _odd(data: bytes, how: str) -> bytes:
    if how == "truncated":
        return data[: len(data) // 2]
    if how == "trailing":
        return data + b"\x00"
    return data


_key_value = st.one_of(
    st.tuples(_offset_commit_key, _offset_commit_value_bytes),
    st.tuples(_offset_commit_key, st.none()),  # tombstone
    _group_record,
    st.tuples(
        st.one_of(
            _offset_commit_key,
            st.builds(_odd, _offset_commit_key, st.sampled_from(["truncated", "trailing"])),
            st.none(),
            st.binary(max_size=6),
            st.just(b"\x00\x63\x00\x01g"),  # unknown record type
        ),
        st.one_of(
            _offset_commit_value_bytes,
            st.builds(_odd, _offset_commit_value_bytes, st.sampled_from(["truncated", "trailing"])),
            st.none(),
            st.binary(max_size=12),
            st.just(b"\x7f\xff"),  # unknown version
        ),
    ),
)

_headers = st.one_of(
    st.just(()),
    st.lists(
        st.builds(Header, st.binary(max_size=4), st.none() | st.binary(max_size=4)), max_size=2
    ),
)

_record = st.builds(
    lambda kv, timestamp, headers, offset_delta: NewRecord(
        kv[0], kv[1], timestamp=timestamp, headers=headers, offset_delta=offset_delta
    ),
    _key_value,
    st.one_of(st.none(), st.integers(-(2**40), 2**40)),  # multi-byte, negative deltas
    _headers,
    st.one_of(st.none(), st.none(), st.integers(0, 2**31 - 1)),
)

_entry = st.one_of(
    st.tuples(
        st.just("batch"),
        st.lists(_record, max_size=6),
        st.sampled_from(list(Codec)),
        st.sampled_from([TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME]),
        st.booleans(),
    ),
    st.tuples(st.just("control"), st.sampled_from(list(ControlType))),
    st.tuples(
        st.just("legacy"), st.lists(_key_value, min_size=1, max_size=3), st.sampled_from([0, 1])
    ),
)


def _segment(entries: list[tuple[Any, ...]]) -> bytes:
    out = io.BytesIO()
    w = SegmentWriter(out, base_offset=1 << 40)  # offsets beyond small ints
    for entry in entries:
        if entry[0] == "batch":
            _, records, codec, ts_type, transactional = entry
            w.write_batch(
                records,
                timestamp=1_700_000_000_000,
                codec=codec,
                timestamp_type=ts_type,
                log_append_time=1_800_000_000_000,
                transactional=transactional,
                producer_id=9 if transactional else -1,
                producer_epoch=0 if transactional else -1,
                base_sequence=0 if transactional else -1,
            )
        elif entry[0] == "control":
            w.write_control(entry[1], producer_id=9, producer_epoch=0, coordinator_epoch=3)
        else:
            _, pairs, magic = entry
            w.write_legacy(pairs, magic=magic)
    return out.getvalue()


_segments = st.lists(_entry, min_size=1, max_size=5).map(_segment)


# -- tests ---------------------------------------------------------------------------------------


@_slow(150)
@given(data=_segments)
def test_written_segments(data: bytes) -> None:
    assert_same_as_reference(data)


@_slow(200)
@given(
    data=_segments,
    flips=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 7)), min_size=1, max_size=4),
)
def test_mutated_segments(data: bytes, flips: list[tuple[int, int]]) -> None:
    mutated = bytearray(data)
    for pos, bit in flips:
        mutated[pos % len(mutated)] ^= 1 << bit
    assert_same_as_reference(bytes(mutated))


@_slow(200)
@given(
    records=st.lists(_record, min_size=1, max_size=6),
    codec=st.sampled_from([Codec.NONE, Codec.LZ4, Codec.ZSTD]),
    edits=st.lists(
        st.tuples(st.integers(0, 1 << 16), st.integers(0, 255), st.integers(0, 2)),
        min_size=1,
        max_size=3,
    ),
)
def test_corrupt_records_in_checksummed_batches(
    records: list[NewRecord], codec: Codec, edits: list[tuple[int, int, int]]
) -> None:
    """Records edited (byte set, inserted or deleted) under a valid CRC reach the record loop."""
    plain = encode_record_batch(records, base_offset=5)
    body = bytearray(plain[61:])
    for pos, byte, how in edits:
        pos %= max(len(body), 1)
        if how == 0 and body:
            body[pos] = byte
        elif how == 1:
            body.insert(pos, byte)
        elif body:
            del body[pos]
    assert_same_as_reference(with_records(plain, bytes(body), codec))


def _split_records(body: bytes, count: int) -> list[bytes]:
    """Each record's bytes after its size varint."""
    out = []
    pos = 0
    for _ in range(count):
        size, pos = read_zigzag32(body, pos)
        out.append(body[pos : pos + size])
        pos += size
    return out


@_slow(150)
@given(
    records=st.lists(_record, min_size=1, max_size=5),
    which=st.integers(0, 4),
    change=st.one_of(st.binary(min_size=1, max_size=3), st.integers(1, 3)),
    codec=st.sampled_from([Codec.NONE, Codec.ZSTD]),
)
def test_records_with_a_wrong_size(
    records: list[NewRecord], which: int, change: bytes | int, codec: Codec
) -> None:
    """A record whose size counts bytes it does not use, or fewer than it uses, is an error."""
    plain = encode_record_batch(records)
    parts = _split_records(plain[61:], len(records))
    i = which % len(parts)
    if isinstance(change, bytes):
        parts[i] += change  # bytes the record's fields do not cover
        sizes = [len(p) for p in parts]
    else:
        sizes = [len(p) for p in parts]
        sizes[i] = max(sizes[i] - change, 0)  # fewer bytes than the fields take
    body = b"".join(_varint(n) + p for n, p in zip(sizes, parts, strict=True))
    assert_same_as_reference(with_records(plain, body, codec))


@pytest.mark.native_only  # the one-pass loop is the native one: pure reads with the reference
def test_well_formed_batches_never_reach_the_reference_parser(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The one-pass loop handles every well-formed record itself, odd keys and values included."""
    assert coordinator_module.native_record_loop_enabled()
    key_values: list[tuple[bytes | None, bytes | None]] = [
        (_offset_commit_key_bytes("g" * 70, "t", 3), _offset_commit_value(3, 1, "", 2)),
        (_offset_commit_key_bytes("g", "t" * 9000, 3), None),
        _group("g", "consumer", b"\x00"),
        (None, b"\x00\x03"),
        (b"\x00\x63\x00", b"\x7f\xff"),
        (_offset_commit_key_bytes("g", "t", 1), _offset_commit_value(5, 1, "m", 2)[:-1]),
    ]
    records = [
        NewRecord(k, v, timestamp=t, headers=h, offset_delta=d)
        for (k, v), t, h, d in zip(
            key_values * 3,
            [None, 5, -(2**40)] * 6,
            [(), (Header(b"h", None),)] * 9,
            [None] * 9 + [70, 9000, 2**31 - 1, 0, 1, 2, 3, 4, 5],
            strict=True,
        )
    ]
    data = encode_record_batch(records, timestamp=1_700_000_000_000, codec=Codec.LZ4)
    expected = reference_batches(data, verify_crc=True)

    def no_reference(*args: object) -> object:
        raise AssertionError("the reference parser was used")

    monkeypatch.setattr(coordinator_module, "parse_v2_raw", no_reference)
    assert list(decode_batches(data)) == expected


def _offset_commit_key_bytes(group: str, topic: str, partition: int) -> bytes:
    return b"\x00\x01" + OffsetCommitKey(group=group, topic=topic, partition=partition).encode(0)
