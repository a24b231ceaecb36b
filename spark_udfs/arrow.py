"""The decode core: Arrow binary arrays in, Arrow struct arrays out. No pyspark here.

Rows are grouped by (effective) version. A version whose layout is fixed-width numbers and
int16-length strings (``generated._spark_schemas.VECTOR_LAYOUTS``) is decoded with numpy gathers
over the binary array's buffers; every other version, and every row the vectorized pass finds
malformed, goes through the generated ``decode`` in a loop that appends to one list per column.
A malformed row therefore always gets the generated codec's own error text.

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

from codegen.runtime import read_uvarint, uuid_json
from generated import MESSAGES
from generated._spark_schemas import FOLDERS, SCHEMAS, VECTOR_LAYOUTS
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
        self.data: npt.NDArray[np.uint8] = (
            np.zeros(0, np.uint8) if raw is None else np.frombuffer(raw, dtype=np.uint8)
        )
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
    q = np.where(ok, pos, 0)
    raw = np.lib.stride_tricks.sliding_window_view(data, size)[q]
    return raw.view(dtype).reshape(len(pos)), ok


# ---------------------------------------------------------------------------------- framing


def default_framing(name: str) -> tuple[str, int | None]:
    """How the bytes of message ``name`` carry their version when none is given.

    ``version``: int16 version prefix (coordinator values, consumer-protocol data);
    ``type``: int16 record type prefix, the key at version 0 (coordinator keys);
    ``frame``: uvarint frame version, api key and version (``__cluster_metadata`` records);
    ``none``: no prefix, the lowest version (KRaft control records).
    """
    cls = MESSAGES[name]
    if cls.SPEC_TYPE == "coordinator-value":
        return "version", None
    if cls.SPEC_TYPE == "coordinator-key":
        return "type", 0
    if cls.SPEC_TYPE == "metadata":
        return "frame", None
    if FOLDERS[name] == "consumer_protocol":
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
        return lambda d: list(d.items()) if d else []
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
def _top_converters(name: str) -> tuple[tuple[str, Converter], ...]:
    return tuple(
        (f["metadata"]["attr"], _field_converter(f["type"], f["metadata"]))
        for f in SCHEMAS[name]["fields"]
    )


@cache
def _layouts(name: str) -> dict[int, dict[str, Any]]:
    return VECTOR_LAYOUTS.get(name, {})


# ---------------------------------------------------------------------------------- decoding


def _generic(
    name: str, rows: Rows, starts: I64, ends: I64, versions: I64
) -> tuple[pa.StructArray, dict[int, str]]:
    """Decode with the generated codec; returns the structs and errors by local index."""
    cls = MESSAGES[name]
    decode = cls.decode
    convs = _top_converters(name)
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
    stype = message_arrow_type(name)
    arrays = [pa.array(c, type=stype.field(k).type) for k, c in enumerate(cols)]
    mask = None
    if errors:
        m = np.zeros(len(starts), np.bool_)
        m[list(errors)] = True
        mask = pa.array(m)
    return pa.StructArray.from_arrays(arrays, fields=list(stype), mask=mask), errors


def _strings(data: npt.NDArray[np.uint8], pos: I64, lengths: I64, nulls: BoolArr) -> pa.StringArray:
    n = len(pos)
    offs = np.zeros(n + 1, np.int32)
    np.cumsum(lengths, out=offs[1:])
    total = int(offs[-1])
    if total:
        idx = np.repeat(pos - offs[:-1], lengths) + np.arange(total, dtype=np.int64)
        chars = data[idx]
    else:
        chars = np.zeros(0, np.uint8)
    bitmap = None
    null_count = int(nulls.sum())
    if null_count:
        bitmap = pa.py_buffer(np.packbits(~nulls, bitorder="little"))
    return pa.StringArray.from_buffers(
        n, pa.py_buffer(offs), pa.py_buffer(chars), bitmap, null_count
    )


def _constant(value: Any, typ: pa.DataType, n: int) -> pa.Array:
    return _constant_cached(repr(value), typ, n)


@lru_cache(maxsize=256)
def _constant_cached(text: str, typ: pa.DataType, n: int) -> pa.Array:
    value = ast.literal_eval(text)
    if isinstance(value, dict):
        value = list(value.items())
    return pa.array([value], type=typ).take(np.zeros(n, np.int64))


def _vectorized(
    layout: dict[str, Any], name: str, data: npt.NDArray[np.uint8], starts: I64, ends: I64
) -> tuple[pa.StructArray, BoolArr]:
    """Decode rows of one vectorizable version; returns the structs and the rows that failed."""
    stype = message_arrow_type(name)
    n = len(starts)
    p = starts.copy()
    bad = np.zeros(n, np.bool_)
    cols: list[pa.Array | None] = [None] * stype.num_fields
    strings: list[tuple[int, I64, I64]] = []
    for kind, fi, nullable in layout["items"]:
        if kind == "string":
            ln, ok = _gather(data, p, ends, 2, ">i2")
            ln = ln.astype(np.int64)
            bad |= ~ok
            p = p + 2
            nulls = ln < 0
            if not nullable:
                bad |= nulls
            ln = np.where(nulls | bad, 0, ln)
            bad |= p + ln > ends
            ln = np.where(bad, 0, ln)
            cols[fi] = arr = _strings(data, p, ln, nulls)
            if ln.any():
                try:
                    arr.validate(full=True)
                except pa.ArrowInvalid:
                    strings.append((fi, p.copy(), ln))
            p = p + ln
        else:
            size, dtype, atype = _FIXED[kind]
            vals, ok = _gather(data, p, ends, size, dtype)
            bad |= ~ok
            native = vals != 0 if kind == "bool" else vals.astype(_NATIVE[kind])
            cols[fi] = pa.array(native, type=atype)
            p = p + size
    bad |= p != ends
    for _fi, pos, ln in strings:  # invalid UTF-8 somewhere: find the rows (rare)
        for j in np.nonzero(ln)[0].tolist():
            try:
                data[pos[j] : pos[j] + ln[j]].tobytes().decode("utf-8")
            except UnicodeDecodeError:
                bad[j] = True
    for fi, default in layout["defaults"]:
        cols[fi] = _constant(default, stype.field(fi).type, n)
    arrays = [c if c is not None else pa.nulls(n, stype.field(k).type) for k, c in enumerate(cols)]
    mask = pa.array(bad) if bad.any() else None
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
        parts.append((rest, pa.nulls(len(rest), typ)))
    if len(parts) == 1:
        idx, arr = parts[0]
        if n == 0 or (idx[0] == 0 and np.all(np.diff(idx) == 1)):
            return arr
    if not parts:
        return pa.nulls(0, typ)
    order = np.concatenate([idx for idx, _ in parts])
    inverse = np.empty(n, np.int64)
    inverse[order] = np.arange(n, dtype=np.int64)
    return pa.concat_arrays([a for _, a in parts]).take(pa.array(inverse))


def decode_rows(
    name: str, rows: Rows, starts: I64, ends: I64, versions: I64
) -> tuple[pa.StructArray, dict[int, str]]:
    """Decode the message bodies ``[starts, ends)`` at ``versions`` (already valid versions).

    Returns one struct per body (null where it failed) and the errors by index into ``starts``.
    """
    n = len(starts)
    typ = message_arrow_type(name)
    if n == 0:
        return pa.nulls(0, typ), {}
    layouts = _layouts(name)
    parts: list[tuple[I64, pa.Array]] = []
    errors: dict[int, str] = {}
    single = bool((versions == versions[0]).all())
    uniq = [int(versions[0])] if single else np.unique(versions).tolist()
    for v in uniq:
        sel = np.arange(n, dtype=np.int64) if single else np.nonzero(versions == v)[0]
        layout = layouts.get(v)
        if layout is not None:
            structs, bad = _vectorized(layout, name, rows.data, starts[sel], ends[sel])
            if not bad.any():
                parts.append((sel, structs))
                continue
            parts.append((sel[~bad], structs.filter(pa.array(~bad))))
            sel = sel[bad]
        structs, errs = _generic(name, rows, starts[sel], ends[sel], versions[sel])
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
    name: str, versions: I64, ok: BoolArr, errors: dict[int, str], rows_index: I64
) -> tuple[I64, BoolArr, BoolArr]:
    """Effective versions: above the highest known, the highest (Kafka's reading rule)."""
    cls = MESSAGES[name]
    newer = ok & (versions > cls.HIGHEST_VERSION)
    too_low = ok & (versions < cls.LOWEST_VERSION)
    for j in np.nonzero(too_low)[0].tolist():
        errors[int(rows_index[j])] = (
            f"{name} has no version {int(versions[j])} (valid versions: {cls.VALID_VERSIONS})"
        )
    eff = np.minimum(versions, cls.HIGHEST_VERSION)
    return eff, newer, ok & ~too_low


def decode_message_array(
    arr: pa.Array | pa.ChunkedArray, name: str, version: int | None = None
) -> Decoded:
    """Decode every row of a binary array as message ``name``.

    ``version=None`` reads the version as :func:`default_framing` says; otherwise the bytes are
    the message body at ``version``. Null rows give null structs and no error.
    """
    rows = arr if isinstance(arr, Rows) else Rows(arr)
    cls = MESSAGES[name]
    n = rows.n
    framing, fixed = ("none", version) if version is not None else default_framing(name)
    errors: dict[int, str] = {}
    idx = np.nonzero(rows.valid)[0].astype(np.int64)
    starts = rows.starts[idx]
    ends = rows.ends[idx]
    ok = np.ones(len(idx), np.bool_)
    if framing in ("version", "type"):
        prefix, have = rows.int16_at(starts, ends)
        for j in np.nonzero(~have)[0].tolist():
            what = "version" if framing == "version" else "record type"
            size = int(ends[j] - starts[j])
            errors[int(idx[j])] = f"could not read the int16 {what} prefix ({size} byte(s))"
        ok &= have
        starts = starts + 2
        if framing == "version":
            versions = prefix
        else:
            wrong = ok & (prefix != cls.API_KEY)
            for j in np.nonzero(wrong)[0].tolist():
                errors[int(idx[j])] = (
                    f"record type {int(prefix[j])} is not {name} (record type {cls.API_KEY})"
                )
            ok &= ~wrong
            versions = np.full(len(idx), fixed or 0, np.int64)
    elif framing == "frame":
        api, versions, starts, frame_errors = parse_frames(rows, idx)
        errors.update(frame_errors)
        ok &= api >= 0
        wrong = ok & (api != cls.API_KEY)
        for j in np.nonzero(wrong)[0].tolist():
            errors[int(idx[j])] = f"metadata record api key {int(api[j])} is not {name}"
        ok &= ~wrong
    else:
        versions = np.full(len(idx), fixed if fixed is not None else 0, np.int64)
    eff, newer, ok = clamp_versions(name, versions, ok, errors, idx)
    good = idx[ok]
    structs, errs = decode_rows(name, rows, starts[ok], ends[ok], eff[ok])
    for j, reason in errs.items():
        errors[int(good[j])] = reason
    values = _assemble([(good, structs)], n, message_arrow_type(name))
    all_versions = np.full(n, -1, np.int64)
    all_versions[idx] = np.where(ok | (versions >= 0), versions, -1)
    all_newer = np.zeros(n, np.bool_)
    all_newer[idx] = newer
    return Decoded(values, errors, all_versions, all_newer)
