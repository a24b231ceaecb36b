"""The version rule's table of cases (``tests/version_rule.py``) through Spark: ``kafka-log``'s
topic map, the column functions (``version="prefix"`` and a given version) and the SQL functions
(a given version). ``tests/test_version_rule.py`` runs the same table through ``dump`` and the
Python API; every path gives each case's value or the same error text."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from version_rule import (
    CASES_FOLDER,
    GIVEN_CASES,
    PACKAGE,
    PREFIX,
    SEGMENT,
    WRITTEN,
    Case,
    body,
    expected_json,
    given_map_text,
    write_case_topics,
)

import spark_udfs
from codegen.dumps import SegmentWriter
from spark_udfs.session import kafka_log_reader, ship_codec_package


@pytest.fixture(scope="module")
def payments(spark: Any, codec_package: Any) -> ModuleType:
    module: ModuleType = codec_package(PACKAGE, [CASES_FOLDER])
    ship_codec_package(spark, PACKAGE)
    return module


@pytest.fixture(scope="module")
def logs(payments: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_case_topics(tmp_path_factory.mktemp("version-rule"), payments)


def _plain(value: Any) -> Any:
    """A Spark struct as to_json's form: Spark's own columns (``_unknown_tagged_fields``)
    left out, bytearrays as bytes."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if not k.startswith("_")}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _check(case: Case, payments: ModuleType, error: Any, struct: Any, side: str = "") -> None:
    if case.error is not None:
        assert (error, struct) == (side + case.error, None), case.id
        return
    assert error is None, case.id
    expected = expected_json(payments, case)
    got = _plain(struct.asDict(recursive=True))
    assert {k: got[k] for k in expected} == expected, case.id


@pytest.mark.spark_connect
def test_written_versions_in_kafka_log_and_the_column_function(
    spark: Any, payments: ModuleType, logs: Path
) -> None:
    topics = str(logs.parent / "topics.toml")
    decoded = (
        spark.read.format("kafka-log").options(topics=topics, mode="PERMISSIVE").load(str(logs))
    )
    rows = {(r.topic, bytes(r.key).decode()): r for r in decoded.collect()}
    raw = spark.read.format("kafka-log").load(str(logs))
    bound = spark_udfs.for_package(PACKAGE)
    by_function: dict[tuple[str, str], Any] = {}
    for message, topic in (("PaymentValue", "payments"), ("LedgerEntry", "ledger")):
        column = bound.decode_message(message, "value", version="prefix", mode="PERMISSIVE")
        for r in raw.filter(f"topic = '{topic}'").select("key", column.alias("d")).collect():
            by_function[(topic, bytes(r.key).decode())] = r.d
    for case in WRITTEN:
        row = rows[(case.topic, case.id)]
        struct = None if row.decodedValue is None else row.decodedValue[case.message]
        _check(case, payments, row._decode_error, struct, side="value: ")
        assert row.valueVersion == case.version, case.id
        assert row.isNewerVersion is (case.newer and case.error is None), case.id
        if case.framing == PREFIX:  # the column function reads a prefix too (no side)
            d = by_function[(case.topic, case.id)]
            _check(case, payments, d._decode_error, d.decoded)


@pytest.mark.spark_connect
def test_given_versions_in_kafka_log_the_column_and_the_sql_functions(
    spark: Any, payments: ModuleType, tmp_path: Path
) -> None:
    bound = spark_udfs.for_package(PACKAGE)
    bound.register_sql_functions(spark, mode="PERMISSIVE")
    rows = [(c.id, c.message, c.version, body(payments, c)) for c in GIVEN_CASES]
    frame = spark.createDataFrame(rows, "id string, message string, version int, value binary")
    frame.createOrReplaceTempView("given_versions")
    by_sql = {
        r.id: r.d
        for function, message in (
            ("decode_payment_value", "PaymentValue"),
            ("decode_ledger_entry", "LedgerEntry"),
        )
        for r in spark.sql(
            f"SELECT id, {function}(value, version) AS d FROM given_versions "
            f"WHERE message = '{message}'"
        ).collect()
    }
    for case in GIVEN_CASES:
        d = by_sql[case.id]
        _check(case, payments, d._decode_error, d.decoded)  # SQL: a row's error
        function = f"decode_{'payment_value' if case.message == 'PaymentValue' else 'ledger_entry'}"
        if case.error is not None:  # the column function: refused when the column is built
            with pytest.raises(ValueError) as info:
                bound.decode_message(case.message, "value", version=case.version)
            assert str(info.value) == f"{function}: {case.error}"
            folder = tmp_path / case.id
            folder.mkdir()
            (folder / "topics.toml").write_text(given_map_text(case))
            # kafka-log: load() reads the map (over Spark Connect too: kafka_log_reader resolves)
            with pytest.raises(Exception) as failed:
                kafka_log_reader(spark).option("topics", str(folder / "topics.toml")).load(
                    str(folder)
                )
            assert f'topics."given".value: {case.error}' in str(failed.value)
        else:
            column = bound.decode_message(case.message, "value", version=case.version)
            (row,) = frame.filter(f"id = '{case.id}'").select(column.alias("v")).collect()
            _check(case, payments, None, row.v)
    with pytest.raises(Exception) as info:  # FAILFAST raises the same text
        spark.sql(
            "SELECT decode_payment_value(value, 9, 'FAILFAST') FROM given_versions "
            "WHERE id = 'given-far-newer'"
        ).collect()
    assert "MALFORMED_KAFKA_RECORD" in str(info.value)
    assert "PaymentValue has no version 9 (valid versions: 0-3)" in str(info.value)


@pytest.mark.spark_connect
def test_flat_keeps_the_key_and_the_coordinates_of_a_user_topic(
    spark: Any, payments: ModuleType, tmp_path: Path
) -> None:
    """A user's key and value messages (``PaymentKey``, ``PaymentValue``): ``flat`` gives the
    key's fields, the value's, then topic, partition, offset and timestamp; a tombstone keeps
    its key, with null value fields."""
    key_cls, value_cls = payments.MESSAGES["PaymentKey"], payments.MESSAGES["PaymentValue"]
    value = value_cls(amount=7, currency="USD", lines=[], reference=None)
    (tmp_path / "orders-3").mkdir()
    with SegmentWriter(tmp_path / "orders-3" / SEGMENT) as writer:
        writer.write_batch(
            [
                (key_cls(account="a", sequence=1).encode(0), b"\x00\x02" + value.encode(2)),
                (key_cls(account="a", sequence=2).encode(0), None),
            ],
            timestamp=1_700_000_000_000,
        )
    topics = (
        '{"package": "payment_codecs", "topics": {"orders": {'
        '"key": {"message": "PaymentKey", "version": 0}, '
        '"value": {"message": "PaymentValue", "version": "prefix"}}}}'
    )
    df = spark.read.format("kafka-log").option("topics", topics).load(str(tmp_path))
    flat = spark_udfs.flat(df, "PaymentValue")
    assert flat.columns == [
        "account",
        "sequence",
        "amount",
        "currency",
        "lines",
        "reference",
        "topic",
        "partition",
        "offset",
        "timestamp",
    ]
    rows = [r.asDict() for r in flat.orderBy("offset").collect()]
    assert [(r["account"], r["sequence"], r["amount"], r["currency"]) for r in rows] == [
        ("a", 1, 7, "USD"),
        ("a", 2, None, None),
    ]
    assert {(r["topic"], r["partition"], r["timestamp"].year) for r in rows} == {
        ("orders", 3, 2023)
    }
