"""The native decoder against the pure generated readers, which stay the reference.

The engine is compiled once per session into the tmp dir. Without a C compiler the tests
skip and say so; with ``SPECGEN_REQUIRE_NATIVE=1`` (set it in CI) a missing compiler fails
them instead, so a build machine cannot lose the native tests silently.

- differential: for every shipped message (``generated.MESSAGES``) and the ``native_shapes``
  case spec, at every version, Hypothesis-built objects encoded by the pure codec decode to
  the same values and next offset through both readers; every truncation and random
  mutations of those bytes, and random byte strings, give the same value or the same error
  (class, reason, field path, byte offset and text), through ``reader`` and ``decode``;
- annotated hex fixtures pin one case of each error kind, for both readers;
- load-time checks: table format, class layout (direct slot writes or the setattr fallback),
  the unknown-tags constructor.

``SPECGEN_NATIVE_EXAMPLES`` sets the examples per (message, version) (default 8).
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from corpus import NATIVE_SHAPES, corpus_settings, native_corpora, native_params
from hypothesis import given
from hypothesis import strategies as st
from strategies import exact_form, instances

from codegen.ir import Message
from codegen.native.table_format import FORMAT_VERSION
from codegen.native_tables import MessageTable, message_table, message_tables
from codegen.runtime import DecodeError, KafkaStruct
from codegen.runtime.backends import native_readers

SETTINGS = corpus_settings("SPECGEN_NATIVE_EXAMPLES", 8)

# ------------------------------------------------------------------------------ the engine


@pytest.fixture(scope="session")
def engine(compiled_native: Callable[[str], ModuleType]) -> ModuleType:
    """The engine, compiled for this session and imported as ``codegen.native._engine``."""
    module = compiled_native("_engine")
    assert module.FORMAT_VERSION == FORMAT_VERSION
    return module


@dataclass(frozen=True)
class Pair:
    message: Message
    module: ModuleType
    version: int

    @property
    def cls(self) -> Any:
        return getattr(self.module, self.message.name)

    def classes(self) -> dict[str, type]:
        return {s.name: getattr(self.module, s.name) for s in self.message.structs}

    def table(self) -> MessageTable:
        return message_table(self.message, self.version)


PAIRS = native_params()


@pytest.fixture(scope="session")
def shapes_package(codec_package: Callable[[str, list[Path]], ModuleType]) -> ModuleType:
    return codec_package("native_shapes_codecs", [NATIVE_SHAPES])


@pytest.fixture(scope="session")
def pairs(shapes_package: ModuleType) -> Callable[[str, str, int], Pair]:
    import generated

    by_name = {c: {m.name: m for m in messages} for c, messages in native_corpora().items()}

    def pair(corpus: str, name: str, version: int) -> Pair:
        message = by_name[corpus][name]
        if corpus == "shipped":
            module = sys.modules[generated.MESSAGES[name].__module__]
        else:
            module = importlib.import_module(f"{shapes_package.__name__}.{message.module}")
        return Pair(message, module, version)

    return pair


def native_reader(engine: ModuleType, pair: Pair) -> Any:
    """The pair's native reader, made as the native backend makes it."""
    readers, _ = native_readers(engine, pair.classes(), {pair.version: pair.table()})
    return readers[pair.version]


def native_row_reader(engine: ModuleType, pair: Pair) -> Any:
    """The pair's native row reader, made as the native backend makes it."""
    _, row_readers = native_readers(engine, pair.classes(), {pair.version: pair.table()})
    return row_readers[pair.version]


# ------------------------------------------------------------------------------ comparing


def error_view(exc: DecodeError) -> tuple[Any, ...]:
    return (type(exc), exc.reason, exc.field, exc.offset, exc.message, exc.version, str(exc))


def read_outcome(read: Callable[[bytes, int], tuple[Any, int]], buf: bytes, at: int) -> Any:
    try:
        obj, end = read(buf, at)
    except DecodeError as exc:
        return ("error", *error_view(exc))
    return ("ok", exact_form(obj), end)


def decode_outcome(decode: Callable[[bytes], Any], data: bytes) -> Any:
    try:
        obj = decode(data)
    except DecodeError as exc:
        return ("error", *error_view(exc))
    return ("ok", exact_form(obj))


def assert_same(pair: Pair, native: Any, data: bytes, at: int = 0, rows: Any = None) -> Any:
    """The native reader (and row reader) and decode against the generated pure ones, not
    the class's active backend, which may be the native one."""
    cls, version, where = pair.cls, pair.version, (pair.message.name, pair.version, data.hex())
    expected = read_outcome(cls._PURE_READERS[version], data, at)
    assert read_outcome(native, data, at) == expected, where
    if rows is not None:
        expected_rows = read_outcome(cls._PURE_ROW_READERS[version], data, at)
        assert read_outcome(rows, data, at) == expected_rows, where
    pure_decode = decode_outcome(lambda d: cls._decode_whole(cls._PURE_READERS, d, version), data)
    assert decode_outcome(native.decode, data) == pure_decode, where
    return expected


# ------------------------------------------------------------------------------ differential


def mutations(data: bytes) -> st.SearchStrategy[bytes]:
    index = st.integers(0, max(len(data) - 1, 0))
    byte = st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF, 0xFE, 0x81]) | st.integers(0, 255)
    flip = st.tuples(index, byte).map(lambda t: data[: t[0]] + bytes([t[1]]) + data[t[0] + 1 :])
    insert = st.tuples(index, byte).map(lambda t: data[: t[0]] + bytes([t[1]]) + data[t[0] :])
    delete = index.map(lambda i: data[:i] + data[i + 1 :])
    splice = st.tuples(index, st.binary(min_size=1, max_size=6)).map(
        lambda t: data[: t[0]] + t[1] + data[t[0] + len(t[1]) :]
    )
    return st.one_of(flip, insert, delete, splice) if data else st.binary(max_size=4)


def truncations(data: bytes) -> Iterator[bytes]:
    """Every prefix of a short message; about 150 spread over a long one."""
    step = max(1, len(data) // 150)
    for end in range(0, len(data), step):
        yield data[:end]


@pytest.mark.parametrize(("corpus", "name", "version"), PAIRS)
@SETTINGS
@given(data=st.data())
def test_encoded_values_and_their_mutations_decode_the_same(
    engine: ModuleType,
    pairs: Callable[[str, str, int], Pair],
    corpus: str,
    name: str,
    version: int,
    data: st.DataObject,
) -> None:
    pair = pairs(corpus, name, version)
    native, rows = native_reader(engine, pair), native_row_reader(engine, pair)
    assert native.direct_slots  # generated classes take direct slot writes
    obj = data.draw(instances(pair.message, pair.module, version), label="object")
    wire = obj.encode(version)
    outcome = assert_same(pair, native, wire, rows=rows)
    assert outcome[0] == "ok" and outcome[2] == len(wire)
    # At an offset inside a larger buffer, with bytes after it.
    prefix = data.draw(st.binary(max_size=3), label="prefix")
    suffix = data.draw(st.binary(max_size=3), label="suffix")
    assert_same(pair, native, prefix + wire + suffix, len(prefix), rows)
    assert_same(pair, native, wire, len(wire) + len(suffix), rows)  # offset at or past the end
    for cut in truncations(wire):
        assert_same(pair, native, cut, rows=rows)
    for _ in range(8):
        assert_same(pair, native, data.draw(mutations(wire), label="mutated"), rows=rows)


@pytest.mark.parametrize(("corpus", "name", "version"), PAIRS)
@SETTINGS
@given(raw=st.binary(max_size=96))
def test_random_bytes_decode_the_same(
    engine: ModuleType,
    pairs: Callable[[str, str, int], Pair],
    corpus: str,
    name: str,
    version: int,
    raw: bytes,
) -> None:
    pair = pairs(corpus, name, version)
    assert_same(pair, native_reader(engine, pair), raw, rows=native_row_reader(engine, pair))


# ------------------------------------------------------------------------------ hex fixtures


def unhex(annotated: str) -> bytes:
    """Hex digits with ``#`` comments to the end of each line."""
    return bytes.fromhex("".join(line.split("#")[0] for line in annotated.splitlines()))


@dataclass(frozen=True)
class Fixture:
    id: str
    message: str
    version: int
    hex: str
    error: str
    text: str  # str() of the error raised by decode()


OFFSET_COMMIT_HEAD = """
        00 00 00 00 00 00 00 01  # offset: 1
        00 00 00 02              # leader_epoch: 2
"""
"""OffsetCommitValue's first fields from version 3 on: bytes 0-11."""

OFFSET_COMMIT_V4_UNTAGGED = (
    OFFSET_COMMIT_HEAD
    + """
        01                       # metadata: ""
        00 00 00 00 00 00 00 03  # commit_timestamp: 3
"""
)
"""OffsetCommitValue v4's fields before its tagged fields: bytes 0-20."""

FIXTURES = [
    Fixture(
        "unknown tag above the largest Kafka reads",
        "OffsetCommitValue",
        4,
        OFFSET_COMMIT_V4_UNTAGGED
        + """
        01                       # one tagged field
        80 80 80 80 08           #   tag 2147483648 (2**31)
        00                       #   size 0; its value would start at byte 28
        """,
        "InvalidTaggedField",
        "OffsetCommitValue v4, field <tagged fields>, byte 28: tag 2147483648 is above 2147483647, the largest tag Kafka reads",
    ),
    Fixture(
        "fixed-width value runs past the end",
        "OffsetCommitValue",
        3,
        """
        00 00 00 00 00         # offset: int64, only 5 bytes
        """,
        "BufferUnderflow",
        "OffsetCommitValue v3, field offset, byte 0: needs 8 bytes, only 5 left",
    ),
    Fixture(
        "compact length missing",
        "OffsetCommitValue",
        4,
        OFFSET_COMMIT_HEAD
        + """
                                 # metadata: no length byte
        """,
        "BufferUnderflow",
        "OffsetCommitValue v4, field metadata, byte 12: the bytes end here",
    ),
    Fixture(
        "unsigned varint cut short",
        "OffsetCommitValue",
        4,
        OFFSET_COMMIT_HEAD
        + """
        80                       # metadata: uvarint length with a continuation bit, then nothing
        """,
        "BufferUnderflow",
        "OffsetCommitValue v4, field metadata, byte 12: the bytes end inside an unsigned varint",
    ),
    Fixture(
        "unsigned varint longer than 5 bytes",
        "OffsetCommitValue",
        4,
        OFFSET_COMMIT_HEAD
        + """
        80 80 80 80 80 01        # metadata: six-byte uvarint
        """,
        "InvalidLength",
        "OffsetCommitValue v4, field metadata, byte 12: unsigned varint longer than 5 bytes",
    ),
    Fixture(
        "compact string above 32767 bytes",
        "OffsetCommitValue",
        4,
        OFFSET_COMMIT_HEAD
        + """
        81 80 02                 # metadata: uvarint 32769, so length 32768
        """,
        "InvalidLength",
        "OffsetCommitValue v4, field metadata, byte 15: string length 32768 is above 32767",
    ),
    Fixture(
        "string length past the end",
        "OffsetCommitValue",
        3,
        OFFSET_COMMIT_HEAD
        + """
        00 05 61 62              # metadata: length 5, only "ab"
        """,
        "BufferUnderflow",
        "OffsetCommitValue v3, field metadata, byte 14: length 5 runs past the end (2 bytes left)",
    ),
    Fixture(
        "null in a non-nullable string",
        "OffsetCommitKey",
        0,
        """
        ff ff                    # group: length -1
        """,
        "UnexpectedNull",
        "OffsetCommitKey v0, field group, byte 2: null in a field that is not nullable at this "
        "version",
    ),
    Fixture(
        "null in a non-nullable array: the offset is the length's",
        "ConsumerProtocolAssignment",
        0,
        """
        ff ff ff ff              # assigned_partitions: count -1
        """,
        "UnexpectedNull",
        "ConsumerProtocolAssignment v0, field assigned_partitions, byte 0: null in a field that "
        "is not nullable at this version",
    ),
    Fixture(
        "invalid UTF-8",
        "OffsetCommitKey",
        0,
        """
        00 02 61 ff              # group: length 2, "a" then 0xff
        """,
        "InvalidUtf8",
        "OffsetCommitKey v0, field group, byte 2: invalid UTF-8 (invalid start byte at byte 3)",
    ),
    Fixture(
        "array count larger than the bytes left",
        "ConsumerProtocolAssignment",
        0,
        """
        00 00 03 e8              # assigned_partitions: 1000 structs
        00 01 74                 # one topic name, nothing more
        """,
        "InvalidLength",
        "ConsumerProtocolAssignment v0, field assigned_partitions, byte 4: array of 1000 "
        "elements cannot fit in the 3 bytes left",
    ),
    Fixture(
        "error inside an array of structs: indexed field path",
        "ConsumerProtocolAssignment",
        0,
        """
        00 00 00 02              # assigned_partitions: 2 structs
        00 01 74                 #   [0].topic: "t"
        00 00 00 00              #   [0].partitions: []
        00 01 c3                 #   [1].topic: length 1, a lone UTF-8 lead byte
        00 00 00 00
        """,
        "InvalidUtf8",
        "ConsumerProtocolAssignment v0, field assigned_partitions[1].topic, byte 13: invalid "
        "UTF-8 (unexpected end of data at byte 13)",
    ),
    Fixture(
        "array of strings: the element path repeats the field name",
        "ConsumerProtocolSubscription",
        0,
        """
        00 00 00 02              # topics: 2 strings
        00 01 61                 #   [0]: "a"
        ff ff                    #   [1]: null
        """,
        "UnexpectedNull",
        "ConsumerProtocolSubscription v0, field topics[1].topics, byte 9: null in a field "
        "that is not nullable at this version",
    ),
    Fixture(
        "tag not valid at this version",
        "BrokerRegistrationChangeRecord",
        0,
        """
        00 00 00 01              # broker_id: 1
        00 00 00 00 00 00 00 02  # broker_epoch: 2
        01                       # one tagged field
        01 01 00                 #   tag 1 (valid from version 1), size 1
        """,
        "InvalidTaggedField",
        "BrokerRegistrationChangeRecord v0, field <tagged fields>, byte 15: tag 1 is not valid "
        "at this version",
    ),
    Fixture(
        "tagged value that does not fit its size",
        "OffsetCommitValue",
        4,
        OFFSET_COMMIT_V4_UNTAGGED
        + """
        01                       # one tagged field
        00 03 aa bb cc           #   tag 0 (topic_id, a 16-byte uuid), size 3
        """,
        "InvalidTaggedField",
        "OffsetCommitValue v4, field topic_id, byte 24: tagged field 0 does not fit its 3 "
        "bytes: field topic_id, byte 24: needs 16 bytes, only 3 left",
    ),
    Fixture(
        "tagged value shorter than its size",
        "OffsetCommitValue",
        4,
        OFFSET_COMMIT_V4_UNTAGGED
        + """
        01                       # one tagged field
        00 11                    #   tag 0, size 17
        00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 01 ff
        """,
        "InvalidTaggedField",
        "OffsetCommitValue v4, field topic_id, byte 40: tagged field declares 17 bytes but its "
        "value takes 16",
    ),
    Fixture(
        "tagged nullable struct with no marker byte",
        "ConsumerGroupMemberMetadataValue",
        0,
        """
        00                       # instance_id: null
        00                       # rack_id: null
        01                       # client_id: ""
        01                       # client_host: ""
        01                       # subscribed_topic_names: []
        00                       # subscribed_topic_regex: null
        00 00 00 00              # rebalance_timeout_ms: 0
        00                       # server_assignor: null
        01                       # one tagged field
        00 00                    #   tag 0 (classic_member_metadata), size 0, then nothing
        """,
        "InvalidTaggedField",
        "ConsumerGroupMemberMetadataValue v0, field classic_member_metadata, byte 14: tagged "
        "field 0 does not fit its 0 bytes: index out of range",
    ),
    Fixture(
        "tagged-field section length past the end",
        "OffsetCommitValue",
        4,
        OFFSET_COMMIT_V4_UNTAGGED
        + """
        01                       # one tagged field
        05 09 00                 #   tag 5 (unknown), size 9, one byte
        """,
        "BufferUnderflow",
        "OffsetCommitValue v4, field <tagged fields>, byte 24: length 9 runs past the end "
        "(1 bytes left)",
    ),
    Fixture(
        "bytes after the message",
        "OffsetCommitKey",
        0,
        """
        00 01 67                 # group: "g"
        00 01 74                 # topic: "t"
        00 00 00 07              # partition: 7
        00                       # one byte too many
        """,
        "TrailingBytes",
        "OffsetCommitKey v0, byte 10: 1 bytes left after the message",
    ),
]


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.id for f in FIXTURES])
def test_hex_fixture_errors(
    engine: ModuleType, pairs: Callable[[str, str, int], Pair], fixture: Fixture
) -> None:
    pair = pairs("shipped", fixture.message, fixture.version)
    native = native_reader(engine, pair)
    data = unhex(fixture.hex)
    pure = pair.cls._PURE_READERS

    for decode in (lambda d: pair.cls._decode_whole(pure, d, fixture.version), native.decode):
        with pytest.raises(DecodeError) as caught:
            decode(data)
        assert type(caught.value).__name__ == fixture.error
        assert str(caught.value) == fixture.text
    assert_same(pair, native, data, rows=native_row_reader(engine, pair))


def test_unknown_tags_come_in_wire_order_through_the_given_constructor(
    engine: ModuleType, pairs: Callable[[str, str, int], Pair]
) -> None:
    pair = pairs("shipped", "OffsetCommitValue", 4)
    data = unhex(
        OFFSET_COMMIT_V4_UNTAGGED
        + """
        03                       # three tagged fields, out of order, one tag twice
        07 01 aa                 #   tag 7: aa
        05 00                    #   tag 5: empty
        07 01 bb                 #   tag 7 again: bb
        """
    )
    as_pairs = engine.reader(pair.table(), pair.classes(), tuple)
    obj, end = as_pairs(data, 0)
    assert end == len(data)
    assert obj.unknown_tags == ((7, b"\xaa"), (5, b""), (7, b"\xbb"))
    as_dict = engine.reader(pair.table(), pair.classes(), dict)
    assert as_dict(data, 0)[0].unknown_tags == {7: b"\xbb", 5: b""}
    as_runtime = native_reader(engine, pair)
    assert as_runtime(data, 0)[0].unknown_tags.pairs == ((7, b"\xaa"), (5, b""), (7, b"\xbb"))
    assert as_runtime(data, 0)[0] == pair.cls.decode(data, 4)
    # Without tagged fields the constructor gets an empty list.
    no_tags = data[:21] + b"\x00"
    assert as_pairs(no_tags, 0)[0].unknown_tags == ()


def test_class_that_is_not_the_generated_layout_is_filled_through_setattr(
    engine: ModuleType, pairs: Callable[[str, str, int], Pair]
) -> None:
    pair = pairs("shipped", "OffsetCommitKey", 0)
    generated_cls = pair.cls

    class Plain:  # not slotted: no member offsets to write at
        pass

    data = generated_cls(group="g", topic="t", partition=7).encode(0)
    direct = native_reader(engine, pair)
    assert direct.direct_slots
    fallback = engine.reader(pair.table(), {"OffsetCommitKey": Plain}, dict)
    assert not fallback.direct_slots
    obj, end = fallback(data, 0)
    assert (obj.group, obj.topic, obj.partition, obj.unknown_tags) == ("g", "t", 7, {})
    assert type(obj) is Plain and end == len(data)


def written_struct_tables(source: str) -> list[str]:
    """The struct tables a module's text writes: the 7-tuples that start with a class name
    and the flexible flag."""
    return [
        ast.dump(node)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Tuple)
        and len(node.elts) == 7
        and isinstance(node.elts[0], ast.Constant)
        and isinstance(node.elts[0].value, str)
        and isinstance(node.elts[1], ast.Constant)
        and isinstance(node.elts[1].value, bool)
    ]


@pytest.mark.parametrize("corpus", ["shipped", "shapes"])
def test_modules_write_each_struct_table_once(
    corpus: str, pairs: Callable[[str, str, int], Pair]
) -> None:
    """A generated module's tables are the generator's at every version (compared as text: a
    default 1 is not a default True), and the module writes each distinct struct table once:
    a nested struct whose layout several versions share is not repeated per version."""
    for message in native_corpora()[corpus]:
        pair = pairs(corpus, message.name, message.valid_versions.versions()[0])
        tables = pair.cls._NATIVE_TABLES
        assert {v: repr(t) for v, t in tables.items()} == {
            v: repr(t) for v, t in message_tables(message).items()
        }, message.name
        written = written_struct_tables(Path(pair.module.__file__ or "").read_text())
        distinct = {repr(s) for t in tables.values() for s in t[4]}
        assert len(written) == len(set(written)) == len(distinct), message.name


def test_table_of_another_format_is_refused(
    engine: ModuleType, pairs: Callable[[str, str, int], Pair]
) -> None:
    pair = pairs("shipped", "OffsetCommitKey", 0)
    magic, _, name, version, structs = pair.table()
    with pytest.raises(ValueError, match="layout table format 99, but this engine reads format"):
        engine.reader((magic, 99, name, version, structs), pair.classes(), dict)
    with pytest.raises(ValueError, match="not a native layout table"):
        engine.reader(("something else", 1, name, version, structs), pair.classes(), dict)
    with pytest.raises(KeyError):
        engine.reader(pair.table(), {}, dict)


def test_reader_signature_and_buffers(
    engine: ModuleType, pairs: Callable[[str, str, int], Pair]
) -> None:
    pair = pairs("shipped", "OffsetCommitValue", 3)
    native = native_reader(engine, pair)
    obj = pair.cls(offset=1, leader_epoch=2, metadata="m\u00e9", commit_timestamp=3)
    data = b"\x00\x03" + obj.encode(3)
    assert native(data, 2) == pair.cls._PURE_READERS[3](data, 2) == (obj, len(data))
    assert native(bytearray(data), 2) == (obj, len(data))
    assert native(memoryview(data)[2:]) == (obj, len(data) - 2)
    assert (native.message, native.version) == ("OffsetCommitValue", 3)
    with pytest.raises(
        DecodeError, match=rf"offset -1 is outside the buffer \({len(data)} bytes\)"
    ):
        native(data, -1)
    with pytest.raises(TypeError):
        native(data, 0, 1)


def test_build_without_a_compiler_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Neither the interpreter's compiler nor the one ``CC`` names; nothing is written, and
    never over the checkout's build (the output goes to the tmp dir)."""
    import sysconfig

    from codegen.native import build

    real = sysconfig.get_config_var

    def config_var(name: str) -> Any:
        return "no-such-cc -pthread" if name == "CC" else real(name)

    monkeypatch.setattr(sysconfig, "get_config_var", config_var)
    monkeypatch.delenv("CC", raising=False)
    out = tmp_path / "engine.so"
    with pytest.raises(build.CompilerNotFound, match=r"no C compiler: .*'no-such-cc -pthread'"):
        build.build(out=out)
    monkeypatch.setenv("CC", "no-such-cc-either")
    with pytest.raises(build.CompilerNotFound, match=r"CC names 'no-such-cc-either'"):
        build.build(out=out)
    assert not out.exists()


def _mutable_parts(value: Any) -> Iterator[Any]:
    if isinstance(value, KafkaStruct):
        yield value
        for s in type(value).__slots__:
            yield from _mutable_parts(getattr(value, s))
    elif isinstance(value, list):
        yield value
        for item in value:
            yield from _mutable_parts(item)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_default_structs_and_lists_are_new_objects_on_every_decode(
    engine: ModuleType, pairs: Callable[[str, str, int], Pair], version: int
) -> None:
    """Default struct instances are copied from a prototype in C: no two decodes (and no
    prototype) may share a struct or a list."""
    pair = pairs("shapes", "NativeShapes", version)
    native = native_reader(engine, pair)
    data = pair.cls().encode(version)
    first, second = native.decode(data), native.decode(data)
    assert first == second == pair.cls._decode_whole(pair.cls._PURE_READERS, data, version)
    shared = {id(p) for p in _mutable_parts(first)} & {id(p) for p in _mutable_parts(second)}
    assert not shared
    defaults = [p for p in _mutable_parts(first) if type(p).__name__ == "Endpoint"]
    if version >= 2:
        assert defaults, "the tagged Endpoint fields default to instances from version 2"
        defaults[0].host = "changed"
        assert native.decode(data) == second
