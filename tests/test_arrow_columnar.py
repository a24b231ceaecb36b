"""The engine's columnar decoder (``_engine.columns`` through ``codegen.columnar.decode``) against the
reference: the generated ``decode`` row by row (``arrow._generic``) on the pure backend.

For every shipped message and the ``native_shapes`` case spec, at every version, batches of
Hypothesis-built objects encoded by the pure codec, with null rows, mutated and truncated rows
and random bytes among them, decode to the same struct values (floats by their bits), the
same nulls in every column and the same error text per row, as binary and large binary
arrays, sliced (a non-zero array offset), with bytes after the message (``trailing_ok``) and
with several versions in one batch. The engine is compiled for the session into the tmp dir
(``compiled_native``); the test needs no pyspark.

``SPECGEN_NATIVE_EXAMPLES`` sets the examples per (message, version) (default 8).
"""

from __future__ import annotations

import importlib
import struct
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from corpus import NATIVE_SHAPES, corpus_settings, native_corpora, native_params
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import instances

from codegen.columnar import decode as arrow
from codegen.columnar.decode import Rows, decode_message_array
from codegen.columnar.package import codecs
from codegen.ir import Message
from codegen.runtime import use_backend
from codegen.runtime.backends import native_readers

SETTINGS = corpus_settings("SPECGEN_NATIVE_EXAMPLES", 8)
PAIRS = native_params()


@pytest.fixture(scope="session")
def engine(compiled_native: Callable[[str], ModuleType]) -> ModuleType:
    """The engine, compiled for this session (this source, not a stale in-place build)."""
    return compiled_native("_engine")


@pytest.fixture(autouse=True)
def pure_backend() -> Iterator[None]:
    """The reference reads (and the errors of refused rows) come from the pure codec."""
    use_backend("pure")
    yield
    use_backend(None)


@pytest.fixture(scope="session")
def packages(codec_package: Callable[[str, list[Path]], ModuleType]) -> dict[str, str]:
    shapes = codec_package("columnar_shapes_codecs", [NATIVE_SHAPES])
    return {"shipped": "generated", "shapes": shapes.__name__}


def message_of(corpus: str, name: str) -> Message:
    return {m.name: m for m in native_corpora()[corpus]}[name]


def class_of(package: str, message: Message) -> Any:
    return getattr(importlib.import_module(f"{package}.{message.module}"), message.name)


# ------------------------------------------------------------------------------ comparing


def canonical(value: Any) -> Any:
    """Struct values comparable exactly: floats by their bits (NaN included)."""
    if isinstance(value, dict):
        return {k: canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    if isinstance(value, tuple):
        return tuple(canonical(v) for v in value)
    if isinstance(value, float):
        return ("float", struct.pack(">d", value))
    return value


def nulls(values: pa.Array) -> list[list[bool]]:
    """Validity of the structs and of each top-level column."""
    structs = values.cast(values.type) if values.offset else values
    return [structs.is_valid().to_pylist()] + [
        structs.field(k).is_valid().to_pylist() for k in range(structs.type.num_fields)
    ]


def reference(
    package: str, name: str, arr: pa.Array, versions: list[int], trailing_ok: bool = False
) -> tuple[pa.Array, dict[int, str]]:
    """The generated decode, row by row (the pure backend is active)."""
    rows = Rows(arr)
    versions_arr = np.asarray(versions, np.int64)
    return arrow.decode_rows(
        name,
        rows,
        rows.starts,
        rows.ends,
        versions_arr,
        rows.valid,
        trailing_ok=trailing_ok,
        package=package,
    )


def columnar(
    engine: ModuleType,
    cls: Any,
    package: str,
    name: str,
    arr: pa.Array,
    versions: list[int],
    trailing_ok: bool = False,
) -> tuple[pa.Array, dict[int, str]]:
    """The engine's columnar decoder, with readers made as the native backend makes them."""
    wanted = {v: cls._NATIVE_TABLES[v] for v in set(versions)}
    readers, _ = native_readers(engine, cls._NATIVE_CLASSES, wanted)
    rows = Rows(arr)
    return arrow.decode_native(
        engine,
        readers,
        name,
        rows,
        rows.starts,
        rows.ends,
        np.asarray(versions, np.int64),
        rows.valid,
        trailing_ok=trailing_ok,
        package=package,
    )


def assert_same(
    engine: ModuleType,
    cls: Any,
    package: str,
    name: str,
    arr: pa.Array,
    versions: list[int],
    trailing_ok: bool = False,
) -> tuple[pa.Array, dict[int, str]]:
    got, got_errors = columnar(engine, cls, package, name, arr, versions, trailing_ok)
    want, want_errors = reference(package, name, arr, versions, trailing_ok)
    assert got.type == want.type
    assert got_errors == want_errors
    assert canonical(got.to_pylist()) == canonical(want.to_pylist())
    assert nulls(got) == nulls(want)
    got.validate(full=True)
    return got, got_errors


# ------------------------------------------------------------------------------ batches


def mutations(data: bytes) -> st.SearchStrategy[bytes]:
    index = st.integers(0, max(len(data) - 1, 0))
    byte = st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF, 0xFE, 0x81]) | st.integers(0, 255)
    flip = st.tuples(index, byte).map(lambda t: data[: t[0]] + bytes([t[1]]) + data[t[0] + 1 :])
    insert = st.tuples(index, byte).map(lambda t: data[: t[0]] + bytes([t[1]]) + data[t[0] :])
    delete = index.map(lambda i: data[:i] + data[i + 1 :])
    truncate = st.integers(0, max(len(data) - 1, 0)).map(lambda i: data[:i])
    return st.one_of(flip, insert, delete, truncate) if data else st.binary(max_size=4)


@st.composite
def batch(draw: st.DrawFn, message: Message, module: ModuleType, version: int) -> list[Any]:
    """Rows of one version: encoded objects, some mutated or truncated, nulls, random bytes."""
    out: list[bytes | None] = []
    for _ in range(draw(st.integers(1, 6), label="rows")):
        kind = draw(st.sampled_from(["value", "value", "mutated", "null", "random"]))
        if kind == "null":
            out.append(None)
        elif kind == "random":
            out.append(draw(st.binary(max_size=40), label="random"))
        else:
            wire = draw(instances(message, module, version), label="object").encode(version)
            out.append(wire if kind == "value" else draw(mutations(wire), label="mutated"))
    return out


def shapes(bodies: list[bytes | None]) -> Iterator[pa.Array]:
    """The same rows as binary, large binary and a slice with a non-zero offset."""
    yield pa.array(bodies, pa.binary())
    yield pa.array(bodies, pa.large_binary())
    yield pa.array([b"junk", None, *bodies, b"more"], pa.binary()).slice(2, len(bodies))


@pytest.mark.parametrize(("corpus", "name", "version"), PAIRS)
@SETTINGS
@given(data=st.data())
def test_columnar_decoder_matches_the_generated_decode(
    engine: ModuleType,
    packages: dict[str, str],
    corpus: str,
    name: str,
    version: int,
    data: st.DataObject,
) -> None:
    package = packages[corpus]
    message = message_of(corpus, name)
    cls = class_of(package, message)
    module = sys.modules[cls.__module__]
    bodies = data.draw(batch(message, module, version), label="bodies")
    for arr in shapes(bodies):
        assert_same(engine, cls, package, name, arr, [version] * len(bodies))
    # Bytes after the message: refused, or ignored with trailing_ok.
    suffixed = [None if b is None else b + b"\x00\x01" for b in bodies]
    for trailing_ok in (False, True):
        assert_same(
            engine, cls, package, name, pa.array(suffixed), [version] * len(bodies), trailing_ok
        )


@pytest.mark.parametrize("name", ["OffsetCommitValue", "ConsumerGroupMemberMetadataValue"])
@SETTINGS
@given(data=st.data())
def test_several_versions_in_one_batch(
    engine: ModuleType, packages: dict[str, str], name: str, data: st.DataObject
) -> None:
    message = message_of("shipped", name)
    cls = class_of("generated", message)
    module = sys.modules[cls.__module__]
    all_versions = message.valid_versions.versions()
    bodies: list[bytes | None] = []
    versions: list[int] = []
    for _ in range(data.draw(st.integers(2, 12), label="rows")):
        version = data.draw(st.sampled_from(all_versions), label="version")
        bodies += data.draw(batch(message, module, version), label="bodies")
        versions += [version] * (len(bodies) - len(versions))
    for arr in shapes(bodies):
        assert_same(engine, cls, "generated", name, arr, versions)


def test_every_kind_of_column_is_written_natively(packages: dict[str, str]) -> None:
    """The shipped and case messages cover each atomic column kind the engine fills."""
    kinds = {
        column.kind
        for package in packages.values()
        for name in codecs(package).messages
        for column in arrow._columns(name, package)
    }
    assert kinds == {
        "int8",
        "int16",
        "int32",
        "int64",
        "float64",
        "bool",
        "string",
        "binary",
        "object",
        "tagged",
    }


# ------------------------------------------------------------------------------ cases


def ocv(engine: ModuleType) -> tuple[Any, Callable[..., Any]]:
    from generated.offset_commit_value import OffsetCommitValue

    def check(bodies: list[bytes | None], version: int = 3, **kw: Any) -> Any:
        arr = pa.array(bodies, pa.binary())
        return assert_same(
            engine,
            OffsetCommitValue,
            "generated",
            "OffsetCommitValue",
            arr,
            [version] * len(bodies),
            **kw,
        )

    return OffsetCommitValue, check


def test_strings_and_uuids_are_the_codec_text(engine: ModuleType) -> None:
    import uuid

    cls, check = ocv(engine)
    texts = ["", "a", "héllo", "€𝄞", "日本", "x" * 300, "ascii-only-and-long-" * 9]
    topic = uuid.UUID("7f3c1a2b-0000-4000-8000-00000000abcd")
    bodies = [cls(offset=i, metadata=t, topic_id=topic).encode(4) for i, t in enumerate(texts)]
    got, errors = check(bodies, 4)
    assert not errors
    assert [r["metadata"] for r in got.to_pylist()] == texts
    assert {r["topicId"] for r in got.to_pylist()} == {"fzwaKwAAQACAAAAAAACrzQ"}


@pytest.mark.parametrize(
    "bad",
    [
        b"\xff",
        b"\xc3",
        b"a\xc3(",
        b"\xed\xa0\x80",
        b"\xc0\xaf",
        b"\xf4\x90\x80\x80",
        b"\x80",
        b"\xe0\x80\x80",
        b"\xf0\x80\x80\x80",
        b"\xf5\x80\x80\x80",
        b"ok\xe2\x82",
    ],
)
def test_invalid_utf8_is_refused_with_the_codec_error(engine: ModuleType, bad: bytes) -> None:
    cls, check = ocv(engine)
    good = cls(offset=1, metadata="fine").encode(3)
    raw = struct.pack(">qih", 5, 1, len(bad)) + bad + struct.pack(">q", 7)
    got, errors = check([good, raw, good])
    assert list(errors) == [1] and "invalid UTF-8" in errors[1]
    assert got.is_valid().to_pylist() == [True, False, True]


def test_valid_utf8_at_every_width_is_accepted(engine: ModuleType) -> None:
    cls, check = ocv(engine)
    texts = [
        "\x7f",
        "\x80",
        "\u07ff",
        "\u0800",
        "\ud7ff",
        "\ue000",
        "\uffff",
        "\U00010000",
        "\U0010ffff",
        "a" * 7 + "é",
        "é" + "a" * 15,
    ]
    got, errors = check([cls(metadata=t).encode(3) for t in texts])
    assert not errors and [r["metadata"] for r in got.to_pylist()] == texts


def test_null_rows_and_all_null_batches(engine: ModuleType) -> None:
    cls, check = ocv(engine)
    got, errors = check([None, cls(offset=3).encode(3), None])
    assert not errors and got.null_count == 2 and got.to_pylist()[1]["offset"] == 3
    got, errors = check([None, None])
    assert not errors and got.null_count == 2


def test_empty_rows_and_empty_batch(engine: ModuleType) -> None:
    _, check = ocv(engine)
    _, errors = check([b"", b""])
    assert set(errors) == {0, 1} and "OffsetCommitValue v3" in errors[0]
    got, errors = check([])
    assert len(got) == 0 and not errors


def test_tagged_fields_at_the_top_level(engine: ModuleType) -> None:
    """Unknown tags fill the map column; known ones replace their default; a duplicate tag
    keeps the last value, as the codec does."""
    from codegen.runtime.wire import uvarint

    cls, check = ocv(engine)
    body = cls(offset=9, metadata="m").encode(4)[:-1]  # without its empty tagged section
    unknown = uvarint(2) + uvarint(7) + uvarint(2) + b"ab" + uvarint(9) + uvarint(0)
    duplicate = uvarint(2) + uvarint(7) + uvarint(1) + b"a" + uvarint(7) + uvarint(1) + b"b"
    got, errors = check([body + unknown, body + duplicate, body + b"\x01\x07\x05ab"], 4)
    assert list(errors) == [2]
    rows = got.to_pylist()
    assert rows[0]["_unknown_tagged_fields"] == [(7, b"ab"), (9, b"")]
    assert rows[1]["_unknown_tagged_fields"] == [(7, b"b")]


def test_row_bounds_outside_the_data_are_refused(engine: ModuleType) -> None:
    cls, _ = ocv(engine)
    readers, _ = native_readers(engine, cls._NATIVE_CLASSES, {3: cls._NATIVE_TABLES[3]})
    kinds = tuple((c.attr, c.kind) for c in arrow._columns("OffsetCommitValue"))
    data = cls(offset=1).encode(3)
    one = np.zeros(1, np.int32)
    for start, end in [(0, len(data) + 1), (-1, 4), (5, 4)]:
        starts, ends = np.array([start], np.int64), np.array([end], np.int64)
        with pytest.raises(ValueError, match="columns: row 0"):
            engine.columns((readers[3],), kinds, data, starts, ends, one, False)
    with pytest.raises(ValueError, match="starts holds"):
        engine.columns(
            (readers[3],), kinds, data, np.zeros(2, np.int64), np.zeros(1, np.int64), one, False
        )
    with pytest.raises(ValueError, match="columns: row 0: reader 1"):
        engine.columns(
            (readers[3],),
            kinds,
            data,
            np.zeros(1, np.int64),
            np.array([len(data)], np.int64),
            np.ones(1, np.int32),
            False,
        )


def test_rows_that_share_bytes_write_more_text_than_the_data_holds(engine: ModuleType) -> None:
    # The string columns start with room for the rows' bytes (at most the data's size); here
    # every row reads the same message, so the text outgrows that room many times over.
    cls, _ = ocv(engine)
    readers, _ = native_readers(engine, cls._NATIVE_CLASSES, {3: cls._NATIVE_TABLES[3]})
    kinds = tuple((c.attr, c.kind) for c in arrow._columns("OffsetCommitValue"))
    data = b"pad" + cls(offset=7, metadata="m" * 5000, commit_timestamp=9).encode(3)
    n = 300
    starts, ends = np.full(n, 3, np.int64), np.full(n, len(data), np.int64)
    index = np.zeros(n, np.int32)
    index[::7] = -1  # null rows count no bytes
    valid, nulls, outs, failed = engine.columns(
        (readers[3],), kinds, data, starts, ends, index, False
    )
    assert failed == [] and nulls == len(range(0, n, 7))
    bits = np.unpackbits(np.frombuffer(valid, np.uint8), bitorder="little")[:n]
    assert bits.tolist() == [int(i % 7 != 0) for i in range(n)]
    metadata = outs[[c.attr for c in arrow._columns("OffsetCommitValue")].index("metadata")]
    offsets = np.frombuffer(metadata[2], np.int32)
    text = bytes(metadata[3])
    assert len(text) == 5000 * (n - nulls) > len(data)
    assert all(
        text[offsets[i] : offsets[i + 1]] == (b"" if i % 7 == 0 else b"m" * 5000) for i in range(n)
    )


def test_message_arrays_on_both_backends(engine: ModuleType) -> None:
    """decode_message_array end to end (version prefixes, newer versions, a bad prefix) gives
    the same result whichever backend is active, when the in-place engine is built."""
    from codegen.runtime.backends import native_engine

    if native_engine() is None or not hasattr(native_engine(), "columns"):
        pytest.skip("the in-place engine is not built (python -m codegen.native.build)")
    cls, _ = ocv(engine)
    prefix = struct.Struct(">h")
    values = [
        prefix.pack(v) + cls(offset=v, metadata="é" * v).encode(min(v, 4))
        for v in [0, 1, 2, 3, 4, 5, 3]
    ]
    values += [None, b"\x00", prefix.pack(-1) + b"x", prefix.pack(9) + cls().encode(4) + b"\x00"]
    arr = pa.array(values, pa.binary())
    pure = decode_message_array(arr, "OffsetCommitValue")
    use_backend("native")
    native = decode_message_array(arr, "OffsetCommitValue")
    assert native.errors == pure.errors and len(pure.errors) == 3
    assert canonical(native.values.to_pylist()) == canonical(pure.values.to_pylist())
    assert native.versions.tolist() == pure.versions.tolist()
    assert native.newer.tolist() == pure.newer.tolist()


def test_known_tagged_field_that_does_not_fit_its_size(engine: ModuleType) -> None:
    """OffsetCommitValue v4's topicId is tag 0: its value replaces the default, and a size
    that is not the value's is the codec's error."""
    import uuid

    from codegen.runtime.wire import uvarint

    cls, check = ocv(engine)
    topic = uuid.UUID(int=0xABCDEF)
    body = cls(offset=9, metadata="m").encode(4)[:-1]
    tag = uvarint(1) + uvarint(0) + uvarint(16) + topic.bytes
    too_big = uvarint(1) + uvarint(0) + uvarint(17) + topic.bytes + b"\x00"
    got, errors = check([body + tag, body + too_big], 4)
    assert list(errors) == [1] and "declares 17 bytes" in errors[1]
    assert got.to_pylist()[0]["topicId"] == "AAAAAAAAAAAAAAAAAKvN7w"


def test_compact_string_above_the_longest_kafka_string(engine: ModuleType) -> None:
    from codegen.runtime.wire import uvarint

    _, check = ocv(engine)
    head = struct.pack(">qi", 1, 2)
    for length in (0x7FFF, 0x8000):
        body = head + uvarint(length + 1) + b"a" * length + struct.pack(">q", 3) + b"\x00"
        _, errors = check([body], 4)
        assert bool(errors) == (length > 0x7FFF)


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.integers(-(2**15), 2**15 - 1), max_size=200),
    wide=st.lists(st.integers(-(2**40), 2**40), max_size=5),
)
def test_distinct_is_numpys_unique(values: list[int], wide: list[int]) -> None:
    """Record types and versions (int16 and int64, one value, a few, a wide range)."""
    from codegen.columnar.decode import distinct

    for array in (
        np.array(values, np.int16),
        np.array(values, np.int64),
        np.array(values + wide, np.int64),
        np.array(values[:1] * 5, np.int64),
    ):
        got = distinct(array)
        assert got.dtype == np.int64 and got.tolist() == np.unique(array).tolist()
