"""A user's own topics decoded on Arrow arrays, as a topic map says. No pyspark here.

The rules and error texts are those of :mod:`codegen.dumps.user_topics` (``dump`` and the
Python API): a side the map names is decoded with its message at the map's version, or at the
one read from an int16 prefix or a header; a null key stays null, a null value is a tombstone;
a side that does not decode makes the row an error (``key: ...`` / ``value: ...``), with null
decoded columns. The bodies go through the engine's columnar decoder (``decode_rows``) on the
native backend, the generated ``decode`` on the pure one.

The decoded columns are those of the topic functions (``recordType`` null, ``recordName`` the
value's message, ``decodedKey`` / ``decodedValue`` unions with one member per message,
``valueVersion``, ``isTombstone``, ``isNewerVersion``), so one read decodes internal and user
topics into the same columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np
import pyarrow as pa

from codegen.columnar.decode import I64, BoolArr, Rows, clamp_versions, decode_rows
from codegen.columnar.package import codecs
from codegen.columnar.schema import DECODE_ERROR, message_arrow_type
from codegen.columnar.topics import TopicDecoded
from codegen.dumps.topic_map import (
    PREFIX_SIZE,
    MessageSide,
    TopicEntry,
    TopicMap,
    header_values,
    header_version,
    missing_header,
    prefix_error,
)

__all__ = ["RECORD_KEYS", "decode_user_arrays", "record_keys", "user_topics_arrow_type"]

RECORD_KEYS = "kafka-specgen.recordKeys"
"""The Spark metadata key of ``decodedKey`` that names, per ``recordName`` of a user topic,
the ``decodedKey`` members its keys are (``spark_udfs.flat`` finds a record's key by it)."""

_UNIONS = ("decodedKey", "decodedValue")
_ORDER = (
    "recordType",
    "recordName",
    "decodedKey",
    "decodedValue",
    "valueVersion",
    "isTombstone",
    "isNewerVersion",
    DECODE_ERROR,
)


def _members(entries: Sequence[TopicEntry], side: str, package: str) -> list[pa.Field]:
    names = [s.message for e in entries if (s := getattr(e, side)) is not None]
    return [pa.field(n, message_arrow_type(n, package)) for n in dict.fromkeys(names)]


@cache
def user_topics_arrow_type(
    base: pa.StructType | None, topic_map: TopicMap, topics: tuple[str, ...], permissive: bool
) -> pa.StructType:
    """The decoded columns of a read: ``base`` (the internal topics', None when there are none)
    with the messages of the map entries of ``topics`` added to its ``decodedKey`` and
    ``decodedValue`` unions (a message already there is not added twice)."""
    entries = list({e.pattern: e for t in topics if (e := topic_map.entry_for(t))}.values())
    fields = {f.name: f for f in base} if base is not None else {}
    fields.setdefault("recordType", pa.field("recordType", pa.int16()))
    fields.setdefault("recordName", pa.field("recordName", pa.string()))
    for union, side in zip(_UNIONS, ("key", "value"), strict=True):
        added = _members(entries, side, topic_map.package)
        if not added and union not in fields:
            continue
        have = list(fields[union].type) if union in fields else []
        known = {m.name: m for m in have}
        for member in added:
            if member.name in known and known[member.name].type != member.type:
                raise ValueError(
                    f"kafka-log: the topic map's {member.name} ({topic_map.package}) is not the "
                    f"{member.name} of the internal topics' codecs; rename one of the messages"
                )
        fields[union] = pa.field(union, pa.struct(have + [m for m in added if m.name not in known]))
    fields.setdefault("valueVersion", pa.field("valueVersion", pa.int16()))
    fields.setdefault("isTombstone", pa.field("isTombstone", pa.bool_()))
    fields.setdefault("isNewerVersion", pa.field("isNewerVersion", pa.bool_()))
    if permissive:
        fields.setdefault(DECODE_ERROR, pa.field(DECODE_ERROR, pa.string()))
    return pa.struct([fields[name] for name in _ORDER if name in fields])


def record_keys(topic_map: TopicMap, topics: Sequence[str]) -> dict[str, list[str]]:
    """``recordName`` -> the key messages of the map's entries of ``topics`` that give records
    that name (an entry's value message, else its key's), each once, in map order."""
    keys: dict[str, list[str]] = {}
    for entry in topic_map.entries_for(list(topics)).values():
        if entry.key is not None:
            names = keys.setdefault(entry.name, [])
            if entry.key.message not in names:
                names.append(entry.key.message)
    return keys


def _header_versions(
    name: str, headers: pa.Array | None, live: BoolArr, errors: dict[int, str], which: str
) -> tuple[I64, BoolArr]:
    """The version each ``live`` row's header ``name`` names (its last such header)."""
    n = len(live)
    versions = np.full(n, -1, np.int64)
    ok = live.copy()
    rows = [] if headers is None else headers.to_pylist()
    for i in np.nonzero(live)[0].tolist():
        found = header_values(rows[i] if rows else None, name)
        try:
            if not found:
                raise ValueError(missing_header(name))
            versions[i] = header_version(name, found[-1])
        except ValueError as exc:
            errors[i] = f"{which}: {exc}"
            ok[i] = False
    return versions, ok


def _decode_side(
    side: MessageSide,
    which: str,
    column: pa.Array,
    headers: pa.Array | None,
    live: BoolArr,
    errors: dict[int, str],
    package: str,
) -> tuple[pa.StructArray, I64, BoolArr, BoolArr, BoolArr]:
    """(structs, versions written, which rows have one, newer, decoded) of the ``live`` rows
    of one side, by the one version rule (:mod:`codegen.dumps.topic_map`)."""
    rows = Rows(column)
    cls = codecs(package).messages[side.message]
    starts = rows.starts
    ok = live.copy()
    if side.prefix:
        prefix, have = rows.int16_at(rows.starts, rows.ends)
        for i in np.nonzero(live & ~have)[0].tolist():
            errors[i] = f"{which}: {prefix_error(int(rows.ends[i] - rows.starts[i]))}"
        ok &= have
        versions = np.where(ok, prefix, -1)
        starts = starts + PREFIX_SIZE
    elif side.header is not None:
        versions, ok = _header_versions(side.header, headers, live, errors, which)
    else:
        assert side.version is not None  # a map's side has one way to know its version
        versions = np.where(live, cls.given_version(side.version), -1)
    written = ok.copy()
    index = np.arange(len(versions), dtype=np.int64)
    side_errors: dict[int, str] = {}
    effective, newer, ok = clamp_versions(side.message, versions, ok, side_errors, index, package)
    errors.update((i, f"{which}: {reason}") for i, reason in side_errors.items())
    structs, errs = decode_rows(
        side.message, rows, starts, rows.ends, effective, ok, package=package
    )
    for i, reason in errs.items():
        errors[i] = f"{which}: {reason}"
        ok[i] = False
    return structs, versions, written, newer, ok


def _union(typ: pa.StructType, member: str | None, arr: pa.StructArray | None, n: int) -> pa.Array:
    """A union column with ``arr`` as ``member`` (null where ``arr`` is) and the others null."""
    if member is None or arr is None:
        return pa.nulls(n, typ)
    children = [arr if f.name == member else pa.nulls(n, f.type) for f in typ]
    mask = pa.array(~np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), np.bool_))
    return pa.StructArray.from_arrays(children, fields=list(typ), mask=mask)


def _null_where(arr: pa.StructArray, rows: BoolArr) -> pa.StructArray:
    if not rows.any():
        return arr
    null = rows | ~np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), np.bool_)
    children = [arr.field(i) for i in range(arr.type.num_fields)]
    return pa.StructArray.from_arrays(children, fields=list(arr.type), mask=pa.array(null))


def decode_user_arrays(
    entry: TopicEntry,
    package: str,
    typ: pa.StructType,
    key: pa.Array,
    value: pa.Array,
    headers: pa.Array | None = None,
    control: pa.Array | None = None,
) -> TopicDecoded:
    """Decode one batch of records of a topic of ``entry`` into the columns of ``typ`` (those
    of :func:`user_topics_arrow_type` it names); see the module docstring."""
    n = len(value)
    is_control = np.zeros(n, np.bool_)
    if control is not None:
        is_control = np.asarray(control.fill_null(False).to_numpy(zero_copy_only=False), np.bool_)
    errors: dict[int, str] = {}
    sides: dict[str, tuple[str, pa.StructArray, BoolArr]] = {}
    versions = np.full(n, -1, np.int64)
    has_version = np.zeros(n, np.bool_)
    newer = np.zeros(n, np.bool_)
    value_valid = Rows(value).valid
    for which, side, column in (("key", entry.key, key), ("value", entry.value, value)):
        if side is None:
            continue
        live = Rows(column).valid & ~is_control
        structs, read, written, side_newer, ok = _decode_side(
            side, which, column, headers, live, errors, package
        )
        sides[which] = (side.message, structs, ok)
        newer |= side_newer
        if which == "value":
            versions, has_version = read, written
    failed = np.zeros(n, np.bool_)
    if errors:
        failed[list(errors)] = True
    columns: dict[str, pa.Array] = {}
    names = [f.name for f in typ]
    if "recordType" in names:
        columns["recordType"] = pa.nulls(n, pa.int16())
    if "recordName" in names:
        columns["recordName"] = pa.array(
            [None if c else entry.name for c in is_control.tolist()], pa.string()
        )
    for union, which in zip(_UNIONS, ("key", "value"), strict=True):
        if union not in names:
            continue
        found = sides.get(which)
        arr = None if found is None else _null_where(found[1], failed)
        columns[union] = _union(typ.field(union).type, found and found[0], arr, n)
    if "valueVersion" in names:
        columns["valueVersion"] = pa.array(
            np.where(has_version, versions, 0).astype(np.int16), mask=~has_version
        )
    if "isTombstone" in names:
        columns["isTombstone"] = pa.array(~value_valid & ~is_control & ~failed)
    if "isNewerVersion" in names:
        columns["isNewerVersion"] = pa.array(newer & ~failed)
    return TopicDecoded(columns, errors)
