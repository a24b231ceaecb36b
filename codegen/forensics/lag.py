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
newest timestamp in the dump (offset commits and data batches). The first rule that holds:

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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from codegen.dumps.arrow import record_batches
from codegen.dumps.compacted import CommittedOffset, CompactedView
from codegen.dumps.coordinator import CONSUMER_OFFSETS
from codegen.dumps.decoded import RECORD, TOMBSTONE, DecodedBatch, DecodedRecord
from codegen.dumps.model import SegmentError
from codegen.forensics.cluster import cluster_metadata
from codegen.forensics.downgrade import DumpInputError, dump_partitions
from codegen.forensics.groups import AsOf
from codegen.forensics.inputs import LogDirs, LogEnd, LogEnds, discover
from codegen.forensics.shares import SharePartitionState, share_states
from codegen.text import plural
from codegen.views.compaction import key_ids
from codegen.views.consumer_offsets import batches_up_to, decode_commits
from codegen.views.offsets import CommitHistory

__all__ = [
    "DEFAULT_MIN_COMMITS",
    "DEFAULT_WINDOW",
    "ERROR_STATUSES",
    "Commit",
    "GroupLag",
    "OffsetsView",
    "PartitionLag",
    "SharePartitionLag",
    "burrow_status",
    "commit_lags",
    "group_status",
    "lag_reports",
    "log_folder_of",
    "partition_lag",
]

DEFAULT_WINDOW: Final = 10
DEFAULT_MIN_COMMITS: Final = 2
ERROR_STATUSES: Final = ("STOP", "STALL", "REWIND")
_OFFSET_RECORDS: Final = ("OffsetCommit", "LegacyOffsetCommit")


@dataclass(slots=True)  # not frozen: one per record, and frozen init is slower
class Commit:
    record_offset: int
    """Offset of the commit's record in ``__consumer_offsets``."""
    commit_timestamp: int
    offset: int
    leader_epoch: int
    log_end_offset: int | None
    lag: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "recordOffset": self.record_offset,
            "commitTimestamp": self.commit_timestamp,
            "offset": self.offset,
            "leaderEpoch": self.leader_epoch,
            "logEndOffset": self.log_end_offset,
            "lag": self.lag,
        }


@dataclass(slots=True)
class PartitionLag:
    group: str
    topic: str
    partition: int
    commits: list[Commit] = field(default_factory=list)
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

    def to_json(self) -> dict[str, Any]:
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
            "commits": [c.to_json() for c in self.commits],
        }


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

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "group": self.group,
            "status": self.status,
            "now": self.now,
            "partitions": [p.to_json() for p in self.partitions],
        }
        if self.share_partitions:
            doc["sharePartitions"] = [s.to_json() for s in self.share_partitions]
        return doc


_KEY_COLUMNS: Final = ("group", "topic", "partition")
_COMMIT_COLUMNS: Final = ("recordOffset", "commitTimestamp", "offset", "leaderEpoch")
"""The columns of the columnar history that make a :class:`Commit`."""


class OffsetsView(CompactedView):
    """The compacted view of one partition, also keeping every commit and offset deletion."""

    def __init__(self, partition: int, as_of: AsOf | None = None) -> None:
        super().__init__()
        self.partition = partition
        self.as_of = as_of
        self.history: dict[tuple[str, str, int], list[Commit]] = {}
        """(group, topic, partition) -> its commits, oldest first (log end offset and lag are
        filled in by :func:`lag_reports`)."""
        self.deletions: dict[tuple[str, str, int], list[int]] = {}
        self.newest_timestamp = -1

    def add_batch(self, item: DecodedBatch) -> None:
        batch = item.batch
        if self.as_of is not None and self.as_of.excludes(batch.base_offset, batch.max_timestamp):
            return
        self.newest_timestamp = max(self.newest_timestamp, batch.max_timestamp)
        super().add_batch(item)

    def take_history(self, history: pa.Table, newest_timestamp: int) -> None:
        """The commits from the columnar view (``codegen.views.offsets.HISTORY_SCHEMA`` rows
        of this partition, in the order they took effect), for a view fed no records."""
        self.newest_timestamp = max(self.newest_timestamp, newest_timestamp)
        if not history.num_rows:
            return
        ordered = history.sort_by([(c, "ascending") for c in _KEY_COLUMNS])  # stable
        n = ordered.num_rows
        groups, topics, partitions = (ordered.column(c).to_pylist() for c in _KEY_COLUMNS)
        tombstone = ordered.column("isTombstone").to_numpy(zero_copy_only=False)
        record_offset = ordered.column("recordOffset").to_numpy()
        # Key segments (the rows are sorted by key), and where each starts in the commits and
        # in the deletions (tombstones after a commit of their key).
        segment = np.cumsum(np.diff(key_ids(ordered, list(_KEY_COLUMNS)), prepend=-1) != 0) - 1
        starts = np.flatnonzero(np.diff(segment, prepend=-1))
        commit_rows = np.flatnonzero(~tombstone)
        seen = np.cumsum(~tombstone) - ~tombstone  # commits before each row
        deleted_rows = np.flatnonzero(tombstone & (seen > seen[starts][segment]))
        bounds = np.append(starts, n)
        commit_bounds = np.searchsorted(commit_rows, bounds).tolist()
        deleted_bounds = np.searchsorted(deleted_rows, bounds).tolist()
        take = pa.array(commit_rows)
        commits_of = list(
            map(
                Commit,
                record_offset[commit_rows].tolist(),
                ordered.column("commitTimestamp").take(take).to_pylist(),
                ordered.column("offset").take(take).to_pylist(),
                ordered.column("leaderEpoch").take(take).to_pylist(),
                itertools.repeat(None, len(commit_rows)),
                itertools.repeat(None, len(commit_rows)),
            )
        )
        deleted_at = record_offset[deleted_rows].tolist()
        metadata = ordered.column("metadata").to_pylist()
        expire = ordered.column("expireTimestamp").to_pylist()
        ends = bounds[1:].tolist()
        for k, start in enumerate(starts.tolist()):
            commits = commits_of[commit_bounds[k] : commit_bounds[k + 1]]
            if not commits:
                continue
            key = (groups[start], topics[start], partitions[start])
            self.history[key] = commits
            deleted = deleted_at[deleted_bounds[k] : deleted_bounds[k + 1]]
            if deleted:
                self.deletions[key] = deleted
            last_row = ends[k] - 1
            if not tombstone[last_row]:
                last = commits[-1]
                self.offsets[key] = CommittedOffset(
                    *key,
                    last.offset,
                    last.leader_epoch,
                    metadata[last_row],
                    last.commit_timestamp,
                    expire[last_row],
                    last.record_offset,
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


def _offsets_view(
    partition: int, files: list[Path], as_of: AsOf | None, errors: list[SegmentError] | None
) -> OffsetsView:
    """One partition's commits from the engine's columns (``codegen.views.offsets.history``)."""
    view = OffsetsView(partition, as_of)
    commits = CommitHistory()
    newest = -1
    for f in files:
        found: list[SegmentError] = []
        for rb in record_batches(f, headers=False, batch_rows=32768, segment_errors=found):
            if as_of is not None:
                rb = rb.filter(pa.array(batches_up_to(rb, as_of.offset, as_of.timestamp_ms)))
            stamps = rb.column("timestamp").drop_null()
            if len(stamps):
                newest = max(newest, pc.max(stamps).cast(pa.int64()).as_py() // 1000)
            commits.add(decode_commits(rb)[0])
        if errors is not None:
            errors.extend(found)
    view.take_history(commits.table(), newest)
    return view


def burrow_status(
    commits: list[Commit],
    now: int,
    end_now: int | None,
    min_commits: int = DEFAULT_MIN_COMMITS,
) -> tuple[str | None, str]:
    """Status of one partition over a window of commits (oldest first), and why."""
    if not commits or any(c.lag is None for c in commits):
        return None, "no log end offsets for this partition (its data segments are not here)"
    if len(commits) < min_commits:
        return (
            "OK",
            f"incomplete: {plural(len(commits), 'commit')}, {min_commits} needed before the "
            "partition is judged",
        )
    lags = [c.lag for c in commits]
    if any(lag == 0 for lag in lags):
        return "OK", "a lag of 0 in the window"
    newest, oldest = commits[-1], commits[0]
    if now - newest.commit_timestamp > newest.commit_timestamp - oldest.commit_timestamp:
        if end_now is not None and newest.offset >= end_now:
            return "OK", "no commit lately, but the committed offset is at the log end"
        return (
            "STOP",
            f"no commit for {now - newest.commit_timestamp} ms, longer than the window spans "
            f"({newest.commit_timestamp - oldest.commit_timestamp} ms)",
        )
    pairs = list(itertools.pairwise(commits))
    back = [(a, b) for a, b in pairs if b.offset < a.offset]
    if back:
        a, b = back[-1]
        return "REWIND", f"the committed offset went back from {a.offset} to {b.offset}"
    lag_never_shrinks = all((b.lag or 0) >= (a.lag or 0) for a, b in pairs)
    if len(commits) > 1 and newest.offset == oldest.offset and lag_never_shrinks:
        return (
            "STALL",
            "the committed offset did not move over the window and the lag did not shrink",
        )
    if len(commits) > 1 and lag_never_shrinks:
        return "WARN", "the offset moves but the lag never shrank over the window"
    return "OK", "the lag shrinks"


def log_folder_of(path: Path) -> Path:
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


def commit_lags(commits: list[Commit], end: LogEnd | None) -> None:
    """Fill in each commit's log end offset and lag at its time (unknown without a log end
    history: none, or only a checkpoint's)."""
    if end is not None and end.history:
        for c in commits:
            c.log_end_offset = end.at(c.commit_timestamp)
            c.lag = max(c.log_end_offset - c.offset, 0)


def partition_lag(
    key: tuple[str, str, int],
    commits: list[Commit],
    deleted_at: list[int],
    live: bool,
    end: LogEnd | None,
    now: int,
    window: int,
    min_commits: int,
) -> PartitionLag:
    """One partition's lag and status at ``now``: ``commits`` (every commit of ``key`` that
    took effect, oldest first) get their log end offset and lag at their time from ``end``,
    and the last ``window`` are judged by :func:`burrow_status` (``min_commits`` at most
    ``window``)."""
    commit_lags(commits, end)
    end_now = None if end is None else (end.at(now) if end.history else end.last)
    status, reason = burrow_status(commits[-window:], now, end_now, min_commits)
    if end is not None and not end.history:
        reason = (
            "log end only from a replication-offset-checkpoint (the segments are not "
            "here): lag now is known, its history and the status are not"
        )
    return PartitionLag(
        *key,
        commits,
        deleted_at,
        live,
        end_now,
        None if end is None else f"{end.source}: {end.where}",
        None if end_now is None else max(end_now - commits[-1].offset, 0),
        status,
        reason,
    )


def lag_reports(
    path: Path | Sequence[Path | str] | LogDirs,
    group: str | None = None,
    as_of: AsOf | None = None,
    window: int = DEFAULT_WINDOW,
    errors: list[SegmentError] | None = None,
    min_commits: int = DEFAULT_MIN_COMMITS,
) -> list[GroupLag]:
    """Offset history, lag and status of every group (or one) of a dump, by group."""
    if window < 1:
        raise ValueError(f"--window {window}: give at least 1 commit")
    if min_commits < 1:
        raise ValueError(f"--min-commits {min_commits}: give at least 1 commit")
    # A window smaller than the minimum is judged once full.
    min_commits = min(min_commits, window)
    dirs = (
        path
        if isinstance(path, LogDirs)
        else discover([path] if isinstance(path, str | Path) else list(path))
    )
    views = [
        _offsets_view(partition, files, as_of, errors) for partition, files in dump_partitions(dirs)
    ]
    ends = LogEnds(dirs)
    keys = {k for v in views for k in v.history if group is None or k[0] == group}
    shares: dict[str, list[SharePartitionLag]] = {}
    if as_of is None:  # the share state is read at the end of the log only
        for state in share_states(dirs, cluster_metadata(dirs), errors):
            if group is not None and state.group != group:
                continue
            end = None if state.topic is None else ends.of(state.topic, state.partition)
            shares.setdefault(state.group, []).append(
                SharePartitionLag(
                    state,
                    None if end is None else end.last,
                    None if end is None else f"{end.source}: {end.where}",
                )
            )
    if group is not None and not keys and group not in shares:
        label = '"" (empty group id)' if group == "" else repr(group)
        raise DumpInputError(
            f"group {label} has no committed offset in the dump; run without --group to list them"
        )
    for _, t, p in keys:
        ends.of(t, p)
    now = max([v.newest_timestamp for v in views] + [ends.newest_timestamp])
    if as_of is not None and as_of.timestamp_ms is not None:
        now = as_of.timestamp_ms
    by_group: dict[str, list[PartitionLag]] = {}
    for v in views:
        for k in sorted(v.history):
            if k in keys:
                report = partition_lag(
                    k,
                    v.history[k],
                    v.deletions.get(k, []),
                    k in v.offsets,
                    ends.of(k[1], k[2]),
                    now,
                    window,
                    min_commits,
                )
                by_group.setdefault(k[0], []).append(report)
    return [
        GroupLag(
            g,
            group_status(p.status for p in by_group.get(g, [])),
            by_group.get(g, []),
            now,
            shares.get(g, []),
        )
        for g in sorted(set(by_group) | set(shares))
    ]
