"""``kafka-log`` and the forensics functions over a real S3-compatible server (s3proxy,
``tests/s3server.py``): the same rows as the same files on disk, ranged reads, credentials from
the ``storage.*`` options that show in no plan, message or log."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path
from typing import Any

import pytest

from .conftest import REAL_DATA
from .test_pushdown import _write_log

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("s3")]

CONNECT = pytest.mark.spark_connect


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory, dump: Any) -> Path:
    """A broker's log dir: the real ``aibulb`` broker's folders, ``orders`` (two partitions of
    three segments with offset indexes) and the synthesized ``__consumer_offsets`` dump."""
    folder = tmp_path_factory.mktemp("s3-logs") / "broker-1"
    shutil.copytree(REAL_DATA / "aibulb", folder)
    _write_log(folder)
    for partition in dump.files:
        shutil.copytree(partition.parent, folder / f"{partition.parent.name}-synth")
    return folder


@pytest.fixture(scope="module")
def remote(s3_server: Any, log_dir: Path) -> str:
    import s3server

    return s3server.upload(s3_server, log_dir, "spark-backups/broker-1")


def _load(spark: Any, path: str, options: dict[str, str], **extra: str) -> Any:
    reader = spark.read.format("kafka-log")
    for key, value in {**options, **extra}.items():
        reader = reader.option(key, value)
    return reader.load(path)


def _rows(df: Any, local: Path | None = None, remote: str = "") -> list[tuple[Any, ...]]:
    rows = []
    for r in df.collect():
        values = r.asDict(recursive=True)
        if local is not None and isinstance(values.get("file"), str):
            values["file"] = values["file"].replace(remote, str(local))
        rows.append(tuple(sorted((k, repr(v)) for k, v in values.items())))
    return sorted(rows)


def _storage(s3_server: Any) -> dict[str, str]:
    return {f"storage.{k}": v for k, v in s3_server.options().items()}


@CONNECT
@pytest.mark.parametrize(
    ("folder", "extra"),
    [
        ("orders-1", {}),
        ("__consumer_offsets-28", {"decode": "true"}),
        ("*-0", {"decode": "true", "columns": "topic,partition,offset,recordName,file"}),
    ],
)
def test_kafka_log_reads_s3_as_the_disk(
    spark: Any, s3_server: Any, log_dir: Path, remote: str, folder: str, extra: dict[str, str]
) -> None:
    on_disk = _load(spark, f"{log_dir}/{folder}", {}, **extra)
    on_s3 = _load(spark, f"{remote}/{folder}", _storage(s3_server), **extra)
    expected = _rows(on_disk)
    assert expected
    assert _rows(on_s3, log_dir, remote) == expected


@CONNECT
def test_pushed_filters_over_s3_read_ranges(
    spark: Any, s3_server: Any, log_dir: Path, remote: str
) -> None:
    where = "partition = 1 and offset >= 410 and offset <= 450"
    on_disk = _load(spark, str(log_dir), {}, pushFilters="false").where(where)
    expected = _rows(on_disk)
    assert expected
    for push in ("true", "false"):
        on_s3 = _load(spark, remote, _storage(s3_server), pushFilters=push).where(where)
        assert _rows(on_s3, log_dir, remote) == expected
    given = _load(spark, remote, _storage(s3_server), where=where)
    assert _rows(given, log_dir, remote) == expected


def test_a_pushed_range_reads_the_index_and_its_window(s3_server: Any, remote: str) -> None:
    from codegen.dumps import storage
    from spark_udfs.datasource import KafkaLogDataSource

    options = {"path": f"{remote}/orders-*", **_storage(s3_server)}
    where = "partition = 1 and offset >= 410 and offset <= 450"
    everything = sum(
        p.stat().st_size
        for p in storage.expand([f"{remote}/orders-*/*.log"], s3_server.options())[0][1]
    )
    storage.READS.reset()
    reader = KafkaLogDataSource({**options, "where": where}).reader(None)
    rows = [rb.num_rows for part in reader.partitions() for rb in reader.read(part)]
    assert sum(rows) == 41  # offsets 410-450, markers among them
    assert storage.READS.bytes < everything / 10, (storage.READS, everything)


@CONNECT
def test_forensics_over_s3_are_the_disks(
    spark: Any, s3_server: Any, log_dir: Path, remote: str
) -> None:
    from codegen.dumps import storage
    from spark_udfs import forensics

    def views(path: Any) -> list[list[tuple[Any, ...]]]:
        decoded = forensics.read_dump(spark, path)
        return [
            _rows(forensics.group_states(decoded)),
            _rows(forensics.offset_history(decoded)),
        ]

    expected = views(log_dir)
    assert all(expected)
    assert views(storage.path(remote, s3_server.options())) == expected


@CONNECT
def test_the_secret_shows_in_no_plan_or_message(
    spark: Any, s3_server: Any, remote: str, spark_connect_server: Any
) -> None:
    df = _load(spark, f"{remote}/orders-0", _storage(s3_server)).where("offset < 3")
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        df.explain(True)
    assert df.count() == 3
    assert s3_server.secret_key not in text.getvalue()
    from spark_udfs.session import kafka_log_reader

    wrong = {**s3_server.options(), "secret_key": "wrong-secret-4f1c9e2ab"}
    with pytest.raises(Exception) as caught:  # at load(): the source resolves its paths
        kafka_log_reader(spark, wrong).load(f"{remote}/orders-0")
    message = str(caught.value)
    assert "ACCESS_DENIED" in message or "SIGNATURE" in message, message
    assert "wrong-secret-4f1c9e2ab" not in message and s3_server.secret_key not in message
    if spark_connect_server is not None:
        log = spark_connect_server.log.read_text(errors="replace")
        assert s3_server.secret_key not in log and "wrong-secret-4f1c9e2ab" not in log
