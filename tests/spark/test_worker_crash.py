"""A Python worker that crashes says where: a session of ``get_session`` turns on Spark's
faulthandler settings, so a worker killed by a signal (a native library's abort or
segmentation fault) reports its Python traceback in the task's error, where Spark alone says
only "Python worker exited unexpectedly (crashed)"."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from connect_server import enabled as connect_pass

pytestmark = pytest.mark.spark


@pytest.mark.skipif(connect_pass(), reason="the run's Connect server has its own settings")
def test_a_crashed_python_worker_reports_its_traceback(spark: Any) -> None:
    import pyarrow as pa

    def abort_in_the_worker(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import os

        os.abort()  # what a native library's failed check does
        yield from batches

    crashing = spark.range(1, numPartitions=1).mapInArrow(abort_in_the_worker, "id long")
    with pytest.raises(Exception, match="exited unexpectedly") as failed:
        crashing.collect()
    assert "abort_in_the_worker" in str(failed.value), str(failed.value)[-2000:]
