"""The tables of the tiered-storage view (:mod:`codegen.dumps.views.tiered`): the facts it reads
(:data:`FACT_SCHEMA`), each section it gives (:data:`SECTIONS`, per topic :data:`TOPIC_SCHEMA`),
the remote log metadata's state names, and the segment statuses that count as unfinished or
hanging."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import pyarrow as pa

__all__ = [
    "EPOCH_SCHEMA",
    "EVENT_SCHEMA",
    "FACT_SCHEMA",
    "HANGING",
    "LEADER_EPOCHS",
    "PARTITION_DELETE_STATES",
    "PARTITION_KEYS",
    "PARTITION_SCHEMA",
    "SECTIONS",
    "SEGMENT_SCHEMA",
    "SEGMENT_STATES",
    "TOPIC_SCHEMA",
    "UNFINISHED",
    "TieredSections",
]

SEGMENT_STATES: Final = (
    "COPY_SEGMENT_STARTED",
    "COPY_SEGMENT_FINISHED",
    "DELETE_SEGMENT_STARTED",
    "DELETE_SEGMENT_FINISHED",
)
PARTITION_DELETE_STATES: Final = (
    "DELETE_PARTITION_MARKED",
    "DELETE_PARTITION_STARTED",
    "DELETE_PARTITION_FINISHED",
)

LEADER_EPOCHS: Final = pa.list_(
    pa.struct([pa.field("epoch", pa.int32()), pa.field("offset", pa.int64())])
)

FACT_SCHEMA: Final = pa.schema(
    [
        pa.field("fact", pa.string()),
        pa.field("topic", pa.string()),
        pa.field("topicId", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("segmentId", pa.string()),
        pa.field("startOffset", pa.int64()),
        pa.field("endOffset", pa.int64()),
        pa.field("recordType", pa.int16()),
        pa.field("state", pa.int8()),
        pa.field("timeMs", pa.int64()),
        pa.field("brokerId", pa.int32()),
        pa.field("metadataPartition", pa.int32()),
        pa.field("metadataOffset", pa.int64()),
        pa.field("recordTimeMs", pa.int64()),
        pa.field("sizeBytes", pa.int64()),
        pa.field("records", pa.int64()),
        pa.field("maxTimestampMs", pa.int64()),
        pa.field("leaderEpochs", LEADER_EPOCHS),
        pa.field("epoch", pa.int32()),
        pa.field("fileType", pa.string()),
        pa.field("file", pa.string()),
        pa.field("error", pa.string()),
    ]
)
"""The facts a partition's view is made of (the module's docstring says which fields each kind
of fact sets; the others are null)."""
PARTITION_KEYS: Final = ("topic", "topicId", "partition")
"""What the facts are grouped by: a partition of one incarnation of a topic."""

_KEY_FIELDS: Final = [
    pa.field("topic", pa.string()),
    pa.field("topicId", pa.string()),
    pa.field("partition", pa.int32()),
]
SEGMENT_SCHEMA: Final = pa.schema(
    [
        *_KEY_FIELDS,
        pa.field("segmentId", pa.string()),
        pa.field("startOffset", pa.int64()),
        pa.field("endOffset", pa.int64()),
        pa.field("state", pa.string()),
        pa.field("status", pa.string()),
        pa.field("copyStartedMs", pa.int64()),
        pa.field("copyFinishedMs", pa.int64()),
        pa.field("deleteStartedMs", pa.int64()),
        pa.field("deleteFinishedMs", pa.int64()),
        pa.field("ageMs", pa.int64()),
        pa.field("brokerId", pa.int32()),
        pa.field("sizeBytes", pa.int64()),
        pa.field("records", pa.int64()),
        pa.field("leaderEpochs", LEADER_EPOCHS),
        pa.field("files", pa.list_(pa.string())),
        pa.field("filesBytes", pa.int64()),
        pa.field("missingFiles", pa.list_(pa.string())),
        pa.field("note", pa.string()),
    ]
)
"""One row per remote segment (a copy, by its id), from its events and its files. ``status``:
``remote`` (served), ``copying``, ``upload-stuck``, ``upload-abandoned``, ``deleting``,
``delete-hanging``, ``deleted``, ``objects-missing`` (served by the metadata, files gone),
``orphan-objects`` (files of an id the metadata never named), ``no-metadata`` (files read without
``__remote_log_metadata``)."""
PARTITION_SCHEMA: Final = pa.schema(
    [
        *_KEY_FIELDS,
        pa.field("logStartOffset", pa.int64()),
        pa.field("remoteLogStartOffset", pa.int64()),
        pa.field("remoteEndOffset", pa.int64()),
        pa.field("localLogStartOffset", pa.int64()),
        pa.field("logEndOffset", pa.int64()),
        pa.field("remoteSegments", pa.int64()),
        pa.field("remoteBytes", pa.int64()),
        pa.field("remoteStoredBytes", pa.int64()),
        pa.field("remoteRecords", pa.int64()),
        pa.field("localSegments", pa.int64()),
        pa.field("localBytes", pa.int64()),
        pa.field("localRecords", pa.int64()),
        pa.field(
            "holes",
            pa.list_(
                pa.struct(
                    [
                        pa.field("firstOffset", pa.int64()),
                        pa.field("lastOffset", pa.int64()),
                        pa.field("reason", pa.string()),
                    ]
                )
            ),
        ),
        pa.field("offsetsLost", pa.int64()),
        pa.field("unfinishedUploads", pa.int64()),
        pa.field("abandonedObjectsBytes", pa.int64()),
        pa.field("hangingDeletions", pa.int64()),
        pa.field("epochMismatches", pa.int64()),
        pa.field("partitionDeleteState", pa.string()),
        pa.field("localLog", pa.bool_()),
        pa.field("notes", pa.list_(pa.string())),
    ]
)
"""One row per partition. ``logStartOffset``, ``localLogStartOffset``, ``remoteEndOffset`` and
``logEndOffset`` are what the broker answers to ListOffsets earliest, earliest-local,
latest-tiered and latest."""
EVENT_SCHEMA: Final = pa.schema(
    [
        *_KEY_FIELDS,
        pa.field("segmentId", pa.string()),
        pa.field("startOffset", pa.int64()),
        pa.field("endOffset", pa.int64()),
        pa.field("state", pa.string()),
        pa.field("timeMs", pa.int64()),
        pa.field("brokerId", pa.int32()),
        pa.field("metadataPartition", pa.int32()),
        pa.field("metadataOffset", pa.int64()),
        pa.field("error", pa.string()),
    ]
)
"""Every state of the partition's segments and of its deletion, in the order written."""
EPOCH_SCHEMA: Final = pa.schema(
    [
        *_KEY_FIELDS,
        pa.field("segmentId", pa.string()),
        pa.field("epoch", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("checkpointEpoch", pa.int32()),
        pa.field("checkpointStartOffset", pa.int64()),
        pa.field("status", pa.string()),
    ]
)
"""Each leader epoch of each live segment against the partition's checkpoint. ``status``:
``agrees``, ``differs``, ``before-checkpoint`` (the checkpoint starts later) or
``no-checkpoint``."""
TOPIC_SCHEMA: Final = pa.schema(
    [
        pa.field("topic", pa.string()),
        pa.field("topicId", pa.string()),
        pa.field("partitions", pa.int64()),
        pa.field("remoteSegments", pa.int64()),
        pa.field("remoteBytes", pa.int64()),
        pa.field("remoteStoredBytes", pa.int64()),
        pa.field("remoteRecords", pa.int64()),
        pa.field("localBytes", pa.int64()),
        pa.field("localRecords", pa.int64()),
        pa.field("offsetsLost", pa.int64()),
        pa.field("unfinishedUploads", pa.int64()),
        pa.field("abandonedObjectsBytes", pa.int64()),
        pa.field("hangingDeletions", pa.int64()),
        pa.field("epochMismatches", pa.int64()),
    ]
)
"""Per topic (one incarnation: its topic id): the partitions' sums."""
SECTIONS: Final[Mapping[str, pa.Schema]] = {
    "partitions": PARTITION_SCHEMA,
    "segments": SEGMENT_SCHEMA,
    "events": EVENT_SCHEMA,
    "epochs": EPOCH_SCHEMA,
}
"""The sections :func:`partition_view` gives, by name."""

UNFINISHED: Final = frozenset({"copying", "upload-stuck", "upload-abandoned"})
HANGING: Final = frozenset({"delete-hanging"})


@dataclass(frozen=True, slots=True)
class TieredSections:
    """The view's tables: :data:`SECTIONS` and the topics."""

    partitions: pa.Table
    segments: pa.Table
    events: pa.Table
    epochs: pa.Table
    topics: pa.Table

    def section(self, name: str) -> pa.Table:
        table: pa.Table = getattr(self, name)
        return table
