"""Coordinator records decoded where their keys and values lie (``CoordinatorDecoder
.decode_slices``, the native record loop's ``rows``) are what ``decode_raw`` gives of the same
``(offset, timestamp, key, value)`` rows, with the native loop and with the pure one.

Inputs: Hypothesis rows of every record type of the three coordinator topics at every value
version (tombstones, null keys, unknown types and versions, newer versions, trailing bytes, cut
keys), every record of the segments under ``tests/data`` (classic groups with their members'
payloads among them), keys met again in a later call, and what ``rows`` refuses: the wrong
count of arguments or of values, arrays that are not int64, slices outside their buffer, a user
topic's loop. ``SPECGEN_NATIVE_EXAMPLES`` sets the examples per topic (default 8).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from corpus import TEST_DATA, corpus_settings
from hypothesis import given
from hypothesis import strategies as st
from strategies import coordinator_records

from codegen.dumps import coordinator
from codegen.dumps.coordinator import (
    CONSUMER_OFFSETS,
    COORDINATOR_TOPICS,
    CoordinatorDecoder,
    decode_records,
)
from codegen.dumps.decoded import DecodedRecord
from codegen.dumps.model import RawRecord

SETTINGS = corpus_settings("SPECGEN_NATIVE_EXAMPLES", 8)

Slices = tuple[bytes, Any, Any, bytes, Any, Any, Any, Any]


@pytest.fixture(scope="module")
def native(records_module: ModuleType) -> Iterator[ModuleType]:
    """The record loop module, compiled for this session; the coordinator's decoders made
    before it are forgotten."""
    coordinator._native_records.cache_clear()
    coordinator._shared_decoder.cache_clear()
    yield records_module
    coordinator._shared_decoder.cache_clear()


def _int64s(values: Sequence[int]) -> Any:
    return np.array(values, np.int64)


def _joined(parts: Sequence[bytes | None]) -> tuple[bytes, Any, Any]:
    """The parts one after another (a byte between each, so no slice ends where the next
    starts), where each starts, and their sizes (-1: None)."""
    data = bytearray(b"\xee")
    starts, sizes = [], []
    for part in parts:
        starts.append(len(data) if part is not None else 0)
        sizes.append(len(part) if part is not None else -1)
        data += (part or b"") + b"\xee"
    return bytes(data), _int64s(starts), _int64s(sizes)


def _slices(rows: Sequence[RawRecord]) -> Slices:
    keys, key_starts, key_sizes = _joined([key for _, _, key, _ in rows])
    values, value_starts, value_sizes = _joined([value for _, _, _, value in rows])
    offsets = _int64s([offset for offset, _, _, _ in rows])
    timestamps = _int64s([ts for _, ts, _, _ in rows])
    return keys, key_starts, key_sizes, values, value_starts, value_sizes, offsets, timestamps


def assert_slices_are_decode_raw(topic: str, rows: Sequence[RawRecord]) -> list[DecodedRecord]:
    """Both decoders' decode_slices give the pure decode_raw's records, twice (the second
    time with the keys decoded before); returns them."""
    expected = CoordinatorDecoder(topic, native=False).decode_raw(rows)
    for native in (False, True):
        decoder = CoordinatorDecoder(topic, native=native)
        assert decoder.native == native
        assert decoder.decode_slices(*_slices(rows)) == expected
        assert decoder.decode_slices(*_slices(rows)) == expected
    return expected


@pytest.mark.parametrize("topic", list(COORDINATOR_TOPICS))
def test_every_record_type(native: ModuleType, topic: str) -> None:
    @SETTINGS
    @given(st.lists(coordinator_records(topic), max_size=12))
    def check(pairs: list[tuple[bytes | None, bytes | None]]) -> None:
        rows = [
            (i * 7 - 3, 1_700_000_000_000 - i, key, value) for i, (key, value) in enumerate(pairs)
        ]
        assert_slices_are_decode_raw(topic, rows)

    check()


def test_segments_in_test_data(native: ModuleType) -> None:
    """Every record of the segments under tests/data read as __consumer_offsets."""
    rows: list[RawRecord] = []
    for path in sorted(TEST_DATA.rglob("*.log")):
        rows += [
            (rec.offset, rec.timestamp, rec.key_bytes, rec.value_bytes)
            for rec in decode_records(path, CONSUMER_OFFSETS)
        ]
    records = assert_slices_are_decode_raw(CONSUMER_OFFSETS, rows)
    assert any(rec.members for rec in records)  # members' payloads attached
    assert {rec.kind for rec in records} >= {"record", "tombstone"}


def test_rows_checks_what_it_is_given(native: ModuleType) -> None:
    decoder = CoordinatorDecoder(CONSUMER_OFFSETS, native=True)
    loop = decoder._rows_loop
    row = (5, 7, b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x01", None)
    good = list(_slices([row]))
    assert loop.rows(*good) == [decoder.decode(row[2], None, 5, 7)]
    empty = _int64s([])
    assert loop.rows(b"", empty, empty, b"", empty, empty, empty, empty) == []
    with pytest.raises(TypeError, match="takes 8 arguments"):
        loop.rows(*good[:7])
    for i, what in ((2, "key_sizes"), (5, "value_sizes"), (7, "timestamps")):
        wrong = list(good)
        wrong[i] = _int64s([0, 0])  # the first array (key_starts) sets the count
        with pytest.raises(ValueError, match=f"{what} must be 1 int64 values"):
            loop.rows(*wrong)
    for i, what in ((1, "key_starts"), (6, "offsets")):
        wrong = list(good)
        wrong[i] = np.zeros(1, np.int32)
        with pytest.raises(ValueError, match=rf"{what} must be .*int64 values"):
            loop.rows(*wrong)
    wrong = list(good)
    wrong[1] = np.zeros(4, np.int64)[::2]  # not contiguous
    with pytest.raises((BufferError, ValueError), match="contiguous"):
        loop.rows(*wrong)
    size = len(good[0])
    for start, length in ((-1, 1), (0, size + 1), (size + 1, 0), (2**62, 2**62), (0, -2)):
        wrong = list(good)
        wrong[1], wrong[2] = _int64s([start]), _int64s([length])
        with pytest.raises(ValueError, match=r"the key of row 0 .* is outside its"):
            loop.rows(*wrong)
    wrong = list(good)
    wrong[4], wrong[5] = _int64s([0]), _int64s([len(good[3]) + 1])
    with pytest.raises(ValueError, match="the value of row 0"):
        loop.rows(*wrong)


def test_rows_are_checked_before_any_is_decoded(native: ModuleType) -> None:
    decoder = CoordinatorDecoder(CONSUMER_OFFSETS)
    keys: list[bytes] = []

    def counted_key(key: bytes) -> Any:
        keys.append(key)
        return decoder._key_entry(key)

    loop = native.RecordLoop(DecodedRecord, counted_key, decoder.decode, "record", "tombstone")
    key = b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x01"
    good = list(_slices([(0, 0, key, None), (1, 0, key, None)]))
    bad = list(good)
    bad[2] = _int64s([len(key), len(good[0])])  # the second key runs past the end
    with pytest.raises(ValueError, match="row 1"):
        loop.rows(*bad)
    assert keys == []
    assert len(loop.rows(*good)) == 2
    assert len(keys) == 1  # then cached


def test_a_user_topics_loop_refuses_rows(native: ModuleType) -> None:
    from codegen.dumps.topic_map import parse_topic_map
    from codegen.dumps.user_topics import UserTopicDecoder

    topic_map = parse_topic_map(
        {"t": {"value": {"message": "OffsetCommitValue", "version": 3}}}, "generated"
    )
    entry = topic_map.entry_for("t")
    assert entry is not None
    decoder = UserTopicDecoder(entry, "generated", native=True)
    empty = _int64s([])
    with pytest.raises(TypeError, match="coordinator records only"):
        decoder._loop.rows(b"", empty, empty, b"", empty, empty, empty, empty)
