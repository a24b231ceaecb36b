"""What the commit rows of one log partition (:mod:`codegen.dumps.views.commit_rows`, raw or
reduced by :func:`codegen.dumps.views.reduction.reduce_plain`) leave in effect: the committed
offsets (:func:`latest`), the tombstones that deleted one (:func:`deletions`) and every commit
in the order it took effect (:func:`history`); one definition for the command line and Spark.

Log-compaction semantics, as the group coordinator loads the topic: per (group, topic,
partition) the last commit wins and a tombstone deletes the key; a record of a transactional
batch (a transactional offset commit) takes effect at its producer's next end-transaction
marker in the same log partition if that is a COMMIT, and is dropped if it is an ABORT or if no
marker follows (a transaction still open). With the native engine, :func:`latest`,
:func:`deletions` and :func:`history` are one pass (:mod:`codegen.dumps.views.effects`); the
sorts here are the pure backend's reference.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from codegen.dumps.views.commit_rows import (
    COMMIT_KEY,
    DELETION_SCHEMA,
    OFFSET_SCHEMA,
    ascending,
    commit_rows,
)
from codegen.dumps.views.compaction import (
    apply_offsets,
    arrow_array,
    flags,
    key_ids,
    last_per_key,
    stable_order,
)
from codegen.dumps.views.effects import commit_row_effects, commit_row_history

__all__ = [
    "HISTORY_SCHEMA",
    "CommitHistory",
    "by_key",
    "deletions",
    "deletions_in_effect",
    "history",
    "in_effect",
    "latest",
    "latest_in_effect",
    "merge_partitions",
    "offsets_of",
]


def _in_log_order(rows: pa.Table) -> pa.Table:
    if ascending(rows.column("recordOffset").to_numpy()):
        return rows
    return rows.sort_by("recordOffset")


def in_effect(rows: pa.Table) -> pa.Table:
    """The commit rows of one log partition (any order) that take effect, with their
    ``applyOffset``, in the order they do (a sort is skipped where the rows are in order)."""
    effective = apply_offsets(_in_log_order(rows))
    applied = effective.column("applyOffset").to_numpy()
    if ascending(applied):  # ties are in record order already
        return effective
    return effective.sort_by([("applyOffset", "ascending"), ("recordOffset", "ascending")])


def latest(rows: pa.Table) -> pa.Table:
    """The committed offsets (:data:`OFFSET_SCHEMA`) of the commit rows of one log partition
    (raw, or reduced by :func:`~codegen.dumps.views.reduction.reduce_plain`; any order)."""
    if rows.num_rows == 0:
        return OFFSET_SCHEMA.empty_table()
    rows = _in_log_order(rows)
    effects = commit_row_effects(rows)
    if effects is None:
        return latest_in_effect(in_effect(rows))
    return offsets_of(rows.take(pa.array(effects[0])))


def latest_in_effect(ordered: pa.Table) -> pa.Table:
    """:func:`latest` of rows in the order they took effect (:func:`in_effect`): by sorts."""
    last = last_per_key(ordered, COMMIT_KEY)
    return offsets_of(last.filter(pc.invert(last.column("isTombstone"))))


def offsets_of(live: pa.Table) -> pa.Table:
    """The commit rows of committed offsets, one per key, as :data:`OFFSET_SCHEMA` rows."""
    return by_key(live.select(OFFSET_SCHEMA.names))


def by_key(rows: pa.Table) -> pa.Table:
    """``rows.sort_by`` group, topic and partition ascending (nulls last, equal keys in row
    order): each row's key as one number, the ranks of its group and topic among the column's
    distinct values (a dictionary's, sorted) and its partition's above the least, joined in
    mixed radix, sorted stably by numpy, where Arrow's sort compares the strings of the rows."""
    if rows.num_rows < 2:
        return rows
    code = np.zeros(rows.num_rows, np.int64)
    for name in COMMIT_KEY:
        ranks, size = _ranks(rows.column(name))
        if (int(code.max()) + 1) * size >= 1 << 62:  # too wide to join: Arrow's sort
            return rows.sort_by([(k, "ascending") for k in COMMIT_KEY])
        code = code * size + ranks
    return rows.take(arrow_array(stable_order(code)))


def _ranks(column: pa.ChunkedArray) -> tuple[npt.NDArray[np.int64], int]:
    """A non-negative number per value, ordered as Arrow's ascending sort orders the values (a
    null after every value), and a bound of them."""
    array = column.combine_chunks()
    if pa.types.is_integer(array.type) and array.type.bit_width <= 32:
        values = np.asarray(array.fill_null(0).to_numpy(), np.int64)
        low = int(values.min())
        high = int(values.max()) + 1
        if array.null_count:
            values[~flags(array.is_valid())] = high
        return values - low, high - low + 1
    if not pa.types.is_string(array.type):
        raise TypeError(f"by_key: a key column of {array.type}")
    encoded = pc.dictionary_encode(array)
    order = np.asarray(pc.sort_indices(encoded.dictionary), np.int64)
    rank = np.empty(len(order) + 1, np.int64)  # the last: a null's
    rank[order] = np.arange(len(order))
    rank[-1] = len(order)
    return rank[encoded.indices.fill_null(len(order)).to_numpy()], len(order) + 1


def deletions(rows: pa.Table) -> pa.Table:
    """The tombstones among the commit rows of one log partition (raw, or reduced by
    :func:`~codegen.dumps.views.reduction.reduce_plain`) that deleted a live committed offset
    (:data:`DELETION_SCHEMA`)."""
    if rows.num_rows == 0 or not pc.any(rows.column("isTombstone")).as_py():
        return DELETION_SCHEMA.empty_table()
    rows = _in_log_order(rows)
    effects = commit_row_effects(rows)
    if effects is None:
        return deletions_in_effect(in_effect(rows))
    return rows.take(pa.array(effects[1])).select(DELETION_SCHEMA.names)


def deletions_in_effect(ordered: pa.Table) -> pa.Table:
    """:func:`deletions` of rows in the order they took effect (:func:`in_effect`): by sorts."""
    ids = key_ids(ordered, COMMIT_KEY)
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
    if not ascending(rows.column("recordOffset").to_numpy()):
        rows = rows.sort_by("recordOffset")
    out = rows.select(HISTORY_SCHEMA.names)
    in_order = commit_row_history(rows)  # the engine's one pass, where it is asked
    if in_order is not None:
        return _taken(out, in_order)
    # The pure backend's reference: which rows take effect, and in what order, from the few
    # columns that say it, by sorts; then the history's columns taken once.
    narrow = rows.select(["marker", "isTransactional", "recordOffset", "producerId"])
    effective = apply_offsets(narrow.append_column("_row", pa.array(np.arange(rows.num_rows))))
    taken = effective.column("_row").to_numpy()
    apply = effective.column("applyOffset").to_numpy()
    if not ascending(apply):
        taken = taken[np.lexsort((effective.column("recordOffset").to_numpy(), apply))]
    return _taken(out, taken)


def _taken(rows: pa.Table, taken: np.ndarray) -> pa.Table:
    """Rows ``taken`` of ``rows``: kept chunk by chunk where they are in order (a take of
    chunked columns copies them whole)."""
    if not ascending(taken):
        return rows.take(pa.array(taken))
    if len(taken) == rows.num_rows:
        return rows
    kept = np.zeros(rows.num_rows, np.bool_)
    kept[taken] = True
    return rows.filter(pa.array(kept))


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


def merge_partitions(parts: Iterable[pa.Table]) -> pa.Table:
    """The committed offsets of several log partitions: a key normally lives in one; if it is in
    several, the partition read last wins (the order the coordinator would have loaded them)."""
    tables = [t for t in parts if t.num_rows]
    if not tables:
        return OFFSET_SCHEMA.empty_table()
    if len(tables) == 1:
        return tables[0]
    return by_key(last_per_key(pa.concat_tables(tables), COMMIT_KEY))
