"""Committed offsets over time, lag, and a Burrow-like status per group and partition.

History: every offset commit that took effect (transactional ones once committed, see
:mod:`codegen.dumps.compacted`), per (group, topic, partition), in log order, with the
tombstones that deleted the offset.

Lag: the partition's log end offset at the commit's time minus the committed offset (never
below 0). The log end offsets come from the data topic's partition folders among the paths
given (every broker image given, and the folders next to a partition folder given), see
:class:`codegen.forensics.inputs.LogEnds`: from its segments, the end offset at time T is one
past the last offset of the last batch whose newest timestamp is at most T (batch timestamps
are producer (CreateTime) or broker (LogAppendTime) times, so with skewed producer clocks this
is an estimate); from empty segments, the base offset of the active segment at any time; from
a ``replication-offset-checkpoint`` only the end when the broker wrote it (lag now, no history,
no status). A partition on several replicas takes the highest. Each partition says where its
log end came from (``logEndSource``). Without any of these, lag is unknown (null) and no status
is given.

Share groups (KIP-932) commit no offsets: their partitions' start offsets, epochs and in-flight
batches come from ``__share_group_state`` (:mod:`codegen.forensics.shares`), and their lag is
the log end offset minus the start offset minus the records after it already delivered, as
``listShareGroupOffsets`` gives it (KIP-1226) (the topic's name comes from ``__cluster_metadata``;
without it the log end is unknown). They have no status.

Status (after Burrow's consumer lag evaluation rules), per partition over a sliding window of
the last ``window`` commits (default 10), evaluated at *now*: the ``--as-of`` time, else the
newest timestamp in the dump: of the ``__consumer_offsets`` batches (up to ``--as-of``) and of
every data partition's batches. The first rule that holds:

1. no status when a lag in the window is unknown (no log end history for the partition);
2. ``OK`` (incomplete) when the window holds fewer than ``min_commits`` commits (default 2,
   at most the window): Burrow's ``minimum-complete``, so a single commit is not judged;
3. ``OK`` when any lag in the window is 0;
4. ``STOP`` when the time from the newest commit to now is longer than the window spans (newest
   minus oldest commit time), unless the committed offset has reached the log end at now;
5. ``REWIND`` when a committed offset is below the one before it in the window;
6. ``STALL`` when the committed offset did not move over the window and the lag did not shrink
   (it stayed the same or grew) between any two commits;
7. ``WARN`` when the offset moved but the lag never shrank between two consecutive commits;
8. ``OK`` otherwise.

A group's status is ``ERR`` when any of its partitions is ``STOP``, ``STALL`` or ``REWIND``,
else ``WARN`` when any is ``WARN``, else ``OK`` (and none when no partition has one).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np
import pyarrow as pa

from codegen.dumps.arrow import record_batches
from codegen.dumps.compacted import CommittedOffset, CompactedView
from codegen.dumps.coordinator import CONSUMER_OFFSETS
from codegen.dumps.decoded import RECORD, TOMBSTONE, DecodedBatch, DecodedRecord
from codegen.dumps.model import SegmentError
from codegen.dumps.segments import SegmentReader
from codegen.dumps.storage import RemotePath, StoragePath
from codegen.forensics.cluster import cluster_metadata
from codegen.forensics.downgrade import DumpInputError, dump_partitions
from codegen.forensics.inputs import (
    InputError,
    LogDirs,
    LogEnd,
    LogEnds,
    discover,
    resolve_cut,
)
from codegen.forensics.shares import SharePartitionState, share_states
from codegen.text import plural
from codegen.views import consumer_offsets
from codegen.views.compaction import key_ids, stable_order
from codegen.views.consumer_offsets import batches_kept, decode_commits
from codegen.views.cut import AsOf, kept_positions
from codegen.views.offsets import CommitHistory

__all__ = [
    "COMMIT_FIELDS",
    "DEFAULT_MIN_COMMITS",
    "DEFAULT_WINDOW",
    "ERROR_STATUSES",
    "Commit",
    "CommitColumns",
    "GroupLag",
    "KeyedCommits",
    "OffsetsView",
    "PartitionLag",
    "SharePartitionLag",
    "burrow_status",
    "commit_lags",
    "group_status",
    "keyed_commits",
    "lag_chunks",
    "lag_reports",
    "log_folder_of",
    "partition_lags",
]

DEFAULT_WINDOW: Final = 10
DEFAULT_MIN_COMMITS: Final = 2
ERROR_STATUSES: Final = ("STOP", "STALL", "REWIND")
_OFFSET_RECORDS: Final = ("OffsetCommit", "LegacyOffsetCommit")


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


@dataclass(slots=True)  # not frozen: frozen init is slower
class Commit:
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


@dataclass(frozen=True, slots=True)
class CommitColumns:
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


@dataclass(slots=True)
class PartitionLag:
    group: str
    topic: str
    partition: int
    history: CommitColumns
    """Every commit that took effect, oldest first, with its log end offset and lag."""
    deleted_at: list[int] = field(default_factory=list)
    """Record offsets of the tombstones that deleted this offset."""
    live: bool = True
    """False when the offset's last record is a tombstone."""
    log_end_offset: int | None = None
    """At *now*."""
    log_end_source: str | None = None
    """Where the log end was read (see :class:`codegen.forensics.inputs.LogEnd`)."""
    lag: int | None = None
    """At *now*: log end offset minus the last committed offset."""
    status: str | None = None
    reason: str = ""

    @property
    def commits(self) -> list[Commit]:
        """Every commit as an object (built on each call: read :attr:`history` in bulk)."""
        return self.history.commits()

    def summary_json(self) -> dict[str, Any]:
        """:meth:`to_json` without ``commits``."""
        return {
            "group": self.group,
            "topic": self.topic,
            "partition": self.partition,
            "live": self.live,
            "logEndOffset": self.log_end_offset,
            "logEndSource": self.log_end_source,
            "lag": self.lag,
            "status": self.status,
            "reason": self.reason,
            "deletedAt": self.deleted_at,
        }

    def to_json(self, commits: Any = None) -> dict[str, Any]:
        """The partition as JSON; ``commits`` replaces the commits' list when given (their
        text, already encoded)."""
        if commits is None:
            commits = [c.to_json() for c in self.commits]
        return {**self.summary_json(), "commits": commits}


@dataclass(slots=True)
class SharePartitionLag:
    """A share group's partition: lag = log end offset - start offset - records past the start
    offset already delivered (no status: a share group commits no offsets, its members
    acknowledge records)."""

    state: SharePartitionState
    log_end_offset: int | None
    log_end_source: str | None

    @property
    def lag(self) -> int | None:
        if self.log_end_offset is None:
            return None
        return self.state.lag(self.log_end_offset)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.state.to_json(),
            "logEndOffset": self.log_end_offset,
            "logEndSource": self.log_end_source,
            "lag": self.lag,
        }


@dataclass(slots=True)
class GroupLag:
    group: str
    status: str | None
    partitions: list[PartitionLag]
    now: int
    share_partitions: list[SharePartitionLag] = field(default_factory=list)

    def to_json(self, commits: Sequence[Any] | None = None) -> dict[str, Any]:
        """The group as JSON; ``commits`` (one per partition) replaces each partition's list of
        commits when given."""
        given = commits if commits is not None else [None] * len(self.partitions)
        doc: dict[str, Any] = {
            "group": self.group,
            "status": self.status,
            "now": self.now,
            "partitions": [p.to_json(c) for p, c in zip(self.partitions, given, strict=True)],
        }
        if self.share_partitions:
            doc["sharePartitions"] = [s.to_json() for s in self.share_partitions]
        return doc


_KEY_COLUMNS: Final = ("group", "topic", "partition")


@dataclass(frozen=True, slots=True)
class KeyedCommits:
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
    (:data:`codegen.views.offsets.HISTORY_SCHEMA` rows, in the order they took effect)."""
    n = history.num_rows
    if not n:
        return KeyedCommits.empty()
    # The rows by key, then in the order they took effect.
    order, starts, sorted_keys = _by_key(history)
    ends = np.append(starts[1:], n)
    counts = ends - starts
    tombstone = history.column("isTombstone").to_numpy(zero_copy_only=False)[order]
    is_commit = ~tombstone
    before = np.cumsum(is_commit) - is_commit  # commits before each row (sorted)
    commits_of = np.append(before[starts], before[-1] + is_commit[-1])
    commit_counts = np.diff(commits_of)
    keep = np.flatnonzero(commit_counts > 0)  # keys with a commit
    segment = np.repeat(np.arange(len(sorted_keys)), counts)
    deleted_rows = np.flatnonzero(tombstone & (before > before[starts][segment]))
    deleted_bounds = np.searchsorted(deleted_rows, np.append(starts, n)).tolist()
    record_offset = history.column("recordOffset").to_numpy()[order]
    deleted_at = record_offset[deleted_rows].tolist()
    commit_rows = order[is_commit]
    kept = keep.tolist()
    return KeyedCommits(
        [sorted_keys[k] for k in kept],
        np.append(commits_of[keep], commits_of[-1]) if len(keep) else np.zeros(1, np.int64),
        _int64(history, "recordOffset")[commit_rows],
        _int64(history, "commitTimestamp")[commit_rows],
        _int64(history, "offset")[commit_rows],
        _int64(history, "leaderEpoch")[commit_rows],
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
    return tuple((row[c] is None, row[c] or 0) for c in _KEY_COLUMNS)


def _int64(table: pa.Table, name: str) -> np.ndarray:
    """An integer column as int64 (0 where null: a tombstone has no value)."""
    return np.asarray(table.column(name).fill_null(0).to_numpy(), np.int64)


class OffsetsView(CompactedView):
    """The compacted view of one partition, also keeping every commit and offset deletion,
    record by record: the reference :func:`keyed_commits` is tested against."""

    def __init__(self, partition: int, as_of: AsOf | None = None) -> None:
        super().__init__()
        self.partition = partition
        self.as_of = as_of
        self.history: dict[tuple[str, str, int], list[Commit]] = {}
        """(group, topic, partition) -> its commits, oldest first (no log end offset, no lag)."""
        self.deletions: dict[tuple[str, str, int], list[int]] = {}

    def add_batch(self, item: DecodedBatch) -> None:
        batch = item.batch
        if self.as_of is not None and self.as_of.excludes(batch.base_offset, batch.max_timestamp):
            return
        super().add_batch(item)

    def take_history(self, history: pa.Table) -> None:
        """The commits from the columnar view (``codegen.views.offsets.HISTORY_SCHEMA`` rows
        of this partition, in the order they took effect), for a view fed no records."""
        kc = keyed_commits(history)
        last = pa.array(kc.last_rows)
        metadata = history.column("metadata").take(last).to_pylist()
        expire = history.column("expireTimestamp").take(last).to_pylist()
        unknown = np.zeros(len(kc.offset), np.bool_)
        columns = (kc.record_offset, kc.commit_timestamp, kc.offset, kc.leader_epoch)
        bounds = kc.bounds.tolist()
        for k, key in enumerate(kc.keys):
            cols = CommitColumns(*columns, kc.offset, kc.offset, unknown, bounds[k], bounds[k + 1])
            commits = self.history[key] = cols.commits()
            if kc.deleted_at[k]:
                self.deletions[key] = kc.deleted_at[k]
            if kc.live[k]:
                newest = commits[-1]
                self.offsets[key] = CommittedOffset(
                    *key,
                    newest.offset,
                    newest.leader_epoch,
                    metadata[k],
                    newest.commit_timestamp,
                    expire[k],
                    newest.record_offset,
                )

    def add(self, rec: DecodedRecord) -> None:
        super().add(rec)
        # The name first: most records are offset commits, and error records have no key.
        if rec.name not in _OFFSET_RECORDS or rec.kind not in (RECORD, TOMBSTONE):
            return
        key: Any = rec.key
        k = (key.group, key.topic, key.partition)
        value: Any = rec.value
        commits = self.history.get(k)
        if value is None:
            if commits is not None:
                self.deletions.setdefault(k, []).append(rec.offset)
            return
        commit = Commit(
            rec.offset,
            value.commit_timestamp,
            value.offset,
            getattr(value, "leader_epoch", -1),
            None,
            None,
        )
        if commits is None:
            self.history[k] = [commit]
        else:
            commits.append(commit)


def _read_history(
    files: list[StoragePath], as_of: AsOf | None, errors: list[SegmentError] | None
) -> pa.Table:
    """One log partition's history from the engine's columns (``codegen.views.offsets.history``)."""
    commits = CommitHistory()
    for f in files:
        found: list[SegmentError] = []
        kept = None if as_of is None else kept_positions(f, as_of)
        rows = consumer_offsets.CHUNK_ROWS
        for rb in record_batches(f, headers=False, batch_rows=rows, segment_errors=found):
            if kept is not None:
                rb = rb.filter(pa.array(batches_kept(rb, kept)))
            commits.add(decode_commits(rb)[0])
        if errors is not None:
            errors.extend(found)
    return commits.table()


def _newest_timestamp(files: list[StoragePath]) -> int:
    """The newest timestamp of the batches with records among ``files``, from their headers
    (not their records)."""
    newest = -1
    for f in files:
        for h in SegmentReader(f).batch_headers():
            if isinstance(h, SegmentError) or not h.record_count:
                continue
            newest = max(newest, h.max_timestamp)
    return newest


def burrow_status(
    commits: list[Commit],
    now: int,
    end_now: int | None,
    min_commits: int = DEFAULT_MIN_COMMITS,
) -> tuple[str | None, str]:
    """Status of one partition over a window of commits (oldest first), and why
    (:func:`window_statuses` of the one window)."""
    known = np.array([c.lag is not None for c in commits], np.bool_)
    ((status, reason),) = window_statuses(
        np.array([c.commit_timestamp for c in commits], np.int64),
        np.array([c.offset for c in commits], np.int64),
        np.array([c.lag or 0 for c in commits], np.int64),
        known,
        np.zeros(1, np.int64),
        np.array([len(commits)], np.int64),
        now,
        [end_now],
        min_commits,
    )
    return status, reason


_NO_LOG_END: Final = "no log end offsets for this partition (its data segments are not here)"


def window_statuses(
    commit_timestamp: np.ndarray,
    offset: np.ndarray,
    lag: np.ndarray,
    known: np.ndarray,
    starts: np.ndarray,
    stops: np.ndarray,
    now: int,
    end_now: Sequence[int | None],
    min_commits: int = DEFAULT_MIN_COMMITS,
) -> list[tuple[str | None, str]]:
    """Burrow's status of each window of commits (rows ``starts[k]:stops[k]`` of the columns,
    oldest first; ``known``: whether a commit's lag is), and why, judged at ``now`` with the
    window's log end then (``end_now``). The rules, first that holds:

    - a commit's lag unknown (or no commit): no status;
    - fewer than ``min_commits`` commits: OK, incomplete;
    - a lag of 0 in the window: OK;
    - no commit for longer than the window spans: STOP (OK if the newest committed offset is
      at the log end);
    - the committed offset went back between two commits: REWIND (the last such step);
    - the lag never shrank from one commit to the next: STALL if the committed offset did not
      move over the window, else WARN;
    - else OK.
    """
    sizes = stops - starts
    rows = _ranges(starts, stops)
    if len(rows) < len(offset):  # the windows' rows only, one after another
        commit_timestamp, offset, lag, known = (
            column[rows] for column in (commit_timestamp, offset, lag, known)
        )
        stops = np.cumsum(sizes)
        starts = stops - sizes
    n = len(offset)
    if not n:  # no commit: every window empty
        return [(None, _NO_LOG_END)] * len(starts)
    has = sizes > 0
    newest, oldest = np.maximum(stops - 1, 0), np.minimum(starts, n - 1)

    def count(flag: np.ndarray, first: np.ndarray) -> np.ndarray:
        """How many rows ``first:stops[k]`` of each window have ``flag``."""
        before = np.zeros(n + 1, np.int64)
        np.cumsum(flag, out=before[1:])
        return np.where(has, before[stops] - before[np.minimum(first, stops)], 0)

    step = np.zeros(n, np.bool_)  # row i against row i - 1 (counted from a window's 2nd row)
    back = step.copy()
    back[1:] = offset[1:] < offset[:-1]
    shrank = step.copy()
    shrank[1:] = lag[1:] < lag[:-1]
    unknown = count(~known, starts).tolist()
    zero_lag = count(known & (lag == 0), starts).tolist()
    went_back = count(back, starts + 1).tolist()
    never_shrinks = (count(shrank, starts + 1) == 0).tolist()
    # the last step back of each window: the greatest row with one, by a running maximum
    last_back = np.maximum.accumulate(np.where(back, np.arange(n), -1))
    # what the rules read of each window, at its newest and oldest commits and last step back
    back_at = np.clip(last_back[newest], min(1, n - 1), n - 1)
    ts_new, ts_old = commit_timestamp[newest].tolist(), commit_timestamp[oldest].tolist()
    off_new, off_old = offset[newest].tolist(), offset[oldest].tolist()
    off_back = offset[back_at].tolist()
    off_before = offset[np.maximum(back_at - 1, 0)].tolist()
    out: list[tuple[str | None, str]] = []
    for k, size in enumerate(sizes.tolist()):
        if not size or unknown[k]:
            out.append((None, _NO_LOG_END))
            continue
        if size < min_commits:
            out.append(
                (
                    "OK",
                    f"incomplete: {plural(size, 'commit')}, {min_commits} needed before the "
                    "partition is judged",
                )
            )
            continue
        if zero_lag[k]:
            out.append(("OK", "a lag of 0 in the window"))
            continue
        idle, span = now - ts_new[k], ts_new[k] - ts_old[k]
        end = end_now[k]
        if idle > span:
            if end is not None and off_new[k] >= end:
                out.append(("OK", "no commit lately, but the committed offset is at the log end"))
            else:
                out.append(
                    (
                        "STOP",
                        f"no commit for {idle} ms, longer than the window spans ({span} ms)",
                    )
                )
            continue
        if went_back[k]:
            went = f"the committed offset went back from {off_before[k]} to {off_back[k]}"
            out.append(("REWIND", went))
            continue
        if size > 1 and never_shrinks[k]:
            if off_new[k] == off_old[k]:
                out.append(
                    (
                        "STALL",
                        "the committed offset did not move over the window and the lag did "
                        "not shrink",
                    )
                )
            else:
                out.append(("WARN", "the offset moves but the lag never shrank over the window"))
            continue
        out.append(("OK", "the lag shrinks"))
    return out


def log_folder_of(path: StoragePath) -> StoragePath:
    """The broker log folder a dump path belongs to (where the data topics' folders are)."""
    if path.is_file():
        return path.parent.parent
    if path.name.startswith(CONSUMER_OFFSETS + "-"):
        return path.parent
    return path


def group_status(statuses: Iterable[str | None]) -> str | None:
    """A group's status from its partitions': ``ERR``, ``WARN``, ``OK`` or none."""
    seen = {s for s in statuses if s is not None}
    if not seen:
        return None
    if seen & set(ERROR_STATUSES):
        return "ERR"
    return "WARN" if "WARN" in seen else "OK"


def _ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """The concatenated ``arange(start, stop)`` of each pair."""
    lengths = stops - starts
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, np.int64)
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(starts - offsets, lengths) + np.arange(total)


def commit_lags(
    kc: KeyedCommits, ends: Sequence[LogEnd | None]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each commit's log end offset and lag at its time, and where they are known (``ends``:
    the log end of each key's data partition; unknown without a log end history: none, or
    only a checkpoint's). The lag is the log end minus the committed offset, never below 0."""
    n = len(kc.offset)
    log_end = np.zeros(n, np.int64)
    known = np.zeros(n, np.bool_)
    by_end: dict[int, list[int]] = {}
    for k, end in enumerate(ends):
        if end is not None and end.history:
            by_end.setdefault(id(end), []).append(k)
    found = {id(e): e for e in ends if e is not None}
    for end_id, members in by_end.items():
        end = found[end_id]
        chosen = np.asarray(members)
        rows = _ranges(kc.bounds[chosen], kc.bounds[chosen + 1])
        # LogEnd.at, for every commit at once.
        at = np.searchsorted(np.asarray(end.times), kc.commit_timestamp[rows], side="right")
        values = np.asarray(end.ends, np.int64)
        log_end[rows] = np.where(at > 0, values[np.maximum(at - 1, 0)], 0)
        known[rows] = True
    lag = np.maximum(log_end - kc.offset, 0)
    return log_end, lag, known


def partition_lags(
    kc: KeyedCommits,
    ends: Sequence[LogEnd | None],
    now: int,
    window: int,
    min_commits: int,
) -> list[PartitionLag]:
    """Each key's lag and status at ``now``: its commits get their log end offset and lag at
    their time from ``ends`` (its data partition's log end, per key), and the last ``window``
    are judged by :func:`window_statuses` (``min_commits`` at most ``window``)."""
    if not kc.keys:
        return []
    log_end, lag, known = commit_lags(kc, ends)
    columns = (kc.record_offset, kc.commit_timestamp, kc.offset, kc.leader_epoch, log_end, lag)
    stops = kc.bounds[1:]
    starts = np.maximum(kc.bounds[:-1], stops - window)
    ends_now = [None if e is None else end_at(e, now) for e in ends]
    statuses = window_statuses(
        kc.commit_timestamp, kc.offset, lag, known, starts, stops, now, ends_now, min_commits
    )
    newest_offsets = kc.offset[stops - 1].tolist()
    bounds = kc.bounds.tolist()
    out: list[PartitionLag] = []
    for k, key in enumerate(kc.keys):
        end, end_now = ends[k], ends_now[k]
        status, reason = statuses[k]
        if end is not None and not end.history:
            reason = (
                "log end only from a replication-offset-checkpoint (the segments are not "
                "here): lag now is known, its history and the status are not"
            )
        out.append(
            PartitionLag(
                *key,
                CommitColumns(*columns, known, bounds[k], bounds[k + 1]),
                kc.deleted_at[k],
                kc.live[k],
                end_now,
                None if end is None else f"{end.source}: {end.where}",
                None if end_now is None else max(end_now - newest_offsets[k], 0),
                status,
                reason,
            )
        )
    return out


def _selected(kc: KeyedCommits, group: str | None) -> KeyedCommits:
    """Only ``group``'s keys (a contiguous run: the keys are sorted)."""
    if group is None:
        return kc
    at = [k for k, key in enumerate(kc.keys) if key[0] == group]
    if not at:
        return KeyedCommits.empty()
    a, b = at[0], at[-1] + 1
    return KeyedCommits(
        kc.keys[a:b],
        kc.bounds[a : b + 1],
        kc.record_offset,
        kc.commit_timestamp,
        kc.offset,
        kc.leader_epoch,
        kc.deleted_at[a:b],
        kc.live[a:b],
        kc.last_rows[a:b],
    )


def lag_chunks(
    path: StoragePath | Sequence[StoragePath | str] | LogDirs,
    group: str | None = None,
    as_of: AsOf | None = None,
    window: int = DEFAULT_WINDOW,
    errors: list[SegmentError] | None = None,
    min_commits: int = DEFAULT_MIN_COMMITS,
) -> Iterator[list[GroupLag]]:
    """Offset history, lag and status of every group (or one) of a dump, one list of groups
    per ``__consumer_offsets`` partition, in partition order, each by group name; then the
    share groups without a committed offset, by name. A partition's groups are made when it
    has been read, so memory holds one partition's history. A group normally lives in one
    partition (its coordinator's); one found in several is listed once per partition.

    The input is checked and *now* found (from the batch headers and the data partitions' log
    ends) before this returns; the partitions are read as the chunks are taken."""
    if window < 1:
        raise InputError(f"--window {window}: give at least 1 commit")
    if min_commits < 1:
        raise InputError(f"--min-commits {min_commits}: give at least 1 commit")
    # A window smaller than the minimum is judged once full.
    min_commits = min(min_commits, window)
    dirs = (
        path
        if isinstance(path, LogDirs)
        else discover([path] if isinstance(path, str | Path | RemotePath) else list(path))
    )
    partitions = dump_partitions(dirs)
    cut = resolve_cut(dirs, as_of)
    ends = LogEnds(dirs, cut.others)
    if cut.now is not None:
        now = cut.now
    else:
        newest = [_newest_timestamp(files) for _, files in partitions]
        now = max([*newest, ends.newest_data_timestamp()])
    shares: dict[str, list[SharePartitionLag]] = {}
    for state in share_states(dirs, lambda: cluster_metadata(dirs), errors, cut.others):
        if group is not None and state.group != group:
            continue
        end = None if state.topic is None else ends.of(state.topic, state.partition)
        shares.setdefault(state.group, []).append(
            SharePartitionLag(
                state,
                None if end is None else end_at(end, now),
                None if end is None else f"{end.source}: {end.where}",
            )
        )
    return _chunks(
        partitions, ends, shares, group, cut.consumer_offsets, now, window, min_commits, errors
    )


def end_at(end: LogEnd, now: int) -> int:
    """A partition's log end at ``now``: from its history, or the one end a checkpoint gives."""
    return end.at(now) if end.history else end.last


def _chunks(
    partitions: list[tuple[int, list[StoragePath]]],
    ends: LogEnds,
    shares: dict[str, list[SharePartitionLag]],
    group: str | None,
    as_of: AsOf | None,
    now: int,
    window: int,
    min_commits: int,
    errors: list[SegmentError] | None,
) -> Iterator[list[GroupLag]]:
    found = False
    for _, files in partitions:
        kc = _selected(keyed_commits(_read_history(files, as_of, errors)), group)
        reports = partition_lags(
            kc, [ends.of(t, p) for _, t, p in kc.keys], now, window, min_commits
        )
        chunk = [
            GroupLag(
                g,
                group_status(p.status for p in parts),
                parts,
                now,
                shares.pop(g, []),
            )
            for g, parts in (
                (g, list(ps)) for g, ps in itertools.groupby(reports, key=lambda r: r.group)
            )
        ]
        found = found or bool(chunk)
        yield chunk
    rest = [GroupLag(g, None, [], now, shares[g]) for g in sorted(shares)]
    if group is not None and not found and not rest:
        label = '"" (empty group id)' if group == "" else repr(group)
        raise DumpInputError(
            f"group {label} has no committed offset in the dump; run without --group to list them"
        )
    if rest:
        yield rest


def lag_reports(
    path: StoragePath | Sequence[StoragePath | str] | LogDirs,
    group: str | None = None,
    as_of: AsOf | None = None,
    window: int = DEFAULT_WINDOW,
    errors: list[SegmentError] | None = None,
    min_commits: int = DEFAULT_MIN_COMMITS,
) -> list[GroupLag]:
    """:func:`lag_chunks` as one list by group name (a group found in several
    ``__consumer_offsets`` partitions merged, its partitions in partition order)."""
    by_group: dict[str, GroupLag] = {}
    for chunk in lag_chunks(path, group, as_of, window, errors, min_commits):
        for g in chunk:
            seen = by_group.get(g.group)
            if seen is None:
                by_group[g.group] = g
                continue
            seen.partitions += g.partitions
            seen.share_partitions += g.share_partitions
            seen.status = group_status(p.status for p in seen.partitions)
    return [by_group[g] for g in sorted(by_group)]
