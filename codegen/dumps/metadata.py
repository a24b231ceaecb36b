"""``__cluster_metadata`` records and KRaft snapshots (``.checkpoint`` files), and the records
of ``__remote_log_metadata``, framed alike.

A metadata record has a null key; its value is a frame: ``uvarint frameVersion`` (1),
``uvarint apiKey``, ``uvarint version``, then the record body. The apiKey -> class table is built
once per topic from the generated classes of ``SPEC_TYPE`` ``metadata`` of the topic's spec
folder (``cluster_metadata``, ``remote_log_metadata``: the two reuse apiKeys, as Kafka's
``kafka-metadata`` and ``kafka-storage`` modules do). Control batches carry KRaft control
records (LeaderChange, SnapshotHeader/Footer, KRaftVersion, Voters), decoded at version 0 with
the control type -> class mapping Kafka hard-codes. The classes come from a generated package:
the shipped ``generated`` by default, or any other (``package="mycodecs"``).

Errors use Kafka's wording (``MetadataRecordSerde``); as in Kafka, a version above the newest
known one is read as the newest (metadata specs are flexible from version 0) and flagged, and
bytes left after the body are an error.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import cache
from types import ModuleType
from typing import Final

from codegen.dumps.batches import DEFAULT_MAX_BATCH_RECORDS, parse_control_key
from codegen.dumps.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from codegen.dumps.decoded import (
    ERROR,
    KIND_CONTROL,
    RECORD,
    UNKNOWN,
    DecodedBatch,
    DecodedRecord,
    MetadataFrame,
    control_record,
)
from codegen.dumps.model import ControlType, RawRecord, SegmentError
from codegen.dumps.packages import SHIPPED_PACKAGE, package_messages, package_name
from codegen.dumps.segments import SegmentReader, Source, segment_sources
from codegen.runtime import DecodeError, KafkaMessage
from codegen.runtime.wire import read_uvarint

__all__ = [
    "CLUSTER_METADATA",
    "CONTROL_CLASSES",
    "METADATA_TOPICS",
    "REMOTE_LOG_METADATA",
    "MetadataDecoder",
    "MetadataFrame",
    "decode_control",
    "decode_metadata_batches",
    "decode_metadata_records",
    "metadata_decoder",
    "metadata_types",
    "record_type_name",
]

CLUSTER_METADATA: Final = "__cluster_metadata"
REMOTE_LOG_METADATA: Final = "__remote_log_metadata"
"""The topic of the default remote log metadata manager (``TopicBasedRemoteLogMetadataManager``,
KIP-405): the states of the segments of tiered topics."""

METADATA_TOPICS: Final[Mapping[str, str]] = {
    CLUSTER_METADATA: "cluster_metadata",
    REMOTE_LOG_METADATA: "remote_log_metadata",
}
"""Topic -> the spec folder of its framed metadata records."""

CONTROL_CLASSES: Final[Mapping[int, str]] = {
    ControlType.LEADER_CHANGE: "LeaderChangeMessage",
    ControlType.SNAPSHOT_HEADER: "SnapshotHeaderRecord",
    ControlType.SNAPSHOT_FOOTER: "SnapshotFooterRecord",
    ControlType.KRAFT_VERSION: "KRaftVersionRecord",
    ControlType.KRAFT_VOTERS: "VotersRecord",
}
"""KRaft control type -> spec name (Kafka's ``ControlRecordUtils``)."""

_WORD: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def record_type_name(spec_name: str) -> str:
    """Kafka's ``MetadataRecordType`` name: ``TopicRecord`` -> ``TOPIC_RECORD``."""
    return _WORD.sub("_", spec_name).upper()


class _FrameError(Exception):
    pass


def _uvarint(data: bytes, pos: int, what: str) -> tuple[int, int]:
    """The runtime's unsigned varint, Kafka's error text where it cannot be read."""
    try:
        return read_uvarint(data, pos, what)
    except DecodeError:
        raise _FrameError(f"Error while reading {what}") from None


def metadata_types(
    package: str | ModuleType = SHIPPED_PACKAGE, topic: str = CLUSTER_METADATA
) -> Mapping[int, type[KafkaMessage]]:
    """apiKey -> generated class of every ``metadata`` spec of ``topic``'s folder in
    ``package``. For ``__cluster_metadata`` a package without a ``cluster_metadata`` folder (or
    generated before its index named folders) gives its ``metadata`` specs of any folder but
    ``remote_log_metadata``."""
    return _metadata_types(package_name(package), topic)


@cache
def _metadata_types(package: str, topic: str) -> Mapping[int, type[KafkaMessage]]:
    messages = package_messages(package)
    folder = METADATA_TOPICS[topic]
    kinds = getattr(messages, "kinds", None)
    names: list[str] = []
    if kinds is not None:
        specs = {n: k.folder for n, k in kinds.items() if k.spec_type == "metadata"}
        names = [n for n, f in specs.items() if f == folder]
        if not names and topic == CLUSTER_METADATA:
            remote = METADATA_TOPICS[REMOTE_LOG_METADATA]
            names = [n for n, f in specs.items() if f != remote]
    elif topic == CLUSTER_METADATA:
        names = [n for n in messages if messages[n].SPEC_TYPE == "metadata"]
    out: dict[int, type[KafkaMessage]] = {}
    for spec in names:
        cls = messages[spec]
        if cls.API_KEY is not None:
            out[cls.API_KEY] = cls
    return out


class MetadataDecoder:
    """Decodes the record values of ``__cluster_metadata`` (or of another framed topic of
    :data:`METADATA_TOPICS`); build once, reuse."""

    def __init__(
        self, package: str | ModuleType = SHIPPED_PACKAGE, topic: str = CLUSTER_METADATA
    ) -> None:
        self.package = package_name(package)
        self.topic = topic
        types = metadata_types(self.package, topic)
        self.types = types
        self._names = {k: c.SPEC_NAME for k, c in types.items()}
        self._type_names = {k: record_type_name(c.SPEC_NAME) for k, c in types.items()}

    def decode(
        self, value: bytes | None, offset: int = -1, timestamp: int = -1, key: bytes | None = None
    ) -> DecodedRecord:
        """Decode one metadata record value (a frame); never raises."""
        if value is None:
            return DecodedRecord(
                offset,
                timestamp,
                ERROR,
                -1,
                "",
                None,
                None,
                -1,
                key,
                None,
                error="Error while reading frame version",  # Kafka's text for a null value
            )
        try:
            frame_version, pos = _uvarint(value, 0, "frame version")
            if frame_version > 0x7FFF:
                raise _FrameError("Value for frame version was too large.")
            if frame_version == 0:
                raise _FrameError(
                    "Could not deserialize metadata record with frame version 0. Note that "
                    "upgrades from the preview release of KRaft in 2.8 to newer versions are "
                    "not supported."
                )
            if frame_version != 1:
                raise _FrameError(
                    "Could not deserialize metadata record due to unknown frame version "
                    f"{frame_version}(only frame version 1 is supported)"
                )
            api_key, pos = _uvarint(value, pos, "type")
            if api_key > 0x7FFF:
                raise _FrameError("Value for type was too large.")
            version, pos = _uvarint(value, pos, "version")
            if version > 0x7FFF:
                raise _FrameError("Value for version was too large.")
        except _FrameError as exc:
            return DecodedRecord(
                offset, timestamp, ERROR, -1, "", None, None, -1, key, value, error=str(exc)
            )
        cls = self.types.get(api_key)
        if cls is None:
            frame = MetadataFrame(frame_version, api_key, version, "")
            return DecodedRecord(
                offset,
                timestamp,
                UNKNOWN,
                api_key,
                "",
                frame,
                None,
                version,
                key,
                value,
                error=(
                    "org.apache.kafka.common.errors.UnsupportedVersionException: "
                    f"Unknown metadata id {api_key}"
                ),
            )
        name = self._names[api_key]  # the record's name is its spec's (TopicRecord)
        frame = MetadataFrame(frame_version, api_key, version, self._type_names[api_key])
        newer = version > cls.HIGHEST_VERSION
        reader = cls._READERS.get(cls.HIGHEST_VERSION if newer else version)
        if reader is None or (newer and cls.HIGHEST_VERSION not in cls.FLEXIBLE_VERSIONS):
            return DecodedRecord(
                offset,
                timestamp,
                ERROR,
                api_key,
                name,
                frame,
                None,
                version,
                key,
                value,
                error=f"unknown version {version} of {cls.SPEC_NAME} (valid: {cls.VALID_VERSIONS})",
            )
        error = None
        try:
            obj, end = reader(value, pos)
        except DecodeError as exc:
            error = f"Failed to deserialize record with type {api_key}: {exc}"
        else:
            if end != len(value):
                error = f"Found {len(value) - end} byte(s) of garbage after {api_key}"
        if error is not None:
            return DecodedRecord(
                offset,
                timestamp,
                ERROR,
                api_key,
                name,
                frame,
                None,
                version,
                key,
                value,
                newer_than_spec=newer,
                error=error,
            )
        return DecodedRecord(
            offset,
            timestamp,
            RECORD,
            api_key,
            name,
            frame,
            obj,
            version,
            key,
            value,
            newer_than_spec=newer,
        )

    def decode_raw(self, rows: list[RawRecord]) -> list[DecodedRecord]:
        dec = self.decode
        return [dec(value, offset, ts, key) for offset, ts, key, value in rows]


def decode_control(row: RawRecord, package: str | ModuleType = SHIPPED_PACKAGE) -> DecodedRecord:
    """A control record of the metadata log or a snapshot, KRaft control values decoded at v0."""
    offset, ts, key, value = row
    try:
        _, ctype = parse_control_key(key)
    except ValueError:
        return control_record(row)
    spec = CONTROL_CLASSES.get(ctype)
    messages = package_messages(package_name(package))
    if spec is None or spec not in messages:
        return control_record(row)
    cls = messages[spec]
    name = ControlType(ctype).name
    try:
        if value is None:
            raise ValueError("control record has a null value")
        obj = cls.decode(value, 0)
    except ValueError as exc:  # a DecodeError or UnsupportedVersionError, or the null value
        return DecodedRecord(
            offset,
            ts,
            ERROR,
            ctype,
            name,
            None,
            None,
            0,
            key,
            value,
            error=f"{cls.SPEC_NAME}: {exc}",
        )
    return DecodedRecord(offset, ts, KIND_CONTROL, ctype, name, None, obj, 0, key, value)


def metadata_decoder(
    package: str | ModuleType = SHIPPED_PACKAGE, topic: str = CLUSTER_METADATA
) -> MetadataDecoder:
    """The shared decoder of ``topic``'s framed records with the classes of ``package``."""
    return _shared_decoder(package_name(package), topic)


@cache
def _shared_decoder(package: str, topic: str) -> MetadataDecoder:
    return MetadataDecoder(package, topic)


def decode_metadata_batches(
    source: Source,
    *,
    name: str | None = None,
    package: str | ModuleType = SHIPPED_PACKAGE,
    verify_crc: bool = True,
    errors: list[SegmentError] | None = None,
    max_batch_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS,
    topic: str = CLUSTER_METADATA,
) -> Iterator[DecodedBatch | SegmentError]:
    """Batches of a ``__cluster_metadata`` segment or snapshot (or of a segment of another
    ``topic`` of :data:`METADATA_TOPICS`) with decoded records.

    ``source`` may also be a partition folder: its segments and snapshots, in name order.
    ``max_batch_size`` and ``max_batch_records`` are :class:`SegmentReader`'s caps. ``package``
    is the generated package whose classes decode the records.
    """
    decoder = metadata_decoder(package, topic)
    for src in segment_sources(source):
        reader = SegmentReader(
            src,
            name=name if src is source else None,
            verify_crc=verify_crc,
            max_batch_size=max_batch_size,
            max_batch_records=max_batch_records,
        )
        yield from _decoded(decoder, reader, errors)


def _decoded(
    decoder: MetadataDecoder, reader: SegmentReader, errors: list[SegmentError] | None
) -> Iterator[DecodedBatch | SegmentError]:
    for item in reader.raw_batches():
        if isinstance(item, SegmentError):
            if errors is not None:
                errors.append(item)
            yield item
            continue
        batch, rows = item
        if batch.is_control and decoder.topic == CLUSTER_METADATA:
            yield DecodedBatch(batch, [decode_control(r, decoder.package) for r in rows])
        elif batch.is_control:
            yield DecodedBatch(batch, [control_record(r) for r in rows])
        else:
            yield DecodedBatch(batch, decoder.decode_raw(rows))


def decode_metadata_records(
    source: Source,
    *,
    name: str | None = None,
    package: str | ModuleType = SHIPPED_PACKAGE,
    include_control: bool = True,
    verify_crc: bool = True,
    errors: list[SegmentError] | None = None,
    max_batch_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS,
    topic: str = CLUSTER_METADATA,
) -> Iterator[DecodedRecord]:
    """Every decoded record of a metadata segment, snapshot or folder (of ``topic``), control
    records included."""
    batches = decode_metadata_batches(
        source,
        name=name,
        package=package,
        verify_crc=verify_crc,
        errors=errors,
        max_batch_size=max_batch_size,
        max_batch_records=max_batch_records,
        topic=topic,
    )
    for item in batches:
        if isinstance(item, SegmentError):
            continue
        if item.batch.is_control and not include_control:
            continue
        yield from item.records
