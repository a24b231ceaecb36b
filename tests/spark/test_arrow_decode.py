"""The Arrow decode core against the generated codecs (no Spark)."""

from __future__ import annotations

import random
import struct
import uuid

import pyarrow as pa
import pytest

from codegen.columnar.decode import decode_message_array
from codegen.columnar.schema import message_arrow_type
from codegen.columnar.topics import decode_topic_arrays
from generated import MESSAGES
from generated._spark_schemas import SCHEMAS
from generated.group_metadata_value import GroupMetadataValue, MemberMetadata
from generated.offset_commit_key import OffsetCommitKey as OCK
from generated.offset_commit_value import OffsetCommitValue as OCV

H = struct.Struct(">h")


def _values(n: int, seed: int = 1) -> list[bytes | None]:
    rnd = random.Random(seed)
    out: list[bytes | None] = []
    for i in range(n):
        v = rnd.choice([0, 1, 2, 3, 3, 4, 5])
        m = OCV(
            offset=i * 7,
            leader_epoch=-1 if v < 3 else i % 9,
            metadata=rnd.choice(["", "abc", "héllo"]),
            commit_timestamp=10_000 + i,
            expire_timestamp=99 if v == 1 else -1,
            topic_id=uuid.UUID(int=i) if v >= 4 else uuid.UUID(int=0),
        )
        out.append(H.pack(v) + m.encode(min(v, 4)))
    return out


def _expected(data: bytes, name: str = "OffsetCommitValue") -> dict[str, object]:
    cls = MESSAGES[name]
    v = H.unpack_from(data)[0]
    obj = cls.decode(data[2:], min(v, cls.HIGHEST_VERSION))
    return {f["name"]: getattr(obj, f["metadata"]["attr"]) for f in SCHEMAS[name]["fields"]}


def test_every_schema_has_nullable_fields_and_an_arrow_type() -> None:
    def walk(t: object) -> None:
        if isinstance(t, dict) and t.get("type") == "struct":
            for f in t["fields"]:
                assert f["nullable"] is True
                walk(f["type"])
        elif isinstance(t, dict) and t.get("type") == "array":
            assert t["containsNull"] is True
            walk(t["elementType"])

    for name, schema in SCHEMAS.items():
        walk(schema)
        assert message_arrow_type(name).num_fields == len(schema["fields"])


def test_offset_commit_values_match_the_generated_codec() -> None:
    values = _values(5000)
    values[10] = None
    d = decode_message_array(pa.array(values, pa.binary()), "OffsetCommitValue")
    assert d.errors == {}
    rows = d.values.to_pylist()
    assert rows[10] is None
    for data, row in zip(values, rows, strict=True):
        if data is None:
            continue
        exp = _expected(data)
        assert row is not None
        assert row["offset"] == exp["offset"]
        assert row["leaderEpoch"] == exp["leaderEpoch"]
        assert row["metadata"] == exp["metadata"]
        assert row["commitTimestamp"] == exp["commitTimestamp"]
        assert row["expireTimestamp"] == exp["expireTimestamp"]
    newer = [v is not None and H.unpack_from(v)[0] == 5 for v in values]
    assert d.newer.tolist() == newer


def test_malformed_rows_get_the_codec_error_and_a_null_struct() -> None:
    good = [v or b"" for v in _values(3)]
    bad_utf8 = H.pack(3) + struct.pack(">qih", 1, 2, 2) + b"\xff\xfe" + struct.pack(">q", 3)
    rows = [good[0], b"\x00", H.pack(3) + b"\x00" * 5, bad_utf8, good[1] + b"x", H.pack(-2), None]
    d = decode_message_array(pa.array(rows, pa.binary()), "OffsetCommitValue")
    assert set(d.errors) == {1, 2, 3, 4, 5}
    assert "version prefix" in d.errors[1]
    assert "field offset" in d.errors[2]
    assert "invalid UTF-8" in d.errors[3]
    assert "left after the message" in d.errors[4]
    assert "no version -2" in d.errors[5]
    out = d.values.to_pylist()
    assert out[0] is not None and out[6] is None
    assert all(out[i] is None for i in d.errors)


def test_keys_check_the_record_type() -> None:
    key = H.pack(1) + OCK(group="g", topic="t", partition=3).encode(0)
    other = H.pack(2) + b"\x00\x01g"
    d = decode_message_array(pa.array([key, other]), "OffsetCommitKey")
    assert d.values.to_pylist()[0] == {"group": "g", "topic": "t", "partition": 3}
    assert "record type 2 is not OffsetCommitKey" in d.errors[1]


def test_nested_fields_of_a_message() -> None:
    gmv = GroupMetadataValue
    member = MemberMetadata(
        member_id="m1", client_id="c", client_host="h", subscription=b"\x01", assignment=b""
    )
    data = H.pack(3) + gmv(
        protocol_type="consumer", generation=4, protocol="range", leader="m1", members=[member]
    ).encode(3)
    d = decode_message_array(pa.array([data]), "GroupMetadataValue")
    row = d.values.to_pylist()[0]
    assert row["generation"] == 4 and row["members"][0]["memberId"] == "m1"
    assert row["members"][0]["subscription"] == b"\x01"


def test_explicit_version_means_no_prefix() -> None:
    body = OCV(offset=5, metadata="x", commit_timestamp=1).encode(3)
    d = decode_message_array(pa.array([body]), "OffsetCommitValue", version=3)
    assert d.values.to_pylist()[0]["offset"] == 5


def test_topic_decoding_unions_and_flags() -> None:
    key = H.pack(1) + OCK(group="g", topic="t", partition=0).encode(0)
    value = _values(1)[0]
    unknown_key = H.pack(99) + b"zz"
    control = pa.array([False, False, False, True])
    keys = pa.array([key, key, unknown_key, b"\x00\x00\x00\x01"])
    values = pa.array([value, None, b"..", b"\x00\x00\x00\x00\x00\x07"])
    res = decode_topic_arrays("consumer_offsets", keys, values, control)
    assert res.errors == {}
    assert res.columns["recordName"].to_pylist() == ["OffsetCommit", "OffsetCommit", None, None]
    assert res.columns["isTombstone"].to_pylist() == [False, True, False, False]
    dk = res.columns["decodedKey"].to_pylist()
    assert dk[0]["OffsetCommitKey"]["group"] == "g" and dk[2] is None and dk[3] is None


@pytest.mark.parametrize("name", ["OffsetCommitValue", "OffsetCommitKey"])
def test_large_binary_input(name: str) -> None:
    data = (
        _values(2)
        if name == "OffsetCommitValue"
        else [H.pack(1) + OCK(group="g", topic="t", partition=1).encode(0)]
    )
    d = decode_message_array(pa.array(data, pa.large_binary()), name)
    assert d.errors == {} and d.values.null_count == 0


@pytest.mark.parametrize(
    ("family", "folder"),
    [
        ("consumer_offsets", "aibulb/__consumer_offsets-0"),
        ("cluster_metadata", "aibulb/__cluster_metadata-0"),
    ],
)
def test_topic_decoding_builds_only_the_wanted_columns(family: str, folder: str) -> None:
    from corpus import data_path

    from codegen.dumps.arrow import record_batches

    logs = sorted(data_path("kafka-data").joinpath(folder).glob("*.log"))
    batch = pa.Table.from_batches([rb for log in logs for rb in record_batches(log)])
    # and one record that fails: a cut OffsetCommitValue, a metadata frame of an unknown version
    bad_key = H.pack(1) + OCK(group="g", topic="t", partition=0).encode(0)
    bad = (bad_key, b"\x00\x03\x00") if family == "consumer_offsets" else (None, b"\x05")
    key = pa.concat_arrays([batch["key"].combine_chunks(), pa.array([bad[0]], pa.binary())])
    value = pa.concat_arrays([batch["value"].combine_chunks(), pa.array([bad[1]], pa.binary())])
    control = pa.concat_arrays([batch["isControl"].combine_chunks(), pa.array([False])])
    full = decode_topic_arrays(family, key, value, control)
    assert len(full.columns) >= 6 and full.columns["decodedValue"].null_count < len(batch)
    assert list(full.errors) == [len(batch)]
    for wanted in (
        frozenset(),
        frozenset({"decodedValue"}),
        frozenset({"recordName", "isTombstone"}),
    ):
        some = decode_topic_arrays(family, key, value, control, wanted=wanted)
        assert list(some.columns) == [name for name in full.columns if name in wanted]
        assert all(some.columns[name].equals(full.columns[name]) for name in some.columns)
        assert some.errors == full.errors  # every record is decoded whatever is built
