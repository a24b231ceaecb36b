"""Records as a Kafka 4.4 broker writes them, made with the generated codecs (for synthesized
clusters: :mod:`spark_udfs.cluster`).

- the group coordinator's (``__consumer_offsets``): offset commits (``OffsetCommitValue`` v4 with
  the topic id, as a 4.x client's commit is stored; v3 from older clients); a classic group's
  ``GroupMetadata`` after each rebalance, its members' consumer-protocol subscription and
  assignment inside; a consumer group's records for a member joining, a member leaving and the
  conversion of a classic group (KIP-848), in the order a 4.4 coordinator writes them;
- the transaction coordinator's ``TransactionLog`` records (``__transaction_state``);
- ``__cluster_metadata``'s records, framed (frame version, record type, version) as the
  controller writes them, and its KRaft control records.

Which partition of ``__consumer_offsets`` or ``__transaction_state`` holds a group or a
transactional id is Kafka's rule: the Java ``String.hashCode`` of the id, its sign bit cleared,
modulo the partition count (:func:`coordinator_partition`).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

from generated import MESSAGES
from generated.consumer_group_current_member_assignment_value import TopicPartitions
from generated.consumer_group_member_metadata_value import ClassicMemberMetadata, ClassicProtocol
from generated.consumer_group_target_assignment_member_value import TopicPartition
from generated.consumer_protocol_assignment import TopicPartition as AssignedPartitions
from generated.consumer_protocol_subscription import TopicPartition as OwnedPartitions
from generated.group_metadata_value import MemberMetadata
from generated.offset_commit_value import OffsetCommitValue
from generated.transaction_log_value import PartitionsSchema

__all__ = [
    "ClassicMember",
    "ConsumerMember",
    "Record",
    "classic_to_consumer",
    "commit_values",
    "consumer_group_join",
    "consumer_group_leave",
    "coordinator_partition",
    "group_metadata",
    "key",
    "metadata_record",
    "offset_commit_key",
    "transaction_record",
    "value",
]

Record = tuple[bytes, bytes | None]
"""A record's key and value (None: a tombstone)."""

_H: Final = struct.Struct(">h")
_Q: Final = struct.Struct(">q")
CONSUMER_PROTOCOL_VERSION: Final = 3
"""The consumer-protocol subscription and assignment version of 3.x and 4.x clients."""
TRANSACTION_STATUS: Final = {
    "Empty": 0,
    "Ongoing": 1,
    "PrepareCommit": 2,
    "PrepareAbort": 3,
    "CompleteCommit": 4,
    "CompleteAbort": 5,
    "Dead": 6,
    "PrepareEpochFence": 7,
}
ASSIGNED_STABLE: Final = 0
"""``ConsumerGroupCurrentMemberAssignmentValue.State``: 0 stable, 1 unrevoked partitions, 2
unreleased partitions."""


def coordinator_partition(coordinator_key: str, partitions: int) -> int:
    """Kafka's ``Utils.abs(key.hashCode()) % partitions``: the Java String hash of the UTF-16
    code units, masked to 31 bits."""
    units = coordinator_key.encode("utf-16-be")
    h = 0
    for (unit,) in struct.iter_unpack(">H", units):
        h = (31 * h + unit) & 0xFFFFFFFF
    return (h & 0x7FFFFFFF) % partitions


def key(name: str, **fields: Any) -> bytes:
    """A coordinator record's key: its record type (int16), then the key message at version 0."""
    cls = MESSAGES[name]
    return _H.pack(cls.API_KEY or 0) + cls(**fields).encode(0)


def value(name: str, version: int, **fields: Any) -> bytes:
    """A coordinator record's value: its version (int16), then the value message."""
    return _H.pack(version) + MESSAGES[name](**fields).encode(version)


@lru_cache(maxsize=1 << 14)
def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    """Keys repeat with every commit: made once."""
    return key("OffsetCommitKey", group=group, topic=topic, partition=partition)


def commit_values(
    offsets: Sequence[int],
    *,
    commit_timestamp: int,
    topic_id: uuid.UUID | None,
    metadata: str = "",
    leader_epoch: int = 0,
) -> list[bytes]:
    """The values of one commit's offsets: ``OffsetCommitValue`` v4 with ``topic_id`` (a client
    that commits with topic ids, 4.x), v3 without. The value of the first offset is encoded by
    the codec; the others differ only in the offset, the first field of every version, which
    is written over that value's bytes (``tests/test_cluster.py`` checks them against the
    codec)."""
    version = 3 if topic_id is None else 4
    fields: dict[str, Any] = {"leader_epoch": leader_epoch, "metadata": metadata}
    if topic_id is not None:
        fields["topic_id"] = topic_id
    if not offsets:
        return []
    first = OffsetCommitValue(offset=offsets[0], commit_timestamp=commit_timestamp, **fields)
    head = _H.pack(version)
    tail = first.encode(version)[8:]
    return [head + _Q.pack(offset) + tail for offset in offsets]


# -- classic groups -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClassicMember:
    """A member of a classic group, as its JoinGroup and the leader's assignment left it."""

    member_id: str
    client_id: str
    assignment: Mapping[str, Sequence[int]]
    """Topic -> partitions assigned in this generation."""
    topics: Sequence[str]
    owned: Mapping[str, Sequence[int]] = field(default_factory=dict)
    """What it owned going into the rebalance (cooperative assignors; empty for eager)."""
    generation_id: int = -1
    """The generation it last belonged to (-1 when new)."""
    client_host: str = "/10.0.0.1"
    instance_id: str | None = None
    rack_id: str | None = None
    session_timeout: int = 45000
    rebalance_timeout: int = 300000

    def subscription(self) -> bytes:
        body = MESSAGES["ConsumerProtocolSubscription"](
            topics=list(self.topics),
            owned_partitions=[
                OwnedPartitions(topic=t, partitions=list(ps)) for t, ps in self.owned.items()
            ],
            generation_id=self.generation_id,
            rack_id=self.rack_id,
        )
        return _H.pack(CONSUMER_PROTOCOL_VERSION) + body.encode(CONSUMER_PROTOCOL_VERSION)

    def assignment_bytes(self) -> bytes:
        body = MESSAGES["ConsumerProtocolAssignment"](
            assigned_partitions=[
                AssignedPartitions(topic=t, partitions=list(ps))
                for t, ps in self.assignment.items()
            ]
        )
        return _H.pack(CONSUMER_PROTOCOL_VERSION) + body.encode(CONSUMER_PROTOCOL_VERSION)


def group_metadata(
    group: str,
    *,
    generation: int,
    protocol: str | None,
    members: Sequence[ClassicMember],
    timestamp: int,
    protocol_type: str = "consumer",
) -> Record:
    """A classic group's ``GroupMetadata`` (value v3) after a rebalance; an empty group (no
    members) has no protocol and no leader. The group's first record, before any member,
    has protocol type "" and generation 0, as a 4.4 coordinator writes it."""
    value_fields = {
        "protocol_type": protocol_type,
        "generation": generation,
        "protocol": protocol if members else None,
        "leader": members[0].member_id if members else None,
        "current_state_timestamp": timestamp,
        "members": [
            MemberMetadata(
                member_id=m.member_id,
                group_instance_id=m.instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout,
                session_timeout=m.session_timeout,
                subscription=m.subscription(),
                assignment=m.assignment_bytes(),
            )
            for m in members
        ],
    }
    return key("GroupMetadataKey", group=group), value("GroupMetadataValue", 3, **value_fields)


# -- consumer groups (KIP-848) ---------------------------------------------------------------


@dataclass(slots=True)
class ConsumerMember:
    """A member of a consumer group: what its heartbeats told the coordinator."""

    member_id: str
    client_id: str
    topics: Sequence[str]
    client_host: str = "/10.0.0.2"
    rack_id: str | None = None
    server_assignor: str | None = "uniform"
    rebalance_timeout_ms: int = 300000
    classic: ClassicMember | None = None
    """A classic member carried over when its group converted (it heartbeats with JoinGroup)."""
    epoch: int = 0
    assigned: dict[uuid.UUID, list[int]] = field(default_factory=dict)

    def metadata_value(self) -> bytes:
        classic = None
        if self.classic is not None:
            classic = ClassicMemberMetadata(
                session_timeout_ms=self.classic.session_timeout,
                supported_protocols=[
                    ClassicProtocol(name="range", metadata=self.classic.subscription())
                ],
            )
        return value(
            "ConsumerGroupMemberMetadataValue",
            0,
            instance_id=None,
            rack_id=self.rack_id,
            client_id=self.client_id,
            client_host=self.client_host,
            subscribed_topic_names=list(self.topics),
            subscribed_topic_regex="",
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            server_assignor=self.server_assignor,
            classic_member_metadata=classic,
        )


def _group_key(name: str, group: str, member: str | None = None) -> bytes:
    if member is None:
        return key(name, group_id=group)
    return key(name, group_id=group, member_id=member)


def _target(
    group: str, member: ConsumerMember, target: Mapping[uuid.UUID, Sequence[int]]
) -> Record:
    return (
        _group_key("ConsumerGroupTargetAssignmentMemberKey", group, member.member_id),
        value(
            "ConsumerGroupTargetAssignmentMemberValue",
            0,
            topic_partitions=[
                TopicPartition(topic_id=t, partitions=list(ps)) for t, ps in target.items()
            ],
        ),
    )


def _current(group: str, member: ConsumerMember, previous_epoch: int) -> Record:
    return (
        _group_key("ConsumerGroupCurrentMemberAssignmentKey", group, member.member_id),
        value(
            "ConsumerGroupCurrentMemberAssignmentValue",
            0,
            member_epoch=member.epoch,
            previous_member_epoch=previous_epoch,
            state=ASSIGNED_STABLE,
            assigned_partitions=[
                TopicPartitions(
                    topic_id=t, partitions=list(ps), assignment_epochs=[member.epoch] * len(ps)
                )
                for t, ps in member.assigned.items()
            ],
            partitions_pending_revocation=[],
        ),
    )


def _epoch_records(
    group: str,
    epoch: int,
    metadata_hash: int,
    members: Sequence[ConsumerMember],
    targets: Mapping[str, Mapping[uuid.UUID, Sequence[int]]],
    timestamp: int,
) -> list[Record]:
    """A new group epoch: the group's metadata, each member's new target assignment, the
    target's epoch, then each member's current assignment at the new epoch (the members have
    reconciled: their partitions are the target's)."""
    out: list[Record] = [
        (
            _group_key("ConsumerGroupMetadataKey", group),
            value("ConsumerGroupMetadataValue", 0, epoch=epoch, metadata_hash=metadata_hash),
        )
    ]
    out += [_target(group, m, targets[m.member_id]) for m in members]
    out.append(
        (
            _group_key("ConsumerGroupTargetAssignmentMetadataKey", group),
            value(
                "ConsumerGroupTargetAssignmentMetadataValue",
                0,
                assignment_epoch=epoch,
                assignment_timestamp=timestamp,
            ),
        )
    )
    for m in members:
        previous = m.epoch
        m.epoch, m.assigned = epoch, {t: list(ps) for t, ps in targets[m.member_id].items()}
        out.append(_current(group, m, previous))
    return out


def consumer_group_join(
    group: str,
    joining: ConsumerMember,
    members: Sequence[ConsumerMember],
    epoch: int,
    targets: Mapping[str, Mapping[uuid.UUID, Sequence[int]]],
    timestamp: int,
    metadata_hash: int,
) -> list[Record]:
    """``joining`` joins (``members`` are the members after it joined): its member metadata,
    then the new epoch's records (:func:`_epoch_records`)."""
    head = (
        _group_key("ConsumerGroupMemberMetadataKey", group, joining.member_id),
        joining.metadata_value(),
    )
    return [head, *_epoch_records(group, epoch, metadata_hash, members, targets, timestamp)]


def consumer_group_leave(
    group: str,
    leaving: ConsumerMember,
    members: Sequence[ConsumerMember],
    epoch: int,
    targets: Mapping[str, Mapping[uuid.UUID, Sequence[int]]],
    timestamp: int,
    metadata_hash: int,
) -> list[Record]:
    """``leaving`` leaves: tombstones of its current assignment, target and metadata, then the
    new epoch's records of the members left (only the epoch, for a group left empty)."""
    out: list[Record] = [
        (_group_key("ConsumerGroupCurrentMemberAssignmentKey", group, leaving.member_id), None),
        (_group_key("ConsumerGroupTargetAssignmentMemberKey", group, leaving.member_id), None),
        (_group_key("ConsumerGroupMemberMetadataKey", group, leaving.member_id), None),
    ]
    out += _epoch_records(
        group, epoch, metadata_hash if members else 0, members, targets, timestamp
    )
    return out


def classic_to_consumer(
    group: str,
    classic: Sequence[ConsumerMember],
    generation: int,
    targets: Mapping[str, Mapping[uuid.UUID, Sequence[int]]],
    timestamp: int,
    metadata_hash: int,
) -> list[Record]:
    """A classic group converted to a consumer group as its first consumer-protocol member
    joins (KIP-848's online upgrade): the classic group's record deleted, then its members
    carried over (each with its ``ClassicMemberMetadata``) at an epoch equal to the classic
    generation. The joining member follows with :func:`consumer_group_join`."""
    out: list[Record] = [(key("GroupMetadataKey", group=group), None)]
    out += [
        (_group_key("ConsumerGroupMemberMetadataKey", group, m.member_id), m.metadata_value())
        for m in classic
    ]
    for m in classic:
        m.epoch = generation  # they arrive with the classic generation as their epoch
    out += _epoch_records(group, generation, metadata_hash, classic, targets, timestamp)
    return out


# -- the transaction coordinator -----------------------------------------------------------


def transaction_record(
    transactional_id: str,
    *,
    producer_id: int,
    epoch: int,
    status: str,
    partitions: Mapping[str, Sequence[int]] | None,
    timeout_ms: int,
    last_update: int,
    start: int,
) -> Record:
    """A ``TransactionLog`` record (value v1, flexible, transaction version 2)."""
    return (
        key("TransactionLogKey", transactional_id=transactional_id),
        value(
            "TransactionLogValue",
            1,
            producer_id=producer_id,
            previous_producer_id=producer_id,
            producer_epoch=epoch,
            transaction_timeout_ms=timeout_ms,
            transaction_status=TRANSACTION_STATUS[status],
            transaction_partitions=(
                None
                if partitions is None
                else [
                    PartitionsSchema(topic=t, partition_ids=list(ps))
                    for t, ps in partitions.items()
                ]
            ),
            transaction_last_update_timestamp_ms=last_update,
            transaction_start_timestamp_ms=start,
            client_transaction_version=2,
        ),
    )


# -- __cluster_metadata ------------------------------------------------------------------


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def metadata_record(record: str, version: int = 0, /, **fields: Any) -> bytes:
    """A ``__cluster_metadata`` record value: frame version 1, the record type and the version
    as unsigned varints, then the record (records have no key)."""
    cls = MESSAGES[record]
    return (
        _uvarint(1) + _uvarint(cls.API_KEY or 0) + _uvarint(version) + cls(**fields).encode(version)
    )
