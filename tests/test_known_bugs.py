"""Known Kafka bugs of the new group coordinator's replay (codegen.forensics.known_bugs): the
record orders log compaction leaves that a release's shard refuses, written record by record
(tests/downgrade_logs.known_bugs), named by downgrade-check's model and, with the releases'
jars, reproduced by their own code (the replay names the same issue)."""

from __future__ import annotations

from pathlib import Path

import pytest
from downgrade_logs import commit, consumer_group, dump, known_bugs
from replay_support import require, use_project_cache

from codegen.forensics.downgrade import check_downgrade
from codegen.forensics.known_bugs import KNOWN_BUGS, name_bug
from codegen.forensics.releases import DEFAULT, release
from codegen.forensics.replay import agreements, replay, replay_release

KAFKA_20254 = "KAFKA-20254"
KAFKA_21117 = "KAFKA-21117"
KAFKA_21102 = "KAFKA-21102"


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return known_bugs(tmp_path_factory.mktemp("known-bugs"))


def expected(version: str, coordinator: str) -> dict[int, tuple[int, str | None]]:
    """Partition -> (offset it fails at, the issue named) in ``version``."""
    v = tuple(int(p) for p in version.split("."))
    if coordinator == "old":
        if v < (3, 4, 1):  # the old coordinator throws on every unknown record type
            return {0: (1, None), 1: (1, None), 2: (0, None)}
        return {}  # it skips them (KIP-915): the groups are lost, not the partitions
    found = {1: (1, KAFKA_21117), 2: (2, KAFKA_21102)}
    if v[:2] == (4, 1) or v[:3] == (4, 2, 0):  # streams records known, the fix not yet in
        found[0] = (1, KAFKA_20254)
    return found


def _model(image: Path, to: str, coordinator: str = DEFAULT) -> dict[int, tuple[int, str | None]]:
    out: dict[int, tuple[int, str | None]] = {}
    for b in check_downgrade(image, to, coordinator).blockers:
        if b.fails_load and b.partition not in out:
            issue = next((bug.issue for bug in KNOWN_BUGS if bug.issue in b.reason), None)
            out[b.partition] = (b.offset, issue)
    return out


@pytest.mark.parametrize(
    ("to", "coordinator"),
    [
        ("2.8", DEFAULT),
        ("3.4", DEFAULT),
        ("3.4.1", DEFAULT),
        ("3.9", DEFAULT),
        ("3.9", "new"),
        ("4.0", DEFAULT),
        ("4.1", DEFAULT),
        ("4.2.0", DEFAULT),
        ("4.2.1", DEFAULT),
        ("4.4", DEFAULT),
    ],
)
def test_the_model_names_each_bug_where_it_applies(image: Path, to: str, coordinator: str) -> None:
    loader = release(to).group_loaders(coordinator)
    kind = "new" if loader.name.startswith("the new ") else "old"
    assert _model(image, to, coordinator) == expected(release(to).version, kind)


def test_each_bug_says_what_it_affects_and_what_to_do() -> None:
    (streams,) = [b for b in KNOWN_BUGS if b.issue == KAFKA_20254]
    assert streams.affects((4, 1, 2)) and streams.affects((4, 2, 0))
    assert not streams.affects((4, 2, 1)) and not streams.affects((4, 3, 0))
    assert "fixed in 4.2.1, 4.3.0" in streams.describe()
    (downgrade,) = [b for b in KNOWN_BUGS if b.issue == KAFKA_21117]
    assert downgrade.affects((4, 4, 0)) and "not fixed yet" in downgrade.describe()
    assert "what to do first" in downgrade.describe()
    assert name_bug("Group x is not a consumer group", (4, 4, 0)) is downgrade
    assert name_bug("Group x is not a streams group.", (4, 3, 0)) is None  # fixed there


def test_a_tombstone_compaction_orphaned_fails_3_9_only(tmp_path: Path) -> None:
    # KAFKA-17306: before 4.0 a consumer group's tombstone for a group the cleaner already
    # removed fails the load ("Consumer group g not found."); 4.0 ignores it.
    folder = dump(tmp_path, [commit("g", 0, 1, 3)], [(k, None) for k, _ in consumer_group("h", 1)])
    (blocker,) = [b for b in check_downgrade(folder, "3.9", "new").blockers if b.fails_load]
    assert (blocker.rule, blocker.offset) == ("known-bug", 1)
    assert "KAFKA-17306" in blocker.reason and "fixed in 4.0.0" in blocker.reason
    assert not [b for b in check_downgrade(folder, "4.0").blockers if b.fails_load]


@pytest.mark.replay
@pytest.mark.parametrize(
    ("to", "coordinator"),
    [
        ("3.4", DEFAULT),
        ("3.9.2", "new"),
        ("4.1", DEFAULT),
        ("4.4", DEFAULT),
        pytest.param("2.8", DEFAULT, marks=pytest.mark.replay_matrix),
        pytest.param("3.4.1", DEFAULT, marks=pytest.mark.replay_matrix),
        pytest.param("3.9", DEFAULT, marks=pytest.mark.replay_matrix),
        pytest.param("4.0", DEFAULT, marks=pytest.mark.replay_matrix),
        pytest.param("4.0.2", DEFAULT, marks=pytest.mark.replay_matrix),
    ],
)
def test_the_releases_own_code_fails_where_the_model_says(
    image: Path, monkeypatch: pytest.MonkeyPatch, to: str, coordinator: str
) -> None:
    use_project_cache(monkeypatch)
    target = release(to)
    require((replay_release(target),))
    replayed = replay(image, to, group_coordinator=coordinator)
    assert not replayed.harness_errors, replayed.harness_errors
    got = {
        p.partition: (p.offset, None if p.known_bug is None else p.known_bug.split(" ")[0])
        for p in replayed.partitions
        if p.status != "loaded"
    }
    kind = "new" if target.group_loaders(coordinator).name.startswith("the new ") else "old"
    assert got == expected(replayed.release, kind)
    model = check_downgrade(image, to, coordinator)
    assert all(a.agree for a in agreements(model, replayed))
