"""``kafka-log`` and the forensics functions on a Spark standalone cluster (a master and two
one-core workers started from PySpark's own scripts, ``tests/spark_cluster.py``) over a real
S3-compatible server: executors in their own processes and working folders, nothing shared with
the driver but the store, and the rows of local mode.

The cluster's driver runs in a subprocess (one classic SparkContext per process: this one has
the tests' ``local[2]``), which writes what it read as JSON; this process reads the same paths
in local mode and compares.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .test_object_storage_spark import log_dir, remote  # noqa: F401 - the same fixtures

pytestmark = [pytest.mark.spark, pytest.mark.cluster, pytest.mark.xdist_group("s3")]

ROOT = Path(__file__).resolve().parents[2]

JOB = r"""
import json, os, sys
from pyspark.sql import functions as F
from codegen.dumps import storage
from spark_udfs import forensics
from spark_udfs.session import get_session, kafka_log_reader

master, url, out = sys.argv[1:]
options = json.loads(os.environ["STORAGE_OPTIONS"])
spark = get_session(master, app_name="kafka-specgen-cluster-test", driver_memory="512m",
                    shuffle_partitions=2, extra_conf=json.loads(os.environ["CLUSTER_CONF"]))
import cluster_checks
result = cluster_checks.facts(spark, url, options)
where = F.udf(lambda: f"{os.getpid()} {os.getcwd()}")
raw = kafka_log_reader(spark, options).load(url)
result["executors"] = sorted(
    {r.w for r in raw.select(where().alias("w")).distinct().collect()}
)
result["partitions"] = raw.rdd.getNumPartitions()
result["parallelism"] = spark.sparkContext.defaultParallelism
json.dump(result, open(out, "w"))
spark.stop()
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    import spark_cluster

    started = spark_cluster.start(tmp_path_factory.mktemp("standalone"))
    yield started
    started.stop()


def test_the_cluster_listens_on_loopback_only(cluster: Any) -> None:
    from sockets import exposed, listening

    pids = cluster.pids()
    assert len(pids) == 3  # the master and two workers
    for pid in pids:
        assert listening(pid), pid
        assert exposed(pid) == [], pid


def test_kafka_log_and_forensics_on_the_cluster_are_local_modes(
    spark: Any,
    cluster: Any,
    s3_server: Any,
    remote: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    from . import cluster_checks

    out = tmp_path / "cluster.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests" / "spark")]),
        "STORAGE_OPTIONS": json.dumps(s3_server.options()),
        "CLUSTER_CONF": json.dumps(cluster.conf()),
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    job = subprocess.run(
        [sys.executable, "-c", JOB, cluster.url, remote, str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    assert job.returncode == 0, job.stderr[-4000:]
    on_cluster = json.loads(out.read_text())
    local = json.loads(json.dumps(cluster_checks.facts(spark, remote, s3_server.options())))
    for name in cluster_checks.FACTS:
        assert on_cluster[name] == local[name], name
    assert on_cluster["parallelism"] == 2 and on_cluster["partitions"] >= 2
    # every task ran in an executor of a worker: its own process, in the worker's folder
    folders = {w.split(" ", 1)[1] for w in on_cluster["executors"]}
    assert all(f.startswith(str(cluster.folder / "worker-")) for f in folders), folders
    assert len({f.split("/worker-")[1][0] for f in folders}) == 2  # both workers
    assert not {w.split(" ", 1)[0] for w in on_cluster["executors"]} & {str(os.getpid())}


def test_input_partitions_are_balanced_by_bytes(s3_server: Any, remote: str) -> None:  # noqa: F811
    from spark_udfs.datasource import KafkaLogDataSource

    options = {f"storage.{k}": v for k, v in s3_server.options().items()}
    reader = KafkaLogDataSource({"path": remote, "minPartitions": "2", **options}).reader(None)
    parts = reader.partitions()
    sizes = [sum(sl.end - sl.start for sl in p.slices) for p in parts]
    assert len(parts) >= 2
    # Spark's packing: each holds at most the split (total / minPartitions, with open costs)
    assert max(sizes) <= sum(sizes) / 2 + 4 * 1024 * 1024
    segments = {sl.path for p in parts for sl in p.slices}
    assert all(s.endswith((".log", ".checkpoint")) for s in segments)
