"""The version rule's table of cases (``tests/version_rule.py``) through ``dump`` and the Python
API; ``tests/spark/test_version_rule_spark.py`` runs the same table through ``kafka-log``, the
column functions and the SQL functions. Headers are read in every shape Kafka clients give them.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner
from version_rule import (
    CASES_FOLDER,
    GIVEN_CASES,
    HEADER,
    PACKAGE,
    SEGMENT,
    WRITTEN,
    Case,
    body,
    expected_json,
    given_map_text,
    write_case_topics,
)

from codegen.dumps import Header, SegmentWriter
from codegen.dumps.command import dump_command
from codegen.dumps.topic_map import (
    HeaderShapeError,
    TopicMapError,
    header_values,
    load_topic_map,
    parse_topic_map,
)
from codegen.dumps.user_topics import UserTopicDecoder, decode_user_records


@pytest.fixture(scope="module")
def payments(codec_package: Any) -> ModuleType:
    module: ModuleType = codec_package(PACKAGE, [CASES_FOLDER])
    return module


@pytest.fixture(scope="module")
def logs(payments: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_case_topics(tmp_path_factory.mktemp("version-rule"), payments)


def _ids(cases: tuple[Case, ...]) -> list[str]:
    return [c.id for c in cases]


def check_outcome(
    case: Case,
    payments: ModuleType,
    *,
    error: str | None,
    value: Any,
    version: int | None,
    newer: bool,
    side: str = "value: ",
) -> None:
    """What a path gave for a written case: the case's value or its error's text."""
    if case.error is not None:
        assert (error, value) == (side + case.error, None)
    else:
        assert error is None
        assert value == expected_json(payments, case)
        assert newer is case.newer
    assert version == case.version


@pytest.fixture(scope="module")
def dumped(logs: Path) -> tuple[int, dict[tuple[str, str], dict[str, Any]], str]:
    """``dump``'s jsonl lines of the written cases by (topic, key), its exit code, stderr."""
    result = CliRunner().invoke(
        dump_command, [str(logs), "--topics", str(logs.parent / "topics.toml")]
    )
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    key = lambda r: r.get("keyText") or bytes.fromhex(r["keyHex"]).decode()  # noqa: E731
    return result.exit_code, {(r["topic"], key(r)): r for r in lines}, result.stderr


@pytest.mark.parametrize("case", WRITTEN, ids=_ids(WRITTEN))
def test_a_written_version_in_dump(
    case: Case, payments: ModuleType, dumped: tuple[int, dict[tuple[str, str], Any], str]
) -> None:
    code, lines, _ = dumped
    assert code == 1  # the error cases are damage
    line = lines[(case.topic, case.id)]
    assert line["kind"] == ("error" if case.error else "record")
    check_outcome(
        case,
        payments,
        error=line.get("error"),
        value=line.get("value"),
        version=line["valueVersion"],
        newer=line.get("isNewerVersion", False),
    )


@pytest.mark.parametrize("case", WRITTEN, ids=_ids(WRITTEN))
def test_a_written_version_in_the_python_api(case: Case, payments: ModuleType, logs: Path) -> None:
    topic_map = load_topic_map(logs.parent / "topics.toml")
    records = decode_user_records(logs / f"{case.topic}-0", topic_map, case.topic)
    (rec,) = [r for r in records if r.key_bytes == case.key]
    check_outcome(
        case,
        payments,
        error=rec.error,
        value=None if rec.value is None else rec.value.to_json(min(rec.value_version or 0, 3)),
        version=rec.value_version,
        newer=rec.newer_than_spec,
    )


def _given_topic(folder: Path, payments: ModuleType, case: Case) -> Path:
    """A ``given-0`` partition with the case's value (at the given version when the message has
    it) and the map giving that version."""
    (folder / "logs" / "given-0").mkdir(parents=True)
    with SegmentWriter(folder / "logs" / "given-0" / SEGMENT) as writer:
        writer.write_batch([(case.key, body(payments, case))])
    (folder / "topics.toml").write_text(given_map_text(case))
    return folder


@pytest.mark.parametrize("case", GIVEN_CASES, ids=_ids(GIVEN_CASES))
def test_a_given_version_in_dump_and_the_python_api(
    case: Case, payments: ModuleType, tmp_path: Path
) -> None:
    folder = _given_topic(tmp_path, payments, case)
    result = CliRunner().invoke(
        dump_command, [str(folder / "logs"), "--topics", str(folder / "topics.toml")]
    )
    where = f'{folder / "topics.toml"}: topics."given".value: '
    if case.error is not None:  # the map is refused when it is loaded: a usage error
        assert result.exit_code == 2
        assert where + case.error in " ".join(result.stderr.split())
        with pytest.raises(TopicMapError) as info:
            load_topic_map(folder / "topics.toml")
        assert str(info.value) == where + case.error
        return
    assert result.exit_code == 0, result.stderr
    (line,) = [json.loads(line) for line in result.stdout.splitlines()]
    check_outcome(
        case,
        payments,
        error=None,
        value=line["value"],
        version=line["valueVersion"],
        newer=line.get("isNewerVersion", False),
    )
    (rec,) = decode_user_records(
        folder / "logs" / "given-0", load_topic_map(folder / "topics.toml"), "given"
    )
    assert rec.value is not None and rec.value_version == case.version
    assert rec.value.to_json(rec.value_version) == line["value"]


# --------------------------------------------------------------------------- headers' shapes


def test_headers_in_every_client_shape(payments: ModuleType) -> None:
    """kafka-python's ConsumerRecord and confluent-kafka's ``headers()`` (``(str, bytes)``
    tuples, None without headers), ``(bytes, bytes)`` pairs, mappings, Arrow and Spark rows and
    the project's Header give the same record; a missing header is missing, a present one is
    found whatever the shape."""
    with warnings.catch_warnings():  # kafka-python loads its schemas with a deprecated API
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.consumer.fetcher import ConsumerRecord

    topic_map = parse_topic_map(
        {"audit": {"value": {"message": "PaymentValue", "header": HEADER}}}, PACKAGE
    )
    entry = topic_map.entry_for("audit")
    assert entry is not None
    decoder = UserTopicDecoder(entry, PACKAGE)
    value = payments.MESSAGES["PaymentValue"](amount=3, currency="EUR", lines=[]).encode(2)
    client = ConsumerRecord(
        "audit",
        0,
        0,
        42,
        1_700_000_000_000,
        0,
        b"k",
        value,
        [(HEADER, b"2")],
        None,
        1,
        len(value),
        20,
    )
    shapes: dict[str, object] = {
        "kafka-python": client.headers,
        "confluent-kafka": [("other", b"x"), (HEADER, b"2")],
        "bytes keys": [(b"other", b"x"), (b"schema-version", b"2")],
        "lists": [[HEADER, b"2"]],
        "str value": [(HEADER, "2")],
        "mapping": {HEADER: b"2"},
        "bytes mapping": {HEADER.encode(): b"2"},
        "rows": [{"key": HEADER, "value": b"2"}],
        "Header": [Header(HEADER.encode(), b"2")],
        "tuple of Header": (Header(b"other", None), Header(HEADER.encode(), b"2")),
    }
    reference = decoder.decode(client.key, client.value, client.headers, client.offset)
    assert reference.kind == "record" and reference.value_version == 2
    for shape, given in shapes.items():
        rec = decoder.decode(b"k", value, given, 42)
        assert (rec.kind, rec.value, rec.value_version, rec.error) == (
            "record",
            reference.value,
            2,
            None,
        ), shape
    for missing in (None, [], {}, [("other", b"2")], [(HEADER.upper(), b"2")]):
        rec = decoder.decode(b"k", value, missing, 42)
        assert rec.error == "value: no header 'schema-version' naming the version", missing
    assert header_values([(HEADER, b"1"), ("x", b"0"), (HEADER, b"2")], HEADER) == [b"1", b"2"]
    for wrong in ([42], [(HEADER,)], b"schema-version=2", [(HEADER, 2)]):
        with pytest.raises(HeaderShapeError):
            decoder.decode(b"k", value, wrong, 42)
