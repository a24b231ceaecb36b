"""Files that are not Kafka log data, named as such: exit 2 with "not a Kafka log segment: ..."
and what a segment holds, in ``dump``, every forensics command and the demo; damage (exit 1)
stays for files that start as Kafka segments (``codegen.dumps.recognize``).

The cases: text (a build log, one short line), an empty and a zero-filled file, real
segments of every magic, and real segments damaged in their first entry (checksum, cut short).
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from codegen.cli import cli
from codegen.dumps import Codec, SegmentWriter
from codegen.dumps.recognize import EXPECTED, NotKafkaData, not_kafka_reason, require_kafka_data
from codegen.dumps.writer import encode_legacy_entry, encode_record_batch

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "data" / "kafka-data" / "aibulb"
BUILD_LOG = b"[INFO] Building kafka-specgen 0.1.0\n[INFO] BUILD SUCCESS\n" * 20
FORENSICS = [
    ["groups"],
    ["lag"],
    ["lag", "--format", "html"],
    ["transactions"],
    ["downgrade-check", "--to", "3.9"],
]


def _batch(n: int = 3, base: int = 0) -> bytes:
    return encode_record_batch([(b"k", b"v%d" % i) for i in range(n)], base_offset=base)


def test_text_and_short_files_are_not_kafka_data() -> None:
    assert not_kafka_reason(BUILD_LOG) == "byte 16 (the magic byte) is 0x6b ('k'), not 0, 1 or 2"
    assert not_kafka_reason(b"ok\n") == ("3 bytes, fewer than a log entry's header (17 bytes)")
    assert not_kafka_reason(b"\xff" * 16 + b"\x02" + b"\0" * 60) == (
        "the first 8 bytes make a negative base offset (-1)"
    )
    small = struct.pack(">qiib", 0, 20, 0, 2) + b"\0" * 60
    assert not_kafka_reason(small) == (
        "bytes 8-11 make an entry size of 20, less than the 49 bytes of the smallest magic 2 entry"
    )
    bad_codec = bytearray(_batch())
    bad_codec[22] = 0x07  # attributes: codec 7
    assert not_kafka_reason(bytes(bad_codec)) == (
        "its batch attributes name compression codec 7, not 0-4"
    )


def test_kafka_segments_of_every_kind_are_kafka_data() -> None:
    assert not_kafka_reason(b"") is None  # an empty active segment
    assert not_kafka_reason(b"\0" * 4096) is None  # preallocated
    assert not_kafka_reason(_batch() + _batch(2, 3)) is None
    zstd = encode_record_batch([(None, b"x" * 100)] * 5, codec=Codec.ZSTD)
    assert not_kafka_reason(zstd) is None
    for magic in (0, 1):
        assert not_kafka_reason(encode_legacy_entry([(b"k", b"v")] * 2, magic=magic)) is None
    for path in sorted(REAL.glob("*/*.log")) + sorted(REAL.glob("*/*.checkpoint")):
        assert not_kafka_reason(path.read_bytes()) is None, path


def test_damage_in_a_first_entry_stays_damage() -> None:
    first, second = bytearray(_batch()), _batch(2, 3)
    first[-1] ^= 0xFF  # the first batch's checksum fails
    assert not_kafka_reason(bytes(first) + second) is None  # the next one frames and checks
    assert not_kafka_reason(bytes(first)) is None  # a lone damaged batch
    assert not_kafka_reason(_batch()[:40]) is None  # cut short by the end of the file
    cut = _batch()
    assert not_kafka_reason(cut[:-5], file_size=len(cut) - 5) is None
    # Followed by what is not an entry: the damage story does not hold.
    assert not_kafka_reason(bytes(first) + BUILD_LOG) == (
        "its first entry frames, but its checksum does not match and nothing follows it"
    )


def test_require_names_the_first_file_that_is_not_kafka_data(tmp_path: Path) -> None:
    good, text = tmp_path / "00000000000000000000.log", tmp_path / "build.log"
    good.write_bytes(_batch())
    text.write_bytes(BUILD_LOG)
    require_kafka_data([good])
    with pytest.raises(NotKafkaData) as caught:
        require_kafka_data([good, text])
    assert str(caught.value) == (
        f"not a Kafka log segment: {text}: byte 16 (the magic byte) is 0x6b ('k'), not 0, 1 "
        f"or 2; {EXPECTED}"
    )


def test_require_judges_files_on_the_bytes_not_kafka_reason_reads(tmp_path: Path) -> None:
    """require_kafka_data reads a file's first 64 KB, and its first 1 MB where those do not
    start with an entry that frames and checks: its answer is not_kafka_reason's of the first
    1 MB, for files whose first entry or zeros reach past 64 KB."""
    first = encode_record_batch([(b"k", b"v" * 100_000)])  # a first batch past 64 KB
    broken = bytearray(first)
    broken[-1] ^= 0xFF
    cases = {
        "zeros-then-text": b"\0" * 70_000 + BUILD_LOG,  # not Kafka on its first 1 MB
        "large-first-broken-then-text": bytes(broken) + BUILD_LOG,
        "large-first": first + BUILD_LOG,  # its first entry checks: Kafka, then damage
        "large-first-broken-then-batch": bytes(broken) + _batch(2, 1),
        "small-first-then-text": _batch() + b"\0" * 70_000 + BUILD_LOG,
        "zeros": b"\0" * 70_000,
        "exactly-64-kb-of-text": (BUILD_LOG * 100)[: 1 << 16],
    }
    assert len(first) > 1 << 16
    kafka = {"large-first", "large-first-broken-then-batch", "small-first-then-text", "zeros"}
    for name, data in cases.items():
        path = tmp_path / f"{name}.log"
        path.write_bytes(data)
        reason = not_kafka_reason(data[: 1 << 20], len(data))
        if reason is None:
            require_kafka_data([path])
        else:
            with pytest.raises(NotKafkaData, match="not a Kafka log segment"):
                require_kafka_data([path])
        assert (reason is None) == (name in kafka), name


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A folder of build logs, as a scratch folder given by mistake."""
    folder = tmp_path / "scratch"
    folder.mkdir()
    for n in range(3):
        (folder / f"build-{n}.log").write_bytes(BUILD_LOG)
    return folder


def _not_kafka(text: str, path: Path) -> None:
    assert f"not a Kafka log segment: {path}: byte 16 (the magic byte) is 0x6b ('k')" in text
    assert EXPECTED in text


def test_dump_exits_2_on_a_text_file_and_a_folder_of_them(scratch: Path) -> None:
    runner = CliRunner()
    for given in (scratch / "build-0.log", scratch):
        res = runner.invoke(cli, ["dump", str(given)])
        assert res.exit_code == 2, res.output
        # Bad files, not a bad command line: said as the forensics say it, no usage banner.
        assert res.stderr.startswith("dump: not a Kafka log segment: "), res.stderr
        _not_kafka(res.stderr, scratch / "build-0.log")
        assert res.stdout == ""
    line = scratch / "one-line.log"
    line.write_text("ok\n")
    res = runner.invoke(cli, ["dump", str(line)])
    assert res.exit_code == 2
    assert "fewer than a log entry's header" in res.stderr and "0 errors" not in res.stderr


def test_dump_keeps_exit_1_for_a_damaged_kafka_segment(tmp_path: Path) -> None:
    folder = tmp_path / "orders-0"
    folder.mkdir()
    with SegmentWriter(folder / "00000000000000000000.log") as w:
        w.write_batch([(b"k", b"v")])
        w.write_bytes(_batch()[:30])  # a torn write
    res = CliRunner().invoke(cli, ["dump", str(folder)])
    assert res.exit_code == 1, res.output
    assert res.stderr.splitlines()[-1] == (
        "1 file, 1 batch, 1 record, 1 error (1 segment error, 0 records not decoded), "
        "0 unknown records, 0 newer than our specs"
    )


@pytest.mark.parametrize("argv", FORENSICS, ids=" ".join)
def test_every_forensics_command_exits_2_on_a_folder_of_text(
    scratch: Path, argv: list[str]
) -> None:
    res = CliRunner().invoke(cli, [argv[0], str(scratch), *argv[1:]])
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith(f"{argv[0]}: not a Kafka log segment: ")
    _not_kafka(res.stderr, scratch / "build-0.log")


@pytest.mark.parametrize("argv", FORENSICS, ids=" ".join)
def test_a_text_file_in_a_partition_folder_of_a_log_dir_is_named(
    tmp_path: Path, argv: list[str]
) -> None:
    """A broker's log folder whose data partition holds a text file as its segment."""
    for name in ("__consumer_offsets-0", "orders-0"):
        (tmp_path / name).mkdir()
    with SegmentWriter(tmp_path / "__consumer_offsets-0" / "00000000000000000000.log") as w:
        w.write_batch([(b"k", b"v")])
    bad = tmp_path / "orders-0" / "00000000000000000000.log"
    bad.write_bytes(BUILD_LOG)
    res = CliRunner().invoke(cli, [argv[0], str(tmp_path), *argv[1:]])
    assert res.exit_code == 2, res.output
    _not_kafka(res.stderr, bad)


def test_the_demo_exits_2_before_starting_spark(scratch: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "spark_udfs.demo", "--input", str(scratch)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    last = proc.stderr.splitlines()[-1]
    assert last.startswith("python -m spark_udfs.demo: error: --input: not a Kafka log segment: ")
    _not_kafka(last, scratch / "build-0.log")
