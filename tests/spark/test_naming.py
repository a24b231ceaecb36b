"""docs/naming.md against the real outputs: every name its table gives for the ``dump`` jsonl
and table output, the Python API and the Spark DataFrames is one those surfaces have, every
name they have is in the table, and a concept's names follow the scheme (the same camelCase
name in jsonl and Spark, its snake_case in Python) except where the table marks † ."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from codegen.dumps import SegmentWriter
from codegen.dumps.command import dump_command
from codegen.dumps.decoded import DecodedRecord, MetadataFrame
from codegen.dumps.model import Record, RecordBatch, SegmentError
from codegen.dumps.views.compacted import CommittedOffset, GroupMember, GroupState
from codegen.naming import json_name, snake_case
from codegen.slotted import Slotted
from generated import MESSAGES
from generated._spark_schemas import SCHEMAS
from generated.offset_commit_key import OffsetCommitKey
from generated.offset_commit_value import OffsetCommitValue
from spark_udfs import compacted

from .conftest import REAL_DATA

pytestmark = pytest.mark.spark

DOC = Path(__file__).resolve().parents[2] / "docs" / "naming.md"
AIBULB = REAL_DATA / "aibulb"  # metadata, __consumer_offsets with groups, an ordinary topic
SURFACES = ("jsonl", "table", "python", "spark")
CLASSES: dict[str, type] = {
    c.__name__: c
    for c in (
        DecodedRecord,
        MetadataFrame,
        Record,
        RecordBatch,
        SegmentError,
        CommittedOffset,
        GroupState,
        GroupMember,
    )
}
# Rows about every message rather than one name; checked by test_message_fields.
MESSAGE_ROWS = ("a message field", "a message (any spec)", "tagged fields the spec")
DAGGER = "†"


def doc_rows() -> list[tuple[str, dict[str, tuple[list[str], bool]]]]:
    """(concept, surface -> (names, marked †)) per row of the naming table."""
    lines = DOC.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| concept |"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        concept, *cells = (c.strip() for c in line.strip("|").split(" | "))
        assert len(cells) == len(SURFACES), line
        rows.append(
            (
                concept,
                {
                    s: (re.findall(r"`([^`]+)`", c), DAGGER in c)
                    for s, c in zip(SURFACES, cells, strict=True)
                },
            )
        )
    return rows


ROWS = [(c, cells) for c, cells in doc_rows() if not c.startswith(MESSAGE_ROWS)]


def _names(surface: str) -> set[str]:
    return {n for _, cells in ROWS for n in cells[surface][0]}


def _run(*args: object) -> str:
    res = CliRunner().invoke(dump_command, [str(a) for a in args])
    assert res.exit_code in (0, 1), res.output
    return res.stdout


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``__consumer_offsets`` segment with every kind of line: tombstone, unknown type, a
    value that does not decode, one newer than the specs, one with bytes left over, and a
    torn tail."""
    root = tmp_path_factory.mktemp("naming")
    (root / "orders-0").mkdir()
    with SegmentWriter(root / "orders-0" / "00000000000000000000.log") as w:
        w.write_batch([(b"k", b"v")])  # an ordinary topic's record with a text key
    folder = root / "__consumer_offsets-3"
    folder.mkdir()
    key = b"\x00\x01" + OffsetCommitKey(group="g", topic="t", partition=0).encode(0)
    v3 = OffsetCommitValue(offset=5, metadata="", commit_timestamp=1).encode(3)
    v4 = OffsetCommitValue(offset=6, metadata="", commit_timestamp=2).encode(4)
    path = folder / "00000000000000000000.log"
    with SegmentWriter(path) as w:
        w.write_batch(
            [
                (key, b"\x00\x03" + v3),
                (key, None),
                (b"\x00\x63\x00\x00", b"\x00\x00"),
                (key, b"\x00\x03\x00"),
                (key, b"\x00\x05" + v4),
                (key, b"\x00\x03" + v3 + b"extra"),
            ]
        )
    path.write_bytes(path.read_bytes() + b"\x00" * 8 + b"\x00\x00\x10\x00torn")
    return root


def _json_keys(objs: Iterator[Any]) -> set[str]:
    keys: set[str] = set()
    for obj in objs:
        keys |= set(obj)
        for member in obj.get("members", []) if isinstance(obj.get("members"), list) else []:
            keys |= set(member)
    return keys


@pytest.fixture(scope="module")
def jsonl_keys(damaged: Path) -> set[str]:
    """Keys of the jsonl lines of records, errors and compacted views (not of Kafka's JSON)."""
    text = _run(AIBULB, damaged, "-q") + _run(AIBULB / "__consumer_offsets-0", "--compacted")
    return _json_keys(json.loads(line) for line in text.splitlines())


@pytest.fixture(scope="module")
def table_headings(damaged: Path) -> set[str]:
    text = _run(AIBULB, damaged, "--format", "table", "-q")
    text += _run(AIBULB / "__consumer_offsets-0", "--compacted", "--format", "table")
    lines = text.splitlines()
    heads = [lines[0]] + [
        lines[i + 1]
        for i, line in enumerate(lines)
        if line.strip() in ("committed offsets", "groups")
    ]
    return {h for line in heads for h in re.split(r"\s{2,}", line.strip())}


@pytest.fixture(scope="module")
def spark_columns(spark: Any, damaged: Path) -> set[str]:
    """Top-level columns of the DataFrames the table covers."""
    from spark_udfs import functions

    reader = spark.read.format("kafka-log")
    decoded = reader.option("decode", "true").option("mode", "PERMISSIVE").load(str(AIBULB))
    co = functions.decode_consumer_offsets(reader.load(str(AIBULB / "__consumer_offsets-0")))
    frames = [decoded, compacted.committed_offsets(co), compacted.group_states(co)]
    return {c for df in frames for c in df.columns}


def test_the_table_covers_the_jsonl_keys(jsonl_keys: set[str]) -> None:
    documented = _names("jsonl")
    assert documented - jsonl_keys == set(), "in docs/naming.md, not in the jsonl output"
    assert jsonl_keys - documented == set(), "in the jsonl output, not in docs/naming.md"


def test_the_table_headings_are_documented(table_headings: set[str]) -> None:
    documented = _names("table")
    assert documented - table_headings == set(), "in docs/naming.md, not in the table output"
    assert table_headings - documented == set(), "in the table output, not in docs/naming.md"


def test_the_python_names_exist() -> None:
    documented = _names("python")
    for name in documented:
        cls, _, attr = name.partition(".")
        assert hasattr(CLASSES[cls], attr), name
    for cls in (DecodedRecord, CommittedOffset, GroupState, GroupMember):
        names = cls._fields if issubclass(cls, Slotted) else [f.name for f in fields(cls)]
        missing = {f"{cls.__name__}.{n}" for n in names} - documented
        assert missing == set(), "fields missing from docs/naming.md"


def test_the_table_covers_the_spark_columns(spark_columns: set[str]) -> None:
    documented = _names("spark")
    assert documented - spark_columns == set(), "in docs/naming.md, not in the DataFrames"
    assert spark_columns - documented == set(), "in the DataFrames, not in docs/naming.md"


def test_each_concept_has_one_name() -> None:
    for concept, cells in ROWS:
        (jsonl, jsonl_marked), (spark, spark_marked) = cells["jsonl"], cells["spark"]
        if jsonl and spark and not (jsonl_marked or spark_marked):
            assert jsonl == spark, concept
        python, python_marked = cells["python"]
        camel = [*(() if jsonl_marked else jsonl), *(() if spark_marked else spark)]
        if python and camel and not python_marked:
            attrs = {p.partition(".")[2] for p in python}
            assert attrs & {snake_case(n) for n in camel}, concept


def test_message_fields_have_kafkas_json_names() -> None:
    """Spark struct fields are the keys Kafka's JSON (``to_json``) writes, and each holds the
    Python attribute that is their snake_case."""

    def walk(schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
        for field in schema["fields"]:
            yield field
            typ = field["type"]
            while isinstance(typ, dict) and typ["type"] == "array":
                typ = typ["elementType"]
            if isinstance(typ, dict) and typ["type"] == "struct":
                yield from walk(typ)

    for name, cls in MESSAGES.items():
        spark_fields = {f["name"] for f in SCHEMAS[name]["fields"]} - {"_unknown_tagged_fields"}
        obj = cls()
        written: set[str] = set()
        for version in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1):
            written |= set(obj.to_json(version))
        assert written <= spark_fields, name
        for field in walk(SCHEMAS[name]):
            attr = field["metadata"]["attr"]
            if field["name"] == "_unknown_tagged_fields":
                assert attr == "unknown_tags"
            else:
                assert field["name"] == json_name(field["name"]), (name, field["name"])
                assert attr.rstrip("_") == snake_case(field["name"]), (name, field["name"])
