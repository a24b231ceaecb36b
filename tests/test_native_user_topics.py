"""User topics on the native path against the reference, on the version rule's cases, the
topic-map tests' topics (a key and a value at the map's versions, raw keys, tombstones, a cut
prefix, a newer version), a mixed topic with compressed batches, keys and values the codec
refuses or leaves bytes of, and record bytes cut and mutated at every position under a valid
CRC:

- the record loop (``codegen/native/user_loop.h``) gives the batches, records (field by field)
  and errors of ``UserTopicDecoder.decode``, a record at a time;
- the jsonl printer (``codegen/native/json_writer.h``) the bytes and noted records of
  ``JsonlLines.line``, and ``dump`` the same output on both backends;
- the printer of record bytes (``codegen/native/json_wire.h``, ``BatchBytes``) the lines of
  ``JsonlLines.line`` for every batch it prints (one whose every record the loop reads), and
  the records newer than the specs the reference notes."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner
from user_topics_data import write_topics
from v2_batches import record_bytes_variants, with_records
from version_rule import CASES_FOLDER, GIVEN_CASES, PACKAGE, WRITTEN, body, write_case_topics

from codegen.dumps import Codec, Header, NewRecord, SegmentWriter, table
from codegen.dumps.command import dump_command
from codegen.dumps.coordinator import native_records
from codegen.dumps.decoded import DecodedBatch, DecodedRecord
from codegen.dumps.dumplog_json import dump_log_line_groups
from codegen.dumps.jsonl import JsonlLines
from codegen.dumps.model import SegmentError, TimestampType
from codegen.dumps.topic_map import TopicMap, load_topic_map, parse_topic_map
from codegen.dumps.user_topics import BatchBytes, UserTopicDecoder, decode_user_records
from codegen.dumps.writer import encode_record_batch


@pytest.fixture(scope="module")
def payments(codec_package: Any, records_module: ModuleType) -> ModuleType:
    module: ModuleType = codec_package(PACKAGE, [CASES_FOLDER])
    return module


def _items(decoder: UserTopicDecoder, source: Path) -> list[Any]:
    """Every batch (its fields and records, field by field) and error of a source."""
    out: list[Any] = []
    for item in decoder.batches(source):
        if isinstance(item, SegmentError):
            out.append(item)
            continue
        assert isinstance(item, DecodedBatch)
        out.append(
            (
                item.batch,
                [(type(r), dataclasses.astuple(r)) for r in item.records],
            )
        )
    return out


def assert_loops_agree(topic_map: TopicMap, topic: str, source: Path) -> list[Any]:
    """The native loop and the reference give the same items, and the native printer the
    reference's lines of them; returns the items."""
    entry = topic_map.entry_for(topic)
    assert entry is not None
    native = UserTopicDecoder(entry, topic_map.package, native=True)
    assert native.native
    reference = UserTopicDecoder(entry, topic_map.package, native=False)
    assert not reference.native
    items = _items(native, source)
    assert items == _items(reference, source)
    assert_lines_agree(native, topic, source)
    assert_bytes_lines_agree(native, topic, source)
    return items


def assert_bytes_lines_agree(decoder: UserTopicDecoder, topic: str, source: Path) -> int:
    """The lines of every batch by the printer of record bytes and by the reference, and the
    records newer than the specs it counts; returns how many batches it printed from their
    bytes (the others went to the record loop)."""
    fields = {"topic": topic, "partition": 0, "file": "f.log"}
    printer = JsonlLines(topic, fields, user_topic=True, decoder=decoder)
    inner = printer._bytes_printer
    assert inner is not None
    calls: list[Any] = []
    printer._bytes_printer = lambda records, close, fallback: (
        calls.append(inner(records, close, fallback)) or calls[-1]
    )
    reference = JsonlLines(topic, fields, user_topic=True)
    reference._writer = None  # the pure backend's path
    printed = 0
    pairs = zip(decoder.byte_batches(source), decoder.batches(source), strict=True)
    for item, decoded in pairs:
        if isinstance(item, SegmentError):
            assert item == decoded
            continue
        assert isinstance(decoded, DecodedBatch)
        assert item.batch == decoded.batch
        noted: list[DecodedRecord] = []
        expected = reference.batch(decoded.batch, decoded.records, noted)
        calls.clear()
        newer = printer.newer_printed
        got_noted: list[DecodedRecord] = []
        assert printer.batch(item.batch, item.records, got_noted) == expected
        if calls and calls[0] is not None:
            assert isinstance(item.records, BatchBytes)
            printed += 1
            # the records it left to the reference are noted, the newer ones it printed counted
            assert [r for r in noted if not r.newer_than_spec] == [
                r for r in got_noted if not r.newer_than_spec
            ]
            assert printer.newer_printed - newer + len(got_noted) == len(noted)
        else:
            assert got_noted == noted
    return printed


def assert_lines_agree(decoder: UserTopicDecoder, topic: str, source: Path) -> None:
    """The jsonl lines and noted records of every batch, by the native printer and by the
    reference (``JsonlLines.line``)."""
    fields = {"topic": topic, "partition": 0, "file": "f.log"}
    native = JsonlLines(topic, fields, user_topic=True)
    assert native._writer is not None
    reference = JsonlLines(topic, fields, user_topic=True)
    reference._writer = None  # the pure backend's path
    for item in decoder.batches(source):
        if isinstance(item, SegmentError):
            continue
        noted: list[DecodedRecord] = []
        expected_noted: list[DecodedRecord] = []
        got = native.batch(item.batch, item.records, noted)
        assert got == reference.batch(item.batch, item.records, expected_noted)
        assert noted == expected_noted


def test_a_user_topic_decodes_natively_by_default(payments: ModuleType, tmp_path: Path) -> None:
    logs = write_case_topics(tmp_path, payments)
    topic_map = load_topic_map(logs.parent / "topics.toml")
    entry = topic_map.entry_for("payments")
    assert entry is not None
    assert UserTopicDecoder(entry, PACKAGE).native == (native_records() is not None)
    audit = topic_map.entry_for("audit")
    assert audit is not None  # a version in a header: the records are read with theirs
    assert not UserTopicDecoder(audit, PACKAGE, native=True).native


def test_the_version_rule_cases(payments: ModuleType, tmp_path: Path) -> None:
    """Every written case with an int16 prefix (in range, newer, negative, cut, a rigid
    message's newer version) and every version a map gives."""
    logs = write_case_topics(tmp_path / "written", payments)
    topic_map = load_topic_map(logs.parent / "topics.toml")
    kinds = []
    for topic in ("payments", "ledger"):
        for _, records in assert_loops_agree(topic_map, topic, logs / f"{topic}-0"):
            kinds += [fields[2] for _, fields in records]
    assert {"record", "error"} <= set(kinds)
    for case in GIVEN_CASES:
        if case.error is not None:
            continue  # a map with a version its message lacks is refused as it loads
        folder = tmp_path / case.id
        (folder / "given-0").mkdir(parents=True)
        with SegmentWriter(folder / "given-0" / "00000000000000000000.log") as writer:
            writer.write_batch([(case.key, body(payments, case)), (case.key, None)])
        given = parse_topic_map(
            {"given": {"value": {"message": case.message, "version": case.version}}},
            PACKAGE,
        )
        assert_loops_agree(given, "given", folder / "given-0")


def test_the_topic_map_tests_topics(
    user_codecs: ModuleType, records_module: ModuleType, tmp_path: Path
) -> None:
    written = write_topics(tmp_path, user_codecs)
    topic_map = load_topic_map(written.topic_map)
    for topic in ("sensors", "readings"):
        assert assert_loops_agree(topic_map, topic, written.folder / f"{topic}-0")


def _mixed_records(module: ModuleType, rng: random.Random, n: int) -> list[NewRecord]:
    key_cls = module.MESSAGES["PaymentKey"]
    value_cls = module.MESSAGES["PaymentValue"]
    line_cls = value_cls._STRUCTS["PaymentLine"]
    out = []
    for i in range(n):
        key: bytes | None = key_cls(account=f"a-{i % 7}", sequence=i).encode(0)
        written = rng.choice([0, 1, 2, 3, 4, 9, 300, -2])
        version = min(max(written, 0), 3)
        value_obj = value_cls(
            amount=i,
            currency="EUR",
            lines=[line_cls(item="tea", cents=i, tags=["hot"] * (i % 3))],
            reference="r" if version >= 3 else None,
            unknown_tags={7: b"x"} if written > 3 and i % 2 else {},
        )
        value: bytes | None = written.to_bytes(2, "big", signed=True) + value_obj.encode(version)
        shape = rng.randrange(12)
        if shape == 0:
            value = None  # a tombstone
        elif shape == 1:
            key = None
        elif shape == 2 and value is not None:
            value = value[:-1]  # cut short
        elif shape == 3 and value is not None:
            value += b"\x00"  # a byte left over
        elif shape == 4 and key is not None:
            key = key[:-2]  # a key the codec refuses
        elif shape == 5:
            value = b"\x00"  # no room for the prefix
        headers = [Header(b"trace", b"t")] if shape == 6 else []
        out.append(NewRecord(key, value, headers=headers))
    return out


def test_a_mixed_topic_with_compressed_batches(payments: ModuleType, tmp_path: Path) -> None:
    rng = random.Random(45)
    partition = tmp_path / "pay-0"
    partition.mkdir()
    with SegmentWriter(partition / "00000000000000000000.log") as writer:
        for b, codec in enumerate([Codec.NONE, Codec.LZ4, Codec.GZIP, Codec.NONE, Codec.ZSTD]):
            writer.write_batch(
                _mixed_records(payments, rng, 40), timestamp=1_700_000_000_000 + b, codec=codec
            )
    topic_map = parse_topic_map(
        {
            "pay": {
                "key": {"message": "PaymentKey", "version": 0},
                "value": {"message": "PaymentValue", "version": "prefix"},
            }
        },
        PACKAGE,
    )
    items = assert_loops_agree(topic_map, "pay", partition)
    kinds = {fields[2] for _, records in items for _, fields in records}
    assert kinds == {"record", "tombstone", "error"}
    newer = [fields for _, records in items for _, fields in records if fields[10]]
    assert newer  # versions 4 and 9, read with the newest
    decoder = UserTopicDecoder(topic_map.entry_for("pay"), PACKAGE)  # type: ignore[arg-type]
    # every batch from its bytes, its error records (one at least each) by the reference
    assert assert_bytes_lines_agree(decoder, "pay", partition) == 5
    records = list(decode_user_records(partition, topic_map, "pay"))
    assert len(records) == 200


@pytest.mark.parametrize("mapped", ["both", "value", "key"])
def test_batches_printed_from_their_bytes(
    payments: ModuleType, tmp_path: Path, mapped: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches whose every record decodes (versions 0-4 and 9, tombstones, null keys,
    headers, raw sides, every codec, log-append time) are printed from their bytes, as the
    reference prints their records."""
    rng = random.Random(46)
    records = [
        r
        for r in _mixed_records(payments, rng, 400)
        if r.value is None
        or (len(r.value) > 2 and int.from_bytes(r.value[:2], "big", signed=True) in range(10))
    ]
    records = [r for r in records if r.key is None or len(r.key) > 2]
    good = []
    for r in records:  # the cut and padded values of _mixed_records out
        try:
            if r.value is not None:
                payments.MESSAGES["PaymentValue"].decode(
                    r.value[2:], min(int.from_bytes(r.value[:2], "big"), 3)
                )
            if r.key is not None:
                payments.MESSAGES["PaymentKey"].decode(r.key, 0)
        except ValueError:
            continue
        good.append(r)
    # the even batches without headers (dump-log prints header keys by the reference)
    good = [r if i // 20 % 2 else NewRecord(r.key, r.value) for i, r in enumerate(good)]
    partition = tmp_path / "pay-0"
    partition.mkdir()
    codecs = [Codec.NONE, Codec.LZ4, Codec.GZIP, Codec.SNAPPY, Codec.ZSTD]
    with SegmentWriter(partition / "00000000000000000000.log") as writer:
        for b, start in enumerate(range(0, len(good), 20)):
            writer.write_batch(
                good[start : start + 20],
                timestamp=1_700_000_000_000 + b,
                codec=codecs[b % len(codecs)],
                timestamp_type=TimestampType.LOG_APPEND_TIME
                if b % 2
                else TimestampType.CREATE_TIME,
                log_append_time=1_800_000_000_000 + b if b % 2 else None,
            )
    sides = {
        "key": {"message": "PaymentKey", "version": 0},
        "value": {"message": "PaymentValue", "version": "prefix"},
    }
    topic_map = parse_topic_map(
        {"pay": sides if mapped == "both" else {mapped: sides[mapped]}}, PACKAGE
    )
    entry = topic_map.entry_for("pay")
    assert entry is not None
    decoder = UserTopicDecoder(entry, PACKAGE)
    batches = sum(1 for _ in decoder.batches(partition))
    assert batches >= 8
    assert assert_bytes_lines_agree(decoder, "pay", partition) == batches
    if mapped == "both":  # dump: the same lines and summary (its count of newer records)
        topics = tmp_path / "topics.toml"
        topics.write_text(
            f'package = "{PACKAGE}"\n[topics.pay]\n'
            'key = { message = "PaymentKey", version = 0 }\n'
            'value = { message = "PaymentValue", version = "prefix" }\n'
        )

        def dump(backend: str, fmt: str) -> tuple[bytes, str, int]:
            result = CliRunner().invoke(
                dump_command,
                [str(partition), "--format", fmt, "--topics", str(topics)],
                env={"SPECGEN_BACKEND": backend},
            )
            return result.stdout_bytes, result.stderr, result.exit_code

        segment = (partition / "00000000000000000000.log").read_bytes()
        newer = sum(1 for r in good if r.value is not None and r.value[:2] >= b"\x00\x04")
        assert newer > 0
        for fmt in ("jsonl", "dump-log", "table"):
            native = dump("native", fmt)
            assert native == dump("pure", fmt)
            assert f", {newer} newer than our specs" in native[1]
        # tables of 50 rows: their ends fall where the reference's do, among batches from
        # their bytes and one that is not (a record cut short)
        with SegmentWriter(partition / "00000000000000000000.log", append=True) as writer:
            writer.write_batch([*good[:7], NewRecord(good[0].key, b"\x00\x03\x01")])
            writer.write_batch(good[7:40])
        monkeypatch.setattr(table, "TABLE_ROWS", 50)
        native_table = dump("native", "table")
        assert native_table == dump("pure", "table")
        (partition / "00000000000000000000.log").write_bytes(segment)
        assert native_table[0].count(b"offset") >= 4  # a header per table
        newer_counted: list[int] = []
        groups = list(
            dump_log_line_groups(
                partition / "00000000000000000000.log",
                "pay",
                package=PACKAGE,
                user=decoder,
                observe=lambda item: None,
                count_newer=newer_counted.append,
            )
        )
        # a batch printed from its bytes: its line, then its records' lines in one text; one
        # with headers (their keys are printed) by the reference, a line per record
        chunks = [good[start : start + 20] for start in range(0, len(good), 20)]
        expected = [len(c) + 1 if any(r.headers for r in c) else 2 for c in chunks]
        assert [len(g) for g in groups[1:]] == expected
        assert 2 in expected
        assert sum(newer_counted) == sum(
            1
            for c in chunks
            if not any(r.headers for r in c)
            for r in c
            if r.value is not None and r.value[:2] >= b"\x00\x04"
        )


@pytest.mark.parametrize("keyed", [True, False])
def test_record_bytes_cut_and_mutated(payments: ModuleType, tmp_path: Path, keyed: bool) -> None:
    """Record bytes cut and changed at every position (the CRC made valid): a batch the native
    loop cannot parse is the reference's, records it can are the reference's too."""
    value_cls = payments.MESSAGES["PaymentValue"]
    value = b"\x00\x02" + value_cls(amount=5, currency="EUR", lines=[]).encode(2)
    key = payments.MESSAGES["PaymentKey"](account="a", sequence=1).encode(0)
    plain = encode_record_batch(
        [NewRecord(key, value), NewRecord(None, value, headers=[Header(b"h", b"x")])],
        timestamp=1_700_000_000_000,
    )
    sides: dict[str, Any] = {"value": {"message": "PaymentValue", "version": "prefix"}}
    if keyed:
        sides["key"] = {"message": "PaymentKey", "version": 0}
    topic_map = parse_topic_map({"pay": sides}, PACKAGE)
    partition = tmp_path / "pay-0"
    partition.mkdir()
    segment = partition / "00000000000000000000.log"
    errors = 0
    for variant in record_bytes_variants(plain[61:]):
        segment.write_bytes(plain + with_records(plain, variant) + plain)
        items = assert_loops_agree(topic_map, "pay", partition)
        errors += sum(isinstance(i, SegmentError) for i in items)
    assert errors > 0


@pytest.mark.parametrize("mapped", ["value", "key"])
def test_raw_sides_of_every_shape(payments: ModuleType, tmp_path: Path, mapped: str) -> None:
    """A side the map leaves out prints as base64 and, when it is UTF-8, as text: null, empty,
    ASCII with quotes and line breaks, other UTF-8, and bytes that are not UTF-8."""
    value_cls = payments.MESSAGES["PaymentValue"]
    line_cls = value_cls._STRUCTS["PaymentLine"]
    value = b"\x00\x03" + value_cls(
        amount=1, currency="€", lines=[line_cls(item='thé\n"x"', cents=2, tags=["\x01"])]
    ).encode(3)
    key = payments.MESSAGES["PaymentKey"](account="ünï", sequence=-1).encode(0)
    raws = [None, b"", b"s1", b'a\nb"c\\\x7f', "café ☕".encode(), b"\xff\xfe", b"\xed\xa0\x80"]
    records = [NewRecord(raw, value) if mapped == "value" else NewRecord(key, raw) for raw in raws]
    partition = tmp_path / "raw-0"
    partition.mkdir()
    with SegmentWriter(partition / "00000000000000000000.log") as writer:
        writer.write_batch(records, timestamp=1_700_000_000_000)
    side = (
        {"message": "PaymentValue", "version": "prefix"}
        if mapped == "value"
        else {"message": "PaymentKey", "version": 0}
    )
    topic_map = parse_topic_map({"raw": {mapped: side}}, PACKAGE)
    items = assert_loops_agree(topic_map, "raw", partition)
    topics = tmp_path / "topics.toml"
    topics.write_text(
        f'package = "{PACKAGE}"\n[topics.raw]\n{mapped} = '
        + (
            '{ message = "PaymentValue", version = "prefix" }'
            if mapped == "value"
            else '{ message = "PaymentKey", version = 0 }'
        )
        + "\n"
    )
    for raw in raws:  # dump-log and table: each raw side alone (from its bytes or not)
        (partition / "00000000000000000000.log").unlink()
        with SegmentWriter(partition / "00000000000000000000.log") as writer:
            only = NewRecord(raw, value) if mapped == "value" else NewRecord(key, raw)
            writer.write_batch([only, only], timestamp=1_700_000_000_000)
        for fmt in ("dump-log", "table"):
            native, pure = (
                CliRunner().invoke(
                    dump_command,
                    [str(partition), "--format", fmt, "--topics", str(topics)],
                    env={"SPECGEN_BACKEND": backend},
                )
                for backend in ("native", "pure")
            )
            assert (native.stdout_bytes, native.stderr, native.exit_code) == (
                pure.stdout_bytes,
                pure.stderr,
                pure.exit_code,
            )
    assert [fields[2] for _, records in items for _, fields in records][:3] == (
        ["record"] * 3 if mapped == "value" else ["tombstone", "record", "record"]
    )


@pytest.mark.parametrize(
    "args",
    [["--format", "jsonl"], ["--format", "dump-log"], ["--format", "table"]],
    ids=lambda a: a[-1],
)
def test_dump_is_the_same_on_both_backends(
    payments: ModuleType, tmp_path: Path, args: list[str]
) -> None:
    """The version rule's cases and a mixed topic (null keys, headers, compressed batches)."""
    logs = write_case_topics(tmp_path, payments)
    (logs / "pay-0").mkdir()
    rng = random.Random(7)
    with SegmentWriter(logs / "pay-0" / "00000000000000000000.log") as writer:
        for codec in (Codec.NONE, Codec.LZ4, Codec.NONE):
            writer.write_batch(_mixed_records(payments, rng, 30), codec=codec)
    topics = logs.parent / "topics.toml"
    topics.write_text(
        topics.read_text() + '"pay" = { key = { message = "PaymentKey", version = 0 }, '
        'value = { message = "PaymentValue", version = "prefix" } }\n'
    )

    def dump(backend: str) -> tuple[bytes, str, int]:
        result = CliRunner().invoke(
            dump_command,
            [str(logs), *args, "--topics", str(topics)],
            env={"SPECGEN_BACKEND": backend},
        )
        return result.stdout_bytes, result.stderr, result.exit_code

    native = dump("native")
    assert native[0].count(b"\n") >= len(WRITTEN) + 90
    assert native == dump("pure")


def test_dump_compacted_is_the_same_on_both_backends(payments: ModuleType, tmp_path: Path) -> None:
    """``--compacted``'s last record per key (its lines printed apart from their batches)."""
    logs = write_case_topics(tmp_path, payments)
    topics = logs.parent / "topics.toml"

    def dump(backend: str) -> tuple[bytes, int]:
        result = CliRunner().invoke(
            dump_command,
            [str(logs / "payments-0"), "--compacted", "-q", "--topics", str(topics)],
            env={"SPECGEN_BACKEND": backend},
        )
        return result.stdout_bytes, result.exit_code

    latest = dump("native")
    assert b'"kind":"record"' in latest[0]
    assert latest == dump("pure")


_SUNSET_SPEC = """{
  "name": "SunsetValue",
  "type": "data",
  "validVersions": "0-2",
  "flexibleVersions": "1+",
  "fields": [
    { "name": "Id", "type": "int32", "versions": "0+", "about": "Kept in every version." },
    { "name": "Legacy", "type": "string", "versions": "0-2", "about": "Gone after 2." }
  ]
}"""


def test_a_newer_version_prints_as_the_newest(
    codec_package: Any, records_module: ModuleType, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A value written at a version past the newest is read with the newest and printed as
    the newest prints it (``version_of``), a field whose versions end there included."""
    specs = tmp_path_factory.mktemp("sunset-specs")
    (specs / "SunsetValue.json").write_text(_SUNSET_SPEC)
    module = codec_package("sunset_codecs", [specs])
    value = module.MESSAGES["SunsetValue"](id=7, legacy="old").encode(2)
    folder = tmp_path_factory.mktemp("sunset") / "sunset-0"
    folder.mkdir()
    with SegmentWriter(folder / "00000000000000000000.log") as writer:
        writer.write_batch([(b"k", (v).to_bytes(2, "big") + value) for v in (2, 3, 9)])
    topic_map = parse_topic_map(
        {"sunset": {"value": {"message": "SunsetValue", "version": "prefix"}}}, "sunset_codecs"
    )
    items = assert_loops_agree(topic_map, "sunset", folder)
    ((_, records),) = items
    assert [fields[10] for _, fields in records] == [False, True, True]  # newer than the spec
    entry = topic_map.entry_for("sunset")
    assert entry is not None
    lines = JsonlLines("sunset", {"topic": "sunset"}, user_topic=True)
    (batch,) = UserTopicDecoder(entry, "sunset_codecs").batches(folder)
    assert isinstance(batch, DecodedBatch)
    text = lines.batch(batch.batch, batch.records)
    assert text.count(b'"legacy":"old"') == 3


def test_table_cells_of_raw_sides(payments: ModuleType, tmp_path: Path) -> None:
    """A side the map leaves out is shown as a plain topic's: its UTF-8 text, undecodable bytes
    replaced; a null value is a tombstone."""
    value = payments.MESSAGES["PaymentKey"](account="acc", sequence=3).encode(0)
    (tmp_path / "raw-0").mkdir()
    with SegmentWriter(tmp_path / "raw-0" / "00000000000000000000.log") as writer:
        writer.write_batch([(value, b"caf\xc3\xa9 \xff"), (value, None)])
    topics = tmp_path / "topics.toml"
    topics.write_text(
        f'package = "{PACKAGE}"\n[topics]\n"raw" = {{ key = {{ message = "PaymentKey", '
        "version = 0 } }\n"
    )
    result = CliRunner().invoke(
        dump_command, [str(tmp_path / "raw-0"), "--format", "table", "--topics", str(topics)]
    )
    assert result.exit_code == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith(" raw-0")]
    assert len(rows) == 2
    assert '{"account":"acc","sequence":3}' in rows[0] and "café \ufffd" in rows[0]
    assert rows[1].rstrip().endswith("<tombstone>")
