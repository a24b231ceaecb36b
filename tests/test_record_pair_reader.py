"""``record_pair_reader``: one coordinator record's key and value, as a Kafka client hands
them over, read in one call.

Reference: ``CoordinatorDecoder.decode`` on the same bytes, through the pure record loop. The
pair reader must give its key and value objects, or raise ``RecordPairError`` with its error
text, on every input: real segments, every record type at every value version, odd and mutated
bytes. Under the native backend the pair reader is the engine's (its fast path, with the pure
pair reader for everything else); the codec tests' pure pass checks the pure one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import coordinator_records, row_of

from codegen.dumps.coordinator import (
    CONSUMER_OFFSETS,
    COORDINATOR_TOPICS,
    CoordinatorDecoder,
    RecordPairError,
    decode_records,
    record_pair_reader,
)
from codegen.dumps.decoded import ERROR, RECORD, TOMBSTONE, UNKNOWN
from codegen.runtime import backends

DATA = Path(__file__).resolve().parent / "data"
OFFSETS_SEGMENTS = sorted(p for p in DATA.rglob("*.log") if "__consumer_offsets" in str(p))


def outcome(read_pair: Any, key: Any, value: Any) -> tuple[str, Any]:
    """What a pair reader gives: ("ok", (key, value)) or ("error", its text)."""
    try:
        return "ok", read_pair(key, value)
    except RecordPairError as exc:
        return "error", str(exc)


def reference(topic: str, key: Any, value: Any) -> tuple[str, Any]:
    """The coordinator decoder's answer for the same bytes (the pure loop)."""
    rec = CoordinatorDecoder(topic, native=False).decode(key, value)
    if rec.kind in (RECORD, TOMBSTONE):
        return "ok", (rec.key, rec.value)
    assert rec.kind in (ERROR, UNKNOWN) and rec.error
    return "error", rec.error


def test_the_native_backend_serves_a_native_pair_reader() -> None:
    read_pair = record_pair_reader()
    engine = backends.native_engine()
    if backends.backend() == backends.NATIVE:
        assert engine is not None and type(read_pair) is engine.PairReader
    else:
        assert engine is None or type(read_pair) is not engine.PairReader


@pytest.mark.parametrize("path", OFFSETS_SEGMENTS, ids=lambda p: str(p.relative_to(DATA)))
def test_real_segments(path: Path) -> None:
    read_pair = record_pair_reader()
    records = list(decode_records(path, CONSUMER_OFFSETS))
    assert records
    for rec in records:
        got = outcome(read_pair, rec.key_bytes, rec.value_bytes)
        assert got == reference(CONSUMER_OFFSETS, rec.key_bytes, rec.value_bytes)
        if rec.kind in (RECORD, TOMBSTONE):
            assert got == ("ok", (rec.key, rec.value))


def _mutated(data: bytes | None, cut: int, flip: int, extra: bytes) -> bytes | None:
    if data is None:
        return None
    if cut:
        data = data[: max(0, len(data) - cut)]
    if flip and data:
        i = flip % len(data)
        data = data[:i] + bytes([data[i] ^ (flip & 0xFF or 1)]) + data[i + 1 :]
    return data + extra


_mutation = st.tuples(
    st.integers(0, 3), st.integers(0, 2**16), st.sampled_from([b"", b"\x00", b"\x80\x80"])
)


@pytest.mark.parametrize("topic", sorted(COORDINATOR_TOPICS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_record_type_and_odd_bytes(topic: str, data: st.DataObject) -> None:
    read_pair = record_pair_reader(topic)
    key, value = data.draw(coordinator_records(topic))
    if data.draw(st.booleans()):
        key = _mutated(key, *data.draw(_mutation))
        value = _mutated(value, *data.draw(_mutation))
    assert outcome(read_pair, key, value) == reference(topic, key, value)


@pytest.mark.parametrize("topic", sorted(COORDINATOR_TOPICS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_rows_are_the_objects_as_rows(topic: str, data: st.DataObject) -> None:
    key, value = data.draw(coordinator_records(topic))
    objects = outcome(record_pair_reader(topic), key, value)
    rows = outcome(record_pair_reader(topic, rows=True), key, value)
    if objects[0] == "error":
        assert rows == objects
    else:
        key_obj, value_obj = objects[1]
        assert rows == ("ok", (row_of(key_obj), None if value_obj is None else row_of(value_obj)))


def test_other_buffers_and_wrong_arguments() -> None:
    read_pair = record_pair_reader()
    key, value = _a_pair()
    expected = read_pair(key, value)
    assert read_pair(bytearray(key), memoryview(value)) == expected
    assert read_pair(key, None) == (expected[0], None)
    with pytest.raises(TypeError):
        read_pair(key)  # type: ignore[call-arg]


def test_newer_flexible_value_versions_read_at_the_newest() -> None:
    read_pair = record_pair_reader()
    key, value = _a_pair()
    newer = (99).to_bytes(2, "big") + value[2:]
    got = outcome(read_pair, key, newer)
    assert got == reference(CONSUMER_OFFSETS, key, newer)


def _a_pair() -> tuple[bytes, bytes]:
    from generated.offset_commit_key import OffsetCommitKey
    from generated.offset_commit_value import OffsetCommitValue

    key = b"\x00\x01" + OffsetCommitKey(group="g", topic="t", partition=7).encode(0)
    value = b"\x00\x04" + OffsetCommitValue(offset=5, metadata="m").encode(4)
    return key, value
