"""Random group and transaction histories written as a broker's log dir with our codecs: the
input of the views' fuzz tests (tests/fuzz/test_fuzz_views.py) and of Spark's check on a few
of them (tests/spark/test_forensics_histories_spark.py).

A history is a list of steps (:func:`steps`, a Hypothesis strategy): classic groups joining,
rebalancing and deleted; consumer-protocol groups with members and assignments, deleted and
converted (a group id reused by the other protocol); plain and transactional offset commits and
their deletions; COMMIT/ABORT markers; data batches, plain and transactional; the transaction
coordinator's records; segments rolled; clocks moving (equal and a little backwards too).
:func:`write` lays it out as ``__consumer_offsets-N``, ``__transaction_state-0`` and data
partition folders, each in several segments, then compacts some: batches of non-active
segments dropped with their offsets left as gaps, and sometimes an empty active segment past
the end, as the log cleaner and retention leave them.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from codegen.dumps import SegmentWriter
from codegen.dumps.model import ControlType
from generated import MESSAGES
from generated.consumer_group_current_member_assignment_value import TopicPartitions
from generated.consumer_protocol_assignment import ConsumerProtocolAssignment
from generated.consumer_protocol_subscription import ConsumerProtocolSubscription
from generated.group_metadata_value import MemberMetadata
from generated.transaction_log_value import PartitionsSchema

T0 = 1_700_000_000_000
GROUPS = ("g0", "g1", "g2", "")
DATA = (("orders", 0), ("orders", 1), ("audit", 0))
TOPIC_ID = uuid.UUID(int=7)
_STATUS = {"Empty": 0, "Ongoing": 1, "PrepareCommit": 2, "PrepareAbort": 3}
_STATUS |= {"CompleteCommit": 4, "CompleteAbort": 5, "Dead": 6}


def coordinator_key(name: str, **fields: Any) -> bytes:
    """A coordinator record's key: its record type, then the key named ``name`` (version 0)."""
    cls = MESSAGES[name]
    return struct.pack(">h", cls.API_KEY) + cls(**fields).encode(0)


def coordinator_value(name: str, version: int, **fields: Any) -> bytes:
    """A coordinator record's value: its version, then the value named ``name`` in it."""
    return struct.pack(">h", version) + MESSAGES[name](**fields).encode(version)


def _member(member_id: str) -> MemberMetadata:
    sub = ConsumerProtocolSubscription(topics=["orders"])
    return MemberMetadata(
        member_id=member_id,
        client_id=f"client-{member_id}",
        client_host="/10.0.0.1",
        rebalance_timeout=1,
        session_timeout=1,
        subscription=struct.pack(">h", 1) + sub.encode(1),
        assignment=b"\x00\x00" + ConsumerProtocolAssignment().encode(0),
    )


Step = tuple[Any, ...]

_group = st.sampled_from(GROUPS)
_co = st.integers(0, 1)
_pid = st.integers(100, 103)
_tp = st.sampled_from(DATA)

steps = st.lists(
    st.one_of(
        st.tuples(
            st.just("classic"), _co, _group, st.integers(1, 5), st.sets(st.sampled_from("abc"))
        ),
        st.tuples(st.just("consumer"), _co, _group, st.integers(1, 5), st.sampled_from("abc")),
        st.tuples(st.just("delete-group"), _co, _group, st.sampled_from(["classic", "consumer"])),
        st.tuples(st.just("commit"), _co, _group, _tp, st.integers(0, 40)),
        st.tuples(st.just("delete-offset"), _co, _group, _tp),
        st.tuples(st.just("txn-commit"), _co, _pid, _group, _tp, st.integers(0, 40)),
        st.tuples(
            st.just("marker"),
            st.sampled_from(["co0", "co1", *map(str, range(3))]),
            _pid,
            st.booleans(),
        ),
        st.tuples(st.just("data"), st.integers(0, 2), st.integers(1, 4)),
        st.tuples(st.just("txn-data"), st.integers(0, 2), _pid, st.integers(1, 3)),
        st.tuples(
            st.just("txn-state"),
            _pid,
            st.sampled_from(sorted(_STATUS)),
            st.sets(st.sampled_from(["co0", "co1", "0", "1", "2"])),
        ),
        st.tuples(st.just("delete-txn"), _pid),
        st.tuples(st.just("roll"), st.sampled_from(["co0", "co1", "txn", "0", "1", "2"])),
        st.tuples(st.just("tick"), st.sampled_from([0, 0, 1, 700, 5_000, 60_000, 1_000_000, -3])),
    ),
    min_size=1,
    max_size=40,
)
"""A history: what happens, in order."""

compactions = st.lists(st.integers(0, 7), max_size=6)
"""Seeds of the batches compaction removes (see :func:`write`)."""


@dataclass
class _Partition:
    folder: str
    segments: list[list[tuple[int, dict[str, Any], Any]]] = field(default_factory=lambda: [[]])
    """Per segment, its batches: (base offset, header fields, records or a control type)."""
    next_offset: int = 0

    def add(self, n: int, header: dict[str, Any], body: Any) -> None:
        self.segments[-1].append((self.next_offset, header, body))
        self.next_offset += n

    def roll(self) -> None:
        if self.segments[-1]:
            self.segments.append([])


def _partition_of(name: str) -> str:
    if name.startswith("co"):
        return f"__consumer_offsets-{name[2:]}"
    if name == "txn":
        return "__transaction_state-0"
    topic, partition = DATA[int(name)]
    return f"{topic}-{partition}"


def _txn_partitions(names: set[str]) -> list[PartitionsSchema]:
    by_topic: dict[str, list[int]] = {}
    for name in sorted(names):
        topic, _, number = _partition_of(name).rpartition("-")
        by_topic.setdefault(topic, []).append(int(number))
    return [PartitionsSchema(topic=t, partition_ids=ps) for t, ps in by_topic.items()]


def write(history: list[Step], compaction: list[int], root: Path) -> Path:
    """The log dir of ``history`` under ``root`` (see the module doc)."""
    parts: dict[str, _Partition] = {}
    now = T0

    def part(name: str) -> _Partition:
        folder = _partition_of(name)
        return parts.setdefault(folder, _Partition(folder))

    def records(name: str, recs: list[tuple[bytes | None, bytes | None]], **header: Any) -> None:
        part(name).add(len(recs), {"timestamp": now, **header}, recs)

    epochs: dict[int, int] = {}
    for step in history:
        kind = step[0]
        if kind == "tick":
            now = max(now + step[1], T0)
        elif kind == "roll":
            part(step[1]).roll()
        elif kind == "classic":
            _, co, group, generation, members = step
            value = coordinator_value(
                "GroupMetadataValue",
                3,
                protocol_type="consumer",
                generation=generation,
                protocol="range" if members else None,
                leader=min(members) if members else None,
                current_state_timestamp=now,
                members=[_member(m) for m in sorted(members)],
            )
            records(f"co{co}", [(coordinator_key("GroupMetadataKey", group=group), value)])
        elif kind == "consumer":
            _, co, group, epoch, member = step
            records(
                f"co{co}",
                [
                    (
                        coordinator_key("ConsumerGroupMetadataKey", group_id=group),
                        coordinator_value("ConsumerGroupMetadataValue", 0, epoch=epoch),
                    ),
                    (
                        coordinator_key(
                            "ConsumerGroupMemberMetadataKey", group_id=group, member_id=member
                        ),
                        coordinator_value(
                            "ConsumerGroupMemberMetadataValue",
                            0,
                            client_id=f"c-{member}",
                            client_host="/h",
                            subscribed_topic_names=["orders"],
                            server_assignor="uniform",
                        ),
                    ),
                    (
                        coordinator_key(
                            "ConsumerGroupCurrentMemberAssignmentKey",
                            group_id=group,
                            member_id=member,
                        ),
                        coordinator_value(
                            "ConsumerGroupCurrentMemberAssignmentValue",
                            0,
                            member_epoch=epoch,
                            previous_member_epoch=epoch - 1,
                            assigned_partitions=[
                                TopicPartitions(topic_id=TOPIC_ID, partitions=[0])
                            ],
                        ),
                    ),
                ],
            )
        elif kind == "delete-group":
            _, co, group, which = step
            if which == "classic":
                key = coordinator_key("GroupMetadataKey", group=group)
            else:
                key = coordinator_key("ConsumerGroupMetadataKey", group_id=group)
            records(f"co{co}", [(key, None)])
        elif kind in ("commit", "txn-commit", "delete-offset"):
            co, group, (topic, partition) = (
                (step[1], step[2], step[3]) if kind != "txn-commit" else (step[1], step[3], step[4])
            )
            key = coordinator_key("OffsetCommitKey", group=group, topic=topic, partition=partition)
            if kind == "delete-offset":
                records(f"co{co}", [(key, None)])
                continue
            value = coordinator_value("OffsetCommitValue", 3, offset=step[-1], commit_timestamp=now)
            header: dict[str, Any] = {}
            if kind == "txn-commit":
                pid = step[2]
                header = {"producer_id": pid, "producer_epoch": epochs.get(pid, 0)}
                header["transactional"] = True
            records(f"co{co}", [(key, value)], **header)
        elif kind == "marker":
            _, where, pid, commit = step
            control = ControlType.COMMIT if commit else ControlType.ABORT
            part(where).add(
                1,
                {"timestamp": now, "producer_id": pid, "producer_epoch": epochs.get(pid, 0)},
                control,
            )
        elif kind == "data":
            _, which, n = step
            records(str(which), [(None, b"x")] * n)
        elif kind == "txn-data":
            _, which, pid, n = step
            header = {"producer_id": pid, "producer_epoch": epochs.get(pid, 0)}
            records(str(which), [(None, b"t")] * n, transactional=True, **header)
        elif kind == "txn-state":
            _, pid, status, names = step
            if status.startswith("Complete"):
                epochs[pid] = epochs.get(pid, 0) + 1
            value = coordinator_value(
                "TransactionLogValue",
                1,
                producer_id=pid,
                producer_epoch=epochs.get(pid, 0),
                transaction_timeout_ms=60_000,
                transaction_status=_STATUS[status],
                transaction_partitions=[]
                if status.startswith("Complete")
                else _txn_partitions(names),
                transaction_last_update_timestamp_ms=now,
                transaction_start_timestamp_ms=now,
            )
            key = coordinator_key("TransactionLogKey", transactional_id=f"tx-{pid}")
            records("txn", [(key, value)])
        elif kind == "delete-txn":
            records(
                "txn",
                [(coordinator_key("TransactionLogKey", transactional_id=f"tx-{step[1]}"), None)],
            )
    log = root / "kafka-logs"
    log.mkdir(parents=True)
    _write_partitions(parts, compaction, log)
    return log


def _write_partitions(parts: dict[str, _Partition], compaction: list[int], log: Path) -> None:
    for n, (folder, p) in enumerate(sorted(parts.items())):
        target = log / folder
        target.mkdir()
        segments = [s for s in p.segments if s]
        for k, batches in enumerate(segments):
            active = k == len(segments) - 1
            base = batches[0][0]
            with SegmentWriter(target / f"{base:020d}.log") as w:
                for j, (offset, header, body) in enumerate(batches):
                    # compaction: some batches of non-active segments removed, offsets kept
                    if not active and compaction and (j + n + k) % 8 in compaction[:2]:
                        continue
                    if isinstance(body, ControlType):
                        w.write_control(body, base_offset=offset, **header)
                    else:
                        w.write_batch(body, base_offset=offset, **header)
        if compaction and len(compaction) > 3 and compaction[3] % 2:
            (target / f"{p.next_offset + compaction[3]:020d}.log").write_bytes(b"")


def seeded(seed: int, size: int = 60) -> list[Step]:
    """A history of ``size`` steps drawn from ``random.Random(seed)``, of the kinds and ranges
    :data:`steps` draws (for tests that cannot draw examples: Spark's)."""
    import random

    rng = random.Random(seed)
    parts = ["co0", "co1", "0", "1", "2"]

    def step(kind: str) -> Step:
        group, co, pid = rng.choice(GROUPS), rng.randint(0, 1), rng.randint(100, 103)
        tp, offset = rng.choice(DATA), rng.randint(0, 40)
        made: dict[str, Step] = {
            "classic": (kind, co, group, rng.randint(1, 5), set(rng.sample("abc", rng.randint(0, 3)))),
            "consumer": (kind, co, group, rng.randint(1, 5), rng.choice("abc")),
            "delete-group": (kind, co, group, rng.choice(["classic", "consumer"])),
            "commit": (kind, co, group, tp, offset),
            "delete-offset": (kind, co, group, tp),
            "txn-commit": (kind, co, pid, group, tp, offset),
            "marker": (kind, rng.choice(parts), pid, rng.random() < 0.5),
            "data": (kind, rng.randint(0, 2), rng.randint(1, 4)),
            "txn-data": (kind, rng.randint(0, 2), pid, rng.randint(1, 3)),
            "txn-state": (kind, pid, rng.choice(sorted(_STATUS)), set(rng.sample(parts, 2))),
            "roll": (kind, rng.choice([*parts, "txn"])),
            "tick": (kind, rng.choice([0, 1, 700, 5_000, 60_000])),
        }  # fmt: skip
        return made[kind]

    kinds = ["classic", "consumer", "delete-group", "commit", "delete-offset", "txn-commit"]
    kinds += ["marker", "data", "txn-data", "txn-state", "roll", "tick"]
    return [step(rng.choice(kinds)) for _ in range(size)]
