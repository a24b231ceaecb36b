"""downgrade-check judges each coordinator as the release's own loader reads its topic at
start-up (codegen.forensics.loaders): every record on disk, what it skips, what fails the load
and what that costs; and the metadata log as the release's MetadataRecordSerde reads it.

Each rule cites the Kafka code it follows; the replay tests (tests/test_replay*.py) run the same
logs through those releases' own classes."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from click.testing import CliRunner
from downgrade_logs import cluster, commit, dump, key, metadata_record, partition, value

from codegen.dumps import SegmentWriter
from codegen.dumps.model import ControlType
from codegen.forensics.downgrade import check_downgrade
from codegen.forensics.downgrade_command import downgrade_check_command
from generated.register_broker_record import BrokerEndpoint


def statuses(report: object) -> dict[str, str]:
    return {c.name: c.status for c in report.checks}  # type: ignore[attr-defined]


def broker_registration(version: int) -> bytes:
    endpoint = BrokerEndpoint(name="PLAINTEXT", host="localhost", port=9092, security_protocol=0)
    return metadata_record(
        "RegisterBrokerRecord",
        version,
        broker_id=1,
        incarnation_id=uuid.UUID(int=9),
        broker_epoch=5,
        end_points=[endpoint],
    )


def test_a_metadata_record_version_the_release_cannot_read_kills_it_first(tmp_path: Path) -> None:
    # RegisterBrokerRecord v4 (4.4): 3.9's generated BrokerEndpoint.read() refuses version 4
    # (UnsupportedVersionException), MetadataRecordSerde throws MetadataParseException.
    image = cluster(tmp_path, {"__consumer_offsets": 1}, 21, extra=[broker_registration(4)])
    partition(image, "__consumer_offsets", 0, [commit("g", 0, 10, 5)])
    report = check_downgrade(image, "3.9")
    assert statuses(report)["metadata records"] == "blocked"
    (finding,) = next(c for c in report.checks if c.name == "metadata records").findings
    assert "RegisterBrokerRecord (type 0) v4" in finding
    assert "Can't read version 4 of BrokerEndpoint" in finding
    # The node dies loading its metadata before any coordinator loads.
    assert report.first_failure is not None
    assert report.first_failure.startswith("metadata records:")
    assert statuses(report)["group coordinator"] == "blocked"
    assert statuses(check_downgrade(image, "4.4"))["metadata records"] == "passed"


def test_a_metadata_record_type_the_release_does_not_know(tmp_path: Path) -> None:
    elr = metadata_record("ClearElrRecord", 0, topic_name="t")
    image = cluster(tmp_path, {"__consumer_offsets": 1}, 21, extra=[elr])
    partition(image, "__consumer_offsets", 0, [commit("g", 0, 10, 3)])
    metadata = next(c for c in check_downgrade(image, "3.9").checks if c.name == "metadata records")
    assert metadata.status == "blocked"
    assert (
        "ClearElrRecord (type 28) v0: Kafka 3.9 does not know the record type"
        in (metadata.findings[0])
    )
    assert statuses(check_downgrade(image, "4.0"))["metadata records"] == "passed"


def transaction(tid: str, version: int) -> tuple[bytes, bytes]:
    return (
        key("TransactionLogKey", transactional_id=tid),
        value("TransactionLogValue", version, producer_id=7, producer_epoch=0),
    )


def test_the_transaction_coordinator_keeps_what_it_read_before_a_bad_record(
    tmp_path: Path,
) -> None:
    # TransactionLogValue v2 does not exist yet: up to 4.2 readTxnRecordValue throws and
    # loadTransactionMetadata keeps the transactions read before; 4.3's TransactionLog.read
    # skips it.
    image = cluster(tmp_path, {"__consumer_offsets": 1, "__transaction_state": 1})
    partition(image, "__consumer_offsets", 0, [commit("g", 0, 10, 3)])
    partition(
        image,
        "__transaction_state",
        0,
        [transaction("a", 0)],
        [transaction("b", 2)],
        [transaction("c", 0)],
    )
    old = check_downgrade(image, "4.2")
    (blocker,) = [b for b in old.blockers if b.topic == "__transaction_state"]
    assert (blocker.rule, blocker.offset, blocker.group) == ("value-version", 1, "b")
    assert "Unknown version 2 from the transaction log message value" in blocker.reason
    assert "transactional ids read before it are kept" in blocker.reason
    assert "2 transactional ids written from there on" in blocker.reason
    new = check_downgrade(image, "4.3")
    assert statuses(new)["transaction coordinator"] == "passed"
    assert [(b.rule, b.group) for b in new.ignored if b.topic == "__transaction_state"] == [
        ("ignored", "b")
    ]


def test_3_6_new_group_coordinator_refuses_control_batches(tmp_path: Path) -> None:
    folder = tmp_path / "__consumer_offsets-0"
    folder.mkdir()
    with SegmentWriter(folder / "00000000000000000000.log") as w:
        w.write_batch([commit("t", 0, 1, 3)], producer_id=7, producer_epoch=0, transactional=True)
        w.write_control(ControlType.COMMIT, producer_id=7, producer_epoch=0)
    (blocker,) = check_downgrade(folder, "3.6", group_coordinator="new").blockers
    assert (blocker.rule, blocker.offset) == ("control-batch", 1)
    assert "Control batches are not supported yet" in blocker.reason
    assert not check_downgrade(folder, "3.6").blocked  # the old one, 3.6's default
    assert not check_downgrade(folder, "3.7", group_coordinator="new").blocked


def test_tombstoned_consumer_group_records_still_on_disk_block_3_4_0_only(
    tmp_path: Path,
) -> None:
    # A consumer group converted to classic: its records are tombstoned but stay on disk until
    # the log cleaner removes them. 3.4.0's readMessageKey throws on the unknown key; 3.4.1
    # (KIP-915's backport) skips it.
    cg_key = key("ConsumerGroupMetadataKey", group_id="g")
    folder = dump(
        tmp_path,
        [(cg_key, value("ConsumerGroupMetadataValue", 0, epoch=3))],
        [(cg_key, None)],
        [commit("g", 0, 10, 3)],
    )
    blocker, tombstone = check_downgrade(folder, "3.4").blockers
    assert (blocker.rule, blocker.offset, blocker.count) == ("unknown-type", 0, 1)
    assert (tombstone.rule, tombstone.offset, tombstone.value_version) == ("unknown-type", 1, -1)
    assert "Unknown group metadata message version: 3" in blocker.reason
    assert "no longer live" in blocker.reason and "serves the partition as empty" in blocker.reason
    assert not check_downgrade(folder, "3.4.1").blocked


def test_cli_names_the_group_coordinator_and_the_first_failure(tmp_path: Path) -> None:
    folder = dump(tmp_path, [commit("g", 0, 10, 5)])
    runner = CliRunner()
    table = runner.invoke(downgrade_check_command, [str(folder), "--to", "3.9"])
    assert table.exit_code == 1
    assert "the old (Scala) group coordinator" in table.output
    assert "first failure at start-up: group coordinator:" in table.output
    new = runner.invoke(
        downgrade_check_command,
        [str(folder), "--to", "3.9", "--group-coordinator", "new", "--format", "json"],
    )
    doc = json.loads(new.output)
    assert new.exit_code == 3 and doc["groupCoordinator"].startswith("the new group coordinator")
    assert doc["firstFailure"] is None
    missing = runner.invoke(
        downgrade_check_command, [str(folder), "--to", "3.5", "--group-coordinator", "new"]
    )
    assert missing.exit_code == 2 and "Kafka 3.5 has no new group coordinator" in missing.output


def test_an_early_access_record_layout_the_release_misreads(tmp_path: Path) -> None:
    # ConsumerGroupMemberMetadataValue v0 changed before KIP-848's release (3.7's still had
    # Assignors): 3.6 and 3.7's new group coordinator misread a v0 that 3.8 on write; 3.9's
    # serde knows record types 0-8 only and skips the share group's; 4.0's ShareGroupMetadata
    # v0 is early access too.
    member = (
        key("ConsumerGroupMemberMetadataKey", group_id="g", member_id="m"),
        value("ConsumerGroupMemberMetadataValue", 0, client_id="c", client_host="h"),
    )
    share = (
        key("ShareGroupMetadataKey", group_id="s"),
        value("ShareGroupMetadataValue", 0, epoch=1, metadata_hash=0x5A17_0C3E_9B21_4D77),
    )
    folder = dump(tmp_path, [member], [share])
    (blocker,) = [b for b in check_downgrade(folder, "3.7", "new").blockers if b.fails_load]
    assert (blocker.rule, blocker.offset, blocker.name) == (
        "record-layout",
        0,
        "ConsumerGroupMemberMetadata",
    )
    assert "another layout" in blocker.reason
    assert not [b for b in check_downgrade(folder, "3.9", "new").blockers if b.fails_load]
    (share_blocker,) = [b for b in check_downgrade(folder, "4.0").blockers if b.fails_load]
    assert (share_blocker.rule, share_blocker.offset) == ("record-layout", 1)
    assert "Error reading byte array of" in share_blocker.reason  # 4.0's read of the hash
    assert not [b for b in check_downgrade(folder, "4.1").blockers if b.fails_load]


def test_an_early_access_record_fails_only_where_its_bytes_do_not_read(tmp_path: Path) -> None:
    # 4.0 reads ShareGroupMetadataValue v0 as Epoch and tagged fields: 4.4's MetadataHash of 0
    # (no subscribed topics) reads as no tagged field, so 4.0 loads it (the hash dropped); the
    # next record whose bytes it cannot read is where the load fails.
    def share(metadata_hash: int) -> tuple[bytes, bytes]:
        return (
            key("ShareGroupMetadataKey", group_id="s"),
            value("ShareGroupMetadataValue", 0, epoch=1, metadata_hash=metadata_hash),
        )

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    readable = dump(tmp_path / "a", [share(0)], [share(0x0105_0200_0000_0000)])
    assert not [b for b in check_downgrade(readable, "4.0").blockers if b.fails_load]
    failing = dump(tmp_path / "b", [share(0)], [share(0x7F00_0000_0000_0000)])
    (blocker,) = [b for b in check_downgrade(failing, "4.0").blockers if b.fails_load]
    assert (blocker.rule, blocker.offset) == ("record-layout", 1)
    # 127 tagged fields: the first (tag 0, size 0) reads, the second finds no byte left
    assert "due to: null." in blocker.reason
