"""Smoke tests of the Kafka reference oracle (tests/oracle): the harness answers, and agrees
with hand-computed bytes."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from oracle import KAFKA_VERSION, KafkaOracle, OracleError, missing_reason

_MISSING = missing_reason()

pytestmark = [
    pytest.mark.oracle,
    pytest.mark.skipif(_MISSING is not None, reason=f"Kafka oracle: {_MISSING}"),
]

OFFSET_COMMIT_VALUE_JSON = {
    "offset": 100,
    "leaderEpoch": 10,
    "metadata": "m",
    "commitTimestamp": 1234,
}

# OffsetCommitValue v3 is not flexible: int64 offset, int32 leaderEpoch (v3+),
# int16-length string metadata, int64 commitTimestamp (expireTimestamp is v1 only).
OFFSET_COMMIT_VALUE_V3 = bytes.fromhex(
    "0000000000000064"  # offset 100
    "0000000a"  # leaderEpoch 10
    "0001"
    "6d"  # metadata "m"
    "00000000000004d2"  # commitTimestamp 1234
)

# OffsetCommitKey as the group coordinator writes it: int16 record type 1, then the key
# (non-flexible): group "g", topic "t", partition 7.
OFFSET_COMMIT_KEY_RECORD = bytes.fromhex("000100016700017400000007")


@pytest.fixture(scope="module")
def oracle() -> Iterator[KafkaOracle]:
    with KafkaOracle() as o:
        yield o


def test_reference_release(oracle: KafkaOracle) -> None:
    assert oracle.info()["kafkaVersion"] == KAFKA_VERSION


def test_classes(oracle: KafkaOracle) -> None:
    classes = oracle.classes()
    assert classes
    assert classes["OffsetCommitValue"] == (
        "org.apache.kafka.coordinator.group.generated.OffsetCommitValue"
    )
    assert classes["MetadataResponseData"] == "org.apache.kafka.common.message.MetadataResponseData"
    assert classes["TopicRecord"] == "org.apache.kafka.common.metadata.TopicRecord"
    sources = oracle.class_sources()
    assert sources[classes["TopicRecord"]]["jar"] == f"kafka-metadata-{KAFKA_VERSION}.jar"


def test_offset_commit_value_v3(oracle: KafkaOracle) -> None:
    data = oracle.encode("OffsetCommitValue", 3, OFFSET_COMMIT_VALUE_JSON)
    assert data == OFFSET_COMMIT_VALUE_V3
    assert oracle.decode("OffsetCommitValue", 3, data) == OFFSET_COMMIT_VALUE_JSON
    assert oracle.roundtrip("OffsetCommitValue", 3, data) == data
    # A fully qualified name works too.
    fq = "org.apache.kafka.coordinator.group.generated.OffsetCommitValue"
    assert oracle.encode(fq, 3, OFFSET_COMMIT_VALUE_JSON) == data


def test_errors_carry_kafka_text(oracle: KafkaOracle) -> None:
    with pytest.raises(OracleError, match="unable to locate field 'leaderEpoch'"):
        oracle.encode("OffsetCommitValue", 3, {"offset": 1, "metadata": "", "commitTimestamp": 1})
    with pytest.raises(OracleError, match=r"1 byte\(s\) left over"):
        oracle.decode("OffsetCommitValue", 3, OFFSET_COMMIT_VALUE_V3 + b"\x00")
    with pytest.raises(OracleError, match="no generated message class named 'NoSuchThing'"):
        oracle.decode("NoSuchThing", 0, b"")


def test_group_coordinator_serde(oracle: KafkaOracle) -> None:
    value = b"\x00\x03" + OFFSET_COMMIT_VALUE_V3
    record = oracle.coordinator("group", OFFSET_COMMIT_KEY_RECORD, value)
    assert record["serdeClass"] == "org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde"
    assert record["key"]["type"] == 1
    assert record["key"]["json"] == {"group": "g", "topic": "t", "partition": 7}
    assert record["value"] is not None
    assert record["value"]["version"] == 3
    assert record["value"]["json"] == OFFSET_COMMIT_VALUE_JSON

    tombstone = oracle.coordinator("group", OFFSET_COMMIT_KEY_RECORD, None)
    assert tombstone["value"] is None

    with pytest.raises(OracleError, match="UnknownRecordTypeException"):
        oracle.coordinator("group", b"\x7f\xff", None)


def test_metadata_record(oracle: KafkaOracle) -> None:
    body = oracle.encode("TopicRecord", 0, {"name": "foo", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ"})
    record = oracle.metadata(bytes([1, 2, 0]) + body)  # frame version 1, apiKey 2, version 0
    assert (record["frameVersion"], record["type"], record["version"]) == (1, "TOPIC_RECORD", 0)
    assert record["json"] == {"name": "foo", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ"}


def test_dump_log_does_not_exit_the_harness(oracle: KafkaOracle) -> None:
    result = oracle.dump_log_result(["--help"])
    assert "--offsets-decoder" in result["stdout"] + result["stderr"]
    # The harness is still there.
    assert oracle.decode("OffsetCommitValue", 3, OFFSET_COMMIT_VALUE_V3) == OFFSET_COMMIT_VALUE_JSON


def test_throughput(oracle: KafkaOracle) -> None:
    n = 20_000
    requests = []
    for i in range(n):
        obj = dict(OFFSET_COMMIT_VALUE_JSON, offset=i, metadata=f"m{i}")
        requests.append({"op": "encode", "class": "OffsetCommitValue", "version": 3, "json": obj})
    start = time.perf_counter()
    encoded = oracle.batch(requests)
    decoded = oracle.batch(
        {"op": "decode", "class": "OffsetCommitValue", "version": 3, "hex": r["hex"]}
        for r in encoded
    )
    elapsed = time.perf_counter() - start
    assert all(r["ok"] for r in encoded + decoded)
    assert [r["json"]["offset"] for r in decoded] == list(range(n))
    print(f"oracle throughput: {2 * n / elapsed:,.0f} cases/s ({2 * n} requests)")
