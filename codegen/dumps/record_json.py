"""The JSON of decoded records: the objects every output of ``dump`` is made of.

Kafka's own forms come first: :func:`record_json` is the key and value objects its
``kafka-dump-log`` decoders build, :func:`jackson_json` the text Jackson prints of them. The
jsonl line of a record (:func:`record_to_json`), of a segment error and of a batch's fields
follow; a user topic's record is its map's messages (:func:`user_record_json`), any other
topic's keys and values base64 and text (:func:`plain_record_json`). The outputs
(:mod:`codegen.dumps.jsonl`, :mod:`codegen.dumps.table`, :mod:`codegen.dumps.dumplog_json`)
print these.
"""

from __future__ import annotations

import base64
import json
import re
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Final, cast

import orjson

from codegen.dumps.decoded import (
    ERROR,
    KIND_CONTROL,
    RECORD,
    TOMBSTONE,
    UNKNOWN,
    DecodedRecord,
    EndTxnMarker,
    version_of,
)
from codegen.dumps.metadata import METADATA_TOPICS
from codegen.dumps.model import RecordBatch, SegmentError
from codegen.runtime import KafkaMessage
from codegen.slotted import FrozenSlotted

if TYPE_CHECKING:
    from codegen.dumps.user_topics import UserRecord

__all__ = [
    "ABORTED_TXN",
    "SEGMENT_ERROR",
    "BatchPlace",
    "Damage",
    "batch_json_fields",
    "compact_json",
    "jackson_json",
    "jackson_json_each",
    "plain_record_json",
    "plain_side_json",
    "plainly_keyed",
    "record_json",
    "record_to_json",
    "segment_error_to_json",
    "user_record_json",
    "value_json",
]

SEGMENT_ERROR: Final = "segment-error"
"""``kind`` of the output line of a stretch of a file that could not be read."""
ABORTED_TXN: Final = "aborted-txn"
"""``kind`` of the output line of a ``.txnindex`` entry."""

# ---------------------------------------------------------------------------------- encoders

_LOWER_ESCAPE: Final = re.compile(r"(\\+)u00([0-9a-f]{2})")
_JACKSON_FALLBACK: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
"""The fallback for what orjson refuses (strings with lone surrogates, integers past 64 bits)."""
_COMPACT_FALLBACK: Final = json.JSONEncoder(separators=(",", ":")).encode
"""The same for :func:`compact_json` (non-ASCII escaped, as the jsonl lines always had it)."""


def _upper_escape(m: re.Match[str]) -> str:
    slashes = m.group(1)
    if len(slashes) % 2 == 0:  # an escaped backslash followed by the text "u00.."
        return m.group(0)
    return f"{slashes}u00{m.group(2).upper()}"


def jackson_json(obj: Any) -> str:
    """Compact JSON as Jackson prints it (UTF-8 text, ``\\u00XX`` with upper-case hex)."""
    try:
        text = orjson.dumps(obj).decode()
    except TypeError:
        text = _JACKSON_FALLBACK(obj)
    if "\\u00" in text:
        text = _LOWER_ESCAPE.sub(_upper_escape, text)
    return text


def jackson_json_each(objs: list[Any]) -> list[str]:
    """:func:`jackson_json` of each object, in one decode; TypeError when orjson refuses one."""
    dumps = orjson.dumps
    text = b"\n".join(map(dumps, objs)).decode()
    if "\\u00" in text:
        text = _LOWER_ESCAPE.sub(_upper_escape, text)
    return text.split("\n") if objs else []


def compact_json(obj: Any) -> bytes:
    """Compact JSON (UTF-8) of a jsonl line or table cell: orjson, or the standard encoder for
    what orjson refuses (strings with lone surrogates, integers past 64 bits)."""
    try:
        return orjson.dumps(obj)
    except TypeError:
        return _COMPACT_FALLBACK(obj).encode("utf-8", "surrogatepass")


# ------------------------------------------------------------------ Kafka's key and value JSON


def value_json(rec: DecodedRecord) -> dict[str, Any]:
    """The value's JSON; GroupMetadataValue consumer payloads decoded in place, as Kafka does."""
    version = rec.value_version
    data: dict[str, Any] = rec.value.to_json(version)
    if rec.record_type == 2 and rec.members is not None and rec.name == "GroupMetadata":
        # imported for the records that have payloads: it loads three generated modules
        from codegen.dumps.consumer_protocol import kafka_payload_json

        for member_json, member in zip(data["members"], rec.value.members, strict=True):
            for field, assignment in (("subscription", False), ("assignment", True)):
                raw = member.assignment if assignment else member.subscription
                decoded = kafka_payload_json(raw, assignment)
                if decoded is not None:
                    member_json[field] = decoded
    return data


def record_json(rec: DecodedRecord, topic: str) -> tuple[dict[str, Any] | None, Any]:
    """(key object, value object) as Kafka's decoder builds them before printing.

    For coordinator topics the key is ``{"type": "<id>", "data": ...}`` and the value
    ``{"version": "<v>", "data": ...}`` (None for a tombstone); for ``__cluster_metadata`` (and
    ``__remote_log_metadata``, framed alike) the key is None and the value
    ``{"type": "<ENUM>", "version": <v>, "data": ...}``.
    """
    if topic in METADATA_TOPICS:
        frame = rec.key
        name = getattr(frame, "type_name", rec.name)
        return None, {
            "type": name,
            "version": rec.value_version,
            "data": rec.value.to_json(rec.value_version),
        }
    assert rec.key is not None and not isinstance(rec.key, tuple)
    key = {"type": str(rec.record_type), "data": rec.key.to_json(0)}  # type: ignore[union-attr]
    if rec.kind == TOMBSTONE:
        return key, None
    return key, {"version": str(rec.value_version), "data": value_json(rec)}


def plainly_keyed(rec: DecodedRecord) -> bool:
    """A coordinator record (or tombstone) whose line is its key's part and its value's JSON:
    decoded at a version the specs know, nothing left over."""
    return (
        rec.kind in (RECORD, TOMBSTONE)
        and rec.key_bytes is not None
        and not rec.newer_than_spec
        and not rec.note
    )


# ---------------------------------------------------------------------------- other topics


def plain_side_json(name: str, data: bytes | None) -> dict[str, Any]:
    """``<name>Base64`` (null for null bytes) and, for valid UTF-8, ``<name>Text``."""
    if data is None:
        return {f"{name}Base64": None}
    obj = {f"{name}Base64": base64.b64encode(data).decode("ascii")}
    with suppress(UnicodeDecodeError):
        obj[f"{name}Text"] = data.decode("utf-8")
    return obj


def plain_record_json(
    offset: int, timestamp: int, key: bytes | None, value: bytes | None
) -> dict[str, Any]:
    """One output line of a record of an ordinary topic: key and value as base64, and as text
    when they are valid UTF-8 (``keyText``/``valueText`` are absent otherwise)."""
    obj: dict[str, Any] = {"offset": offset, "timestamp": timestamp, "kind": RECORD}
    for name, data in (("key", key), ("value", value)):
        obj.update(plain_side_json(name, data))
    return obj


def _user_side_json(
    obj: dict[str, Any],
    name: str,
    mapped: bool,
    message: KafkaMessage | None,
    version: int | None,
    data: bytes | None,
) -> None:
    if mapped:
        obj[f"{name}Version"] = version
        obj[name] = None if message is None else message.to_json(version_of(message, version))
    else:
        obj.update(plain_side_json(name, data))


def user_record_json(rec: UserRecord) -> dict[str, Any]:
    """The jsonl fields of a decoded (or tombstone) user record after its position and kind:
    ``keyVersion``/``key`` and ``valueVersion``/``value`` for a side the map names (the
    message's JSON, Kafka's JsonConverter form), :func:`plain_side_json` for the others."""
    obj: dict[str, Any] = {"recordType": None, "recordName": rec.name}
    key = rec.key if isinstance(rec.key, KafkaMessage) else None
    _user_side_json(obj, "key", rec.key_mapped, key, rec.key_version, rec.key_bytes)
    _user_side_json(obj, "value", rec.value_mapped, rec.value, rec.value_version, rec.value_bytes)
    if rec.newer_than_spec:
        obj["isNewerVersion"] = True
    return obj


# ------------------------------------------------------------------------------ output lines


class BatchPlace(FrozenSlotted):
    """Where a log batch is: what an error record's output line says of its batch."""

    file: str
    position: int


Damage = list[tuple[DecodedRecord, RecordBatch | BatchPlace] | SegmentError]
"""Segment errors and error records (with their batch), in file order: what ``--compacted``
prints before (jsonl) or after (table) its views."""


def record_to_json(
    rec: DecodedRecord, topic: str, batch: RecordBatch | BatchPlace | None = None
) -> dict[str, Any]:
    """One output line: the record's position, kind, type and Kafka's JSON key/value objects.

    An ``error`` record also says where its batch is (``file``, ``batchPosition``) when
    ``batch`` is given.
    """
    obj: dict[str, Any] = {
        "offset": rec.offset,
        "timestamp": rec.timestamp,
        "kind": rec.kind,
        "recordType": None if rec.of_user_topic else rec.record_type,
        "recordName": rec.name,
    }
    if rec.kind == KIND_CONTROL:
        if isinstance(rec.value, EndTxnMarker):
            obj["value"] = {"coordinatorEpoch": rec.value.coordinator_epoch}
        elif rec.value is not None:
            obj["value"] = rec.value.to_json(getattr(rec.value, "version", 0))
        return obj
    if rec.of_user_topic:  # the version written, None where there is none
        obj["valueVersion"] = rec.value_version
    elif rec.kind != UNKNOWN:
        obj["valueVersion"] = rec.value_version if rec.value_version >= 0 else None
    if rec.kind in (ERROR, UNKNOWN):
        obj["error"] = rec.error
        obj["keyHex"] = None if rec.key_bytes is None else rec.key_bytes.hex()
        obj["valueHex"] = None if rec.value_bytes is None else rec.value_bytes.hex()
        if batch is not None and rec.kind == ERROR:
            obj["file"] = batch.file
            obj["batchPosition"] = batch.position
        return obj
    if rec.of_user_topic:
        return {**obj, **user_record_json(cast("UserRecord", rec))}
    key, value = record_json(rec, topic)
    if key is not None:
        obj["key"] = key
    else:
        obj["frameVersion"] = getattr(rec.key, "frame_version", 1)
    obj["value"] = value
    if rec.newer_than_spec:
        obj["isNewerVersion"] = True
    if rec.note:
        obj["note"] = rec.note
    return obj


def segment_error_to_json(err: SegmentError) -> dict[str, Any]:
    """The output line of a segment error: where (file, byte position and size, the entry's
    base offset when it could be read), what kind of error and why."""
    return {
        "kind": SEGMENT_ERROR,
        "file": err.file,
        "position": err.position,
        "size": err.size,
        "baseOffset": err.base_offset,
        "errorKind": str(err.kind),
        "error": err.reason,
    }


def batch_json_fields(batch: RecordBatch) -> dict[str, Any]:
    """The batch fields every jsonl record line carries (-1 and false for legacy entries)."""
    return {
        "producerId": batch.producer_id,
        "producerEpoch": batch.producer_epoch,
        "baseSequence": batch.base_sequence,
        "isTransactional": batch.is_transactional,
        "isControl": batch.is_control,
    }
