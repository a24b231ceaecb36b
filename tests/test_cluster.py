"""The synthesized cluster of the demo (``spark_udfs.cluster``): written as a broker writes its
log folder, and holding the story the forensics commands are there to find, found by the
commands themselves.

One cluster of 40,000 ``__consumer_offsets`` records (the shortest hour, 25 minutes) is
written once for the module; each test reads it as a user would: ``dump``, ``groups``, ``lag``,
``transactions`` and ``downgrade-check`` on the folder.
"""

from __future__ import annotations

import itertools
import json
import random
import struct
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from codegen.cli import cli
from codegen.dumps.log_files import read_producer_snapshot
from codegen.dumps.recognize import not_kafka_reason
from generated.offset_commit_value import OffsetCommitValue
from spark_udfs.cluster import ClusterStats, write_cluster
from spark_udfs.cluster.records import commit_values, coordinator_partition

RECORDS = 40_000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> ClusterStats:
    return write_cluster(tmp_path_factory.mktemp("cluster") / "kafka-logs", records=RECORDS)


def _run(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def _jsonl(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line]


def test_commit_values_are_the_codecs_bytes() -> None:
    """The offsets written over one encoded value give what the codec encodes for each."""
    rnd = random.Random(5)
    for _ in range(200):
        offsets = [
            rnd.randrange(1 << rnd.choice([7, 20, 40, 62])) for _ in range(rnd.randrange(1, 9))
        ]
        topic_id = uuid.UUID(int=rnd.getrandbits(128)) if rnd.random() < 0.7 else None
        fields = {
            "leader_epoch": rnd.randrange(-1, 50),
            "metadata": rnd.choice(["", "m", "ü" * 40]),
        }
        at = rnd.randrange(1 << 41)
        version = 4 if topic_id is not None else 3
        got = commit_values(offsets, commit_timestamp=at, topic_id=topic_id, **fields)
        extra = {"topic_id": topic_id} if topic_id is not None else {}
        expected = [
            struct.pack(">h", version)
            + OffsetCommitValue(offset=o, commit_timestamp=at, **fields, **extra).encode(version)
            for o in offsets
        ]
        assert got == expected


def test_coordinator_partitions_follow_kafkas_rule() -> None:
    """Java's String.hashCode, its sign bit cleared, modulo the partitions: where a real 4.4.0
    broker with 3 __consumer_offsets and 2 __transaction_state partitions put these ids
    (tests/data/PROVENANCE.md's broker workload)."""
    for group in ("upgrade", "consumer-uniform", "classic-mixed", "streams-app", "txn-group"):
        assert coordinator_partition(group, 3) == 1
    for tid in ("txn-1", "txn-commit", "txn-fenced", "txn-timeout"):
        assert coordinator_partition(tid, 2) == 0
    # "polygenelubricants".hashCode() is Integer.MIN_VALUE: its sign bit cleared, 0.
    assert coordinator_partition("polygenelubricants", 7) == 0


def test_a_broker_log_folder_with_every_kind_of_file(cluster: ClusterStats) -> None:
    root = cluster.folder
    for name in ("meta.properties", "replication-offset-checkpoint", ".kafka_cleanshutdown"):
        assert (root / name).is_file(), name
    topics = {p.name.rpartition("-")[0] for p in root.iterdir() if p.is_dir()}
    assert topics == {
        "__cluster_metadata",
        "__consumer_offsets",
        "__transaction_state",
        "audit-log",
        "clickstream",
        "inventory",
        "orders",
        "payments",
        "shipments",
    }
    clickstream = sorted((root / "clickstream-0").glob("*.log"))
    assert len(clickstream) > 1  # rolled at the topic's segment.bytes, with snapshots at rolls
    assert (root / "clickstream-0" / f"{clickstream[1].stem}.snapshot").is_file()
    assert sorted((root / "payments-0").glob("*.txnindex"))  # aborted transactions indexed
    assert (root / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint").is_file()
    for segment in root.glob("*/*.log"):
        assert not_kafka_reason(segment.read_bytes()) is None, segment
    assert (root / "meta.properties").read_text().count("node.id=1") == 1


def test_consumer_offsets_holds_exactly_the_records_asked(cluster: ClusterStats) -> None:
    result = _run("dump", str(cluster.folder), "--topic", "offsets", "--format", "table", "-q")
    assert result.exit_code == 0
    result = _run("dump", *map(str, cluster.files))
    assert result.exit_code == 0
    assert result.stderr.startswith(f"{len(cluster.files)} file")
    assert f", {RECORDS:,} records, 0 errors," in result.stderr
    kinds = {d["recordName"] for d in _jsonl(result.stdout)}
    assert {"OffsetCommit", "GroupMetadata", "ConsumerGroupMetadata", "COMMIT"} <= kinds


def test_every_file_reads_clean_as_kafka_dump_log_reads_it(cluster: ClusterStats) -> None:
    """Indexes, time indexes, snapshots and transaction indexes check against their segments
    (kafka-dump-log's --verify-index-only), the metadata log and snapshot decode."""
    for folder in ("clickstream-0", "payments-1", "__consumer_offsets-0", "__cluster_metadata-0"):
        result = _run(
            "dump", str(cluster.folder / folder), "--format", "dump-log", "--verify-index-only"
        )
        assert result.exit_code == 0, (folder, result.stderr[-2000:])
    metadata = _run("dump", str(cluster.folder / "__cluster_metadata-0"), "--format", "jsonl")
    assert metadata.exit_code == 0
    names = {d["recordName"] for d in _jsonl(metadata.stdout)}
    assert {
        "TopicRecord",
        "PartitionRecord",
        "ConfigRecord",
        "FeatureLevelRecord",
        "NoOpRecord",
    } <= names


def test_groups_move_forward_migrate_storm_and_get_deleted(cluster: ClusterStats) -> None:
    result = _run("groups", str(cluster.folder), "--format", "jsonl")
    assert result.exit_code == 0
    groups = {d["group"]: d for d in _jsonl(result.stdout)}
    assert set(cluster.groups) <= set(groups)
    for name, doc in groups.items():
        # Within each life of a group (a conversion begins another), epochs only move on.
        lives: list[list[int]] = []
        for e in doc["timeline"]:
            if e["kind"] == "created":
                lives.append([])
            elif e["kind"] == "rebalance":
                lives[-1].append(e["detail"].get("epoch", e["detail"].get("generation")))
        for epochs in lives:
            assert all(a < b for a, b in itertools.pairwise(epochs)), (name, epochs)
    kinds = [e["kind"] for e in groups["inventory-sync"]["timeline"]]
    assert "protocol-conversion" in kinds and groups["inventory-sync"]["type"] == "consumer"
    storm = [e for e in groups["recommendations"]["timeline"] if e["kind"] == "rebalance"]
    assert len(storm) >= 10
    (deleted,) = [d for d in groups.values() if d["state"] == "Dead"]
    assert deleted["group"].startswith("console-consumer-")
    assert groups["email-notifier"]["state"] == "Empty"
    members = groups["order-service"]["members"]
    assert len(members) == 3 and all(m["assignment"] for m in members)


def test_lag_finds_each_status_of_the_story(cluster: ClusterStats) -> None:
    story = ["analytics-etl", "fraud-detector", "search-indexer", "email-notifier"]
    result = _run(
        "lag", str(cluster.folder), *(a for g in story for a in ("--group", g)), "--format", "jsonl"
    )
    assert result.exit_code == 0
    lags = {d["group"]: d for d in _jsonl(result.stdout)}
    statuses = {
        g: {(p["topic"], p["partition"]): p["status"] for p in d["partitions"]}
        for g, d in lags.items()
    }
    assert statuses["fraud-detector"] == {
        ("payments", 0): "OK",
        ("payments", 1): "STALL",
        ("payments", 2): "OK",
    }
    assert set(statuses["email-notifier"].values()) == {"STOP"}
    assert set(statuses["search-indexer"].values()) == {"REWIND"}
    etl = lags["analytics-etl"]
    assert etl["status"] == "OK"
    peak = max(c["lag"] for p in etl["partitions"] for c in p["commits"] if c["lag"] is not None)
    assert peak > 10 * max(p["lag"] for p in etl["partitions"])  # fell behind, caught up
    table = _run("lag", str(cluster.folder))
    others = [
        line.split()[1]
        for line in table.stdout.splitlines()
        if not line.startswith(" ") and line.split()[0] not in story
    ]
    assert set(others) == {"OK"}


def test_transactions_find_the_hanging_one_and_what_it_blocks(cluster: ClusterStats) -> None:
    result = _run("transactions", str(cluster.folder), "--format", "jsonl")
    assert result.exit_code == 1  # one hangs
    docs = _jsonl(result.stdout)
    (hanging,) = [d for d in docs if d["kind"] == "hanging"]
    assert (hanging["topic"], hanging["partition"]) == ("payments", 1)
    assert hanging["transactionalId"] == "payment-reconciler"
    assert [g["group"] for g in hanging["blockedGroups"]] == ["fraud-detector"]
    partitions = [d for d in docs if d["kind"] == "partition"]
    assert all(not d["indexProblems"] for d in partitions)  # .txnindex agrees with the markers
    payments = {d["partition"]: d for d in partitions if d["topic"] == "payments"}
    assert payments[1]["lastStableOffset"] == hanging["firstOffset"] < payments[1]["logEndOffset"]
    snapshot = Path(payments[1]["snapshot"])
    open_txns = [p for p in read_producer_snapshot(snapshot) if p.current_txn_first_offset >= 0]
    assert [p.current_txn_first_offset for p in open_txns] == [hanging["firstOffset"]]
    ids = {d["transactionalId"]: d for d in docs if d["kind"] == "transactional-id"}
    assert set(ids) == {
        "payment-service-0",
        "payment-service-1",
        "payment-service-2",
        "payment-reconciler",
    }
    outcomes = {t["outcome"] for d in ids.values() for t in d["transactions"]}
    assert {"committed", "aborted", "aborted (timed out)"} <= outcomes


def test_downgrade_to_3_9_is_blocked_by_what_a_4_4_cluster_holds(cluster: ClusterStats) -> None:
    result = _run("downgrade-check", str(cluster.folder), "--to", "3.9", "--format", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["verdict"] == "BLOCKED"
    blocked = {c["check"] for c in doc["checks"] if c["status"] == "blocked"}
    assert {"group coordinator", "dynamic configs", "cluster features"} <= blocked
    assert any(b["group"] == "shipping-service" for b in doc["blockers"])
