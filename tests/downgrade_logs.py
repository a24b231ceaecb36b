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
from codegen.dumps.model import ControlType
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


def consumer_group(group: str, epoch: int) -> list[tuple[bytes, bytes | None]]:
    """A consumer-protocol group's own records (no member, whose record layout changed while
    KIP-848 was in early access): its epoch and its target assignment's."""
    return [
        (
            key("ConsumerGroupMetadataKey", group_id=group),
            value("ConsumerGroupMetadataValue", 0, epoch=epoch),
        ),
        (
            key("ConsumerGroupTargetAssignmentMetadataKey", group_id=group),
            value("ConsumerGroupTargetAssignmentMetadataValue", 0, assignment_epoch=epoch),
        ),
    ]


def transaction(tid: str, version: int, producer_id: int = 7) -> tuple[bytes, bytes]:
    return (
        key("TransactionLogKey", transactional_id=tid),
        value("TransactionLogValue", version, producer_id=producer_id, producer_epoch=0),
    )


def zoo(tmp_path: Path) -> Path:
    """A broker image whose partitions each hold one thing releases load differently:

    - ``__consumer_offsets-0``: classic group records, GroupMetadataValue and OffsetCommitValue
      v3 (what 2.3 to 3.4 write);
    - ``-1``: the same at v4 (flexible, KIP-915: 3.4.1 and 3.5 on read it);
    - ``-2``: a consumer group's records, tombstoned (converted to classic) but still on disk,
      then a commit;
    - ``-3``: OffsetCommitValue v5 (newer than any release reads);
    - ``-4``: a transactional offset commit and its COMMIT marker (a control batch);
    - ``-5``: a live consumer-protocol group;
    - ``__transaction_state-0``: TransactionLogValue v0, then v1 (flexible, KIP-915 / KIP-890),
      then v0;
    - ``__cluster_metadata-0``: metadata.version 7 (3.3-IV3) and the topics.
    """
    image = cluster(tmp_path, {"__consumer_offsets": 6, "__transaction_state": 1, "orders": 1}, 7)
    partition(image, "__consumer_offsets", 0, [group_metadata("g0", 3)], [commit("g0", 0, 5, 3)])
    partition(image, "__consumer_offsets", 1, [group_metadata("g1", 4)], [commit("g1", 0, 6, 4)])
    # Kafka tombstones a group's target assignment before its epoch (createGroupTombstoneRecords).
    tombstones = [(k, None) for k, _ in reversed(consumer_group("g2", 3))]
    partition(image, "__consumer_offsets", 2, consumer_group("g2", 3), tombstones,
              [commit("g2", 0, 7, 3)])  # fmt: skip
    partition(image, "__consumer_offsets", 3, [commit("g3", 0, 8, 5)])
    folder = image / "__consumer_offsets-4"
    folder.mkdir()
    with SegmentWriter(folder / "00000000000000000000.log") as w:
        w.write_batch([commit("g4", 0, 9, 3)], producer_id=11, producer_epoch=0, transactional=True)
        w.write_control(ControlType.COMMIT, producer_id=11, producer_epoch=0)
    partition(image, "__consumer_offsets", 5, consumer_group("g5", 4))
    partition(image, "__transaction_state", 0, [transaction("t-a", 0, 21)],
              [transaction("t-b", 1, 22)], [transaction("t-c", 0, 23)])  # fmt: skip
    return image


def streams_group(group: str, epoch: int) -> list[tuple[bytes, bytes | None]]:
    """A streams group's own records: its epoch and its topology."""
    return [
        (
            key("StreamsGroupMetadataKey", group_id=group),
            value("StreamsGroupMetadataValue", 0, epoch=epoch),
        ),
        (
            key("StreamsGroupTopologyKey", group_id=group),
            value("StreamsGroupTopologyValue", 0, epoch=epoch),
        ),
    ]


def known_bugs(tmp_path: Path) -> Path:
    """A broker image whose ``__consumer_offsets`` partitions each hold, record by record, the
    order behind one known bug of the new group coordinator's replay, as log compaction leaves
    it (the order of Kafka's GroupCoordinatorShardCompactionReplayTest):

    - ``-0`` KAFKA-20254: a classic group migrated to a streams group; the cleaner removed the
      classic group's records and its tombstone, its offset commits stay first;
    - ``-1`` KAFKA-21117: a consumer group downgraded online to a classic group, then upgraded
      again; the cleaner removed the classic group's tombstone, so its record precedes the
      consumer group's;
    - ``-2`` KAFKA-21102: a member left; the cleaner removed its assignment's records and their
      tombstones, its metadata and that record's tombstone stay.
    """
    image = cluster(tmp_path, {"__consumer_offsets": 3}, 25)
    partition(image, "__consumer_offsets", 0, [commit("app", 0, 5, 3)], streams_group("app", 2))
    classic = (
        key("GroupMetadataKey", group="cg"),
        value("GroupMetadataValue", 3, protocol_type="consumer", generation=4, protocol="range"),
    )
    partition(image, "__consumer_offsets", 1, [classic], consumer_group("cg", 5))
    member = key("ConsumerGroupMemberMetadataKey", group_id="left", member_id="m-1")
    partition(
        image,
        "__consumer_offsets",
        2,
        [
            (
                key("ConsumerGroupMetadataKey", group_id="left"),
                value("ConsumerGroupMetadataValue", 0, epoch=3),
            )
        ],
        [(member, value("ConsumerGroupMemberMetadataValue", 0, client_id="c", client_host="h"))],
        [(member, None)],
    )
    return image
