"""Spark's answers on random histories (tests/histories.py, as the views' fuzz tests write
them: several partitions and segments, conversions, deletions, transactional commits, aborts,
compaction) at cuts: the Python API's, by the same definitions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cuts import batch_cuts, python_rows, spark_rows
from histories import seeded, write

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("seed", [41])
def test_spark_answers_a_random_history_at_its_cuts(spark: Any, seed: int, tmp_path: Path) -> None:
    log = write(seeded(seed), [1, 5, 0, 3], tmp_path)
    cuts = batch_cuts(log)
    cut = cuts[len(cuts) // 2]
    expected = python_rows(log, cut)
    assert expected["groups"] and expected["lag"] and expected["open"]
    assert spark_rows(spark, log, cut) == expected, cut
