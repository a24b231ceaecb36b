"""``__remote_log_metadata``: the storage module's records decoded from a real tiered broker's
files (``tests/data/tiered``), and the text ``kafka-dump-log --remote-log-metadata-decoder``
prints of each, against Kafka's own ``RemoteLogMetadataSerde`` (the oracle): the frame, the
generated record's JSON, and the text of the object its transforms build or the message of the
exception they throw, for records drawn around every check they make."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import KafkaOracle, OracleError, missing_reason

from codegen.dumps.decoded import RECORD, DecodedRecord
from codegen.dumps.dumplog_json import parse_record
from codegen.dumps.metadata import (
    CLUSTER_METADATA,
    REMOTE_LOG_METADATA,
    decode_metadata_records,
    metadata_decoder,
    metadata_types,
)
from codegen.dumps.remote_log_metadata import SEGMENT_STATES, java_uuid
from codegen.runtime.wire import uvarint
from generated import remote_log_segment_metadata_record as segment
from generated import remote_log_segment_metadata_snapshot_record as snapshot
from generated import remote_log_segment_metadata_update_record as update
from generated import remote_partition_delete_metadata_record as delete

ROOT = Path(__file__).resolve().parent
TIERED = ROOT / "data" / "tiered"
METADATA_FOLDERS = sorted((TIERED / "logs").glob("__remote_log_metadata-*"))


def _records() -> list[DecodedRecord]:
    return [
        r
        for folder in METADATA_FOLDERS
        for r in decode_metadata_records(folder, topic=REMOTE_LOG_METADATA)
    ]


def test_each_topic_has_its_own_record_types() -> None:
    remote = {k: c.SPEC_NAME for k, c in metadata_types(topic=REMOTE_LOG_METADATA).items()}
    assert remote == {
        0: "RemoteLogSegmentMetadataRecord",
        1: "RemoteLogSegmentMetadataUpdateRecord",
        2: "RemotePartitionDeleteMetadataRecord",
        3: "RemoteLogSegmentMetadataSnapshotRecord",
    }
    kraft = metadata_types(topic=CLUSTER_METADATA)
    assert kraft[0].SPEC_NAME == "RegisterBrokerRecord"
    assert not set(remote.values()) & {c.SPEC_NAME for c in kraft.values()}


def test_real_records_decode() -> None:
    """Every record of the real run decodes; each segment's first record is the copy's start,
    and every state the run went through is there (the killed upload's copy never finished)."""
    records = _records()
    assert records and all(r.kind == RECORD and not r.newer_than_spec for r in records)
    names = {r.name for r in records}
    assert names == {"RemoteLogSegmentMetadataRecord", "RemoteLogSegmentMetadataUpdateRecord"}
    states: dict[uuid.UUID, list[int]] = {}
    for r in records:
        segment_id = r.value.remote_log_segment_id.id
        states.setdefault(segment_id, []).append(r.value.remote_log_segment_state)
    assert all(s[0] == 0 for s in states.values())
    seen = {state for s in states.values() for state in s}
    assert seen == set(SEGMENT_STATES)
    assert [0] in states.values()  # an upload that never finished


def test_jsonl_is_the_metadata_form() -> None:
    """dump's jsonl: the framed records' form (type, version, data), as for KRaft records."""
    from codegen.dumps.record_json import record_to_json

    rec = _records()[0]
    line = record_to_json(rec, REMOTE_LOG_METADATA)
    assert line["value"]["type"] == "REMOTE_LOG_SEGMENT_METADATA_RECORD"
    assert line["value"]["version"] == 0
    data = line["value"]["data"]
    assert data["remoteLogSegmentId"]["id"] == java_uuid(rec.value.remote_log_segment_id.id)
    assert data["remoteLogSegmentState"] == 0
    assert line["frameVersion"] == 1 and "key" not in line


# ------------------------------------------------------------------------- against Kafka's serde

_MISSING = missing_reason()
oracle_only = pytest.mark.skipif(_MISSING is not None, reason=f"Kafka oracle: {_MISSING}")


@pytest.fixture(scope="module")
def oracle() -> Iterator[KafkaOracle]:
    with KafkaOracle() as o:
        yield o


def _payload(value: bytes | None, offset: int = 7) -> str:
    rec = metadata_decoder(topic=REMOTE_LOG_METADATA).decode(value, offset, 0, None)
    _, payload = parse_record(rec, REMOTE_LOG_METADATA)
    assert payload is not None
    return payload


def _kafka_payload(oracle: KafkaOracle, value: bytes, offset: int = 7) -> str:
    """What DumpLogSegments' parser prints: the object's text, or ``Error at offset O,
    skipping. <message>``."""
    try:
        answer = oracle.remote_log_metadata(value)
    except OracleError as exc:
        message = exc.error.split(": ", 1)[1] if ": " in exc.error else ""
        return f"Error at offset {offset}, skipping. {message}"
    if "text" in answer:
        return answer["text"]
    message = answer["textError"]  # Java's string of a null message is "null"
    return f"Error at offset {offset}, skipping. {'null' if message is None else message}"


def _frame(api_key: int, body: bytes, version: int = 0) -> bytes:
    return uvarint(1) + uvarint(api_key) + uvarint(version) + body


uuids = st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))
offsets = st.sampled_from([-5, -1, 0, 1, 7, 100, 2**40])
states = st.integers(-1, 5)
custom = st.none() | st.binary(max_size=4)
names = st.text("abc-._", min_size=1, max_size=5)
epochs_of = st.lists(st.tuples(st.integers(-2, 4), offsets), max_size=4)


def _topic_id_partition(module: Any, name: str, topic_id: uuid.UUID, partition: int) -> Any:
    return module.TopicIdPartitionEntry(name=name, id=topic_id, partition=partition)


@st.composite
def remote_records(draw: st.DrawFn) -> tuple[int, bytes]:
    """A record of each type around the transforms' checks, framed."""
    api_key = draw(st.integers(0, 3))
    tip = (draw(names), draw(uuids), draw(st.integers(0, 3)))
    segment_id, start, end = draw(uuids), draw(offsets), draw(offsets)
    state, meta, txn_empty = draw(states), draw(custom), draw(st.booleans())
    epochs = draw(epochs_of)
    numbers = {
        "broker_id": draw(st.integers(-1, 3)),
        "event_timestamp_ms": draw(st.integers(0, 2**41)),
    }
    body: Any
    if api_key == 0:
        body = segment.RemoteLogSegmentMetadataRecord(
            remote_log_segment_id=segment.RemoteLogSegmentIdEntry(
                topic_id_partition=_topic_id_partition(segment, *tip), id=segment_id
            ),
            start_offset=start,
            end_offset=end,
            max_timestamp_ms=draw(st.integers(-1, 2**41)),
            segment_leader_epochs=[
                segment.SegmentLeaderEpochEntry(leader_epoch=e, offset=o) for e, o in epochs
            ],
            segment_size_in_bytes=draw(st.integers(0, 2**20)),
            custom_metadata=meta,
            remote_log_segment_state=state,
            txn_index_empty=txn_empty,
            **numbers,
        )
    elif api_key == 1:
        body = update.RemoteLogSegmentMetadataUpdateRecord(
            remote_log_segment_id=update.RemoteLogSegmentIdEntry(
                topic_id_partition=_topic_id_partition(update, *tip), id=segment_id
            ),
            custom_metadata=meta,
            remote_log_segment_state=state,
            **numbers,
        )
    elif api_key == 2:
        body = delete.RemotePartitionDeleteMetadataRecord(
            topic_id_partition=_topic_id_partition(delete, *tip),
            remote_partition_delete_state=state,
            **numbers,
        )
    else:
        body = snapshot.RemoteLogSegmentMetadataSnapshotRecord(
            segment_id=segment_id,
            start_offset=start,
            end_offset=end,
            max_timestamp_ms=draw(st.integers(-1, 2**41)),
            segment_leader_epochs=[
                snapshot.SegmentLeaderEpochEntry(leader_epoch=e, offset=o) for e, o in epochs
            ],
            segment_size_in_bytes=draw(st.integers(0, 2**20)),
            custom_metadata=meta,
            remote_log_segment_state=state,
            txn_index_empty=txn_empty,
            **numbers,
        )
    return api_key, _frame(api_key, body.encode(0))


@oracle_only
@pytest.mark.oracle
@settings(max_examples=150, deadline=None)
@given(remote_records())
def test_object_text_is_kafkas(oracle: KafkaOracle, drawn: tuple[int, bytes]) -> None:
    api_key, value = drawn
    answer = oracle.remote_log_metadata(value)
    rec = metadata_decoder(topic=REMOTE_LOG_METADATA).decode(value, 7, 0, None)
    assert rec.kind == RECORD and rec.record_type == api_key
    assert rec.value.to_json(0) == answer["json"]
    assert (answer["type"], answer["version"]) == (rec.key.type_name, 0)  # type: ignore[union-attr]
    assert _payload(value) == _kafka_payload(oracle, value)


FRAMES = {
    "unknown type": _frame(9, b""),
    "frame version 0": b"\x00\x00\x00",
    "frame version 2": b"\x02\x00\x00",
    "cut short": _frame(1, b"\x00\x05ab"),
    "garbage after": _frame(
        2,
        delete.RemotePartitionDeleteMetadataRecord(
            topic_id_partition=_topic_id_partition(delete, "t", uuid.UUID(int=1), 0),
            remote_partition_delete_state=1,
        ).encode(0)
        + b"\x00\x01",
    ),
    "newer version": _frame(
        2,
        delete.RemotePartitionDeleteMetadataRecord(
            topic_id_partition=_topic_id_partition(delete, "t", uuid.UUID(int=1), 0),
            remote_partition_delete_state=2,
        ).encode(0),
        version=3,
    ),
    "newer snapshot record without structs": _frame(
        3,
        snapshot.RemoteLogSegmentMetadataSnapshotRecord(
            segment_id=uuid.UUID(int=3), start_offset=1, end_offset=4, remote_log_segment_state=1
        ).encode(0),
        version=1,
    ),
    "empty": b"",
}


@oracle_only
@pytest.mark.oracle
@pytest.mark.parametrize("value", FRAMES.values(), ids=FRAMES.keys())
def test_frame_errors_are_kafkas(oracle: KafkaOracle, value: bytes) -> None:
    assert _payload(value) == _kafka_payload(oracle, value)


@oracle_only
@pytest.mark.oracle
def test_real_records_print_as_kafka(oracle: KafkaOracle) -> None:
    for rec in _records():
        assert rec.value_bytes is not None
        assert _payload(rec.value_bytes, rec.offset) == _kafka_payload(
            oracle, rec.value_bytes, rec.offset
        )


def test_truth_of_the_run_is_committed() -> None:
    """The broker's own answers of the run the files come from (used by the report's tests)."""
    truth = json.loads((TIERED / "truth.json").read_text())
    assert set(truth["partitions"]) == {"local-only-0", "tiered-0", "tiered-1", "tiered-kept-0"}
