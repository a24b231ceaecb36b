"""Both backends agree on every argument around the bytes, not only on the bytes.

The generated pure readers are the reference; the native engine (compiled for the session)
must give the same value, or the same error class and text, for:

- offsets: 0, inside, the end, one past it, near 2^31, 2^32 and 2^63, above 2^64, negative
  (never read from the end), and what is not an integer (one ``TypeError`` text), for every
  shipped message at its lowest and highest version, through the object and row readers;
- buffer kinds: bytes, bytearray, memoryviews and slices of them, ``array`` of item sizes 1,
  2, 4 and 8, a 2-D view, and non-contiguous views; lengths and offsets count bytes;
- the C-level helpers' own arguments: ``pair_reader`` keeps what it reads with after the
  caller's dict is emptied, ``columns`` reads misaligned index buffers and refuses row bounds
  outside the data (near 2^63 too), ``add_entries`` hands ``decompress`` views that own
  their memory.

``make sanitize`` runs this file under AddressSanitizer and UndefinedBehaviorSanitizer.
"""

from __future__ import annotations

import gc
import sys
from array import array
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from corpus import native_corpora
from strategies import exact_form

import generated
from codegen.runtime import BufferUnderflow, DecodeError
from codegen.runtime.backends import native_readers

BIG = [2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**63 - 8, 2**63 - 1, 2**63, 2**64, 2**100]
NEGATIVE = [-1, -(2**31), -(2**63), -(2**63) - 1, -(2**64)]


class Index:
    """An integer by ``__index__`` only (as numpy's integers are)."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


NOT_INTEGERS: list[Any] = [1.0, 0.5, "0", b"0", None, [0], complex(0)]

PAIRS = [
    pytest.param(m.name, v, id=f"{m.name}/v{v}")
    for m in native_corpora()["shipped"]
    for v in sorted({m.valid_versions.lowest, m.valid_versions.highest})
]


@pytest.fixture(scope="module")
def engine(compiled_native: Callable[[str], ModuleType]) -> ModuleType:
    return compiled_native("_engine")


def readers(engine: ModuleType, cls: Any, version: int) -> dict[str, Callable[..., Any]]:
    """The pure readers and the session engine's, by name."""
    objects, rows = native_readers(
        engine, cls._NATIVE_CLASSES, {version: cls._NATIVE_TABLES[version]}
    )
    return {
        "reader": cls._PURE_READERS[version],
        "row reader": cls._PURE_ROW_READERS[version],
        "native reader": objects[version],
        "native row reader": rows[version],
    }


def outcome(call: Callable[..., Any], *args: Any) -> tuple[Any, ...]:
    """call(*args): ("ok", its value) or ("error", class, text[, field, offset])."""
    try:
        value = call(*args)
    except DecodeError as exc:
        return ("error", type(exc), str(exc), exc.field, exc.offset)
    except (TypeError, ValueError, BufferError, OverflowError, IndexError) as exc:
        return ("error", type(exc), str(exc))
    return ("ok", exact_form(value))


def assert_backends_agree(
    engine: ModuleType, cls: Any, version: int, buf: Any, *args: Any
) -> tuple[Any, ...]:
    """reader(buf, *args) on both backends, objects and rows: the same outcome."""
    read = readers(engine, cls, version)
    pure = outcome(read["reader"], buf, *args)
    pure_rows = outcome(read["row reader"], buf, *args)
    where = (cls.SPEC_NAME, version, type(buf).__name__, args)
    assert outcome(read["native reader"], buf, *args) == pure, where
    assert outcome(read["native row reader"], buf, *args) == pure_rows, where
    return pure


# ------------------------------------------------------------------------------ offsets


@pytest.mark.parametrize(("name", "version"), PAIRS)
def test_every_offset_is_refused_or_read_alike(engine: ModuleType, name: str, version: int) -> None:
    cls = generated.MESSAGES[name]
    data = cls().encode(version)
    end = len(data)
    for buf in (data, bytearray(data), b"\x00\x01" + data):
        size = len(buf)
        for offset in [0, 1, size - 1, size, size + 1, *BIG, *NEGATIVE]:
            got = assert_backends_agree(engine, cls, version, buf, offset)
            if offset < 0 or offset > size:
                # Refused before any read, with the offset given: never read from the end.
                text = f"offset {offset} is outside the buffer ({size} bytes)"
                where = "" if offset < 0 else f"byte {offset}: "  # DecodeError shows byte >= 0
                assert got == ("error", BufferUnderflow, where + text, "", offset), got
        assert assert_backends_agree(engine, cls, version, buf, Index(size - end))[0] == "ok"
        assert assert_backends_agree(engine, cls, version, buf, True) == (
            assert_backends_agree(engine, cls, version, buf, 1)
        )
        for offset in NOT_INTEGERS:
            got = assert_backends_agree(engine, cls, version, buf, offset)
            text = f"offset must be an integer, not '{type(offset).__name__}'"
            assert got == ("error", TypeError, text), got


def test_the_public_api_refuses_offsets_alike(engine: ModuleType) -> None:
    """``Cls.read`` locates the offset error (message and version) on both backends; the
    offsets of the issue that crashed the engine (2^63 - 8, 2^63 - 1) are refused."""
    from codegen.runtime import backend, use_backend

    cls = generated.MESSAGES["OffsetCommitValue"]
    data = cls(offset=5, metadata="m").encode(3)
    seen: dict[str, list[Any]] = {}
    for name in ("pure", "native"):
        use_backend(name)
        try:
            if backend() != name:
                continue
            seen[name] = [
                outcome(cls.read, data, o, 3) for o in (2**63 - 8, 2**63 - 1, -1, -len(data), 1.5)
            ] + [
                outcome(cls.reader(3), data, 2**63 - 1),
                outcome(cls.row_reader(3), data, 2**63 - 1),
            ]
        finally:
            use_backend(None)
    assert seen["pure"][0][2] == (
        f"OffsetCommitValue v3, byte {2**63 - 8}: offset {2**63 - 8} is outside the buffer "
        f"({len(data)} bytes)"
    )
    assert seen["pure"][3][2] == (
        f"OffsetCommitValue v3: offset {-len(data)} is outside the buffer ({len(data)} bytes)"
    )
    if "native" in seen:
        assert seen["native"] == seen["pure"]


# ------------------------------------------------------------------------------ buffer kinds


def buffer_kinds(data: bytes) -> dict[str, Any]:
    """``data`` in every buffer form the readers take (lengths in bytes), padded with zero
    bytes to a multiple of 8 so that every item size fits."""
    padded = data + bytes(-len(data) % 8)
    kinds: dict[str, Any] = {
        "bytes": padded,
        "bytearray": bytearray(padded),
        "memoryview": memoryview(padded),
        "memoryview of a bytearray": memoryview(bytearray(padded)),
        "memoryview slice": memoryview(b"\xff\xfe" + padded + b"\xfd")[2:-1],
        "read-only memoryview": memoryview(bytearray(padded)).toreadonly(),
    }
    for code in "BbHhIiQqd":
        kinds[f"array {code!r}"] = _array(code, padded)
    if padded:
        kinds["2-D memoryview"] = memoryview(padded).cast("B", (2, len(padded) // 2))
        kinds["int32 memoryview"] = memoryview(padded).cast("i")
    return kinds


def _array(code: str, data: bytes) -> array[Any]:
    out = array(code)
    out.frombytes(data)
    return out


NOT_CONTIGUOUS: dict[str, Callable[[bytes], memoryview]] = {
    "strided memoryview": lambda d: memoryview(bytes(2 * len(d) + 4))[::2],
    "strided int16 view": lambda d: memoryview(bytes(4 * len(d) + 8)).cast("h")[::2],
    "reversed memoryview": lambda d: memoryview(d + b"\x00\x00")[::-1],
}


@pytest.mark.parametrize(("name", "version"), PAIRS[:: max(1, len(PAIRS) // 24)])
def test_every_buffer_kind_reads_alike_in_bytes(
    engine: ModuleType, name: str, version: int
) -> None:
    cls = generated.MESSAGES[name]
    data = cls().encode(version)
    padded_len = len(data) + (-len(data) % 8)
    read = readers(engine, cls, version)
    native = read["native reader"]
    expected = outcome(cls._decode_whole, cls._PURE_READERS, data, version)
    for kind, buf in buffer_kinds(data).items():
        where = (name, version, kind)
        # Offsets and the next offset count bytes, whatever the item size.
        got = assert_backends_agree(engine, cls, version, buf, 0)
        assert got == outcome(read["reader"], data, 0), where
        assert assert_backends_agree(engine, cls, version, buf, padded_len)[0] == "error", where
        whole = outcome(native.decode, buf)
        assert whole == outcome(cls._decode_whole, cls._PURE_READERS, buf, version), where
        if padded_len == len(data):
            assert whole == expected, where
        else:
            assert whole[1].__name__ == "TrailingBytes", where
            assert f"{padded_len - len(data)} bytes left after the message" in whole[2], where
    for kind, make in NOT_CONTIGUOUS.items():
        buf = make(data)
        pure = outcome(read["reader"], buf, 0)
        assert pure == ("error", BufferError, "memoryview: underlying buffer is not C-contiguous")
        assert outcome(native, buf, 0) == pure, kind
        assert outcome(native.decode, buf) == pure, kind


def test_decode_of_an_array_of_wider_items_counts_bytes(engine: ModuleType) -> None:
    """The case of the issue: an ``array('H')`` holding a whole 24-byte value."""
    cls = generated.MESSAGES["OffsetCommitValue"]
    data = cls(offset=5, metadata="ab").encode(3)
    assert len(data) % 2 == 0
    native = readers(engine, cls, 3)["native reader"]
    wide = _array("H", data)
    assert (
        native.decode(wide) == cls.decode(data, 3) == cls._decode_whole(cls._PURE_READERS, wide, 3)
    )
    assert native(wide, 0) == (cls.decode(data, 3), len(data))


# ------------------------------------------------------------------------------ C-level helpers


def test_pair_reader_owns_its_readers(engine: ModuleType) -> None:
    """The caller's dict emptied and its readers dropped: the pair reader still reads with
    its own references (a use after free before)."""
    key_cls, value_cls = (
        generated.MESSAGES["OffsetCommitKey"],
        generated.MESSAGES["OffsetCommitValue"],
    )
    key = b"\x00\x01" + key_cls(group="g", topic="t", partition=3).encode(0)
    value = b"\x00\x03" + value_cls(offset=7, metadata="m").encode(3)
    slow_calls: list[tuple[Any, Any]] = []

    def slow(k: Any, v: Any) -> Any:
        slow_calls.append((k, v))
        return ("slow", None)

    def make() -> Any:
        key_reader = readers(engine, key_cls, 0)["native reader"]
        value_readers = tuple(
            readers(engine, value_cls, v)["native reader"] if v in value_cls._READERS else None
            for v in range(max(value_cls._READERS) + 1)
        )
        types = {1: (key_reader, value_readers, -1)}
        read_pair = engine.pair_reader(types, slow)
        types.clear()  # the caller's dict no longer holds the readers
        return read_pair

    read_pair = make()
    gc.collect()
    for _ in range(3):
        got = read_pair(key, value)
        assert got == (key_cls.decode(key[2:], 0), value_cls.decode(value[2:], 3))
    assert not slow_calls
    assert sys.getrefcount(read_pair) == 2
    with pytest.raises(TypeError, match="pair_reader"):
        engine.pair_reader({1: ("not a reader", (), -1)}, slow)
    with pytest.raises(TypeError, match="record types are ints"):
        engine.pair_reader({-1: ("x", (), -1)}, slow)
    with pytest.raises(TypeError, match="read_pair"):
        read_pair(key)


def test_columns_reads_misaligned_index_buffers(engine: ModuleType) -> None:
    """starts, ends (int64) and index (int32) at an odd address read as aligned ones do."""
    np = pytest.importorskip("numpy")
    from codegen.columnar import decode as arrow

    cls = generated.MESSAGES["OffsetCommitValue"]
    reader = readers(engine, cls, 3)["native reader"]
    kinds = tuple((c.attr, c.kind) for c in arrow._columns("OffsetCommitValue"))
    rows = [cls(offset=i, metadata="m" * i).encode(3) for i in range(5)]
    data = b"".join(rows)
    bounds = np.cumsum([0, *map(len, rows)])
    starts, ends = bounds[:-1].astype(np.int64), bounds[1:].astype(np.int64)
    index = np.array([0, 0, -1, 0, 0], np.int32)

    def misaligned(a: Any) -> memoryview:
        return memoryview(b"\x00" + a.tobytes())[1:]

    aligned = engine.columns((reader,), kinds, data, starts, ends, index, False)
    shifted = engine.columns(
        (reader,), kinds, data, misaligned(starts), misaligned(ends), misaligned(index), False
    )
    assert exact_form(aligned) == exact_form(shifted)
    assert aligned[1] == 1 and aligned[3] == []
    for start, end in [(0, 2**63 - 1), (2**63 - 8, 2**63 - 1), (-(2**63), 4), (4, -1)]:
        with pytest.raises(ValueError, match="columns: row 0"):
            engine.columns(
                (reader,),
                kinds,
                data,
                np.array([start], np.int64),
                np.array([end], np.int64),
                np.zeros(1, np.int32),
                False,
            )
    with pytest.raises(ValueError, match="index is not int32"):
        engine.columns((reader,), kinds, data, starts, ends, b"\x00" * 7, False)


def test_add_entries_hands_decompress_views_that_own_their_memory(
    records_module: ModuleType,
) -> None:
    """A decompress function that keeps its views: they stay readable after the call and
    after the caller drops the data (they hold it), and a bytearray stays locked while they
    live."""
    from codegen.dumps import Codec
    from codegen.dumps.compression import decompress
    from codegen.dumps.writer import encode_record_batch

    batch = encode_record_batch([(b"k", b"v")] * 3, timestamp=1_700_000_000_000, codec=Codec.GZIP)
    kept: list[memoryview] = []

    def keeping(codec: int, view: memoryview, max_size: int) -> bytes:
        kept.append(view)
        return decompress(codec, view, max_size)

    for data in (bytes(batch) * 2, bytearray(batch) * 2, _array("H", bytes(batch) * 2)):
        kept.clear()
        builder = records_module.ColumnBuilder(False)
        expected = [bytes(batch[61:])] * 2
        end = builder.add_entries(data, 0, 0, True, 1 << 30, 1 << 20, 10000, 1 << 30, keeping)
        assert end == 2 * len(batch) and builder.rows == 6
        if isinstance(data, bytearray):
            with pytest.raises(BufferError):
                data.extend(b"x")  # still exported to the views decompress kept
        del data
        gc.collect()
        assert [bytes(v) for v in kept] == expected
    kept.clear()


def test_column_builder_positions_outside_the_data_are_refused(
    records_module: ModuleType,
) -> None:
    """add_entries's position, near 2^63 and negative: refused with a ValueError (or an
    OverflowError above 2^63 - 1), never read."""
    from codegen.dumps.writer import encode_record_batch

    batch = encode_record_batch([(b"k", b"v")], timestamp=1_700_000_000_000)
    builder = records_module.ColumnBuilder(False)
    limits = (True, 1 << 30, 1 << 20, 10, 1 << 30, None)
    for pos in (len(batch) + 1, 2**63 - 1, -1, -(2**63)):
        with pytest.raises(ValueError, match="outside"):
            builder.add_entries(batch, pos, 0, *limits)
    with pytest.raises(OverflowError):
        builder.add_entries(batch, 2**63, 0, *limits)
    assert builder.rows == 0
    end = builder.add_entries(batch, len(batch), 0, True, 1, 1, 1, 1, None)
    assert end == len(batch)


def test_empty_values_first_in_a_column(records_module: ModuleType) -> None:
    """An empty key or value as a column's first bytes (its buffer not yet allocated)."""
    from codegen.dumps.writer import encode_record_batch

    batch = encode_record_batch([(b"", b""), (b"k", None), (b"", b"v")], timestamp=1)
    builder = records_module.ColumnBuilder(False)
    builder.add_entries(batch, 0, 0, True, 1 << 30, 1 << 20, 10, 1 << 30, None)
    count, _, _ = builder.finish()
    assert count == 3


# ------------------------------------------------------------------------ argument counts

ENTRY_POINTS = [
    ("_records", "records_parse"),
    ("_records", "batch_headers"),
    ("_records", "batch_header_columns"),
    ("_records", "batch_header_ends"),
    ("_records", "newest_batches"),
    ("_records", "crc32c"),
    ("_records", "key_numbers"),
    ("_records", "record_kinds"),
    ("_records", "log_end_index"),
    ("_records", "commit_log_ends"),
    ("_records", "window_rules"),
    ("_records", "slot_objects"),
    ("_jsontext", "lag_write"),
    ("_jsontext", "object_arrays"),
    ("_jsontext", "user_lines"),
    ("_jsontext", "user_dump_log"),
    ("_jsontext", "user_table_cells"),
    ("_jsontext", "table_text"),
    ("_jsontext", "record_cells"),
]


@pytest.fixture(scope="module")
def entry_modules(
    records_module: ModuleType, compiled_native: Callable[[str], ModuleType]
) -> dict[str, ModuleType]:
    return {"_records": records_module, "_jsontext": compiled_native("_jsontext")}


@pytest.mark.parametrize(("module", "name"), ENTRY_POINTS, ids=[n for _, n in ENTRY_POINTS])
def test_a_wrong_argument_count_is_refused_with_the_usage(
    entry_modules: dict[str, ModuleType], module: str, name: str
) -> None:
    """Too few or too many arguments: a TypeError whose text is the entry point's usage,
    before any argument is read."""
    entry = getattr(entry_modules[module], name)
    for count in (0, 20):
        with pytest.raises(TypeError) as refused:
            entry(*[None] * count)
        assert str(refused.value).startswith(f"{name}("), (count, str(refused.value))


def test_a_method_called_with_a_wrong_count_names_its_usage(records_module: ModuleType) -> None:
    effects = records_module.CommitEffects()
    with pytest.raises(TypeError) as refused:
        effects.add_records(None)
    assert str(refused.value) == (
        "add_records(key_offsets, key_data, value_offsets, value_data, flags, producers, "
        "offsets, timestamps)"
    )
    with pytest.raises(TypeError, match=r"^add_commit_rows\(group_offsets, "):
        effects.add_commit_rows()
