"""Committed offsets by key, as numpy columns: the commits of one ``__consumer_offsets``
partition that took effect, per (group, topic, partition), oldest first, with the tombstones
that deleted an offset (:func:`keyed_commits`, or :func:`keyed_effects` from the native
engine's history); the record-by-record reference they are tested against is
:class:`codegen.forensics.offsets_view.OffsetsView`. :mod:`codegen.forensics.lag` adds log ends
and lags, :mod:`codegen.forensics.burrow` judges them."""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import pyarrow as pa

from codegen.dumps.views import effects
from codegen.dumps.views.compaction import key_ids, stable_order
from codegen.dumps.views.effects import RecordHistory
from codegen.slotted import FrozenSlotted, Slotted

__all__ = [
    "COMMIT_FIELDS",
    "Commit",
    "CommitColumns",
    "KeyedCommits",
    "keyed_commits",
    "keyed_effects",
    "row_ranges",
]

_KEY_COLUMNS: Final = ("group", "topic", "partition")


COMMIT_FIELDS: Final = (
    "recordOffset",
    "commitTimestamp",
    "offset",
    "leaderEpoch",
    "logEndOffset",
    "lag",
)
"""A commit's JSON members, in order (:meth:`Commit.to_json`, and the text
``codegen.forensics.lag_json.commits_json`` writes from columns)."""


class Commit(Slotted):
    record_offset: int
    """Offset of the commit's record in ``__consumer_offsets``."""
    commit_timestamp: int
    offset: int
    leader_epoch: int
    log_end_offset: int | None
    lag: int | None

    def to_json(self) -> dict[str, Any]:
        return dict(
            zip(
                COMMIT_FIELDS,
                (
                    self.record_offset,
                    self.commit_timestamp,
                    self.offset,
                    self.leader_epoch,
                    self.log_end_offset,
                    self.lag,
                ),
                strict=True,
            )
        )


class CommitColumns(Slotted):
    """Commits as numpy columns, oldest first: rows ``start:stop`` of arrays that may hold
    other partitions' commits too (one ``__consumer_offsets`` partition's, by key)."""

    record_offset: np.ndarray
    commit_timestamp: np.ndarray
    offset: np.ndarray
    leader_epoch: np.ndarray
    log_end_offset: np.ndarray
    """At the commit's time; meaningless where ``known`` is false."""
    lag: np.ndarray
    known: np.ndarray
    """Whether the log end offset (and so the lag) at the commit's time is known."""
    start: int
    stop: int

    def __len__(self) -> int:
        return self.stop - self.start

    def commits(self, last: int | None = None) -> list[Commit]:
        """The commits as objects (the ``last`` ones only, when given)."""
        start = self.start if last is None else max(self.start, self.stop - last)
        return _commit_objects(self, np.arange(start, self.stop))

    def newest(self) -> Commit:
        i = self.stop - 1  # one commit: read as scalars (a table line asks it of each key)
        known = bool(self.known[i])
        return Commit(
            int(self.record_offset[i]),
            int(self.commit_timestamp[i]),
            int(self.offset[i]),
            int(self.leader_epoch[i]),
            int(self.log_end_offset[i]) if known else None,
            int(self.lag[i]) if known else None,
        )


def _commit_objects(c: CommitColumns, rows: np.ndarray) -> list[Commit]:
    known = c.known[rows]
    ends: list[int | None] = c.log_end_offset[rows].tolist()
    lags: list[int | None] = c.lag[rows].tolist()
    if not known.all():
        for i in np.flatnonzero(~known).tolist():
            ends[i] = lags[i] = None
    return list(
        map(
            Commit,
            c.record_offset[rows].tolist(),
            c.commit_timestamp[rows].tolist(),
            c.offset[rows].tolist(),
            c.leader_epoch[rows].tolist(),
            ends,
            lags,
        )
    )


class KeyedCommits(FrozenSlotted):
    """The commits of one ``__consumer_offsets`` partition that took effect, by (group, topic,
    partition), as columns: the keys sorted, each key's commits in the order they took effect.
    Keys whose records are all tombstones are left out."""

    keys: list[tuple[str, str, int]]
    bounds: np.ndarray
    """The commits of ``keys[k]`` are rows ``bounds[k]:bounds[k + 1]`` of the columns."""
    record_offset: np.ndarray
    commit_timestamp: np.ndarray
    offset: np.ndarray
    leader_epoch: np.ndarray
    deleted_at: list[list[int]]
    """Per key, the record offsets of the tombstones after its first commit."""
    live: list[bool]
    """Per key, whether its last record is a commit (not a tombstone)."""
    last_rows: np.ndarray
    """Per key, the row of its last record in the history table read."""

    @classmethod
    def empty(cls) -> KeyedCommits:
        none = np.zeros(0, np.int64)
        return cls([], np.zeros(1, np.int64), none, none, none, none, [], [], none)


def keyed_commits(history: pa.Table) -> KeyedCommits:
    """:class:`KeyedCommits` of the history of one log partition
    (:data:`codegen.dumps.views.offsets.HISTORY_SCHEMA` rows, in the order they took effect)."""
    if not history.num_rows:
        return KeyedCommits.empty()
    # The rows by key, then in the order they took effect.
    order, starts, sorted_keys = _by_key(history)
    return _keyed(
        order,
        starts,
        sorted_keys,
        history.column("isTombstone").to_numpy(zero_copy_only=False),
        _int64(history, "recordOffset"),
        _int64(history, "commitTimestamp"),
        _int64(history, "offset"),
        _int64(history, "leaderEpoch"),
    )


def keyed_effects(history: RecordHistory) -> KeyedCommits:
    """:func:`keyed_commits` of the native engine's history of one log partition: its keys
    sorted as :func:`keyed_commits` sorts them (by the engine, ``key_order``; in Python where a
    key has a null), its rows put in that order by the engine."""
    keys = history.keys
    order_of = effects.engine_function("key_order")
    found = None if order_of is None else order_of(keys)
    if found is None:  # a key with a null: Arrow's order, nulls last
        order = np.asarray(
            sorted(range(len(keys)), key=lambda k: _null_last_key(keys[k])), np.int64
        )
    else:
        order = np.frombuffer(found, np.int64)
    kh = history.keyed(order)
    if not len(kh.keys):
        return KeyedCommits.empty()
    return KeyedCommits(
        [keys[k] for k in kh.keys.tolist()],
        kh.bounds,
        kh.record_offset,
        kh.commit_timestamp,
        kh.offset,
        kh.leader_epoch,
        kh.deleted,
        kh.live.tolist(),
        kh.last,
    )


def _keyed(
    order: np.ndarray,
    starts: np.ndarray,
    sorted_keys: list[tuple[str, str, int]],
    tombstones: np.ndarray,
    record_offsets: np.ndarray,
    commit_timestamps: np.ndarray,
    offsets: np.ndarray,
    leader_epochs: np.ndarray,
) -> KeyedCommits:
    """:class:`KeyedCommits` of history rows (their columns, in the order they took effect) put
    in key order (``order``: stable; ``starts``: where each of ``sorted_keys`` starts in it)."""
    n = len(order)
    ends = np.append(starts[1:], n)
    counts = ends - starts
    tombstone = tombstones[order]
    is_commit = ~tombstone
    before = np.cumsum(is_commit) - is_commit  # commits before each row (sorted)
    commits_of = np.append(before[starts], before[-1] + is_commit[-1])
    commit_counts = np.diff(commits_of)
    keep = np.flatnonzero(commit_counts > 0)  # keys with a commit
    segment = np.repeat(np.arange(len(sorted_keys)), counts)
    deleted_rows = np.flatnonzero(tombstone & (before > before[starts][segment]))
    deleted_bounds = np.searchsorted(deleted_rows, np.append(starts, n)).tolist()
    deleted_at = record_offsets[order][deleted_rows].tolist()
    commit_rows = order[is_commit]
    kept = keep.tolist()
    return KeyedCommits(
        [sorted_keys[k] for k in kept],
        np.append(commits_of[keep], commits_of[-1]) if len(keep) else np.zeros(1, np.int64),
        record_offsets[commit_rows],
        commit_timestamps[commit_rows],
        offsets[commit_rows],
        leader_epochs[commit_rows],
        [deleted_at[deleted_bounds[k] : deleted_bounds[k + 1]] for k in kept],
        (~tombstone[ends[keep] - 1]).tolist(),
        order[ends[keep] - 1],
    )


def _by_key(history: pa.Table) -> tuple[np.ndarray, np.ndarray, list[tuple[str, str, int]]]:
    """The order of the rows by (group, topic, partition), stable, where each key starts in
    it, and the keys in that order: one sort of a number per row made of the ranks of its group
    and topic among the distinct ones (few) and its partition."""
    group = history.column("group").combine_chunks().dictionary_encode()
    topic = history.column("topic").combine_chunks().dictionary_encode()
    partition = history.column("partition")
    if group.null_count or topic.null_count or partition.null_count:
        ids = key_ids(history, list(_KEY_COLUMNS))  # nulls sort last, as Arrow sorts them
        keys = history.select(list(_KEY_COLUMNS)).to_pylist()
        _, first = np.unique(ids, return_index=True)
        rank = np.empty(len(first), np.int64)
        by_key = sorted(range(len(first)), key=lambda k: _null_last(keys[first[k]]))
        rank[by_key] = np.arange(len(first))
        code = rank[ids]
        order = stable_order(code)
        starts = _starts(code[order])
        rows = order[starts].tolist()
        return order, starts, [tuple(keys[r].values()) for r in rows]
    parts = np.asarray(partition.to_numpy(), np.int64)
    low, span = int(parts.min()), int(parts.max()) - int(parts.min()) + 1
    code = np.zeros(len(parts), np.int64)
    names: list[list[str]] = []
    indices: list[np.ndarray] = []
    for column in (group, topic):
        names.append(column.dictionary.to_pylist())
        rank = np.empty(len(names[-1]), np.int64)
        rank[sorted(range(len(names[-1])), key=names[-1].__getitem__)] = np.arange(len(names[-1]))
        indices.append(column.indices.to_numpy())
        code = code * len(names[-1]) + rank[indices[-1]]
    code = code * span + (parts - low)
    # numbered densely (by the keys present, in the same order): one radix pass, not two
    present = np.zeros(int(code.max()) + 1, np.bool_)
    present[code] = True
    code = (np.cumsum(present) - 1)[code]
    order = stable_order(code)
    starts = _starts(code[order])
    firsts = order[starts]
    groups, topics = (
        [n[i] for i in ix[firsts].tolist()] for n, ix in zip(names, indices, strict=True)
    )
    return order, starts, list(zip(groups, topics, parts[firsts].tolist(), strict=True))


def _starts(ordered: np.ndarray) -> np.ndarray:
    """Where each run of equal values of ``ordered`` starts."""
    return np.flatnonzero(np.diff(ordered, prepend=ordered[0] - 1))


def _null_last(row: dict[str, Any]) -> tuple[tuple[bool, Any], ...]:
    return _null_last_key(tuple(row[c] for c in _KEY_COLUMNS))


def _null_last_key(key: tuple[Any, ...]) -> tuple[tuple[bool, Any], ...]:
    """A key's place in Arrow's ascending sort (nulls last)."""
    return tuple((v is None, v or 0) for v in key)


def _int64(table: pa.Table, name: str) -> np.ndarray:
    """An integer column as int64 (0 where null: a tombstone has no value)."""
    return np.asarray(table.column(name).fill_null(0).to_numpy(), np.int64)


def row_ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """The concatenated ``arange(start, stop)`` of each pair."""
    lengths = stops - starts
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, np.int64)
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(starts - offsets, lengths) + np.arange(total)
