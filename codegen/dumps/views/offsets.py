"""The committed offsets of ``__consumer_offsets``, from Arrow columns: one definition for the
command line and Spark.

Log-compaction semantics, as the group coordinator loads the topic: per (group, topic,
partition) the last commit wins and a tombstone deletes the key; a record of a transactional
batch (a transactional offset commit) takes effect at its producer's next end-transaction
marker in the same log partition if that is a COMMIT, and is dropped if it is an ABORT or if no
marker follows (a transaction still open).

Input: decoded ``__consumer_offsets`` rows, the ``kafka-log`` columns (``offset, producerId,
isTransactional, isControl, key``, and ``topic, partition`` when several log partitions are
mixed) with the topic decoder's (:func:`codegen.columnar.topics.decode_topic_arrays`:
``recordName, decodedKey, decodedValue, isTombstone``, and ``_error`` or ``_decode_error``).
The steps:

1. :func:`commit_rows`: the offset commits and end-transaction markers of such rows, narrowed
   to :data:`COMMIT_ROW_SCHEMA`;
2. :func:`reduce_plain`: per key, the newest non-transactional commit (transactional commits and
   markers kept): a step that can run on any chunk of rows, in any order, any number of times,
   so a log of any size is read in bounded memory (Spark runs it in ``mapInArrow``);
3. :func:`latest`: the committed offsets of the rows of one log partition (Spark runs it per log
   partition in ``applyInArrow``).

:class:`CommittedOffsets` runs the three over a stream of record batches for the command line.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from codegen.dumps.views.compaction import (
    NO_MARKER,
    ReducedChunks,
    apply_offsets,
    end_markers,
    first_after,
    flags,
    in_log_order,
    key_groups,
    key_ids,
    last_per_key,
    last_rows,
    millis,
    stable_order,
)
from codegen.dumps.views.superseded import (
    NOT_PLAIN,
    PLAIN_COMMIT,
    TRANSACTIONAL_TOMBSTONE,
    native_enabled,
    superseded,
)

__all__ = [
    "COMMIT_FIELDS",
    "COMMIT_NAMES",
    "COMMIT_ROW_SCHEMA",
    "DELETION_SCHEMA",
    "HISTORY_SCHEMA",
    "OFFSET_SCHEMA",
    "CommitHistory",
    "CommittedOffsets",
    "commit_rows",
    "commit_rows_by_log",
    "commit_rows_left",
    "deletions",
    "history",
    "latest",
    "reduce_plain",
]

COMMIT_NAMES: Final = frozenset({"OffsetCommit", "LegacyOffsetCommit"})
"""The ``recordName``s of offset commits."""
COMMIT_FIELDS: Final = frozenset(
    {"group", "topic", "partition", "offset", "leaderEpoch", "metadata"}
    | {"commitTimestamp", "expireTimestamp"}
)
"""The fields of the decoded commit keys and values that :func:`commit_rows` reads."""

_KEY: Final = ["group", "topic", "partition"]
_LOG_KEY: Final = ["logTopic", "logPartition", *_KEY]

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


def _column(rows: pa.Table, name: str, typ: pa.DataType) -> pa.ChunkedArray | pa.Array:
    if name in rows.column_names:
        return rows.column(name)
    return pa.nulls(rows.num_rows, typ)


def _single(column: pa.ChunkedArray | pa.Array) -> pa.Array:
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
    bitmap = pa.array(valid).buffers()[1]
    return pa.Array.from_buffers(arr.type, len(arr), [bitmap, arr.buffers()[1]])


_KEY_MEMBERS: Final = ("OffsetCommitKey", "LegacyOffsetCommitKey")
_VALUE_MEMBERS: Final = ("OffsetCommitValue", "LegacyOffsetCommitValue")
_COMMIT_NAME_ARRAY: Final = pa.array(sorted(COMMIT_NAMES), pa.string())


def _commits(
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
    commit, control, transactional = _commits(rows)
    marker, marker_column = end_markers(rows.column("key"), control, transactional)
    tombstone = ~marker & flags(rows.column("isTombstone"))
    # Value columns are null for markers and tombstones (which have no decoded value, unless
    # the input says otherwise).
    hidden = marker | tombstone
    key = _single(rows.column("decodedKey"))
    value = _single(rows.column("decodedValue"))
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
        "isTransactional": pa.array(transactional),
        "marker": pa.array(marker_column),
        "isTombstone": pa.array(tombstone),
    }
    out = pa.table(columns, schema=COMMIT_ROW_SCHEMA)
    keep = commit | marker
    return out if keep.all() else out.filter(pa.array(keep))


def reduce_plain(rows: pa.Table) -> pa.Table:
    """Per (log partition, key), only the newest non-transactional commit (by log offset), its
    tombstones and the commits just before them; transactional commits and markers are kept.
    Order of the input does not matter; the output is in log-offset order per log partition."""
    if rows.num_rows == 0:
        return rows
    one_log = in_log_order(rows, "logTopic", "logPartition")
    if not one_log:
        rows = rows.sort_by(
            [(c, "ascending") for c in ("logTopic", "logPartition", "recordOffset")]
        )
    marker = rows.column("marker").to_numpy()
    plain = ~flags(rows.column("isTransactional")) & (marker == NO_MARKER)
    tombstone = flags(rows.column("isTombstone"))
    keep = ~plain
    if not tombstone.any():
        keep[last_rows(rows, _LOG_KEY, plain)] = True
    else:
        _keep_around_tombstones(rows, plain, tombstone, marker, keep, one_log)
    return rows if keep.all() else rows.filter(pa.array(keep))


def _keep_around_tombstones(
    rows: pa.Table,
    plain: npt.NDArray[np.bool_],
    tombstone: npt.NDArray[np.bool_],
    marker: npt.NDArray[np.int8],
    keep: npt.NDArray[np.bool_],
    one_log: bool,
) -> None:
    """Of the plain commits of rows in log order (log partitions one after another), keep per
    key the newest, every tombstone and the commit just before each (what says whether the
    tombstone deleted a live offset). A transactional tombstone takes effect at its
    producer's next marker, after any plain commits of its key made in between: keep the last
    plain commit of the key before that marker, or, while no marker is in the rows, every
    plain commit of the key after the tombstone and the last one before it. ``one_log``: the
    rows are of one log partition."""
    order, bounds = key_groups(rows, _LOG_KEY)  # every row, by key, each key's in log order
    ids = np.repeat(np.arange(len(bounds) - 1), np.diff(bounds))
    in_plain = plain[order]
    # the plain commits by (key, row): ascending as one number, key * stride + row
    stride = rows.num_rows + 1
    key_of, row_of = ids[in_plain], order[in_plain]
    by_key = key_of * stride + row_of
    same_key_next = np.zeros(len(by_key), np.bool_)
    same_key_next[:-1] = key_of[1:] == key_of[:-1]
    keep[row_of[~same_key_next]] = True  # each key's newest
    dead = tombstone[row_of]
    keep[row_of[dead]] = True
    keep[row_of[:-1][dead[1:] & same_key_next[:-1]]] = True  # just before a tombstone
    pending = np.flatnonzero(tombstone & ~plain & (marker == NO_MARKER))
    if not len(pending):
        return
    end, found = _next_markers(rows, pending, np.flatnonzero(marker != NO_MARKER), one_log)
    key = np.empty(rows.num_rows, np.int64)
    key[order] = ids
    key = key[pending]
    # the last plain commit of the key before the marker (or before the open tombstone)
    last = np.searchsorted(by_key, key * stride + end) - 1
    hit = last >= 0
    hit[hit] &= key_of[last[hit]] == key[hit]
    keep[row_of[last[hit]]] = True
    # an open tombstone: every plain commit of the key after it
    open_ = ~found
    lo = np.searchsorted(by_key, key[open_] * stride + pending[open_], side="right")
    hi = np.searchsorted(by_key, (key[open_] + 1) * stride)
    cover = np.zeros(len(by_key) + 1, np.int64)
    np.add.at(cover, lo, 1)
    np.add.at(cover, hi, -1)
    keep[row_of[np.cumsum(cover[:-1]) > 0]] = True


def _next_markers(
    rows: pa.Table,
    pending: npt.NDArray[np.intp],
    markers: npt.NDArray[np.intp],
    one_log: bool,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
    """The row of the next marker of each ``pending`` row's producer in its log partition (the
    row itself where there is none), and whether there is one (``one_log``: the rows are of
    one log partition)."""
    if not len(markers):
        return pending, np.zeros(len(pending), np.bool_)
    log = np.zeros(rows.num_rows, np.int64) if one_log else key_ids(rows, _LOG_KEY[:2])
    producers = rows.column("producerId").to_numpy()
    both = np.concatenate([pending, markers])
    _, producer = np.unique(producers[both], return_inverse=True)
    owner = log[both] * (producer.max() + 1) + producer  # a producer in a log partition
    end = first_after(owner[: len(pending)], pending, owner[len(pending) :], markers)
    found = end >= 0
    return np.where(found, markers[end], pending), found


def _in_effect(rows: pa.Table) -> pa.Table:
    """The commit rows of one log partition (any order) that take effect, with their
    ``applyOffset``, in the order they do (a sort is skipped where the rows are in order)."""
    offsets = rows.column("recordOffset").to_numpy()
    if not (offsets[1:] >= offsets[:-1]).all():
        rows = rows.sort_by("recordOffset")
    effective = apply_offsets(rows)
    applied = effective.column("applyOffset").to_numpy()
    if (applied[1:] >= applied[:-1]).all():  # ties are in record order already
        return effective
    return effective.sort_by([("applyOffset", "ascending"), ("recordOffset", "ascending")])


def latest(rows: pa.Table) -> pa.Table:
    """The committed offsets (:data:`OFFSET_SCHEMA`) of the commit rows of one log partition
    (raw, or reduced by :func:`reduce_plain`; any order)."""
    if rows.num_rows == 0:
        return OFFSET_SCHEMA.empty_table()
    return _latest(_in_effect(rows))


def _latest(ordered: pa.Table) -> pa.Table:
    last = last_per_key(ordered, _KEY)
    live = last.filter(pc.invert(last.column("isTombstone")))
    return live.select(OFFSET_SCHEMA.names).sort_by([(k, "ascending") for k in _KEY])


def deletions(rows: pa.Table) -> pa.Table:
    """The tombstones among the commit rows of one log partition (raw, or reduced by
    :func:`reduce_plain`) that deleted a live committed offset (:data:`DELETION_SCHEMA`)."""
    if rows.num_rows == 0 or not pc.any(rows.column("isTombstone")).as_py():
        return DELETION_SCHEMA.empty_table()
    return _deletions(_in_effect(rows))


def _deletions(ordered: pa.Table) -> pa.Table:
    ids = key_ids(ordered, _KEY)
    tombstone = ordered.column("isTombstone").to_numpy(zero_copy_only=False)
    order = stable_order(ids)
    after_live = np.zeros(len(ids), np.bool_)
    after_live[1:] = (ids[order][1:] == ids[order][:-1]) & ~tombstone[order][:-1]
    deleted = np.zeros(len(ids), np.bool_)
    deleted[order] = after_live & tombstone[order]
    return ordered.filter(pa.array(deleted)).select(DELETION_SCHEMA.names)


HISTORY_SCHEMA: Final = pa.schema(
    [
        pa.field("group", pa.string()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("recordOffset", pa.int64()),
        pa.field("commitTimestamp", pa.int64()),
        pa.field("offset", pa.int64()),
        pa.field("leaderEpoch", pa.int32()),
        pa.field("metadata", pa.string()),
        pa.field("expireTimestamp", pa.int64()),
        pa.field("isTombstone", pa.bool_()),
    ]
)
"""Every commit and tombstone that took effect, in the order it did (by key: stable)."""


_HISTORY_INPUT: Final = [*HISTORY_SCHEMA.names, "marker", "isTransactional", "producerId"]
"""The columns of commit rows :func:`history` reads."""


def history(rows: pa.Table) -> pa.Table:
    """The commits and tombstones of the (raw, not reduced) commit rows of one log partition
    that took effect, in the order they did (:data:`HISTORY_SCHEMA`)."""
    if rows.num_rows == 0:
        return HISTORY_SCHEMA.empty_table()
    # Sorted only when not in order already (a log partition read in order is; its
    # transactional commits take effect later, at their markers).
    if not _ascending(rows.column("recordOffset").to_numpy()):
        rows = rows.sort_by("recordOffset")
    # Which rows take effect, and in what order, from the few columns that say it; then the
    # history's columns taken once.
    narrow = rows.select(["marker", "isTransactional", "recordOffset", "producerId"])
    effective = apply_offsets(narrow.append_column("_row", pa.array(np.arange(rows.num_rows))))
    taken = effective.column("_row").to_numpy()
    apply = effective.column("applyOffset").to_numpy()
    out = rows.select(HISTORY_SCHEMA.names)
    if not _ascending(apply):
        taken = taken[np.lexsort((effective.column("recordOffset").to_numpy(), apply))]
        return out.take(pa.array(taken))
    # in log order: the rows kept, chunk by chunk (a take of chunked columns copies them whole)
    if len(taken) == rows.num_rows:
        return out
    kept = np.zeros(rows.num_rows, np.bool_)
    kept[taken] = True
    return out.filter(pa.array(kept))


def _ascending(values: np.ndarray) -> bool:
    return bool((values[1:] >= values[:-1]).all())


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
        commit, _, transactional = _commits(rows)
        tombstone = flags(rows.column("isTombstone"))
        kinds = np.where(commit & ~transactional, PLAIN_COMMIT + tombstone, NOT_PLAIN)
        kept = commit & transactional & tombstone
        if kept.any():
            kinds[kept] = TRANSACTIONAL_TOMBSTONE
            kept_keys.append(_single(rows.column("key")).filter(pa.array(kept)))
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
        return commit_rows_left([rows]) if _ascending(_offsets(rows)) else [commit_rows(rows)]
    order, bounds = key_groups(rows, log)
    if len(bounds) == 2:  # one log partition
        return commit_rows_left([rows]) if _ascending(_offsets(rows)) else [commit_rows(rows)]
    out = []
    for start, end in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        part = rows.take(pa.array(order[start:end]))
        out += commit_rows_left([part]) if _ascending(_offsets(part)) else [commit_rows(part)]
    return out


def _offsets(rows: pa.Table) -> npt.NDArray[np.int64]:
    return np.asarray(rows.column("offset").to_numpy(), np.int64)


_COMMIT_INPUT: Final = [
    *("isControl", "isTransactional", "recordName", "_error", "_decode_error", "key"),
    *("isTombstone", "decodedKey", "decodedValue", "topic", "partition", "offset"),
    *("timestamp", "producerId"),
]
"""The columns of decoded rows :func:`commit_rows` reads."""


class CommitHistory:
    """:func:`commit_rows` and :func:`history` over the batches of log partitions (each in log
    order): every commit is kept, as the history is the answer."""

    def __init__(self) -> None:
        self._chunks: list[pa.Table] = []
        self._done: list[pa.Table] = []

    def add(self, decoded: pa.Table | pa.RecordBatch) -> None:
        rows = commit_rows(decoded)
        if rows.num_rows:
            self._chunks.append(rows.select(_HISTORY_INPUT))  # what history() reads only

    def end_partition(self) -> None:
        if self._chunks:
            self._done.append(history(pa.concat_tables(self._chunks)))
        self._chunks = []

    def table(self) -> pa.Table:
        self.end_partition()
        tables = [t for t in self._done if t.num_rows]
        return pa.concat_tables(tables) if tables else HISTORY_SCHEMA.empty_table()


def _merge_partitions(parts: Iterable[pa.Table]) -> pa.Table:
    """The committed offsets of several log partitions: a key normally lives in one; if it is in
    several, the partition read last wins (the order the coordinator would have loaded them)."""
    tables = [t for t in parts if t.num_rows]
    if not tables:
        return OFFSET_SCHEMA.empty_table()
    if len(tables) == 1:
        return tables[0]
    last = last_per_key(pa.concat_tables(tables), _KEY)
    return last.sort_by([(k, "ascending") for k in _KEY])


class CommittedOffsets:
    """:func:`commit_rows`, :func:`reduce_plain` and :func:`latest` over a stream of decoded
    batches, in bounded memory: add the batches of each log partition in log order, then
    read :meth:`table`. With the native engine, the decoded rows are held until
    ``reduce_every`` of them and the plain commits superseded among them
    (:mod:`codegen.dumps.views.superseded`) are left out before :func:`commit_rows`."""

    def __init__(self, reduce_every: int = 1 << 18) -> None:
        self._rows = ReducedChunks(reduce_plain, reduce_every)
        self._every = reduce_every
        self._done: list[pa.Table] = []
        self._deleted: list[pa.Table] = []
        self._held: list[pa.Table] = []
        self._held_rows = 0
        self._kept_keys: list[pa.Array] = []
        """The keys of the current log partition's transactional tombstones so far."""

    def add(self, decoded: pa.Table | pa.RecordBatch) -> None:
        """Add decoded rows of the current log partition."""
        if not native_enabled():
            self._rows.add(commit_rows(decoded))
            return
        rows = decoded if isinstance(decoded, pa.Table) else pa.Table.from_batches([decoded])
        self._held.append(rows.select([c for c in _COMMIT_INPUT if c in rows.column_names]))
        self._held_rows += rows.num_rows
        if self._held_rows >= self._every:
            self._take_held()

    def _take_held(self) -> None:
        held, self._held, self._held_rows = self._held, [], 0
        for rows in commit_rows_left(held, self._kept_keys):
            self._rows.add(rows)

    def end_partition(self) -> None:
        """The current log partition is complete."""
        self._take_held()
        self._kept_keys = []
        rows = self._rows.take()
        if rows is not None:
            ordered = _in_effect(rows)  # once for both
            self._done.append(_latest(ordered))
            if flags(rows.column("isTombstone")).any():
                self._deleted.append(_deletions(ordered))

    def table(self) -> pa.Table:
        """The committed offsets of everything added (:data:`OFFSET_SCHEMA`)."""
        self.end_partition()
        return _merge_partitions(self._done)

    def deleted(self) -> pa.Table:
        """The tombstones that deleted a live committed offset (:data:`DELETION_SCHEMA`), by log
        partition in the order added, each in the order they took effect."""
        self.end_partition()
        tables = [t for t in self._deleted if t.num_rows]
        return pa.concat_tables(tables) if tables else DELETION_SCHEMA.empty_table()
