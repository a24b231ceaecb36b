"""The numpy/Arrow decode path against the generated readers, on valid and malformed rows."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegen.runtime import uvarint
from generated import MESSAGES
from generated._spark_schemas import VECTOR_LAYOUTS
from spark_udfs import arrow
from spark_udfs.arrow import Rows, decode_message_array, decode_rows

LAYOUTS = sorted((name, v) for name, by_version in VECTOR_LAYOUTS.items() for v in by_version)
PACK = {
    "bool": struct.Struct(">B"),
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "int32": struct.Struct(">i"),
    "int64": struct.Struct(">q"),
    "uint16": struct.Struct(">H"),
    "uint32": struct.Struct(">I"),
    "float64": struct.Struct(">d"),
}
RANGES = {
    "bool": (0, 1),
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}
TEXTS = ["", "a", "group-0001", "héllo", "€𝄞", "日本", "x" * 300]
BAD_UTF8 = [b"\xff", b"\xc3", b"a\xc3(", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\x80"]


@st.composite
def string_field(draw: st.DrawFn, nullable: bool) -> bytes:
    kind = draw(st.sampled_from(["text", "text", "text", "random", "bad_utf8", "null", "length"]))
    if kind == "text":
        data = draw(st.sampled_from(TEXTS) | st.text(max_size=12)).encode()
    elif kind == "random":
        data = draw(st.binary(max_size=8))
    elif kind == "bad_utf8":
        data = draw(st.sampled_from(BAD_UTF8))
    elif kind == "null":  # a null string, malformed where the field is not nullable
        return struct.pack(">h", draw(st.sampled_from([-1, -2, -32768])))
    else:  # a length that does not match the bytes that follow
        return struct.pack(">h", draw(st.integers(0, 40))) + draw(st.binary(max_size=6))
    return struct.pack(">h", len(data)) + data


@st.composite
def compact_string_field(draw: st.DrawFn, nullable: bool) -> bytes:
    kind = draw(st.sampled_from(["text", "text", "text", "random", "bad_utf8", "null", "length"]))
    if kind == "text":  # "x" * 300 has a two-byte length: the generated reader takes it
        data = draw(st.sampled_from(TEXTS) | st.text(max_size=12)).encode()
    elif kind == "random":
        data = draw(st.binary(max_size=8))
    elif kind == "bad_utf8":
        data = draw(st.sampled_from(BAD_UTF8))
    elif kind == "null":  # malformed where the field is not nullable
        return b"\x00"
    else:  # a length that does not match the bytes that follow, or an overlong uvarint
        return draw(st.sampled_from([b"\x85", b"\x80\x01", b"\x81\x00", b"\xff" * 6]))
    return uvarint(len(data) + 1) + data


@st.composite
def tagged_section(draw: st.DrawFn) -> bytes:
    """Mostly empty; else tags a spec may or may not know, some of them malformed."""
    kind = draw(st.sampled_from(["none", "none", "none", "tags", "bad"]))
    if kind == "none":
        return b"\x00"
    if kind == "bad":
        return draw(st.sampled_from([b"\x01", b"\x01\x00", b"\x01\x00\x05ab", b"\x80"]))
    tags = sorted(draw(st.sets(st.integers(0, 200), min_size=1, max_size=3)))
    out = uvarint(len(tags))
    for tag in tags:
        value = draw(st.binary(max_size=20))
        out += uvarint(tag) + uvarint(len(value)) + value
    return out


@st.composite
def body(draw: st.DrawFn, items: list[list[Any]]) -> bytes:
    out = b""
    for kind, _, nullable in items:
        if kind == "string":
            out += draw(string_field(nullable))
        elif kind == "compact_string":
            out += draw(compact_string_field(nullable))
        elif kind == "tags":
            out += draw(tagged_section())
        elif kind == "float64":
            out += PACK[kind].pack(draw(st.floats(allow_nan=False)))
        else:
            lo, hi = RANGES[kind]
            out += PACK[kind].pack(draw(st.integers(lo, hi)))
    mutation = draw(st.sampled_from(["none", "none", "none", "truncate", "append", "flip"]))
    if mutation == "truncate" and out:
        out = out[: draw(st.integers(0, len(out) - 1))]
    elif mutation == "append":
        out += draw(st.binary(min_size=1, max_size=4))
    elif mutation == "flip" and out:
        at = draw(st.integers(0, len(out) - 1))
        out = out[:at] + bytes([draw(st.integers(0, 255))]) + out[at + 1 :]
    return out


def reference(name: str, version: int, data: bytes | None) -> tuple[Any, str | None]:
    """What the generated reader makes of one row: (the struct as a dict, the error)."""
    if data is None:
        return None, None
    try:
        obj = MESSAGES[name].decode(data, version)
    except Exception as exc:
        return None, str(exc) or type(exc).__name__
    fields = arrow.message_arrow_type(name)
    convs = arrow._top_converters(name)
    return {
        f.name: getattr(obj, attr) if fn is None else fn(getattr(obj, attr))
        for f, (attr, fn) in zip(fields, convs, strict=True)
    }, None


def check_rows(name: str, version: int, bodies: list[bytes | None], arr: pa.Array) -> None:
    rows = Rows(arr)
    n = rows.n
    versions = np.full(n, version, np.int64)
    values, errors = decode_rows(name, rows, rows.starts, rows.ends, versions, rows.valid)
    expected = [reference(name, version, b) for b in bodies]
    assert values.to_pylist() == [v for v, _ in expected]
    assert errors == {i: e for i, (_, e) in enumerate(expected) if e is not None}
    # The vectorized pass alone flags every row the generated reader rejects (in rigid
    # versions exactly those; flexible ones also flag rows outside the fast case, see
    # fast_case) and reads the rows it does not flag as the generated reader does.
    structs, bad = arrow._vectorized(name, version, rows, rows.starts, rows.ends, ~rows.valid)
    flagged = bad.tolist()
    rejected = [e is not None for _, e in expected]
    if version not in MESSAGES[name].FLEXIBLE_VERSIONS:
        assert flagged == rejected
    else:
        assert all(f for f, r in zip(flagged, rejected, strict=True) if r)
        for b, f, r in zip(bodies, flagged, rejected, strict=True):
            if f and not r:
                assert b is not None and not fast_case(name, version, b)
    got = structs.to_pylist()
    assert [v for v, f in zip(got, flagged, strict=True) if not f] == [
        v for (v, _), f in zip(expected, flagged, strict=True) if not f
    ]


def fast_case(name: str, version: int, data: bytes) -> bool:
    """Whether a valid flexible body has only one-byte string lengths and no tagged fields."""
    _, end = MESSAGES[name].read(data, 0, version)
    pos = 0
    for kind, _, _ in VECTOR_LAYOUTS[name][version]["items"]:
        if kind in PACK:
            pos += PACK[kind].size
        elif kind == "string":
            pos += 2 + max(struct.unpack_from(">h", data, pos)[0], 0)
        elif kind == "compact_string":
            if data[pos] >= 0x80:
                return False
            pos += 1 + max(data[pos] - 1, 0)
        else:  # tags
            return data[pos] == 0 and pos + 1 == end
    raise AssertionError("a flexible layout ends with its tagged-field section")


@pytest.mark.parametrize(("name", "version"), LAYOUTS, ids=[f"{n}-v{v}" for n, v in LAYOUTS])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_vectorized_matches_the_generated_reader(name: str, version: int, data: Any) -> None:
    items = VECTOR_LAYOUTS[name][version]["items"]
    bodies = data.draw(st.lists(st.none() | body(items), min_size=1, max_size=30))
    check_rows(name, version, bodies, pa.array(bodies, pa.binary()))
    check_rows(name, version, bodies, pa.array(bodies, pa.large_binary()))
    padded = [b"junk", *bodies]  # a slice: offsets that do not start at 0
    check_rows(name, version, bodies, pa.array(padded, pa.binary()).slice(1))


def test_every_vectorized_layout_is_tested() -> None:
    assert len(LAYOUTS) >= 50 and ("OffsetCommitKey", 0) in LAYOUTS
    assert ("OffsetCommitValue", 4) in LAYOUTS and ("ConsumerGroupMetadataValue", 0) in LAYOUTS


def test_flexible_rows_in_the_fast_case_are_not_flagged() -> None:
    from generated.offset_commit_value import OffsetCommitValue

    values = [
        OffsetCommitValue(offset=i, leader_epoch=3, metadata="m" * (i % 90), commit_timestamp=i)
        for i in range(200)
    ]
    arr = pa.array([v.encode(4) for v in values], pa.binary())
    rows = Rows(arr)
    structs, bad = arrow._vectorized("OffsetCommitValue", 4, rows, rows.starts, rows.ends)
    assert not bad.any()
    assert [s["metadata"] for s in structs.to_pylist()] == [v.metadata for v in values]


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.none()
        | st.tuples(st.integers(-1, 6), body(VECTOR_LAYOUTS["OffsetCommitValue"][3]["items"])),
        max_size=40,
    )
)
def test_mixed_versions_and_prefixes_match_the_generated_reader(
    rows: list[tuple[int, bytes] | None],
) -> None:
    name = "OffsetCommitValue"
    cls = MESSAGES[name]
    values = [None if r is None else struct.pack(">h", r[0]) + r[1] for r in rows]
    d = decode_message_array(pa.array(values, pa.binary()), name)
    expected_values: list[Any] = []
    expected_errors: dict[int, str] = {}
    for i, r in enumerate(rows):
        if r is None:
            expected_values.append(None)
            continue
        v, data = r
        if v < cls.LOWEST_VERSION:
            expected_values.append(None)
            expected_errors[i] = f"{name} has no version {v} (valid versions: {cls.VALID_VERSIONS})"
            continue
        value, error = reference(name, min(v, cls.HIGHEST_VERSION), data)
        expected_values.append(value)
        if error is not None:
            expected_errors[i] = error
    assert d.values.to_pylist() == expected_values
    assert d.errors == expected_errors
    assert d.newer.tolist() == [r is not None and r[0] > cls.HIGHEST_VERSION for r in rows]


def test_strings_out_of_buffer_order_are_gathered_with_numpy() -> None:
    rows = Rows(pa.array([b"\x00\x02ab", b"\x00\x03xyz"], pa.binary()))
    pos = np.array([6, 2], np.int64)  # second row first: not in buffer order
    lengths = np.array([3, 2], np.int64)
    assert arrow._slices(rows, pos, lengths) is None
    assert arrow._strings(rows, pos, lengths, None).to_pylist() == ["xyz", "ab"]


def test_invalid_utf8_rows_are_found_among_many() -> None:
    texts = [b"ok"] * 1000
    for i in (0, 17, 500, 999):
        texts[i] = b"\xff"
    strings = pa.array(texts, pa.binary()).view(pa.string())
    assert sorted(arrow._invalid_utf8(strings)) == [0, 17, 500, 999]
