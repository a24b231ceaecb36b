"""``__remote_log_metadata``: the records of tiered storage's default metadata manager.

The broker's ``TopicBasedRemoteLogMetadataManager`` (KIP-405) writes each step of a remote
segment's life to this topic: the copy started (``RemoteLogSegmentMetadataRecord``, state
COPY_SEGMENT_STARTED), then ``RemoteLogSegmentMetadataUpdateRecord``s with the same segment id
(COPY_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED, DELETE_SEGMENT_FINISHED), and the deletion of a
whole partition's remote data (``RemotePartitionDeleteMetadataRecord``). The values are framed
like ``__cluster_metadata`` records and decoded by :class:`codegen.dumps.metadata.MetadataDecoder`
for this topic.

:func:`kafka_object_text` is the text of the object Kafka's ``RemoteLogMetadataSerde`` builds of
a record (what ``kafka-dump-log --remote-log-metadata-decoder`` prints), with the checks its
transforms make: a record they refuse raises :class:`RemoteLogMetadataError` with Kafka's message.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping
from typing import Any, Final

from codegen.runtime import KafkaMessage, KafkaStruct

__all__ = [
    "PARTITION_DELETE_STATES",
    "RECORD_NAMES",
    "SEGMENT_STATES",
    "RemoteLogMetadataError",
    "java_uuid",
    "kafka_object_text",
    "kafka_refuses_newer",
]

SEGMENT_STATES: Final[Mapping[int, str]] = {
    0: "COPY_SEGMENT_STARTED",
    1: "COPY_SEGMENT_FINISHED",
    2: "DELETE_SEGMENT_STARTED",
    3: "DELETE_SEGMENT_FINISHED",
}
"""``RemoteLogSegmentState`` by id."""
PARTITION_DELETE_STATES: Final[Mapping[int, str]] = {
    0: "DELETE_PARTITION_MARKED",
    1: "DELETE_PARTITION_STARTED",
    2: "DELETE_PARTITION_FINISHED",
}
"""``RemotePartitionDeleteState`` by id."""
RECORD_NAMES: Final[Mapping[int, str]] = {
    0: "RemoteLogSegmentMetadataRecord",
    1: "RemoteLogSegmentMetadataUpdateRecord",
    2: "RemotePartitionDeleteMetadataRecord",
    3: "RemoteLogSegmentMetadataSnapshotRecord",
}
"""The spec of each apiKey of the topic (Kafka's storage module)."""


class RemoteLogMetadataError(ValueError):
    """A record Kafka's serde refuses to turn into its object; the text is the exception's
    message (``"null"`` where Java's has none)."""


def java_uuid(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def _topic_id_partition(entry: Any) -> str:
    """``TopicIdPartition.toString``: ``<topic id>:<topic>-<partition>``."""
    return f"{java_uuid(entry.id)}:{entry.name}-{entry.partition}"


def _segment_id(entry: Any) -> str:
    return (
        f"RemoteLogSegmentId{{topicIdPartition={_topic_id_partition(entry.topic_id_partition)}, "
        f"id={java_uuid(entry.id)}}}"
    )


def _custom_metadata(value: bytes | None) -> str:
    return "Optional.empty" if value is None else f"Optional[CustomMetadata{{{len(value)} bytes}}]"


def _leader_epochs(entries: list[Any]) -> str:
    """The entries as the ``TreeMap`` Kafka builds of them (a repeated epoch keeps its last
    offset); an empty list is refused, as Kafka's constructors refuse it."""
    epochs = {e.leader_epoch: e.offset for e in entries}
    if not epochs:
        raise RemoteLogMetadataError("segmentLeaderEpochs can not be null or empty")
    return "{" + ", ".join(f"{k}={epochs[k]}" for k in sorted(epochs)) + "}"


def _state(states: Mapping[int, str], value: int, message: str) -> str:
    name = states.get(value)
    if name is None:  # forId gives null, which the constructor's requireNonNull refuses
        raise RemoteLogMetadataError(message)
    return name


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _segment_metadata(v: Any) -> str:
    if v.start_offset < 0:
        raise RemoteLogMetadataError(
            f"Unexpected start offset = {v.start_offset}. StartOffset for a remote segment "
            "cannot be negative"
        )
    if v.end_offset < v.start_offset:
        raise RemoteLogMetadataError(
            f"Unexpected end offset = {v.end_offset}. EndOffset for a remote segment cannot be "
            f"less than startOffset = {v.start_offset}"
        )
    epochs = _leader_epochs(v.segment_leader_epochs)
    state = _state(SEGMENT_STATES, v.remote_log_segment_state, "state can not be null")
    return (
        f"RemoteLogSegmentMetadata{{remoteLogSegmentId={_segment_id(v.remote_log_segment_id)}, "
        f"startOffset={v.start_offset}, endOffset={v.end_offset}, brokerId={v.broker_id}, "
        f"maxTimestampMs={v.max_timestamp_ms}, eventTimestampMs={v.event_timestamp_ms}, "
        f"segmentLeaderEpochs={epochs}, segmentSizeInBytes={v.segment_size_in_bytes}, "
        f"customMetadata={_custom_metadata(v.custom_metadata)}, state={state}, "
        f"txnIdxEmpty={_bool(v.txn_index_empty)}}}"
    )


def _segment_update(v: Any) -> str:
    state = _state(SEGMENT_STATES, v.remote_log_segment_state, "state can not be null")
    return (
        f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId="
        f"{_segment_id(v.remote_log_segment_id)}, "
        f"customMetadata={_custom_metadata(v.custom_metadata)}, state={state}, "
        f"eventTimestampMs={v.event_timestamp_ms}, brokerId={v.broker_id}}}"
    )


def _partition_delete(v: Any) -> str:
    state = _state(PARTITION_DELETE_STATES, v.remote_partition_delete_state, "null")
    return (
        f"RemotePartitionDeleteMetadata{{topicPartition="
        f"{_topic_id_partition(v.topic_id_partition)}, state={state}, "
        f"eventTimestampMs={v.event_timestamp_ms}, brokerId={v.broker_id}}}"
    )


def _segment_snapshot(v: Any) -> str:
    state = _state(SEGMENT_STATES, v.remote_log_segment_state, "state can not be null")
    epochs = _leader_epochs(v.segment_leader_epochs)
    return (
        f"RemoteLogSegmentMetadataSnapshot{{segmentId={java_uuid(v.segment_id)}, "
        f"startOffset={v.start_offset}, endOffset={v.end_offset}, "
        f"maxTimestampMs={v.max_timestamp_ms}, segmentLeaderEpochs={epochs}, "
        f"segmentSizeInBytes={v.segment_size_in_bytes}, "
        f"customMetadata={_custom_metadata(v.custom_metadata)}, state={state}, "
        f"txnIdxEmpty={_bool(v.txn_index_empty)}}}"
    )


_TEXTS: Final = {
    0: _segment_metadata,
    1: _segment_update,
    2: _partition_delete,
    3: _segment_snapshot,
}


def kafka_refuses_newer(value: KafkaMessage) -> bool:
    """Whether Kafka's generated reader refuses a record of a version past the newest it knows
    that holds ``value``: these specs' structs are all inline, and an inline struct's reader
    refuses any version past its own newest (``Can't read version V of TopicIdPartitionEntry``),
    so a record refuses as soon as it holds one (a snapshot record without leader epochs holds
    none)."""
    for name in type(value).ROW_FIELDS:
        field = getattr(value, name, None)
        if isinstance(field, KafkaStruct) or (
            isinstance(field, list) and any(isinstance(x, KafkaStruct) for x in field)
        ):
            return True
    return False


def kafka_object_text(api_key: int, value: KafkaMessage) -> str:
    """``toString()`` of the object ``RemoteLogMetadataSerde.deserialize`` returns for a decoded
    record of type ``api_key``; :class:`RemoteLogMetadataError` where its transform throws (a
    negative start offset, an end before the start, no leader epochs, an unknown state)."""
    text = _TEXTS.get(api_key)
    if text is None:
        raise RemoteLogMetadataError(
            f"RemoteLogMetadataTransform for apikey: {api_key} does not exist."
        )
    return text(value)
