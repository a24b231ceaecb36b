"""What differs over Spark Connect (``docs/spark.md``, "Spark Connect"): in the ``spark_connect``
pass these run as a client of the run's local Connect server; in the classic run they check the
classic side of the same helpers."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from spark_udfs import live
from spark_udfs.connect import is_connect, server_path
from spark_udfs.session import kafka_log_reader

from .conftest import REAL_DATA

pytestmark = [pytest.mark.spark, pytest.mark.spark_connect]


def test_relative_paths_are_the_servers(spark: Any) -> None:
    relative = os.path.relpath(REAL_DATA / "ldi-poc" / "__consumer_offsets-6")
    df = kafka_log_reader(spark).option("decode", "true").load(relative)
    assert {r.recordName for r in df.collect()} == {"OffsetCommit", "GroupMetadata"}


@pytest.mark.parametrize(
    ("path", "options", "message"),
    [
        ("no/such/folder", {}, "no such file or folder: no/such/folder"),
        ("tests/data/kafka-data/nope-*", {}, "matches no file or folder"),
        ("tests/data/kafka-data/aibulb", {"recordTypes": "OffsetCommit"}, "add decode"),
        ("tests/data/kafka-data/aibulb", {"pushFilters": "yes"}, "use auto, true or false"),
    ],
)
def test_errors_surface_at_load(
    spark: Any, path: str, options: dict[str, str], message: str
) -> None:
    reader = kafka_log_reader(spark).options(**options)
    with pytest.raises(Exception, match=message):
        reader.load(path)


def test_server_path_leaves_paths_alone_outside_a_connect_worker(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert server_path("a/b") == "a/b"
    assert server_path("/a/b") == "/a/b"
    # in a Connect session's worker: relative paths from the server's folder, URLs as given
    session = tmp_path / "session-1"
    session.mkdir()
    monkeypatch.chdir(session)
    monkeypatch.setenv("SPARK_JOB_ARTIFACT_UUID", "session-1")
    monkeypatch.setenv("PWD", "/srv/spark")
    assert server_path("a/b") == "/srv/spark/a/b"
    assert server_path("s3://bucket/a") == "s3://bucket/a"
    assert server_path("file:///a/b") == "file:///a/b"


@pytest.mark.connect_only  # a classic session asks the cluster itself (tests/test_broker_live.py)
def test_live_topics_need_the_partition_count_over_connect(spark: Any, tmp_path: Path) -> None:
    from broker.client import spark_kafka_conf

    assert is_connect(spark)
    with pytest.raises(live.LiveTopicError, match=r"partitions=N to read_internal_topic"):
        live.read_internal_topic(spark, "127.0.0.1:9", "__consumer_offsets")
    with pytest.raises(live.LiveTopicError, match=r"or track_committed_offsets"):
        live.track_committed_offsets(
            spark, "127.0.0.1:9", tmp_path / "table", tmp_path / "checkpoint"
        )
    _, missing = spark_kafka_conf()
    if missing is not None:
        pytest.skip(f"Spark's Kafka source: {missing}")
    raw = live.read_internal_topic(spark, "127.0.0.1:9", "__consumer_offsets", partitions=3)
    assert raw.columns[:3] == ["key", "value", "topic"]  # the server planned the Kafka source


@pytest.mark.connect_only  # addPyFile on a classic session: tests/spark/test_user_package.py
def test_a_codec_package_goes_to_the_server_as_artifacts(spark: Any, tmp_path: Path) -> None:
    import newer_specs

    import spark_udfs
    from spark_udfs.session import ship_codec_package

    assert is_connect(spark)
    parent = newer_specs.generate(tmp_path / "newer")
    package = newer_specs.import_package(parent)  # here only: the server's workers lack it
    try:
        ship_codec_package(spark, package)  # addArtifacts(pyfile=True)
        mine = spark_udfs.for_package(newer_specs.PACKAGE)
        df = spark.createDataFrame(newer_specs.records(package), "key binary, value binary")
        rows = mine.decode_transaction_state(df).collect()
        assert [r.recordName for r in rows] == ["TransactionLog", "TransactionAudit"]
        assert rows[1].decodedValue.TransactionAuditValue.operator == "ops"
    finally:
        sys.path.remove(str(parent))


def test_the_workers_say_whether_they_have_the_native_engine(spark: Any) -> None:
    """This run's workers import the installed package, whose engine is built: no reason to
    read with the pure backend, and no warning."""
    import warnings

    from spark_udfs.workers import warn_pure_workers

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = warn_pure_workers(spark, partitions=2)
    assert found and set(found.values()) == {None}


@pytest.mark.connect_only  # a shipped zip on the shared classic session would stay for the run
def test_a_shipped_package_tells_the_client_its_workers_read_without_the_engine(
    spark_connect_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ship=True``'s zip has no compiled engine: the server's workers use the engine installed
    in their Python only when it was built from the zip's C sources. A zip of other sources (as
    from another version of the package) makes them read with the pure backend, and the client
    is told so (before, only the server's log said it). tests/spark/test_spark.py's local
    cluster has a zip of the same sources, whose workers use the installed engine."""
    from pyspark.sql.connect.session import SparkSession as RemoteSession

    from codegen import native
    from codegen.runtime.backends import NativeFallbackWarning
    from spark_udfs.session import ship_package

    monkeypatch.setattr(native, "sources_digest", lambda folder: "0" * 64)
    session = RemoteSession.builder.remote(spark_connect_url).create()
    try:
        with pytest.warns(NativeFallbackWarning, match=r"pure-Python backend.*ship=True") as told:
            ship_package(session)  # the session's own artifacts: other sessions keep theirs
        said = str(told[0].message)
        assert "the native engine is not built" in said
        assert "was not built from the shipped package's C sources" in said
        rows = session.read.format("kafka-log").load(str(REAL_DATA / "aibulb")).count()
        assert rows > 0  # the same rows, read the slow way
    finally:
        session.stop()


def _python_workers(pid: int) -> list[tuple[int, int, str]]:
    """The Python processes below ``pid``: (pid, resident KiB, command)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rpartition(")")[2].split()[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child)
            try:
                argv = (Path("/proc") / str(child) / "cmdline").read_bytes().split(b"\0")
                rss = int((Path("/proc") / str(child) / "statm").read_text().split()[1])
            except OSError:
                continue
            if Path(argv[0].decode()).name.startswith("python"):
                found.append(
                    (
                        child,
                        rss * os.sysconf("SC_PAGE_SIZE") // 1024,
                        " ".join(a.decode() for a in argv[1:3]),
                    )
                )
    return found


@pytest.mark.connect_only
def test_python_workers_stay_bounded_over_many_client_sessions(tmp_path: Path) -> None:
    """Each client session of a Connect server has its own Python worker pools (Spark keys them
    by the session's artifact folder) and Spark 4.3 ends none when the session ends: with
    PySpark's fork server (``spark.python.use.daemon``) each session left about five processes
    (190 MiB) behind for good, 11 after the first session. A server as ``make connect-server``
    starts it (on its own here: the pass's server keeps the fork server) runs its workers
    without it: after several sessions that each read with ``kafka-log`` (planning, filters
    pushed, and decoded), what is left is what one session runs at a time."""
    import connect_server
    from pyspark.sql.connect.session import SparkSession as RemoteSession

    from spark_udfs.session import register_data_source

    server = connect_server.start_server(tmp_path / "server", {})
    try:
        counts = []
        for _ in range(3):
            session = RemoteSession.builder.remote(server.url).create()
            try:
                register_data_source(session)
                df = session.read.format("kafka-log").load(str(REAL_DATA / "aibulb"))
                assert df.where("offset < 3").count() > 0
                decoded = session.read.format("kafka-log").option("decode", "true")
                names = decoded.load(str(REAL_DATA / "aibulb")).groupBy("recordName").count()
                assert len(names.collect()) > 1
            finally:
                session.stop()
            counts.append(len(_python_workers(server.pid)))
        workers = _python_workers(server.pid)
    finally:
        server.stop()
    # a session's planning and tasks (local[2]) run in a few workers at a time; the pools of
    # the sessions before are gone (with the fork server: 11, then 5 more per session)
    assert max(counts) <= 4, (counts, workers)
