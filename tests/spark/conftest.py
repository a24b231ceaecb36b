"""Spark tests: one shared local[2] session per test run."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from corpus import data_path

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

# The committed broker files (tests/data/PROVENANCE.md); missing is an error, not a skip.
REAL_DATA = data_path("kafka-data")


@pytest.fixture(scope="session")
def spark(spark_connect_url: str | None) -> Iterator[Any]:
    """A classic ``local[2]`` session; in the ``spark_connect`` pass a Spark Connect client of
    the run's local server."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from broker.client import spark_kafka_conf

    from spark_udfs.session import get_session

    session = get_session(
        "local[2]",
        app_name="kafka-specgen-tests",
        driver_memory="2g",
        shuffle_partitions=2,
        extra_conf={
            "spark.sql.execution.arrow.maxRecordsPerBatch": "1000",
            # Spark's Kafka source when fetched: the broker tests share this session.
            **spark_kafka_conf()[0],
        },
        remote=spark_connect_url,
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def dump(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from spark_udfs.synth import write_consumer_offsets

    out = tmp_path_factory.mktemp("dump")
    return write_consumer_offsets(out, records=20_000, partitions=3, groups=30, seed=7)
