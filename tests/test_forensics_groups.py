"""groups: each group at a point in time, its timeline and assignor inventory."""

from __future__ import annotations

import json
import struct
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from histories import coordinator_key as key
from histories import coordinator_value as value

from codegen.dumps import SegmentWriter
from codegen.dumps.batches import DEFAULT_MAX_BATCH_RECORDS
from codegen.dumps.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from codegen.dumps.coordinator import CONSUMER_OFFSETS, coordinator_decoder
from codegen.dumps.views.committed import CommittedOffsets
from codegen.dumps.views.compacted import CompactedView
from codegen.dumps.views.consumer_offsets import read_compacted
from codegen.forensics.groups import AsOf, AssignorInventory, group_reports, group_views
from codegen.forensics.groups_command import groups_command
from codegen.forensics.inputs import parse_as_of
from codegen.naming import camel_keys
from generated import MESSAGES
from generated.consumer_group_current_member_assignment_value import TopicPartitions
from generated.consumer_protocol_assignment import ConsumerProtocolAssignment
from generated.consumer_protocol_subscription import ConsumerProtocolSubscription
from generated.group_metadata_value import MemberMetadata

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "data" / "forensics" / "aibulb"
TOPIC_ID = uuid.UUID("00000000-0000-0000-0000-0000000000aa")


def subscription(version: int) -> bytes:
    sub = ConsumerProtocolSubscription(topics=["t"])
    return struct.pack(">h", version) + sub.encode(version)


def member(member_id: str, sub_version: int = 1) -> MemberMetadata:
    assignment = ConsumerProtocolAssignment()
    return MemberMetadata(
        member_id=member_id,
        client_id=f"client-{member_id}",
        client_host="/10.0.0.1",
        rebalance_timeout=1,
        session_timeout=1,
        subscription=subscription(sub_version),
        assignment=b"\x00\x00" + assignment.encode(0),
    )


def classic(group: str, generation: int, protocol: str | None, *members: MemberMetadata) -> Any:
    return (
        key("GroupMetadataKey", group=group),
        value(
            "GroupMetadataValue",
            3,
            protocol_type="consumer",
            generation=generation,
            protocol=protocol,
            leader=members[0].member_id if members else None,
            members=list(members),
        ),
    )


def commit(group: str, partition: int, offset: int | None) -> Any:
    k = key("OffsetCommitKey", group=group, topic="t", partition=partition)
    if offset is None:
        return (k, None)
    return (k, value("OffsetCommitValue", 3, offset=offset, commit_timestamp=1))


def write(tmp_path: Path, *batches: list[Any]) -> Path:
    folder = tmp_path / "__consumer_offsets-5"
    folder.mkdir()
    with SegmentWriter(folder / "00000000000000000000.log") as w:
        for i, records in enumerate(batches):
            w.write_batch(records, timestamp=1_700_000_000_000 + i * 1000)
    return folder


@pytest.fixture
def classic_dump(tmp_path: Path) -> Path:
    return write(
        tmp_path,
        [classic("g", 1, "range", member("a"))],  # 0
        [commit("g", 0, 10)],  # 1
        [classic("g", 2, "range", member("a"), member("b"))],  # 2
        [classic("g", 3, None)],  # 3: everyone left
        [classic("g", 4, "cooperative-sticky", member("b"))],  # 4
        [commit("g", 0, None)],  # 5: offset deleted
        [(key("GroupMetadataKey", group="g"), None)],  # 6: group deleted
    )


def kinds(report: Any) -> list[tuple[int, str]]:
    return [(e.offset, e.kind) for e in report.events]


def test_classic_timeline(classic_dump: Path) -> None:
    (report,) = group_reports(classic_dump)
    assert report.type is None and report.state == "Dead"
    assert kinds(report) == [
        (0, "created"),
        (0, "member-joined"),
        (2, "rebalance"),
        (2, "member-joined"),
        (3, "rebalance"),
        (3, "member-left"),
        (3, "member-left"),
        (4, "rebalance"),
        (4, "member-joined"),
        (4, "assignor-changed"),
        (5, "offset-deleted"),
        (6, "group-deleted"),
    ]
    by_offset = {(e.offset, e.kind): e.detail for e in report.events}
    assert by_offset[(2, "rebalance")] == {"generation": 2, "previous": 1}
    assert by_offset[(2, "member-joined")] == {"member": "b"}
    assert by_offset[(4, "assignor-changed")] == {
        "previous": "range",
        "protocol": "cooperative-sticky",
    }
    assert by_offset[(5, "offset-deleted")] == {"topic": "t", "partition": 0}
    assert report.events[0].timestamp == 1_700_000_000_000


def test_as_of_offset_and_time(classic_dump: Path) -> None:
    (at2,) = group_reports(classic_dump, as_of=AsOf(offset=2))
    assert (at2.type, at2.state, at2.generation, at2.protocol) == ("classic", "Stable", 2, "range")
    assert [m["memberId"] for m in at2.members] == ["a", "b"]
    assert at2.committed_offsets == 1
    assert kinds(at2)[-1] == (2, "member-joined")
    (at3,) = group_reports(classic_dump, as_of=parse_as_of("2023-11-14T22:13:23Z"))
    assert (at3.generation, at3.state, at3.members) == (3, "Empty", [])


def test_parse_as_of() -> None:
    assert parse_as_of("42") == AsOf(offset=42)
    assert parse_as_of("1970-01-01T00:00:01Z") == AsOf(timestamp_ms=1000)
    assert parse_as_of("1970-01-01T00:00:01") == AsOf(timestamp_ms=1000)
    with pytest.raises(ValueError, match="neither a log offset"):
        parse_as_of("yesterday")


def test_assignor_inventory(tmp_path: Path) -> None:
    folder = write(
        tmp_path,
        [classic("old", 1, "range", member("a", 0), member("b", 1))],
        [classic("new", 1, "range", member("c", 1))],
        [classic("done", 1, "cooperative-sticky", member("d", 1))],
    )
    reports = {r.group: r.inventory for r in group_reports(folder)}
    assert reports["old"] is not None and reports["old"].cooperative_switch == "not-possible"
    assert "a" in reports["old"].why and reports["old"].subscription_versions == {"a": 0, "b": 1}
    assert reports["new"] is not None and reports["new"].cooperative_switch == "two-step"
    assert reports["new"].advertised == {"c": None}  # not in the log
    assert reports["done"] is not None and reports["done"].cooperative_switch == "done"
    assert reports["done"].chosen == "cooperative-sticky"
    for inventory in reports.values():  # the JSON the reports print: the dataclass's fields
        assert inventory is not None
        assert inventory.to_json() == camel_keys(asdict(inventory))
    consumer = AssignorInventory(
        "uniform", ["uniform"], {"m": ["uniform"]}, ["uniform"], {}, None, ""
    )
    assert consumer.to_json() == camel_keys(asdict(consumer))


def consumer_member(group: str, member_id: str) -> Any:
    return (
        key("ConsumerGroupMemberMetadataKey", group_id=group, member_id=member_id),
        value(
            "ConsumerGroupMemberMetadataValue",
            0,
            client_id="c",
            client_host="/h",
            subscribed_topic_names=["t"],
            server_assignor="uniform",
        ),
    )


def member_assignment(group: str, member_id: str, epoch: int, assigned: TopicPartitions) -> Any:
    """A consumer group member's current assignment (epoch, the one before it) of ``assigned``."""
    return (
        key("ConsumerGroupCurrentMemberAssignmentKey", group_id=group, member_id=member_id),
        value(
            "ConsumerGroupCurrentMemberAssignmentValue",
            0,
            member_epoch=epoch,
            previous_member_epoch=epoch - 1,
            assigned_partitions=[assigned],
        ),
    )


def test_conversion_to_consumer_group_and_epochs(tmp_path: Path) -> None:
    assigned = TopicPartitions(topic_id=TOPIC_ID, partitions=[0, 1], assignment_epochs=[3, 4])
    folder = write(
        tmp_path,
        [classic("g", 7, "range", member("a"))],  # 0
        [(key("GroupMetadataKey", group="g"), None)],  # 1
        [  # 2..4: the same group id as a consumer group
            consumer_member("g", "m"),
            (
                key("ConsumerGroupMetadataKey", group_id="g"),
                value("ConsumerGroupMetadataValue", 0, epoch=4),
            ),
            member_assignment("g", "m", 4, assigned),
        ],
    )
    (report,) = group_reports(folder)
    assert (report.type, report.epoch, report.state) == ("consumer", 4, "Stable")
    assert kinds(report) == [
        (0, "created"),
        (0, "member-joined"),
        (1, "group-deleted"),
        (2, "created"),
        (2, "protocol-conversion"),
        (2, "member-joined"),
        (3, "rebalance"),
        (4, "member-epoch"),
    ]
    conversion = report.events[4].detail
    assert conversion == {"from": "classic", "to": "consumer"}
    epoch = report.events[-1].detail
    assert epoch["memberEpoch"] == 4 and epoch["previousMemberEpoch"] == 3
    assert epoch["assigned"] == {str(TOPIC_ID): {"partitions": [0, 1], "assignmentEpochs": [3, 4]}}
    assert report.inventory is not None and report.inventory.chosen == "uniform"
    assert report.inventory.cooperative_switch is None
    assert report.members[0]["assignors"] == ["uniform"]


def test_members_of_a_consumer_group_and_a_type_replaced_in_place(tmp_path: Path) -> None:
    """A consumer group's members join and leave by their own records (a tombstone of one
    member's record: that member alone leaves; its assignment's tombstone keeps it), and a
    group id written as another type with no tombstone between converts from the type it had."""
    member_key = key("ConsumerGroupMemberMetadataKey", group_id="g", member_id="m")
    assignment_key = key("ConsumerGroupCurrentMemberAssignmentKey", group_id="g", member_id="n")
    folder = write(
        tmp_path,
        [classic("g", 7, "range", member("a"))],  # 0
        [consumer_member("g", "m")],  # 1: converted in place
        [consumer_member("g", "n")],  # 2
        [
            (
                key("ConsumerGroupMetadataKey", group_id="g"),
                value("ConsumerGroupMetadataValue", 0, epoch=2),
            )
        ],  # 3
        [(assignment_key, None)],  # 4: n stays
        [(member_key, None)],  # 5: m leaves
        [(member_key, None)],  # 6: m left already
        [classic("g", 8, "range", member("b"))],  # 7: back to classic, in place
    )
    (report,) = group_reports(folder)
    assert kinds(report) == [
        (0, "created"),
        (0, "member-joined"),
        (1, "created"),
        (1, "protocol-conversion"),
        (1, "member-joined"),
        (2, "member-joined"),
        (3, "rebalance"),
        (5, "member-left"),
        (7, "created"),
        (7, "protocol-conversion"),
        (7, "member-joined"),
    ]
    details = [(e.kind, e.detail) for e in report.events]
    assert details[3] == ("protocol-conversion", {"from": "classic", "to": "consumer"})
    assert details[6] == ("rebalance", {"epoch": 2, "previous": None})
    assert details[7] == ("member-left", {"member": "m"})
    assert details[9] == ("protocol-conversion", {"from": "consumer", "to": "classic"})
    assert (report.type, report.generation, [m["memberId"] for m in report.members]) == (
        "classic",
        8,
        ["b"],
    )


def test_member_records_that_keep_the_members_make_no_event(tmp_path: Path) -> None:
    """A member's records once it has joined (its metadata again, its assignment) change no
    member and no field of the group: the member's epoch is its own event alone."""
    assigned = TopicPartitions(topic_id=TOPIC_ID, partitions=[0], assignment_epochs=[1])
    assignment = member_assignment("g", "m", 1, assigned)
    folder = write(
        tmp_path,
        [consumer_member("g", "m")],  # 0
        [consumer_member("g", "m")],  # 1: the same member again
        [assignment],  # 2
        [consumer_member("g", "n"), consumer_member("g", "m")],  # 3, 4
    )
    (report,) = group_reports(folder)
    assert kinds(report) == [
        (0, "created"),
        (0, "member-joined"),
        (2, "member-epoch"),
        (3, "member-joined"),
    ]
    assert [m["memberId"] for m in report.members] == ["m", "n"]


def test_groups_view_applies_and_counts_each_record_as_the_compacted_view(
    tmp_path: Path,
) -> None:
    """GroupsView.add finds each record's role itself and has the compacted view apply it
    (add_known): the groups, offsets and counts of a plain CompactedView fed the same file,
    each record counted once, whether it makes, changes, converts or deletes a group."""
    assigned = TopicPartitions(topic_id=TOPIC_ID, partitions=[0], assignment_epochs=[1])
    folder = write(
        tmp_path,
        [classic("g", 1, "range", member("a")), commit("g", 0, 10)],  # made, an offset
        [classic("g", 2, "range", member("a"), member("b"))],  # changed
        [consumer_member("g", "m"), member_assignment("g", "m", 1, assigned)],  # converted
        [consumer_member("h", "n"), commit("h", 1, 3), commit("g", 0, None)],
        [(key("ConsumerGroupMetadataKey", group_id="g"), None)],  # deleted
        [(b"\x00\x63", b"?")],  # a record type the specs do not have
    )
    (view,) = group_views(folder)
    plain = CompactedView()
    offsets = CommittedOffsets()
    for f in sorted(folder.glob("*.log")):
        for _ in read_compacted(
            f,
            plain,
            offsets,
            coordinator_decoder(CONSUMER_OFFSETS),
            max_batch_size=DEFAULT_MAX_DECOMPRESSED_SIZE,
            max_batch_records=DEFAULT_MAX_BATCH_RECORDS,
        ):
            pass
    plain.take_offsets(offsets)
    counts = (view.records, view.unknown, view.errors)
    assert counts == (plain.records, plain.unknown, plain.errors)
    assert view.records in (7, 10) and view.unknown == 1  # commits as columns, or as records
    assert view.groups == plain.groups and view.offsets == plain.offsets
    assert set(view.groups) == {"h"}


def test_real_group_created_emptied_and_deleted() -> None:
    reports = {r.group: r for r in group_reports(REAL)}
    deleted = reports["console-consumer-54765"]
    assert deleted.state == "Dead" and deleted.partition == 28
    assert [e.kind for e in deleted.events] == [
        "created",
        "member-joined",
        "rebalance",
        "member-left",
        "group-deleted",
    ]
    live = reports["console-consumer-33452"]
    assert (live.type, live.state, live.generation, live.protocol) == (
        "classic",
        "Stable",
        1,
        "range",
    )


def run(*args: str) -> Any:
    return CliRunner().invoke(groups_command, list(args))


def test_cli(classic_dump: Path) -> None:
    table = run(str(classic_dump), "--as-of", "4")
    assert table.exit_code == 0, table.output
    assert table.output.startswith("g  (partition 5, classic, Stable, protocol cooperative-sticky")
    assert "assignor-changed" in table.output and "cooperative switch: done" in table.output
    jsonl = run(str(classic_dump), "--group", "g", "--format", "jsonl")
    assert jsonl.exit_code == 0
    (doc,) = [json.loads(line) for line in jsonl.output.splitlines()]
    assert doc["state"] == "Dead" and doc["timeline"][-1]["kind"] == "group-deleted"
    bad = run(str(classic_dump), "--as-of", "soon")
    assert bad.exit_code == 2 and "ISO-8601" in bad.output
    missing = run(str(classic_dump), "--group", "nope")
    assert missing.exit_code == 2 and "not in the dump" in missing.output


SPOOLDIR = ROOT / "tests" / "data" / "kafka-data" / "mscaldas-spooldir"


def test_empty_group_id_and_streams_groups_on_real_data() -> None:
    reports = {r.group: r for r in group_reports(SPOOLDIR)}
    # A real group with the empty id (Kafka Connect committed offsets under it), deleted.
    assert reports[""].state == "Dead"
    table = CliRunner().invoke(groups_command, [str(SPOOLDIR)])
    assert table.exit_code == 0, table.output
    assert table.output.startswith('"" (empty group id)  (partition 0, deleted')
    # Control Center's Kafka Streams group (assignor "stream"): no cooperative-switch advice.
    streams = reports["_confluent-controlcenter-5-1-2-1-command"]
    assert streams.inventory is not None
    assert streams.inventory.cooperative_switch is None
    assert "Kafka Streams application" in streams.inventory.why
    missing = CliRunner().invoke(groups_command, [str(SPOOLDIR), "--group", ""])
    assert missing.exit_code == 0, missing.output


def test_group_not_found_names_the_empty_id(tmp_path: Path) -> None:
    result = CliRunner().invoke(groups_command, [str(REAL), "--group", ""])
    assert result.exit_code == 2
    assert 'group "" (empty group id) is not in the dump' in result.output


def test_a_data_topic_is_bad_input() -> None:
    result = CliRunner().invoke(groups_command, [str(REAL / "my-topic-0")])
    assert result.exit_code == 2
    assert "expected __consumer_offsets-N" in result.output and "my-topic" in result.output


def test_protocol_type_as_list_groups_gives_it(tmp_path: Path) -> None:
    folder = tmp_path / "__consumer_offsets-0"
    folder.mkdir()
    key = struct.pack(">h", 3) + MESSAGES["ConsumerGroupMetadataKey"](group_id="cg").encode(0)
    value = struct.pack(">h", 0) + MESSAGES["ConsumerGroupMetadataValue"](epoch=1).encode(0)
    with SegmentWriter(folder / "00000000000000000000.log") as w:
        w.write_batch([(key, value)])
    (cg,) = group_reports(tmp_path)
    assert (cg.type, cg.protocol_type) == ("consumer", "consumer")
    assert cg.inventory is not None and cg.inventory.cooperative_switch is None
    assert cg.inventory.why == "consumer groups are assigned by the coordinator's server assignor"


def test_json_bytes_are_the_json_line_encoded() -> None:
    """groups writes its lines as orjson makes them (bytes), the standard encoder's where
    orjson refuses a value: the text of ``json_line``, UTF-8."""
    from codegen.forensics.output import json_bytes, json_line

    for doc in ({"group": "g", "members": [{"id": "é"}]}, {"offset": 2**64}, {1: None}):
        assert json_bytes(doc) == json_line(doc).encode()
    assert json_bytes({"offset": 2**64}) == b'{"offset":18446744073709551616}'
