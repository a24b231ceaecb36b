"""Coordinator and metadata logs written record by record with our codecs, for the downgrade
tests (the model's and the replay's): keys and values framed as Kafka writes them, segments of a
partition folder, and broker images whose ``__cluster_metadata`` holds topics, features and
configs."""

from __future__ import annotations

import struct
import uuid
from pathlib import Path
from typing import Any

from codegen.dumps import SegmentWriter
from generated import MESSAGES


def key(name: str, record_type: int | None = None, **fields: Any) -> bytes:
    cls = MESSAGES[name]
    rtype = cls.API_KEY if record_type is None else record_type
    return struct.pack(">h", rtype) + cls(**fields).encode(0)


def value(name: str, version: int, **fields: Any) -> bytes:
    cls = MESSAGES[name]
    return struct.pack(">h", version) + cls(**fields).encode(min(version, cls.HIGHEST_VERSION))


def commit(group: str, partition: int, offset: int, version: int) -> tuple[bytes, bytes]:
    return (
        key("OffsetCommitKey", group=group, topic="t", partition=partition),
        value("OffsetCommitValue", version, offset=offset, commit_timestamp=1),
    )


def group_metadata(group: str, version: int) -> tuple[bytes, bytes]:
    return (
        key("GroupMetadataKey", group=group),
        value("GroupMetadataValue", version, protocol_type="consumer", generation=1),
    )


def dump(tmp_path: Path, *batches: list[tuple[bytes, bytes | None]]) -> Path:
    folder = tmp_path / "__consumer_offsets-3"
    folder.mkdir()
    with SegmentWriter(folder / "00000000000000000000.log") as w:
        for records in batches:
            w.write_batch(records)
    return folder


def metadata_record(spec: str, version: int = 0, **fields: Any) -> bytes:
    """A __cluster_metadata record value: frame version 1, apiKey, version, body."""
    cls = MESSAGES[spec]
    assert cls.API_KEY < 128 and version < 128  # one-byte unsigned varints
    return bytes([1, cls.API_KEY, version]) + cls(**fields).encode(version)


def cluster(
    tmp_path: Path,
    topics: dict[str, int],
    metadata_version: int = 21,
    features: dict[str, int] | None = None,
    configs: list[tuple[int, str, str, str | None]] = (),  # type: ignore[assignment]
    extra: list[bytes] = (),  # type: ignore[assignment]
) -> Path:
    """A broker image whose __cluster_metadata holds ``topics`` (name -> partitions), the
    finalized features, dynamic configs (resource type, resource, name, value or None) and
    ``extra`` metadata records (values made by :func:`metadata_record`)."""
    image = tmp_path / "broker-1"
    folder = image / "__cluster_metadata-0"
    folder.mkdir(parents=True)
    records: list[tuple[bytes | None, bytes | None]] = [
        (
            None,
            metadata_record(
                "FeatureLevelRecord", name="metadata.version", feature_level=metadata_version
            ),
        )
    ]
    for name, level in (features or {}).items():
        records.append(
            (None, metadata_record("FeatureLevelRecord", name=name, feature_level=level))
        )
    for n, (name, count) in enumerate(sorted(topics.items())):
        tid = uuid.UUID(int=n + 1)
        records.append((None, metadata_record("TopicRecord", name=name, topic_id=tid)))
        for p in range(count):
            records.append((None, metadata_record("PartitionRecord", partition_id=p, topic_id=tid)))
    for rtype, resource, name, val in configs:
        records.append(
            (
                None,
                metadata_record(
                    "ConfigRecord",
                    resource_type=rtype,
                    resource_name=resource,
                    name=name,
                    value=val,
                ),
            )
        )
    records.extend((None, rec) for rec in extra)
    with SegmentWriter(folder / "00000000000000000000.log") as w:
        for rec in records:
            w.write_batch([rec])
    return image


def partition(image: Path, topic: str, n: int, *batches: list[tuple[bytes, bytes | None]]) -> None:
    folder = image / f"{topic}-{n}"
    folder.mkdir()
    with SegmentWriter(folder / "00000000000000000000.log") as w:
        for records in batches:
            w.write_batch(records)


def share_snapshot(group: str) -> tuple[bytes, bytes]:
    return (
        key("ShareSnapshotKey", group_id=group, topic_id=uuid.UUID(int=7), partition=0),
        value("ShareSnapshotValue", 0, snapshot_epoch=1, state_epoch=1, start_offset=5),
    )
