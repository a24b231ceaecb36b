"""Real downgrades in the suite: Kafka 4.4.0 writes a log at a lower metadata.version, a real older
broker starts on a copy (tests/broker/downgrades.py), and what it answers (its Admin API's
groups, committed offsets and transactions) or the error it dies on is the truth that
downgrade-check's verdict, the replay through that release's loaders and "what survives" are
held to. make test runs 3.9-IV0 -> 3.9.2, 3.3-IV3 -> 3.4.0 and 3.4.1 (the old group coordinator
before and after KIP-915's backport), and the broker tests' latest log -> 4.0.2;
make test-broker-downgrades also 4.0-IV3 -> 4.0.2 and the latest log -> 3.9.2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from broker.client import BrokerRun
from broker.client import missing_reason as broker_missing
from broker.downgrades import OldBroker, WrittenLog, start_old, write_log
from replay_support import require, use_project_cache

from codegen.forensics.downgrade import check_downgrade
from codegen.forensics.replay import ReplayReport, agreements, replay

pytestmark = [pytest.mark.kafka, pytest.mark.replay, pytest.mark.xdist_group("kafka")]


@pytest.fixture(autouse=True)
def _caches(monkeypatch: pytest.MonkeyPatch) -> None:
    use_project_cache(monkeypatch)


def _need(*releases: str) -> None:
    reason = broker_missing()
    if reason is not None:
        pytest.skip(f"Kafka broker: {reason}")
    require(releases)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, WrittenLog]:
    """Logs written by Kafka 4.4.0, per metadata.version, made on first use."""
    return {}


def _log(written: dict[str, WrittenLog], tmp: pytest.TempPathFactory, level: str) -> WrittenLog:
    if level not in written:
        written[level] = write_log(tmp.mktemp(f"written-{level}"), level)
    return written[level]


def _truth_state(old: OldBroker) -> dict[str, Any]:
    t = old.truth
    assert "error" not in t, t
    return {
        "groups": {g["groupId"]: (g["type"] or "Classic").lower() for g in t["groups"]},
        "offsets": {(o["group"], o["topic"], o["partition"]): o["offset"] for o in t["offsets"]},
        "transactions": {x["transactionalId"]: x["producerId"] for x in t["transactions"]},
    }


def _survives(replayed: ReplayReport) -> dict[str, Any]:
    s = replayed.survives
    return {
        "groups": {g: v.type for g, v in s.groups.items()},
        "offsets": dict(s.offsets),
        "transactions": {t: v.producer_id for t, v in s.transactions.items()},
    }


def _downgrade(log: Path, release: str, folder: Path) -> tuple[OldBroker, ReplayReport, Any]:
    """The real older broker, the replay and the model, on the same log."""
    old = start_old(release, log, folder)
    model = check_downgrade(log, release)
    replayed = replay(log, release)
    replayed.agreements = agreements(model, replayed)
    assert not replayed.harness_errors, replayed.harness_errors
    disagree = [a for a in replayed.agreements if not a.agree]
    assert not disagree, disagree
    return old, replayed, model


def _loads_and_keeps(old: OldBroker, replayed: ReplayReport, model: Any) -> None:
    """The old broker started and answers exactly what the replay says survives."""
    assert old.started, old.log
    assert _truth_state(old) == _survives(replayed)


def test_a_3_9_level_log_loads_in_3_9_2(
    written: dict[str, WrittenLog], tmp_path_factory: pytest.TempPathFactory
) -> None:
    _need("3.9.2")
    log = _log(written, tmp_path_factory, "3.9-IV0")
    old, replayed, model = _downgrade(log.log_dir, "3.9.2", tmp_path_factory.mktemp("o392"))
    _loads_and_keeps(old, replayed, model)
    # Nothing lost: 3.9.2 has every group, offset and transaction the cluster had.
    assert replayed.loads and replayed.lost() == []
    assert model.verdict == "SAFE", [c for c in model.checks if c.status != "passed"]
    assert {"classic-a", "classic-b", "offsets-only"} <= set(_truth_state(old)["groups"])


def test_a_3_3_level_log_empties_3_4_0_and_loads_in_3_4_1(
    written: dict[str, WrittenLog], tmp_path_factory: pytest.TempPathFactory
) -> None:
    # 4.4.0 writes OffsetCommitValue v4 (flexible) at any metadata.version: 3.4.0's old group
    # coordinator throws on it and serves each partition as empty, 3.4.1 (KIP-915's backport)
    # reads it.
    _need("3.4.0", "3.4.1")
    log = _log(written, tmp_path_factory, "3.3-IV3")
    old, replayed, model = _downgrade(log.log_dir, "3.4.0", tmp_path_factory.mktemp("o340"))
    assert old.started, old.log
    truth = _truth_state(old)
    assert truth["groups"] == {} and truth["offsets"] == {}  # every group and offset gone
    assert _survives(replayed)["groups"] == {} and _survives(replayed)["offsets"] == {}
    assert all(p.served == "empty" for p in replayed.partitions if p.status == "failed")
    assert model.verdict == "BLOCKED"
    assert any(
        b.rule == "value-version" and b.name == "OffsetCommit" and b.value_version == 4
        for b in model.blockers
    )
    assert truth["transactions"] == _survives(replayed)["transactions"]  # TransactionLogValue v0

    old, replayed, model = _downgrade(log.log_dir, "3.4.1", tmp_path_factory.mktemp("o341"))
    _loads_and_keeps(old, replayed, model)
    assert {"classic-a", "classic-b", "offsets-only"} <= set(_truth_state(old)["groups"])
    assert not [b for b in model.blockers if b.fails_load]


def test_the_latest_log_kills_4_0_2_on_a_metadata_record(
    broker_run: BrokerRun, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _need("4.0.2")
    _dies_on_broker_endpoint(broker_run.log_dir, "4.0.2", tmp_path_factory.mktemp("latest402"))


def _dies_on_broker_endpoint(log: Path, release: str, folder: Path) -> None:
    old, replayed, model = _downgrade(log, release, folder)
    assert not old.started
    assert "Can't read version 4 of BrokerEndpoint" in old.log
    assert model.first_failure is not None
    assert model.first_failure.startswith("metadata records:")
    assert "RegisterBrokerRecord (type 0) v4" in model.first_failure
    assert replayed.metadata is not None and replayed.metadata.status == "failed"
    assert "Can't read version 4 of BrokerEndpoint" in (replayed.metadata.exception or "")


@pytest.mark.broker_downgrades
def test_a_4_0_level_log_keeps_its_consumer_group_in_4_0_2(
    written: dict[str, WrittenLog], tmp_path_factory: pytest.TempPathFactory
) -> None:
    _need("4.0.2")
    log = _log(written, tmp_path_factory, "4.0-IV3")
    old, replayed, model = _downgrade(log.log_dir, "4.0.2", tmp_path_factory.mktemp("o402"))
    _loads_and_keeps(old, replayed, model)
    assert _truth_state(old)["groups"]["consumer-a"] == "consumer"


@pytest.mark.broker_downgrades
def test_the_latest_log_kills_3_9_2_on_a_metadata_record(
    broker_run: BrokerRun, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _need("3.9.2")
    _dies_on_broker_endpoint(broker_run.log_dir, "3.9.2", tmp_path_factory.mktemp("latest392"))
