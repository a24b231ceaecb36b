"""Rows of a log partition, as Spark gives them, replay to the command line's group views."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from codegen.dumps.arrow import record_batches
from codegen.dumps.coordinator import decode_batches
from codegen.forensics.coordinator_logs import dump_partitions
from codegen.forensics.groups import GroupsView, group_reports
from spark_udfs.group_views import replay_rows

ROOT = Path(__file__).resolve().parent.parent
AIBULB = ROOT / "tests" / "data" / "forensics" / "aibulb"


def rows_of(files: list[Path]) -> pa.Table:
    """The partition's rows as the kafka-log source gives them, with ``timestampMs``."""
    tables = []
    for f in files:
        table = pa.Table.from_batches(list(record_batches(f, headers=False)))
        millis = pc.cast(table["timestamp"], pa.int64())
        tables.append(
            table.append_column("timestampMs", pc.divide(millis, 1000)).filter(
                pc.is_null(table["_error"])
            )
        )
    return pa.concat_tables(tables)


def replayed(partition: int, table: pa.Table, chunk: int) -> GroupsView:
    """What Spark's group views do: the command line's step (commits as columns, the other
    records one by one), a chunk at a time."""
    view = GroupsView(partition)
    replay_rows(view, table, chunk)
    return view


def as_json(views: Any) -> list[dict[str, Any]]:
    return [r.to_json() for r in group_reports(views)]


def synthesized(tmp_path: Path) -> Path:
    from spark_udfs.synth import write_consumer_offsets

    write_consumer_offsets(tmp_path, records=3_000, partitions=2, groups=12, seed=5)
    return tmp_path


@pytest.mark.parametrize("name", ["aibulb", "synth"])
def test_rows_in_any_order_replay_to_the_command_lines_groups(name: str, tmp_path: Path) -> None:
    path = AIBULB if name == "aibulb" else synthesized(tmp_path)
    expected = as_json(path)
    views = []
    rng = random.Random(7)
    for partition, files in dump_partitions(path):
        table = rows_of(files)
        shuffled = table.take(rng.sample(range(len(table)), len(table)))
        # Small chunks: batches span them.
        views.append(replayed(partition, shuffled, chunk=7))
        # Without batch positions (rows of Spark's Kafka source) each record is a batch.
        alone = replayed(partition, table.drop_columns(["batchPosition"]), chunk=1000)
        assert [r.to_json() for r in group_reports([alone])] == [
            r.to_json() for r in group_reports([views[-1]])
        ]
    assert as_json(views) == expected
    assert expected and any(r["timeline"] for r in expected)
    in_order = [replayed(p, rows_of(f), chunk=5) for p, f in dump_partitions(path)]
    assert as_json(in_order) == expected


def test_transactions_apply_at_their_commit_marker(tmp_path: Path) -> None:
    path = synthesized(tmp_path)
    partitions = dump_partitions(path)
    table = rows_of(partitions[0][1])
    assert pc.any(table["isTransactional"]).as_py()
    assert pc.any(table["isControl"]).as_py()
    # The same records as the files' batches, the same offsets committed.
    view = replayed(partitions[0][0], table, chunk=1000)
    cli = GroupsView(partitions[0][0]).add_batches(
        b for f in partitions[0][1] for b in decode_batches(f)
    )
    assert view.offsets == cli.offsets and view.pending.keys() == cli.pending.keys()
