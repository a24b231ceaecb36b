"""Decoded records: what the coordinator and metadata decoders both return, and the control
records they decode alike. The records layer's model, above the segment layer (raw records and
batches, ``codegen.dumps.model``) and below both decoders, which do not import each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final

from codegen.dumps.batches import parse_control_key, parse_end_txn_marker
from codegen.dumps.model import ControlType, RawRecord, RecordBatch
from codegen.runtime import KafkaMessage
from codegen.slotted import FrozenSlotted, Slotted

if TYPE_CHECKING:
    from codegen.dumps.consumer_protocol import ConsumerMember

__all__ = [
    "ERROR",
    "KIND_CONTROL",
    "RECORD",
    "TOMBSTONE",
    "UNKNOWN",
    "DecodedBatch",
    "DecodedRecord",
    "EndTxnMarker",
    "MetadataFrame",
    "control_record",
    "version_of",
]

# Record kinds (``DecodedRecord.kind``).
RECORD: Final = "record"
TOMBSTONE: Final = "tombstone"
UNKNOWN: Final = "unknown"
ERROR: Final = "error"
KIND_CONTROL: Final = "control"


class EndTxnMarker(Slotted):
    """The value of a COMMIT/ABORT control record."""

    committed: bool
    coordinator_epoch: int
    version: int = 0

    @property
    def name(self) -> str:
        return "COMMIT" if self.committed else "ABORT"


class MetadataFrame(FrozenSlotted):
    """The frame header in front of a metadata record body."""

    frame_version: int
    api_key: int
    version: int
    type_name: str
    """``MetadataRecordType`` enum name (``TOPIC_RECORD``), or "" for an unknown apiKey."""


@dataclass(slots=True)
class DecodedRecord:
    """One record of an internal topic, decoded.

    Records with equal key bytes may share one decoded key object: treat keys as read-only.

    ``kind`` is ``record``, ``tombstone`` (``value`` is None), ``unknown`` (record type not in
    our specs), ``error`` (see ``error``) or ``control`` (``record_type`` is the control type,
    ``value`` an :class:`EndTxnMarker` or the decoded KRaft control message).

    ``key`` is the key message (for ``__cluster_metadata``, whose keys are null, the record frame
    header). ``value_version`` is the version in front of the value (-1 when there is none);
    ``newer_than_spec`` says it is above the newest version we know and was read with that one.
    ``key_bytes``/``value_bytes`` are the raw record key and value. ``note`` says something
    worth knowing about a record that still decoded (bytes left over, a lenient fallback).
    ``members`` holds the decoded consumer-protocol payloads of a ``GroupMetadataValue`` of
    protocol type ``consumer``, one per member of the value, in its order.
    """

    offset: int
    timestamp: int
    kind: str
    record_type: int
    name: str
    key: KafkaMessage | MetadataFrame | None
    value: Any
    value_version: int
    key_bytes: bytes | None
    value_bytes: bytes | None
    newer_than_spec: bool = False
    error: str | None = None
    note: str | None = None
    members: list[ConsumerMember] | None = None
    of_user_topic: ClassVar[bool] = False
    """True for a user topic's record (:class:`codegen.dumps.user_topics.UserRecord`): the
    printers ask this, not ``isinstance``, so a dump of no user topic does not import that
    module (its dataclass alone costs some 6 M instructions at start-up)."""

    @property
    def is_tombstone(self) -> bool:
        return self.kind == TOMBSTONE

    @property
    def record_name(self) -> str:
        """``name`` under the name the jsonl output and Spark give it (``recordName``)."""
        return self.name

    @property
    def is_newer_version(self) -> bool:
        """``newer_than_spec`` under the name the jsonl output and Spark give it."""
        return self.newer_than_spec


class DecodedBatch(Slotted):
    """A batch and its decoded records (control records included, as ``control`` records)."""

    batch: RecordBatch
    records: list[DecodedRecord]


def control_record(row: RawRecord) -> DecodedRecord:
    """A control record: COMMIT/ABORT markers decoded, other types kept raw."""
    offset, ts, key, value = row
    try:
        version, ctype = parse_control_key(key)
    except ValueError as exc:
        return DecodedRecord(offset, ts, ERROR, -1, "", None, None, -1, key, value, error=str(exc))
    try:
        name = ControlType(ctype).name
    except ValueError:
        name = "UNKNOWN"
    if ctype in (ControlType.ABORT, ControlType.COMMIT):
        try:
            mversion, epoch = parse_end_txn_marker(value)
        except ValueError as exc:
            return DecodedRecord(
                offset, ts, ERROR, ctype, name, None, None, version, key, value, error=str(exc)
            )
        marker = EndTxnMarker(ctype == ControlType.COMMIT, epoch, mversion)
        return DecodedRecord(
            offset, ts, KIND_CONTROL, ctype, name, None, marker, version, key, value
        )
    return DecodedRecord(offset, ts, KIND_CONTROL, ctype, name, None, None, version, key, value)


def version_of(message: KafkaMessage, version: int | None) -> int:
    """The version to print ``message`` at: the one it was read with (the newest known one for
    a version newer than the spec)."""
    assert version is not None  # a decoded side was read at a version
    return min(version, type(message).HIGHEST_VERSION)
