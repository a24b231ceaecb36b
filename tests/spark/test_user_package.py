"""The Spark layer bound to packages other than the shipped one (``spark_udfs.for_package``).

- A user project with its own spec (``tests/cases/tagged_demo``: tagged fields, a nullable
  struct, a common struct), built into a wheel by the build hook, decodes a binary column with
  its own column functions in FAILFAST and PERMISSIVE modes and from SQL: installed into a
  folder of its own, in the shared ``local[2]`` session; installed into a clean virtualenv
  (with kafka-specgen's own wheel and its ``spark`` extra, nothing from this checkout), in
  ``local-cluster[2,1,1024]`` (separate executor JVMs and Python workers).
- Its own topics (``tests/user_topics_data.py``: an int16 version prefix, a version header,
  fixed versions; a record cut short, a tombstone, a newer version, a missing header) decode
  through ``kafka-log``'s ``topics`` option (a topic map) to the values of the Python API and
  the errors of ``dump``, the internal topic in the same folder as without the map; the column
  function with ``version="prefix"`` gives the same values. A data message without a version
  fails when its column is built; the SQL functions take the version and the mode, and wrong
  arguments fail with Spark's own errors.
- A package generated from a newer coordinator spec set decodes, through the topic function and
  the ``kafka-log`` source's ``package`` option, a record type and a value version the shipped
  package reports unknown and newer.

Both packages reach the executors the way docs/spark.md says: ``ship_codec_package`` zips the
installed package for ``SparkContext.addPyFile``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import newer_specs
import pytest
from click.testing import CliRunner
from test_golden import annotated_hex
from test_hatch_hook import CHECKOUT
from user_topics_data import INTERNAL, Written, write_topics

import spark_udfs
from codegen.dumps.command import dump_command
from codegen.dumps.topic_map import load_topic_map
from codegen.dumps.user_topics import decode_user_records
from spark_udfs import functions
from spark_udfs.session import ship_codec_package

TAGGED_DEMO = Path(__file__).resolve().parents[1] / "cases" / "tagged_demo"
USER_PACKAGE = "demo_codecs"  # the package test_hatch_hook's user project builds


ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def user_package(spark: Any, user_codecs: Any) -> str:
    """The installed user package (the wheel the build hook made, ``tests/conftest.py``),
    importable on the driver and shipped to the executors."""
    ship_codec_package(spark, USER_PACKAGE)
    return USER_PACKAGE


@pytest.fixture(scope="session")
def newer_package(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    package = newer_specs.import_package(newer_specs.generate(tmp_path_factory.mktemp("newer")))
    ship_codec_package(spark, package)
    return package


V2 = annotated_hex(TAGGED_DEMO / "samples" / "v2.hex")
V2_ROW = {
    "id": 7,
    "name": None,
    "weights": [],
    "owner": {"host": "o", "port": 80, "_unknown_tagged_fields": None},
    "members": [{"host": "h", "port": 9092, "_unknown_tagged_fields": None}],
    "topicId": "AAAAAAAAAAAAAAAAAAAAAQ",
    "note": "hi",
    "epoch": -1,
    "blob": bytearray(),
    "_unknown_tagged_fields": None,
}


def _values(spark: Any, values: list[bytes]) -> Any:
    return spark.createDataFrame(
        [(i, v) for i, v in enumerate(values)], "offset long, value binary"
    )


def test_user_package_has_its_own_column_functions(user_package: str) -> None:
    bound = spark_udfs.for_package(user_package)
    assert bound.message_function_names() == ["decode_tagged_demo"]
    assert [f.name for f in bound.schema("TaggedDemo").fields] == list(V2_ROW)
    assert bound.topic_families() == []
    with pytest.raises(AttributeError):
        bound.decode_offset_commit_value  # noqa: B018 - a shipped message, not the user's
    assert "decode_tagged_demo" not in functions.message_function_names()


def test_user_package_decodes_a_binary_column_in_failfast(spark: Any, user_package: str) -> None:
    decode = spark_udfs.for_package(user_package).decode_tagged_demo
    df = _values(spark, [V2, V2])
    rows = df.select(decode("value", version=2).alias("d")).collect()
    assert [r.d.asDict(recursive=True) for r in rows] == [V2_ROW, V2_ROW]
    bad = _values(spark, [V2, V2[:-1]])
    with pytest.raises(Exception) as info:
        bad.select(decode("value", version=2, position=["offset"]).alias("d")).collect()
    text = str(info.value)
    assert "MalformedKafkaRecordError" in text and "offset 1" in text and "TaggedDemo" in text


def test_user_package_decodes_a_binary_column_in_permissive(spark: Any, user_package: str) -> None:
    bound = spark_udfs.for_package(user_package)
    df = _values(spark, [V2, V2[:-1], None])  # type: ignore[list-item]
    col = bound.decode_message("TaggedDemo", "value", version=2, mode="permissive")
    rows = df.orderBy("offset").select(col.alias("d")).collect()
    assert rows[0].d.decoded.asDict(recursive=True) == V2_ROW
    assert rows[0].d._decode_error is None
    assert rows[1].d.decoded is None and "TaggedDemo" in rows[1].d._decode_error
    assert rows[2].d.decoded is None and rows[2].d._decode_error is None


def test_user_package_sql_functions(spark: Any, user_package: str) -> None:
    names = spark_udfs.for_package(user_package).register_sql_functions(spark, mode="PERMISSIVE")
    assert names == ["decode_tagged_demo"]
    _values(spark, [V2[:-1]]).createOrReplaceTempView("user_values")
    (row,) = spark.sql("SELECT decode_tagged_demo(value, 2) AS d FROM user_values").collect()
    assert row.d.decoded is None and "TaggedDemo" in row.d._decode_error


def test_sql_functions_take_version_and_mode(spark: Any, user_package: str) -> None:
    """The version and the mode are arguments; wrong ones fail with Spark's own errors."""
    spark_udfs.for_package(user_package).register_sql_functions(spark)  # FAILFAST-shaped
    _values(spark, [V2, V2[:-1]]).createOrReplaceTempView("user_values_2")
    sql = "SELECT offset, decode_tagged_demo(value, {}) AS d FROM user_values_2 ORDER BY offset"
    rows = spark.sql(sql.format("2, 'permissive'")).collect()
    assert rows[0].d.asDict(recursive=True) == V2_ROW and rows[1].d is None
    (good,) = spark.sql(sql.format("2").replace("ORDER", "WHERE offset = 0 ORDER")).collect()
    assert good.d.note == "hi"
    with pytest.raises(Exception) as info:
        spark.sql(sql.format("2")).collect()
    assert "MALFORMED_KAFKA_RECORD" in str(info.value) and "TaggedDemo v2" in str(info.value)
    with pytest.raises(Exception) as info:
        spark.sql("SELECT decode_tagged_demo(value) FROM user_values_2")
    assert "[WRONG_NUM_ARGS" in str(info.value) and "decode_tagged_demo" in str(info.value)
    with pytest.raises(Exception) as info:
        spark.sql(sql.format("'two'")).collect()
    assert "[CAST_INVALID_INPUT]" in str(info.value)
    with pytest.raises(Exception) as info:
        spark.sql(sql.format("2, 'loose'")).collect()
    assert (
        "[USER_RAISED_EXCEPTION] decode_tagged_demo: unknown mode loose: use FAILFAST or PERMISSIVE"
        in str(info.value)
    )


def test_data_message_without_version_fails_when_the_column_is_built(user_package: str) -> None:
    bound = spark_udfs.for_package(user_package)
    with pytest.raises(ValueError) as info:
        bound.decode_tagged_demo("value")
    assert str(info.value).startswith(
        "decode_tagged_demo: TaggedDemo is a data message whose bytes carry no version, and it "
        "has versions 0-2: give the version of the bytes (decode_tagged_demo(col, version=2))"
    )
    with pytest.raises(ValueError, match=r"TaggedDemo has no version 5 \(valid versions: 0-2\)"):
        bound.decode_tagged_demo("value", version=5)


# ---------------------------------------------------------------------- user topics, topic map


@pytest.fixture(scope="module")
def written(user_codecs: Any, tmp_path_factory: pytest.TempPathFactory) -> Written:
    return write_topics(tmp_path_factory.mktemp("user-topics"), user_codecs)


def _view(obj: Any) -> dict[str, Any]:
    """The fields of a decoded TaggedDemo, from the codec's object or a Spark row."""
    get = obj.__getitem__ if isinstance(obj, dict) else lambda name: getattr(obj, name)
    members = [
        (m["host"], m["port"]) if isinstance(m, dict) else (m.host, m.port) for m in get("members")
    ]
    return {
        "id": get("id"),
        "name": get("name"),
        "weights": list(get("weights")),
        "members": members,
        "note": get("note"),
        "epoch": get("epoch"),
    }


def _python_api(written: Written) -> dict[tuple[str, int], Any]:
    """(topic, offset) -> the decoded value (its view), None (tombstone) or the error text."""
    topic_map = load_topic_map(written.topic_map)
    out: dict[tuple[str, int], Any] = {}
    for topic in ("sensors", "audit", "readings"):
        for rec in decode_user_records(written.folder / f"{topic}-0", topic_map, topic):
            value = None if rec.value is None else _view(rec.value)
            out[(topic, rec.offset)] = rec.error if rec.kind == "error" else value
    return out


def test_kafka_log_decodes_user_topics_as_dump_does(
    spark: Any, user_package: str, written: Written
) -> None:
    reader = spark.read.format("kafka-log").option("mode", "PERMISSIVE")
    df = (
        reader.option("decode", "true")
        .option("topics", str(written.topic_map))
        .load(str(written.folder))
    )
    assert [f.name for f in df.schema["decodedValue"].dataType.fields][-1] == "TaggedDemo"
    rows = df.filter("topic != '__consumer_offsets'").collect()
    spark_values = {
        (r.topic, r.offset): r._decode_error
        if r._decode_error
        else None
        if r.decodedValue is None
        else _view(r.decodedValue.TaggedDemo.asDict(recursive=True))
        for r in rows
    }
    assert spark_values == _python_api(written)
    by_offset = {(r.topic, r.offset): r for r in rows}
    assert by_offset[("sensors", 4)].isTombstone and by_offset[("sensors", 5)].isNewerVersion
    assert by_offset[("sensors", 5)].valueVersion == 9
    assert by_offset[("readings", 0)].decodedKey.TaggedDemo.name == "ab"
    # flat: the key's fields, the value's (prefixed where the key has the name), coordinates
    flat = spark_udfs.flat(df, "TaggedDemo")
    fields = ["id", "name", "weights", "owner", "members", "topicId", "note", "epoch", "blob"]
    value_fields = ["value" + f[0].upper() + f[1:] for f in fields]
    assert flat.columns == [*fields, *value_fields, "topic", "partition", "offset", "timestamp"]
    (reading,) = flat.filter("topic = 'readings'").collect()
    assert (reading.name, reading.valueName, reading.valueNote, reading.offset) == (
        "ab",
        None,
        "hi",
        0,
    )
    # the same errors as dump's, record for record
    result = CliRunner().invoke(
        dump_command, [str(written.folder), "--topics", str(written.topic_map)]
    )
    dumped = [json.loads(line) for line in result.stdout.splitlines()]
    errors = {(d["topic"], d["offset"]): d["error"] for d in dumped if d["kind"] == "error"}
    assert errors == {k: r._decode_error for k, r in by_offset.items() if r._decode_error}
    # the internal topic decodes as it does without the map
    internal = "topic = '__consumer_offsets'"
    columns = [
        "offset",
        "recordName",
        "valueVersion",
        "decodedKey.OffsetCommitKey",
        "decodedValue.OffsetCommitValue",
    ]
    plain = spark.read.format("kafka-log").options(decode="true", mode="PERMISSIVE")
    plain = plain.load(str(written.folder / INTERNAL.name))
    assert df.filter(internal).select(*columns).collect() == plain.select(*columns).collect()


def test_kafka_log_topics_option_takes_json_and_fails_fast(
    spark: Any, user_package: str, written: Written
) -> None:
    topics = '{"sensor*": {"value": {"message": "TaggedDemo", "version": "prefix"}}}'
    reader = spark.read.format("kafka-log").options(topics=topics, package=user_package)
    df = reader.load(str(written.folder / "sensors-0"))
    with pytest.raises(Exception) as info:
        df.collect()
    text = str(info.value)
    assert (
        "MALFORMED_KAFKA_RECORD" in text
        and "topic sensors, partition 0, offset 3: value: TaggedDemo v2" in text
    )
    bad = '{"sensor*": {"value": {"message": "TaggedDemo", "version": 7}}}'
    with pytest.raises(Exception) as info:  # load() reads the map (with the schema)
        spark.read.format("kafka-log").options(topics=bad, package=user_package).load(
            str(written.folder / "sensors-0")
        )
    assert 'topics."sensor*".value: TaggedDemo has no version 7 (valid versions: 0-2)' in str(
        info.value
    )


def test_column_function_with_a_version_prefix_gives_the_same_values(
    spark: Any, user_package: str, written: Written
) -> None:
    decode = spark_udfs.for_package(user_package).decode_tagged_demo
    raw = spark.read.format("kafka-log").load(str(written.folder / "sensors-0"))
    rows = raw.select(
        "offset", decode("value", version="prefix", mode="PERMISSIVE").alias("d")
    ).collect()
    got = {
        ("sensors", r.offset): r.d._decode_error
        if r.d._decode_error
        else None
        if r.d.decoded is None
        else _view(r.d.decoded.asDict(recursive=True))
        for r in rows
    }
    expected = {k: v for k, v in _python_api(written).items() if k[0] == "sensors"}
    # the column function has no key/value side: its error is the codec's, without "value: "
    expected = {k: v[len("value: ") :] if isinstance(v, str) else v for k, v in expected.items()}
    assert got == expected
    # SQL: the version as an argument (the body after the prefix, at version 2)
    spark_udfs.for_package(user_package).register_sql_functions(spark, mode="PERMISSIVE")
    raw.createOrReplaceTempView("sensors_raw")
    sql = "SELECT offset, decode_tagged_demo(substring(value, 3), 2) AS d FROM sensors_raw"
    by_sql = {r.offset: r.d for r in spark.sql(sql + " WHERE `offset` IN (2, 3)").collect()}
    assert _view(by_sql[2].decoded.asDict(recursive=True)) == expected[("sensors", 2)]
    assert by_sql[3].decoded is None and by_sql[3]._decode_error == expected[("sensors", 3)]


def _by_name(rows: list[Any]) -> dict[str | None, Any]:
    return {r.recordName: r for r in rows}


def test_newer_package_decodes_what_the_shipped_one_does_not(
    spark: Any, newer_package: Any, tmp_path: Path
) -> None:
    folder = newer_specs.write_dump(tmp_path, newer_package).parent
    reader = spark.read.format("kafka-log").option("decode", "true")
    shipped = reader.load(str(folder)).orderBy("offset").collect()
    assert [r.recordName for r in shipped] == ["TransactionLog", None]
    assert [r.isNewerVersion for r in shipped] == [True, False]
    assert shipped[1].decodedValue is None

    raw = spark.read.format("kafka-log").load(str(folder))
    via_function = spark_udfs.for_package(newer_specs.PACKAGE).decode_transaction_state(raw)
    via_source = reader.option("package", newer_specs.PACKAGE).load(str(folder))
    for df in (via_function, via_source):
        rows = _by_name(df.collect())
        assert set(rows) == {"TransactionLog", "TransactionAudit"}
        log, audit = rows["TransactionLog"], rows["TransactionAudit"]
        assert (log.valueVersion, log.isNewerVersion) == (2, False)
        value = log.decodedValue.TransactionLogValue
        assert value.coordinatorEpoch == newer_specs.COORDINATOR_EPOCH
        assert audit.recordType == newer_specs.AUDIT_TYPE
        assert audit.decodedKey.TransactionAuditKey.transactionalId == newer_specs.TRANSACTIONAL_ID
        assert (audit.decodedValue.TransactionAuditValue.action, audit.isNewerVersion) == (
            "fenced",
            False,
        )


LOCAL_CLUSTER = """
import importlib.util, os, sys
# Only what the clean virtualenv installed: no checkout, no generator.
print("GENERATOR", importlib.util.find_spec("jinja2") is not None)
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local-cluster[2,1,1024]")
         .config("spark.ui.enabled", "false").config("spark.executor.memory", "1g").getOrCreate())
import spark_udfs
from spark_udfs.session import ship_codec_package, ship_package
ship_package(spark)
ship_codec_package(spark, "demo_codecs")
good, bad = bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2])
df = spark.createDataFrame([(0, good), (1, bad), (2, good)], "offset long, value binary")
df = df.repartition(2)
decode = spark_udfs.for_package("demo_codecs").decode_tagged_demo
loose = df.select("offset", decode("value", version=2, mode="PERMISSIVE").alias("d"))
print("PERMISSIVE", sorted((r.offset, r.d.decoded and r.d.decoded.note, r.d._decode_error is None)
                           for r in loose.collect()))
strict = df.filter("offset != 1").select(decode("value", version=2).alias("d"))
print("FAILFAST", sorted(r.d.owner.port for r in strict.collect()))
try:
    df.select(decode("value", version=2, position=["offset"])).collect()
    print("MALFORMED not raised")
except Exception as exc:
    print("MALFORMED", "MalformedKafkaRecordError" in str(exc) and "offset 1" in str(exc))
pids = set(spark.sparkContext.parallelize(range(4), 4).map(lambda _: os.getpid()).collect())
print("EXECUTORS", len(pids), os.getpid() in pids)
spark.stop()
"""


def _kafka_specgen_wheel(folder: Path) -> Path:
    """kafka-specgen's wheel, built from a copy of this checkout's package files."""
    checkout = folder / "kafka-specgen"
    checkout.mkdir()
    for name in CHECKOUT:
        source = ROOT / name
        if source.is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.so")
            shutil.copytree(source, checkout / name, ignore=ignore)
        else:
            shutil.copy2(source, checkout / name)
    args = ["wheel", "--no-deps", "--no-build-isolation", "--no-index", "--wheel-dir", "wheels"]
    subprocess.run(
        [sys.executable, "-m", "pip", *args, str(checkout)],
        cwd=folder,
        env=_without_pythonpath(),
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = (folder / "wheels").glob("kafka_specgen-*.whl")
    return wheel


def _without_pythonpath() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


@pytest.mark.slow
def test_user_package_in_local_cluster(user_wheel: Path, tmp_path: Path) -> None:
    """A clean virtualenv holding the user's wheel and kafka-specgen[spark]; separate executor
    JVMs and Python workers: the package reaches them by addPyFile alone."""
    wheel = _kafka_specgen_wheel(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    with open(venv / "pyvenv.cfg") as cfg:
        assert "include-system-site-packages = false" in cfg.read()
    install = [python, "-m", "pip", "install", "--quiet", "--find-links", str(wheel.parent)]
    subprocess.run(
        [*install, f"{wheel}[spark]", str(user_wheel)],
        env=_without_pythonpath(),
        check=True,
        capture_output=True,
        timeout=600,
    )
    script = tmp_path / "lc.py"
    script.write_text(LOCAL_CLUSTER)
    env = {**_without_pythonpath(), "PYSPARK_PYTHON": python}
    args = [V2.hex(), V2[:-1].hex()]
    result = subprocess.run(
        [python, str(script), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    lines = [x for x in result.stdout.splitlines() if x.split(" ")[0].isupper()]
    assert lines == [
        "GENERATOR False",
        "PERMISSIVE [(0, 'hi', True), (1, None, False), (2, 'hi', True)]",
        "FAILFAST [80, 80]",
        "MALFORMED True",
        "EXECUTORS 2 False",
    ], result.stderr[-3000:]
