"""Differential tests against Apache Kafka 4.4.0's own generated classes (tests/oracle).

The pinned 4.4.0 spec corpus (``.cache/kafka-4.4.0/specs/<artifact>``) is generated one
artifact at a time, and for every message Kafka generated a class for and every valid version,
hypothesis-drawn instances are compared with Kafka (all requests of one example in one batch):

- our bytes == Kafka's bytes, Kafka building the message from our ``to_json``;
- Kafka reads our bytes to our ``to_json``, and our decode of Kafka's bytes gives Kafka's JSON;
- Kafka decodes and rewrites our bytes unchanged (unknown tagged fields included);
- a message drawn at another version and written at this one fails in both or in neither
  (fields absent at the version, tagged fields at non-flexible versions, ignorable fields).

Coordinator framing (int16 type and version prefixes, tombstones, type 0 = LegacyOffsetCommit)
and the KRaft metadata frame are checked against Kafka's own serdes. The terminal summary ends
with one coverage line. Needs ``tests/oracle/fetch.sh``; skipped otherwise.
``SPECGEN_ORACLE_EXAMPLES`` sets the examples per (message, version) (default 5).
"""

from __future__ import annotations

import importlib
import json
import math
import re
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from corpus import corpus_settings, version_params
from hypothesis import given
from hypothesis import strategies as st
from oracle import FETCH_COMMAND, KafkaOracle, cache_dir, missing_reason
from strategies import InstanceBuilder, Options, comparable_json, json_view

from codegen.emit import load_messages
from codegen.ir import Message
from codegen.runtime import KafkaCodecError, UnknownTagError
from codegen.runtime.wire import uvarint

_MISSING = missing_reason()
pytestmark = [
    pytest.mark.oracle,
    pytest.mark.skipif(
        _MISSING is not None, reason=f"Kafka oracle unavailable ({_MISSING}); run {FETCH_COMMAND}"
    ),
]

SPECS = cache_dir() / "specs"
SETTINGS = corpus_settings("SPECGEN_ORACLE_EXAMPLES", 5)
# Kafka's JSON cannot be read back with non-finite doubles (its writer prints "Infinity" as a
# string, its reader wants a floating-point number; see test_float64_json_matches_kafka).
ORACLE_OPTIONS = Options(allow_infinity=False)
_REMOVED = re.compile(r'"validVersions"\s*:\s*"none"')
COORDINATOR_SERDES = {
    "kafka-group-coordinator": "group",
    "kafka-share-coordinator": "share",
    "kafka-transaction-coordinator": "transaction",
}


def _spec_files(artifact: Path) -> list[Path]:
    # Kafka generates no class for APIs removed in 4.0 ("validVersions": "none", no fields).
    return sorted(p for p in artifact.rglob("*.json") if not _REMOVED.search(p.read_text()))


def _artifacts() -> dict[str, list[Message]]:
    if _MISSING is not None or not SPECS.is_dir():
        return {}
    return {
        a.name: load_messages(_spec_files(a))
        for a in sorted(SPECS.iterdir())
        if a.is_dir() and a.name.startswith("kafka-")
    }


ARTIFACTS = _artifacts()
PAIRS = [p for a, messages in ARTIFACTS.items() for p in version_params(a, messages)]


@contextmanager
def recording(coverage: Any, label: str) -> Iterator[None]:
    """Count one case; remember ``label`` as a mismatch if the block fails."""
    coverage.cases += 1
    try:
        yield
    except AssertionError:
        coverage.mismatches.add(label)
        raise


def kafka_class_name(message: Message) -> str:
    """Kafka's generated class: requests, responses and headers get a ``Data`` suffix."""
    if message.spec_type in ("request", "response", "header"):
        return f"{message.name}Data"
    return message.name


@pytest.fixture(scope="session")
def oracle() -> Iterator[KafkaOracle]:
    with KafkaOracle() as o:
        yield o


@pytest.fixture(scope="session")
def kafka_classes(oracle: KafkaOracle) -> dict[str, str]:
    return oracle.classes()


def _module(codec_package: Any, artifact: str, message: Message) -> Any:
    name = "k44_" + artifact.removeprefix("kafka-").replace("-", "_")
    package = codec_package(name, _spec_files(SPECS / artifact))
    return importlib.import_module(f"{package.__name__}.{message.module}")


def _json_text(tree: Any) -> Any:
    """The JSON tree as it comes back from real JSON text (what Kafka is sent)."""
    return json.loads(json.dumps(tree, allow_nan=False))


def test_every_kafka_class_is_generated(kafka_classes: dict[str, str]) -> None:
    ours = {kafka_class_name(m) for messages in ARTIFACTS.values() for m in messages}
    assert sorted(set(kafka_classes) - ours) == []
    assert sorted(ours - set(kafka_classes)) == []


@pytest.mark.parametrize(("artifact", "message", "version"), PAIRS)
def test_against_kafka(
    artifact: str,
    message: Message,
    version: int,
    codec_package: Any,
    oracle: KafkaOracle,
    kafka_classes: dict[str, str],
    oracle_coverage: Any,
) -> None:
    module = _module(codec_package, artifact, message)
    cls = getattr(module, message.name)
    kafka_cls = kafka_classes[kafka_class_name(message)]
    builder = InstanceBuilder(message, module, ORACLE_OPTIONS)
    versions = list(message.valid_versions.versions())
    here = builder.struct(message.root, version)
    elsewhere = st.sampled_from(versions).flatmap(
        lambda w: st.tuples(st.just(w), builder.struct(message.root, w))
    )
    oracle_coverage.messages.add(f"{artifact}/{message.name}")
    oracle_coverage.pairs.add((f"{artifact}/{message.name}", version))

    @SETTINGS
    @given(here, elsewhere)
    def check(obj: Any, other: tuple[int, Any]) -> None:
        oracle_coverage.cases += 1
        problems = compare(message, cls, kafka_cls, version, obj, other, oracle)
        if problems:
            oracle_coverage.mismatches.add(f"{artifact}/{message.name} v{version}")
        assert not problems, "\n".join(problems)

    check()


def compare(
    message: Message,
    cls: Any,
    kafka_cls: str,
    version: int,
    obj: Any,
    other: tuple[int, Any],
    oracle: KafkaOracle,
) -> list[str]:
    """Every disagreement between our codec and Kafka's for one drawn instance."""
    where = f"{message.name} v{version}"
    ours = obj.encode(version)
    # What Kafka can build from our JSON: no unknown tags, and records fields empty, because
    # Kafka's JSON prints any records field as "" (records stay raw bytes in our objects).
    ours_plain = json_view(obj, message, version).encode(version)
    tree = _json_text(obj.to_json(version))
    other_version, other_obj = other
    other_tree = _json_text(other_obj.to_json(other_version))
    try:
        ours_other: bytes | str = cls.from_json(other_tree, version).encode(version)
    except KafkaCodecError as exc:
        ours_other = f"{type(exc).__name__}: {exc}"
    encode, decode, roundtrip, across = oracle.batch(
        [
            {"op": "encode", "class": kafka_cls, "version": version, "json": tree},
            {"op": "decode", "class": kafka_cls, "version": version, "hex": ours.hex()},
            {"op": "roundtrip", "class": kafka_cls, "version": version, "hex": ours.hex()},
            {"op": "encode", "class": kafka_cls, "version": version, "json": other_tree},
        ]
    )
    problems: list[str] = []
    if not encode["ok"]:
        problems.append(f"{where}: Kafka cannot build our JSON {tree}: {encode['error']}")
    else:
        kafka_bytes = bytes.fromhex(encode["hex"])
        if kafka_bytes != ours_plain:
            problems.append(
                f"{where}: bytes differ\n  ours  {ours_plain.hex()}\n  kafka {kafka_bytes.hex()}"
                f"\n  json  {tree}"
            )
            try:
                mine = cls.decode(kafka_bytes, version).to_json(version)
            except KafkaCodecError as exc:
                problems.append(f"{where}: we cannot decode Kafka's bytes: {exc}")
            else:
                if comparable_json(_json_text(mine)) != comparable_json(tree):
                    problems.append(f"{where}: our decode of Kafka's bytes gives {mine}")
    if not decode["ok"]:
        problems.append(f"{where}: Kafka cannot read our bytes {ours.hex()}: {decode['error']}")
    elif comparable_json(decode["json"]) != comparable_json(tree):
        problems.append(f"{where}: JSON differs\n  ours  {tree}\n  kafka {decode['json']}")
    if not roundtrip["ok"]:
        problems.append(f"{where}: Kafka cannot rewrite our bytes: {roundtrip['error']}")
    elif bytes.fromhex(roundtrip["hex"]) != ours:
        problems.append(
            f"{where}: Kafka rewrites our bytes differently (unknown tags?)\n"
            f"  ours  {ours.hex()}\n  kafka {roundtrip['hex']}"
        )
    if isinstance(ours_other, bytes) != bool(across["ok"]):
        problems.append(
            f"{where}: writing a v{other_version} message at v{version}: ours "
            f"{'succeeds' if isinstance(ours_other, bytes) else 'fails (' + ours_other + ')'}, "
            f"Kafka {'succeeds' if across['ok'] else 'fails (' + across['error'] + ')'}"
            f"\n  json {other_tree}"
        )
    elif isinstance(ours_other, bytes) and bytes.fromhex(across["hex"]) != ours_other:
        problems.append(
            f"{where}: writing a v{other_version} message at v{version}: bytes differ\n"
            f"  ours  {ours_other.hex()}\n  kafka {across['hex']}\n  json {other_tree}"
        )
    return problems


# --------------------------------------------------------------------------- float64 JSON


NON_FINITE = [math.inf, -math.inf, math.nan, -0.0, 5e-324, 1.7976931348623157e308]


@pytest.mark.skipif("kafka-metadata" not in ARTIFACTS, reason="no kafka-metadata specs")
@pytest.mark.parametrize("value", NON_FINITE, ids=repr)
def test_float64_json_matches_kafka(value: float, codec_package: Any, oracle: KafkaOracle) -> None:
    message = next(m for m in ARTIFACTS["kafka-metadata"] if m.name == "ClientQuotaRecord")
    cls = _module(codec_package, "kafka-metadata", message).ClientQuotaRecord
    obj = cls(key="k", value=value)
    kafka = oracle.decode("ClientQuotaRecord", 0, obj.encode(0))
    ours = _json_text(obj.to_json(0))
    assert comparable_json(ours) == comparable_json(kafka)
    # Kafka cannot read its own "NaN"/"Infinity" back; we can (a Kafka limitation not copied).
    back = cls.from_json(ours, 0)
    assert back.encode(0) == obj.encode(0)


# --------------------------------------------------------------------------- coordinator framing


def _coordinator_pairs() -> list[Any]:
    params = []
    for artifact, serde in COORDINATOR_SERDES.items():
        messages = ARTIFACTS.get(artifact, [])
        values = {m.api_key: m for m in messages if m.spec_type == "coordinator-value"}
        for key in messages:
            if key.spec_type != "coordinator-key":
                continue
            value = values[key.api_key]
            for v in value.valid_versions.versions():
                params.append(
                    pytest.param(artifact, serde, key, value, v, id=f"{key.name}/{value.name}/v{v}")
                )
    return params


@pytest.mark.parametrize(("artifact", "serde", "key", "value", "version"), _coordinator_pairs())
def test_coordinator_framing(
    artifact: str,
    serde: Any,
    key: Message,
    value: Message,
    version: int,
    codec_package: Any,
    oracle: KafkaOracle,
    oracle_coverage: Any,
) -> None:
    key_module = _module(codec_package, artifact, key)
    value_module = _module(codec_package, artifact, value)
    key_cls = getattr(key_module, key.name)
    value_cls = getattr(value_module, value.name)
    keys = InstanceBuilder(key, key_module, ORACLE_OPTIONS).struct(key.root, 0)
    values = InstanceBuilder(value, value_module, ORACLE_OPTIONS).struct(value.root, version)
    assert key.api_key is not None

    @SETTINGS
    @given(keys, values)
    def check(k: Any, v: Any) -> None:
        with recording(oracle_coverage, f"{serde} framing {key.name}/{value.name} v{version}"):
            check_record(k, v)

    def check_record(k: Any, v: Any) -> None:
        # The record type is the key's apiKey; the key body is written at version 0.
        key_bytes = struct.pack(">h", key.api_key) + k.encode(0)
        value_bytes = struct.pack(">h", version) + v.encode(version)
        record = oracle.coordinator(serde, key_bytes, value_bytes)
        tombstone = oracle.coordinator(serde, key_bytes, None)
        assert record["key"]["type"] == key.api_key
        assert record["key"]["class"].endswith("." + key.name)  # type: ignore[typeddict-item]
        assert comparable_json(record["key"]["json"]) == comparable_json(_json_text(k.to_json(0)))
        assert record["value"] is not None
        assert record["value"]["version"] == version
        # Unknown tags do not reach JSON, but a tagged struct holding only unknown tags is not
        # its default: written and printed, by us and by Kafka.
        expected = _json_text(v.to_json(version))
        assert comparable_json(record["value"]["json"]) == comparable_json(expected)
        assert tombstone["value"] is None
        assert comparable_json(tombstone["key"]["json"]) == comparable_json(
            _json_text(k.to_json(0))
        )
        # Our side of the frame: the prefixes pick the classes back.
        (type_id,) = struct.unpack_from(">h", key_bytes)
        assert key_cls.decode(key_bytes[2:], 0) == k
        (value_version,) = struct.unpack_from(">h", value_bytes)
        assert (type_id, value_version) == (key.api_key, version)
        assert value_cls.decode(value_bytes[2:], value_version) == v

    check()


@pytest.mark.skipif("kafka-group-coordinator" not in ARTIFACTS, reason="no group specs")
def test_offset_commit_type_alias(codec_package: Any, oracle: KafkaOracle) -> None:
    """Types 0 and 1 carry the same key layout; in 4.4.0 type 0 is LegacyOffsetCommitKey."""
    messages = {m.name: m for m in ARTIFACTS["kafka-group-coordinator"]}
    legacy = _module(
        codec_package, "kafka-group-coordinator", messages["LegacyOffsetCommitKey"]
    ).LegacyOffsetCommitKey
    current = _module(
        codec_package, "kafka-group-coordinator", messages["OffsetCommitKey"]
    ).OffsetCommitKey
    body = current(group="g\u00e9", topic="t", partition=7).encode(0)
    assert legacy.decode(body, 0).encode(0) == body
    for type_id, name in ((0, "LegacyOffsetCommitKey"), (1, "OffsetCommitKey")):
        record = oracle.coordinator("group", struct.pack(">h", type_id) + body, None)
        assert record["key"]["class"].endswith("." + name)  # type: ignore[typeddict-item]
        assert record["key"]["json"] == {"group": "g\u00e9", "topic": "t", "partition": 7}


# --------------------------------------------------------------------------- KRaft metadata frame


METADATA_PAIRS = [
    pytest.param(m, v, id=f"{m.name}/v{v}")
    for m in ARTIFACTS.get("kafka-metadata", [])
    if m.spec_type == "metadata"
    for v in m.valid_versions.versions()
]


@pytest.mark.parametrize(("message", "version"), METADATA_PAIRS)
def test_metadata_frame(
    message: Message,
    version: int,
    codec_package: Any,
    oracle: KafkaOracle,
    oracle_coverage: Any,
) -> None:
    module = _module(codec_package, "kafka-metadata", message)
    cls = getattr(module, message.name)
    api_key = message.api_key
    assert api_key is not None

    @SETTINGS
    @given(InstanceBuilder(message, module, ORACLE_OPTIONS).struct(message.root, version))
    def check(obj: Any) -> None:
        with recording(oracle_coverage, f"metadata frame {message.name} v{version}"):
            check_record(obj)

    def check_record(obj: Any) -> None:
        # uvarint frame version 1, uvarint apiKey, uvarint version, then the record.
        header = uvarint(1) + uvarint(api_key) + uvarint(version)
        frame = header + obj.encode(version)
        record = oracle.metadata(frame)
        assert (record["frameVersion"], record["apiKey"], record["version"]) == (
            1,
            api_key,
            version,
        )
        expected = _json_text(obj.to_json(version))  # as above: to_json drops unknown tags
        assert comparable_json(record["json"]) == comparable_json(expected)
        assert cls.decode(frame[len(header) :], version) == obj

    check()


# --------------------------------------------------------------------------- tagged nullable struct


@pytest.mark.skipif("kafka-group-coordinator" not in ARTIFACTS, reason="no group specs")
@pytest.mark.parametrize(
    "marker",
    ["01", "02", "8101", "00", "8000", "8080808008"],
    ids=["one", "two", "long-one", "null", "long-null", "negative-int32"],
)
def test_tagged_nullable_struct_marker(
    marker: str, codec_package: Any, oracle: KafkaOracle
) -> None:
    """Kafka reads the presence marker of a tagged nullable struct as an unsigned varint (as a
    Java int: not positive means null), not as one byte; non-canonical markers included."""
    messages = {m.name: m for m in ARTIFACTS["kafka-group-coordinator"]}
    module = _module(
        codec_package, "kafka-group-coordinator", messages["ConsumerGroupMemberMetadataValue"]
    )
    cls, member = module.ConsumerGroupMemberMetadataValue, module.ClassicMemberMetadata
    body = cls(classic_member_metadata=member()).encode(0)[:-1]  # all but the empty tag count
    struct_bytes = b"\x00\x00\x00\x05\x01\x00"  # sessionTimeoutMs 5, no protocols, no tags
    payload = bytes.fromhex(marker) + struct_bytes
    data = body + b"\x01\x00" + uvarint(len(payload)) + payload
    if marker in ("00", "8000", "8080808008"):
        data = body + b"\x01\x00" + uvarint(len(marker) // 2) + bytes.fromhex(marker)
    kafka = oracle.decode("ConsumerGroupMemberMetadataValue", 0, data)
    assert comparable_json(cls.decode(data, 0).to_json(0)) == comparable_json(kafka)


# --------------------------------------------------------------------------- unknown tagged fields


@pytest.mark.skipif("kafka-metadata" not in ARTIFACTS, reason="no kafka-metadata specs")
@pytest.mark.parametrize(
    ("wire", "kafka_writes"),
    [
        # Ascending unknown tags come back as they were.
        ("02e80701a1e90700", "02e80701a1e90700"),
        # An unknown tag before a known one (tag 0, reason "r"): Kafka writes the known tags
        # first, then the unknown ones.
        ("02e80702a1a200020272", "0200020272e80702a1a2"),
        # A repeated tag, or tags out of order: Kafka reads every pair but cannot write them
        # (RawTaggedFieldWriter: "Invalid raw tag field list").
        ("02e80702a1a2e80702b1b2", "tag 1000 comes after tag 1000, but is not higher than it"),
        ("02e9070101e8070102", "tag 1000 comes after tag 1001, but is not higher than it"),
    ],
    ids=["ascending", "unknown-before-known", "repeated", "descending"],
)
def test_unknown_tags_are_written_as_kafka_writes_them(
    wire: str, kafka_writes: str, codec_package: Any, oracle: KafkaOracle
) -> None:
    """How Kafka 4.4.0 orders and refuses unknown tags, established with its own classes:
    each case's bytes are read and written again by Kafka and by us (``kafka_writes`` is
    Kafka's bytes, or the text of Kafka's error)."""
    message = next(m for m in ARTIFACTS["kafka-metadata"] if m.name == "AbortTransactionRecord")
    cls = _module(codec_package, "kafka-metadata", message).AbortTransactionRecord
    data = bytes.fromhex(wire)
    [kafka] = oracle.batch(
        [{"op": "roundtrip", "class": "AbortTransactionRecord", "version": 0, "hex": wire}]
    )
    ours = cls.decode(data, 0)
    if not kafka["ok"]:
        assert f"Invalid raw tag field list: {kafka_writes}." in kafka["error"]
        with pytest.raises(UnknownTagError):
            ours.encode(0)
    else:
        assert kafka["ok"], kafka
        assert kafka["hex"] == kafka_writes
        assert ours.encode(0).hex() == kafka_writes


# --------------------------------------------------------------------------- read limits


def _limit_wire(kind: str, count: int) -> bytes:
    """ConsumerGroupRegularExpressionValue v0 (topics []string, version, timestamp; flexible)
    with ``count`` empty topic names, or ``count`` unknown tagged fields (tags 0, 1, ...)."""
    tail = bytes(16)
    if kind == "array":
        return uvarint(count + 1) + b"\x01" * count + tail + b"\x00"
    return b"\x01" + tail + uvarint(count) + b"".join(uvarint(t) + b"\x00" for t in range(count))


@pytest.mark.skipif("kafka-group-coordinator" not in ARTIFACTS, reason="no group specs")
@pytest.mark.parametrize(
    ("kind", "count", "kafka_error"),
    [
        ("array", 1_000_000, None),
        (
            "array",
            1_000_001,
            "Tried to read a collection of size 1000001, which exceeds the maximum allowed "
            "size of 1000000.",
        ),
        ("tags", 10_000, None),
        (
            "tags",
            10_001,
            "Tried to read 10001 tagged fields, which exceeds the maximum allowed count of 10000.",
        ),
    ],
    ids=["array-at-limit", "array-above", "tags-at-limit", "tags-above"],
)
def test_read_limits(
    kind: str, count: int, kafka_error: str | None, codec_package: Any, oracle: KafkaOracle
) -> None:
    """Kafka 4.4.0 reads an array of 1,000,000 elements and 10,000 tagged fields and refuses
    one more of either; we read and refuse the same (tests/test_read_limits.py: both
    backends and the columnar decoder)."""
    from codegen.runtime import InvalidLength, InvalidTaggedField

    name = "ConsumerGroupRegularExpressionValue"
    message = next(m for m in ARTIFACTS["kafka-group-coordinator"] if m.name == name)
    cls = getattr(_module(codec_package, "kafka-group-coordinator", message), name)
    data = _limit_wire(kind, count)
    [kafka] = oracle.batch([{"op": "decode", "class": name, "version": 0, "hex": data.hex()}])
    if kafka_error is None:
        assert kafka["ok"], kafka
        ours = cls.decode(data, 0)
        assert len(ours.topics if kind == "array" else ours.unknown_tags) == count
        if kind == "array":
            assert comparable_json(ours.to_json(0)) == comparable_json(kafka["json"])
    else:
        assert not kafka["ok"] and kafka_error in json.dumps(kafka), kafka
        error = InvalidLength if kind == "array" else InvalidTaggedField
        with pytest.raises(error, match="the most Kafka reads"):
            cls.decode(data, 0)
