"""Kafka 4.4.0's read limits, on both backends and in the columnar decoder.

Kafka's generated ``read`` methods refuse, before allocating, an array of more than
1,000,000 elements ("Tried to read a collection of size N, which exceeds the maximum allowed
size of 1000000.") and a tagged-field section of more than 10,000 fields ("Tried to read N
tagged fields, which exceeds the maximum allowed count of 10000."); a count equal to the
limit is read. Ours refuse the same counts with typed errors (``InvalidLength``,
``InvalidTaggedField``) that carry the field path and byte offset, the same from the pure
readers, the native engine (objects and rows, top level and nested) and ``columns``.
tests/test_oracle_diff.py holds the same cases against Kafka's own classes.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

import generated
from codegen.runtime import DecodeError, InvalidLength, InvalidTaggedField
from codegen.runtime.backends import native_readers
from codegen.runtime.wire import MAX_ARRAY_LENGTH, MAX_TAGGED_FIELDS, uvarint

NAME = "ConsumerGroupRegularExpressionValue"  # v0: topics []string, version, timestamp; flexible
TAIL = bytes(16)  # version and timestamp


def with_topics(count: int) -> bytes:
    """The value with ``count`` empty topic names (one byte each) and no tagged fields."""
    return uvarint(count + 1) + b"\x01" * count + TAIL + b"\x00"


def with_tags(count: int) -> bytes:
    """The value with no topics and ``count`` unknown tagged fields (tags 0, 1, ..., no
    bytes each)."""
    return b"\x01" + TAIL + uvarint(count) + b"".join(uvarint(t) + b"\x00" for t in range(count))


@pytest.fixture(scope="module")
def engine(compiled_native: Callable[[str], ModuleType]) -> ModuleType:
    return compiled_native("_engine")


def outcome(read: Callable[[bytes], Any], data: bytes) -> tuple[Any, ...]:
    try:
        value = read(data)
    except DecodeError as exc:
        return ("error", type(exc), str(exc), exc.field, exc.offset)
    return ("ok", value)


def all_readers(engine: ModuleType, cls: Any, version: int) -> dict[str, Callable[[bytes], Any]]:
    objects, rows = native_readers(
        engine, cls._NATIVE_CLASSES, {version: cls._NATIVE_TABLES[version]}
    )
    return {
        "pure": lambda d: cls._decode_whole(cls._PURE_READERS, d, version),
        "pure rows": lambda d: cls._decode_whole(cls._PURE_ROW_READERS, d, version),
        "native": objects[version].decode,
        "native rows": rows[version].decode,
    }


def assert_refused_alike(
    engine: ModuleType, data: bytes, error: type, text: str, field: str
) -> None:
    cls = generated.MESSAGES[NAME]
    for name, read in all_readers(engine, cls, 0).items():
        got = outcome(read, data)
        assert got[:2] == ("error", error), (name, got[:3])
        assert got[2].endswith(text) and got[3] == field, (name, got)
        assert got[2].startswith(f"{NAME} v0, field {field}, byte {got[4]}: "), (name, got)


def test_an_array_at_the_limit_is_read_one_above_is_refused(engine: ModuleType) -> None:
    cls = generated.MESSAGES[NAME]
    at_limit = with_topics(MAX_ARRAY_LENGTH)
    for name, read in all_readers(engine, cls, 0).items():
        value = read(at_limit)
        topics = value.topics if not isinstance(value, tuple) else value[0]
        assert len(topics) == MAX_ARRAY_LENGTH and set(topics) == {""}, name
    assert_refused_alike(
        engine,
        with_topics(MAX_ARRAY_LENGTH + 1),
        InvalidLength,
        "array of 1000001 elements is above 1000000, the most Kafka reads",
        "topics",
    )
    # More elements than bytes left: that error first, as Kafka checks the bytes first.
    assert_refused_alike(
        engine,
        uvarint(2**31) + TAIL + b"\x00",
        InvalidLength,
        "array of 2147483647 elements cannot fit in the 17 bytes left",
        "topics",
    )


def test_a_tagged_section_at_the_limit_is_read_one_above_is_refused(engine: ModuleType) -> None:
    cls = generated.MESSAGES[NAME]
    at_limit = with_tags(MAX_TAGGED_FIELDS)
    for name, read in all_readers(engine, cls, 0).items():
        value = read(at_limit)
        tags = value.unknown_tags if not isinstance(value, tuple) else value[-1]
        assert len(tags) == MAX_TAGGED_FIELDS, name
    assert_refused_alike(
        engine,
        with_tags(MAX_TAGGED_FIELDS + 1),
        InvalidTaggedField,
        "10001 tagged fields are above 10000, the most Kafka reads",
        "<tagged fields>",
    )


def test_limits_in_nested_structs_name_the_path(engine: ModuleType) -> None:
    """An array and a tagged section inside an array of structs: the error names the
    element (``topics[0].partitions``), on both backends."""
    cls = generated.MESSAGES["ConsumerGroupCurrentMemberAssignmentValue"]
    version = cls.HIGHEST_VERSION
    readers = all_readers(engine, cls, version)
    member = cls.from_json(
        {
            "memberEpoch": 1,
            "previousMemberEpoch": 0,
            "state": 0,
            "assignedPartitions": [{"topicId": "AAAAAAAAAAAAAAAAAAAAAA", "partitions": [1]}],
            "partitionsPendingRevocation": [],
        },
        version,
    )
    wire = member.encode(version)
    # The one partition id (int32 1 behind the compact count 2) becomes 1,000,001 of them.
    one = b"\x02\x00\x00\x00\x01"
    assert wire.count(one) == 1
    start = wire.index(one)
    over = (
        wire[:start]
        + uvarint(MAX_ARRAY_LENGTH + 2)
        + bytes(4 * (MAX_ARRAY_LENGTH + 1))
        + wire[start + 5 :]
    )
    outcomes = {name: outcome(read, over) for name, read in readers.items()}
    assert len({o[1:] for o in outcomes.values()}) == 1, outcomes
    got = outcomes["pure"]
    assert got[1] is InvalidLength and got[3] == "assigned_partitions[0].partitions", got
    assert got[2].endswith("array of 1000001 elements is above 1000000, the most Kafka reads")


def test_the_columnar_decoder_refuses_the_same_rows(engine: ModuleType) -> None:
    np = pytest.importorskip("numpy")
    from codegen.columnar import decode as arrow

    cls = generated.MESSAGES[NAME]
    reader = native_readers(engine, cls._NATIVE_CLASSES, {0: cls._NATIVE_TABLES[0]})[0][0]
    kinds = tuple((c.attr, c.kind) for c in arrow._columns(NAME))
    rows = [
        with_topics(MAX_ARRAY_LENGTH),
        with_topics(MAX_ARRAY_LENGTH + 1),
        with_tags(MAX_TAGGED_FIELDS),
        with_tags(MAX_TAGGED_FIELDS + 1),
        with_topics(3),
    ]
    bounds = np.cumsum([0, *map(len, rows)])
    _, nulls, _, failed = engine.columns(
        (reader,),
        kinds,
        b"".join(rows),
        bounds[:-1].astype(np.int64),
        bounds[1:].astype(np.int64),
        np.zeros(len(rows), np.int32),
        False,
    )
    assert failed == [1, 3] and nulls == 2
