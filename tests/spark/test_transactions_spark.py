"""spark_udfs.transactions gives the answers of codegen.forensics.transactions, row for row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_forensics_transactions import T0, S, write_cluster

from codegen.forensics.groups import AsOf
from codegen.forensics.transactions import TransactionReport, transaction_report
from spark_udfs import transactions


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_cluster(tmp_path_factory.mktemp("txn-spark"))


def _python(report: TransactionReport) -> dict[str, Any]:
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
            for p in report.partitions
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
            for p in report.partitions
            for a in p.aborted_from_markers
        ),
        "open": sorted(
            (
                t.topic,
                t.partition,
                t.producer_id,
                t.producer_epoch,
                t.first_offset,
                t.age_ms,
                t.transactional_id,
                t.timeout_ms,
                t.hanging,
            )
            for p in report.partitions
            for t in p.open
        ),
        "coordinator": sorted(
            (
                t.transactional_id,
                c.producer_id,
                c.producer_epoch,
                c.state,
                c.timeout_ms,
                sorted(f"{topic}-{p}" for topic, p in c.partitions),
            )
            for t in report.transactional_ids
            for c in t.changes[-1:]
        ),
    }


def _spark(spark: Any, path: Path, as_of: AsOf | None = None) -> dict[str, Any]:
    data, coordinator, active = transactions.read_transactions(spark, path, as_of)
    now = (
        as_of.timestamp_ms
        if as_of is not None and as_of.timestamp_ms is not None
        else transactions.newest_timestamp(data, coordinator)
    )
    return {
        "partitions": sorted(
            tuple(r) for r in transactions.partition_transactions(data, active).collect()
        ),
        "aborted": sorted(tuple(r) for r in transactions.aborted_ranges(data).collect()),
        "open": sorted(
            tuple(r) for r in transactions.open_transactions(data, coordinator, now).collect()
        ),
        "coordinator": []
        if coordinator is None
        else sorted(
            (*r[:5], sorted(r[5])) for r in transactions.coordinator_states(coordinator).collect()
        ),
    }


@pytest.mark.parametrize("at", [None, T0 + 4 * S + 500, T0 + 200 * S])
def test_spark_answers_equal_the_python_api(spark: Any, cluster: Path, at: int | None) -> None:
    as_of = None if at is None else AsOf(timestamp_ms=at)
    expected = _python(transaction_report(cluster, as_of=as_of))
    assert any(row[-1] for row in expected["open"])  # a hanging transaction at each time
    assert _spark(spark, cluster, as_of) == expected
