"""Spark's answers on random histories (tests/histories.py, as the views' fuzz tests write
them: several partitions and segments, conversions, deletions, transactional commits, aborts,
compaction) at cuts, a time and a ``__consumer_offsets`` offset: the Python API's, by the
same definitions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cuts import batch_cuts, python_rows, spark_rows
from histories import seeded, write

from codegen.dumps.model import BatchHeader
from codegen.dumps.segments import SegmentReader
from codegen.forensics.groups import AsOf

pytestmark = pytest.mark.spark


def _middle_offset(log: Path) -> AsOf:
    """A ``__consumer_offsets`` offset halfway through its longest partition (several
    partitions: every one is cut there, the rest at its moment)."""
    ends = [
        h.last_offset
        for folder in log.glob("__consumer_offsets-*")
        for segment in folder.glob("*.log")
        for h in SegmentReader(segment).batch_headers()
        if isinstance(h, BatchHeader)
    ]
    return AsOf(offset=max(ends) // 2)


@pytest.mark.parametrize("seed", [41])
def test_spark_answers_a_random_history_at_its_cuts(spark: Any, seed: int, tmp_path: Path) -> None:
    log = write(seeded(seed), [1, 5, 0, 3], tmp_path)
    cuts = batch_cuts(log)
    pending = []
    for cut in (cuts[len(cuts) // 2], _middle_offset(log)):
        expected = python_rows(log, cut)
        assert expected["groups"] and expected["lag"] and expected["open"], cut
        assert spark_rows(spark, log, cut) == expected, cut
        pending += [row[-1] for row in expected["open"] if row[0] == "__consumer_offsets"]
    assert pending  # an open transactional offset commit and the groups it keeps pending
