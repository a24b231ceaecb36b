"""``python -m codegen dump`` on ordinary topics, damaged and legacy segments and the other files
of a log folder, without Kafka (``tests/test_dumplog_parity.py`` compares the dump-log text with
Kafka's tool)."""

from __future__ import annotations

import base64
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner

from codegen.dumps import SegmentWriter
from codegen.dumps.command import dump_command

DATA = Path(__file__).resolve().parent / "data"
KAFKA = DATA / "kafka-data"
MADE = DATA / "dumplog"


def _build_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dumplog_build", MADE / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(*args: object) -> tuple[int, str, str]:
    res = CliRunner().invoke(dump_command, [str(a) for a in args])
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, res.stderr


def test_build_script_gives_the_committed_files() -> None:
    built = _build_module().build()
    on_disk = {
        str(p.relative_to(MADE)): p.read_bytes()
        for p in MADE.rglob("*")
        if p.is_file() and p.suffix not in (".py", ".md")
    }
    assert built == on_disk


# ------------------------------------------------------------------------- ordinary topics


def test_ordinary_topic_jsonl_has_base64_and_text() -> None:
    code, out, _ = _run(KAFKA / "aibulb" / "my-topic-0")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(rows) == 16
    assert rows[0] == {
        "offset": 0,
        "timestamp": 1684027534529,
        "kind": "record",
        "keyBase64": None,
        "valueBase64": base64.b64encode(b"pruebaMonguito!").decode(),
        "valueText": "pruebaMonguito!",
        "topic": "my-topic",
        "partition": 0,
        "file": str(KAFKA / "aibulb" / "my-topic-0" / "00000000000000000000.log"),
        "producerId": -1,
        "producerEpoch": 0,
        "baseSequence": 0,
        "isTransactional": False,
        "isControl": False,
    }


def test_bytes_that_are_not_utf8_have_no_text_form(tmp_path: Path) -> None:
    folder = tmp_path / "raw-0"
    folder.mkdir()
    with SegmentWriter(folder / "00000000000000000000.log") as w:
        w.write_batch([(b"\xff\xfe", "é".encode())])
    code, out, _ = _run(folder)
    (row,) = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert row["keyBase64"] == "//4=" and "keyText" not in row
    assert row["valueText"] == "é"


def test_broker_folder_reads_internal_topics_decoded_and_others_plain() -> None:
    code, out, _ = _run(KAFKA / "aibulb")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert any("valueText" in r for r in rows)  # my-topic-0
    assert any(r.get("recordName") == "OffsetCommit" for r in rows)  # __consumer_offsets
    assert any(r.get("frameVersion") == 1 for r in rows)  # __cluster_metadata


def test_table_of_mixed_topics_renders_each_row_with_its_own_topic() -> None:
    broker = KAFKA / "ldi-poc"
    code, out, _ = _run(
        broker / "__consumer_offsets-6", broker / "__cluster_metadata-0", "--format", "table"
    )
    assert code == 0
    assert "FeatureLevelRecord" in out and "OffsetCommit" in out


def test_topic_plain_prints_an_internal_topic_as_bytes() -> None:
    code, out, _ = _run(KAFKA / "mscaldas-spooldir" / "__consumer_offsets-0", "--topic", "plain")
    assert code == 0
    assert all("keyBase64" in json.loads(line) for line in out.splitlines())


def test_compacted_on_a_broker_folder_needs_no_topic() -> None:
    code, out, _ = _run(KAFKA / "aibulb", "--compacted")
    views = {json.loads(line)["view"] for line in out.splitlines()}
    assert code == 0 and views == {"offset", "group"}


# ---------------------------------------------------------------- damage and legacy entries


def test_corrupt_batch_is_printed_and_the_dump_goes_on() -> None:
    code, out, err = _run(MADE / "corrupt-0", "--format", "dump-log")
    assert code == 1
    assert "size: 83 magic: 2 compresscodec: none crc: 2521920295 isvalid: false" in out
    assert out.rstrip().endswith("key: k3 payload: after the damage")
    assert "crc-mismatch" in err


def test_legacy_records_carry_their_crc() -> None:
    code, out, _ = _run(MADE / "legacy-0", "--format", "dump-log")
    assert code == 1  # the last message has a wrong CRC: printed, as Kafka does, and damage
    lines = out.splitlines()
    assert (
        "| offset: 5 CreateTime: 1700000000005 keySize: 1 valueSize: 14 isValid: true "
        "crc: 775301649 key: e payload: v1 in gzip too"
    ) in lines
    assert lines[-1].startswith("| offset: 10 ") and " isValid: false crc: 101568296 " in lines[-1]


def test_keyless_record_under_the_offsets_decoder_stops_as_kafka_does() -> None:
    code, out, err = _run(MADE / "keyless", "--format", "dump-log")
    assert code == 1
    assert out.endswith("keySize: -1 valueSize: 11 sequence: -1 headerKeys: []")
    assert err.startswith(
        "Failed to decode message at offset 1 using the specified decoder "
        "(message had a missing key)\n"
    )


def test_non_consecutive_offsets_are_listed_on_stderr() -> None:
    code, _, err = _run(MADE / "orders-0" / "00000000000000000100.log", "--format", "dump-log")
    assert code == 0
    path = (MADE / "orders-0" / "00000000000000000100.log").resolve()
    assert (
        f"Non-consecutive offsets in {path}\n  -1 is followed by 100\n  107 is followed by 110\n"
    ) in err


# ---------------------------------------------------------------- the other files of a folder


def test_a_partition_folder_in_dump_log_format_reads_every_kind_of_file() -> None:
    code, out, err = _run(MADE / "orders-0", "--format", "dump-log")
    assert code == 1  # the index mismatches and the corrupt snapshot
    dumped = [line.split("/")[-1] for line in out.splitlines() if line.startswith("Dumping ")]
    assert dumped == [
        "00000000000000000050.snapshot",
        "00000000000000000100.index",
        "00000000000000000100.log",
        "00000000000000000100.timeindex",
        "00000000000000000100.txnindex",
        "00000000000000000112.snapshot",
    ]
    assert "offset: 106 position: 0" in out
    assert "version: 0 producerId: 7 firstOffset: 105 lastOffset: 107 lastStableOffset: 105" in out
    assert (
        "producerId: 9 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: "
        "OptionalLong[110] lastTimestamp: 1700000000011 firstSequence: 3 lastSequence: 4 "
        "lastOffset: 111 offsetDelta: 1 timestamp: 1700000000011"
    ) in out
    assert "Snapshot is corrupt (CRC is no longer valid)." in err
    assert "  Index offset: 106, log offset: 102" in err
    assert "Indexed offset: 108, found log offset: 111" in err


def test_empty_producer_snapshot_prints_nothing_and_is_clean() -> None:
    snapshot = KAFKA / "ldi-poc" / "__consumer_offsets-6" / "00000000000000000013.snapshot"
    code, out, _ = _run(snapshot, "--format", "dump-log")
    assert code == 0 and out == f"Dumping {snapshot}\n"


def test_index_files_need_the_dump_log_format() -> None:
    snapshot = KAFKA / "ldi-poc" / "__consumer_offsets-6" / "00000000000000000013.snapshot"
    code, _, err = _run(snapshot)
    assert code == 2 and "pass --format dump-log" in err


def test_other_files_are_ignored_as_kafka_does() -> None:
    path = KAFKA / "ldi-poc" / "__cluster_metadata-0" / "partition.metadata"
    code, out, err = _run(path, "--format", "dump-log")
    assert code == 0 and out == f"Dumping {path}\n"
    assert f"Ignoring unknown file {path}" in err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--verify-index-only"], "offset: 102 position: 0"),
        (["--index-sanity-check"], "offset: 102 position: 0"),
    ],
)
def test_index_options(args: list[str], expected: str) -> None:
    index = MADE / "orders-0" / "00000000000000000100.index"
    code, out, _ = _run(index, "--format", "dump-log", *args)
    assert expected not in out
    if "--index-sanity-check" in args:
        assert code == 0 and out.endswith("passed sanity check.\n")
    else:
        assert code == 1  # the mismatch is still reported


def test_max_bytes_reads_the_batches_that_fit() -> None:
    code, out, _ = _run(MADE / "corrupt-0", "--format", "dump-log", "--max-bytes", "150")
    assert code == 0
    assert out.count("baseOffset:") == 1 and "invalid bytes" not in out


def test_skip_record_metadata_prints_only_keys_and_values() -> None:
    code, out, _ = _run(MADE / "corrupt-0", "--format", "dump-log", "--skip-record-metadata")
    assert code == 1  # the corrupt batch
    assert "| key: k0 payload: first value" in out.splitlines()
    assert "| offset:" not in out


# ------------------------------------------------------------------ rows for scripts and people


def test_every_jsonl_row_names_its_source_and_batch() -> None:
    code, out, _ = _run(MADE / "orders-0" / "00000000000000000100.log")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert {(r["topic"], r["partition"]) for r in rows} == {("orders", 0)}
    transactional = [r for r in rows if r["isTransactional"]]
    assert [(r["offset"], r["producerId"], r["producerEpoch"]) for r in transactional] == [
        (105, 7, 1),
        (106, 7, 1),
        (107, 7, 1),
    ]
    (marker,) = [r for r in rows if r["isControl"]]
    assert (marker["kind"], marker["recordName"], marker["producerId"]) == ("control", "ABORT", 7)
    assert transactional[0]["baseSequence"] == 0


def test_internal_topic_rows_name_topic_partition_and_file() -> None:
    folder = KAFKA / "aibulb" / "__consumer_offsets-28"
    code, out, _ = _run(folder)
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and rows
    for row in rows:
        assert (row["topic"], row["partition"]) == ("__consumer_offsets", 28)
        assert row["file"] == str(folder / "00000000000000000000.log")


def test_table_rows_show_partition_file_and_utc_time() -> None:
    code, out, _ = _run(KAFKA / "aibulb" / "my-topic-0", "--format", "table")
    assert code == 0
    assert "my-topic-0" in out and "00000000000000000000.log" in out
    assert "1684027534529" in out and "2023-05-14T01:25:34.529Z" in out


def test_a_large_table_is_printed_a_table_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows are not all held until the end: every TABLE_ROWS rows make a table of their own."""
    import codegen.dumps.table as table

    folder = KAFKA / "aibulb" / "my-topic-0"

    def offsets(text: str) -> list[str]:
        return [line.split()[2] for line in text.splitlines() if line.split()[:1] == [folder.name]]

    _, whole, _ = _run(folder, "--format", "table")
    monkeypatch.setattr(table, "TABLE_ROWS", 2)
    code, out, _ = _run(folder, "--format", "table")
    tables = [line for line in out.splitlines() if line.split()[:2] == ["partition", "file"]]
    assert code == 0 and len(offsets(whole)) >= 4
    assert offsets(out) == offsets(whole)
    assert 2 <= len(tables) <= (len(offsets(whole)) + 1) // 2 + 1


def test_groups_that_only_committed_offsets_are_listed(tmp_path: Path) -> None:
    from generated.offset_commit_key import OffsetCommitKey
    from generated.offset_commit_value import OffsetCommitValue

    folder = tmp_path / "__consumer_offsets-0"
    folder.mkdir()
    key = b"\x00\x01" + OffsetCommitKey(group="assigner", topic="t", partition=0).encode(0)
    value = b"\x00\x03" + OffsetCommitValue(offset=5, metadata="", commit_timestamp=1).encode(3)
    with SegmentWriter(folder / "00000000000000000000.log") as w:
        w.write_batch([(key, value)])
    code, out, _ = _run(folder, "--compacted")
    groups = [json.loads(line) for line in out.splitlines() if '"view":"group"' in line]
    assert code == 0
    assert [(g["group"], g["type"], g["state"]) for g in groups] == [
        ("assigner", "classic", "Empty")
    ]


def test_zero_padding_stops_the_dump_log_run_as_kafka_does() -> None:
    path = MADE / "padded-0" / "00000000000000000000.log"
    code, out, err = _run(path, "--format", "dump-log")
    assert code == 1
    assert out.endswith("key: k2 payload: v2\n") and "invalid bytes" not in out
    assert err.startswith(
        f"Found record size 0 smaller than minimum record overhead (14) in file {path}.\n"
    )


def test_a_torn_tail_is_counted_as_invalid_bytes() -> None:
    code, out, _ = _run(MADE / "torn-0", "--format", "dump-log")
    assert code == 1
    assert out.endswith("Found 30 invalid bytes at the end of 00000000000000000000.log\n")


# ------------------------------------------------------------- aborted-transaction indexes


def test_txnindex_reads_as_jsonl_through_the_aborted_txn_spec() -> None:
    code, out, _ = _run(MADE / "txns-1" / "00000000000000000000.txnindex")
    assert code == 1  # versions 1 and -1 are outside AbortedTxn's 0..0
    first, error = (json.loads(line) for line in out.splitlines())
    assert first == {
        "kind": "aborted-txn",
        "recordName": "AbortedTxn",
        "position": 0,
        "version": 0,
        "producerId": 4,
        "firstOffset": 0,
        "lastOffset": 3,
        "lastStableOffset": 0,
        "topic": "txns",
        "partition": 1,
        "file": str(MADE / "txns-1" / "00000000000000000000.txnindex"),
    }
    assert error["kind"] == "error" and error["position"] == 34
    assert "Unexpected aborted transaction version 1 in transaction index" in error["error"]
    assert error["error"].endswith("supported version range is 0 to 0")


def test_txnindex_torn_tail_is_an_error_after_the_whole_entries() -> None:
    code, out, err = _run(MADE / "txns-0" / "00000000000000000000.txnindex")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 1
    assert [(r["producerId"], r["firstOffset"], r["lastOffset"]) for r in rows[:3]] == [
        (3, 0, 4),
        (5, 2, 9),
        (3, 10, 12),
    ]
    assert rows[3]["kind"] == "error" and rows[3]["position"] == 102
    assert "the last 10 bytes at position 102 are not a whole 34-byte entry" in err


def test_a_partition_folder_gives_its_aborted_transaction_index_too() -> None:
    """Not only when named: a folder's .txnindex follows the segment it indexes, in every
    format but --compacted (an index is no record of the compacted state)."""
    code, out, _ = _run(MADE / "orders-0")
    lines = [json.loads(line) for line in out.splitlines()]
    files = [Path(line["file"]).name for line in lines]
    assert code == 0
    assert files[-1] == "00000000000000000100.txnindex" and lines[-1]["kind"] == "aborted-txn"
    assert set(files[:-1]) == {"00000000000000000100.log"}
    code, out, _ = _run(MADE / "orders-0", "--format", "table")
    assert code == 0 and "AbortedTxn" in out


def test_txnindex_table_has_a_row_per_entry() -> None:
    code, out, _ = _run(MADE / "orders-0" / "00000000000000000100.txnindex", "--format", "table")
    assert code == 0
    assert '{"producerId":7,"firstOffset":105,"lastOffset":107,"lastStableOffset":105}' in out
    assert "orders-0" in out and "AbortedTxn" in out


def test_txnindex_dump_log_prints_the_first_byte_as_the_version_as_kafka_4_3_does() -> None:
    code, out, _ = _run(MADE / "txns-1" / "00000000000000000000.txnindex", "--format", "dump-log")
    assert code == 0
    versions = [line.split()[1] for line in out.splitlines() if line.startswith("version:")]
    assert versions == ["0", "0", "-1"]


def test_the_progress_bar_moves_in_steps_not_per_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    # A terminal's bar was advanced once per log batch: a fifth of a command's time.
    import sys

    from rich.progress import Progress

    import codegen.dumps.run as run

    calls: list[int] = []
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setattr(Progress, "advance", lambda self, task, n: calls.append(n))
    total = 100 * run.PROGRESS_MIN_BYTES
    _, advance = run.progress(total)
    for _ in range(total // 4096):
        advance(4096)
    assert 400 <= len(calls) <= 500
    assert 0 <= total - sum(calls) < total // 500  # the rest: the bar is gone at the end


def test_byte_output_gathers_writes_and_writes_all_on_error(tmp_path: Path) -> None:
    """Lines reach the file in writes of about WRITE_SIZE, in order, and what is gathered
    is written when the block ends with an error (nothing lost)."""
    from codegen.dumps import run

    class Counted:
        def __init__(self) -> None:
            self.writes: list[bytes] = []

        def write(self, data: bytes) -> int:
            self.writes.append(data)
            return len(data)

    class Out:
        def __init__(self) -> None:
            self.buffer = Counted()

        def flush(self) -> None:
            pass

        def isatty(self) -> bool:
            return False

    out = Out()
    line = b"x" * 9999 + b"\n"
    n = 3 * run.WRITE_SIZE // len(line)
    with pytest.raises(KeyboardInterrupt), run.ByteOutput(out) as output:  # type: ignore[arg-type]
        for _ in range(n):
            output.write(line)
        raise KeyboardInterrupt
    assert b"".join(out.buffer.writes) == line * n
    assert len(out.buffer.writes) <= 4
    assert all(len(w) >= run.WRITE_SIZE for w in out.buffer.writes[:-1])


def test_byte_output_writes_through_to_a_terminal() -> None:
    from codegen.dumps import run

    writes: list[bytes] = []

    class Out:
        buffer = type("B", (), {"write": staticmethod(writes.append)})()

        def flush(self) -> None:
            pass

        def isatty(self) -> bool:
            return True

    output = run.ByteOutput(Out())  # type: ignore[arg-type]
    output.write(b"a\n")
    assert writes == [b"a\n"]


def test_byte_output_writes_a_file_in_order(tmp_path: Path) -> None:
    """To a file the gathered lines go out in order, after what its text layer held."""
    from codegen.dumps import run

    target = tmp_path / "out.jsonl"
    lines = [b"%d\n" % i * 500 for i in range(5000)]
    with target.open("w") as out:
        out.write("first\n")  # buffered by the text layer: flushed before the lines
        with run.ByteOutput(out) as output:
            for line in lines:
                output.write(line)
        out.write("last\n")
    assert target.read_bytes() == b"first\n" + b"".join(lines) + b"last\n"
