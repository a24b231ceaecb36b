"""The decode core: Arrow binary arrays in, Arrow struct arrays out. No pyspark here.

Rows are grouped by (effective) version. A version whose layout is fixed-width numbers and
strings (``VECTOR_LAYOUTS`` of the package's ``_spark_schemas``) is decoded over the binary array's
buffers: numbers with numpy, strings cut out with Arrow's ``take`` and checked as UTF-8 by
Arrow. In flexible versions that covers rows whose string lengths are one-byte uvarints and
whose tagged-field section is empty. Every other version, and every row the vectorized pass
finds malformed or outside that case, goes through the generated ``decode`` in a loop that
appends to one list per column. A malformed row therefore always gets the generated codec's
own error text.

Everything is built once per message and cached per process (workers build it on first use),
so nothing here is pickled with a UDF.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from codegen.runtime import KafkaMessage, read_uvarint, uuid_json
from spark_udfs.package import SHIPPED, codecs
from spark_udfs.schema import message_arrow_type

__all__ = [
    "Decoded",
    "Rows",
    "decode_message_array",
    "decode_rows",
    "default_framing",
]

I64 = npt.NDArray[np.int64]
BoolArr = npt.NDArray[np.bool_]
Converter = Callable[[Any], Any] | None

_FIXED: dict[str, tuple[int, str, pa.DataType]] = {
    "bool": (1, "u1", pa.bool_()),
    "int8": (1, "i1", pa.int8()),
    "int16": (2, ">i2", pa.int16()),
    "int32": (4, ">i4", pa.int32()),
    "int64": (8, ">i8", pa.int64()),
    "uint16": (2, ">u2", pa.int32()),
    "uint32": (4, ">u4", pa.int64()),
    "float64": (8, ">f8", pa.float64()),
}
_NATIVE = {
    "bool": np.bool_,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint16": np.int32,
    "uint32": np.int64,
    "float64": np.float64,
}


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
        vals, ok = _gather(self.data, pos, ends, 2, ">i2")
        return vals.astype(np.int64), ok


def _gather(
    data: npt.NDArray[np.uint8], pos: I64, ends: I64, size: int, dtype: str
) -> tuple[npt.NDArray[Any], BoolArr]:
    """Big-endian values of ``size`` bytes at ``pos`` (zero where they would run past ``ends``)."""
    ok = pos + size <= ends
    if len(data) < size:
        data = np.concatenate([data, np.zeros(size, np.uint8)])
    return np.where(ok, _read(data, np.where(ok, pos, 0), size, dtype), 0), ok


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
        except Exception as exc:
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


@cache
def _layouts(name: str, package: str = SHIPPED) -> dict[int, dict[str, Any]]:
    return codecs(package).vector_layouts.get(name, {})


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
        except Exception as exc:
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


@lru_cache(maxsize=64)
def _even_positions(n: int) -> pa.Array:
    return pa.array(np.arange(0, 2 * n, 2, dtype=np.int64))


@lru_cache(maxsize=64)  # a null topic union member is up to ~1 KB per row: keep few
def _nulls(typ: pa.DataType, n: int) -> pa.Array:
    return pa.nulls(n, typ)


def _slices(rows: Rows, pos: I64, lengths: I64) -> pa.Array | None:
    """The bytes ``[pos, pos + lengths)`` of each row as one binary array, cut out by Arrow.

    The slices and the gaps between them are laid out as a binary array of ``2n`` values over
    the input's data buffer, and Arrow's ``take`` copies every other value. That needs the
    slices in buffer order without overlaps (rows in order, each slice inside its row); returns
    None when they are not, and the caller gathers with numpy instead.
    """
    n = len(pos)
    size = len(rows.data)
    large = size >= 2**31
    bounds = np.empty(2 * n + 1, np.int64 if large else np.int32)
    bounds[0 : 2 * n : 2] = pos
    bounds[1 : 2 * n : 2] = pos + lengths
    bounds[2 * n] = bounds[2 * n - 1] if n else 0
    if n and (bounds[0] < 0 or bounds[-1] > size or (np.diff(bounds) < 0).any()):
        return None
    typ = pa.large_binary() if large else pa.binary()
    pieces = pa.Array.from_buffers(typ, 2 * n, [None, pa.py_buffer(bounds), rows.buffer])
    return pieces.take(_even_positions(n))


def _gathered_strings(
    data: npt.NDArray[np.uint8], pos: I64, lengths: I64
) -> tuple[pa.Buffer, pa.Buffer]:
    """Offsets and characters of the strings at ``pos`` with numpy (unordered rows)."""
    n = len(pos)
    offs = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offs[1:])
    total = int(offs[-1])
    if total:
        idx = np.repeat(pos - offs[:-1], lengths) + np.arange(total, dtype=np.int64)
        chars = data[idx]
    else:
        chars = np.zeros(0, np.uint8)
    return pa.py_buffer(offs.astype(np.int32)), pa.py_buffer(chars)


def _strings(rows: Rows, pos: I64, lengths: I64, nulls: BoolArr | None) -> pa.StringArray:
    """A string column from the bytes ``[pos, pos + lengths)`` (UTF-8 not yet checked)."""
    n = len(pos)
    sliced = _slices(rows, pos, lengths)
    if sliced is not None and pa.types.is_large_binary(sliced.type):
        sliced = sliced.cast(pa.binary())
    if sliced is None:
        offsets, chars = _gathered_strings(rows.data, pos, lengths)
    else:
        _, offsets, chars = sliced.buffers()
    bitmap = None
    null_count = 0
    if nulls is not None:
        null_count = int(nulls.sum())
        if null_count:
            bitmap = pa.py_buffer(np.packbits(~nulls, bitorder="little"))
    return pa.StringArray.from_buffers(n, offsets, chars, bitmap, null_count)


def _invalid_utf8(strings: pa.StringArray) -> list[int]:
    """Indices of the values that are not valid UTF-8 (bisects with Arrow's validation)."""
    found: list[int] = []
    todo = [(0, len(strings))]
    while todo:
        lo, hi = todo.pop()
        try:
            strings.slice(lo, hi - lo).validate(full=True)
        except pa.ArrowInvalid:
            if hi - lo == 1:
                found.append(lo)
            else:
                mid = (lo + hi) // 2
                todo += [(lo, mid), (mid, hi)]
    return found


def _constant(value: Any, typ: pa.DataType, n: int) -> pa.Array:
    return _constant_cached(repr(value), typ, n)


@lru_cache(maxsize=256)
def _constant_cached(text: str, typ: pa.DataType, n: int) -> pa.Array:
    value = ast.literal_eval(text)
    if isinstance(value, dict):
        value = list(value.items())
    return pa.array([value], type=typ).take(np.zeros(n, np.int64))


@dataclass(frozen=True, slots=True)
class _Run:
    """Adjacent fixed-width wire values, bounds-checked once: numbers, then maybe the length of
    a string (whose bytes follow the run), or the tagged-field count of a flexible version."""

    size: int
    numbers: tuple[tuple[int, int, str], ...]  # (byte offset in the run, struct field, spec type)
    string: tuple[int, bool, bool] | None  # (struct field, nullable, compact) of its last string
    tags_at: int | None = None  # offset of the tagged-field count, which must be 0 (no tags)


@cache
def _plan(name: str, version: int, package: str = SHIPPED) -> tuple[_Run, ...]:
    runs: list[_Run] = []
    numbers: list[tuple[int, int, str]] = []
    size = 0
    for kind, fi, nullable in _layouts(name, package)[version]["items"]:
        if kind in ("string", "compact_string"):
            compact = kind == "compact_string"
            runs.append(_Run(size + (1 if compact else 2), tuple(numbers), (fi, nullable, compact)))
            numbers, size = [], 0
        elif kind == "tags":  # always last
            runs.append(_Run(size + 1, tuple(numbers), None, size))
            numbers, size = [], 0
        else:
            numbers.append((size, fi, kind))
            size += _FIXED[kind][0]
    if numbers:
        runs.append(_Run(size, tuple(numbers), None))
    return tuple(runs)


def _read(data: npt.NDArray[np.uint8], pos: I64, size: int, dtype: str) -> npt.NDArray[Any]:
    """Big-endian values of ``size`` bytes at ``pos`` (all inside ``data``).

    An overlapping view with one value starting at every byte lets numpy copy whole values
    (much faster than gathering rows of a ``sliding_window_view``).
    """
    every = np.ndarray(shape=(len(data) - size + 1,), dtype=dtype, buffer=data, strides=(1,))
    return every[pos]


def _vectorized(
    name: str,
    version: int,
    rows: Rows,
    starts: I64,
    ends: I64,
    skip: BoolArr | None = None,
    trailing_ok: bool = False,
    package: str = SHIPPED,
) -> tuple[pa.StructArray, BoolArr]:
    """Decode rows of one vectorizable version; returns the structs and the rows it could not.

    Those rows are malformed, or outside the fast case (a uvarint length of two bytes or more,
    tagged fields): the caller reads them with the generated reader. Rows in ``skip`` are null
    and never fail. With ``trailing_ok``, bytes after the message are ignored instead of
    failing the row.
    """
    stype = message_arrow_type(name, package)
    data = rows.data
    n = len(starts)
    p = starts if skip is None else np.where(skip, ends, starts)
    bad = np.zeros(n, np.bool_)
    cols: list[pa.Array | None] = [None] * stype.num_fields
    utf8_checks: list[pa.StringArray] = []
    for run in _plan(name, version, package):
        ok = p + run.size <= ends
        bad |= ~ok
        if len(data) < run.size:
            data = np.concatenate([data, np.zeros(run.size, np.uint8)])
        q = np.where(ok, p, 0)
        for at, fi, kind in run.numbers:
            size, dtype, atype = _FIXED[kind]
            vals = _read(data, q + at if at else q, size, dtype)
            native = vals != 0 if kind == "bool" else vals.astype(_NATIVE[kind])
            cols[fi] = pa.array(native, type=atype)
        p = p + run.size
        if run.tags_at is not None:  # rows with tagged fields take the generated reader
            bad |= _read(data, q + run.tags_at, 1, "u1") != 0
        if run.string is None:
            continue
        fi, nullable, compact = run.string
        if compact:  # uvarint length + 1 (0: null); longer uvarints take the generated reader
            ln = _read(data, q + (run.size - 1), 1, "u1").astype(np.int64)
            bad |= ln >= 0x80
            ln -= 1
        else:
            ln = _read(data, q + (run.size - 2), 2, ">i2").astype(np.int64)
        nulls = ln < 0
        if not nullable:
            bad |= nulls
        ln[nulls | bad] = 0
        bad |= p + ln > ends
        ln[bad] = 0
        arr = _strings(rows, np.minimum(p, ends), ln, nulls if nullable else None)
        cols[fi] = arr
        if ln.any():
            utf8_checks.append(arr)
        p = p + ln
    if not trailing_ok:
        bad |= p != ends
    for arr in utf8_checks:
        try:
            arr.validate(full=True)
        except pa.ArrowInvalid:  # invalid UTF-8 somewhere: find the rows (rare)
            bad[_invalid_utf8(arr)] = True
    if skip is not None:
        bad &= ~skip
    for fi, default in _layouts(name, package)[version]["defaults"]:
        cols[fi] = _constant(default, stype.field(fi).type, n)
    arrays = [c if c is not None else _nulls(stype.field(k).type, n) for k, c in enumerate(cols)]
    null = bad if skip is None else bad | skip
    mask = pa.array(null) if null.any() else None
    return pa.StructArray.from_arrays(arrays, fields=list(stype), mask=mask), bad


def _assemble(parts: list[tuple[I64, pa.Array]], n: int, typ: pa.DataType) -> pa.Array:
    """Put the arrays of row subsets back in row order (rows in no part are null)."""
    parts = [(idx, a) for idx, a in parts if len(idx)]
    covered = sum(len(idx) for idx, _ in parts)
    if covered < n:
        seen = np.zeros(n, np.bool_)
        for idx, _ in parts:
            seen[idx] = True
        rest = np.nonzero(~seen)[0]
        parts.append((rest, _nulls(typ, len(rest))))
    if len(parts) == 1:
        idx, arr = parts[0]
        if n == 0 or (idx[0] == 0 and np.all(np.diff(idx) == 1)):
            return arr
    if not parts:
        return _nulls(typ, 0)
    order = np.concatenate([idx for idx, _ in parts])
    inverse = np.empty(n, np.int64)
    inverse[order] = np.arange(n, dtype=np.int64)
    return pa.concat_arrays([a for _, a in parts]).take(pa.array(inverse))


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
) -> tuple[pa.StructArray, dict[int, str]]:
    """Decode the message bodies ``[starts, ends)`` at ``versions`` (already valid versions).

    Only rows in ``live`` (default: all) are decoded; the others are null without an error.
    Returns one struct per body (null where it failed) and the errors by index into ``starts``.
    A message must end at ``ends`` unless ``trailing_ok``, which ignores bytes after it.
    """
    n = len(starts)
    typ = message_arrow_type(name, package)
    if n == 0:
        return _nulls(typ, 0), {}
    if live is not None and live.all():
        live = None
    live_versions = versions if live is None else versions[live]
    if not len(live_versions):
        return _nulls(typ, n), {}
    first = int(live_versions[0])
    single = bool((live_versions == first).all())
    layouts = _layouts(name, package)
    errors: dict[int, str] = {}
    # one vectorizable version over (most of) the batch: decode in place, no reordering
    if single and first in layouts and (live is None or 2 * len(live_versions) >= n):
        skip = None if live is None else ~live
        structs, bad = _vectorized(name, first, rows, starts, ends, skip, trailing_ok, package)
        if not bad.any():
            return structs, errors
        sel = np.nonzero(bad)[0]
        retried, errs = _generic(
            name, rows, starts[sel], ends[sel], versions[sel], trailing_ok, package
        )
        for j, reason in errs.items():
            errors[int(sel[j])] = reason
        if len(errs) == len(sel):  # the codec fails on them too: they are already null
            return structs, errors
        keep = np.nonzero(~bad)[0]
        return _assemble([(keep, structs.filter(pa.array(~bad))), (sel, retried)], n, typ), errors
    live_rows = np.arange(n, dtype=np.int64) if live is None else np.nonzero(live)[0]
    parts: list[tuple[I64, pa.Array]] = []
    uniq = [first] if single else np.unique(live_versions).tolist()
    for v in uniq:
        sel = live_rows if single else live_rows[live_versions == v]
        if v in layouts:
            structs, bad = _vectorized(
                name, v, rows, starts[sel], ends[sel], trailing_ok=trailing_ok, package=package
            )
            if not bad.any():
                parts.append((sel, structs))
                continue
            parts.append((sel[~bad], structs.filter(pa.array(~bad))))
            sel = sel[bad]
        structs, errs = _generic(
            name, rows, starts[sel], ends[sel], versions[sel], trailing_ok, package
        )
        parts.append((sel, structs))
        for j, reason in errs.items():
            errors[int(sel[j])] = reason
    return _assemble(parts, n, typ), errors


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
    """Effective versions: above the highest known, the highest (Kafka's reading rule, KIP-915).

    The rule needs a flexible highest version (unknown tagged fields can be skipped, nothing
    else may change); above a rigid one a version cannot be read.
    """
    cls = codecs(package).messages[name]
    newer = ok & (versions > cls.HIGHEST_VERSION)
    too_low = ok & (versions < cls.LOWEST_VERSION)
    for j in np.nonzero(too_low)[0].tolist():
        errors[int(rows_index[j])] = (
            f"{name} has no version {int(versions[j])} (valid versions: {cls.VALID_VERSIONS})"
        )
    unreadable = too_low
    if cls.HIGHEST_VERSION not in cls.FLEXIBLE_VERSIONS and newer.any():
        for j in np.nonzero(newer)[0].tolist():
            errors[int(rows_index[j])] = (
                f"value version {int(versions[j])} of {name} is newer than the newest known "
                f"({cls.HIGHEST_VERSION}), which is not flexible, so it cannot be read"
            )
        unreadable = too_low | newer
    eff = np.minimum(versions, cls.HIGHEST_VERSION)
    return eff, newer & ~unreadable, ok & ~unreadable


def decode_message_array(
    arr: pa.Array | pa.ChunkedArray,
    name: str,
    version: int | None = None,
    package: str = SHIPPED,
) -> Decoded:
    """Decode every row of a binary array as message ``name``.

    ``version=None`` reads the version as :func:`default_framing` says; otherwise the bytes are
    the message body at ``version``. Null rows give null structs and no error. ``package``
    is the generated package whose codecs decode (the shipped one by default).
    """
    rows = arr if isinstance(arr, Rows) else Rows(arr)
    cls = codecs(package).messages[name]
    n = rows.n
    framing, fixed = ("none", version) if version is not None else default_framing(name, package)
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
    index = np.arange(n, dtype=np.int64)
    eff, newer, ok = clamp_versions(name, versions, ok, errors, index, package)
    values, errs = decode_rows(name, rows, starts, ends, eff, ok, package=package)
    errors.update(errs)
    all_versions = np.where(valid & (ok | (versions >= 0)), versions, -1)
    return Decoded(values, errors, all_versions, newer)
