"""``__cluster_metadata`` of the cluster (:mod:`spark_udfs.cluster`): the controller's log as a
combined broker and controller writes it (the sequence of a real 4.4.0 node: the leader's
control records, the bootstrap records in a transaction, the controller's and the broker's
registrations, the topics with their configs and partitions, producer id blocks, a group
config, a no-op every half second), its bootstrap snapshot and ``quorum-state``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from codegen.dumps.log_dir_writer import LogDir, PartitionLog
from codegen.dumps.model import ControlType
from codegen.dumps.writer import NewRecord, encode_record_batch
from spark_udfs.cluster.groups import MINUTE, SECOND
from spark_udfs.cluster.records import metadata_record

__all__ = ["BROKER_EPOCH", "FEATURES", "NODE_ID", "write_metadata_log"]

CLUSTER_METADATA: Final = "__cluster_metadata"
METADATA_TOPIC_ID: Final = uuid.UUID(int=1)
NODE_ID: Final = 1
BROKER_EPOCH: Final = 13
FEATURES: Final = {
    "metadata.version": 33,
    "eligible.leader.replicas.version": 1,
    "group.version": 1,
    "share.version": 2,
    "streams.version": 1,
    "transaction.version": 2,
}
"""What a Kafka 4.4 cluster is formatted with (a real 4.4.0 broker's bootstrap records)."""


def write_metadata_log(
    log_dir: LogDir,
    topic_ids: dict[str, uuid.UUID],
    partitions: dict[str, int],
    configs: dict[str, dict[str, str]],
    directory_id: uuid.UUID,
    start: int,
    end: int,
    producer_blocks: list[int],
) -> None:
    """The controller's log as a combined broker and controller writes it (a real 4.4.0
    node's sequence), and its bootstrap snapshot."""
    folder = log_dir.folder / f"{CLUSTER_METADATA}-0"
    log = PartitionLog(folder, METADATA_TOPIC_ID, leader_epoch=1)
    voters_record: tuple[int, str, dict[str, Any]] = (
        ControlType.KRAFT_VOTERS,
        "VotersRecord",
        dict(version=0, voters=[_voter(directory_id)]),
    )
    formatted = start - 30 * MINUTE
    _snapshot(folder, directory_id, formatted)
    began = start - 20 * MINUTE
    control: list[tuple[int, str, dict[str, Any]]] = [
        (
            ControlType.LEADER_CHANGE,
            "LeaderChangeMessage",
            dict(
                version=0,
                leader_id=NODE_ID,
                voters=[_leader_voter()],
                granting_voters=[_leader_voter()],
            ),
        ),
        (ControlType.KRAFT_VERSION, "KRaftVersionRecord", dict(version=0, k_raft_version=1)),
        voters_record,
    ]
    log.append(_control_batch(control, log.next_offset, began))
    bootstrap = [metadata_record("BeginTransactionRecord", 0, name="Bootstrap records")]
    bootstrap += [
        metadata_record("FeatureLevelRecord", 0, name=n, feature_level=v)
        for n, v in FEATURES.items()
    ]
    bootstrap.append(
        metadata_record(
            "ConfigRecord",
            0,
            resource_type=4,
            resource_name="",
            name="min.insync.replicas",
            value="1",
        )
    )
    bootstrap.append(metadata_record("EndTransactionRecord", 0))
    t = began + 70
    log.write_batch([(None, r) for r in bootstrap], timestamp=t)
    features = [
        _feature(n, v)
        for n, v in (
            ("group.version", 1),
            ("kraft.version", 1),
            ("metadata.version", 33),
            ("share.version", 2),
            ("streams.version", 1),
            ("transaction.version", 2),
            ("eligible.leader.replicas.version", 1),
        )
    ]
    log.write_batch(
        [
            (
                None,
                metadata_record(
                    "RegisterControllerRecord",
                    0,
                    controller_id=NODE_ID,
                    incarnation_id=uuid.UUID(int=11),
                    zk_migration_ready=False,
                    end_points=[_controller_endpoint()],
                    features=[_controller_feature(*f) for f in features],
                ),
            )
        ],
        timestamp=t + 120,
    )
    log.write_batch(
        [
            (
                None,
                metadata_record(
                    "RegisterBrokerRecord",
                    4,
                    broker_id=NODE_ID,
                    is_migrating_zk_broker=False,
                    incarnation_id=uuid.UUID(int=12),
                    broker_epoch=BROKER_EPOCH,
                    end_points=[_broker_endpoint()],
                    features=[_broker_feature(*f) for f in features],
                    rack=None,
                    fenced=True,
                    in_controlled_shutdown=False,
                    log_dirs=[directory_id],
                ),
            )
        ],
        timestamp=t + 300,
    )
    log.write_batch(
        [
            (
                None,
                metadata_record(
                    "BrokerRegistrationChangeRecord",
                    0,
                    broker_id=NODE_ID,
                    broker_epoch=BROKER_EPOCH,
                    fenced=-1,
                ),
            ),
            (
                None,
                metadata_record(
                    "BrokerRegistrationChangeRecord",
                    3,
                    broker_id=NODE_ID,
                    broker_epoch=BROKER_EPOCH,
                    cordoned_log_dirs=[],
                ),
            ),
        ],
        timestamp=t + 450,
    )
    events: list[tuple[int, list[bytes]]] = []
    created = began + 2 * MINUTE
    for n, (topic, count) in enumerate(partitions.items()):
        records = [metadata_record("TopicRecord", 0, name=topic, topic_id=topic_ids[topic])]
        records += [
            metadata_record(
                "ConfigRecord", 0, resource_type=2, resource_name=topic, name=k, value=v
            )
            for k, v in configs.get(topic, {}).items()
        ]
        records += [
            metadata_record(
                "PartitionRecord",
                2,
                partition_id=p,
                topic_id=topic_ids[topic],
                replicas=[NODE_ID],
                isr=[NODE_ID],
                removing_replicas=[],
                adding_replicas=[],
                leader=NODE_ID,
                leader_epoch=0,
                partition_epoch=0,
                directories=[directory_id],
            )
            for p in range(count)
        ]
        events.append((created + n * 1700, records))
    for n, block_start in enumerate(producer_blocks):
        events.append(
            (
                created + 90 * SECOND + n * SECOND,
                [
                    metadata_record(
                        "ProducerIdsRecord",
                        0,
                        broker_id=NODE_ID,
                        broker_epoch=BROKER_EPOCH,
                        next_producer_id=block_start + 1000,
                    )
                ],
            )
        )
    events.append(
        (
            start + (end - start) // 5,
            [
                metadata_record(
                    "ConfigRecord",
                    0,
                    resource_type=32,
                    resource_name="payment-service",
                    name="consumer.session.timeout.ms",
                    value="45000",
                )
            ],
        )
    )
    noop = metadata_record("NoOpRecord", 0)
    t = began + 800
    while t < end:
        events.append((t, [noop]))
        t += 500
    events.sort(key=lambda e: e[0])
    for when, records in events:
        log.write_batch([(None, r) for r in records], timestamp=when)
    log.close()
    (folder / "quorum-state").write_text(
        json.dumps(
            {
                "leaderId": NODE_ID,
                "leaderEpoch": 1,
                "votedId": -1,
                "votedDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA",
                "data_version": 1,
            },
            separators=(",", ":"),
        )
    )


def _voter(directory_id: uuid.UUID) -> Any:
    from generated.voters_record import Endpoint, KRaftVersionFeature, Voter

    return Voter(
        voter_id=NODE_ID,
        voter_directory_id=directory_id,
        endpoints=[Endpoint(name="CONTROLLER", host="kafka-1.shop.internal", port=9093)],
        k_raft_version_feature=KRaftVersionFeature(
            min_supported_version=0, max_supported_version=1
        ),
    )


def _leader_voter() -> Any:
    from generated.leader_change_message import Voter

    return Voter(voter_id=NODE_ID)


def _feature(name: str, level: int) -> tuple[str, int, int]:
    return name, 7 if name == "metadata.version" else 0, level


def _controller_feature(name: str, low: int, high: int) -> Any:
    from generated.register_controller_record import ControllerFeature

    return ControllerFeature(name=name, min_supported_version=low, max_supported_version=high)


def _broker_feature(name: str, low: int, high: int) -> Any:
    from generated.register_broker_record import BrokerFeature

    return BrokerFeature(name=name, min_supported_version=low, max_supported_version=high)


def _controller_endpoint() -> Any:
    from generated.register_controller_record import ControllerEndpoint

    return ControllerEndpoint(
        name="CONTROLLER", host="kafka-1.shop.internal", port=9093, security_protocol=0
    )


def _broker_endpoint() -> Any:
    from generated.register_broker_record import BrokerEndpoint

    return BrokerEndpoint(
        name="PLAINTEXT", host="kafka-1.shop.internal", port=9092, security_protocol=0
    )


def _control_batch(
    items: Sequence[tuple[int, str, dict[str, Any]]], base_offset: int, timestamp: int
) -> bytes:
    from generated import MESSAGES

    records = [
        NewRecord(struct_pack_control(kind), MESSAGES[name](**fields).encode(0))
        for kind, name, fields in items
    ]
    return encode_record_batch(
        records,
        base_offset=base_offset,
        timestamp=timestamp,
        control=True,
        partition_leader_epoch=1,
    )


def struct_pack_control(kind: int) -> bytes:
    return (0).to_bytes(2, "big") + int(kind).to_bytes(2, "big")


def _snapshot(folder: Path, directory_id: uuid.UUID, formatted: int) -> None:
    """The bootstrap snapshot ``00000000000000000000-0000000000.checkpoint``: header, the
    features the cluster was formatted with, footer."""
    from generated import MESSAGES

    head: list[tuple[int, str, dict[str, Any]]] = [
        (
            ControlType.SNAPSHOT_HEADER,
            "SnapshotHeaderRecord",
            dict(version=0, last_contained_log_timestamp=formatted - 15),
        ),
        (ControlType.KRAFT_VERSION, "KRaftVersionRecord", dict(version=0, k_raft_version=1)),
        (ControlType.KRAFT_VOTERS, "VotersRecord", dict(version=0, voters=[_voter(directory_id)])),
    ]
    parts = [_control_batch(head, 0, formatted)]
    features = [
        (None, metadata_record("FeatureLevelRecord", 0, name=n, feature_level=v))
        for n, v in FEATURES.items()
    ]
    parts.append(encode_record_batch(features, base_offset=3, timestamp=formatted + 19))
    footer = NewRecord(
        struct_pack_control(ControlType.SNAPSHOT_FOOTER),
        MESSAGES["SnapshotFooterRecord"](version=0).encode(0),
    )
    parts.append(
        encode_record_batch(
            [footer], base_offset=3 + len(features), timestamp=formatted + 21, control=True
        )
    )
    (folder / "00000000000000000000-0000000000.checkpoint").write_bytes(b"".join(parts))
