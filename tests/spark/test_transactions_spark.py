"""spark_udfs.transactions gives the answers of codegen.forensics.transactions, row for row."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from test_forensics_transactions import (
    T0,
    S,
    txn_record,
    write_cluster,
    write_offset_transactions,
)
from v2_batches import with_newer_header

from codegen.dumps import SegmentWriter
from codegen.forensics.groups import AsOf
from codegen.forensics.transactions import TransactionReport, abort_command, transaction_report
from spark_udfs import transactions


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_cluster(tmp_path_factory.mktemp("txn-spark"))


def _python(report: TransactionReport) -> dict[str, Any]:
    listed = [*report.partitions, *report.offset_partitions]
    return {
        "partitions": sorted(
            (
                p.topic,
                p.partition,
                p.log_end_offset,
                p.last_stable_offset,
                p.gap,
                len(p.open),
                p.committed,
            )
            for p in listed
        ),
        "aborted": sorted(
            (
                p.topic,
                p.partition,
                a.producer_id,
                a.first_offset,
                a.last_offset,
                a.last_stable_offset,
            )
            for p in listed
            for a in p.aborted_from_markers
        ),
        "open": sorted(
            (
                t.topic,
                t.partition,
                t.producer_id,
                t.producer_epoch,
                t.first_offset,
                t.last_offset,
                t.first_timestamp,
                t.last_timestamp,
                t.transactional_id,
                t.age_ms,
                t.idle_ms,
                t.timeout_ms,
                t.hanging,
                t.find_hanging,
                t.reason,
                t.outlook,
                t.times_out_at,
                t.abort_command,
                t.pending_groups if t.topic == "__consumer_offsets" else None,
            )
            for t in report.open
        ),
        # each id's latest record; a deleted id's is null (its tombstone)
        "coordinator": sorted(
            (t.transactional_id, None, None, None, None, [])
            if c is None
            else (
                t.transactional_id,
                c.producer_id,
                c.producer_epoch,
                c.state,
                c.timeout_ms,
                sorted(f"{topic}-{p}" for topic, p in c.partitions),
            )
            for t in report.transactional_ids
            for c in [t.latest]
        ),
        "transactions": sorted(
            (
                t.transactional_id,
                n,
                x.producer_id,
                x.producer_epoch,
                x.start_timestamp,
                x.end_timestamp,
                x.duration_ms,
                x.outcome,
                [f"{topic}-{p}" for topic, p in x.partitions],
            )
            for t in report.transactional_ids
            for n, x in enumerate(t.transactions)
        ),
        # each id's whole history: the command's jsonl line of the id
        "ids": sorted(
            (line for line in report.lines() if line["kind"] == "transactional-id"),
            key=lambda line: line["transactionalId"],
        ),
    }


_OPEN_COLUMNS = (
    "topic",
    "partition",
    "producerId",
    "producerEpoch",
    "firstOffset",
    "lastOffset",
    "firstTimestamp",
    "lastTimestamp",
    "transactionalId",
    "ageMs",
    "idleMs",
    "timeoutMs",
    "hanging",
    "findHanging",
    "reason",
    "outlook",
    "timesOutAt",
    "abortCommand",
    "pendingGroups",
)


def _spark(spark: Any, path: Path, as_of: AsOf | None = None, **judging: Any) -> dict[str, Any]:
    inputs = transactions.read_transactions(spark, path, as_of)
    coordinator = inputs.coordinator
    now = (
        as_of.timestamp_ms
        if as_of is not None and as_of.timestamp_ms is not None
        else transactions.newest_timestamp(inputs)
    )
    opened = transactions.open_transactions(inputs, now, **judging).select(*_OPEN_COLUMNS)
    return {
        "partitions": sorted(
            tuple(r) for r in transactions.partition_transactions(inputs).collect()
        ),
        "aborted": sorted(tuple(r) for r in transactions.aborted_ranges(inputs).collect()),
        "open": sorted(tuple(r) for r in opened.collect()),
        "coordinator": []
        if coordinator is None
        else sorted(
            (*r[:5], sorted(r[5])) for r in transactions.coordinator_states(coordinator).collect()
        ),
        "transactions": []
        if coordinator is None
        else sorted(tuple(r) for r in transactions.coordinator_transactions(coordinator).collect()),
        "ids": []
        if coordinator is None
        else sorted(
            (
                r.asDict(recursive=True)
                for r in transactions.transactional_ids(coordinator).collect()
            ),
            key=lambda line: line["transactionalId"],
        ),
    }


@pytest.mark.parametrize(
    ("at", "max_timeout", "rule"),
    [
        (None, 20 * S, "find-hanging"),
        (T0 + 4 * S + 500, 2 * S, "find-hanging"),
        (T0 + 200 * S, None, "loose"),  # listed and past its timeout: only loose flags it
        (T0 + 1000 * S, None, "find-hanging"),
    ],
)
def test_spark_answers_equal_the_python_api(
    spark: Any, cluster: Path, at: int | None, max_timeout: int | None, rule: str
) -> None:
    as_of = None if at is None else AsOf(timestamp_ms=at)
    judging: dict[str, Any] = {"rule": rule}
    if max_timeout is not None:
        judging["max_timeout_ms"] = max_timeout
    expected = _python(transaction_report(cluster, as_of=as_of, **judging))
    assert any(row[12] for row in expected["open"])  # a hanging transaction at each time
    assert _spark(spark, cluster, as_of, **judging) == expected


def test_spark_finds_transactional_offset_commits(spark: Any, tmp_path: Path) -> None:
    log = write_offset_transactions(tmp_path)
    expected = _python(transaction_report(log, max_timeout_ms=30 * S))
    pending = {row[2]: row[18] for row in expected["open"]}
    assert pending == {30: ["g-txn"], 31: ["g-lost"]}
    assert _spark(spark, log, max_timeout_ms=30 * S) == expected


def test_spark_outcomes_cover_every_label(spark: Any, cluster: Path) -> None:
    """The compared transactions end in every way the Python API tells apart."""
    inputs = transactions.read_transactions(spark, cluster)
    coordinator = inputs.coordinator
    assert coordinator is not None
    outcomes = {
        (r.transactionalId, r.outcome, r.durationMs)
        for r in transactions.coordinator_transactions(coordinator).collect()
    }
    fencing = {
        (t.transactionalId, c.change, c.producerEpoch)
        for t in transactions.transactional_ids(coordinator).collect()
        for c in t.fencing
    }
    assert fencing == {
        ("tx-fenced", "epoch bump", 1),  # the new instance's InitProducerId aborts ...
        ("tx-fenced", "epoch bump", 2),  # ... and takes the id
        ("tx-timeout", "epoch bump", 1),  # the coordinator aborts on the timeout
    }
    assert outcomes == {
        ("tx-commit", "committed", 2 * S),
        ("tx-abort", "aborted", 2 * S),
        ("tx-timeout", "aborted (timed out)", 11 * S),
        ("tx-fenced", "aborted (fenced)", 1 * S),
        ("tx-open", "open", None),
    }
    now = transactions.newest_timestamp(inputs)
    hanging = {
        (r.producerId, r.reason, r.abortCommand)
        for r in transactions.open_transactions(inputs, now, max_timeout_ms=20 * S).collect()
        if r.hanging
    }
    assert hanging == {
        (
            99,
            "no transactional id of the coordinator has producer id 99; its producer's last "
            "write was 29000 ms ago, longer than the maximum transaction timeout of 20000 ms",
            abort_command("orders", 1, 2),
        )
    }


def test_spark_without_the_coordinator_judges_by_age(
    spark: Any, cluster: Path, tmp_path: Path
) -> None:
    data_only = tmp_path / "kafka-logs"
    shutil.copytree(cluster, data_only, ignore=shutil.ignore_patterns("__transaction_state-*"))
    young = AsOf(timestamp_ms=T0 + 200 * S)  # nothing open longer than 900 s yet
    expected = _python(transaction_report(data_only, as_of=young))
    assert expected["open"] and not any(row[12] for row in expected["open"])
    assert _spark(spark, data_only, young) == expected
    old = AsOf(timestamp_ms=T0 + 1_000 * S)
    expected = _python(transaction_report(data_only, as_of=old))
    assert expected["open"] and all("by its age only" in row[14] for row in expected["open"])
    assert _spark(spark, data_only, old) == expected


def test_spark_names_a_replaced_producer_and_a_deleted_id(spark: Any, tmp_path: Path) -> None:
    """Open transactions whose id moved on: the producer id was replaced, the id was deleted."""
    log = tmp_path / "kafka-logs"
    shop, coord = log / "shop-0", log / "__transaction_state-0"
    shop.mkdir(parents=True)
    coord.mkdir()
    with SegmentWriter(shop / "00000000000000000000.log") as w:
        txn: dict[str, Any] = {"producer_epoch": 0, "transactional": True}
        w.write_batch([(None, b"r")] * 2, timestamp=T0 + S, producer_id=20, **txn)  # 0-1
        w.write_batch([(None, b"g")] * 2, timestamp=T0 + S, producer_id=22, **txn)  # 2-3
    shop_0 = ("shop", 0)
    replaced = [
        txn_record("tx-replaced", "Ongoing", 20, 0, T0 + S, [shop_0], start=T0 + S),
        txn_record("tx-replaced", "Empty", 21, 0, T0 + 2 * S, []),
    ]
    gone = txn_record("tx-gone", "Ongoing", 22, 0, T0 + S, [shop_0], start=T0 + S)
    with SegmentWriter(coord / "00000000000000000000.log") as w:
        for key, value, at in [*replaced, gone]:
            w.write_batch([(key, value)], timestamp=at)
        w.write_batch([(gone[0], None)], timestamp=T0 + 3 * S)
    expected = _python(transaction_report(log, max_timeout_ms=1))
    fencing = {(t["transactionalId"], c["change"]) for t in expected["ids"] for c in t["fencing"]}
    assert fencing == {("tx-replaced", "new producer id")}
    reasons = {row[2]: row[14].split("; ")[0] for row in expected["open"]}
    assert reasons == {
        20: "'tx-replaced' now has producer id 21 (this transaction's producer 20 was replaced)",
        22: "the coordinator deleted transactional id 'tx-gone'",
    }
    assert _spark(spark, log, max_timeout_ms=1) == expected


def test_spark_and_python_give_a_producer_id_the_same_owner(spark: Any, tmp_path: Path) -> None:
    """Two transactional ids in different coordinator partitions name one producer id: the
    newer record's id owns it on both paths, whatever the offsets or the order of reading."""
    log = tmp_path / "kafka-logs"
    shop = log / "shop-0"
    shop.mkdir(parents=True)
    with SegmentWriter(shop / "00000000000000000000.log") as w:
        txn: dict[str, Any] = {"producer_epoch": 0, "transactional": True}
        w.write_batch([(None, b"r")] * 2, timestamp=T0 + 5 * S, producer_id=30, **txn)
    shop_0 = ("shop", 0)
    newer = [txn_record("tx-new", "Empty", 1, 0, T0 + S, [])] * 5
    newer.append(txn_record("tx-new", "Ongoing", 30, 0, T0 + 5 * S, [shop_0], start=T0 + 5 * S))
    older = [txn_record("tx-old", "Ongoing", 30, 0, T0 + 2 * S, [shop_0], start=T0 + 2 * S)]
    # tx-new's record is at offset 5 of partition 0; tx-old's, older, at offset 0 of partition 1
    for partition, records in enumerate([newer, older]):
        folder = log / f"__transaction_state-{partition}"
        folder.mkdir()
        with SegmentWriter(folder / "00000000000000000000.log") as w:
            for key, value, at in records:
                w.write_batch([(key, value)], timestamp=at)
    expected = _python(transaction_report(log, max_timeout_ms=1))
    assert {row[2]: row[8] for row in expected["open"]} == {30: "tx-new"}
    assert _spark(spark, log, max_timeout_ms=1) == expected


def test_spark_and_python_take_the_same_now(spark: Any, tmp_path: Path) -> None:
    """Without a cut, *now* is the newest header time of the batches with records
    (codegen.dumps.views.cut.newest_batch_time) on both paths: here a __transaction_state batch
    whose header outlives its newest record (compaction removed it), which no record's
    timestamp shows."""
    log = tmp_path / "kafka-logs"
    shop, coord = log / "shop-0", log / "__transaction_state-0"
    shop.mkdir(parents=True)
    coord.mkdir()
    with SegmentWriter(shop / "00000000000000000000.log") as w:
        txn: dict[str, Any] = {"producer_epoch": 0, "transactional": True}
        w.write_batch([(None, b"r")] * 2, timestamp=T0 + S, producer_id=40, **txn)
    shop_0 = ("shop", 0)
    segment = coord / "00000000000000000000.log"
    with SegmentWriter(segment) as w:
        for at in (T0 + S, T0 + 2 * S):
            key, value, _ = txn_record("tx-a", "Ongoing", 40, 0, at, [shop_0], start=T0 + S)
            position = w.write_batch([(key, value)], timestamp=at)
    with_newer_header(segment, position, T0 + 50 * S)
    report = transaction_report(log, max_timeout_ms=30 * S)
    assert report.now == T0 + 50 * S
    inputs = transactions.read_transactions(spark, log)
    assert transactions.newest_timestamp(inputs) == report.now
    assert _spark(spark, log, max_timeout_ms=30 * S) == _python(report)


def test_spark_open_transactions_read_nothing_when_none_is_open(spark: Any, tmp_path: Path) -> None:
    """With no transaction open at the cut, the answer is planned on no rows: no job reads the
    commits or the coordinator's records. Planned as joins on an empty side, Spark's adaptive
    execution started those reads with the rest and, once the open side came out empty, ended
    the answer with them still running (killed with the session: "Python worker exited
    unexpectedly")."""
    log = write_offset_transactions(tmp_path)
    before_open = AsOf(timestamp_ms=T0 + 3 * S)  # tx-done committed; pids 30, 31 not begun
    expected = _python(transaction_report(log, as_of=before_open, max_timeout_ms=30 * S))
    assert expected["open"] == [] and expected["ids"]
    inputs = transactions.read_transactions(spark, log, before_open)
    answer = transactions.open_transactions(inputs, T0 + 3 * S, max_timeout_ms=30 * S)
    plan = answer._jdf.queryExecution().optimizedPlan().toString()
    assert "decode_consumer_offsets" not in plan and "decode_transaction_state" not in plan
    assert _spark(spark, log, before_open, max_timeout_ms=30 * S) == expected
