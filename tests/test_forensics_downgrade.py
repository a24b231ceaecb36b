"""downgrade-check: which Kafka release can load a __consumer_offsets dump (KIP-915, KIP-848)."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from codegen.dumps import SegmentWriter
from codegen.dumps.model import ControlType
from codegen.forensics.command import downgrade_check_command
from codegen.forensics.downgrade import check_downgrade, live_records
from codegen.forensics.release_specs import RELEASE_JARS, derive_releases
from codegen.forensics.releases import HARD_CODED, release, release_lines
from generated import MESSAGES

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "data" / "forensics" / "ldi-poc"
RELEASE_JAR_DIR = ROOT / ".cache" / "kafka-releases" / "jars"


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


@pytest.fixture
def kafka_2_1_dump(tmp_path: Path) -> Path:
    """What a 2.1 broker writes: GroupMetadataValue v2 and OffsetCommitValue v3."""
    return dump(tmp_path, [group_metadata("g", 2)], [commit("g", 0, 10, 3), commit("g", 1, 5, 3)])


def test_kafka_2_1_dump_is_safe_for_2_1(kafka_2_1_dump: Path) -> None:
    report = check_downgrade(kafka_2_1_dump, "2.1")
    assert report.safe
    assert report.live_records == 3


def test_kafka_2_1_dump_is_blocked_for_2_0(kafka_2_1_dump: Path) -> None:
    report = check_downgrade(kafka_2_1_dump, "2.0")
    assert not report.safe
    found = {(b.name, b.value_version, b.offset, b.partition, b.group) for b in report.blockers}
    assert found == {
        ("GroupMetadata", 2, 0, 3, "g"),
        ("OffsetCommit", 3, 1, 3, "g"),
        ("OffsetCommit", 3, 2, 3, "g"),
    }
    assert {b.rule for b in report.blockers} == {"value-version"}
    assert "predates KIP-915" in report.blockers[0].reason


def test_offset_commit_v4_of_a_4x_dump_is_blocked_for_3_4_only(tmp_path: Path) -> None:
    folder = dump(tmp_path, [group_metadata("g", 3)], [commit("g", 0, 10, 4)])
    blocked = check_downgrade(folder, "3.4")
    assert [(b.rule, b.name, b.value_version) for b in blocked.blockers] == [
        ("value-version", "OffsetCommit", 4)
    ]
    assert check_downgrade(folder, "3.5").safe
    assert check_downgrade(folder, "4.4").safe


def test_newer_flexible_value_version_is_read_by_kip_915_releases(tmp_path: Path) -> None:
    # v5 does not exist yet; a KIP-915 coordinator reads it as v4 (flexible), skipping tags.
    folder = dump(tmp_path, [commit("g", 0, 10, 5)])
    assert check_downgrade(folder, "3.5").safe
    assert [b.rule for b in check_downgrade(folder, "3.4").blockers] == ["value-version"]


def test_only_live_records_are_judged(tmp_path: Path) -> None:
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
    report = check_downgrade(folder, "2.0")
    assert report.safe, report.blockers
    assert report.live_records == 1


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
    for target in ("3.4", "2.0"):
        blockers = check_downgrade(folder, target).blockers
        assert [(b.rule, b.group, b.record_type) for b in blockers] == [
            ("group-conversion", "cg", 3)
        ]
        assert "KIP-848" in blockers[0].reason
    assert check_downgrade(folder, "3.5").safe  # 3.5's specs read ConsumerGroupMetadataValue v0


def test_streams_group_is_blocked_before_the_release_that_knows_it(tmp_path: Path) -> None:
    sg = (
        key("StreamsGroupMetadataKey", group_id="app"),
        value("StreamsGroupMetadataValue", 0, epoch=1),
    )
    folder = dump(tmp_path, [sg])
    assert [b.rule for b in check_downgrade(folder, "4.0").blockers] == ["group-conversion"]
    assert check_downgrade(folder, "4.1").safe


def test_unknown_record_type_is_skipped_from_kip_915_on(tmp_path: Path) -> None:
    unknown = (struct.pack(">hh", 300, 7), struct.pack(">h", 0) + b"\x00")
    folder = dump(tmp_path, [unknown])
    skipped = check_downgrade(folder, "3.5")
    assert skipped.safe
    assert [(b.rule, b.record_type, b.value_version) for b in skipped.ignored] == [
        ("ignored", 300, 0)
    ]
    blocked = check_downgrade(folder, "3.4")
    assert [(b.rule, b.record_type, b.name) for b in blocked.blockers] == [
        ("unknown-type", 300, "unknown")
    ]


def test_real_3_7_broker_dump() -> None:
    # GroupMetadataValue v3 and OffsetCommitValue v3: readable from 2.3 (KIP-345) on.
    assert check_downgrade(REAL, "2.3").safe
    assert check_downgrade(REAL, "3.9").safe
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
    safe = run(str(kafka_2_1_dump), "--to", "2.1")
    assert safe.exit_code == 0, safe.output
    assert safe.output.startswith("SAFE: Kafka 2.1, 3 live records")
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
