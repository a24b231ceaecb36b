"""A user's own topics decoded by ``python -m codegen dump`` and the Python API, as a topic map
says (``codegen.dumps.topic_map``): the TaggedDemo package built by the build hook, a broker
folder of its records in three framings (``tests/user_topics_data.py``: several versions, a
record cut short, a tombstone, a newer version, a missing header) next to a real
``__consumer_offsets`` partition.

- The map is validated when it is loaded: an unknown message, a version outside the message's
  range, two patterns matching one topic, an unknown setting: errors naming the entry.
- jsonl, table, dump-log and ``--compacted`` give the codec's values and the same errors, with
  topic, partition and offset, and exit 1; the internal topic's lines are those of a dump of
  its folder alone.
- ``tests/spark/test_user_package.py`` decodes the same folder in Spark to the same values.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner
from user_topics_data import INTERNAL, PACKAGE, V0, V2, Written, write_topics

from codegen.dumps.command import dump_command
from codegen.dumps.topic_map import (
    TopicMapError,
    find_topic_map,
    load_topic_map,
    parse_topic_map,
    topic_map_option,
)
from codegen.dumps.user_topics import decode_user_records


def _run(*args: object) -> tuple[int, str, str]:
    res = CliRunner().invoke(dump_command, [str(a) for a in args])
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, res.stderr


@pytest.fixture(scope="module")
def written(user_codecs: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Written:
    return write_topics(tmp_path_factory.mktemp("user-topics"), user_codecs)


# ------------------------------------------------------------------------------ the map


def test_map_entries_resolve_by_name_then_pattern() -> None:
    topic_map = parse_topic_map(
        {
            "orders": {"value": {"message": "OffsetCommitValue", "version": 3}},
            "orders-*": {"value": {"message": "OffsetCommitValue", "version": "prefix"}},
            "audit": {"key": {"message": "OffsetCommitKey", "header": "v"}},
        }
    )
    assert topic_map.package == "generated"
    orders = topic_map.entry_for("orders")
    assert orders is not None and orders.value is not None and orders.value.version == 3
    eu = topic_map.entry_for("orders-eu")
    assert eu is not None and eu.value is not None and eu.value.prefix
    audit = topic_map.entry_for("audit")
    assert audit is not None and audit.value is None and audit.key is not None
    assert audit.key.header == "v" and audit.name == "OffsetCommitKey"
    assert topic_map.entry_for("payments") is None
    assert topic_map_option(topic_map.to_json()).entries == topic_map.entries


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"value": {"message": "NoSuchMessage", "version": 0}},
            "topic map: topics.\"t\".value: no message named 'NoSuchMessage' in the shipped codecs "
            "('generated'), where a map that names no package looks: name the package your "
            'specs were generated into, package = "myproject.codecs" at the top of the map file',
        ),
        (
            {"value": {"message": "OffsetCommitValue", "version": 9}},
            'topic map: topics."t".value: OffsetCommitValue has no version 9 (valid versions: 0-4)',
        ),
        (
            {"value": {"message": "OffsetCommitValue"}},
            'topic map: topics."t".value: give exactly one of version = N',
        ),
        (
            {"value": {"message": "OffsetCommitValue", "version": 1, "header": "v"}},
            'topic map: topics."t".value: give exactly one of version = N',
        ),
        (
            {"value": {"message": "OffsetCommitValue", "version": "2"}},
            'topic map: topics."t".value: version must be a number or "prefix", got \'2\'',
        ),
        (
            {"valeu": {"message": "OffsetCommitValue", "version": 1}},
            'topic map: topics."t": unknown setting(s) valeu; an entry has key and/or value',
        ),
        ({}, 'topic map: topics."t": give a key or a value side (or both)'),
    ],
)
def test_map_errors_name_the_entry(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(TopicMapError) as info:
        parse_topic_map({"t": entry})
    assert str(info.value).startswith(message), str(info.value)


def test_two_patterns_matching_a_topic_is_an_error() -> None:
    side = {"value": {"message": "OffsetCommitValue", "version": 1}}
    topic_map = parse_topic_map({"sensors-*": side, "*-eu": side, "sensors-eu-1": side})
    assert topic_map.entry_for("sensors-eu-1") is not None  # its own name wins
    with pytest.raises(TopicMapError) as info:
        topic_map.entry_for("sensors-eu")
    assert str(info.value) == (
        'topic map: topic \'sensors-eu\' matches two entries, "sensors-*" and "*-eu": add an '
        "entry for the topic itself, or narrow a pattern"
    )


def test_map_from_pyproject_and_unknown_package(tmp_path: Path) -> None:
    project = tmp_path / "pyproject.toml"
    project.write_text('[project]\nname = "x"\n')
    assert find_topic_map(tmp_path) is None
    project.write_text(
        '[project]\nname = "x"\n\n[tool.kafka-specgen.topics]\n'
        '"t" = { value = { message = "OffsetCommitValue", version = 4 } }\n'
    )
    found = find_topic_map(tmp_path)
    assert found is not None and found.source == str(project)
    entry = found.entry_for("t")
    assert entry is not None and entry.value is not None and entry.value.version == 4
    other = tmp_path / "topics.toml"
    other.write_text(
        'package = "no_such_codecs"\n[topics]\n"t" = { value = { message = "M", version = 0 } }\n'
    )
    with pytest.raises(TopicMapError) as info:
        load_topic_map(other)
    assert str(info.value).startswith(f"{other}: cannot import the codec package 'no_such_codecs'")


def test_dump_reports_a_bad_map_as_a_usage_error(tmp_path: Path, written: Written) -> None:
    bad = tmp_path / "topics.toml"
    bad.write_text(
        f'package = "{PACKAGE}"\n[topics]\n"sensors" = {{ value = {{ message = "TaggedDemo", version = 3 }} }}\n'
    )
    code, _, err = _run(written.folder / "sensors-0", "--topics", bad)
    assert code == 2
    assert 'topics."sensors".value: TaggedDemo has no version 3 (valid versions: 0-2)' in err


# ------------------------------------------------------------------------------ dump


def _lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def _check_values(rows: list[dict[str, Any]], written: Written, module: ModuleType) -> None:
    expected = written.expected(module)
    got: dict[tuple[str, int], Any] = {}
    for row in rows:
        key = (row["topic"], row["offset"])
        got[key] = row["error"] if row["kind"] == "error" else row.get("value")
    assert set(got) == set(expected)
    for key, value in expected.items():
        if isinstance(value, str):
            assert got[key].startswith(value), (key, got[key])
        else:
            assert got[key] == value, key


def test_dump_jsonl_decodes_user_topics(written: Written, user_codecs: ModuleType) -> None:
    code, out, err = _run(written.folder, "--topics", written.topic_map)
    assert code == 1, err  # the record cut short and the one without its header
    rows = _lines(out)
    user = [r for r in rows if r["topic"] != "__consumer_offsets"]
    _check_values(user, written, user_codecs)
    by_offset = {(r["topic"], r["offset"]): r for r in user}
    s0 = by_offset[("sensors", 0)]
    assert (s0["kind"], s0["recordName"], s0["valueVersion"], s0["keyText"]) == (
        "record",
        "TaggedDemo",
        0,
        "s1",
    )
    assert s0["partition"] == 0 and s0["file"].endswith("sensors-0/00000000000000000000.log")
    corrupt = by_offset[("sensors", 3)]
    assert corrupt["kind"] == "error" and corrupt["partition"] == 0
    assert corrupt["error"].startswith("value: TaggedDemo v2, ") and corrupt["valueVersion"] == 2
    assert corrupt["batchPosition"] > 0 and corrupt["valueHex"].startswith("0002")
    tombstone = by_offset[("sensors", 4)]
    assert (tombstone["kind"], tombstone["value"], tombstone["valueVersion"]) == (
        "tombstone",
        None,
        None,
    )
    newer = by_offset[("sensors", 5)]
    assert (newer["valueVersion"], newer["isNewerVersion"]) == (9, True)
    reading = by_offset[("readings", 0)]
    assert reading["key"] == user_codecs.MESSAGES["TaggedDemo"].decode(V0, 0).to_json(0)
    assert reading["keyVersion"] == 0
    assert "record error: " in err and "offset 3: value: TaggedDemo v2" in err
    assert (
        err.strip()
        .splitlines()[-1]
        .endswith(
            "2 errors (0 segment errors, 2 records not decoded), 0 unknown records, "
            "1 newer than our specs"
        )
    )
    # the internal topic: as a dump of its folder alone
    _, alone, _ = _run(INTERNAL)
    internal = [r for r in rows if r["topic"] == "__consumer_offsets"]
    assert [{**r, "file": ""} for r in internal] == [{**r, "file": ""} for r in _lines(alone)]


def test_dump_reads_the_map_of_the_current_folders_pyproject(
    written: Written, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    table = written.topic_map.read_text().replace("[topics]", "[tool.kafka-specgen.topics]")
    table = table.replace("package =", "[tool.kafka-specgen]\npackage =", 1)
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n\n' + table)
    here = os.getcwd()
    os.chdir(project)
    try:
        res = CliRunner().invoke(dump_command, [str(written.folder / "readings-0")])
    finally:
        os.chdir(here)
    assert res.exit_code == 0, res.stderr
    (row,) = _lines(res.stdout)
    assert row["recordName"] == "TaggedDemo" and row["value"]["note"] == "hi"


def test_dump_table_shows_values_and_errors(written: Written) -> None:
    code, out, _ = _run(
        written.folder / "sensors-0", "--topics", written.topic_map, "--format", "table"
    )
    assert code == 1
    lines = out.splitlines()
    first = next(line for line in lines if line.startswith(" sensors-0"))
    assert " 0 " in first and " s1 " in first and '{"id":7,"name":"ab","weights":[1,-1]' in first
    corrupt = next(line for line in lines if " 3 " in line and "error" in line)
    assert "error: value: TaggedDemo v2" in corrupt
    assert any(" 4 " in line and "<tombstone>" in line for line in lines)


def test_dump_log_prints_the_decoded_json_as_payload(written: Written) -> None:
    code, out, _ = _run(
        written.folder / "sensors-0", "--topics", written.topic_map, "--format", "dump-log"
    )
    assert code == 1
    records = [line for line in out.splitlines() if line.startswith("| offset")]
    assert len(records) == 6
    assert records[0].endswith(
        ' key: s1 payload: {"id":7,"name":"ab","weights":[1,-1],"members":[{"host":"h","port":9092}],"blob":"AP8="}'
    )
    assert " key: s3 payload: Error at offset 3, skipping. value: TaggedDemo v2" in records[3]
    assert records[4].endswith("key: s2")  # a tombstone: no payload, as Kafka prints it


def test_dump_compacted_keeps_the_last_value_per_key(
    written: Written, user_codecs: ModuleType
) -> None:
    code, out, _ = _run(written.folder / "sensors-0", "--topics", written.topic_map, "--compacted")
    assert code == 1  # the errors are still reported
    rows = _lines(out)
    errors = [r for r in rows if r["kind"] == "error"]
    assert [e["offset"] for e in errors] == [3]
    latest = [(r["keyText"], r["offset"]) for r in rows if r["kind"] == "record"]
    assert latest == [("s1", 2), ("s4", 5)]  # s2 deleted by its tombstone, s3 never decoded
    code, out, _ = _run(
        written.folder / "sensors-0",
        "--topics",
        written.topic_map,
        "--compacted",
        "--format",
        "table",
    )
    assert "latest per key" in out and "errors" in out


def test_compacted_on_internal_and_user_topics_at_once_is_a_usage_error(written: Written) -> None:
    code, _, err = _run(
        written.folder / "sensors-0", INTERNAL, "--topics", written.topic_map, "--compacted"
    )
    assert code == 2 and "not both at once" in err


# ------------------------------------------------------------------------------ Python API


def test_python_api_gives_the_same_records(written: Written, user_codecs: ModuleType) -> None:
    topic_map = load_topic_map(written.topic_map)
    rows = []
    for topic in ("sensors", "audit", "readings"):
        for rec in decode_user_records(written.folder / f"{topic}-0", topic_map, topic):
            row: dict[str, Any] = {"topic": topic, "offset": rec.offset, "kind": rec.kind}
            if rec.kind == "error":
                row["error"] = rec.error
            elif rec.value is not None:
                row["value"] = rec.value.to_json(min(rec.value_version, 2))
            else:
                row["value"] = None
            rows.append(row)
    _check_values(rows, written, user_codecs)


def test_the_arrow_decode_core_never_guesses_a_version(user_codecs: ModuleType) -> None:
    pa = pytest.importorskip("pyarrow")
    from codegen.columnar.decode import decode_message_array

    with pytest.raises(ValueError) as info:
        decode_message_array(pa.array([V2]), "TaggedDemo", package=PACKAGE)
    assert str(info.value).startswith("TaggedDemo's bytes carry no version and it has versions 0-2")
    prefixed = decode_message_array(pa.array([b"\x00\x02" + V2]), "TaggedDemo", "prefix", PACKAGE)
    fixed = decode_message_array(pa.array([V2]), "TaggedDemo", 2, PACKAGE)
    assert prefixed.errors == fixed.errors == {} and prefixed.values.equals(fixed.values)


def test_dump_log_keeps_a_record_on_one_line(
    written: Written, user_codecs: ModuleType, tmp_path: Path
) -> None:
    """A raw key or payload holding line breaks or control characters is escaped in dump-log's
    text, for records that decode and for those that do not: one record, one line."""
    from codegen.dumps import SegmentWriter

    folder = tmp_path / "sensors-0"
    folder.mkdir()
    with SegmentWriter(folder / "00000000000000000000.log") as w:
        w.write_batch(
            [
                (b"line\nbreak", b"\x00\x00" + V0),  # decodes; the key is raw text
                ("cr\r\x00\u2028".encode(), b"\x00\x02" + V2[:-1]),
            ]
        )
    code, out, _ = _run(folder, "--topics", written.topic_map, "--format", "dump-log")
    assert code == 1
    records = [line for line in out.splitlines() if line.startswith("| offset")]
    assert len(records) == 2 and len(out.splitlines()) == 5  # 2 intro lines, batch, 2 records
    assert " key: line\\nbreak payload: {" in records[0]
    assert " key: cr\\r\\u0000\\u2028 payload: Error at offset 1, skipping. value: " in records[1]
