"""The decode core: Arrow binary arrays in, Arrow struct arrays out. No pyspark here.

On the native backend (``codegen.runtime.backend()``), rows are decoded by the engine's
columnar decoder (``_engine.columns``): one pass over the binary array's buffers that writes
the message's top-level numbers, strings, bytes and uuids straight into Arrow buffers and
hands nested fields (structs, arrays, tagged-field maps) back as the generated objects, which
become Arrow arrays here. It accepts and refuses exactly the rows the codec does; a refused
row is decoded once more with the generated ``decode`` for its error text. On the pure backend
(the reference) every row goes through the generated ``decode`` in a loop that appends to one
list per column. Either way a malformed row gets the codec's own error text.

Everything is built once per message and cached per process (workers build it on first use),
so nothing here is pickled with a UDF.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from codegen.columnar.package import SHIPPED, codecs
from codegen.columnar.schema import message_arrow_type
from codegen.runtime import KafkaMessage
from codegen.runtime.backends import native_engine
from codegen.runtime.errors import KafkaCodecError
from codegen.runtime.json_values import uuid_json
from codegen.runtime.wire import read_uvarint

__all__ = [
    "Decoded",
    "Rows",
    "decode_message_array",
    "decode_native",
    "decode_rows",
    "default_framing",
    "distinct",
]

I64 = npt.NDArray[np.int64]
BoolArr = npt.NDArray[np.bool_]
Converter = Callable[[Any], Any] | None


def distinct(values: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.int64]:
    """The distinct values, ascending: ``np.unique`` without its sort where they span a small
    range (record types, versions: most batches hold one or a few)."""
    if not len(values):
        return np.zeros(0, np.int64)
    first = values[0]
    if (values == first).all():
        return np.array([first], np.int64)
    low, high = int(values.min()), int(values.max())
    if high - low >= 1 << 16:
        return np.unique(values).astype(np.int64)
    seen = np.zeros(high - low + 1, np.bool_)
    seen[values.astype(np.int64) - low] = True
    return np.flatnonzero(seen) + low


# ---------------------------------------------------------------------------------- input rows


class Rows:
    """The buffers of a binary (or large binary) Arrow array, as numpy views."""

    def __init__(self, arr: pa.Array | pa.ChunkedArray) -> None:
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
        if pa.types.is_null(arr.type):
            arr = pa.nulls(len(arr), pa.binary())
        self.n = n = len(arr)
        large = pa.types.is_large_binary(arr.type) or pa.types.is_large_string(arr.type)
        bufs = arr.buffers()
        odt = np.int64 if large else np.int32
        width = 8 if large else 4
        if bufs[1] is None:
            self.offsets: I64 = np.zeros(n + 1, np.int64)
        else:
            self.offsets = np.frombuffer(
                bufs[1], dtype=odt, count=n + 1, offset=arr.offset * width
            ).astype(np.int64)
        raw = bufs[2]
        self.buffer: pa.Buffer = pa.py_buffer(b"") if raw is None else raw
        self.data: npt.NDArray[np.uint8] = np.frombuffer(self.buffer, dtype=np.uint8)
        if arr.null_count:
            self.valid: BoolArr = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False))
        else:
            self.valid = np.ones(n, np.bool_)
        self._bytes: bytes | None = None

    @property
    def starts(self) -> I64:
        return self.offsets[:-1]

    @property
    def ends(self) -> I64:
        return self.offsets[1:]

    @property
    def pybytes(self) -> bytes:
        if self._bytes is None:
            self._bytes = self.data.tobytes()
        return self._bytes

    def int16_at(self, pos: I64, ends: I64) -> tuple[I64, BoolArr]:
        """The big-endian int16 at each of ``pos`` (0 where it would run past ``ends``), and
        where one was read."""
        ok = pos + 2 <= ends
        if ok.all():  # the usual case: every value is inside its row, so inside ``data``
            return _int16_read(self.data, pos), ok
        data = self.data if len(self.data) >= 2 else np.zeros(2, np.uint8)
        return np.where(ok, _int16_read(data, np.where(ok, pos, 0)), 0), ok


def _int16_read(data: npt.NDArray[np.uint8], pos: I64) -> I64:
    """The big-endian int16 at each of ``pos`` (all inside ``data``), as int64.

    Two gathers of bytes: numpy gathers single bytes fast, where a gather of unaligned
    big-endian int16 copies value by value (about twice the instructions).
    """
    high = data[pos].astype(np.int64)
    return ((high - ((high & 0x80) << 1)) << 8) | data[pos + 1]


# ---------------------------------------------------------------------------------- framing


def default_framing(name: str, package: str = SHIPPED) -> tuple[str, int | None]:
    """How the bytes of message ``name`` carry their version when none is given.

    ``version``: int16 version prefix (coordinator values, consumer-protocol data);
    ``type``: int16 record type prefix, the key at version 0 (coordinator keys);
    ``frame``: uvarint frame version, api key and version (``__cluster_metadata`` records);
    ``none``: no prefix, the lowest version (KRaft control records).
    """
    cls = codecs(package).messages[name]
    if cls.SPEC_TYPE == "coordinator-value":
        return "version", None
    if cls.SPEC_TYPE == "coordinator-key":
        return "type", 0
    if cls.SPEC_TYPE == "metadata":
        return "frame", None
    if codecs(package).folders[name] == "consumer_protocol":
        return "version", None
    return "none", cls.LOWEST_VERSION


def needs_version(name: str, package: str = SHIPPED) -> bool:
    """Whether message ``name``'s bytes carry no version (:func:`default_framing` ``none``)
    while it has several: decoding it needs a version given, never a guess."""
    framing, _ = default_framing(name, package)
    cls = codecs(package).messages[name]
    return framing == "none" and cls.LOWEST_VERSION != cls.HIGHEST_VERSION


def parse_frames(rows: Rows, idx: I64) -> tuple[I64, I64, I64, dict[int, str]]:
    """Metadata frames of rows ``idx``: (api key, version, body start, errors by row)."""
    api = np.full(len(idx), -1, np.int64)
    ver = np.full(len(idx), -1, np.int64)
    start = np.zeros(len(idx), np.int64)
    errors: dict[int, str] = {}
    raw = rows.pybytes
    for j, i in enumerate(idx.tolist()):
        b, e = int(rows.offsets[i]), int(rows.offsets[i + 1])
        buf = raw[b:e]
        try:
            frame, o = read_uvarint(buf, 0, "frameVersion")
            if frame != 1:
                errors[i] = f"unknown frame version {frame} (only frame version 1 is supported)"
                continue
            a, o = read_uvarint(buf, o, "apiKey")
            v, o = read_uvarint(buf, o, "version")
        except KafkaCodecError as exc:
            errors[i] = f"could not read the metadata record frame: {exc}"
            continue
        api[j], ver[j], start[j] = a, v, b + o
    return api, ver, start, errors


# ---------------------------------------------------------------------------------- converters


_uuid_text = lru_cache(maxsize=4096)(uuid_json)


def _field_converter(spark: Any, meta: dict[str, str]) -> Converter:
    kind = meta.get("kafkaType", "")
    if kind == "uuid":
        return _uuid_text
    if kind == "tagged":
        # Null, not an empty map, when there are none: the usual case, and far cheaper for the JVM.
        return lambda d: list(d.items()) if d else None
    if kind == "struct":
        return _struct_converter(spark)
    if kind == "array":
        element = meta.get("elementType", "")
        if element == "uuid":
            return lambda v: None if v is None else [_uuid_text(x) for x in v]
        if element == "struct":
            conv = _struct_converter(spark["elementType"])
            return lambda v: None if v is None else [conv(x) for x in v]
    return None


def _struct_converter(spark: dict[str, Any]) -> Callable[[Any], Any]:
    fields = [
        (f["name"], f["metadata"]["attr"], _field_converter(f["type"], f["metadata"]))
        for f in spark["fields"]
    ]

    def convert(obj: Any) -> Any:
        if obj is None:
            return None
        return {
            name: getattr(obj, attr) if fn is None else fn(getattr(obj, attr))
            for name, attr, fn in fields
        }

    return convert


@cache
def _top_converters(name: str, package: str = SHIPPED) -> tuple[tuple[str, Converter], ...]:
    return tuple(
        (f["metadata"]["attr"], _field_converter(f["type"], f["metadata"]))
        for f in codecs(package).schemas[name]["fields"]
    )


# ---------------------------------------------------------------------------------- decoding


def _generic(
    name: str,
    rows: Rows,
    starts: I64,
    ends: I64,
    versions: I64,
    trailing_ok: bool = False,
    package: str = SHIPPED,
) -> tuple[pa.StructArray, dict[int, str]]:
    """Decode with the generated codec; returns the structs and errors by local index.

    With ``trailing_ok``, bytes after the message are ignored instead of being an error.
    """
    cls = codecs(package).messages[name]
    decode = _prefix_decoder(cls) if trailing_ok else cls.decode
    convs = _top_converters(name, package)
    cols: list[list[Any]] = [[] for _ in convs]
    appends = [c.append for c in cols]
    pairs = [(a, attr, fn) for a, (attr, fn) in zip(appends, convs, strict=True)]
    errors: dict[int, str] = {}
    raw = rows.pybytes
    for j, (b, e, v) in enumerate(
        zip(starts.tolist(), ends.tolist(), versions.tolist(), strict=True)
    ):
        try:
            obj = decode(raw[b:e], v)
        except KafkaCodecError as exc:  # the row's own error; anything else is a bug
            errors[j] = str(exc) or type(exc).__name__
            for a in appends:
                a(None)
            continue
        for a, attr, fn in pairs:
            a(getattr(obj, attr) if fn is None else fn(getattr(obj, attr)))
    stype = message_arrow_type(name, package)
    arrays = [pa.array(c, type=stype.field(k).type) for k, c in enumerate(cols)]
    mask = None
    if errors:
        m = np.zeros(len(starts), np.bool_)
        m[list(errors)] = True
        mask = pa.array(m)
    return pa.StructArray.from_arrays(arrays, fields=list(stype), mask=mask), errors


def _prefix_decoder(cls: type[KafkaMessage]) -> Callable[[bytes, int], KafkaMessage]:
    """``cls.decode`` that ignores bytes after the message, as Kafka's coordinator records do."""

    def decode(data: bytes, version: int) -> KafkaMessage:
        return cls.read(data, 0, version)[0]

    return decode


@lru_cache(maxsize=64)  # a null topic union member is up to ~1 KB per row: keep few
def _nulls(typ: pa.DataType, n: int) -> pa.Array:
    return pa.nulls(n, typ)


# Column kinds of the engine's columnar decoder, by Spark atomic type.
_COLUMN_KINDS = {
    "byte": "int8",
    "short": "int16",
    "integer": "int32",
    "long": "int64",
    "double": "float64",
    "boolean": "bool",
    "string": "string",
    "binary": "binary",
}


@dataclass(frozen=True, slots=True)
class _Column:
    """A top-level column as the columnar decoder fills it."""

    field: pa.Field
    attr: str
    kind: str  # an atomic kind the engine writes, or "object" / "tagged" (objects returned)
    convert: Converter  # objects -> Arrow-ready values (object and tagged columns)


@cache
def _columns(name: str, package: str = SHIPPED) -> tuple[_Column, ...]:
    stype = message_arrow_type(name, package)
    out = []
    for k, f in enumerate(codecs(package).schemas[name]["fields"]):
        meta = f["metadata"]
        if meta.get("kafkaType") == "tagged":
            kind = "tagged"
        elif isinstance(f["type"], str):
            kind = _COLUMN_KINDS[f["type"]]
        else:
            kind = "object"
        convert = (
            None if kind != "object" and kind != "tagged" else _field_converter(f["type"], meta)
        )
        out.append(_Column(stype.field(k), meta["attr"], kind, convert))
    return tuple(out)


def _native_readers(cls: type[KafkaMessage]) -> tuple[ModuleType, Mapping[int, Any]] | None:
    """The engine and the class's readers when they are the engine's (the native backend)."""
    engine = native_engine()
    if engine is None or not hasattr(engine, "columns"):
        return None
    readers = cls._READERS
    if not all(type(r) is engine.Reader for r in readers.values()):
        return None
    return engine, readers


def decode_native(
    engine: ModuleType,
    readers: Mapping[int, Any],
    name: str,
    rows: Rows,
    starts: I64,
    ends: I64,
    versions: I64,
    live: BoolArr | None = None,
    *,
    trailing_ok: bool = False,
    package: str = SHIPPED,
    fields: frozenset[str] | None = None,
) -> tuple[pa.StructArray, dict[int, str]]:
    """:func:`decode_rows` through the engine's columnar decoder, with ``readers`` (the
    engine's object readers by version). A row it refuses is decoded again with the class's
    ``decode`` (or ``read``, with ``trailing_ok``), whose error text is the row's error.
    ``fields`` (struct field names) fills only those columns; the others are all null."""
    n = len(starts)
    cls = codecs(package).messages[name]
    live_versions = versions if live is None else versions[live]
    uniq = distinct(live_versions)
    if len(uniq) <= 1:
        index = np.zeros(n, np.int32) if live is None else live.astype(np.int32) - 1
    else:
        index = np.searchsorted(uniq, versions).astype(np.int32)
        if live is not None:
            index[~live] = -1
    columns = _columns(name, package)
    filled = [c for c in columns if fields is None or c.field.name in fields]
    valid, nulls, outs, failed = engine.columns(
        tuple(readers[int(v)] for v in uniq),
        tuple((c.attr, c.kind) for c in filled),
        rows.buffer,
        np.ascontiguousarray(starts, np.int64),
        np.ascontiguousarray(ends, np.int64),
        index,
        trailing_ok,
    )
    arrays: list[pa.Array] = []
    by_column = dict(zip(filled, outs, strict=True))
    for column in columns:
        typ = column.field.type
        out = by_column.get(column)
        if out is None:
            arrays.append(_nulls(typ, n))
            continue
        if column.kind in ("object", "tagged"):
            values, nonnull = out
            if not nonnull:
                arrays.append(_nulls(typ, n))
                continue
            convert = column.convert
            if convert is not None and column.kind == "tagged":
                # Most rows have no tagged fields: no call for those.
                values = [convert(v) if v else None for v in values]
            elif convert is not None:
                values = [None if v is None else convert(v) for v in values]
            arrays.append(pa.array(values, type=typ))
            continue
        bitmap = pa.py_buffer(out[0]) if out[1] else None
        buffers = [bitmap, *(pa.py_buffer(b) for b in out[2:])]
        arrays.append(pa.Array.from_buffers(typ, n, buffers, null_count=out[1]))
    stype = message_arrow_type(name, package)
    structs = pa.Array.from_buffers(
        stype, n, [pa.py_buffer(valid) if nulls else None], null_count=nulls, children=arrays
    )
    errors: dict[int, str] = {}
    decode = _prefix_decoder(cls) if trailing_ok else cls.decode
    for j in failed:
        b, e, v = int(starts[j]), int(ends[j]), int(versions[j])
        data = rows.buffer.slice(b, e - b).to_pybytes()
        try:
            decode(data, v)
        except KafkaCodecError as exc:
            errors[j] = str(exc) or type(exc).__name__
        else:
            raise RuntimeError(
                f"the native columnar decoder refused a row of {name} v{v} that the codec "
                f"reads ({data.hex()}): please report this"
            )
    return structs, errors


def decode_rows(
    name: str,
    rows: Rows,
    starts: I64,
    ends: I64,
    versions: I64,
    live: BoolArr | None = None,
    *,
    trailing_ok: bool = False,
    package: str = SHIPPED,
    fields: frozenset[str] | None = None,
) -> tuple[pa.StructArray, dict[int, str]]:
    """Decode the message bodies ``[starts, ends)`` at ``versions`` (already valid versions).

    Only rows in ``live`` (default: all) are decoded; the others are null without an error.
    Returns one struct per body (null where it failed) and the errors by index into ``starts``.
    A message must end at ``ends`` unless ``trailing_ok``, which ignores bytes after it.
    The engine's columnar decoder runs when the message's readers are the engine's (the
    native backend); otherwise the generated ``decode``, row by row (the reference).
    ``fields`` (struct field names) lets the engine leave the other columns null (they are
    read and checked all the same, so errors do not change); the reference fills them all.
    """
    n = len(starts)
    typ = message_arrow_type(name, package)
    if n == 0:
        return _nulls(typ, 0), {}
    if live is not None and live.all():
        live = None
    if live is not None and not live.any():
        return _nulls(typ, n), {}
    native = _native_readers(codecs(package).messages[name])
    if native is not None:
        engine, readers = native
        return decode_native(
            engine,
            readers,
            name,
            rows,
            starts,
            ends,
            versions,
            live,
            trailing_ok=trailing_ok,
            package=package,
            fields=fields,
        )
    if live is None:
        return _generic(name, rows, starts, ends, versions, trailing_ok, package)
    sel = np.nonzero(live)[0]
    structs, errs = _generic(
        name, rows, starts[sel], ends[sel], versions[sel], trailing_ok, package
    )
    errors = {int(sel[j]): reason for j, reason in errs.items()}
    # Scatter: row sel[j] takes structs[j]; the rows not decoded are null.
    positions = np.zeros(n, np.int64)
    positions[sel] = np.arange(len(sel))
    return structs.take(pa.array(positions, mask=~live)), errors


@dataclass(slots=True)
class Decoded:
    """The result of decoding one Arrow batch of one message."""

    values: pa.StructArray
    errors: dict[int, str]
    versions: I64  # the version read from the bytes (or given); -1 when none
    newer: BoolArr  # the version is above the spec's highest (decoded as the highest)


def clamp_versions(
    name: str,
    versions: I64,
    ok: BoolArr,
    errors: dict[int, str],
    rows_index: I64,
    package: str = SHIPPED,
) -> tuple[I64, BoolArr, BoolArr]:
    """Effective versions of versions written with the records (a prefix, a frame): the
    message's ``written_version`` rule (``codegen.runtime``), on arrays. One the spec has is
    read as itself, one above the highest with the highest when that is flexible (KIP-915);
    the others are errors with the rule's text."""
    cls = codecs(package).messages[name]
    newer = ok & (versions > cls.HIGHEST_VERSION)
    unreadable = ok & (versions < cls.LOWEST_VERSION)
    if cls.HIGHEST_VERSION not in cls.FLEXIBLE_VERSIONS:
        unreadable |= newer
    for j in np.nonzero(unreadable)[0].tolist():  # few rows: the rule says why, row by row
        try:
            cls.written_version(int(versions[j]))
        except ValueError as exc:
            errors[int(rows_index[j])] = str(exc)
        else:
            raise AssertionError(f"{name} reads version {int(versions[j])}")
    eff = np.minimum(versions, cls.HIGHEST_VERSION)
    return eff, newer & ~unreadable, ok & ~unreadable


def decode_message_array(
    arr: pa.Array | pa.ChunkedArray,
    name: str,
    version: int | str | None = None,
    package: str = SHIPPED,
) -> Decoded:
    """Decode every row of a binary array as message ``name``.

    ``version=None`` reads the version as :func:`default_framing` says (a ValueError for a
    message whose bytes carry none while it has several versions: never a guess); ``"prefix"``
    from an int16 in front of the message; a number means the bytes are the message body at
    that version, which must be one the message has (``given_version``: every row is an error
    with its text otherwise). A version written in the bytes is read by ``written_version``
    (:func:`clamp_versions`). Null rows give null structs and no error. ``package`` is the
    generated package whose codecs decode (the shipped one by default).
    """
    rows = arr if isinstance(arr, Rows) else Rows(arr)
    cls = codecs(package).messages[name]
    n = rows.n
    if version == "prefix":
        framing, fixed = "version", None
    elif isinstance(version, int):
        framing, fixed = "none", version
    elif needs_version(name, package):
        raise ValueError(
            f"{name}'s bytes carry no version and it has versions {cls.VALID_VERSIONS}: give "
            'the version of the bytes, or "prefix" when an int16 version comes first'
        )
    else:
        framing, fixed = default_framing(name, package)
    errors: dict[int, str] = {}
    valid = rows.valid
    starts = rows.starts
    ends = rows.ends
    if framing in ("version", "type"):
        prefix, have = rows.int16_at(starts, ends)
        what = "version" if framing == "version" else "record type"
        for i in np.nonzero(valid & ~have)[0].tolist():
            size = int(ends[i] - starts[i])
            errors[i] = f"could not read the int16 {what} prefix ({size} byte(s))"
        ok = valid & have
        starts = starts + 2
        if framing == "version":
            versions = np.where(have, prefix, -1)
        else:
            wrong = ok & (prefix != cls.API_KEY)
            for i in np.nonzero(wrong)[0].tolist():
                errors[i] = (
                    f"record type {int(prefix[i])} is not {name} (record type {cls.API_KEY})"
                )
            ok &= ~wrong
            versions = np.full(n, fixed or 0, np.int64)
    elif framing == "frame":
        idx = np.nonzero(valid)[0].astype(np.int64)
        api, ver, body, frame_errors = parse_frames(rows, idx)
        errors.update(frame_errors)
        found = api >= 0
        wrong = found & (api != cls.API_KEY)
        for j in np.nonzero(wrong)[0].tolist():
            errors[int(idx[j])] = f"metadata record api key {int(api[j])} is not {name}"
        ok = np.zeros(n, np.bool_)
        ok[idx] = found & ~wrong
        versions = np.full(n, -1, np.int64)
        versions[idx] = ver
        starts = starts.copy()
        starts[idx] = body
    else:
        ok = valid.copy()
        versions = np.full(n, fixed if fixed is not None else 0, np.int64)
        if isinstance(version, int):
            try:
                cls.given_version(version)
            except ValueError as exc:
                errors.update(dict.fromkeys(np.nonzero(valid)[0].tolist(), str(exc)))
                ok[:] = False
    index = np.arange(n, dtype=np.int64)
    eff, newer, ok = clamp_versions(name, versions, ok, errors, index, package)
    values, errs = decode_rows(name, rows, starts, ends, eff, ok, package=package)
    errors.update(errs)
    all_versions = np.where(valid & (ok | (versions >= 0)), versions, -1)
    return Decoded(values, errors, all_versions, newer)
