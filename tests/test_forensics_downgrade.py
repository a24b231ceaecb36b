"""downgrade-check: which Kafka release can load a __consumer_offsets dump (KIP-915, KIP-848)."""

from __future__ import annotations

import json
import struct
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from downgrade_logs import (
    cluster,
    commit,
    consumer_group,
    dump,
    group_metadata,
    key,
    partition,
    share_snapshot,
    value,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.dumps import SegmentWriter
from codegen.dumps.model import ControlType
from codegen.forensics.coordinator_partitions import live_records
from codegen.forensics.downgrade import check_downgrade
from codegen.forensics.downgrade_command import downgrade_check_command
from codegen.forensics.output import indented_json
from codegen.forensics.release_specs import RELEASE_JARS, derive_releases
from codegen.forensics.releases import HARD_CODED, release, release_lines

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "data" / "forensics" / "ldi-poc"
RELEASE_JAR_DIR = ROOT / ".cache" / "kafka-releases" / "jars"


@pytest.fixture
def kafka_2_1_dump(tmp_path: Path) -> Path:
    """What a 2.1 broker writes: GroupMetadataValue v2 and OffsetCommitValue v3."""
    return dump(tmp_path, [group_metadata("g", 2)], [commit("g", 0, 10, 3), commit("g", 1, 5, 3)])


def test_kafka_2_1_dump_is_safe_for_2_1(kafka_2_1_dump: Path) -> None:
    report = check_downgrade(kafka_2_1_dump, "2.1")
    assert not report.blocked
    assert report.live_records == 3


def test_kafka_2_1_dump_is_blocked_for_2_0(kafka_2_1_dump: Path) -> None:
    report = check_downgrade(kafka_2_1_dump, "2.0")
    assert report.blocked
    # The loader fails on the first record (offset 0) and never reads on; each other kind of
    # record it could not read is named once, with how many there are.
    found = [
        (b.name, b.value_version, b.offset, b.partition, b.group, b.count) for b in report.blockers
    ]
    assert found == [("GroupMetadata", 2, 0, 3, "g", 1), ("OffsetCommit", 3, 1, 3, "g", 2)]
    assert {b.rule for b in report.blockers} == {"value-version"}
    first = report.blockers[0].reason
    assert "Unknown group metadata message version: 2" in first
    assert "served as empty" in first or "serves the partition as empty" in first


def test_offset_commit_v4_of_a_4x_dump_is_blocked_for_3_4_only(tmp_path: Path) -> None:
    folder = dump(tmp_path, [group_metadata("g", 3)], [commit("g", 0, 10, 4)])
    blocked = check_downgrade(folder, "3.4")
    assert [(b.rule, b.name, b.value_version) for b in blocked.blockers] == [
        ("value-version", "OffsetCommit", 4)
    ]
    # KIP-915's backport: 3.4.1's OffsetCommitValue reads up to v4.
    assert not check_downgrade(folder, "3.4.1").blocked
    assert not check_downgrade(folder, "3.5").blocked
    assert not check_downgrade(folder, "4.4").blocked


def test_a_value_version_newer_than_the_release_reads(tmp_path: Path) -> None:
    # v5 does not exist yet. The old group coordinator throws on it in every release
    # (readOffsetMessageValue); the new one reads it as v4 before 4.0 (no version guard in the
    # generated read()), and from 4.0 its serde throws UnknownRecordVersionException.
    folder = dump(tmp_path, [commit("g", 0, 10, 5)])
    for to in ("3.4", "3.4.1", "3.5", "3.9", "4.0", "4.4"):
        (blocker,) = check_downgrade(folder, to).blockers
        assert blocker.rule == "value-version", to
    assert "Unknown offset message version: 5" in check_downgrade(folder, "3.9").blockers[0].reason
    assert not check_downgrade(folder, "3.9", group_coordinator="new").blocked
    strict = check_downgrade(folder, "4.0").blockers[0].reason
    assert "UnknownRecordVersionException" in strict and "does not serve it" in strict


def test_every_record_on_disk_is_loaded_not_only_live_ones(tmp_path: Path) -> None:
    gm_key, _ = group_metadata("gone", 3)
    folder = tmp_path / "__consumer_offsets-0"
    folder.mkdir()
    with SegmentWriter(folder / "00000000000000000000.log") as w:
        w.write_batch([group_metadata("gone", 3)])
        w.write_batch([(gm_key, None)])  # group deleted: its v3 record is no longer live
        w.write_batch([commit("g", 0, 1, 3)])
        w.write_batch([commit("g", 0, 2, 1)])  # the same key rewritten as v1
        w.write_batch([commit("t", 0, 1, 3)], producer_id=7, producer_epoch=0, transactional=True)
        w.write_control(ControlType.ABORT, producer_id=7, producer_epoch=0)
    # A broker loads the partition from its log start: the tombstoned v3 group record, the
    # overwritten v3 commit and the aborted one are read too, and 2.0 fails on the first.
    report = check_downgrade(folder, "2.0")
    assert report.live_records == 1
    assert [(b.offset, b.name, b.value_version, b.count) for b in report.blockers] == [
        (0, "GroupMetadata", 3, 1),
        (2, "OffsetCommit", 3, 2),
    ]
    assert "no longer live" in report.blockers[0].reason
    assert not check_downgrade(folder, "2.3").blocked


def test_committed_transactional_commit_is_live(tmp_path: Path) -> None:
    folder = tmp_path / "__consumer_offsets-0"
    folder.mkdir()
    with SegmentWriter(folder / "00000000000000000000.log") as w:
        w.write_batch([commit("t", 0, 1, 3)], producer_id=7, producer_epoch=0, transactional=True)
        w.write_control(ControlType.COMMIT, producer_id=7, producer_epoch=0)
    assert [b.group for b in check_downgrade(folder, "2.0").blockers] == ["t"]


def test_consumer_group_must_be_converted_before_downgrading(tmp_path: Path) -> None:
    cg = (
        key("ConsumerGroupMetadataKey", group_id="cg"),
        value("ConsumerGroupMetadataValue", 0, epoch=5),
    )
    folder = dump(tmp_path, [cg])
    # The old group coordinator reads record types 0-2 only (3.5-3.9 run it by default).
    for target in ("3.4", "2.0", "3.5", "3.9"):
        blockers = check_downgrade(folder, target).blockers
        assert [(b.rule, b.group, b.record_type) for b in blockers] == [
            ("group-conversion", "cg", 3)
        ]
        assert "KIP-848" in blockers[0].reason
    # The new one reads them: 4.0's default, or 3.6-3.9 configured for it.
    assert not check_downgrade(folder, "3.9", group_coordinator="new").blocked
    assert not check_downgrade(folder, "4.0").blocked


def test_a_checks_steps_are_its_blockers_advice_once_each_in_their_order(
    tmp_path: Path,
) -> None:
    # two records of each of two groups: four blockers, one step a group
    folder = dump(tmp_path, consumer_group("b", 5) + consumer_group("a", 5))
    check = next(c for c in check_downgrade(folder, "3.9").checks if c.name == "group coordinator")
    assert len(check.findings) == 4
    assert [s.rsplit(" ", 1)[-1] for s in check.steps] == ["b", "a"]


def test_streams_group_is_blocked_before_the_release_that_knows_it(tmp_path: Path) -> None:
    sg = (
        key("StreamsGroupMetadataKey", group_id="app"),
        value("StreamsGroupMetadataValue", 0, epoch=1),
    )
    folder = dump(tmp_path, [sg])
    assert [b.rule for b in check_downgrade(folder, "4.0").blockers] == ["group-conversion"]
    assert not check_downgrade(folder, "4.1").blocked


def test_unknown_record_type_is_skipped_from_kip_915_on(tmp_path: Path) -> None:
    unknown = (struct.pack(">hh", 300, 7), struct.pack(">h", 0) + b"\x00")
    folder = dump(tmp_path, [unknown])
    skipped = check_downgrade(folder, "3.5")
    assert not skipped.blocked
    assert [(b.rule, b.record_type, b.value_version) for b in skipped.ignored] == [
        ("ignored", 300, 0)
    ]
    blocked = check_downgrade(folder, "3.4")
    assert [(b.rule, b.record_type, b.name) for b in blocked.blockers] == [
        ("unknown-type", 300, "unknown")
    ]


def test_real_3_7_broker_dump() -> None:
    # GroupMetadataValue v3 and OffsetCommitValue v3: readable from 2.3 (KIP-345) on.
    assert not check_downgrade(REAL, "2.3").blocked
    assert not check_downgrade(REAL, "3.9").blocked
    blocked = check_downgrade(REAL, "2.2")
    assert [(b.name, b.value_version, b.partition, b.group) for b in blocked.blockers] == [
        ("GroupMetadata", 3, 6, "DEVSmileCDR")
    ]
    older = check_downgrade(REAL, "2.0")
    assert {b.name for b in older.blockers} == {"GroupMetadata", "OffsetCommit"}
    views = live_records(REAL)
    assert [v.partition for v in views] == [6]


def test_every_release_line_from_0_11_to_the_pinned_one_is_covered() -> None:
    lines = release_lines()
    assert lines[0] == "0.11" and lines[-1] == "4.4"
    expected = ["0.11", "1.0", "1.1"] + [f"2.{m}" for m in range(9)]
    expected += [f"3.{m}" for m in range(10)] + [f"4.{m}" for m in range(5)]
    assert list(lines) == expected
    assert set(HARD_CODED) | set(RELEASE_JARS) == set(lines)
    assert not set(HARD_CODED) & set(RELEASE_JARS)


def test_release_versions_resolve_to_their_line() -> None:
    assert release("3.4.1").line == "3.4"
    assert release("0.11.0.3").line == "0.11"
    assert release("4.4.0").ignores_unknown
    assert not release("3.4").ignores_unknown
    # KIP-915's backport: 3.4.1 skips unknown keys and reads OffsetCommitValue v4.
    assert (release("3.4").version, release("3.4.1").version) == ("3.4.0", "3.4.1")
    assert release("3.4.1").ignores_unknown and release("3.4.1").label == "3.4.1"
    assert release("3.4.1").reads(1).highest_value_version == 4  # type: ignore[union-attr]
    assert release("3.4").reads(1).highest_value_version == 3  # type: ignore[union-attr]
    # The 2.8 jars (first with JSON specs) agree with the hard-coded 2.7 table.
    seven, eight = release("2.7"), release("2.8")
    assert {t: r.highest_value_version for t, r in seven.record_types.items()} == {
        t: r.highest_value_version for t, r in eight.record_types.items()
    }


def test_pinned_release_matches_our_own_specs() -> None:
    pinned = release("4.4")
    from codegen.dumps.coordinator import CONSUMER_OFFSETS, record_types

    for type_id, ours in record_types(CONSUMER_OFFSETS).items():
        assert pinned.reads(type_id) is not None, ours.name
        assert pinned.record_types[type_id].highest_value_version == (
            ours.value_class.HIGHEST_VERSION
        ), ours.name


def run(*args: str) -> Any:
    return CliRunner().invoke(downgrade_check_command, list(args))


def test_cli_exit_codes_and_json(kafka_2_1_dump: Path) -> None:
    # Only __consumer_offsets: the other checks cannot be made, so safe as far as checked (3).
    safe = run(str(kafka_2_1_dump), "--to", "2.1")
    assert safe.exit_code == 3, safe.output
    assert "SAFE AS FAR AS CHECKED: Kafka 2.1, 3 live __consumer_offsets records" in safe.output
    assert "transaction coordinator  NOT CHECKED" in safe.output
    blocked = run(str(kafka_2_1_dump), "--to", "2.0", "--format", "json")
    assert blocked.exit_code == 1
    doc = json.loads(blocked.output)
    assert doc["safe"] is False and doc["target"] == "2.0"
    assert doc["blockers"][0]["rule"] == "value-version"
    assert set(doc["blockers"][0]) >= {"partition", "offset", "recordType", "valueVersion", "group"}
    table = run(str(kafka_2_1_dump), "--to", "2.0")
    assert table.exit_code == 1
    assert "value-version" in table.output and "BLOCKED: Kafka 2.0" in table.output


def test_cli_bad_input(tmp_path: Path, kafka_2_1_dump: Path) -> None:
    missing = run(str(tmp_path / "nope"), "--to", "3.4")
    assert missing.exit_code == 2
    assert "no such file or folder" in missing.output
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(str(empty), "--to", "3.4").exit_code == 2
    bad = run(str(kafka_2_1_dump), "--to", "5.1")
    assert bad.exit_code == 2
    assert "give a release from 0.11 to 4.4" in bad.output


@pytest.mark.oracle
def test_vendored_release_table_matches_the_jars() -> None:
    if not all((RELEASE_JAR_DIR / jar).is_file() for jar in RELEASE_JARS.values()):
        pytest.skip("run tests/oracle/releases/fetch.sh to fetch the release jars")
    vendored = json.loads((ROOT / "codegen" / "forensics" / "release_specs.json").read_text())[
        "releases"
    ]
    assert derive_releases(RELEASE_JAR_DIR) == vendored


# --------------------------------------------------------------------- a whole cluster's checks

KAFKA_DATA = ROOT / "tests" / "data" / "kafka-data"


def statuses(report: Any) -> dict[str, str]:
    return {c.name: c.status for c in report.checks}


def test_a_whole_cluster_within_the_target_is_safe(tmp_path: Path) -> None:
    image = cluster(tmp_path, {"__consumer_offsets": 1, "orders": 2})
    partition(image, "__consumer_offsets", 0, [group_metadata("g", 3)], [commit("g", 0, 10, 3)])
    report = check_downgrade(image, "3.9")
    assert statuses(report) == {
        "metadata records": "passed",
        "group coordinator": "passed",
        "transaction coordinator": "passed",
        "share coordinator": "passed",
        "dynamic configs": "passed",
        "cluster features": "passed",
    }
    assert report.safe and report.verdict == "SAFE" and report.mode == "KRaft"
    result = run(str(image), "--to", "3.9")
    assert result.exit_code == 0, result.output
    assert "SAFE: Kafka 3.9" in result.output


def test_metadata_version_above_the_target_blocks(tmp_path: Path) -> None:
    image = cluster(tmp_path, {"__consumer_offsets": 1}, metadata_version=21)
    partition(image, "__consumer_offsets", 0, [commit("g", 0, 10, 3)])
    report = check_downgrade(image, "3.4")
    assert statuses(report)["cluster features"] == "blocked"
    (finding,) = next(c for c in report.checks if c.name == "cluster features").findings
    assert "metadata.version 21 (3.9-IV0)" in finding and "8 (3.4-IV0)" in finding
    result = run(str(image), "--to", "3.4")
    assert result.exit_code == 1
    assert "the oldest release line supporting it is 3.9" in result.output
    # Before 3.3 there is no production KRaft at all.
    assert statuses(check_downgrade(image, "2.8"))["cluster features"] == "blocked"


def test_group_configs_must_be_deleted_before_a_release_without_the_group_resource(
    tmp_path: Path,
) -> None:
    image = cluster(
        tmp_path,
        {"__consumer_offsets": 1},
        metadata_version=25,
        configs=[(32, "my-app", "group.consumer.session.timeout.ms", "50000")],
    )
    partition(image, "__consumer_offsets", 0, [commit("g", 0, 10, 3)])
    report = check_downgrade(image, "3.9")
    configs = next(c for c in report.checks if c.name == "dynamic configs")
    assert configs.status == "blocked"
    assert (
        "GROUP (32) config(s) of 'my-app': group.consumer.session.timeout.ms" in configs.findings[0]
    )
    assert "--entity-type groups --entity-name my-app --delete-config" in configs.steps[0]
    assert statuses(check_downgrade(image, "4.0"))["dynamic configs"] == "passed"


def test_a_deleted_group_config_no_longer_blocks(tmp_path: Path) -> None:
    image = cluster(
        tmp_path,
        {"__consumer_offsets": 1},
        configs=[
            (32, "my-app", "group.consumer.session.timeout.ms", "50000"),
            (32, "my-app", "group.consumer.session.timeout.ms", None),
        ],
    )
    partition(image, "__consumer_offsets", 0, [commit("g", 0, 10, 3)])
    assert statuses(check_downgrade(image, "3.9"))["dynamic configs"] == "passed"


def test_finalized_features_above_the_target_block(tmp_path: Path) -> None:
    image = cluster(
        tmp_path, {"__consumer_offsets": 1}, metadata_version=25, features={"group.version": 1}
    )
    partition(image, "__consumer_offsets", 0, [commit("g", 0, 10, 3)])
    report = check_downgrade(image, "3.9")
    features = next(c for c in report.checks if c.name == "cluster features")
    assert any("group.version is finalized at 1, above the 0" in f for f in features.findings)
    assert any("downgrade --feature group.version=0" in s for s in features.steps)
    assert statuses(check_downgrade(image, "4.0"))["cluster features"] == "passed"


def test_share_state_on_a_release_without_share_groups_blocks(tmp_path: Path) -> None:
    image = cluster(tmp_path, {"__consumer_offsets": 1, "__share_group_state": 1}, 25)
    partition(image, "__consumer_offsets", 0, [commit("g", 0, 10, 3)])
    partition(image, "__share_group_state", 0, [share_snapshot("sg")])
    report = check_downgrade(image, "3.9")
    assert statuses(report)["share coordinator"] == "blocked"
    (blocker,) = [b for b in report.blockers if b.topic == "__share_group_state"]
    assert blocker.rule == "share-group" and blocker.group == "sg"
    share = next(c for c in report.checks if c.name == "share coordinator")
    assert any(
        "kafka-share-groups.sh --bootstrap-server B --delete --group sg" in s for s in share.steps
    )
    assert "convert" not in " ".join(share.steps)
    assert statuses(check_downgrade(image, "4.4"))["share coordinator"] == "passed"


def test_flexible_transaction_state_blocks_releases_reading_only_v0(tmp_path: Path) -> None:
    image = cluster(tmp_path, {"__consumer_offsets": 1, "__transaction_state": 1})
    partition(image, "__consumer_offsets", 0, [commit("g", 0, 10, 3)])
    txn = (
        key("TransactionLogKey", transactional_id="tx-1"),
        value("TransactionLogValue", 1, producer_id=7, producer_epoch=0, transaction_timeout_ms=1),
    )
    partition(image, "__transaction_state", 0, [txn])
    report = check_downgrade(image, "3.4")
    assert statuses(report)["transaction coordinator"] == "blocked"
    (blocker,) = [b for b in report.blockers if b.topic == "__transaction_state"]
    assert (blocker.rule, blocker.value_version, blocker.group) == ("value-version", 1, "tx-1")
    assert "transaction.version=0" in blocker.reason
    assert statuses(check_downgrade(image, "3.9"))["transaction coordinator"] == "passed"


def test_partitions_missing_from_the_input_are_partly_checked(tmp_path: Path) -> None:
    image = cluster(tmp_path, {"__consumer_offsets": 2, "__transaction_state": 3})
    partition(image, "__consumer_offsets", 0, [commit("g", 0, 10, 3)])
    report = check_downgrade(image, "3.9")
    assert statuses(report)["group coordinator"] == "partly checked"
    assert statuses(report)["transaction coordinator"] == "not checked"
    assert not report.blocked and report.verdict == "SAFE AS FAR AS CHECKED"
    result = run(str(image), "--to", "3.9", "--format", "json")
    assert result.exit_code == 3
    doc = json.loads(result.output)
    assert doc["verdict"] == "SAFE AS FAR AS CHECKED" and doc["exitCode"] == 3


def test_two_broker_images_are_merged(tmp_path: Path) -> None:
    image = cluster(tmp_path, {"__consumer_offsets": 2})
    partition(image, "__consumer_offsets", 0, [commit("g", 0, 10, 3)])
    other = tmp_path / "broker-2"
    other.mkdir()
    partition(other, "__consumer_offsets", 1, [commit("h", 0, 10, 3)])
    assert check_downgrade(image, "3.9").verdict == "SAFE AS FAR AS CHECKED"
    both = check_downgrade([str(tmp_path / "broker-*")], "3.9")
    assert both.verdict == "SAFE" and both.live_records == 2


def test_real_kraft_dump_is_blocked_by_its_metadata_version() -> None:
    # ldi-poc: metadata.version 19 (3.7-IV4); a 3.4 broker supports at most 8.
    result = run(str(KAFKA_DATA / "ldi-poc"), "--to", "3.4")
    assert result.exit_code == 1, result.output
    assert "metadata.version 19 (3.7-IV4) is above the highest Kafka 3.4 supports" in result.output
    assert "inter.broker.protocol.version" not in result.output
    # Only one of its 50 __consumer_offsets partitions is in the data set.
    newer = run(str(KAFKA_DATA / "ldi-poc"), "--to", "3.9")
    assert newer.exit_code == 3, newer.output
    assert "1 of 50 __consumer_offsets partitions read" in newer.output


def test_a_data_topic_or_an_unrelated_folder_is_bad_input() -> None:
    data = run(str(KAFKA_DATA / "aibulb" / "my-topic-0"), "--to", "3.4")
    assert data.exit_code == 2
    assert "expected __consumer_offsets-N" in data.output
    assert "holds partition folders of my-topic" in data.output
    unrelated = run(str(ROOT / "docs"), "--to", "3.4")
    assert unrelated.exit_code == 2
    assert "no Kafka partition folder or segment" in unrelated.output


# ------------------------------------------------------------ share groups in groups and lag


def state_batch(first: int, last: int, state: int, count: int) -> Any:
    from generated.share_snapshot_value import StateBatch

    return StateBatch(
        first_offset=first, last_offset=last, delivery_state=state, delivery_count=count
    )


def write_share_state(image: Path, topic_id: uuid.UUID) -> None:
    """Share group sg's state on partition 0 of ``topic_id``, in ``__share_group_state-0``: a
    snapshot (start 5: 5-6 available, 7-9 acknowledged; state epoch 2, leader epoch 3), an
    update acknowledging 6 (start and leader epoch unchanged: -1), and one releasing 12-13
    (delivered twice) with the start moved to 8 (leader epoch 4)."""
    skey = key("ShareSnapshotKey", group_id="sg", topic_id=topic_id, partition=0)
    ukey = key("ShareUpdateKey", group_id="sg", topic_id=topic_id, partition=0)
    snapshot = value(
        "ShareSnapshotValue",
        0,
        snapshot_epoch=1,
        state_epoch=2,
        leader_epoch=3,
        start_offset=5,
        state_batches=[state_batch(5, 6, 0, 1), state_batch(7, 9, 2, 1)],
    )
    acked = value(
        "ShareUpdateValue",
        0,
        snapshot_epoch=1,
        leader_epoch=-1,
        start_offset=-1,
        state_batches=[state_batch(6, 6, 2, 1)],
    )
    released = value(
        "ShareUpdateValue",
        0,
        snapshot_epoch=1,
        leader_epoch=4,
        start_offset=8,
        state_batches=[state_batch(12, 13, 0, 2)],
    )
    partition(
        image, "__share_group_state", 0, [(skey, snapshot)], [(ukey, acked)], [(ukey, released)]
    )


def test_share_partitions_in_groups_and_lag(tmp_path: Path) -> None:
    from codegen.forensics.groups import group_reports
    from codegen.forensics.groups_command import groups_command
    from codegen.forensics.lag import lag_reports
    from codegen.forensics.lag_command import lag_command
    from codegen.forensics.output import json_line

    image = cluster(tmp_path, {"__consumer_offsets": 1, "__share_group_state": 1, "orders": 1}, 27)
    orders = uuid.UUID(int=3)  # the third topic by name: __consumer_offsets, __share..., orders
    partition(
        image,
        "__consumer_offsets",
        0,
        [
            (
                key("ShareGroupMetadataKey", group_id="sg"),
                value("ShareGroupMetadataValue", 0, epoch=1),
            )
        ],
    )
    write_share_state(image, orders)
    data = image / "orders-0"
    data.mkdir()
    with SegmentWriter(data / "00000000000000000000.log") as w:
        w.write_batch([(None, b"x")] * 20, timestamp=1)
    (sg,) = group_reports(image)
    (state,) = sg.share_partitions
    assert (state.topic, state.start_offset, state.state_epoch, state.leader_epoch) == (
        "orders",
        8,
        2,
        4,
    )
    # 5-6 and 7 fell below the start offset; 8-9 stay acknowledged, 12-13 released (available).
    assert [
        (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in state.in_flight
    ] == [
        (8, 9, 2, 1),
        (12, 13, 0, 2),
    ]
    (lag,) = lag_reports(image)
    (share,) = lag.share_partitions
    # Lag as listShareGroupOffsets gives it (KIP-1226): end 20 - start 8 - 2 acknowledged.
    assert (share.log_end_offset, share.lag, lag.status) == (20, 10, None)
    line = CliRunner().invoke(lag_command, [str(image), "--format", "jsonl"]).output
    assert line == json_line(lag.to_json()) + "\n"  # the line joined from its parts
    doc = json.loads(line)
    assert doc["sharePartitions"][0]["startOffset"] == 8
    assert doc["sharePartitions"][0]["inFlight"][1]["deliveryState"] == "Available"
    table = CliRunner().invoke(groups_command, [str(image)]).output
    assert "share partition orders-0  start offset 8  state epoch 2" in table
    assert "consumer-protocol" not in table


def test_a_partition_on_two_replicas_is_read_once_and_said(tmp_path: Path) -> None:
    import shutil

    image = cluster(tmp_path, {"__consumer_offsets": 1})
    partition(image, "__consumer_offsets", 0, [commit("g", 0, 10, 3)])
    shutil.copytree(image, tmp_path / "broker-2")
    report = check_downgrade([str(tmp_path / "broker-*")], "3.9")
    assert report.safe and report.live_records == 1
    summary = next(c for c in report.checks if c.name == "group coordinator").summary
    assert "1 on several replicas: the one holding the most was read" in summary


def test_a_blocker_reads_as_json_as_its_fields_do() -> None:
    from dataclasses import asdict

    from codegen.forensics.verdict import Blocker
    from codegen.naming import camel_keys

    blocker = Blocker("ignored", 3, 17, 5, "ConsumerGroupMetadata", 0, None, "skipped")
    assert blocker.to_json() == camel_keys(asdict(blocker))
    assert list(blocker.to_json())[3:6] == ["recordType", "name", "valueVersion"]


_json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.text(max_size=12),
    st.sampled_from(["", "'quoted'", 'a "b" \\ c', "\x7f\x00\n\u2028é😀"]),
)
_json_docs = st.recursive(
    _json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=6), inner, max_size=4),
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(doc=_json_docs, indent=st.sampled_from([0, 1, 2]))
def test_indented_json_is_the_standard_encoders_text(doc: Any, indent: int) -> None:
    assert indented_json(doc, indent) == json.dumps(doc, indent=indent)


@pytest.mark.parametrize(
    "doc", [{"x": 1.5}, [float("nan")], {1: "a"}, {"a": [{"b": float("inf")}]}, {"s": {1, 2}}]
)
def test_indented_json_leaves_what_it_does_not_write_to_the_standard_encoder(doc: Any) -> None:
    try:
        expected = json.dumps(doc, indent=1)
    except TypeError:
        with pytest.raises(TypeError):
            indented_json(doc)
        return
    assert indented_json(doc) == expected
