"""Synthesize a realistic ``__consumer_offsets`` dump (for the demo, tests and benchmarks).

One segment per partition (``<out>/__consumer_offsets-<p>/00000000000000000000.log``); each
group lives in one partition, as on a broker. The mix: offset commits of classic and
consumer-protocol groups (value v3 mostly, v1 with an expire timestamp, flexible v4 with a topic
id, a few records of value version 5, newer than the specs, with an unknown tagged field, and
some legacy type-0 keys), classic ``GroupMetadata`` records, consumer-group metadata, member and
assignment records, offset and group tombstones, and transactional offset commits closed by
COMMIT or ABORT markers. Some batches are LZ4-compressed.
"""

from __future__ import annotations

import random
import struct
import uuid
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codegen.dumps import Codec, ControlType, SegmentWriter
from generated import MESSAGES
from generated.group_metadata_value import MemberMetadata
from generated.offset_commit_value import OffsetCommitValue

__all__ = ["DumpStats", "write_consumer_offsets"]

_H = struct.Struct(">h")


@dataclass(slots=True)
class DumpStats:
    files: list[Path] = field(default_factory=list)
    records: int = 0
    batches: int = 0
    tombstones: int = 0
    newer: int = 0
    transactions: int = 0
    aborted: int = 0


def _key(name: str, **fields: Any) -> bytes:
    cls = MESSAGES[name]
    return _H.pack(cls.API_KEY or 0) + cls(**fields).encode(0)


def _value(name: str, version: int, **fields: Any) -> bytes:
    cls = MESSAGES[name]
    return _H.pack(version) + cls(**fields).encode(min(version, cls.HIGHEST_VERSION))


class _Partition:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.writer = SegmentWriter(path)
        self.path = path
        self.offsets: dict[tuple[str, str, int], int] = {}


def _commit_value(rnd: random.Random, stats: DumpStats, offset: int, ts: int) -> bytes:
    r = rnd.random()
    meta = "" if rnd.random() < 0.85 else rnd.choice(["checkpoint", "ünïcode", "m" * 20])
    if r < 0.05:
        return _value(
            "OffsetCommitValue",
            1,
            offset=offset,
            metadata=meta,
            commit_timestamp=ts,
            expire_timestamp=ts + 86_400_000,
        )
    if r < 0.15:
        return _value(
            "OffsetCommitValue",
            4,
            offset=offset,
            leader_epoch=rnd.randrange(10),
            metadata=meta,
            commit_timestamp=ts,
            topic_id=uuid.UUID(int=offset + 1),
        )
    if r < 0.18:
        stats.newer += 1
        v = OffsetCommitValue(
            offset=offset,
            leader_epoch=3,
            metadata=meta,
            commit_timestamp=ts,
            unknown_tags={9: b"\x01\x02"},
        )
        return _H.pack(5) + v.encode(4)
    return _value(
        "OffsetCommitValue",
        3,
        offset=offset,
        leader_epoch=-1 if r < 0.4 else 5,
        metadata=meta,
        commit_timestamp=ts,
    )


def _group_records(
    rnd: random.Random, group: str, consumer: bool, ts: int, topics: list[str]
) -> list[tuple[bytes, bytes | None]]:
    if not consumer:
        n = rnd.randrange(0, 4)
        members = [
            MemberMetadata(
                member_id=f"{group}-m{i}",
                client_id=f"client-{i}",
                client_host="/10.0.0.1",
                rebalance_timeout=30000,
                session_timeout=10000,
            )
            for i in range(n)
        ]
        value = _value(
            "GroupMetadataValue",
            3,
            protocol_type="consumer",
            generation=rnd.randrange(1, 50),
            protocol="range" if n else None,
            leader=members[0].member_id if n else None,
            current_state_timestamp=ts,
            members=members,
        )
        return [(_key("GroupMetadataKey", group=group), value)]
    epoch = rnd.randrange(1, 20)
    out: list[tuple[bytes, bytes | None]] = [
        (
            _key("ConsumerGroupMetadataKey", group_id=group),
            _value("ConsumerGroupMetadataValue", 0, epoch=epoch),
        )
    ]
    for i in range(rnd.randrange(1, 3)):
        member = f"{group}-member-{i}"
        out.append(
            (
                _key("ConsumerGroupMemberMetadataKey", group_id=group, member_id=member),
                _value(
                    "ConsumerGroupMemberMetadataValue",
                    0,
                    client_id=f"c{i}",
                    client_host="/10.0.0.2",
                    subscribed_topic_names=topics,
                    rebalance_timeout_ms=30000,
                    server_assignor="uniform",
                ),
            )
        )
        out.append(
            (
                _key("ConsumerGroupCurrentMemberAssignmentKey", group_id=group, member_id=member),
                _value(
                    "ConsumerGroupCurrentMemberAssignmentValue",
                    0,
                    member_epoch=epoch - rnd.randrange(0, 2),
                    previous_member_epoch=epoch - 1,
                ),
            )
        )
    return out


def write_consumer_offsets(
    out: Path,
    records: int = 1_000_000,
    partitions: int = 4,
    groups: int = 200,
    seed: int = 42,
    progress: Any = None,
) -> DumpStats:
    """Write ``records`` records over ``partitions`` segment files below ``out`` (the last batch
    is cut to fit); ``progress(written)`` is called at every tenth of them and at the end."""
    rnd = random.Random(seed)
    stats = DumpStats()
    parts = [
        _Partition(out / f"__consumer_offsets-{p}" / "00000000000000000000.log")
        for p in range(partitions)
    ]
    names = [f"{'cg' if i % 3 == 0 else 'classic'}-group-{i:04d}" for i in range(groups)]
    topics = [f"orders-{t}" for t in range(8)]
    home = {g: zlib.crc32(g.encode()) % partitions for g in names}
    subs = {g: rnd.sample(topics, rnd.randrange(1, 4)) for g in names}
    ts = 1_700_000_000_000
    producer = 1000
    step = max(records // 10, 1)
    next_report = step
    while stats.records < records:
        room = records - stats.records
        group = rnd.choice(names)
        consumer = group.startswith("cg")
        part = parts[home[group]]
        w = part.writer
        ts += rnd.randrange(1, 50)
        codec = Codec.LZ4 if rnd.random() < 0.1 else Codec.NONE
        r = rnd.random()
        if r < 0.04:
            batch = _group_records(rnd, group, consumer, ts, subs[group])[:room]
            if rnd.random() < 0.05 and not consumer:
                batch = [(_key("GroupMetadataKey", group=group), None)]
                stats.tombstones += 1
            w.write_batch(batch, timestamp=ts, codec=codec)
        else:
            batch = []
            transactional = r < 0.10 and room > 1  # its COMMIT or ABORT marker is a record too
            for _ in range(min(rnd.randrange(1, 40), room - transactional)):
                topic = rnd.choice(subs[group])
                p = rnd.randrange(12)
                k = (group, topic, p)
                if rnd.random() < 0.02:
                    batch.append(
                        (_key("OffsetCommitKey", group=group, topic=topic, partition=p), None)
                    )
                    stats.tombstones += 1
                    part.offsets.pop(k, None)
                    continue
                pos = part.offsets.get(k, 0) + rnd.randrange(1, 500)
                part.offsets[k] = pos
                if rnd.random() < 0.02:
                    batch.append(
                        (
                            _key("LegacyOffsetCommitKey", group=group, topic=topic, partition=p),
                            _value("LegacyOffsetCommitValue", 0, offset=pos, commit_timestamp=ts),
                        )
                    )
                    continue
                key = _key("OffsetCommitKey", group=group, topic=topic, partition=p)
                batch.append((key, _commit_value(rnd, stats, pos, ts)))
            if transactional:
                producer += 1
                w.write_batch(
                    batch,
                    timestamp=ts,
                    codec=codec,
                    producer_id=producer,
                    producer_epoch=0,
                    base_sequence=0,
                    transactional=True,
                )
                commit = rnd.random() < 0.8
                w.write_control(
                    ControlType.COMMIT if commit else ControlType.ABORT,
                    timestamp=ts + 1,
                    producer_id=producer,
                    producer_epoch=0,
                    coordinator_epoch=7,
                )
                stats.transactions += 1
                stats.aborted += 0 if commit else 1
                stats.records += 1
                stats.batches += 1
            else:
                w.write_batch(batch, timestamp=ts, codec=codec)
        stats.records += len(batch)
        stats.batches += 1
        if progress is not None and stats.records >= min(next_report, records):
            progress(stats.records)
            next_report = (stats.records // step + 1) * step
    for part in parts:
        part.writer.close()
        stats.files.append(part.path)
    return stats
