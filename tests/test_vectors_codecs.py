"""Byte vectors collected from other projects' test suites, decoded with our generated codecs.

Every vector of the categories below (``tests/data/vectors/vectors.jsonl``) is decoded at its
version (after stripping what its ``encoding`` says), its ``expect`` is checked key by key,
malformed vectors must raise a ``DecodeError``, and every decodable whole message must re-encode
to the same bytes. Requests/responses use codecs generated (once per session) from the
kafka-clients specs of the pinned Kafka 4.4.0 release, which has every version the vectors use;
those specs come from ``make setup`` (``tests/corpus.py``), so these vectors carry the ``oracle``
marker. Coordinator records and consumer-protocol payloads
use the shipped ``generated`` package (4.4.0: keys are version-0 ``coordinator-key`` specs chosen
by the int16 record type).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from corpus import kafka_specs
from vector_tools import (
    Frame,
    assert_matches,
    coordinator_types,
    import_package,
    load_vectors,
    lookup,
    read_record_type,
    unframe,
)

from codegen.dumps import RecordBatch, decode_entry
from codegen.runtime import KafkaMessage
from codegen.runtime.errors import (
    BufferUnderflow,
    DecodeError,
    InvalidLength,
    TrailingBytes,
    UnsupportedVersionError,
)

CATEGORIES = frozenset(
    {
        "protocol_request",
        "protocol_response",
        "consumer_protocol",
        "consumer_protocol_error",
        "consumer_offsets",
        "consumer_offsets_error",
        "consumer_offsets_unknown_version",
        "consumer_offsets_kip848",
        "transaction_state",
        "transaction_state_unknown_version",
    }
)
VECTORS = load_vectors(*CATEGORIES)
BY_ID = {v["id"]: v for v in VECTORS}

# Vectors whose `expect` describes another program's behaviour that our codecs cannot show.
# They are still decoded and re-encoded; the check below proves this list stays exact.
EXPECTED_UNSUPPORTED: dict[str, str] = {
    "burrow/offset-commit-value-v2-prefixed-burrow-rejects": (
        "expect is Burrow dropping the record (it has no v2 decoder); the notes say the record is "
        "valid, so we check the schema decode against `inferred` instead"
    ),
    "burrow/record-key-version-3-with-offset-key-body": (
        "expect is Burrow ignoring key type 3, which predates KIP-848; in 4.4.0 type 3 is "
        "ConsumerGroupMetadataKey, so we check the notes' reading (group 'testgroup', then 15 "
        "trailing bytes)"
    ),
    "sarama/consumer-protocol-subscription-v1-truncated-sarama-cluster": (
        "expect is sarama's lenient reader accepting a v1 subscription without ownedPartitions; "
        "Kafka's ConsumerProtocol rejects it (BufferUnderflow) and so do we"
    ),
}

# Decodable vectors that are not a whole canonical message, so re-encoding cannot give the input.
NOT_CANONICAL: dict[str, str] = {
    "burrow/offset-commit-value-v4-body-no-tagged-fields": "lacks the tagged-field byte 00",
    "burrow/offset-commit-value-v4-prefixed-no-tagged-fields": "lacks the tagged-field byte 00",
    "burrow/group-metadata-value-header-v0-partial": "header fields only (no members array)",
    "kafka-protocol-rs/fetch-response-v4-trailing-batch": "79 bytes after the response",
    "burrow/record-key-version-3-with-offset-key-body": "15 bytes after ConsumerGroupMetadataKey",
    "sarama/consumer-protocol-subscription-v1-truncated-sarama-cluster": (
        "v1 without its ownedPartitions array"
    ),
}

# Our bugs, run as xfail(strict=True) until the generator is fixed.
CODEC_BUGS: dict[str, str] = {}

# Burrow's `errorAt` names -> the field path our codecs report.
BURROW_FIELDS = {
    "group": "group",
    "topic": "topic",
    "partition": "partition",
    "offset": "offset",
    "leaderEpoch": "leader_epoch",
    "metadata": "metadata",
    "timestamp": "commit_timestamp",
    "protocol_type": "protocol_type",
    "generation": "generation",
    "protocol": "protocol",
    "leader": "leader",
    "member_id": "members[0].member_id",
    "client_id": "members[0].client_id",
    "client_host": "members[0].client_host",
    "rebalance_timeout": "members[0].rebalance_timeout",
    "session_timeout": "members[0].session_timeout",
    "subscription_bytes": "members[0].subscription",
    "assignment_bytes": "members[0].assignment",
    "assignment_topic_count": "assigned_partitions",
    "topic_name": "assigned_partitions[0].topic",
    "assignment_partition_count": "assigned_partitions[0].partitions",
    # Our readers check that a count's elements fit in the bytes left before reading any, so a
    # partition id cut short is reported at the array.
    "assignment_partition_id": "assigned_partitions[0].partitions",
}

# The key vector a value vector's `key.*` / `group(key)` expectations refer to.
PAIRED_KEYS = {
    "burrow/offset-commit-value-v0-prefixed": "burrow/offset-commit-key-v1-prefixed",
    # The notes give this key as the body of burrow/offset-commit-key-v0-body (no prefix).
    "burrow/offset-commit-value-v4-prefixed-no-tagged-fields": "burrow/offset-commit-key-v0-body",
    "burrow/group-metadata-value-v1-prefixed": "burrow/group-metadata-key-v2-prefixed",
}

# Unknown-version vectors: which 4.4.0 class the bytes reach and how decoding it fails.
# For keys the int16 prefix is a record type: types 5 and 10 of __consumer_offsets exist in
# 4.4.0 (ConsumerGroupMemberMetadataKey, ShareGroupMemberMetadataKey) but these bodies do not
# fit them; __transaction_state has no types 1 and 10.
UNKNOWN_OUTCOMES: dict[str, tuple[str | None, type[Exception] | None, str]] = {
    "apache-kafka/offset-commit-key-v5-unknown": (
        "ConsumerGroupMemberMetadataKey",
        TrailingBytes,
        "",
    ),
    "apache-kafka/offset-commit-key-v10-unknown": (
        "ShareGroupMemberMetadataKey",
        TrailingBytes,
        "",
    ),
    "apache-kafka/group-metadata-key-v10-unknown": (
        "ShareGroupMemberMetadataKey",
        BufferUnderflow,
        "member_id",
    ),
    "apache-kafka/offset-commit-value-v5-unknown": (
        "OffsetCommitValue",
        UnsupportedVersionError,
        "",
    ),
    "apache-kafka/offset-commit-value-v10-unknown": (
        "OffsetCommitValue",
        UnsupportedVersionError,
        "",
    ),
    "apache-kafka/group-metadata-value-v10-unknown": (
        "GroupMetadataValue",
        UnsupportedVersionError,
        "",
    ),
    "apache-kafka/transaction-log-key-v1-unknown": (None, None, ""),
    "apache-kafka/transaction-log-key-v10-unknown": (None, None, ""),
    "apache-kafka/transaction-log-value-v5-unknown": (
        "TransactionLogValue",
        UnsupportedVersionError,
        "",
    ),
    "apache-kafka/transaction-log-value-v10-unknown": (
        "TransactionLogValue",
        UnsupportedVersionError,
        "",
    ),
}


# ----------------------------------------------------------------------------- codecs


def _release_codecs(specs: Path, scratch: Path, package: str) -> Mapping[str, type[KafkaMessage]]:
    """Codecs for a release's kafka-clients specs."""
    from codegen.emit import write_package

    # 4.4.0 still ships removed requests as field-less stubs; only real specs go in.
    real = scratch / f"{package}_specs"
    real.mkdir(exist_ok=True)
    for path in specs.rglob("*.json"):
        if '"fields"' in path.read_text(encoding="utf-8"):
            shutil.copyfile(path, real / path.name)
    out = scratch / package
    write_package([real], out)
    return import_package(out)


@dataclass
class Codecs:
    shipped: Mapping[str, type[KafkaMessage]]
    scratch: Path
    offsets: dict[tuple[str, int], type[KafkaMessage]]
    transactions: dict[tuple[str, int], type[KafkaMessage]]
    _k440: Mapping[str, type[KafkaMessage]] | None = None

    def k440(self) -> Mapping[str, type[KafkaMessage]]:
        """Codecs for the 4.4.0 kafka-clients specs, generated on first use."""
        if self._k440 is None:
            specs = kafka_specs("kafka-clients")
            self._k440 = _release_codecs(specs, self.scratch, "vector_k440_codecs")
        return self._k440

    def protocol(self, name: str, version: int) -> type[KafkaMessage]:
        """The 4.4.0 request/response class of ``name``, which must have ``version``."""
        cls = self.k440().get(name)
        assert cls is not None and version in cls.VALID_VERSIONS, f"4.4.0 has no {name} v{version}"
        return cls

    def topic(self, category: str) -> dict[tuple[str, int], type[KafkaMessage]]:
        return self.transactions if category.startswith("transaction_state") else self.offsets


@pytest.fixture(scope="session")
def codecs(tmp_path_factory: pytest.TempPathFactory) -> Codecs:
    import generated

    shipped = generated.MESSAGES
    return Codecs(
        shipped=shipped,
        scratch=tmp_path_factory.mktemp("vector_codecs"),
        offsets=coordinator_types(shipped, "consumer_offsets"),
        transactions=coordinator_types(shipped, "transaction_state"),
    )


# ----------------------------------------------------------------------------- resolution


@dataclass
class Target:
    """The class and version a vector decodes with, and its bytes after framing."""

    cls: type[KafkaMessage]
    version: int
    frame: Frame
    record_type: int | None = None
    member_wrapper: bytes = b""  # GroupMetadataValue bytes in front of a lone member


def data_of(vector: Mapping[str, Any]) -> bytes:
    return bytes.fromhex(vector["hex"])


def resolve(vector: Mapping[str, Any], codecs: Codecs) -> Target:
    """Pick our class and version for a vector with a named message."""
    name: str = vector["message"]
    version: int = vector["version"]
    category: str = vector["category"]
    data = data_of(vector)
    if category.startswith("protocol_"):
        cls = codecs.protocol(name, version)
        headers = codecs.k440()
        return Target(cls, version, unframe(data, vector["encoding"], cls, version, headers))
    frame = unframe(data, vector["encoding"], None, None, {})
    if frame.prefix_version is not None:
        assert frame.prefix_version == version, "int16 prefix disagrees with the vector's version"
    if category.startswith("consumer_protocol"):
        return Target(codecs.shipped[name], version, frame)
    if name.endswith("Key"):
        # 4.4.0: the int16 in front of a key is the record type; every key spec is version 0.
        cls = codecs.topic(category)[("coordinator-key", version)]
        return Target(cls, 0, frame, record_type=version)
    if name == "GroupMetadataValue.MemberMetadata":
        # A lone member: wrap it in a GroupMetadataValue of the same version whose members array
        # holds just it, so the public decode() reads it (errors then name members[0].<field>).
        cls = codecs.shipped["GroupMetadataValue"]
        group_cls: Any = cls  # fields are per class; the index types them as KafkaMessage
        empty = group_cls(protocol_type="", generation=0, protocol=None, leader=None, members=[])
        head = empty.encode(version)
        assert head.endswith(b"\x00\x00\x00\x00"), "expected a non-flexible members count"
        head = head[:-4] + b"\x00\x00\x00\x01"
        return Target(cls, version, Frame(body=head + frame.body), member_wrapper=head)
    return Target(codecs.shipped[name], version, frame)


# ----------------------------------------------------------------------------- expectations


def assigned_map(assignment: Any) -> dict[str, list[int]]:
    """ConsumerProtocolAssignment.assignedPartitions in the topic -> partitions map shape
    Burrow, sarama and kafka-ui use."""
    return {tp.topic: list(tp.partitions) for tp in assignment.assigned_partitions}


def nested_assignment(codecs: Codecs, data: bytes) -> Any:
    """Decode embedded assignment bytes (int16 version + body) with our codec."""
    version, body = read_record_type(data)
    return codecs.shipped["ConsumerProtocolAssignment"].decode(body, version)


@dataclass
class Check:
    vector: Mapping[str, Any]
    codecs: Codecs
    target: Target
    obj: Any
    unchecked: list[str] = field(default_factory=list)

    @property
    def vid(self) -> str:
        return str(self.vector["id"])


def check_kafka_python(check: Check, expected: dict[str, Any]) -> None:
    """kafka-python's decoded objects: ``_type``/``_version``, snake_case keys, tuples in
    schema order."""
    assert expected["_version"] == check.target.version
    expected = dict(expected)
    if check.target.cls.SPEC_NAME == "MetadataResponse" and "authorized_operations" in expected:
        # kafka-python/test_api_versions_2-5-response and -2-6-response: kafka-python names
        # ClusterAuthorizedOperations `authorized_operations` and shows Kafka's "not requested"
        # value -2147483648 as None.
        value = expected.pop("authorized_operations")
        actual = check.obj.cluster_authorized_operations
        assert actual == (-(2**31) if value is None else value)
    assert_matches(check.obj, expected, check.target.version)


def check_formatter(check: Check, expected: dict[str, Any]) -> None:
    """Kafka's formatter prints {"version": prefix, "data": JsonConverter form}."""
    target = check.target
    prefix = target.record_type if target.record_type is not None else target.version
    assert expected["version"] == prefix
    assert check.obj.to_json(target.version) == expected["data"]


def check_expectations(check: Check) -> None:
    expect = check.vector["expect"]
    if expect is None:
        inferred = check.vector.get("inferred")
        if inferred is not None:  # nothing asserted by the source; the collector's reading
            check_plain(check, inferred)
        return
    special = SPECIAL.get(check.vid)
    if special is not None:
        special(check, dict(expect))
        return
    check_plain(check, dict(expect))


def check_plain(check: Check, expect: dict[str, Any]) -> None:
    obj = check.obj
    target = check.target
    for key, value in expect.items():
        if key == "formatter_json":
            check_formatter(check, value)
        elif key == "decoded(kafka-python object, asserted ==)":
            check_kafka_python(check, value)
        elif key == "client_id":
            assert target.frame.header is not None
            assert target.frame.header.client_id == value
        elif key == "correlation_id":
            assert target.frame.header is not None
            assert target.frame.header.correlation_id == value
        elif key == "version":
            assert value == (target.frame.prefix_version or target.version)
        elif key == "decodes_without_error":
            assert value is True
        elif key == "assignedPartitions":
            assert assigned_map(obj) == value
        elif key == "source_expr":
            continue  # kafka-python's constructor call for the decoded object checked above
        elif key == "burrow_behaviour":
            check.unchecked.append(f"{key}: {value}")
        else:
            assert_matches(lookup(obj, key), value, target.version, f"$.{key}")


def paired_key(check: Check) -> Any:
    key_vector = BY_ID[PAIRED_KEYS[check.vid]]
    data = data_of(key_vector)
    if key_vector["encoding"].startswith("int16"):
        _, data = read_record_type(data)
    return check.codecs.offsets[("coordinator-key", 1 if "offset" in check.vid else 2)].decode(
        data, 0
    )


def special_key_fields(check: Check, expect: dict[str, Any]) -> None:
    """burrow/offset-commit-value-*-prefixed: `key.*` are fields of the paired key vector."""
    key = paired_key(check)
    for name in [k for k in expect if k.startswith("key.")]:
        assert_matches(lookup(key, name[4:]), expect.pop(name), 0, f"$.{name}")
    check_plain(check, expect)


def special_burrow_group_v1(check: Check, expect: dict[str, Any]) -> None:
    """burrow/group-metadata-value-v1-prefixed: `group(key)` is the paired key's group and
    `assignment` is members[0]'s embedded assignment in the topic -> partitions shape."""
    assert paired_key(check).group == expect.pop("group(key)")
    member = check.obj.members[0]
    assert assigned_map(nested_assignment(check.codecs, member.assignment)) == expect.pop(
        "assignment"
    )
    check_plain(check, expect)


def special_burrow_member_v3(check: Check, expect: dict[str, Any]) -> None:
    """burrow/group-metadata-member-v3-body: Burrow shows a null groupInstanceId as ''."""
    member = check.obj.members[0]
    assert expect.pop("groupInstanceId(burrow renders null as '')") == ""
    assert member.group_instance_id is None
    assert assigned_map(nested_assignment(check.codecs, member.assignment)) == expect.pop(
        "assignment"
    )
    assert_matches(member, expect, check.target.version)


def special_member(check: Check, expect: dict[str, Any]) -> None:
    """Lone-member vectors: the fields are members[0]'s."""
    assert_matches(check.obj.members[0], expect, check.target.version)


def special_request_header(check: Check, expect: dict[str, Any]) -> None:
    """kafka-python/api-versions-request-v3-golden: the header uses kafka-python's names."""
    header = check.target.frame.header
    assert header is not None
    h = expect.pop("header")
    assert header.request_api_key == h["api_key"]
    assert header.request_api_version == h["api_version"]
    assert header.correlation_id == h["correlation_id"]
    assert header.client_id == h["client_id"]
    assert header.unknown_tags == h["tags"]
    check_plain(check, expect)


def special_supported_features(check: Check, expect: dict[str, Any]) -> None:
    """kafka-python/api-versions-response-v4-supported-features: counts and names."""
    assert expect["version"] == check.target.version
    features = check.obj.supported_features
    assert len(features) == expect["supported_features.count"]
    assert [f.name for f in features] == expect["supported_feature_names"]


def fetch_batches(records: bytes) -> list[RecordBatch]:
    """Split a FetchResponse records field into log entries and decode each with codegen.dumps."""
    out = []
    pos = 0
    while pos < len(records):
        size = int.from_bytes(records[pos + 8 : pos + 12], "big")
        entry = decode_entry(records[pos : pos + 12 + size])
        assert isinstance(entry, RecordBatch), entry
        out.append(entry)
        pos += 12 + size
    return out


def special_fetch_first(check: Check, expect: dict[str, Any]) -> None:
    """kafka-protocol-rs/fetch-response-v4-first-record: counts, then the record's key/value."""
    responses = check.obj.responses
    assert len(responses) == expect["responses"]
    assert responses[0].topic == expect["topic"]
    partitions = responses[0].partitions
    assert len(partitions) == expect["partitions"]
    p = partitions[0]
    assert p.partition_index == expect["partition_index"]
    assert p.error_code == expect["error_code"]
    assert len(p.aborted_transactions or []) == expect["aborted_transactions"]
    (batch,) = fetch_batches(p.records)
    (record,) = batch.records
    assert record.key == expect["records"]["key"].encode()
    assert record.value == expect["records"]["value"].encode()


def special_fetch_trailing(check: Check, expect: dict[str, Any]) -> None:
    """kafka-protocol-rs/fetch-response-v4-trailing-batch: one batch inside `records`."""
    p = check.obj.responses[0].partitions[0]
    batches = fetch_batches(p.records)
    assert len(batches) == expect["decode_all_batches"]
    assert batches[0].codec.name.lower() == expect["compression"].lower()
    assert batches[0].magic == expect["version"]
    assert len(batches[0].records) == expect["records"]


def special_v2_rejected_by_burrow(check: Check, expect: dict[str, Any]) -> None:
    """The notes: a schema-correct decoder yields `inferred`."""
    check_plain(check, expect)
    check_plain(check, dict(check.vector["inferred"]))


def special_kip848_key(check: Check, expect: dict[str, Any]) -> None:
    """apache-kafka/consumer-group-metadata-key-v3-foo: the prefix is the record type."""
    assert check.target.record_type == expect.pop("recordType(key version)")
    assert check.target.record_type == check.target.cls.API_KEY
    check_plain(check, expect)


def special_offsets_formatter_skip(check: Check, expect: dict[str, Any]) -> None:
    """apache-kafka/group-metadata-key-v2-offsets-formatter: the offsets formatter prints
    nothing for it because type 2 is a group metadata key, not an offset commit."""
    assert expect["formatter_output"] == ""
    assert check.target.cls.SPEC_NAME == "GroupMetadataKey"
    assert "OffsetCommit" not in check.target.cls.SPEC_NAME


SPECIAL: dict[str, Callable[[Check, dict[str, Any]], None]] = {
    "burrow/offset-commit-value-v0-prefixed": special_key_fields,
    "burrow/offset-commit-value-v4-prefixed-no-tagged-fields": special_key_fields,
    "burrow/group-metadata-value-v1-prefixed": special_burrow_group_v1,
    "burrow/group-metadata-member-v1-body": special_member,
    "burrow/group-metadata-member-v3-body": special_burrow_member_v3,
    "kafka-python/api-versions-request-v3-golden": special_request_header,
    "kafka-python/api-versions-response-v4-supported-features": special_supported_features,
    "kafka-protocol-rs/fetch-response-v4-first-record": special_fetch_first,
    "kafka-protocol-rs/fetch-response-v4-trailing-batch": special_fetch_trailing,
    "burrow/offset-commit-value-v2-prefixed-burrow-rejects": special_v2_rejected_by_burrow,
    "apache-kafka/consumer-group-metadata-key-v3-foo": special_kip848_key,
    "apache-kafka/group-metadata-key-v2-offsets-formatter": special_offsets_formatter_skip,
}


# ----------------------------------------------------------------------------- decoding


def repaired(vector: Mapping[str, Any], target: Target) -> bytes:
    """Bytes for a vector that is a known fragment or quirk, after asserting the raw bytes fail
    the way the notes say; returns the body to decode instead."""
    vid = vector["id"]
    body = target.frame.body
    if vid.startswith("burrow/offset-commit-value-v4-") and vid.endswith("no-tagged-fields"):
        # The notes: Burrow's v4 fixture lacks the final tagged-field count.
        with pytest.raises(BufferUnderflow):
            target.cls.decode(body, target.version)
        return body + b"\x00"
    if vid == "burrow/group-metadata-value-header-v0-partial":
        # The notes: header fields only; a full decoder stops at `members`.
        with pytest.raises(BufferUnderflow) as info:
            target.cls.decode(body, target.version)
        assert info.value.field == "members"
        return body + b"\x00\x00\x00\x00"
    if vid == "kafka-protocol-rs/fetch-response-v4-trailing-batch":
        # The notes: a second batch follows the response; read() stops before it.
        with pytest.raises(TrailingBytes):
            target.cls.decode(body, target.version)
        _, end = target.cls.read(body, 0, target.version)
        assert len(body) - end == 79
        return body[:end]
    if vid == "sarama/consumer-protocol-subscription-v1-truncated-sarama-cluster":
        # Kafka's reader (and ours) reject v1 without ownedPartitions; the v0 layout reads it.
        with pytest.raises(BufferUnderflow) as info:
            target.cls.decode(body, target.version)
        assert info.value.field == "owned_partitions"
        return body
    return body


def check_malformed(vector: Mapping[str, Any], codecs: Codecs) -> None:
    """Malformed inputs must raise a DecodeError, at the field the source names when it does."""
    vid = vector["id"]
    expect = vector["expect"]
    data = data_of(vector)
    if vector["message"] in ("(record key)", "(coordinator record key)"):
        topic = codecs.topic(vector["category"])
        if vid == "burrow/record-key-version-3-with-offset-key-body":
            return  # decodes (with trailing bytes): see check_vector
        if len(data) < 2:
            with pytest.raises(BufferUnderflow):
                read_record_type(data)
            return
        record_type, body = read_record_type(data)
        cls = topic.get(("coordinator-key", record_type))
        if "unknownType" in expect:
            assert record_type == expect["unknownType"]
            assert cls is None, f"record type {record_type} is {cls}"
            return
        assert cls is not None
        with pytest.raises(DecodeError):
            cls.decode(body, 0)
        return
    if vid in (
        "burrow/group-metadata-member-v1-truncated-7",
        "burrow/group-metadata-member-v1-truncated-8",
    ):
        # The member itself is whole (assignment is opaque bytes); Burrow fails inside the
        # embedded ConsumerProtocolAssignment, so that is where ours must fail too.
        target = resolve(vector, codecs)
        decoded: Any = target.cls.decode(target.frame.body, target.version)
        member = decoded.members[0]
        version, body = read_record_type(member.assignment)
        cls = codecs.shipped["ConsumerProtocolAssignment"]
        if expect["burrow_errorAt"] == "consumer_protocol_version":
            assert version == -1
            with pytest.raises(UnsupportedVersionError):
                cls.decode(body, version)
        else:
            with pytest.raises((BufferUnderflow, InvalidLength)) as info:
                cls.decode(body, version)
            assert info.value.field.startswith("assigned_partitions[0]")
        return
    target = resolve(vector, codecs)
    with pytest.raises(DecodeError) as info:
        target.cls.decode(target.frame.body, target.version)
    where = expect.get("burrow_errorAt")
    if where is not None:
        assert isinstance(info.value, BufferUnderflow | InvalidLength), info.value
        assert info.value.field == BURROW_FIELDS[where], str(info.value)


def check_unknown_version(vector: Mapping[str, Any], codecs: Codecs) -> None:
    expect = vector["expect"]["formatter_json"]
    assert expect == {"version": vector["version"], "data": "unknown"}
    name, error, where = UNKNOWN_OUTCOMES[vector["id"]]
    _, body = read_record_type(data_of(vector))
    if vector["message"].endswith("Key"):
        cls = codecs.topic(vector["category"]).get(("coordinator-key", vector["version"]))
        version = 0
    else:
        cls = codecs.shipped[vector["message"]]
        version = vector["version"]
    if name is None:
        assert cls is None
        return
    assert cls is not None
    assert name == cls.SPEC_NAME
    assert error is not None
    with pytest.raises(error) as info:
        cls.decode(body, version)
    if where:
        assert isinstance(info.value, DecodeError) and info.value.field == where


def check_roundtrip(vector: Mapping[str, Any], target: Target, obj: KafkaMessage) -> None:
    """Re-encode and rebuild the framing; the bytes must be the input's."""
    body = obj.encode(target.version)
    frame = target.frame
    if target.member_wrapper:
        assert body.startswith(target.member_wrapper)
    rebuilt = frame.header_bytes + body
    if frame.size is not None:
        rebuilt = len(rebuilt).to_bytes(4, "big") + rebuilt
    if frame.prefix_version is not None:
        rebuilt = frame.prefix_version.to_bytes(2, "big", signed=True) + rebuilt
    if target.member_wrapper:
        assert body == target.frame.body
        return
    assert rebuilt.hex() == vector["hex"]


def check_vector(vector: Mapping[str, Any], codecs: Codecs) -> list[str]:
    """Run every check for one vector; return the expectations our codecs cannot speak to."""
    category = vector["category"]
    vid = vector["id"]
    if category.endswith("_unknown_version"):
        check_unknown_version(vector, codecs)
        return []
    if category.endswith("_error") and vid != "burrow/record-key-version-3-with-offset-key-body":
        check_malformed(vector, codecs)
        return []
    if vid == "burrow/record-key-version-3-with-offset-key-body":
        record_type, body = read_record_type(data_of(vector))
        cls = codecs.offsets[("coordinator-key", record_type)]
        assert cls.SPEC_NAME == "ConsumerGroupMetadataKey"
        with pytest.raises(TrailingBytes):
            cls.decode(body, 0)
        key: Any
        key, end = cls.read(body, 0, 0)
        assert key.group_id == "testgroup"
        assert len(body) - end == 15
        return [f"burrow_behaviour: {vector['expect']['burrow_behaviour']}"]
    target = resolve(vector, codecs)
    body = repaired(vector, target)
    if vid == "sarama/consumer-protocol-subscription-v1-truncated-sarama-cluster":
        obj = target.cls.decode(body, 0)
        assert_matches(obj, vector["inferred"], 0)
        return ["decodes_without_error: sarama's lenient reader"]
    obj = target.cls.decode(body, target.version)
    check = Check(vector, codecs, target, obj)
    check_expectations(check)
    if vid in NOT_CANONICAL:
        assert obj.encode(target.version) == body
    else:
        check_roundtrip(vector, target, obj)
    return check.unchecked


def _param(vector: Mapping[str, Any]) -> Any:
    marks = []
    if vector["category"].startswith("protocol_"):
        marks.append(pytest.mark.oracle)  # needs the release specs `make setup` fetches
    if vector["id"] in CODEC_BUGS:
        marks.append(pytest.mark.xfail(strict=True, reason=CODEC_BUGS[vector["id"]]))
    return pytest.param(vector, id=vector["id"], marks=marks)


@pytest.mark.parametrize("vector", [_param(v) for v in VECTORS])
def test_vector(vector: Mapping[str, Any], codecs: Codecs) -> None:
    unchecked = check_vector(vector, codecs)
    if vector["id"] in EXPECTED_UNSUPPORTED:
        assert unchecked, "every expectation is now checked: drop it from EXPECTED_UNSUPPORTED"
    else:
        assert not unchecked, f"expectations not checked: {unchecked}"


def test_lists_name_real_vectors() -> None:
    """EXPECTED_UNSUPPORTED and the other per-vector tables name vectors that exist here."""
    ids = set(BY_ID)
    for table in (EXPECTED_UNSUPPORTED, NOT_CANONICAL, CODEC_BUGS, SPECIAL, UNKNOWN_OUTCOMES):
        assert set(table) <= ids, set(table) - ids
    unknown = {v["id"] for v in VECTORS if v["category"].endswith("_unknown_version")}
    assert set(UNKNOWN_OUTCOMES) == unknown
    assert len(VECTORS) == 153
