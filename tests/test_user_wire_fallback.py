"""A user topic's batch printed from its record bytes (``codegen/native/user_wire.h``) when
some of its records are ones those printers leave (a float64, a version the spec never had):
those records alone are the reference's, in jsonl, dump-log and
table, and the output is the pure backend's byte for byte."""

from __future__ import annotations

import struct
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

from codegen.dumps import NewRecord, SegmentWriter
from codegen.dumps.command import dump_command
from codegen.dumps.dumplog_json import _RecordTexts
from codegen.dumps.json_text import jsontext_module
from codegen.dumps.jsonl import JsonlLines
from codegen.dumps.model import SegmentError
from codegen.dumps.table import user_cells_printer
from codegen.dumps.topic_map import parse_topic_map
from codegen.dumps.user_topics import BatchBytes, UserTopicDecoder
from codegen.runtime import backends

CASES = Path(__file__).resolve().parent / "cases" / "readings"
PACKAGE = "reading_codecs"
NATIVE = jsontext_module() is not None and backends.requested() != backends.PURE

pytestmark = [
    pytest.mark.native_only,
    pytest.mark.skipif(not NATIVE, reason="the native printer is not built or not asked for"),
]

LEFT = [2, 5]
"""The records of the batch the printers of record bytes leave (see _records)."""
LEFT_AS_TEXT = [*LEFT, 7]
"""And those dump-log and table leave: a raw key that is not UTF-8 (their text is the
reference's, with replacement characters)."""


@pytest.fixture(scope="module")
def readings(codec_package: Any, records_module: ModuleType) -> ModuleType:
    module: ModuleType = codec_package(PACKAGE, [CASES])
    return module


def _records(readings: ModuleType) -> list[NewRecord]:
    value = readings.MESSAGES["ReadingValue"]
    extra = sys.modules[value.__module__].Extra

    def at(version: int, message: Any) -> bytes:
        return struct.pack(">h", version) + message.encode(version)

    return [
        NewRecord(b"k0", at(0, value(sensor="a"))),
        NewRecord(b"k1", at(0, value(sensor="b\u00e9"))),
        NewRecord(b"k2", at(1, value(sensor="c", level=1.5))),  # a float64
        NewRecord(b"k3", at(0, value(sensor="d", extra=extra(note="n")))),  # printed from bytes
        NewRecord(None, at(0, value(sensor="e"))),
        NewRecord(b"k5", struct.pack(">h", 9) + b"\x02x\x00"),  # a version never specified
        NewRecord(b"k6", None),
        NewRecord(b"\xff", at(0, value(sensor="f"))),
    ]


def _segment(readings: ModuleType, folder: Path) -> tuple[Path, Path]:
    partition = folder / "readings-0"
    partition.mkdir()
    records = _records(readings)
    with SegmentWriter(partition / "00000000000000000000.log") as writer:
        writer.write_batch(records[:2], timestamp=1_700_000_000_000)
        writer.write_batch(records, timestamp=1_700_000_000_100)
        writer.write_batch(records[:2], timestamp=1_700_000_000_200)
    topics = folder / "topics.toml"
    topics.write_text(
        f'package = "{PACKAGE}"\n[topics.readings]\n'
        'value = { message = "ReadingValue", version = "prefix" }\n'
    )
    return partition, topics


def _decoder() -> UserTopicDecoder:
    topic_map = parse_topic_map(
        {"readings": {"value": {"message": "ReadingValue", "version": "prefix"}}}, PACKAGE
    )
    entry = topic_map.entry_for("readings")
    assert entry is not None
    return UserTopicDecoder(entry, PACKAGE)


def _mixed_batch(decoder: UserTopicDecoder, partition: Path) -> BatchBytes:
    items = [i for i in decoder.byte_batches(partition) if not isinstance(i, SegmentError)]
    batch = items[1].records
    assert isinstance(batch, BatchBytes) and batch.batch.record_count == 8
    return batch


def test_the_printers_leave_those_records_alone(readings: ModuleType, tmp_path: Path) -> None:
    """Each printer asks for the reference's text of the left records only, and prints the
    others itself around it; with no fallback it leaves the whole batch."""
    partition, _ = _segment(readings, tmp_path)
    decoder = _decoder()
    assert decoder.native
    batch = _mixed_batch(decoder, partition)
    module = jsontext_module()
    assert module is not None

    asked: list[int] = []

    def mark(i: int) -> bytes:
        asked.append(i)
        return b"<%d>\n" % i

    lines = JsonlLines("readings", {"topic": "readings"}, user_topic=True, decoder=decoder)
    assert lines._bytes_printer is not None
    printed = lines._bytes_printer(batch, b"}\n", mark)
    assert printed is not None and asked == LEFT
    text = printed[0].decode().splitlines()
    assert [line for line in text if line.startswith("<")] == [f"<{i}>" for i in LEFT]
    assert [i for i, line in enumerate(text) if line.startswith("<")] == LEFT
    assert lines._bytes_printer(batch, b"}\n", lambda i: None) is None

    asked.clear()
    texts = _RecordTexts("readings", PACKAGE, decoder)
    assert texts._user_lines is not None
    got = texts._user_lines(batch, "CreateTime", lambda i: asked.append(i) or f" <{i}>")
    assert got is not None and asked == LEFT_AS_TEXT
    assert [line.endswith(f"<{i}>") for i, line in enumerate(got[0].split("\n"))] == [
        i in LEFT_AS_TEXT for i in range(8)
    ]

    cells = user_cells_printer(decoder)
    assert cells is not None
    made = cells(batch)
    assert made is not None
    rows = made[0].rows
    assert [i for i, row in enumerate(rows) if not isinstance(row, tuple)] == LEFT_AS_TEXT
    assert [r.offset for r in made[0].holes] == [batch.batch.base_offset + i for i in LEFT_AS_TEXT]


@pytest.mark.parametrize("fmt", ["jsonl", "dump-log", "table"])
def test_dump_is_the_same_on_both_backends(readings: ModuleType, tmp_path: Path, fmt: str) -> None:
    """The same bytes, summary (the error of the unspecified version counted once) and exit
    code as the pure backend's."""
    partition, topics = _segment(readings, tmp_path)

    def dump(backend: str) -> tuple[bytes, str, int]:
        result = CliRunner().invoke(
            dump_command,
            [str(partition), "--format", fmt, "--topics", str(topics)],
            env={"SPECGEN_BACKEND": backend},
        )
        return result.stdout_bytes, result.stderr, result.exit_code

    native = dump("native")
    assert native == dump("pure")
    assert "1 record not decoded" in native[1] and native[2] != 0
    assert b"1.5" in native[0] and b'"note"' in native[0].replace(b"Note", b"note")
