"""The offset commits of ``__consumer_offsets`` rows decoded by the native engine in one pass
over the key and value columns (``commit_columns.h``), into the columns the topic decoder
gives them (:func:`codegen.columnar.topics.decode_topic_arrays` with the commit names and
fields, the reference): the same types, values, nulls and refused rows, whose error texts the
reference gives (it decodes those rows again). :func:`native_commit_columns` returns None where
the engine cannot: the pure backend, or a package whose commit specs are not the layouts the
engine reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any, Final

import pyarrow as pa

from codegen.columnar.decode import _nulls
from codegen.columnar.package import SHIPPED, codecs
from codegen.columnar.topics import TOPICS, TopicDecoded, decode_topic_arrays, union_type
from codegen.dumps.views.commit_rows import COMMIT_FIELDS, COMMIT_NAMES
from codegen.runtime.backends import NATIVE, backend, native_engine

__all__ = [
    "engine_checks",
    "native_commit_columns",
    "native_commit_flags",
]

_FAMILY: Final = "consumer_offsets"
_FLAGS, _ALL = "COMMIT_FLAGS", "COMMIT_ALL"
"""What ``commit_columns`` writes (the names of the engine's constants for it): the flags alone,
every column."""

_LAYOUTS: Final = {
    "LegacyOffsetCommitKey": (0, "0", "none", "group:string:0 topic:string:0 partition:int32:0"),
    "OffsetCommitKey": (1, "0", "none", "group:string:0 topic:string:0 partition:int32:0"),
    "LegacyOffsetCommitValue": (
        0,
        "0",
        "none",
        "offset:int64:0 metadata:string:0 commitTimestamp:int64:0",
    ),
    "OffsetCommitValue": (
        1,
        "0-4",
        "4+",
        "offset:int64:0+ leaderEpoch:int32:3+ metadata:string:0+ commitTimestamp:int64:0+ "
        "expireTimestamp:int64:1 topicId:uuid:4+ _unknown_tagged_fields:tagged:",
    ),
}
"""The commit specs as the engine reads them (the shipped ones): record type, versions,
flexible versions, fields (name, Kafka type, versions)."""


@cache
def _engine_reads(package: str) -> bool:
    """Whether ``package``'s offset-commit specs are the layouts ``commit_columns`` reads."""
    found = codecs(package)
    topic = TOPICS[_FAMILY]
    keys, values = topic.keys(package), topic.values(package)
    for name, (api_key, versions, flexible, fields) in _LAYOUTS.items():
        cls = found.messages.get(name)
        schema = found.schemas.get(name)
        if cls is None or schema is None:
            return False
        spec_fields = " ".join(
            f"{f['name']}:{f['metadata'].get('kafkaType')}:{f['metadata'].get('versions', '')}"
            for f in schema["fields"]
        )
        if (cls.API_KEY, str(cls.VALID_VERSIONS), str(cls.FLEXIBLE_VERSIONS), spec_fields) != (
            api_key,
            versions,
            flexible,
            fields,
        ):
            return False
        if (keys if name.endswith("Key") else values).get(api_key) != name:
            return False
        if package != SHIPPED and _layout(cls) != _layout(codecs(SHIPPED).messages.get(name)):
            return False
    return True


def _layout(cls: object) -> object:
    """What else decides a message's bytes: its fields' nullable versions, and its reading
    tables (tags and tagged versions), which the names, types and versions above leave out."""
    return getattr(cls, "_FIELDS", None), getattr(cls, "_NATIVE_TABLES", None)


@cache
def _record_names(package: str) -> tuple[bytes | None, ...]:
    """``recordName`` (UTF-8) by record type, from 0 to the highest the package knows."""
    topic = TOPICS[_FAMILY]
    types = [t for t in topic.keys(package) if t >= 0]
    out: list[bytes | None] = [None] * (max(types, default=-1) + 1)
    for t in types:
        name = topic.record_name(t, package)
        out[t] = None if name is None else name.encode()
    return tuple(out)


def _binary(arr: pa.Array) -> tuple[int, pa.Buffer | None, pa.Buffer, pa.Buffer | None, bool]:
    """A binary array's buffers as ``commit_columns`` takes them."""
    if pa.types.is_null(arr.type):
        arr = pa.nulls(len(arr), pa.binary())
    wide = pa.types.is_large_binary(arr.type) or pa.types.is_large_string(arr.type)
    validity, offsets, data = arr.buffers()[:3]
    if offsets is None:  # an empty array
        offsets = pa.py_buffer(bytes(8 if wide else 4))
    return arr.offset, validity if arr.null_count else None, offsets, data, wide


def _single(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(column, pa.ChunkedArray):
        return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return column


def _array(typ: pa.DataType, n: int, *buffers: bytes | None) -> pa.Array:
    return pa.Array.from_buffers(typ, n, [None if b is None else pa.py_buffer(b) for b in buffers])


def _union(
    typ: pa.StructType,
    n: int,
    validity: bytes,
    members: dict[str, bytes],
    fields: Mapping[str, tuple[bytes | None, ...]],
) -> pa.StructArray:
    """A union column of ``typ`` (``decodedKey`` or ``decodedValue``) from ``commit_columns``'
    buffers: each member (``members``: its validity by name) with the ``fields`` it has, their
    buffers (offsets and data, or values) shared by the members, each field under its member's
    validity; a member's other fields null."""
    columns = []
    for member in typ:
        valid = members[member.name]
        children = [
            _array(f.type, n, valid, *fields[f.name]) if f.name in fields else _nulls(f.type, n)
            for f in member.type
        ]
        columns.append(
            pa.Array.from_buffers(member.type, n, [pa.py_buffer(valid)], children=children)
        )
    return pa.Array.from_buffers(typ, n, [pa.py_buffer(validity)], children=columns)


def native_commit_columns(
    key: pa.Array | pa.ChunkedArray,
    value: pa.Array | pa.ChunkedArray,
    control: pa.Array | pa.ChunkedArray,
    package: str,
) -> TopicDecoded | None:
    """The commit columns of one batch of ``__consumer_offsets`` rows, as
    ``decode_topic_arrays(..., names=COMMIT_NAMES, fields=COMMIT_FIELDS)`` gives them, decoded
    by the engine; None where it cannot (the pure backend, other commit specs)."""
    called = _engine_commit_columns(key, value, control, package, _ALL)
    if called is None:
        return None
    out, keys = called[0], called[1]
    n = len(keys)
    (type_valid, rtype, name_valid, name_offsets, name_data) = out[0:5]
    (key_valid, key0, key1, group_offsets, group_data, topic_offsets, topic_data) = out[5:12]
    (partition, value_valid, value0, value1) = out[12:16]
    (offset, epoch, meta_offsets, meta_data, commit_ts, expire_ts) = out[16:22]
    (version_valid, version) = out[22:24]
    key = {
        "group": (group_offsets, group_data),
        "topic": (topic_offsets, topic_data),
        "partition": (partition,),
    }
    value = {
        "offset": (offset,),
        "leaderEpoch": (epoch,),
        "metadata": (meta_offsets, meta_data),
        "commitTimestamp": (commit_ts,),
        "expireTimestamp": (expire_ts,),
    }
    columns = {
        "recordType": _array(pa.int16(), n, type_valid, rtype),
        "recordName": _array(pa.string(), n, name_valid, name_offsets, name_data),
        "decodedKey": _union(
            union_type(_FAMILY, "coordinator-key", package, COMMIT_NAMES),
            n,
            key_valid,
            {"LegacyOffsetCommitKey": key0, "OffsetCommitKey": key1},
            key,
        ),
        "decodedValue": _union(
            union_type(_FAMILY, "coordinator-value", package, COMMIT_NAMES),
            n,
            value_valid,
            {"LegacyOffsetCommitValue": value0, "OffsetCommitValue": value1},
            value,
        ),
        "valueVersion": _array(pa.int16(), n, version_valid, version),
    }
    return _with_flags(columns, called, package)


def _with_flags(
    columns: dict[str, pa.Array],
    called: tuple[tuple[Any, ...], pa.Array, pa.Array, pa.Array],
    package: str,
) -> TopicDecoded:
    """``columns`` with the tombstone and newer-version flags of ``commit_columns``' tuple and
    the rows it refused, with the reference's reasons (``called``: from
    :func:`_engine_commit_columns`)."""
    out, keys, values, controls = called
    n = len(keys)
    columns["isTombstone"] = _array(pa.bool_(), n, None, out[24])
    columns["isNewerVersion"] = _array(pa.bool_(), n, None, out[25])
    failed = out[26]
    errors = _reasons(keys, values, controls, failed, package) if failed else {}
    return TopicDecoded(columns, errors)


def native_commit_flags(
    key: pa.Array | pa.ChunkedArray,
    value: pa.Array | pa.ChunkedArray,
    control: pa.Array | pa.ChunkedArray,
    package: str,
) -> TopicDecoded | None:
    """``isTombstone`` and ``isNewerVersion`` of :func:`native_commit_columns`, and its errors,
    alone: the engine reads and checks every commit as it does there, writing nothing else
    (the bench's ``floor (commit flags)``; the other columns cost most of the decode)."""
    called = _engine_commit_columns(key, value, control, package, _FLAGS)
    if called is None:
        return None
    return _with_flags({}, called, package)


def engine_checks(package: str) -> bool:
    """Whether the engine reads ``package``'s offset commits (``commit_check.h``: the native
    backend, and the package's commit specs the layouts it reads): ``commit_columns`` decodes
    them, and ``CommitEffects.add_checked`` checks them in its pass."""
    engine = native_engine()
    return (
        engine is not None
        and hasattr(engine, "commit_columns")
        and backend() == NATIVE
        and _engine_reads(package)
    )


def _engine_commit_columns(
    key: pa.Array | pa.ChunkedArray,
    value: pa.Array | pa.ChunkedArray,
    control: pa.Array | pa.ChunkedArray,
    package: str,
    what: str,
) -> tuple[tuple[Any, ...], pa.Array, pa.Array, pa.Array] | None:
    """``commit_columns``' tuple (``what``: :data:`_ALL` or :data:`_FLAGS`)
    and the rows' key, value and control arrays; None where the engine cannot decode them."""
    engine = native_engine()
    if engine is None or not engine_checks(package):
        return None
    keys, values, controls = _single(key), _single(value), _single(control)
    n = len(keys)
    control_spec = None  # no control record (a null isControl is not one)
    if (
        not pa.types.is_null(controls.type)
        and controls.null_count != n
        and controls.buffers()[1] is not None
    ):
        control_spec = (
            controls.offset,
            controls.buffers()[0] if controls.null_count else None,
            controls.buffers()[1],
        )
    out = engine.commit_columns(
        n,
        _binary(keys),
        _binary(values),
        control_spec,
        _record_names(package),
        getattr(engine, what),
    )
    return out, keys, values, controls


def _reasons(
    keys: pa.Array, values: pa.Array, controls: pa.Array, failed: list[int], package: str
) -> dict[int, str]:
    """The error texts of the rows the engine refused: the reference decoder's, on those rows."""
    rows = pa.array(failed, pa.int64())
    again = decode_topic_arrays(
        _FAMILY,
        keys.take(rows),
        values.take(rows),
        controls.take(rows),
        package=package,
        names=COMMIT_NAMES,
        fields=COMMIT_FIELDS,
        wanted=frozenset(),
    )
    if sorted(again.errors) != list(range(len(failed))):
        accepted = sorted(set(range(len(failed))) - set(again.errors))
        raise RuntimeError(
            "the native commit decoder refused rows the reference decodes "
            f"({[failed[j] for j in accepted]}): please report this"
        )
    return {failed[j]: reason for j, reason in again.errors.items()}
