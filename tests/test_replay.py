"""downgrade-check --replay: the logs replayed through each release's own loaders (a JVM with the
release's jars, tests/replay/fetch.sh), its answers beside the model's, and what the release
ends up with. The model must agree with the code on every check.

make test replays the releases of tests/replay/releases.txt; make test-replay-matrix every
release line from 2.8 to 4.4 and the patch releases (tests/test_replay_matrix.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from downgrade_logs import zoo
from replay_support import TESTED, require, use_project_cache

from codegen.forensics.downgrade import check_downgrade
from codegen.forensics.downgrade_command import downgrade_check_command
from codegen.forensics.releases import DEFAULT, release
from codegen.forensics.replay import ReplayReport, agreements, replay, replay_release
from codegen.forensics.replay.jars import jar_set

pytestmark = pytest.mark.replay

GROUPS = "__consumer_offsets"
TRANSACTIONS = "__transaction_state"


@pytest.fixture(scope="module")
def zoo_image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return zoo(tmp_path_factory.mktemp("zoo"))


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def zoo_failures(version: str, coordinator: str) -> dict[tuple[str, int], int]:
    """Where each partition of :func:`downgrade_logs.zoo` stops loading in ``version`` with
    the ``old`` or ``new`` group coordinator, as Kafka's code reads it."""
    v = _key(version)
    if coordinator == "old":
        if v < (3, 4, 1):  # unknown keys and the flexible v4 values throw (before KIP-915)
            fails = {(GROUPS, 1): 0, (GROUPS, 2): 0, (GROUPS, 3): 0, (GROUPS, 5): 0}
            return {**fails, (TRANSACTIONS, 0): 1}
        return {(GROUPS, 3): 0}  # OffsetCommitValue v5: no release reads it
    if v[:2] == (3, 6):  # control batches not supported yet; v5 read as v4
        return {(GROUPS, 4): 1}
    if v < (4, 0):  # v5 read as v4 (no version guard before KAFKA-18672)
        return {}
    return {(GROUPS, 3): 0}  # UnknownRecordVersionException


def check_zoo(
    image: Path, to: str, coordinator: str = DEFAULT, jars: Path | None = None
) -> ReplayReport:
    model = check_downgrade(image, to, coordinator)
    replayed = replay(image, to, group_coordinator=coordinator, jars=jars)
    replayed.agreements = agreements(model, replayed)
    assert not replayed.harness_errors, replayed.harness_errors
    loader = release(to).group_loaders(coordinator)
    kind = "new" if loader.name.startswith("the new ") else "old"
    got = {(p.topic, p.partition): p.offset for p in replayed.partitions if p.status != "loaded"}
    assert got == zoo_failures(replayed.release, kind), (to, coordinator)
    disagree = [a for a in replayed.agreements if not a.agree]
    assert not disagree, disagree
    assert replayed.agreements, "nothing was compared"
    # What survives: g0 everywhere (v3 classic records), the consumer group g5 only where the
    # new group coordinator loads it, each surviving group's offsets as the cluster has them.
    survives = replayed.survives
    assert survives.groups["g0"].type == "classic"
    assert survives.offsets[("g0", "t", 0)] == 5
    assert ("g5" in survives.groups) == (kind == "new"), to
    for k, offset in survives.offsets.items():
        assert replayed.current.offsets[k] == offset
    if replayed.metadata is not None:
        assert replayed.metadata.status == "loaded"
        assert replayed.metadata_version == "3.3-IV3"
    return replayed


@pytest.mark.parametrize(
    ("to", "coordinator"),
    [("3.4", DEFAULT), ("3.4.1", DEFAULT), ("3.6.0", "new"), ("3.9.2", "new"), ("4.0.2", DEFAULT)],
)
def test_the_zoo_replayed_agrees_with_the_model(
    zoo_image: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, to: str, coordinator: str
) -> None:
    """Each kind of loader: the old group coordinator before and after KIP-915's backport, the
    new one of 3.6 (whose playback is given no offsets; it refuses control batches), reading a
    newer value as its newest (3.9) and refusing it (4.0). 4.0.2's jars come
    from a folder laid out as a Kafka distribution's libs/ (--kafka-jars)."""
    use_project_cache(monkeypatch)
    version = replay_release(release(to))
    require((version,))
    folder = None
    if to == "4.0.2":
        folder = tmp_path / f"kafka_2.13-{version}" / "libs"
        folder.mkdir(parents=True)
        for jar in jar_set(version).jars:
            os.symlink(jar, folder / jar.name)
    replayed = check_zoo(zoo_image, to, coordinator, jars=folder)
    if to == "3.4":
        (txn,) = [p for p in replayed.partitions if p.topic == TRANSACTIONS]
        assert txn.status == "partial" and txn.offset == 1
        assert "Unknown version 1 from the transaction log message value" in (txn.exception or "")
        # The Scala loop kept the transaction read before the record: t-a, not t-b or t-c.
        assert set(replayed.survives.transactions) == {"t-a"}
        (p1,) = [p for p in replayed.partitions if (p.topic, p.partition) == (GROUPS, 1)]
        assert p1.served == "empty"
        assert "Unknown group metadata message version: 4" in (p1.exception or "")
        assert any(
            "Error loading offsets from __consumer_offsets-1" in line for line in p1.kafka_log
        )
    if to == "4.0.2":
        assert replayed.jars == f"{folder} (given)"
        (p3,) = [p for p in replayed.partitions if (p.topic, p.partition) == (GROUPS, 3)]
        assert "UnknownRecordVersionException" in (p3.exception or "")
        assert p3.served == "no"
        doc = replayed.to_json()
        assert doc["verdict"] == "LOSES DATA OR FAILS" and doc["timing"]["jvmStartupMs"] >= 0
        assert {g["groupId"] for g in doc["survives"]["groups"]} >= {"g0", "g5"}


def test_every_tested_release_is_in_the_vendored_jar_lists() -> None:
    from codegen.forensics.replay.jars import locked_releases

    assert set(TESTED) <= set(locked_releases())
    lines = {r.rsplit(".", 1)[0] for r in locked_releases()}
    assert {"2.8", "3.4", "4.4"} <= lines and "3.4.1" in locked_releases()
    assert {f"3.{m}" for m in range(10)} | {f"4.{m}" for m in range(5)} <= lines


def _cli(*args: str) -> Any:
    return CliRunner().invoke(downgrade_check_command, list(args))


def test_cli_replay_prints_both_answers_and_exits_by_the_code(
    zoo_image: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_project_cache(monkeypatch)
    require(("3.4.1",))
    table = _cli(str(zoo_image), "--to", "3.4.1", "--replay")
    assert table.exit_code == 1, table.output
    assert "replay through Kafka 3.4.1's own loaders" in table.output
    assert "__consumer_offsets-3: FAILED at @0: java.lang.IllegalStateException" in table.output
    assert "served as empty" in table.output
    assert "REPLAY: LOSES DATA OR FAILS: Kafka 3.4.1; the model agrees on every check" in (
        table.output
    )
    assert "consumer group 'g5' (Empty, 0 member(s))" in table.output  # lost


def test_a_missing_java_is_a_clear_error(
    zoo_image: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Java is asked for before the jars: a machine without Java hears that first, whether or
    # not the release's jars are cached (here an empty cache, offline).
    monkeypatch.setenv("KAFKA_SPECGEN_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("KAFKA_SPECGEN_MAVEN_REPOS", str(tmp_path / "no-repo"))
    monkeypatch.setenv("KAFKA_SPECGEN_OFFLINE", "1")
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.m2 either
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    result = _cli(str(zoo_image), "--to", "3.9", "--replay")
    assert result.exit_code == 4, result.output
    assert "needs a JDK 17 or later: no java in JAVA_HOME or on the PATH" in result.output
    assert "downgrade-check without --replay needs no Java" in result.output


def test_jars_not_there_offline_is_a_clear_error(
    zoo_image: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KAFKA_SPECGEN_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("KAFKA_SPECGEN_MAVEN_REPOS", str(tmp_path / "no-repo"))
    monkeypatch.setenv("KAFKA_SPECGEN_OFFLINE", "1")
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.m2 either
    result = _cli(str(zoo_image), "--to", "3.9", "--replay")
    assert result.exit_code == 4, result.output
    assert "KAFKA_SPECGEN_OFFLINE is set" in result.output
    assert "python -m codegen.forensics.replay fetch 3.9.0" in result.output
    assert str(tmp_path / "empty-cache" / "maven") in result.output
    given = _cli(str(zoo_image), "--to", "3.9", "--replay", "--kafka-jars", str(tmp_path))
    assert given.exit_code == 4 and "holds no kafka_2.13-3.9.0.jar" in given.output


def test_an_early_access_layout_fails_in_the_code_too(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # 4.0's ShareGroupMetadataValue v0 is KIP-932's early-access layout: the model's
    # record-layout rule, and 4.0's own serde misreading the v0 4.1 on write (it reads the
    # epoch, then the first byte of the metadata hash as a count of tagged fields). Whether
    # that read fails depends on the hash: one starting with a zero byte (an empty
    # subscription's 0) reads as no tagged fields, one starting 01 05 02 as one unknown tag of
    # two bytes; the model reads each record by 4.0's layout and names the first that fails,
    # with Kafka's own exception text.
    from downgrade_logs import dump, key, value

    use_project_cache(monkeypatch)
    require(("4.0.2",))

    def share(metadata_hash: int) -> tuple[bytes, bytes]:
        return (
            key("ShareGroupMetadataKey", group_id="s"),
            value("ShareGroupMetadataValue", 0, epoch=1, metadata_hash=metadata_hash),
        )

    folder = dump(
        tmp_path,
        [commit_v3()],
        [share(0)],
        [share(0x0105_0200_0000_0000)],
        [share(0x5A17_0C3E_9B21_4D77)],
    )
    model = check_downgrade(folder, "4.0.2")
    replayed = replay(folder, "4.0.2")
    (blocker,) = [b for b in model.blockers if b.fails_load]
    assert (blocker.rule, blocker.offset) == ("record-layout", 3)
    (failed,) = [p for p in replayed.partitions if p.status != "loaded"]
    assert failed.offset == 3
    java = "Could not read record with version 0 from value's buffer due to: Error reading byte"
    assert java in (failed.exception or "") and java in blocker.reason
    cause = (failed.exception or "").split("due to: ")[-1].split(";")[0]
    assert cause in blocker.reason  # the same exception, to the byte counts
    assert all(a.agree for a in agreements(model, replayed))


def test_early_access_reads_agree_with_kafka_record_by_record(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The model's reading of an early-access record by the release's own layout
    # (codegen.forensics.release_layouts) against 4.0.2's generated classes, one JVM: 48
    # partitions, each a share group (ShareGroupMetadata of hash 0, which reads) and one seeded
    # random record, a ShareGroupMetadata whose hash starts with a small byte (a count of
    # tagged fields) or with a five-byte count (Java's int: negative reads none) or a
    # ShareGroupStatePartitionMetadata of random topic lists, and 24
    # share-state partitions of a random ShareSnapshot. Each partition loads or fails at the
    # same record with the same exception in both.
    use_project_cache(monkeypatch)
    require(("4.0.2",))
    early_access_log(tmp_path)
    model = check_downgrade(tmp_path, "4.0.2")
    replayed = replay(tmp_path, "4.0.2")
    assert not replayed.harness_errors, replayed.harness_errors
    blockers = {(b.topic, b.partition): b for b in model.blockers if b.fails_load}
    failed = {(p.topic, p.partition): p for p in replayed.partitions if p.status != "loaded"}
    assert {p: b.offset for p, b in blockers.items()} == {p: f.offset for p, f in failed.items()}
    for p, f in failed.items():
        cause = (f.exception or "").split("due to: ")[-1].split(";")[0]
        assert cause in blockers[p].reason, (p, cause, blockers[p].reason)
    for topic in ("__consumer_offsets", "__share_group_state"):  # both outcomes are met
        loaded = [p for p in replayed.partitions if p.topic == topic and p.status == "loaded"]
        assert len([p for p in failed if p[0] == topic]) >= 4 and len(loaded) >= 4, topic


def early_access_log(folder: Path, partitions: int = 48, seed: int = 42) -> None:
    """Per partition a share group (ShareGroupMetadata of hash 0) and one seeded random record
    of 4.4's early-access layouts, and a random ShareSnapshot in half as many share-state
    partitions, written into the log dir ``folder``."""
    import random
    import uuid

    from downgrade_logs import key, value

    from codegen.dumps import SegmentWriter
    from generated.share_group_state_partition_metadata_value import (
        TopicInfo,
        TopicPartitionsInfo,
    )
    from generated.share_snapshot_value import StateBatch

    rng = random.Random(seed)

    def topics() -> list[TopicPartitionsInfo]:
        return [
            TopicPartitionsInfo(
                topic_id=uuid.UUID(int=rng.getrandbits(128)),
                topic_name="t" * rng.randrange(0, 4),
                partitions=[rng.randrange(0, 300) for _ in range(rng.randrange(0, 4))],
            )
            for _ in range(rng.randrange(0, 3))
        ]

    def record(n: int) -> tuple[bytes, bytes]:
        if n % 2 == 0:
            # The hash's bytes as 4.0 reads them: a count of tagged fields, then per field a
            # tag, a size and that many bytes (often small enough to fit, or not).
            head = rng.choice([0, 1, 1, 1, 2, 2, 0x7F, rng.randrange(256)])
            rest = [rng.randrange(256) for _ in range(7)]
            if rng.random() < 0.8:
                rest[1] = rng.randrange(0, 4)
                rest[3 + rest[1] : 3 + rest[1] + 1] = [rng.randrange(0, 3)]
            if rng.random() < 0.3:
                # A count of five bytes: Java keeps its low 32 bits as an int, so a negative
                # count (bit 31 set) or a zero one reads no fields, a positive one runs out.
                head = rng.randrange(0x80, 0x100)
                rest[:4] = [rng.randrange(0x80, 0x100) for _ in range(3)] + [rng.randrange(0x80)]
                if rng.random() < 0.3:
                    head, rest[:3] = 0x80, [0x80, 0x80, 0x80]
            metadata_hash = int.from_bytes(bytes([head, *rest[:7]]), "big")
            return (
                key("ShareGroupMetadataKey", group_id="s"),
                value(
                    "ShareGroupMetadataValue",
                    0,
                    epoch=2,
                    metadata_hash=metadata_hash - (1 << 64 if metadata_hash >= 1 << 63 else 0),
                ),
            )
        deleting = [
            TopicInfo(topic_id=uuid.UUID(int=rng.getrandbits(128)), topic_name="d")
            for _ in range(rng.randrange(0, 2))
        ]
        return (
            key("ShareGroupStatePartitionMetadataKey", group_id="s"),
            value(
                "ShareGroupStatePartitionMetadataValue",
                0,
                initializing_topics=topics(),
                initialized_topics=topics(),
                deleting_topics=deleting,
            ),
        )

    group = (
        key("ShareGroupMetadataKey", group_id="s"),
        value("ShareGroupMetadataValue", 0, epoch=1, metadata_hash=0),
    )
    for p in range(partitions):
        part = folder / f"__consumer_offsets-{p}"
        part.mkdir()
        with SegmentWriter(part / "00000000000000000000.log") as w:
            w.write_batch([group])
            w.write_batch([record(p)])
    # The share coordinator's: a ShareSnapshot of 4.4's layout (4.0's has no
    # DeliveryCompleteCount nor timestamps: it reads their bytes as the batches' count and more).
    for p in range(partitions // 2):
        part = folder / f"__share_group_state-{p}"
        part.mkdir()
        snapshot = value(
            "ShareSnapshotValue",
            0,
            snapshot_epoch=rng.randrange(3),
            state_epoch=rng.randrange(3),
            leader_epoch=rng.randrange(3),
            start_offset=rng.randrange(1000),
            delivery_complete_count=rng.choice([-1, 0, 1, 2, rng.randrange(1 << 31)]),
            create_timestamp=rng.choice([0, 1, rng.getrandbits(40)]),
            write_timestamp=rng.choice([0, 1, rng.getrandbits(40)]),
            state_batches=[
                StateBatch(first_offset=i, last_offset=i + 1, delivery_state=0, delivery_count=1)
                for i in range(rng.randrange(3))
            ],
        )
        snapshot_key = key(
            "ShareSnapshotKey",
            group_id="s",
            topic_id=uuid.UUID(int=rng.getrandbits(128)),
            partition=p,
        )
        with SegmentWriter(part / "00000000000000000000.log") as w:
            w.write_batch([(snapshot_key, snapshot)])


def commit_v3() -> tuple[bytes, bytes]:
    from downgrade_logs import commit

    return commit("g", 0, 1, 3)
