"""The consumer groups of the synthesized cluster (:mod:`spark_udfs.cluster`) and what they do
over its hour: each group's rebalances and commits as ``__consumer_offsets`` batches, in the
order and shape a Kafka 4.4 group coordinator writes them (:mod:`spark_udfs.cluster.records`).

A group's commits hold each assigned partition's position at the commit time: a consumer that
keeps up is where the partition's log end was a moment before (:class:`DataLog.end_at`); the
story's groups deviate from that on purpose (:func:`story_groups`).
"""

from __future__ import annotations

import base64
import bisect
import heapq
import random
import uuid
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final

from spark_udfs.cluster.records import (
    ClassicMember,
    ConsumerMember,
    Record,
    classic_to_consumer,
    commit_values,
    consumer_group_join,
    consumer_group_leave,
    coordinator_partition,
    group_metadata,
    offset_commit_key,
)

__all__ = ["Batch", "DataLog", "GroupSim", "Story", "TopicPartition"]

TopicPartition = tuple[str, int]
Position = Callable[[TopicPartition, int], int]
"""A consumer's position on a partition at a time (epoch ms)."""

SECOND: Final = 1000
MINUTE: Final = 60 * SECOND


@dataclass(slots=True)
class Batch:
    """One ``__consumer_offsets`` batch to write: at ``time``, in ``partition``, its records;
    transactional ones carry their producer, a marker its type instead of records."""

    time: int
    partition: int
    records: list[Record]
    producer: tuple[int, int, int] | None = None
    """(producer id, epoch, base sequence) of a transactional batch."""
    marker: tuple[int, int, int, int] | None = None
    """(control type, producer id, epoch, coordinator epoch) of a COMMIT or ABORT marker."""

    @property
    def size(self) -> int:
        return 1 if self.marker is not None else len(self.records)


@dataclass(slots=True)
class DataLog:
    """A data partition's log end over time: after each batch (its newest timestamp), the
    offset one past it; with ``stable_until`` and ``stuck_at``, the last stable offset a
    ``read_committed`` consumer stops at from a time on (a transaction that never ends)."""

    times: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    stuck_from: int | None = None
    stuck_at: int | None = None

    def end_at(self, t: int) -> int:
        i = bisect.bisect_right(self.times, t)
        return self.ends[i - 1] if i else 0

    def stable_at(self, t: int) -> int:
        end = self.end_at(t)
        if self.stuck_from is not None and self.stuck_at is not None and t >= self.stuck_from:
            return min(end, self.stuck_at)
        return end


@dataclass(slots=True)
class Story:
    """What the groups read and where their records go."""

    rnd: random.Random
    start: int
    end: int
    offsets_partitions: int
    data: dict[TopicPartition, DataLog]
    topic_ids: dict[str, uuid.UUID]
    partitions: dict[str, int]
    batches: list[Batch] = field(default_factory=list)

    def at(self, fraction: float) -> int:
        return self.start + int((self.end - self.start) * fraction)

    def tps(self, *topics: str) -> list[TopicPartition]:
        return [(t, p) for t in topics for p in range(self.partitions[t])]

    def keeps_up(self, delay_ms: int) -> Position:
        return lambda tp, t: self.data[tp].end_at(t - delay_ms)


def _range_assign(
    members: Sequence[str], tps: Sequence[TopicPartition]
) -> dict[str, list[TopicPartition]]:
    """The range assignor: per topic, contiguous partitions to the members in id order."""
    out: dict[str, list[TopicPartition]] = {m: [] for m in members}
    ordered = sorted(members)
    by_topic: dict[str, list[TopicPartition]] = {}
    for tp in tps:
        by_topic.setdefault(tp[0], []).append(tp)
    for topic_tps in by_topic.values():
        share, extra = divmod(len(topic_tps), len(ordered))
        at = 0
        for i, m in enumerate(ordered):
            n = share + (1 if i < extra else 0)
            out[m].extend(topic_tps[at : at + n])
            at += n
    return out


def _round_robin(
    members: Sequence[str], tps: Sequence[TopicPartition]
) -> dict[str, list[TopicPartition]]:
    """Partitions dealt to the members in turn (the uniform and cooperative-sticky
    assignors' result for members with the same subscription)."""
    ordered = sorted(members)
    out: dict[str, list[TopicPartition]] = {m: [] for m in ordered}
    for i, tp in enumerate(sorted(tps)):
        out[ordered[i % len(ordered)]].append(tp)
    return out


def _by_topic(tps: Sequence[TopicPartition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for t, p in tps:
        out.setdefault(t, []).append(p)
    return out


class GroupSim:
    """One group: its members, their assignment, and the batches its coordinator writes."""

    def __init__(
        self,
        story: Story,
        name: str,
        topics: Sequence[str],
        *,
        protocol: str = "consumer",
        assignor: str = "range",
        topic_ids: bool = True,
    ) -> None:
        self.story = story
        self.name = name
        self.topics = list(topics)
        self.tps = story.tps(*topics)
        self.partition = coordinator_partition(name, story.offsets_partitions)
        self.protocol = protocol
        """``classic`` or ``consumer`` (KIP-848)."""
        self.assignor = assignor
        self.topic_ids = topic_ids
        """Commits with topic ids (OffsetCommitValue v4: 4.x clients), else v3."""
        self.generation = 0
        self.epoch = 0
        self.members: list[str] = []
        self.consumers: dict[str, ConsumerMember] = {}
        self.assignment: dict[str, list[TopicPartition]] = {}
        self.clients: dict[str, str] = {}
        self._serial = 0

    # -- membership ----------------------------------------------------------------------

    def _member_id(self, client: str) -> str:
        if self.protocol == "classic":
            return f"{client}-{uuid.UUID(int=self.story.rnd.getrandbits(128))}"
        raw = uuid.UUID(int=self.story.rnd.getrandbits(128)).bytes
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    def _assign(self) -> dict[str, list[TopicPartition]]:
        if not self.members:
            return {}
        if self.protocol == "classic" and self.assignor == "range":
            return _range_assign(self.members, self.tps)
        return _round_robin(self.members, self.tps)

    def _emit(self, t: int, records: list[Record]) -> None:
        self.story.batches.append(Batch(t, self.partition, records))

    def _classic_record(self, t: int, previous: dict[str, list[TopicPartition]]) -> Record:
        members = [
            ClassicMember(
                member_id=m,
                client_id=self.clients[m],
                assignment=_by_topic(self.assignment[m]),
                topics=self.topics,
                owned=_by_topic(previous.get(m, []))
                if self.assignor == "cooperative-sticky"
                else {},
                generation_id=self.generation - 1 if m in previous else -1,
            )
            for m in self.members
        ]
        return group_metadata(
            self.name,
            generation=self.generation,
            protocol=self.assignor,
            members=members,
            timestamp=t,
        )

    def _targets(self) -> dict[str, dict[uuid.UUID, list[int]]]:
        ids = self.story.topic_ids
        return {
            m: {ids[t]: ps for t, ps in _by_topic(self.assignment[m]).items()} for m in self.members
        }

    def _hash(self) -> int:
        h = 1469598103934665603
        for t in self.topics:
            for b in t.encode():
                h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
        return h - (1 << 64) if h >= 1 << 63 else h

    def join(self, t: int, client: str) -> str:
        """A member joins: a classic group rebalances (the group's first record is an empty
        one at generation 0, as the coordinator writes it on the first JoinGroup); a consumer
        group bumps its epoch."""
        member = self._member_id(client)
        self.clients[member] = client
        previous = dict(self.assignment)
        self.members.append(member)
        self.assignment = self._assign()
        if self.protocol == "classic":
            if self.generation == 0:
                self._emit(
                    t - 15,
                    [
                        group_metadata(
                            self.name,
                            generation=0,
                            protocol=None,
                            members=[],
                            timestamp=t - 15,
                            protocol_type="",
                        )
                    ],
                )
            self.generation += 1
            self._emit(t, [self._classic_record(t, previous)])
        else:
            self.epoch += 1
            joining = ConsumerMember(member, client, self.topics)
            self.consumers[member] = joining
            records = consumer_group_join(
                self.name,
                joining,
                [self.consumers[m] for m in self.members],
                self.epoch,
                self._targets(),
                t,
                self._hash(),
            )
            self._emit(t, records)
        return member

    def leave(self, t: int, member: str) -> None:
        previous = dict(self.assignment)
        self.members.remove(member)
        self.assignment = self._assign()
        if self.protocol == "classic":
            self.generation += 1
            self._emit(t, [self._classic_record(t, previous)])
        else:
            self.epoch += 1
            leaving = self.consumers.pop(member)
            records = consumer_group_leave(
                self.name,
                leaving,
                [self.consumers[m] for m in self.members],
                self.epoch,
                self._targets(),
                t,
                self._hash(),
            )
            self._emit(t, records)

    def convert_to_consumer(self, t: int, client: str) -> str:
        """A classic group's first consumer-protocol member joins: the group becomes a
        consumer group, its classic members carried over (KIP-848's online upgrade)."""
        assert self.protocol == "classic"
        carried = [
            ConsumerMember(
                m,
                self.clients[m],
                self.topics,
                server_assignor=None,
                rebalance_timeout_ms=300000,
                classic=ClassicMember(
                    m, self.clients[m], _by_topic(self.assignment[m]), self.topics
                ),
            )
            for m in self.members
        ]
        self.protocol = "consumer"
        self.consumers = {c.member_id: c for c in carried}
        self.epoch = self.generation
        records = classic_to_consumer(
            self.name, carried, self.generation, self._targets(), t, self._hash()
        )
        self._emit(t, records)
        return self.join(t, client)

    # -- commits ---------------------------------------------------------------------------

    def commit_batch(
        self, t: int, tps: Sequence[TopicPartition], position: Position, metadata: str = ""
    ) -> Batch:
        """The batch of one commit of ``tps`` at ``t`` (their positions then)."""
        ids = self.story.topic_ids
        records: list[Record] = []
        for topic, parts in _by_topic(tps).items():
            offsets = [position((topic, p), t) for p in parts]
            values = commit_values(
                offsets,
                commit_timestamp=t,
                topic_id=ids[topic] if self.topic_ids else None,
                metadata=metadata,
            )
            records += [
                (offset_commit_key(self.name, topic, p), v)
                for p, v in zip(parts, values, strict=True)
            ]
        return Batch(t, self.partition, records)

    def commit(
        self, t: int, tps: Sequence[TopicPartition], position: Position, metadata: str = ""
    ) -> None:
        if tps:
            self.story.batches.append(self.commit_batch(t, tps, position, metadata))

    def run(
        self,
        start: int,
        end: int,
        interval: int,
        position: Position,
        *,
        skip: Callable[[int], bool] | None = None,
    ) -> None:
        """Every member commits its partitions every ``interval`` ms (each at its own phase)
        from ``start`` to ``end``; ``skip(t)`` drops a commit (one refused mid-rebalance)."""
        rnd = self.story.rnd
        for i, member in enumerate(list(self.members)):
            t = (
                start
                + (i * interval) // max(len(self.members), 1)
                + rnd.randrange(interval // 4 + 1)
            )
            while t < end:
                if member in self.assignment and (skip is None or not skip(t)):
                    self.commit(t, self.assignment[member], position)
                t += interval + rnd.randrange(-interval // 20, interval // 20 + 1)


def story_groups(story: Story) -> dict[str, str]:
    """The story's groups, each doing what it is there to show; returns group -> what it
    shows (for the demo and the tests)."""
    rnd = story.rnd
    s = story
    shown: dict[str, str] = {}
    five = 5 * SECOND

    # order-service: a classic group (range) that keeps up; a rolling deploy at 45 %.
    g = GroupSim(s, "order-service", ["orders"], protocol="classic", assignor="range")
    a = g.join(s.at(0.0) + 2 * SECOND, "order-service-a")
    b = g.join(s.at(0.0) + 9 * SECOND, "order-service-b")
    c = g.join(s.at(0.0) + 17 * SECOND, "order-service-c")
    keeps_up = s.keeps_up(400)
    g.run(s.at(0.0) + 20 * SECOND, s.at(0.45), five, keeps_up)
    deploy = s.at(0.45)
    for n, (m, client) in enumerate(
        ((a, "order-service-a"), (b, "order-service-b"), (c, "order-service-c"))
    ):
        g.leave(deploy + n * 40 * SECOND, m)
        g.join(deploy + n * 40 * SECOND + 12 * SECOND, client)
    g.run(deploy + 130 * SECOND, s.end, five, keeps_up)
    shown[g.name] = "a classic group that keeps up (a rolling deploy at 45 %)"

    # shipping-service: a consumer group (KIP-848) whose epochs move forward as members come
    # and go.
    g = GroupSim(s, "shipping-service", ["orders"], protocol="consumer")
    first = g.join(s.at(0.0) + 4 * SECOND, "shipping-service-1")
    g.join(s.at(0.0) + 6 * SECOND, "shipping-service-2")
    g.run(s.at(0.0) + 10 * SECOND, s.at(0.3), five, keeps_up)
    g.join(s.at(0.3), "shipping-service-3")
    g.run(s.at(0.3) + 2 * SECOND, s.at(0.8), five, keeps_up)
    g.leave(s.at(0.8), first)
    g.run(s.at(0.8) + 2 * SECOND, s.end, five, keeps_up)
    shown[g.name] = "a consumer group (KIP-848): members join and leave, epochs move forward"

    # analytics-etl: falls behind (half the producers' speed from 30 % to 50 %), then
    # catches up at two and a half times their speed.
    g = GroupSim(s, "analytics-etl", ["orders"], protocol="consumer")
    for n in range(3):
        g.join(s.at(0.0) + (3 + n) * SECOND, f"analytics-etl-{n}")
    slow_from, slow_to = s.at(0.30), s.at(0.50)
    behind: dict[TopicPartition, tuple[int, int]] = {}

    def falling_behind(tp: TopicPartition, t: int) -> int:
        end = s.data[tp].end_at(t - 500)
        last_t, pos = behind.get(tp, (t, end))
        if t < slow_from:
            pos = end
        else:
            rate = (s.data[tp].end_at(t) - s.data[tp].end_at(t - MINUTE)) / MINUTE
            speed = 0.5 if t < slow_to else 2.5
            pos = min(end, pos + int(speed * rate * (t - last_t)))
        behind[tp] = (t, pos)
        return pos

    g.run(s.at(0.0) + 8 * SECOND, s.end, five, falling_behind)
    shown[g.name] = "falls behind from 30 % to 50 % of the hour, then catches up"

    # recommendations: a rebalance storm (members time out and rejoin) from 20 % to 30 %.
    g = GroupSim(
        s, "recommendations", ["clickstream"], protocol="classic", assignor="cooperative-sticky"
    )
    clients = [f"recommendations-{n}" for n in range(4)]
    ids = {cl: g.join(s.at(0.0) + (5 + 2 * n) * SECOND, cl) for n, cl in enumerate(clients)}
    storm_from, storm_to = s.at(0.20), s.at(0.30)
    t = storm_from
    while t < storm_to:
        victim = rnd.choice(clients)
        g.leave(t, ids[victim])
        ids[victim] = g.join(t + rnd.randrange(3, 9) * SECOND, victim)
        t += rnd.randrange(12, 30) * SECOND

    def in_storm(t: int) -> bool:
        return storm_from <= t < storm_to + 20 * SECOND and rnd.random() < 0.7

    g.run(s.at(0.0) + 12 * SECOND, s.end, five, keeps_up, skip=in_storm)
    shown[g.name] = "a rebalance storm from 20 % to 30 %: members time out and rejoin"

    # inventory-sync: a classic group migrated to the consumer protocol at 50 % (KIP-848).
    g = GroupSim(s, "inventory-sync", ["inventory"], protocol="classic", assignor="range")
    old = [g.join(s.at(0.0) + (7 + n) * SECOND, f"inventory-sync-{n}") for n in range(2)]
    g.run(s.at(0.0) + 10 * SECOND, s.at(0.5), five, keeps_up)
    new_a = g.convert_to_consumer(s.at(0.5), "inventory-sync-0")
    g.leave(s.at(0.5) + 3 * SECOND, old[0])
    g.run(s.at(0.5) + 4 * SECOND, s.at(0.52), five, keeps_up)
    g.join(s.at(0.52), "inventory-sync-1")
    g.leave(s.at(0.52) + 3 * SECOND, old[1])
    g.run(s.at(0.52) + 4 * SECOND, s.end, five, keeps_up)
    del new_a
    shown[g.name] = "moved from the classic protocol to the consumer protocol at 50 %"

    # search-indexer: always a little behind, rewound 20 minutes by an operator 40 s
    # before the end (its group emptied, the offsets reset, its members back).
    g = GroupSim(
        s, "search-indexer", ["inventory"], protocol="classic", assignor="cooperative-sticky"
    )
    members = [g.join(s.at(0.0) + (11 + n) * SECOND, f"search-indexer-{n}") for n in range(2)]
    stop = s.end - 50 * SECOND
    g.run(s.at(0.0) + 15 * SECOND, stop - 2 * SECOND, five, s.keeps_up(6 * SECOND))
    for m in members:
        g.leave(stop, m)
    reset_to = {tp: s.data[tp].end_at(s.end - 20 * MINUTE) for tp in g.tps}
    g.commit(stop + 6 * SECOND, g.tps, lambda tp, t: reset_to[tp])
    for n in range(2):
        g.join(s.end - 41 * SECOND + n * SECOND, f"search-indexer-{n}")
    rewound_at = s.end - 38 * SECOND

    def replaying(tp: TopicPartition, t: int) -> int:
        return min(s.data[tp].end_at(t - 6 * SECOND), reset_to[tp] + (t - rewound_at) // 40)

    g.run(rewound_at, s.end, five, replaying)
    shown[g.name] = "rewound 20 minutes by an operator 40 s before the end"

    # email-notifier: a little behind, then its only consumer stops at 60 %.
    g = GroupSim(s, "email-notifier", ["shipments"], protocol="classic", assignor="range")
    m = g.join(s.at(0.0) + 13 * SECOND, "email-notifier")
    g.run(s.at(0.0) + 15 * SECOND, s.at(0.6), five, s.keeps_up(4 * SECOND))
    g.leave(s.at(0.6) + 45 * SECOND, m)
    shown[g.name] = "its consumer stops at 60 %: no commit since"

    # console-consumer-...: someone's console consumer, then the group deleted.
    name = f"console-consumer-{rnd.randrange(10000, 99999)}"
    g = GroupSim(s, name, ["audit-log"], protocol="classic", assignor="range", topic_ids=False)
    m = g.join(s.at(0.35), "console-consumer")
    g.run(s.at(0.35) + 3 * SECOND, s.at(0.37), five, keeps_up)
    g.leave(s.at(0.37), m)
    deleted = s.at(0.40)
    tombstones: list[Record] = [(offset_commit_key(name, t, p), None) for t, p in g.tps]
    tombstones.append(
        (group_metadata(name, generation=0, protocol=None, members=[], timestamp=deleted)[0], None)
    )
    s.batches.append(Batch(deleted, g.partition, tombstones))
    shown[name] = "a console consumer's group, deleted by an admin at 40 %"
    return shown


def fraud_detector(story: Story) -> GroupSim:
    """``read_committed`` on payments: stuck where a transaction never ends (the hanging one
    on payments-1)."""
    s = story
    g = GroupSim(s, "fraud-detector", ["payments"], protocol="consumer")
    g.join(s.at(0.0) + 14 * SECOND, "fraud-detector")
    g.run(
        s.at(0.0) + 16 * SECOND,
        s.end,
        5 * SECOND,
        lambda tp, t: s.data[tp].stable_at(t - 300),
    )
    return g


BACKGROUND_NAMES: Final = (
    "sessionizer",
    "bot-filter",
    "ab-testing",
    "personalization",
    "ad-attribution",
    "heatmaps",
    "search-analytics",
    "funnel-metrics",
    "geo-enrichment",
    "realtime-dashboard",
    "churn-features",
    "cdn-logs",
    "fraud-signals",
    "campaign-metrics",
    "page-timing",
    "trending",
    "data-lake-sink",
    "user-journeys",
    "referrals",
    "cart-abandonment",
)


def background_groups(story: Story, count: int) -> list[GroupSim]:
    """``count`` groups reading clickstream that keep up (the bulk of the commits): most with
    one member, some with two or three, most on the consumer protocol."""
    rnd = story.rnd
    groups = []
    for n in range(count):
        base = BACKGROUND_NAMES[n % len(BACKGROUND_NAMES)]
        name = f"clickstream-{base}" + (
            f"-{n // len(BACKGROUND_NAMES) + 1}" if n >= len(BACKGROUND_NAMES) else ""
        )
        protocol = "classic" if rnd.random() < 0.35 else "consumer"
        g = GroupSim(
            story,
            name,
            ["clickstream"],
            protocol=protocol,
            assignor=rnd.choice(["range", "cooperative-sticky"])
            if protocol == "classic"
            else "uniform",
            topic_ids=rnd.random() < 0.8,
        )
        members = rnd.choices([1, 2, 3], weights=[6, 3, 1])[0]
        first = story.at(0.0) + rnd.randrange(1, 30) * SECOND
        for k in range(members):
            g.join(first + k * 1500, f"{base}-{k}")
        groups.append(g)
    return groups


def _phase(g: GroupSim, index: int, interval: int) -> int:
    return (index * 337 + zlib.crc32(g.name.encode())) % interval


def background_commits(
    groups: Sequence[GroupSim], start: int, end: int, interval: int, skip_records: int
) -> Iterator[Batch]:
    """The background groups' commits from ``start`` to ``end``, every ``interval`` ms, each
    member its own batch, in time order; the first ``skip_records`` records are left out (the
    groups' history then starts a little later), so that the dump holds exactly the records
    asked."""

    def member_times(n: int, phase: int) -> Iterator[tuple[int, int]]:
        t = start + phase
        while t < end:
            yield t, n
            t += interval

    members = [(g, m) for g in groups for m in g.members]
    streams = [
        member_times(n, _phase(g, g.members.index(m), interval)) for n, (g, m) in enumerate(members)
    ]
    positions = {g.name: g.story.keeps_up(200) for g in groups}
    for t, n in heapq.merge(*streams):
        g, member = members[n]
        tps = g.assignment[member]
        if skip_records >= len(tps):
            skip_records -= len(tps)
            continue
        if skip_records:
            tps, skip_records = tps[skip_records:], 0
        yield g.commit_batch(t, tps, positions[g.name])


def background_records(groups: Sequence[GroupSim], start: int, end: int, interval: int) -> int:
    """How many records :func:`background_commits` writes without skipping any."""
    total = 0
    for g in groups:
        for i, member in enumerate(g.members):
            phase = _phase(g, i, interval)
            commits = max(0, (end - start - phase + interval - 1) // interval)
            total += commits * len(g.assignment[member])
    return total
