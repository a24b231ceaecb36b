"""Commit rows: the offset commits and end-transaction markers of decoded ``__consumer_offsets``
rows, narrowed to :data:`COMMIT_ROW_SCHEMA` (:func:`commit_rows`), the first step of every view
of committed offsets, on the command line and in Spark.

Input: decoded ``__consumer_offsets`` rows, the ``kafka-log`` columns (``offset, producerId,
isTransactional, isControl, key``, and ``topic, partition`` when several log partitions are
mixed) with the topic decoder's (:func:`codegen.columnar.topics.decode_topic_arrays`:
``recordName, decodedKey, decodedValue, isTombstone``, and ``_error`` or ``_decode_error``).
:func:`commit_rows_left` and :func:`commit_rows_by_log` leave out the plain commits that a
later one of the same key supersedes (:mod:`codegen.dumps.views.superseded`), for Spark's
``mapInArrow`` step.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from codegen.dumps.views.compaction import (
    arrow_array,
    bits,
    end_markers,
    flags,
    key_groups,
    millis,
)
from codegen.dumps.views.superseded import (
    NOT_PLAIN,
    PLAIN_COMMIT,
    TRANSACTIONAL_TOMBSTONE,
    superseded,
)

__all__ = [
    "COMMIT_FIELDS",
    "COMMIT_KEY",
    "COMMIT_NAMES",
    "COMMIT_ROW_SCHEMA",
    "DELETION_SCHEMA",
    "LOG_COMMIT_KEY",
    "OFFSET_SCHEMA",
    "commit_keys",
    "commit_numbers",
    "commit_rows",
    "commit_rows_by_log",
    "commit_rows_left",
    "deletion_columns",
    "either_int64",
    "offset_columns",
    "offset_commits",
    "single_array",
]

COMMIT_NAMES: Final = frozenset({"OffsetCommit", "LegacyOffsetCommit"})
"""The ``recordName``s of offset commits."""
COMMIT_FIELDS: Final = frozenset(
    {"group", "topic", "partition", "offset", "leaderEpoch", "metadata"}
    | {"commitTimestamp", "expireTimestamp"}
)
"""The fields of the decoded commit keys and values that :func:`commit_rows` reads."""

COMMIT_KEY: Final = ["group", "topic", "partition"]
"""The columns of an offset commit's key."""
LOG_COMMIT_KEY: Final = ["logTopic", "logPartition", *COMMIT_KEY]
"""A key within its log partition."""

OFFSET_SCHEMA: Final = pa.schema(
    [
        pa.field("group", pa.string()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("leaderEpoch", pa.int32()),
        pa.field("metadata", pa.string()),
        pa.field("commitTimestamp", pa.int64()),
        pa.field("expireTimestamp", pa.int64()),
        pa.field("recordOffset", pa.int64()),
    ]
)
"""The committed offsets: one row per live (group, topic, partition), sorted by it;
``recordOffset`` is the log offset of the commit."""

DELETION_SCHEMA: Final = pa.schema(
    [
        pa.field("group", pa.string()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("recordOffset", pa.int64()),
        pa.field("timestamp", pa.int64()),
    ]
)
"""The tombstones that deleted a live committed offset, in the order they took effect."""

COMMIT_ROW_SCHEMA: Final = pa.schema(
    [
        pa.field("logTopic", pa.string()),
        pa.field("logPartition", pa.int32()),
        *OFFSET_SCHEMA,
        pa.field("timestamp", pa.int64()),
        pa.field("producerId", pa.int64()),
        pa.field("isTransactional", pa.bool_()),
        pa.field("marker", pa.int8()),
        pa.field("isTombstone", pa.bool_()),
    ]
)
"""A commit (``marker`` -1) or an end-transaction marker (``marker`` 0 ABORT, 1 COMMIT; no
key). A tombstone has null value columns. ``timestamp`` is the record's (epoch ms)."""


def _column(rows: pa.Table, name: str, typ: pa.DataType) -> pa.ChunkedArray | pa.Array:
    if name in rows.column_names:
        return rows.column(name)
    return pa.nulls(rows.num_rows, typ)


def single_array(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(column, pa.ChunkedArray):
        return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return column


def _either(
    union: pa.StructArray, members: tuple[str, str], field: str, typ: pa.DataType
) -> pa.Array:
    """``field`` of whichever member of ``union`` is set (the first wins), null where neither
    is; a member no row of the chunk has is not read."""
    n = len(union)
    parts = []
    for member in members:
        i = union.type.get_field_index(member)
        if i < 0 or union.field(i).null_count == n:
            continue
        j = union.type.field(i).type.get_field_index(field)
        if j >= 0:
            parts.append(pc.struct_field(union, [i, j]))
    if not parts:
        return pa.nulls(n, typ)
    # a row has one member: if_else is coalesce here, and cheaper
    out = parts[0] if len(parts) == 1 else pc.if_else(parts[0].is_valid(), *parts)
    return out.cast(typ)


def _valid_only(arr: pa.Array, valid: npt.NDArray[np.bool_]) -> pa.Array:
    """A fixed-width ``arr`` without nulls, null outside ``valid``."""
    if valid.all():
        return arr
    if arr.offset:
        arr = pa.concat_arrays([arr])
    bitmap = arrow_array(valid).buffers()[1]
    return pa.Array.from_buffers(arr.type, len(arr), [bitmap, arr.buffers()[1]])


_KEY_MEMBERS: Final = ("OffsetCommitKey", "LegacyOffsetCommitKey")
_VALUE_MEMBERS: Final = ("OffsetCommitValue", "LegacyOffsetCommitValue")
_COMMIT_NAME_ARRAY: Final = pa.array(sorted(COMMIT_NAMES), pa.string())


def commit_keys(decoded_keys: pa.Array) -> list[tuple[str | None, str | None, int | None]]:
    """The (group, topic, partition) of decoded commit keys (``decodedKey`` values, legacy or
    current), as :func:`commit_rows` reads them: for the few rows where a key is first seen."""
    columns = (
        _either(decoded_keys, _KEY_MEMBERS, name, typ).to_pylist()
        for name, typ in (("group", pa.string()), ("topic", pa.string()), ("partition", pa.int32()))
    )
    return list(zip(*columns, strict=True))


def commit_numbers(
    decoded: pa.Table,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Each decoded row's committed ``offset``, ``commitTimestamp`` and ``leaderEpoch`` (-1 for a
    legacy value), as :func:`commit_rows` reads them; 0 where a row has no value. Read from the
    value struct's buffers (:func:`either_int64`): no Arrow kernel per field."""
    value = single_array(decoded.column("decodedValue"))
    return (
        either_int64(value, _VALUE_MEMBERS, "offset", 0),
        either_int64(value, _VALUE_MEMBERS, "commitTimestamp", 0),
        either_int64(value, _VALUE_MEMBERS, "leaderEpoch", -1),
    )


_INTEGERS: Final[dict[pa.DataType, np.dtype[np.signedinteger[Any]]]] = {
    pa.int64(): np.dtype(np.int64),
    pa.int32(): np.dtype(np.int32),
}


def _valid(array: pa.Array) -> npt.NDArray[np.uint8] | None:
    """Where ``array`` is valid (bytes 0 or 1); None when it has no null."""
    if not array.null_count:
        return None
    return bits(array.buffers()[0], array.offset, len(array))


def either_int64(
    union: pa.StructArray, members: tuple[str, str], field: str, null: int
) -> npt.NDArray[np.int64]:
    """``_either(union, members, field, typ).fill_null(null)`` as int64 (``typ`` the field's
    integer type), read from the buffers: the field's values where the struct, the member and
    the field are valid (the first member wins), ``null`` elsewhere."""
    n = len(union)
    out = np.full(n, null, np.int64)
    outer = _valid(union)
    for member in reversed(members):  # the first member written last: it wins
        i = union.type.get_field_index(member)
        if i < 0:
            continue
        part = union.field(i)  # sliced as the union is
        if part.null_count == n:
            continue
        j = part.type.get_field_index(field)
        if j < 0:
            continue
        column = part.field(j)
        dtype = _INTEGERS.get(column.type)
        if dtype is None:  # not a plain integer: the kernels' way
            return np.asarray(
                _either(union, members, field, column.type)
                .fill_null(pa.scalar(null, column.type))
                .to_numpy(),
                np.int64,
            )
        values = np.frombuffer(column.buffers()[1], dtype, n, column.offset * dtype.itemsize)
        valid = None
        for v in (outer, _valid(part), _valid(column)):
            if v is not None:
                valid = v if valid is None else valid & v
        if valid is None:
            out[:] = values
        else:
            np.copyto(out, values, where=valid.view(np.bool_))
    return out


def offset_commits(
    rows: pa.Table,
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Which rows are offset commits that decoded, which are control records and which are
    transactional."""
    n = rows.num_rows
    control = flags(rows.column("isControl"))
    transactional = flags(rows.column("isTransactional"))
    commit = ~control & flags(pc.is_in(rows.column("recordName"), _COMMIT_NAME_ARRAY))
    for name in ("_error", "_decode_error"):
        if name in rows.column_names and rows.column(name).null_count != n:
            commit &= flags(rows.column(name).is_null())
    return commit, control, transactional


def commit_rows(decoded: pa.Table | pa.RecordBatch) -> pa.Table:
    """The offset commits and end-transaction markers of decoded ``__consumer_offsets`` rows,
    in their order (:data:`COMMIT_ROW_SCHEMA`). Rows that did not decode are left out, as the
    coordinator skips nothing but cannot use them either."""
    rows = decoded if isinstance(decoded, pa.Table) else pa.Table.from_batches([decoded])
    n = rows.num_rows
    commit, control, transactional = offset_commits(rows)
    marker, marker_column = end_markers(rows.column("key"), control, transactional)
    tombstone = ~marker & flags(rows.column("isTombstone"))
    # Value columns are null for markers and tombstones (which have no decoded value, unless
    # the input says otherwise).
    hidden = marker | tombstone
    key = single_array(rows.column("decodedKey"))
    value = single_array(rows.column("decodedValue"))
    hidden_values = value.null_count != n and (hidden & flags(value.is_valid())).any()

    def value_field(field: str, typ: pa.DataType, default: int | None = None) -> pa.Array:
        out = _either(value, _VALUE_MEMBERS, field, typ)
        if default is not None:
            return _valid_only(out.fill_null(pa.scalar(default, typ)), ~hidden)
        if hidden_values:
            return pc.if_else(pa.array(hidden), pa.scalar(None, typ), out)
        return out

    columns = {
        "logTopic": _column(rows, "topic", pa.string()),
        "logPartition": _column(rows, "partition", pa.int32()).cast(pa.int32()),
        "group": _either(key, _KEY_MEMBERS, "group", pa.string()),
        "topic": _either(key, _KEY_MEMBERS, "topic", pa.string()),
        "partition": _either(key, _KEY_MEMBERS, "partition", pa.int32()),
        "offset": value_field("offset", pa.int64()),
        "leaderEpoch": value_field("leaderEpoch", pa.int32(), -1),
        "metadata": value_field("metadata", pa.string()),
        "commitTimestamp": value_field("commitTimestamp", pa.int64()),
        "expireTimestamp": value_field("expireTimestamp", pa.int64(), -1),
        "recordOffset": rows.column("offset"),
        "timestamp": millis(_column(rows, "timestamp", pa.int64())),
        "producerId": rows.column("producerId"),
        "isTransactional": arrow_array(transactional),
        "marker": arrow_array(marker_column),
        "isTombstone": arrow_array(tombstone),
    }
    out = pa.table(columns, schema=COMMIT_ROW_SCHEMA)
    keep = commit | marker
    return out if keep.all() else out.filter(pa.array(keep))


def offset_columns(
    decoded_key: pa.StructArray, decoded_value: pa.StructArray, record_offset: pa.Array
) -> pa.Table:
    """``commit_rows(...).select(OFFSET_SCHEMA.names)`` of rows that are all offset commits with
    a value that decoded (the engine's live rows): the columns read from the decoded key and
    value alone."""
    return pa.table(
        {
            **_key_columns(decoded_key),
            "offset": _either(decoded_value, _VALUE_MEMBERS, "offset", pa.int64()),
            "leaderEpoch": _either(
                decoded_value, _VALUE_MEMBERS, "leaderEpoch", pa.int32()
            ).fill_null(pa.scalar(-1, pa.int32())),
            "metadata": _either(decoded_value, _VALUE_MEMBERS, "metadata", pa.string()),
            "commitTimestamp": _either(
                decoded_value, _VALUE_MEMBERS, "commitTimestamp", pa.int64()
            ),
            "expireTimestamp": _either(
                decoded_value, _VALUE_MEMBERS, "expireTimestamp", pa.int64()
            ).fill_null(pa.scalar(-1, pa.int64())),
            "recordOffset": record_offset,
        },
        schema=OFFSET_SCHEMA,
    )


def deletion_columns(
    decoded_key: pa.StructArray, record_offset: pa.Array, timestamp: pa.Array
) -> pa.Table:
    """The group, topic, partition, record offset and timestamp (epoch ms) of rows that are all
    offset-commit tombstones that decoded (the engine's deleted rows), as :func:`commit_rows`
    gives them."""
    return pa.table(
        {
            **_key_columns(decoded_key),
            "recordOffset": record_offset,
            "timestamp": millis(timestamp),
        },
        schema=DELETION_SCHEMA,
    )


def _key_columns(decoded_key: pa.StructArray) -> dict[str, pa.Array]:
    """The group, topic and partition of decoded offset-commit keys, as :func:`commit_rows`
    gives them."""
    return {
        "group": _either(decoded_key, _KEY_MEMBERS, "group", pa.string()),
        "topic": _either(decoded_key, _KEY_MEMBERS, "topic", pa.string()),
        "partition": _either(decoded_key, _KEY_MEMBERS, "partition", pa.int32()),
    }


def commit_rows_left(
    decoded: list[pa.Table], kept_keys: list[pa.Array] | None = None
) -> list[pa.Table]:
    """:func:`commit_rows` of decoded rows of one log partition, consecutive and in log order,
    less the plain commits that a later plain commit of the same key supersedes where the
    native engine finds them (:mod:`codegen.dumps.views.superseded`): rows :func:`reduce_plain`
    drops, so its answer is that of every row. ``kept_keys``, when given, holds the keys of the
    log partition's transactional tombstones in earlier rows (their rows are kept) and gains
    those of these rows."""
    kept_keys = [] if kept_keys is None else kept_keys
    if not decoded:
        return []
    chunks = []
    for rows in decoded:
        commit, _, transactional = offset_commits(rows)
        tombstone = flags(rows.column("isTombstone"))
        kinds = np.where(commit & ~transactional, PLAIN_COMMIT + tombstone, NOT_PLAIN)
        kept = commit & transactional & tombstone
        if kept.any():
            kinds[kept] = TRANSACTIONAL_TOMBSTONE
            kept_keys.append(single_array(rows.column("key")).filter(pa.array(kept)))
        chunks.append((rows.column("key"), kinds.astype(np.uint8)))
    if kept_keys:  # those of earlier rows too
        earlier = pa.concat_arrays(kept_keys)
        chunks.insert(0, (earlier, np.full(len(earlier), TRANSACTIONAL_TOMBSTONE, np.uint8)))
    dropped = superseded(chunks)
    if dropped is not None and kept_keys:
        dropped = dropped[1:]
    out = []
    for i, rows in enumerate(decoded):
        if dropped is not None and dropped[i].any():
            rows = rows.filter(pa.array(~dropped[i]))
        out.append(commit_rows(rows))
    return out


def commit_rows_by_log(decoded: list[pa.Table]) -> list[pa.Table]:
    """:func:`commit_rows` of decoded rows of any log partitions (``topic, partition``
    columns), reduced by nothing: each log partition's rows (in their order) lose the
    superseded commits (:func:`commit_rows_left`) where they are in log order."""
    tables = [t for t in decoded if t.num_rows]
    if not tables:
        return []
    rows = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    log = [c for c in ("topic", "partition") if c in rows.column_names]
    if not log:
        return commit_rows_left([rows]) if ascending(_offsets(rows)) else [commit_rows(rows)]
    order, bounds = key_groups(rows, log)
    if len(bounds) == 2:  # one log partition
        return commit_rows_left([rows]) if ascending(_offsets(rows)) else [commit_rows(rows)]
    out = []
    for start, end in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        part = rows.take(pa.array(order[start:end]))
        out += commit_rows_left([part]) if ascending(_offsets(part)) else [commit_rows(part)]
    return out


def _offsets(rows: pa.Table) -> npt.NDArray[np.int64]:
    return np.asarray(rows.column("offset").to_numpy(), np.int64)


def ascending(values: np.ndarray) -> bool:
    """Whether ``values`` never decrease."""
    return bool((values[1:] >= values[:-1]).all())
