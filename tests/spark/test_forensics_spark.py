"""spark_udfs.forensics gives the Python API's answers, row for row, on the same dumps."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from test_forensics_downgrade import cluster, partition, write_share_state
from test_forensics_downgrade import key as downgrade_key
from test_forensics_downgrade import value as downgrade_value
from test_forensics_groups import TOPIC_ID, classic, commit, key, subscription, value, write
from test_forensics_lag import T0 as LAG_T0
from test_forensics_lag import commit_record, write_lag_scenarios
from v2_batches import with_newer_header

from codegen.dumps import SegmentWriter
from codegen.dumps.batch_rows import batch_rows
from codegen.dumps.coordinator import decode_batches
from codegen.dumps.model import ControlType, ReadError
from codegen.dumps.writer import encode_record_batch
from codegen.forensics.coordinator_logs import dump_partitions
from codegen.forensics.downgrade import check_downgrade
from codegen.forensics.groups import AsOf, GroupsView, group_reports
from codegen.forensics.lag import lag_reports
from generated.consumer_group_current_member_assignment_value import TopicPartitions
from generated.consumer_protocol_assignment import ConsumerProtocolAssignment, TopicPartition
from generated.group_metadata_value import MemberMetadata
from generated.share_group_current_member_assignment_value import (
    TopicPartitions as ShareTopicPartitions,
)
from generated.streams_group_current_member_assignment_value import TaskIds
from spark_udfs import compacted, forensics
from spark_udfs.group_views import EVENT_DETAIL_FIELDS

ROOT = Path(__file__).resolve().parent.parent.parent
REAL = ROOT / "tests" / "data" / "forensics"


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Upgrades (value v1 to v5), legacy keys, consumer-protocol groups, tombstones, committed
    and aborted transactional commits (spark_udfs.synth)."""
    from spark_udfs.synth import write_consumer_offsets

    out = tmp_path_factory.mktemp("forensics-synth")
    write_consumer_offsets(out, records=4_000, partitions=2, groups=24, seed=11)
    return out


@pytest.fixture(scope="module")
def lag_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The lag scenarios of tests/test_forensics_lag.py (OK, WARN, STALL, STOP, deletions, an
    aborted commit) with their data topic t-0..t-3."""
    return write_lag_scenarios(tmp_path_factory.mktemp("forensics-lag"))


def classic_member(member_id: str, sub_version: int, partitions: list[int]) -> MemberMetadata:
    assignment = ConsumerProtocolAssignment(
        assigned_partitions=[TopicPartition(topic="t", partitions=partitions)]
    )
    return MemberMetadata(
        member_id=member_id,
        group_instance_id=f"instance-{member_id}" if sub_version else None,
        client_id=f"client-{member_id}",
        client_host=f"/10.0.0.{len(member_id)}",
        rebalance_timeout=1,
        session_timeout=1,
        subscription=subscription(sub_version),
        assignment=b"\x00\x00" + assignment.encode(0),
    )


def member(kind: str, group: str, member_id: str, **fields: Any) -> tuple[bytes, bytes]:
    """A member's metadata record of a ``kind`` group (Consumer, Share or Streams)."""
    return (
        key(f"{kind}GroupMemberMetadataKey", group_id=group, member_id=member_id),
        value(f"{kind}GroupMemberMetadataValue", 0, **fields),
    )


def assignment(
    kind: str, group: str, member_id: str, epoch: int, **assigned: Any
) -> tuple[bytes, bytes]:
    """A member's current assignment record of a ``kind`` group, at ``epoch`` (after
    ``epoch - 1``)."""
    return (
        key(f"{kind}GroupCurrentMemberAssignmentKey", group_id=group, member_id=member_id),
        value(
            f"{kind}GroupCurrentMemberAssignmentValue",
            0,
            member_epoch=epoch,
            previous_member_epoch=epoch - 1,
            **assigned,
        ),
    )


def group_epoch(kind: str, group: str, epoch: int | None) -> tuple[bytes, bytes | None]:
    """A ``kind`` group's epoch record; its tombstone when ``epoch`` is None."""
    k = key(f"{kind}GroupMetadataKey", group_id=group)
    return (k, None if epoch is None else value(f"{kind}GroupMetadataValue", 0, epoch=epoch))


def consumer_member(group: str, member_id: str, assignor: str) -> tuple[bytes, bytes]:
    return member(
        "Consumer",
        group,
        member_id,
        client_id=f"c-{member_id}",
        client_host="/h",
        subscribed_topic_names=["t"],
        server_assignor=assignor,
    )


def current_assignment(group: str, member_id: str, epoch: int) -> tuple[bytes, bytes]:
    assigned = TopicPartitions(topic_id=TOPIC_ID, partitions=[epoch], assignment_epochs=[epoch])
    return assignment("Consumer", group, member_id, epoch, assigned_partitions=[assigned])


@pytest.fixture(scope="module")
def mixes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Assignor mixes, a classic group converted to a consumer group, members leaving and a
    member whose assignment came before its metadata, a deleted consumer group recreated by a
    member record, offsets deleted."""
    gone = (key("GroupMetadataKey", group="conv"), None)
    member_gone = (key("ConsumerGroupMemberMetadataKey", group_id="cg", member_id="b"), None)
    return write(
        tmp_path_factory.mktemp("forensics-mixes"),
        [classic("conv", 3, "range", classic_member("a", 1, [0, 1]))],  # 0
        [
            classic(
                "mix", 1, "roundrobin", classic_member("x", 0, [0]), classic_member("yy", 1, [1])
            )
        ],
        [commit("conv", 0, 5), commit("mix", 1, 7)],  # 2, 3
        [gone],  # 4: conv deleted, then back as a consumer group
        [consumer_member("conv", "m", "uniform"), group_epoch("Consumer", "conv", 5)],  # 5, 6
        [current_assignment("conv", "m", 5)],  # 7
        # 8, 9: the assignment first
        [current_assignment("cg", "a", 2), group_epoch("Consumer", "cg", 3)],
        [consumer_member("cg", "a", "range"), consumer_member("cg", "b", "range")],  # 10, 11
        [member_gone, commit("mix", 1, None)],  # 12, 13
        [group_epoch("Consumer", "dead", 1), consumer_member("dead", "z", "uniform")],  # 14, 15
        [group_epoch("Consumer", "dead", None), current_assignment("dead", "z", 1)],  # 16, 17
    )


def share_member(group: str, member_id: str) -> tuple[bytes, bytes]:
    return member(
        "Share",
        group,
        member_id,
        client_id=f"s-{member_id}",
        client_host="/s",
        subscribed_topic_names=["t"],
    )


def share_assignment(group: str, member_id: str, epoch: int) -> tuple[bytes, bytes]:
    assigned = ShareTopicPartitions(topic_id=TOPIC_ID, partitions=[0, epoch])
    return assignment("Share", group, member_id, epoch, assigned_partitions=[assigned])


def streams_member(group: str, member_id: str) -> tuple[bytes, bytes]:
    return member(
        "Streams",
        group,
        member_id,
        instance_id=f"i-{member_id}",
        client_id=f"k-{member_id}",
        client_host="/k",
        process_id="p",
    )


def streams_assignment(group: str, member_id: str, epoch: int) -> tuple[bytes, bytes]:
    tasks = [TaskIds(subtopology_id="sub-0", partitions=[0, 1])]
    return assignment("Streams", group, member_id, epoch, active_tasks=tasks)


@pytest.fixture(scope="module")
def kinds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Share and streams groups (members joining, leaving, reconciling), a consumer group
    deleted for good, a group with only deleted offsets, a classic group replaced by a
    consumer group without a tombstone, a classic group on cooperative-sticky that switched
    assignor, and an assignment record without assignment epochs."""
    no_epochs = TopicPartitions(topic_id=TOPIC_ID, partitions=[3])
    return write(
        tmp_path_factory.mktemp("forensics-kinds"),
        [group_epoch("Share", "sg", 2), share_member("sg", "s1"), share_member("sg", "s2")],  # 0-2
        [share_assignment("sg", "s1", 1)],  # 3: s1 behind the group epoch
        [(key("ShareGroupMemberMetadataKey", group_id="sg", member_id="s2"), None)],  # 4
        [group_epoch("Streams", "st", 1), streams_member("st", "k1")],  # 5, 6
        [streams_assignment("st", "k1", 1), group_epoch("Streams", "st", 2)],  # 7, 8
        [consumer_member("gone", "m", "range"), group_epoch("Consumer", "gone", 1)],  # 9, 10
        [group_epoch("Consumer", "gone", None), commit("solo", 0, 4)],  # 11, 12
        [commit("solo", 0, None)],  # 13
        [classic("swap", 1, "range", classic_member("a", 1, [0]))],  # 14
        [consumer_member("swap", "a", "uniform")],  # 15: replaces the classic group
        [classic("coop", 1, "range", classic_member("c", 1, [0]))],  # 16
        [classic("coop", 2, "cooperative-sticky", classic_member("c", 1, [0, 1]))],  # 17
        [assignment("Consumer", "swap", "a", 1, assigned_partitions=[no_epochs])],  # 18
    )


# ------------------------------------------------------------------------------ downgrade


def python_findings(path: Path, to: str) -> list[tuple[Any, ...]]:
    report = check_downgrade(path, to)
    return sorted(
        (f.rule, f.partition, f.offset, f.record_type, f.name, f.value_version, f.group, f.reason)
        for f in [*report.blockers, *report.ignored]
    )


def spark_findings(decoded: Any, to: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in forensics.downgrade_findings(decoded, to).collect())


@pytest.mark.parametrize("name", ["synth", "ldi-poc"])
def test_downgrade_findings_match_the_python_api(spark: Any, synth: Path, name: str) -> None:
    path = synth if name == "synth" else REAL / "ldi-poc"
    decoded = forensics.read_dump(spark, path).cache()
    seen_rules: set[str] = set()
    for to in ("2.0", "2.2", "3.4", "3.9"):
        expected = python_findings(path, to)
        assert spark_findings(decoded, to) == expected, to
        seen_rules |= {f[0] for f in expected}
    decoded.unpersist()
    # the comparison covers blocking findings, not only empty lists
    assert "value-version" in seen_rules
    if name == "synth":  # its consumer-protocol groups block 3.4
        assert "group-conversion" in seen_rules


# ------------------------------------------------------------------------------ groups


def python_groups(path: Path, as_of: AsOf | None = None) -> list[tuple[Any, ...]]:
    return sorted(
        (
            r.partition,
            r.group,
            r.type,
            r.state,
            r.protocol_type,
            r.protocol,
            r.generation,
            r.epoch,
            r.members,
            r.committed_offsets,
            r.to_json()["assignors"],
        )
        for r in group_reports(path, as_of=as_of)
    )


def spark_groups(spark: Any, path: Path, as_of: AsOf | None = None) -> list[tuple[Any, ...]]:
    rows = forensics.group_states(forensics.read_dump(spark, path, as_of)).collect()
    return sorted(
        (
            r.partition,
            r.group,
            r.type,
            r.state,
            r.protocolType,
            r.protocol,
            r.generation,
            r.epoch,
            [m.asDict(recursive=True) for m in r.members],
            r.committedOffsets,
            None if r.assignors is None else r.assignors.asDict(recursive=True),
        )
        for r in rows
    )


_DETAIL_FIELDS = [name for name, _ in EVENT_DETAIL_FIELDS]


def python_timelines(path: Path, as_of: AsOf | None = None) -> dict[Any, list[Any]]:
    """Per (partition, group), its events in order: offset, timestamp, kind and the detail
    laid out as the DataFrame's (an assignor change's ``previous`` is ``previousProtocol``)."""
    out: dict[Any, list[Any]] = {}
    for r in group_reports(path, as_of=as_of):
        events = []
        for e in r.events:
            detail = dict.fromkeys(_DETAIL_FIELDS)
            for name, v in e.detail.items():
                if e.kind == "assignor-changed" and name == "previous":
                    name = "previousProtocol"
                assert name in detail, name
                detail[name] = v
            events.append((e.offset, e.timestamp, e.kind, detail))
        if events:
            out[(r.partition, r.group)] = events
    return out


def spark_timelines(spark: Any, path: Path, as_of: AsOf | None = None) -> dict[Any, list[Any]]:
    rows = forensics.group_timelines(forensics.read_dump(spark, path, as_of)).collect()
    out: dict[Any, list[Any]] = {}
    for r in sorted(
        rows, key=lambda r: (r.partition, r.group, r.applyOffset, r.offset, r.eventIndex)
    ):
        out.setdefault((r.partition, r.group), []).append(
            (r.offset, r.timestamp, r.kind, r.detail.asDict(recursive=True))
        )
    return out


def test_group_states_match_the_python_api_on_synthesized_groups(spark: Any, synth: Path) -> None:
    expected = python_groups(synth)
    assert {g[2] for g in expected} == {"classic", "consumer", None}  # None: deleted groups
    # Groups that never chose an assignor (offsets only) get no cooperative-switch advice.
    assert {g[10]["cooperativeSwitch"] for g in expected if g[2] == "classic"} == {
        "not-possible",
        None,
    }
    assert all(
        g[10]["why"].startswith("no assignor was ever chosen")
        for g in expected
        if g[2] == "classic" and g[10]["cooperativeSwitch"] is None
    )
    assert spark_groups(spark, synth) == expected


def test_group_states_match_the_python_api_on_mixes(spark: Any, mixes: Path) -> None:
    expected = python_groups(mixes)
    states = {g[1]: (g[2], g[3], len(g[8])) for g in expected}
    verdicts = {g[1]: g[10]["cooperativeSwitch"] for g in expected}
    assert verdicts == {"cg": None, "conv": None, "dead": None, "mix": "not-possible"}
    assert states == {
        "cg": ("consumer", "Reconciling", 1),  # member a at epoch 2 of 3
        "conv": ("consumer", "Stable", 1),
        "dead": ("consumer", "Stable", 1),
        "mix": ("classic", "Stable", 2),
    }
    mix_members = {g[1]: g[8] for g in expected}["mix"]
    assert mix_members[1]["assignment"] == {"t": [1]} and mix_members[1]["subscribedTopics"]
    assert spark_groups(spark, mixes) == expected
    for offset in (1, 4, 7, 9, 12, 16):
        as_of = AsOf(offset=offset)
        assert spark_groups(spark, mixes, as_of) == python_groups(mixes, as_of), offset


def test_group_states_match_the_python_api_on_real_data(spark: Any) -> None:
    path = REAL / "aibulb"
    assert spark_groups(spark, path) == python_groups(path)
    as_of = AsOf(offset=1)
    assert spark_groups(spark, path, as_of) == python_groups(path, as_of)


def test_group_states_as_of_a_time(spark: Any, synth: Path) -> None:
    reports = group_reports(synth)
    assert reports
    timestamps = sorted(e.timestamp for r in reports for e in r.events)
    as_of = AsOf(timestamp_ms=timestamps[len(timestamps) // 2])
    expected = python_groups(synth, as_of)
    assert expected != python_groups(synth)
    assert spark_groups(spark, synth, as_of) == expected


def test_group_states_match_the_python_api_on_every_group_type(spark: Any, kinds: Path) -> None:
    expected = python_groups(kinds)
    states = {g[1]: (g[2], g[3], [m["memberId"] for m in g[8]]) for g in expected}
    assert states == {
        "coop": ("classic", "Stable", ["c"]),
        "gone": (None, "Dead", []),
        "solo": (None, "Dead", []),
        "sg": ("share", "Reconciling", ["s1"]),
        "st": ("streams", "Reconciling", ["k1"]),
        "swap": ("consumer", "Stable", ["a"]),
    }
    inventory = {g[1]: g[10] for g in expected}
    assert inventory["coop"]["cooperativeSwitch"] == "done"
    assert inventory["coop"]["chosenOverTime"] == ["range", "cooperative-sticky"]
    assert inventory["swap"]["chosen"] == "uniform"
    assert spark_groups(spark, kinds) == expected
    for offset in (2, 4, 8, 11, 12, 15, 17):
        as_of = AsOf(offset=offset)
        assert spark_groups(spark, kinds, as_of) == python_groups(kinds, as_of), offset


def python_compacted_groups(path: Path, as_of: AsOf | None = None) -> dict[str, tuple[Any, ...]]:
    """The classic and consumer groups of the compacted view (``dump --compacted``)."""
    out = {}
    for log_partition, files in dump_partitions(path):
        view = GroupsView(log_partition, as_of).add_batches(
            b for f in files for b in decode_batches(f)
        )
        for g in view.group_rows():
            if g.type in ("classic", "consumer"):
                protocol_type = g.protocol_type if g.type == "classic" else g.type
                out[g.group] = (g.type, g.state, protocol_type, g.protocol, g.leader)
                out[g.group] += (g.generation, g.epoch, len(g.members))
    return out


def test_compacted_group_states_are_the_compacted_view(spark: Any, mixes: Path) -> None:
    """Groups made by member records alone: ``dead`` comes back by a member's assignment after
    its metadata tombstone, and at offset 9 ``cg`` has an assignment but no member metadata
    yet. The DataFrame copy this replaced listed neither member (``cg`` ``Empty``, ``dead``
    missing); the view counts them."""
    for as_of, members in ((None, {"cg": 1, "dead": 1}), (AsOf(offset=9), {"cg": 1})):
        expected = python_compacted_groups(mixes, as_of)
        assert {g: expected[g][7] for g in members} == members
        rows = compacted.group_states(forensics.read_dump(spark, mixes, as_of)).collect()
        assert [r.group for r in rows] == sorted(expected)
        assert {r.group: tuple(r)[1:] for r in rows} == expected
    assert expected["cg"][:2] == ("consumer", "Reconciling")


# ------------------------------------------------------------------------------ timelines


def test_timelines_match_the_python_api_on_every_group_type(spark: Any, kinds: Path) -> None:
    expected = python_timelines(kinds)
    seen = {e[2] for events in expected.values() for e in events}
    assert seen == {
        "created",
        "rebalance",
        "member-joined",
        "member-left",
        "protocol-conversion",
        "assignor-changed",
        "offset-deleted",
        "group-deleted",
        "member-epoch",
    }
    assert spark_timelines(spark, kinds) == expected


def test_timelines_match_the_python_api_on_mixes(spark: Any, mixes: Path) -> None:
    expected = python_timelines(mixes)
    assert [e[2] for e in expected[(5, "conv")][:5]] == [
        "created",
        "member-joined",
        "group-deleted",
        "created",
        "protocol-conversion",
    ]
    assert spark_timelines(spark, mixes) == expected
    for offset in (4, 9, 16):
        as_of = AsOf(offset=offset)
        assert spark_timelines(spark, mixes, as_of) == python_timelines(mixes, as_of), offset


@pytest.mark.parametrize("name", ["synth", "aibulb"])
def test_timelines_match_the_python_api(spark: Any, synth: Path, name: str) -> None:
    path = synth if name == "synth" else REAL / "aibulb"
    expected = python_timelines(path)
    assert expected
    assert spark_timelines(spark, path) == expected


def test_member_epochs_flatten_the_member_epoch_events(spark: Any, kinds: Path) -> None:
    expected = sorted(
        (p, g, offset, d["member"], d["memberEpoch"], d["previousMemberEpoch"], topic, tp, epoch)
        for (p, g), events in python_timelines(kinds).items()
        for offset, _, kind, d in events
        if kind == "member-epoch"
        for topic, parts in (d["assigned"] or {None: {"partitions": [None]}}).items()
        for i, tp in enumerate(parts["partitions"])
        for epoch in [(parts.get("assignmentEpochs") or [None] * (i + 1))[i]]
    )
    assert {e[1] for e in expected} == {"sg", "st", "swap"}
    rows = forensics.member_epochs(forensics.read_dump(spark, kinds)).collect()
    assert (
        sorted(
            (
                *(r.partition, r.group, r.offset, r.member, r.memberEpoch),
                *(r.previousMemberEpoch, r.topicId, r.topicPartition, r.assignmentEpoch),
            )
            for r in rows
        )
        == expected
    )


# ------------------------------------------------------------------------------ lag


def python_lag(path: Path | list[Path], window: int) -> tuple[list[Any], list[Any], dict[str, Any]]:
    reports = lag_reports(path, window=window)
    parts = sorted(
        (
            *(p.group, p.topic, p.partition, p.live, p.deleted_at),
            *(p.log_end_offset, p.log_end_source, p.lag, p.status),
        )
        for g in reports
        for p in g.partitions
    )
    history = sorted(
        (
            *(p.group, p.topic, p.partition, c.record_offset, c.commit_timestamp, c.offset),
            *(c.leader_epoch, c.log_end_offset, c.lag),
        )
        for g in reports
        for p in g.partitions
        for c in p.commits
    )
    # Share groups commit no offsets: their lag is share_lag's (compared below).
    return parts, history, {g.group: g.status for g in reports if g.partitions}


def spark_lag(
    spark: Any, path: Path | list[Path], window: int
) -> tuple[list[Any], list[Any], dict[str, Any]]:
    decoded = forensics.read_dump(spark, path)
    ends = forensics.read_log_ends(spark, path)
    now = forensics.lag_now(spark, path, ends)
    lag = forensics.partition_lag(decoded, ends, window=window, now=now).cache()
    parts = sorted(
        (
            *(r.group, r.topic, r.partition, r.live, r.deletedAt),
            *(r.logEndOffset, r.logEndSource, r.lag, r.status),
        )
        for r in lag.collect()
    )
    history = sorted(
        (
            *(r.group, r.topic, r.partition, r.recordOffset, r.commitTimestamp, r.offset),
            *(r.leaderEpoch, r.logEndOffset, r.lag),
        )
        for r in forensics.offset_history(decoded, ends).collect()
    )
    groups = {r.group: r.status for r in forensics.group_lag(lag).collect()}
    lag.unpersist()
    return parts, history, groups


def test_lag_matches_the_python_api_on_every_status(spark: Any, lag_folder: Path) -> None:
    expected = python_lag(lag_folder, window=3)
    assert {p[8] for p in expected[0]} == {"OK", "WARN", "STALL", "STOP", None}
    assert spark_lag(spark, lag_folder, window=3) == expected


@pytest.mark.parametrize("name", ["synth", "aibulb"])
def test_lag_matches_the_python_api(spark: Any, synth: Path, name: str) -> None:
    path = synth if name == "synth" else REAL / "aibulb"
    assert spark_lag(spark, path, window=10) == python_lag(path, window=10)


@pytest.fixture(scope="module")
def damaged_lag(lag_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The lag scenarios damaged: a byte of batch 3's records flipped in __consumer_offsets-0
    and of batch 5's in t-0 (their CRCs no longer match), and an offset commit that does not
    decode (a v3 value with no room for its offset) appended to __consumer_offsets-0."""
    out = tmp_path_factory.mktemp("forensics-damaged") / "dump"
    shutil.copytree(lag_folder, out)
    for folder, batch in (("__consumer_offsets-0", 3), ("t-0", 5)):
        (segment,) = (out / folder).glob("*.log")
        rows = batch_rows(segment)
        data = bytearray(segment.read_bytes())
        data[rows.column("batchPosition")[batch].as_py() + 70] ^= 0xFF
        if folder.startswith("__"):
            key, _ = commit_record("g-refused", "t", 0, 1, LAG_T0)
            next_offset = rows.column("lastOffset")[-1].as_py() + 1
            data += encode_record_batch([(key, b"\x00\x03\x00")], base_offset=next_offset)
        segment.write_bytes(bytes(data))
    return out


def test_answers_on_damaged_input_match_the_python_api(spark: Any, damaged_lag: Path) -> None:
    """Of damaged input the answers are of the rows read whole, the Python API's (which also
    lists what it left out; Spark's functions leave the same out: docs/forensics.md)."""
    errors: list[ReadError] = []
    lag_reports(damaged_lag, errors=errors)
    damaged = sorted((type(e).__name__, Path(e.file or "").parent.name) for e in errors)
    assert damaged == [
        ("RecordError", "__consumer_offsets-0"),
        ("SegmentError", "__consumer_offsets-0"),
        ("SegmentError", "t-0"),
    ]
    assert spark_lag(spark, damaged_lag, window=3) == python_lag(damaged_lag, window=3)
    assert spark_groups(spark, damaged_lag) == python_groups(damaged_lag)


@pytest.mark.parametrize("newest", ["marker", "compacted"])
def test_lag_now_is_the_newest_batch_header_on_both_paths(
    spark: Any, tmp_path: Path, newest: str
) -> None:
    """Spark's lag_now, and partition_lag without ``now``, take *now* as the command line
    does (codegen.forensics.lag.newest_time): the newest header time of the
    __consumer_offsets batches with records: a COMMIT marker's, or a compacted batch's whose
    newest record is gone (no record has that time)."""
    log = tmp_path / "kafka-logs"
    offsets, orders = log / "__consumer_offsets-0", log / "orders-0"
    for d in (offsets, orders):
        d.mkdir(parents=True)
    with SegmentWriter(orders / "00000000000000000000.log") as w:
        w.write_batch([(None, b"x")] * 10, timestamp=LAG_T0)
    marked = LAG_T0 + 600_000
    txn: dict[str, Any] = {"producer_id": 5, "producer_epoch": 0}
    segment = offsets / "00000000000000000000.log"
    with SegmentWriter(segment) as w:
        w.write_batch([commit_record("g", "orders", 0, 4, LAG_T0)], timestamp=LAG_T0)
        late = LAG_T0 + 1000
        at = w.write_batch(
            [commit_record("g", "orders", 0, 6, late)], timestamp=late, transactional=True, **txn
        )
        if newest == "marker":
            w.write_control(ControlType.COMMIT, timestamp=marked, **txn)
    if newest == "compacted":
        with_newer_header(segment, at, marked)
    assert {g.now for g in lag_reports(log, window=3)} == {marked}
    decoded = forensics.read_dump(spark, log)
    ends = forensics.read_log_ends(spark, log)
    rows = forensics.partition_lag(decoded, ends, window=3).collect()
    assert {r.now for r in rows} == {marked}
    assert forensics.lag_now(spark, log, ends) == marked
    assert forensics.lag_now(spark, log) == marked
    assert spark_lag(spark, log, window=3) == python_lag(log, window=3)


# ------------------------------------------------------------------- a cluster's disks


@pytest.fixture(scope="module")
def two_brokers(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two broker images. broker-1: the commits of g on t-0 (an empty segment starting at 42),
    t-1 (only in broker-1's replication-offset-checkpoint, 30) and t-2 (checkpoint 12, below
    broker-2's segments: 20 from batches, 25 from the empty active segment after them); the
    share group sg's state on orders-0 (tests/test_forensics_downgrade.py's). broker-2: t-2."""
    root = tmp_path_factory.mktemp("forensics-cluster")
    topics = {"__consumer_offsets": 1, "__share_group_state": 1, "orders": 1, "t": 3}
    one = cluster(root, topics, 27)
    orders = uuid.UUID(int=3)  # the third topic by name
    offsets = one / "__consumer_offsets-0"
    offsets.mkdir()
    with SegmentWriter(offsets / "00000000000000000000.log") as w:
        w.write_batch(
            [
                (
                    downgrade_key("ShareGroupMetadataKey", group_id="sg"),
                    downgrade_value("ShareGroupMetadataValue", 0, epoch=1),
                )
            ],
            timestamp=LAG_T0,
        )
        for seconds, p, offset in [(0, 0, 40), (0, 1, 20), (10, 1, 25), (0, 2, 5), (10, 2, 15)]:
            at = LAG_T0 + seconds * 1000
            w.write_batch([commit_record("g", "t", p, offset, at)], timestamp=at)
    (one / "t-0").mkdir()
    (one / "t-0" / "00000000000000000042.log").write_bytes(b"")
    (one / "replication-offset-checkpoint").write_text("0\n2\nt 1 30\nt 2 12\n")
    write_share_state(one, orders)
    partition(one, "orders", 0, [(None, b"x")] * 20)
    two = root / "broker-2"
    (two / "t-2").mkdir(parents=True)
    with SegmentWriter(two / "t-2" / "00000000000000000000.log") as w:
        w.write_batch([(None, b"x")] * 10, timestamp=LAG_T0)
        w.write_batch([(None, b"x")] * 10, timestamp=LAG_T0 + 5000)
    (two / "t-2" / "00000000000000000025.log").write_bytes(b"")
    return [one, two]


def test_log_ends_of_a_cluster_match_the_python_api(spark: Any, two_brokers: list[Path]) -> None:
    expected = python_lag(two_brokers, window=10)
    one, two = two_brokers
    sources = {(p[1], p[2]): (p[5], p[6], p[7], p[8]) for p in expected[0]}
    checkpoint = one / "replication-offset-checkpoint"
    assert sources == {
        ("t", 0): (42, f"empty segments: {one / 't-0'}", 2, "OK"),
        ("t", 1): (30, f"replication-offset-checkpoint: {checkpoint}", 5, None),
        ("t", 2): (
            25,
            f"segments: {two / 't-2'}; the highest of 2 replicas/checkpoints",
            10,
            "WARN",
        ),
    }
    assert spark_lag(spark, two_brokers, window=10) == expected


def test_share_partitions_and_lag_match_the_python_api(spark: Any, two_brokers: list[Path]) -> None:
    (python_lag_report,) = [g for g in lag_reports(two_brokers) if g.group == "sg"]
    expected_lag = [s.to_json() for s in python_lag_report.share_partitions]
    # end 20 - start 8 - 8..9 acknowledged (KIP-1226)
    assert [(s["startOffset"], s["logEndOffset"], s["lag"]) for s in expected_lag] == [(8, 20, 10)]
    (sg,) = [g for g in group_reports(two_brokers) if g.group == "sg"]
    expected_states = [s.to_json() for s in sg.share_partitions]

    shares = forensics.read_share_states(spark, two_brokers)
    ends = forensics.read_log_ends(spark, two_brokers)
    lag = [
        {k: v for k, v in r.asDict(recursive=True).items() if k not in ("group", "delivered")}
        for r in forensics.share_lag(shares, ends).collect()
    ]
    assert lag == expected_lag
    states = {
        r.group: r.sharePartitions
        for r in forensics.group_states(forensics.read_dump(spark, two_brokers), shares).collect()
    }
    assert [
        {k: v for k, v in s.asDict(recursive=True).items() if k != "delivered"}
        for s in states["sg"]
    ] == expected_states
    assert states["g"] is None


def test_log_ends_of_batch_rows_equal_read_log_ends(spark: Any, tmp_path: Path) -> None:
    """log_ends over batch rows reads each segment's base offset from its name as the command
    line does (codegen.dumps.segments.segment_file_info), and gives read_log_ends' answer for
    one replica without a checkpoint."""
    log = tmp_path / "kafka-logs"
    orders = log / "orders-0"
    orders.mkdir(parents=True)
    with SegmentWriter(orders / "00000000000000000000.log") as w:
        w.write_batch([(None, b"a")] * 3, timestamp=LAG_T0)
        w.write_batch([(None, b"b")] * 2, timestamp=LAG_T0 + 1000)
    with SegmentWriter(orders / "00000000000000000005.log", base_offset=5) as w:
        w.write_batch([(None, b"c")] * 4, timestamp=LAG_T0 + 2000)
    files = sorted(orders.glob("*.log"))
    ends = forensics.read_log_ends(spark, log)
    assert ends is not None
    expected = sorted(
        (r.topic, r.partition, r.endTime, r.endOffset, r.history) for r in ends.collect()
    )
    assert expected[-1][3] == 9
    rows = forensics.log_ends(forensics.batch_rows(spark, files)).collect()
    assert sorted((r.topic, r.partition, r.endTime, r.endOffset, r.history) for r in rows) == (
        expected
    )
    assert {r.logEndSource.split(": ")[0] for r in rows} == {"segments"}
