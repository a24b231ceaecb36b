"""Internal-topic record decoding: real data files, vectors, KIP-915 cases, consumer protocol,
compacted views and the dump command."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from corpus import data_path
from vector_tools import load_vectors

from codegen.dumps import Codec, SegmentError, SegmentReader, SegmentWriter
from codegen.dumps.command import dump_command
from codegen.dumps.consumer_protocol import decode_assignment, decode_subscription
from codegen.dumps.coordinator import (
    CONSUMER_OFFSETS,
    COORDINATOR_TOPICS,
    SHARE_GROUP_STATE,
    TRANSACTION_STATE,
    coordinator_decoder,
    decode_batches,
    decode_records,
    record_types,
)
from codegen.dumps.decoded import ERROR, RECORD, TOMBSTONE, UNKNOWN
from codegen.dumps.dumplog_json import parse_record
from codegen.dumps.metadata import decode_metadata_records, metadata_decoder
from codegen.dumps.model import ControlType
from codegen.dumps.record_json import jackson_json, jackson_json_each
from codegen.dumps.views.compacted import compact
from generated.offset_commit_key import OffsetCommitKey
from generated.offset_commit_value import OffsetCommitValue

DATA = data_path("kafka-data")

# (file, records per tests/data/PROVENANCE.md, kinds)
OFFSETS_FILES = [
    (
        "aibulb/__consumer_offsets-0/00000000000000000000.log",
        28,
        {"GroupMetadata": 15, "OffsetCommit": 13},
    ),
    ("aibulb/__consumer_offsets-28/00000000000000000000.log", 4, {"GroupMetadata": 4}),
    (
        "ldi-poc/__consumer_offsets-6/00000000000000000000.log",
        13,
        {"OffsetCommit": 7, "GroupMetadata": 6},
    ),
    ("mscaldas-spooldir/__consumer_offsets-0/00000000000000000000.log", 6, {"OffsetCommit": 6}),
    (
        "mscaldas-spooldir/__consumer_offsets-13/00000000000000000000.log",
        5,
        {"GroupMetadata": 3, "OffsetCommit": 2},
    ),
]
METADATA_FILES = [
    ("ldi-poc/bootstrap.checkpoint", 3),
    ("ldi-poc/__cluster_metadata-0/00000000000000000000.log", 4929),
    ("aibulb/__cluster_metadata-0/00000000000000000000.log", 11372),
    ("aibulb/__cluster_metadata-0/00000000000000007259-0000000001.checkpoint", 60),
]


def _key(t: int, body: bytes) -> bytes:
    return t.to_bytes(2, "big", signed=True) + body


OC_KEY = _key(1, OffsetCommitKey(group="g", topic="t", partition=7).encode(0))


def _oc_value(offset: int, version: int = 3) -> bytes:
    v = OffsetCommitValue(offset=offset, leader_epoch=1, metadata="m", commit_timestamp=5)
    return version.to_bytes(2, "big") + v.encode(version)


# -- real files ------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "count", "names"), OFFSETS_FILES)
def test_offsets_files_decode_fully(path: str, count: int, names: dict[str, int]) -> None:
    errors: list[Any] = []
    recs = list(decode_records(DATA / path, errors=errors))
    assert not errors
    assert len(recs) == count
    assert all(r.kind in (RECORD, TOMBSTONE) for r in recs)
    assert Counter(r.name for r in recs) == names


@pytest.mark.parametrize(("path", "count"), METADATA_FILES)
def test_metadata_files_decode_fully(path: str, count: int) -> None:
    errors: list[Any] = []
    recs = list(decode_metadata_records(DATA / path, errors=errors))
    assert not errors
    assert len(recs) == count
    assert all(r.kind in (RECORD, "control") for r in recs), [r.error for r in recs if r.error][:3]


# -- vectors ---------------------------------------------------------------------------------

PREFIXED = "int16 version prefix + body"


# Vectors of a struct inside a message (``Message.Struct``) are record bodies' parts, not
# records: tests/test_vectors_codecs.py decodes them through their message.
_RECORD_VECTORS = [
    v
    for v in load_vectors("consumer_offsets", "transaction_state", "consumer_offsets_kip848")
    if "." not in v["message"]
]


@pytest.mark.parametrize("vec", _RECORD_VECTORS, ids=lambda v: v["id"])
def test_coordinator_vectors(vec: dict[str, Any]) -> None:
    from generated import MESSAGES

    data = bytes.fromhex(vec["hex"])
    name = vec["message"]
    expect = vec.get("expect") or {}
    cls = MESSAGES[name]
    body = data[2:] if vec["encoding"] == PREFIXED else data
    version = 0 if cls.SPEC_TYPE == "coordinator-key" else vec["version"]
    if vec.get("partial") or "no-tagged-fields" in vec["id"]:
        with pytest.raises(Exception):  # noqa: B017
            cls.decode(body, version)
        return
    obj, _ = cls.read(body, 0, version)
    got = obj.to_json(version)
    want = expect.get("formatter_json", {}).get("data")
    if isinstance(want, dict):
        assert got == want
    for k, v in expect.items():
        lower = k[:1].lower() + k[1:]
        if lower in got and not isinstance(v, dict):
            assert got[lower] == v


@pytest.mark.parametrize("vec", load_vectors("consumer_offsets_error"), ids=lambda v: v["id"])
def test_coordinator_error_vectors(vec: dict[str, Any]) -> None:
    from generated import MESSAGES

    data = bytes.fromhex(vec["hex"])
    dec = coordinator_decoder(CONSUMER_OFFSETS)
    name = vec["message"]
    if name.startswith("("):  # a raw record key
        rec = dec.decode(data, bytes(64) if data == b"" else None)
        expect = vec["expect"]
        if "unknownType" in expect:
            assert rec.kind == UNKNOWN and rec.record_type == expect["unknownType"]
        elif "error" in expect and "Could not read version" in expect["error"]:
            assert rec.kind == ERROR and rec.error == expect["error"]
        elif "error_prefix" in expect:
            assert rec.kind == ERROR and rec.error.startswith(expect["error_prefix"])
        elif data[:2] == b"\x00\x03":  # KIP-848 type 3 over an OffsetCommit body
            assert rec.kind == TOMBSTONE and rec.note and "left over" in rec.note
        else:
            assert rec.kind == ERROR
        return
    if name == "ConsumerGroupMetadataValue":
        key = _key(3, b"\x00\x03foo")
        rec = dec.decode(key, data)
        assert rec.kind == ERROR
        assert rec.error.startswith(vec["expect"]["error_prefix"])
        return
    base = name.split(".")[0]
    cls = MESSAGES[base]
    body = data[2:] if vec["encoding"] == PREFIXED else data
    version = vec["version"]
    if "." in name:
        from generated.group_metadata_value import MemberMetadata

        reader = cls._STRUCTS  # noqa: F841
        with pytest.raises(Exception):  # noqa: B017
            _read_member(MemberMetadata, body, version)
        return
    with pytest.raises(Exception):  # noqa: B017
        cls.decode(body, version)


def _read_member(struct: Any, body: bytes, version: int) -> Any:
    from generated import group_metadata_value as mod

    reader = getattr(mod, f"_read_MemberMetadata_v{min(version, 3)}", None)
    if reader is None:
        reader = next(getattr(mod, n) for n in dir(mod) if n.startswith("_read_MemberMetadata"))
    obj, end = reader(body, 0)
    if end != len(body):
        raise ValueError("trailing")
    from codegen.dumps.consumer_protocol import decode_assignment

    if obj.assignment and decode_assignment(obj.assignment).error:
        raise ValueError(decode_assignment(obj.assignment).error)
    return obj


@pytest.mark.parametrize(
    "vec",
    load_vectors("consumer_offsets_unknown_version", "transaction_state_unknown_version"),
    ids=lambda v: v["id"],
)
def test_unknown_version_vectors(vec: dict[str, Any]) -> None:
    """Kafka's formatter prints "unknown"; we never raise and say what happened."""
    data = bytes.fromhex(vec["hex"])
    topic = TRANSACTION_STATE if vec["category"].startswith("transaction") else CONSUMER_OFFSETS
    dec = coordinator_decoder(topic)
    if vec["message"].endswith("Key"):
        rec = dec.decode(data, None)
        # In the coordinator model the int16 is the record type, not a version.
        assert rec.kind in (UNKNOWN, ERROR, TOMBSTONE)
        if rec.kind == TOMBSTONE:
            assert rec.record_type == vec["version"]
    else:
        key = _key(0, b"\x00\x05TXNID") if topic == TRANSACTION_STATE else OC_KEY
        if vec["message"] == "GroupMetadataValue":
            key = _key(2, b"\x00\x01g")
        rec = dec.decode(key, data)
        assert rec.kind == RECORD and rec.newer_than_spec
        assert rec.value_version == vec["version"]


@pytest.mark.parametrize(
    "vec", load_vectors("consumer_offsets_from_segment"), ids=lambda v: v["id"]
)
def test_segment_vectors(vec: dict[str, Any]) -> None:
    key = bytes.fromhex(vec["hex"])
    value = None if vec.get("value_hex") is None else bytes.fromhex(vec["value_hex"])
    rec = coordinator_decoder(CONSUMER_OFFSETS).decode(key, value)
    inferred = vec["inferred"]
    assert rec.key is not None and rec.key.to_json(0) == inferred["key"]
    if value is None:
        assert rec.kind == TOMBSTONE
        return
    assert rec.kind == RECORD and rec.value_version == inferred["valueVersion"]
    if rec.members:
        for m, want in zip(rec.members, inferred["value"]["members"], strict=True):
            assert m.subscription.topics == want["subscriptionDecoded"]["data"]["Topics"]
            parts = want["assignmentDecoded"]["data"]["AssignedPartitions"]
            assert m.assignment.partitions == {p["Topic"]: p["Partitions"] for p in parts}


def test_redpanda_quirk_is_an_error_record() -> None:
    for vec in load_vectors("consumer_offsets_redpanda_quirk"):
        rec = coordinator_decoder(CONSUMER_OFFSETS).decode(
            _key(2, b"\x00\x01g"), bytes.fromhex(vec["hex"])
        )
        assert rec.kind == ERROR and rec.error


@pytest.mark.parametrize("vec", load_vectors("consumer_protocol"), ids=lambda v: v["id"])
def test_consumer_protocol_vectors(vec: dict[str, Any]) -> None:
    data = bytes.fromhex(vec["hex"])
    if vec["encoding"].startswith("body after"):
        data = vec["version"].to_bytes(2, "big") + data
    if vec["message"] == "ConsumerProtocolSubscription":
        sub = decode_subscription(data)
        assert sub.message is not None, sub.error
        info = vec.get("expect") or vec.get("inferred") or {}
        if "topics" in info:
            assert sub.topics == info["topics"]
        if "rackId" in (vec.get("inferred") or {}):
            assert sub.rack_id == vec["inferred"]["rackId"]
    else:
        asg = decode_assignment(data)
        assert asg.message is not None, asg.error
        info = (vec.get("expect") or {}).get("assignedPartitions") or (
            vec.get("inferred") or {}
        ).get("assignedPartitions")
        if info:
            assert asg.partitions == info


@pytest.mark.parametrize("vec", load_vectors("consumer_protocol_error"), ids=lambda v: v["id"])
def test_consumer_protocol_error_vectors(vec: dict[str, Any]) -> None:
    data = vec["version"].to_bytes(2, "big") + bytes.fromhex(vec["hex"])
    asg = decode_assignment(data)
    assert asg.message is None and asg.error and asg.raw == data


@pytest.mark.parametrize(
    "vec",
    load_vectors("cluster_metadata_from_segment", "cluster_metadata_error"),
    ids=lambda v: v["id"],
)
def test_metadata_vectors(vec: dict[str, Any]) -> None:
    rec = metadata_decoder().decode(bytes.fromhex(vec["hex"]))
    if vec["category"] == "cluster_metadata_error":
        prefix = vec["expect"]["error_message_prefix"]
        assert rec.kind in (ERROR, UNKNOWN)
        if "Unknown metadata id" in prefix:
            assert "Unknown metadata id" in (rec.error or "")
        else:
            assert (rec.error or "").startswith(prefix)
        return
    assert rec.kind == RECORD, rec.error
    assert rec.key.api_key == vec["inferred"]["apiKey"]  # type: ignore[union-attr]
    assert rec.value_version == vec["inferred"]["version"]


# -- KIP-915 ---------------------------------------------------------------------------------


def test_unknown_record_type_keeps_bytes() -> None:
    key, value = _key(99, b"\x00\x01g"), b"\x00\x00abc"
    rec = coordinator_decoder(CONSUMER_OFFSETS).decode(key, value, offset=5)
    assert (rec.kind, rec.record_type, rec.key_bytes, rec.value_bytes) == (
        UNKNOWN,
        99,
        key,
        value,
    )
    assert parse_record(rec, CONSUMER_OFFSETS) == (
        "Unknown record type 99 at offset 5, skipping.",
        None,
    )


def test_json_of_many_values_at_once_is_each_values_json() -> None:
    """dump-log writes a batch's values in one pass: the same text as one at a time, escapes
    (upper-case hex, as Jackson) included, and orjson's refusals left to the caller."""
    values = [
        {"metadata": 'tab\there \x01 \\u00e9 \u00e9 \u2028 "q"', "offset": 1},
        {"members": [{"id": "a\nb", "assignment": None}], "epoch": -1},
        {},
        "\x1f",
    ]
    assert jackson_json_each(values) == [jackson_json(v) for v in values]
    assert jackson_json_each(values)[3] == '"\\u001F"'
    assert jackson_json_each([]) == []
    with pytest.raises(TypeError):
        jackson_json_each([{"s": "\ud800"}])


def test_newer_flexible_version_keeps_unknown_tags() -> None:
    v4 = _oc_value(9, 4)
    # Replace the empty tag section with one unknown tag 7 of 2 bytes.
    newer = b"\x00\x07" + v4[2:-1] + b"\x01\x07\x02\xab\xcd"
    rec = coordinator_decoder(CONSUMER_OFFSETS).decode(OC_KEY, newer)
    assert rec.kind == RECORD and rec.newer_than_spec and rec.value_version == 7
    assert rec.value.offset == 9
    assert rec.value.unknown_tags == {7: b"\xab\xcd"}


def test_unknown_non_flexible_version_is_an_error_record() -> None:
    rec = coordinator_decoder(CONSUMER_OFFSETS).decode(_key(0, OC_KEY[2:]), _oc_value(1, 3))
    assert rec.kind == ERROR and "not flexible" in (rec.error or "")
    assert rec.key is not None


def test_all_consumer_offsets_types_known() -> None:
    types = record_types(CONSUMER_OFFSETS)
    assert types[0].name == "LegacyOffsetCommit" and types[1].name == "OffsetCommit"
    assert types[2].name == "GroupMetadata"
    assert {3, 5, 8, 10, 11, 16, 17, 23} <= set(types)
    assert set(record_types(SHARE_GROUP_STATE)) == {0, 1}
    assert set(record_types(TRANSACTION_STATE)) == {0}


# -- compacted view and CLI --------------------------------------------------------------------


def _offset_record(group: str, topic: str, part: int, offset: int | None) -> tuple[bytes, Any]:
    key = _key(1, OffsetCommitKey(group=group, topic=topic, partition=part).encode(0))
    if offset is None:
        return key, None
    value = OffsetCommitValue(offset=offset, metadata="x", commit_timestamp=offset)
    return key, b"\x00\x03" + value.encode(3)


def _synth_segment(path: Path, codec: Codec = Codec.NONE) -> None:
    from generated.consumer_group_member_metadata_key import ConsumerGroupMemberMetadataKey
    from generated.consumer_group_member_metadata_value import ConsumerGroupMemberMetadataValue
    from generated.consumer_group_metadata_key import ConsumerGroupMetadataKey
    from generated.consumer_group_metadata_value import ConsumerGroupMetadataValue
    from generated.group_metadata_key import GroupMetadataKey
    from generated.group_metadata_value import GroupMetadataValue, MemberMetadata

    sub = b"\x00\x00" + bytes.fromhex("00000001000174ffffffff")
    asg = (
        b"\x00\x00"
        + bytes.fromhex("000000010001740000000200000000000000010000ffffffff")[:-4]
        + (b"\xff\xff\xff\xff")
    )
    gm = GroupMetadataValue(
        protocol_type="consumer",
        generation=4,
        protocol="range",
        leader="m1",
        current_state_timestamp=1,
        members=[
            MemberMetadata(
                member_id="m1",
                client_id="c1",
                client_host="/h",
                rebalance_timeout=1,
                session_timeout=2,
                subscription=sub,
                assignment=asg,
            )
        ],
    )
    with SegmentWriter(path) as w:
        w.write_batch(
            [_offset_record("g", "t", 0, 10), _offset_record("g", "t", 1, 11)], codec=codec
        )
        w.write_batch(
            [(_key(2, GroupMetadataKey(group="g").encode(0)), b"\x00\x03" + gm.encode(3))],
            codec=codec,
        )
        w.write_batch([_offset_record("g", "t", 1, None)], codec=codec)  # tombstone
        w.write_batch(
            [_offset_record("g", "t", 0, 20)],
            producer_id=7,
            producer_epoch=0,
            transactional=True,
            codec=codec,
        )
        w.write_batch(
            [_offset_record("g", "t", 2, 30)],
            producer_id=8,
            producer_epoch=0,
            transactional=True,
            codec=codec,
        )
        w.write_control(ControlType.COMMIT, producer_id=7, producer_epoch=0)
        w.write_control(ControlType.ABORT, producer_id=8, producer_epoch=0)
        w.write_batch(
            [
                (
                    _key(3, ConsumerGroupMetadataKey(group_id="cg").encode(0)),
                    b"\x00\x00" + ConsumerGroupMetadataValue(epoch=5).encode(0),
                ),
                (
                    _key(5, ConsumerGroupMemberMetadataKey(group_id="cg", member_id="x").encode(0)),
                    b"\x00\x00"
                    + ConsumerGroupMemberMetadataValue(
                        client_id="cx",
                        client_host="/hx",
                        subscribed_topic_names=["t"],
                        server_assignor="uniform",
                    ).encode(0),
                ),
            ],
            codec=codec,
        )


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.LZ4, Codec.ZSTD])
def test_compacted_view(tmp_path: Path, codec: Codec) -> None:
    path = tmp_path / "00000000000000000000.log"
    _synth_segment(path, codec)
    view = compact(decode_batches(path))
    assert {k: o.offset for k, o in view.offsets.items()} == {("g", "t", 0): 20}
    classic = view.groups["g"]
    assert (classic.type, classic.state, classic.generation) == ("classic", "Stable", 4)
    assert classic.members["m1"].client_id == "c1"
    assert classic.members["m1"].assignors == ["range"]
    assert classic.members["m1"].subscribed_topics == ["t"]
    consumer = view.groups["cg"]
    assert (consumer.type, consumer.epoch, consumer.state) == ("consumer", 5, "Stable")
    assert consumer.members["x"].assignors == ["uniform"]


def test_cli_jsonl_table_compacted(tmp_path: Path) -> None:
    folder = tmp_path / "__consumer_offsets-3"
    folder.mkdir()
    _synth_segment(folder / "00000000000000000000.log")
    runner = CliRunner()
    res = runner.invoke(dump_command, [str(folder)])
    assert res.exit_code == 0, res.output
    lines = [json.loads(x) for x in res.stdout.splitlines()]
    assert lines[0]["key"] == {"type": "1", "data": {"group": "g", "topic": "t", "partition": 0}}
    assert "records" in res.stderr
    res = runner.invoke(dump_command, [str(folder), "--compacted", "--format", "table"])
    assert res.exit_code == 0 and "committed offsets" in res.stdout
    res = runner.invoke(dump_command, [str(folder), "--compacted"])
    rows = [json.loads(x) for x in res.stdout.splitlines()]
    assert {r["view"] for r in rows} == {"offset", "group"}
    res = runner.invoke(dump_command, ["--help"])
    assert "Examples" in res.stdout
    res = runner.invoke(
        dump_command,
        [str(folder / "00000000000000000000.log"), "--topic", "offsets", "--format", "dump-log"],
    )
    assert res.exit_code == 0 and "endTxnMarker: COMMIT" in res.stdout


# ------------------------------------------------------------------------------ partition folders


def _offset_commit(i: int) -> tuple[bytes, bytes]:
    key = b"\x00\x01" + OffsetCommitKey(group="g", topic="t", partition=i).encode(0)
    value = b"\x00\x03" + OffsetCommitValue(offset=i, commit_timestamp=i).encode(3)
    return key, value


def test_a_partition_folder_reads_its_segments_in_offset_order(tmp_path: Path) -> None:
    folder = tmp_path / "__consumer_offsets-3"
    folder.mkdir()
    for base, count in ((100, 2), (0, 3)):  # written out of order: read by name
        with SegmentWriter(folder / f"{base:020d}.log", base_offset=base) as w:
            w.write_batch([_offset_commit(base + i) for i in range(count)])
    (folder / f"{0:020d}.index").write_bytes(b"\x00" * 8)  # not segments: skipped
    (folder / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    errors: list[Any] = []
    records = list(decode_records(folder, errors=errors))
    assert [r.offset for r in records] == [0, 1, 2, 100, 101]
    assert [r.value.offset for r in records] == [0, 1, 2, 100, 101]
    assert errors == []
    names = [b.batch.file for b in decode_batches(str(folder)) if not isinstance(b, SegmentError)]
    assert [Path(n).name for n in names] == [f"{0:020d}.log", f"{100:020d}.log"]
    with (folder / f"{100:020d}.log").open("ab") as f:
        f.write(b"\x00" * 7)  # a torn tail in the second file: reported under its name
    list(decode_records(folder, errors=errors))
    assert [Path(e.file).name for e in errors] == [f"{100:020d}.log"]


def test_real_partition_folders_read_like_their_files() -> None:
    offsets = DATA / "aibulb" / "__consumer_offsets-28"
    (segment,) = offsets.glob("*.log")
    assert list(decode_records(offsets)) == list(decode_records(segment))
    metadata = DATA / "ldi-poc" / "__cluster_metadata-0"
    (log,) = metadata.glob("*.log")
    assert list(decode_metadata_records(metadata)) == list(decode_metadata_records(log))


def test_a_segment_reader_given_a_folder_says_what_reads_folders(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError, match="decode_records"):
        SegmentReader(tmp_path)


def test_cli_reads_a_broker_log_folder() -> None:
    log_dir = DATA / "ldi-poc"  # bootstrap.checkpoint, __cluster_metadata-0, __consumer_offsets-6
    runner = CliRunner()
    res = runner.invoke(dump_command, [str(log_dir)])
    assert res.exit_code == 0, res.output
    assert res.stderr.startswith("3 files")
    res = runner.invoke(dump_command, [str(log_dir), "--topic", "offsets"])
    assert res.exit_code == 0, res.output
    assert res.stderr.startswith("1 file") and "0 errors" in res.stderr
    lines = [json.loads(x) for x in res.stdout.splitlines()]
    expected = list(decode_records(log_dir / "__consumer_offsets-6"))
    assert [x["offset"] for x in lines] == [r.offset for r in expected]


def test_cli_says_when_a_folder_holds_nothing_to_read(tmp_path: Path) -> None:
    (tmp_path / "my-topic-0").mkdir()  # a partition folder without segments
    res = CliRunner().invoke(dump_command, [str(tmp_path)])
    assert res.exit_code == 2
    assert "holds no .log or .checkpoint files and its partition folders (my-topic-0)" in (
        res.output
    )
    assert "it holds my-topic-0" in res.output
    res = CliRunner().invoke(dump_command, [str(tmp_path / "my-topic-0")])
    assert res.exit_code == 2
    assert "and no partition folders" in res.output and "it holds nothing" in res.output


# ------------------------------------------------------------------------------ exit codes


TORN_TAIL = b"\x00" * 8 + b"\x00\x00\x01\x00" + b"\x01"
"""An entry header (offset 0, size 256) followed by 1 of the 256 bytes."""


def _damaged_partition(tmp_path: Path) -> tuple[Path, Path, int, int]:
    """A partition folder whose segment has a clean batch, a batch with a record that does not
    decode, a batch with a bad checksum and a torn tail: the folder, the segment and the
    positions of the second and third batches."""
    folder = tmp_path / "__consumer_offsets-0"
    folder.mkdir()
    seg = folder / "00000000000000000000.log"
    with SegmentWriter(seg) as w:
        w.write_batch([(OC_KEY, _oc_value(1))])
        second = w.write_batch([(OC_KEY, _oc_value(2)), (OC_KEY, b"\x00\x03\x00")])
        third = w.write_batch([(OC_KEY, _oc_value(3))])
    data = bytearray(seg.read_bytes())
    data[-1] ^= 0xFF  # in the last batch's records: its checksum no longer matches
    seg.write_bytes(bytes(data) + TORN_TAIL)
    return folder, seg, second, third


def test_cli_exit_code_is_0_for_a_clean_dump_with_unknown_record_types(tmp_path: Path) -> None:
    folder = tmp_path / "__consumer_offsets-0"
    folder.mkdir()
    with SegmentWriter(folder / "00000000000000000000.log") as w:
        w.write_batch([(OC_KEY, _oc_value(1)), (_key(99, b"x"), b"\x00\x00")])
    res = CliRunner().invoke(dump_command, [str(folder)])
    assert res.exit_code == 0, res.output
    assert [json.loads(x)["kind"] for x in res.stdout.splitlines()] == [RECORD, UNKNOWN]
    assert res.stderr == (
        "1 file, 1 batch, 2 records, 0 errors, 1 unknown record, 0 newer than our specs\n"
    )


def test_cli_jsonl_reports_each_error_and_exits_1(tmp_path: Path) -> None:
    folder, seg, second, third = _damaged_partition(tmp_path)
    tail = seg.stat().st_size - len(TORN_TAIL)
    res = CliRunner().invoke(dump_command, [str(folder)])
    assert res.exit_code == 1, res.output
    lines = [json.loads(x) for x in res.stdout.splitlines()]
    assert [x["kind"] for x in lines] == [RECORD, RECORD, ERROR, "segment-error", "segment-error"]
    error = lines[2]
    assert (error["offset"], error["file"], error["batchPosition"]) == (2, str(seg), second)
    assert error["error"].startswith("Could not read record with version 3 from value's buffer")
    crc = lines[3]
    assert {k: v for k, v in crc.items() if k != "error"} == {
        "kind": "segment-error",
        "file": str(seg),
        "position": third,
        "size": tail - third,
        "baseOffset": 3,
        "errorKind": "crc-mismatch",
        "topic": "__consumer_offsets",
        "partition": 0,
    }
    assert crc["error"].startswith("record batch is corrupt (stored crc = ")
    assert lines[4] == {
        "kind": "segment-error",
        "file": str(seg),
        "position": tail,
        "size": len(TORN_TAIL),
        "baseOffset": 0,
        "errorKind": "truncated-tail",
        "error": "entry of 256 bytes is cut short: only 1 bytes remain",
        "topic": "__consumer_offsets",
        "partition": 0,
    }
    stderr = res.stderr.splitlines()
    assert stderr[0].startswith(f"record error: {seg}@{second}: offset 2: Could not read")
    assert stderr[1].startswith(f"segment error: {seg}@{third}: crc-mismatch (base offset 3): ")
    assert stderr[2] == (
        f"segment error: {seg}@{tail}: truncated-tail (base offset 0): "
        "entry of 256 bytes is cut short: only 1 bytes remain"
    )
    assert stderr[3] == (
        "1 file, 2 batches, 3 records, 3 errors (2 segment errors, 1 record not decoded), "
        "0 unknown records, 0 newer than our specs"
    )


def test_cli_table_dump_log_and_compacted_report_errors_and_exit_1(tmp_path: Path) -> None:
    folder, seg, _, third = _damaged_partition(tmp_path)
    runner = CliRunner()
    res = runner.invoke(dump_command, [str(folder), "--format", "table"])
    assert res.exit_code == 1
    assert res.stdout.count("segment-error") == 2
    assert "crc-mismatch at " in res.stdout and "truncated-tail at " in res.stdout
    assert "error: Could not read record" in res.stdout
    res = runner.invoke(dump_command, [str(seg), "--format", "dump-log"])
    assert res.exit_code == 1
    assert "Error at offset 2, skipping. Could not read record with version 3" in res.stdout
    invalid = seg.stat().st_size - third
    assert res.stdout.splitlines()[-1] == f"Found {invalid} invalid bytes at the end of {seg.name}"
    assert res.stderr.splitlines()[-1] == (
        "1 file, 2 batches, 3 records, 2 errors (1 segment error, 1 record not decoded), "
        "0 unknown records, 0 newer than our specs"
    )
    res = runner.invoke(dump_command, [str(folder), "--compacted"])
    assert res.exit_code == 1
    kinds = [json.loads(x).get("kind") or json.loads(x)["view"] for x in res.stdout.splitlines()]
    # the group only committed offsets: it is listed, as the broker lists it
    assert kinds == [ERROR, "segment-error", "segment-error", "offset", "group"]
    res = runner.invoke(dump_command, [str(folder), "--compacted", "--format", "table"])
    assert res.exit_code == 1 and "errors" in res.stdout and "truncated-tail" in res.stdout


def test_cli_quiet_prints_nothing_on_stderr_but_still_exits_1(tmp_path: Path) -> None:
    folder, _, _, _ = _damaged_partition(tmp_path)
    res = CliRunner().invoke(dump_command, [str(folder), "-q"])
    assert res.exit_code == 1 and res.stderr == ""
    assert "segment-error" in res.stdout


def test_cli_batch_caps_are_options(tmp_path: Path) -> None:
    seg = tmp_path / "00000000000000000000.log"
    with SegmentWriter(seg) as w:
        w.write_batch([(OC_KEY, _oc_value(i)) for i in range(3)], codec=Codec.ZSTD)
    runner = CliRunner()
    args = [str(seg), "--topic", "offsets"]
    assert runner.invoke(dump_command, args).exit_code == 0
    res = runner.invoke(dump_command, [*args, "--max-batch-records", "2"])
    assert res.exit_code == 1
    (line,) = [json.loads(x) for x in res.stdout.splitlines()]
    assert (line["errorKind"], line["position"]) == ("too-many-records", 0)
    assert line["error"] == (
        "record count 3 is above the limit of 2 records per batch; "
        "raise max_batch_records (--max-batch-records) to read this batch"
    )
    res = runner.invoke(dump_command, [*args, "--max-batch-bytes", "64"])
    assert res.exit_code == 1 and json.loads(res.stdout)["errorKind"] == "too-large"
    res = runner.invoke(dump_command, [*args, "--format", "dump-log", "--max-batch-records", "2"])
    assert res.exit_code == 1 and "invalid bytes at the end" in res.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["missing.log"],
        ["{seg}", "--max-batch-records", "0"],
        ["{seg}", "--max-batch-bytes", "10"],
        ["{seg}", "--format", "xml"],
        ["{seg}", "--compacted", "--format", "dump-log"],
        ["{seg}", "--skip-record-metadata"],  # a dump-log option without --format dump-log
        ["{seg}", "--compacted"],  # a file outside any partition folder: read plain
    ],
)
def test_cli_usage_errors_exit_2(tmp_path: Path, args: list[str]) -> None:
    seg = tmp_path / "00000000000000000000.log"
    with SegmentWriter(seg) as w:
        w.write_batch([(OC_KEY, _oc_value(1))])
    res = CliRunner().invoke(dump_command, [a.format(seg=seg) for a in args])
    assert res.exit_code == 2, res.output
    assert "Error:" in res.output


def test_cli_help_documents_the_exit_codes() -> None:
    res = CliRunner().invoke(dump_command, ["--help"])
    text = " ".join(res.stdout.split())
    assert "Exit codes: 0 clean:" in text
    assert "1 damage: a segment error" in text
    assert "2 usage error:" in text
    assert "--max-batch-records" in text and "--max-batch-bytes" in text


@pytest.mark.parametrize("topic", sorted(COORDINATOR_TOPICS))
def test_jsonl_lines_are_the_record_objects(topic: str) -> None:
    """Each jsonl line (built a batch at a time, its fixed part once per key and version) is
    record_to_json's object followed by the file's and the batch's fields, in that order."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from strategies import coordinator_records

    from codegen.dumps import encode_control_batch, encode_record_batch
    from codegen.dumps.jsonl import JsonlLines
    from codegen.dumps.record_json import batch_json_fields, record_to_json

    fields = {"topic": topic, "partition": 0, "file": "f.log"}

    def pairs(line: bytes | str) -> list[tuple[str, Any]]:
        return json.loads(line, object_pairs_hook=list)  # type: ignore[no-any-return]

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(records=st.lists(coordinator_records(topic), min_size=1, max_size=12))
    def check(records: list[tuple[bytes | None, bytes | None]]) -> None:
        data = encode_record_batch(
            records * 2, timestamp=1_700_000_000_000, producer_id=7, transactional=True
        ) + encode_control_batch(ControlType.COMMIT, base_offset=len(records) * 2)
        lines = JsonlLines(topic, fields)
        for item in decode_batches(data, topic):
            assert not isinstance(item, SegmentError)
            tail = json.dumps({**fields, **batch_json_fields(item.batch)}, separators=(",", ":"))
            expected = [
                json.dumps(record_to_json(rec, topic, item.batch), separators=(",", ":"))[:-1]
                + ","
                + tail[1:]
                for rec in item.records
            ]
            # lines end at "\n" only: text may hold U+2028 and U+0085, which are not escaped
            got = lines.batch(item.batch, item.records).split(b"\n")[:-1]
            assert [pairs(line) for line in got] == [pairs(line) for line in expected]

    check()
