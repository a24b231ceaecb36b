"""The Spark topic functions against a per-row reference built on the pure-Python core.

Input rows are binary (key, value) pairs with an ``id`` and ``isControl`` column, taken from
a synthesized ``__consumer_offsets`` dump (``spark_udfs.synth``), hypothesis-drawn instances of
every spec of the topic at every version (``tests/strategies.py``), the real data files under
``tests/data/kafka-data`` and hand-made damage: tombstones, unknown record types, value
versions newer than the specs, truncated and corrupted keys and values, null keys.

For each row the expected output is what ``CoordinatorDecoder.decode`` /
``MetadataDecoder.decode`` make of it, converted to Spark's form (structs as dicts, uuids in
Kafka's base64url text, tagged fields as maps). Where the two layers differ by design, the
mapping says so:

- a row with no key and no value (coordinator) or no value (metadata) is a null input: every
  output column is null and it is not an error (``kafka-log`` gives such rows for batches that
  do not decode; docs/spark.md: "Null input gives a null struct and no error");
- an unknown record type is not an error (KIP-915), though the core keeps a reason for it;
- control records are not decoded and are not errors;
- bytes left over after a coordinator key or value are ignored by both (as Kafka does); the core
  also notes them, which Spark has no column for.
"""

from __future__ import annotations

import importlib
import math
import random
import struct
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from strategies import Options, instances

from codegen.dumps import SegmentReader
from codegen.dumps.coordinator import CONSUMER_OFFSETS, coordinator_decoder
from codegen.dumps.decoded import ERROR, RECORD, TOMBSTONE
from codegen.dumps.metadata import metadata_decoder
from codegen.dumps.model import SegmentError
from codegen.emit import load_messages
from codegen.ir import Message
from codegen.runtime.json_values import uuid_json
from generated import MESSAGES
from generated._spark_schemas import FOLDERS, SCHEMAS
from spark_udfs import functions
from spark_udfs.synth import write_consumer_offsets

from .conftest import REAL_DATA

pytestmark = pytest.mark.spark

H = struct.Struct(">h")
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = 3  # drawn instances per (spec, version)
COLUMNS = (
    "recordType",
    "recordName",
    "decodedKey",
    "decodedValue",
    "valueVersion",
    "isTombstone",
    "isNewerVersion",
)
Row = tuple[bytes | None, bytes | None, bool]  # key, value, isControl


# ------------------------------------------------------------------------------ input rows


def _draw(strategy: Any, n: int) -> list[Any]:
    """``n`` deterministic examples of a hypothesis strategy."""
    out: list[Any] = []

    @settings(
        max_examples=n,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(obj: Any) -> None:
        out.append(obj)

    collect()
    return out[:n]


def _ir() -> dict[str, Message]:
    return _IR


_IR = {m.name: m for m in load_messages([ROOT / "message_specs"])}


def _examples(ir: dict[str, Message], name: str, version: int) -> list[Any]:
    message = ir[name]
    module = importlib.import_module(MESSAGES[name].__module__)
    options = Options(large_strings=False, small_arrays=2)
    return _draw(instances(message, module, version, options), EXAMPLES)


@cache
def _specs(folder: str, spec_type: str) -> dict[int, str]:
    return {
        MESSAGES[n].API_KEY: n
        for n in sorted(MESSAGES)
        if FOLDERS[n] == folder and spec_type == MESSAGES[n].SPEC_TYPE
    }


def _damage(rnd: random.Random, data: bytes) -> Iterator[bytes]:
    """Truncations, a flipped byte, trailing garbage."""
    yield data[:1]
    yield data[:2]
    if len(data) > 3:
        yield data[: rnd.randrange(3, len(data))]
        at = rnd.randrange(2, len(data))
        yield data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]
    yield data + b"\x00\x07"


def _segment_rows(path: Path) -> list[Row]:
    out: list[Row] = []
    for item in SegmentReader(path).raw_batches():
        if isinstance(item, SegmentError):
            continue
        batch, rows = item
        out += [(key, value, batch.is_control) for _, _, key, value in rows]
    return out


def coordinator_rows(tmp: Path) -> list[Row]:
    rnd = random.Random(5)
    ir = _ir()
    keys = _specs("consumer_offsets", "coordinator-key")
    values = _specs("consumer_offsets", "coordinator-value")
    rows: list[Row] = []
    # a realistic dump: every record kind the synthesizer writes, transactions, LZ4 batches
    dump = write_consumer_offsets(tmp, records=2500, partitions=1, groups=25, seed=3)
    synth = _segment_rows(dump.files[0])
    rows += synth
    # real broker segments
    for f in sorted(REAL_DATA.glob("*/__consumer_offsets-*/*.log")):
        rows += _segment_rows(f)
    # every record type at every value version, tombstones, newer versions
    good: list[tuple[bytes, bytes]] = []
    for rtype, kname in keys.items():
        kcls = MESSAGES[kname]
        ks = [H.pack(rtype) + k.encode(0) for k in _examples(ir, kname, 0)]
        vname = values[rtype]
        vcls = MESSAGES[vname]
        for v in vcls._READERS:
            for key, obj in zip(ks * EXAMPLES, _examples(ir, vname, v), strict=False):
                good.append((key, H.pack(v) + obj.encode(v)))
        top = vcls.HIGHEST_VERSION
        for newer in (top + 1, top + 9):
            obj = _examples(ir, vname, top)[0]
            good.append((ks[0], H.pack(newer) + obj.encode(top)))
        rows.append((ks[0], None, False))
        assert rtype == kcls.API_KEY
    rows += [(k, v, False) for k, v in good]
    # damaged keys and values, null keys, unknown types, odd version prefixes
    for key, value in rnd.sample(good, 40) + rnd.sample([(k, v) for k, v, _ in synth if k], 20):
        rows += [(k, value, False) for k in _damage(rnd, key)]
        if value is not None:
            rows += [(key, v, False) for v in _damage(rnd, value)]
            rows += [(key, b"", False), (key, H.pack(-2) + value[2:], False)]
            rows += [(key, H.pack(-1) + value[2:], False)]
            rows += [(None, value, False), (b"", value, False)]
            rows += [(H.pack(t) + key[2:], value, False) for t in (99, 4000, -2, -1)]
            rows += [(H.pack(t) + key[2:], None, False) for t in (99, -3)]
        rows.append((key[:1], None, False))
    rows += [(None, None, False), (None, None, True), (b"\x00\x01", None, True)]
    # a block of one value version (the vectorized path, decoded in place), a few bad rows in it
    ock = _specs("consumer_offsets", "coordinator-key")[1]
    block: list[Row] = []
    for i in range(1500):
        key = H.pack(1) + MESSAGES[ock](group=f"g{i % 7}", topic="t", partition=i % 5).encode(0)
        value = H.pack(3) + MESSAGES["OffsetCommitValue"](
            offset=i, leader_epoch=i % 3 - 1, metadata="é" * (i % 4), commit_timestamp=i
        ).encode(3)
        block.append((key, value, False))
    block[10] = (block[10][0], block[10][1][:9], False)
    block[20] = (block[20][0], None, False)
    block[30] = (block[30][0][:5], block[30][1], False)
    block[40] = (block[40][0], block[40][1][:-1] + b"\xff", False)  # invalid UTF-8 (metadata)
    block[50] = (None, None, False)
    return rows + block


def _frame(api: int, version: int) -> bytes:
    out = bytearray([1])
    for v in (api, version):
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
    return bytes(out)


def metadata_rows() -> list[Row]:
    rnd = random.Random(9)
    ir = _ir()
    rows: list[Row] = []
    noops = 0
    for f in sorted(REAL_DATA.glob("*/__cluster_metadata-0/*")) + sorted(
        REAL_DATA.glob("*/*.checkpoint")
    ):
        if f.suffix not in (".log", ".checkpoint"):
            continue
        for key, value, control in _segment_rows(f):
            noop = value is not None and value[1:2] == b"\x14"  # NoOpRecord, api key 20
            noops += noop
            if not noop or noops % 200 == 0:
                rows.append((key, value, control))
    good: list[bytes] = []
    for api, name in _specs("cluster_metadata", "metadata").items():
        cls = MESSAGES[name]
        for v in cls._READERS:
            good += [_frame(api, v) + obj.encode(v) for obj in _examples(ir, name, v)]
        top = cls.HIGHEST_VERSION
        good.append(_frame(api, top + 1) + _examples(ir, name, top)[0].encode(top))
    rows += [(None, v, False) for v in good]
    for value in rnd.sample(good, 40):
        rows += [(None, v, False) for v in _damage(rnd, value)]
        rows.append((None, b"\x00" + value[1:], False))  # frame version 0
        rows.append((None, b"\x02" + value[1:], False))  # unknown frame version
        rows.append((b"k", value, False))  # a key is ignored
    rows += [(None, _frame(900, 0) + b"\x00", False), (None, b"\x01\x80", False)]
    rows += [(None, b"", False), (None, None, False), (None, b"\x00\x00", True)]
    return rows


# ------------------------------------------------------------------------------ reference


def _plain(value: Any, typ: Any, meta: dict[str, Any]) -> Any:
    """A decoded Python value as Spark gives it back (``Row.asDict(recursive=True)``)."""
    if value is None:
        return None
    kind = meta.get("kafkaType", "")
    if kind == "uuid":
        return uuid_json(value)
    if kind == "tagged":  # null when there are none (docs/spark.md)
        return {int(k): bytes(v) for k, v in value.items()} or None
    if isinstance(typ, dict) and typ.get("type") == "struct":
        return _struct(value, typ)
    if isinstance(typ, dict) and typ.get("type") == "array":
        element = typ["elementType"]
        return [_plain(x, element, {"kafkaType": meta.get("elementType", "")}) for x in value]
    return _scalar(value)


def _scalar(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return value


def _struct(obj: Any, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        f["name"]: _plain(getattr(obj, f["metadata"]["attr"]), f["type"], f["metadata"])
        for f in schema["fields"]
    }


def _union(specs: dict[int, str], name: str | None, obj: Any) -> dict[str, Any] | None:
    if name is None:
        return None
    out: dict[str, Any] = dict.fromkeys(sorted(specs.values()))
    out[name] = _struct(obj, SCHEMAS[name])
    return out


def _spark_value(value: Any) -> Any:
    """A value of a collected Row, with bytes and NaN as the reference has them."""
    if isinstance(value, dict):
        return {k: _spark_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_spark_value(v) for v in value]
    return _scalar(value)


Expected = dict[str, Any]


def expected_coordinator(row: Row) -> Expected:
    key, value, control = row
    keys = _specs("consumer_offsets", "coordinator-key")
    values = _specs("consumer_offsets", "coordinator-value")
    nothing = dict.fromkeys(COLUMNS) | {"isTombstone": False, "isNewerVersion": False}
    if control or (key is None and value is None):
        return nothing | {"error": False, "leftover": False}
    rec = coordinator_decoder(CONSUMER_OFFSETS).decode(key, value)
    version = None  # the core's -1 means "none", but -1 is also a version one can read
    if rec.key is not None and value is not None and len(value) >= 2:
        version = H.unpack_from(value)[0]
        assert rec.value_version in (-1, version)
    out = nothing | {
        "recordType": None if key is None or len(key) < 2 else rec.record_type,
        "recordName": rec.name or None,
        "valueVersion": version,
        "isNewerVersion": rec.newer_than_spec,
        "isTombstone": rec.kind == TOMBSTONE,
        "error": rec.kind == ERROR,
    }
    if rec.kind in (RECORD, TOMBSTONE):
        assert rec.key is not None
        out["decodedKey"] = _union(keys, rec.key.SPEC_NAME, rec.key)
    if rec.kind == RECORD:
        out["decodedValue"] = _union(values, type(rec.value).SPEC_NAME, rec.value)
    # Bytes after a key or value are ignored, as Kafka does (the core notes them).
    out["leftover"] = rec.note is not None and "left over" in rec.note
    return out


def expected_metadata(row: Row) -> Expected:
    _, value, control = row
    specs = _specs("cluster_metadata", "metadata")
    nothing = dict.fromkeys(COLUMNS) | {"isTombstone": False, "isNewerVersion": False}
    del nothing["decodedKey"]
    if control or value is None:
        return nothing | {"error": False, "leftover": False}
    rec = metadata_decoder().decode(value)
    name = specs.get(rec.record_type)
    if name is not None:
        assert rec.name == name  # both name a record after its spec (docs/naming.md)
    out = nothing | {
        "recordType": None if rec.record_type == -1 else rec.record_type,
        "recordName": name,
        "valueVersion": None if rec.value_version == -1 else rec.value_version,
        "isNewerVersion": rec.newer_than_spec,
        "error": rec.kind == ERROR,
        "leftover": False,
    }
    if rec.kind == RECORD:
        out["decodedValue"] = _union(specs, name, rec.value)
    return out


# ------------------------------------------------------------------------------ comparison


def _input(spark: Any, rows: list[Row]) -> Any:
    data = [(i, k, v, c) for i, (k, v, c) in enumerate(rows)]
    return spark.createDataFrame(data, "id long, key binary, value binary, isControl boolean")


def _compare(
    spark: Any,
    rows: list[Row],
    decode: Callable[..., Any],
    reference: Callable[[Row], Expected],
) -> list[Expected]:
    df = _input(spark, rows)
    out = decode(df, mode="PERMISSIVE")
    got = [r.asDict(recursive=True) for r in out.collect()]
    assert len(got) == len(rows)
    assert [g["id"] for g in got] == list(range(len(rows)))
    expected = [reference(r) for r in rows]
    wrong: list[str] = []
    for i, (exp, g) in enumerate(zip(expected, got, strict=True)):
        row = rows[i]
        assert (g["key"], g["value"], g["isControl"]) == row
        have = {c: _spark_value(g[c]) for c in exp if c not in ("error", "leftover")}
        have["error"] = g["_decode_error"] is not None
        have["leftover"] = exp["leftover"]
        if have["error"]:
            assert g["_decode_error"].strip()
        if have != exp:
            diff = {c: (exp[c], have[c]) for c in exp if exp[c] != have[c]}
            wrong.append(f"row {i} key={row[0]!r:.60} value={row[1]!r:.60}: {diff!r:.600}")
    assert not wrong, f"{len(wrong)} row(s) differ from the reference:\n" + "\n".join(wrong[:15])
    return expected


def _failfast(spark: Any, rows: list[Row], expected: list[Expected], decode: Any) -> None:
    good = [r for r, e in zip(rows, expected, strict=True) if not e["error"]]
    ok = decode(_input(spark, good)).select("id", *COLUMNS[:2]).collect()
    assert len(ok) == len(good)
    bad = next(i for i, e in enumerate(expected) if e["error"])
    with pytest.raises(Exception) as info:
        decode(_input(spark, [*good[:50], rows[bad], *good[50:100]])).write.format("noop").mode(
            "overwrite"
        ).save()
    assert "MALFORMED_KAFKA_RECORD" in str(info.value)


def test_consumer_offsets_match_the_reference(spark: Any, tmp_path: Path) -> None:
    rows = coordinator_rows(tmp_path)
    expected = _compare(spark, rows, functions.decode_consumer_offsets, expected_coordinator)
    names = {e["recordName"] for e in expected if e["decodedValue"] is not None}
    assert names == {
        n[: -len("Key")] for n in _specs("consumer_offsets", "coordinator-key").values()
    }
    assert any(e["isTombstone"] for e in expected)
    assert any(e["isNewerVersion"] and e["decodedValue"] for e in expected)
    assert any(e["error"] for e in expected)
    assert any(e["leftover"] and e["decodedValue"] for e in expected)
    _failfast(spark, rows, expected, functions.decode_consumer_offsets)


def test_cluster_metadata_matches_the_reference(spark: Any) -> None:
    rows = metadata_rows()
    expected = _compare(spark, rows, functions.decode_cluster_metadata, expected_metadata)
    names = {e["recordName"] for e in expected if e["decodedValue"] is not None}
    assert names == set(_specs("cluster_metadata", "metadata").values())
    assert any(e["isNewerVersion"] and e["decodedValue"] for e in expected)
    _failfast(spark, rows, expected, functions.decode_cluster_metadata)
