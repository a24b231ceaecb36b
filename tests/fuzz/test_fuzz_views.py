"""The views fuzzed like the codecs: random group and transaction histories (tests/histories.py:
joins, leaves, conversions, deletions, commits, transactional commits, aborts, compaction),
written with our codecs into several partitions and segments, read at random cuts.

At every cut drawn, ``groups``, ``lag`` and ``transactions`` answer (no exception but a typed
bad-input error) with the answer over a copy of the log dir as it was then (tests/cuts.py);
reading a few rows at a time (empty chunks, one-record chunks, chunks of control records
only) gives the same answers; and the command line prints the Python API's answer. Spark's
answers on a few of these histories: tests/spark/test_forensics_histories_spark.py.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from cuts import answers, batch_cuts, prefix_copy
from histories import compactions, steps, write
from hypothesis import given
from hypothesis import strategies as st
from test_forensics_cuts import check_cli

from codegen.dumps.views import commits as commit_views
from codegen.forensics.groups import AsOf


def _cuts(log: Path, data: st.DataObject) -> list[AsOf]:
    """A few cuts: batch boundaries, moments between them and offsets."""
    every = batch_cuts(log)
    chosen = data.draw(st.lists(st.sampled_from(every), min_size=1, max_size=3, unique=True))
    between = data.draw(st.integers(-1, 10**6))
    assert every[0].timestamp_ms is not None
    return [*chosen, AsOf(timestamp_ms=every[0].timestamp_ms + between)]


@given(history=steps, compaction=compactions, data=st.data())
def test_every_cut_of_a_random_history_is_the_answer_over_its_prefix(
    history: Any, compaction: list[int], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = write(history, compaction, Path(tmp))
        for n, cut in enumerate(_cuts(log, data)):
            whole = answers(log, cut)
            copy = prefix_copy(log, cut, Path(tmp) / f"cut-{n}")
            if cut.offset is None:
                assert answers(copy, cut) == whole, cut
            else:
                assert answers(copy, None) == whole, cut


@given(history=steps, compaction=compactions, rows=st.integers(1, 3), data=st.data())
def test_the_answers_do_not_depend_on_how_many_rows_are_read_at_a_time(
    history: Any, compaction: list[int], rows: int, data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = write(history, compaction, Path(tmp))
        cut = _cuts(log, data)[0]
        expected = answers(log, cut)
        saved = commit_views.CHUNK_ROWS
        commit_views.CHUNK_ROWS = rows
        try:
            assert answers(log, cut) == expected
        finally:
            commit_views.CHUNK_ROWS = saved


@given(history=steps, compaction=compactions, data=st.data())
def test_the_command_line_prints_the_api_answer(
    history: Any, compaction: list[int], data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = write(history, compaction, Path(tmp))
        check_cli(log, _cuts(log, data)[0], Path(tmp))


def test_a_history_round_trips_into_a_log_dir(tmp_path: Path) -> None:
    """The writer lays out what it is given: partitions, segments, gaps from compaction."""
    history = [
        ("classic", 0, "g0", 1, {"a"}),
        ("commit", 0, "g0", ("orders", 0), 3),
        ("roll", "co0"),
        ("tick", 1000),
        ("txn-commit", 0, 100, "g1", ("orders", 1), 5),
        ("marker", "co0", 100, True),
        ("data", 0, 3),
        ("txn-state", 100, "Ongoing", {"co0"}),
    ]
    log = write(history, [], tmp_path)
    assert sorted(p.name for p in log.iterdir()) == [
        "__consumer_offsets-0",
        "__transaction_state-0",
        "orders-0",
    ]
    assert len(list((log / "__consumer_offsets-0").glob("*.log"))) == 2
    found = answers(log, None)
    assert [g["group"] for g in found["groups"]] == ["g0", "g1"]
    partitions = {
        line["topic"]: line for line in found["transactions"] if line["kind"] == "partition"
    }
    assert partitions["__consumer_offsets"]["committedTransactions"] == 1
    assert partitions["orders"]["logEndOffset"] == 3


@pytest.mark.parametrize("seed", range(3))
def test_compaction_leaves_gaps(seed: int, tmp_path: Path) -> None:
    history = [("data", 0, 1), ("roll", "0"), ("data", 0, 1), ("roll", "0"), ("data", 0, 1)]
    log = write(history, [seed, seed + 1, 0, 1], tmp_path)
    files = sorted((log / "orders-0").glob("*.log"))
    assert len(files) == 4  # three segments and the empty one past the end
    assert files[-1].stat().st_size == 0
