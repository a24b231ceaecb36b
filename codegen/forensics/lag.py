"""Committed offsets over time, lag, and a Burrow-like status per group and partition.

History: every offset commit that took effect (transactional ones once committed, see
:mod:`codegen.dumps.views.compacted`), per (group, topic, partition), in log order, with the
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

Status: Burrow's rules per partition and group, see :mod:`codegen.forensics.burrow`. The
commits by key come from :mod:`codegen.forensics.commits`.
"""

from __future__ import annotations

import itertools
import mmap
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from codegen.dumps.arrow import record_batches
from codegen.dumps.batch_rows import batch_rows
from codegen.dumps.coordinator_types import CONSUMER_OFFSETS
from codegen.dumps.header_ends import newest_times
from codegen.dumps.model import ReadError, RecordError, SegmentError
from codegen.dumps.storage import RemotePath, StoragePath
from codegen.dumps.views import commits as commit_views
from codegen.dumps.views import effects
from codegen.dumps.views.commits import commit_keys, decode_commits
from codegen.dumps.views.compaction import arrow_array, flags
from codegen.dumps.views.cut import AsOf, batches_kept, kept_positions, newest_batch_time
from codegen.dumps.views.effects import RecordHistory
from codegen.dumps.views.offsets import CommitHistory
from codegen.forensics.burrow import (
    DEFAULT_MIN_COMMITS,
    DEFAULT_WINDOW,
    group_status,
    window_judgements,
    worst_of_runs,
)
from codegen.forensics.commits import (
    Commit,
    CommitColumns,
    KeyedCommits,
    keyed_commits,
    keyed_effects,
    row_ranges,
)
from codegen.forensics.coordinator_logs import DumpInputError, dump_partitions
from codegen.forensics.inputs import (
    InputError,
    LogDirs,
    LogEnd,
    LogEnds,
    discover,
    resolve_cut,
)
from codegen.forensics.shares import SharePartitionState, share_states
from codegen.gc_pause import gc_paused
from codegen.slotted import Slotted, field

__all__ = [
    "GroupLag",
    "LogEndIndex",
    "PartitionLag",
    "SharePartitionLag",
    "commit_lags",
    "end_at",
    "lag_chunks",
    "lag_reports",
    "log_folder_of",
    "newest_segment_time",
    "newest_time",
    "partition_lags",
]


class PartitionLag(Slotted):
    group: str
    topic: str
    partition: int
    columns: CommitColumns
    """The commits' columns, shared by the keys of a ``__consumer_offsets`` partition: this
    partition's are rows ``start:stop`` (:attr:`history`)."""
    start: int
    stop: int
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
    def history(self) -> CommitColumns:
        """Every commit that took effect, oldest first, with its log end offset and lag (made
        on each call: only the outputs that read one partition's commits ask for it)."""
        c = self.columns
        return CommitColumns(
            c.record_offset,
            c.commit_timestamp,
            c.offset,
            c.leader_epoch,
            c.log_end_offset,
            c.lag,
            c.known,
            self.start,
            self.stop,
        )

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


class SharePartitionLag(Slotted):
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


class GroupLag(Slotted):
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


_HISTORY_CHUNKS: Final = 1
"""Records read and made commit rows at a time, in the other views' chunks
(:data:`codegen.dumps.views.commits.CHUNK_ROWS`): the columnar loop's buffers grown
and filled for four chunks at once cost more than the steps saved (one 1 M-record partition,
4 -> 1: 3.971 -> 3.893 G instructions, 0.91 -> 0.86 s CPU)."""


def _read_commits(
    files: list[StoragePath],
    as_of: AsOf | None,
    errors: list[ReadError] | None,
    newest: list[int | None] | None = None,
) -> KeyedCommits:
    """One log partition's commits by key from the engine's columns: with the native engine, its
    one pass checking each commit and noting it as it takes effect (:class:`RecordHistory`);
    else the pure backend's sorts (``codegen.dumps.views.offsets.history``). ``errors``
    receives each file's segment errors and commits that do not decode, in file order;
    ``newest`` each file's newest batch time where the read gives it (``record_batches``'
    ``newest_times``)."""
    cuts = None if as_of is None else [_cut(f, as_of) for f in files]
    if not effects.engine_history():
        commits: RecordHistory | CommitHistory = CommitHistory()
    elif cuts is None:
        commits = RecordHistory(_segment_bytes(files))
    else:  # the bytes the cut keeps, which are read
        commits = RecordHistory(sum(kept_bytes for _, kept_bytes in cuts))
    for i, f in enumerate(files):
        found: list[ReadError] = []
        segment_errors: list[SegmentError] = []
        kept = None if cuts is None else cuts[i][0]
        for rb in record_batches(
            f,
            headers=False,
            batch_rows=_HISTORY_CHUNKS * commit_views.CHUNK_ROWS,
            segment_errors=segment_errors,
            newest_times=newest,
        ):
            if kept is not None:
                rb = rb.filter(pa.array(batches_kept(rb, kept)))
            # the engine's history pass checks and reads each commit as it reads its row
            if isinstance(commits, RecordHistory):
                refused = commits.add(rb)
            else:
                table, decode_errors = decode_commits(rb)
                commits.add(table)
                refused = _commits_among(rb, decode_errors)
            if refused:
                found += _refused_commits(rb, refused, str(f))
        if errors is not None:
            found += segment_errors
            errors += sorted(found, key=lambda e: e.position)  # in file order
    if isinstance(commits, RecordHistory):
        return keyed_effects(commits)
    return keyed_commits(commits.table())


def _commits_among(rb: pa.RecordBatch, rows: Iterable[int]) -> list[int]:
    """Of ``rows`` of ``rb``, the offset commits read (what the engine's pass refuses of the
    rows that do not decode)."""
    commit = commit_keys(rb.column("key"), flags(rb.column("isControl")))
    error = rb.column("_error")
    if error.null_count != rb.num_rows:
        commit &= flags(error.is_null())
    return [row for row in sorted(rows) if commit[row]]


def _refused_commits(rb: pa.RecordBatch, rows: list[int], file: str) -> list[RecordError]:
    """The errors of the commits at ``rows`` of ``rb`` (read from ``file``) that do not decode,
    as the topic decoder gives them (the reasons ``dump`` prints). Few: decoded one at a time."""
    from codegen.dumps.coordinator import coordinator_decoder  # damaged input only

    decoder = coordinator_decoder(CONSUMER_OFFSETS)
    taken = rb.take(pa.array(rows, pa.int64()))
    return [
        RecordError(file, position, offset, str(decoder.decode(key, value, offset).error))
        for position, offset, key, value in zip(
            taken.column("batchPosition").to_pylist(),
            taken.column("offset").to_pylist(),
            taken.column("key").to_pylist(),
            taken.column("value").to_pylist(),
            strict=True,
        )
    ]


def _cut(path: StoragePath, as_of: AsOf) -> tuple[npt.NDArray[np.int64], int]:
    """The positions of the batches of ``path`` the cut keeps (:func:`kept_positions`) and the
    bytes they take."""
    rows = batch_rows(path)
    kept = kept_positions(path, as_of, rows)
    positions = np.asarray(rows.column("batchPosition").to_numpy(), np.int64)
    sizes = np.asarray(rows.column("size").fill_null(0).to_numpy(), np.int64)
    return kept, int(sizes[np.isin(positions, kept)].sum())


def _segment_bytes(files: Sequence[StoragePath]) -> int:
    """The bytes of a partition's segment files, 0 where one's size is not to be had (what
    :class:`RecordHistory` makes room by is an estimate only)."""
    try:
        return sum(f.stat().st_size for f in files)
    except OSError:
        return 0


def newest_time(
    batches: pa.Table | pa.RecordBatch | None = None, ends: pa.Table | pa.RecordBatch | None = None
) -> int:
    """*now* without ``--as-of``: the newest timestamp of the ``__consumer_offsets`` batches
    with records (``batches``: batch rows, :func:`codegen.dumps.views.cut.newest_batch_time`) and of
    the data partitions' log ends known over time (``ends``: ``endTime, history`` rows; a
    checkpoint's end has no time); -1 without either. Of parts of a dump, the newest of their
    times is the whole's. The command line (:func:`lag_chunks`) and Spark
    (``spark_udfs.forensics.partition_lag``) run it."""
    newest = -1 if batches is None else newest_batch_time(batches)
    if ends is not None and ends.num_rows:
        history = ends.column("history").fill_null(False).to_numpy(zero_copy_only=False)
        times = np.asarray(ends.column("endTime").fill_null(-1).to_numpy(), np.int64)
        kept = times[np.asarray(history, np.bool_)]
        newest = max(newest, int(kept.max()) if len(kept) else -1)
    return newest


def newest_batches(path: StoragePath | bytes) -> pa.Table:
    """Batch rows of a segment of which :func:`newest_batch_time` gives what it gives of all
    of :func:`batch_rows`: the newest time of its whole batches with records. The headers are
    walked without their checksums (the records' pass checks every batch and reports a broken
    one: one pass of checks over the segment is enough), then the batches of the newest time
    are read again with them; where none is whole, the next newest time is tried (one
    checked re-read per broken batch of a newest time)."""
    rows = batch_rows(path, verify_crc=False)
    while True:
        newest = newest_batch_time(rows)
        if newest < 0:
            return rows.slice(0, 0)
        times = np.asarray(rows.column("maxTimestamp").fill_null(-1).to_numpy(), np.int64)
        at = np.flatnonzero(times == newest)
        starts = rows.column("batchPosition").to_numpy()[at]
        sizes = rows.column("size").fill_null(0).to_numpy()[at]
        checked = [
            batch_rows(path, start=int(p), end=int(p + n), verify_crc=True)
            for p, n in zip(starts, sizes, strict=True)
        ]
        whole = pa.concat_tables(checked)
        if newest_batch_time(whole) == newest:
            return whole
        rows = rows.filter(pa.array(times != newest))


def newest_segment_time(files: Sequence[StoragePath]) -> int:
    """The newest time of the segments' whole batches with records (-1 without one): what
    :func:`newest_batch_time` gives of their :func:`newest_batches`, by the native walk of their
    header chains (:func:`codegen.dumps.header_ends.newest_times`) where it reads a file, by
    :func:`newest_batches` where it does not."""
    found = newest_times(files)
    times = (
        newest_batch_time(newest_batches(f)) if t is None else t
        for f, t in zip(files, found if found is not None else [None] * len(files), strict=True)
    )
    return max(times, default=-1)


def log_folder_of(path: StoragePath) -> StoragePath:
    """The broker log folder a dump path belongs to (where the data topics' folders are)."""
    if path.is_file():
        return path.parent.parent
    if path.name.startswith(CONSUMER_OFFSETS + "-"):
        return path.parent
    return path


def commit_lags(
    kc: KeyedCommits, ends: Sequence[LogEnd | None], steps: LogEndIndex | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each commit's log end offset and lag at its time, and where they are known (``ends``:
    the log end of each key's data partition; unknown without a log end history: none, or
    only a checkpoint's). The lag is the log end minus the committed offset, never below 0.
    ``steps`` holds the log ends given to the engine over a command's calls (a new one
    without)."""
    return _numbered_lags(kc, *_numbered(ends), steps or LogEndIndex())


class LogEndIndex:
    """The log ends with a history that a command's keys have, given to the engine's
    ``commit_log_ends`` as one index (``log_end_index``, ``step_index.h``): their steps
    indexed by time once, again only when a log end not among them is asked for, where each
    ``__consumer_offsets`` partition's call indexed them all anew (at 16 M records, 16
    partitions, each with the 96 data partitions' 768 k steps). The index reads each log
    end's arrays where they are. Commits without a log end get their zeros from it too
    (:meth:`unknown`)."""

    def __init__(self) -> None:
        self._number: dict[LogEnd, int] = {}
        self._index: Any = None
        self._zeros = np.zeros(0, np.int64)

    def unknown(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The log ends, lags and known flags of ``n`` commits without a log end history:
        zeros, read-only views of one array kept for the command's next calls (the flags its
        bytes read as bools), where zeros made for each partition were 17 MB a 1 M-commit
        partition written again (``lag`` at 16 M records: memset and its page faults). The
        array is :func:`_zero_pages`, grown by a quarter past ``n`` (a partition a little
        longer than the last does not make it anew)."""
        if len(self._zeros) < n:
            self._zeros = _zero_pages(n + n // 4)
        zeros = self._zeros[:n]
        return zeros, zeros, self._zeros.view(np.bool_)[:n]

    def numbered(self, make: Any, distinct: Sequence[LogEnd]) -> tuple[Any, np.ndarray]:
        """The index (made by ``make``, ``log_end_index``) holding the log ends of
        ``distinct`` with a history, and the number of each of ``distinct`` in it (-1: no
        history)."""
        new = [e for e in distinct if e.history and e not in self._number]
        if new or self._index is None:
            for e in new:
                self._number[e] = len(self._number)
            # in the order numbered; the index holds the arrays (no copy)
            self._index = make([tuple(map(np.ascontiguousarray, e.arrays())) for e in self._number])
        numbers = np.fromiter(map(self._number.get, distinct, itertools.repeat(-1)), np.int64)
        return self._index, numbers


def _zero_pages(n: int) -> np.ndarray:
    """``n`` int64 zeros, read-only: a private anonymous map never written, whose pages read
    are the kernel's zero page (none allocated, zeroed or held: the outputs read the flags and
    few values of the commits without a log end, a 1 M-commit partition's 8 MB of zeros took
    2.2 k page faults and a memset in ``lag`` at 16 M records); ``np.zeros`` where there is no
    such map."""
    if not hasattr(mmap, "MAP_PRIVATE") or n == 0:
        zeros = np.zeros(n, np.int64)
        zeros.flags.writeable = False  # shared by the calls' outputs
        return zeros
    pages = mmap.mmap(-1, n * 8, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
    return np.frombuffer(pages, np.int64)


def _numbered(ends: Sequence[LogEnd | None]) -> tuple[list[LogEnd], np.ndarray]:
    """The keys' distinct log ends, in the order met (a LogEnd hashes as itself: the keys of a
    data partition share its log end), and each key's number among them (-1: none). What is
    read of a key's log end is then taken from the few distinct ones by number (a Python step
    a key, such as a dict's lookup, took some 300 instructions)."""
    distinct = [e for e in dict.fromkeys(ends) if e is not None]
    if not distinct:
        return distinct, np.full(len(ends), -1, np.int64)
    number: dict[LogEnd | None, int] = {e: at for at, e in enumerate(distinct)}
    return distinct, np.fromiter(map(number.get, ends, itertools.repeat(-1)), np.int64, len(ends))


def _per_key(values: Sequence[Any], numbers: np.ndarray) -> list[Any]:
    """Each key's value of its log end (``values``: one per distinct log end, ``numbers``: each
    key's, :func:`_numbered`), None for a key without one."""
    table = np.empty(len(values) + 1, object)
    for at, value in enumerate(values):
        table[at] = value
    table[-1] = None  # number -1
    taken: list[Any] = table.take(numbers).tolist()
    return taken


def _numbered_lags(
    kc: KeyedCommits, distinct: list[LogEnd], numbers: np.ndarray, steps: LogEndIndex
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`commit_lags` of the keys' log ends numbered (:func:`_numbered`)."""
    n = len(kc.offset)
    engine = effects.engine_function("commit_log_ends")
    if engine is not None:
        return _engine_lags(engine, kc, distinct, numbers, steps)
    if not any(e.history for e in distinct):
        # nothing known: the lag is meaningless, left 0 (not computed per commit)
        return steps.unknown(n)
    log_end = np.zeros(n, np.int64)
    known = np.zeros(n, np.bool_)
    for at, end in enumerate(distinct):
        if not end.history:
            continue
        chosen = np.flatnonzero(numbers == at)
        rows = row_ranges(kc.bounds[chosen], kc.bounds[chosen + 1])
        # LogEnd.at, for every commit at once.
        times, values = end.arrays()
        found = np.searchsorted(times, kc.commit_timestamp[rows], side="right")
        log_end[rows] = np.where(found > 0, values[np.maximum(found - 1, 0)], 0)
        known[rows] = True
    lag = np.maximum(log_end - kc.offset, 0)
    return log_end, lag, known


def _engine_lags(
    engine: Any, kc: KeyedCommits, distinct: list[LogEnd], numbers: np.ndarray, steps: LogEndIndex
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`commit_lags` by the engine (``commit_log_ends``, ``log_end_lags.h``): every
    commit's log end and lag in one pass over the keys, the log ends with a history indexed
    once by ``steps``."""
    n = len(kc.offset)
    if not any(e.history for e in distinct):
        # nothing known: the lag is meaningless, left 0 (not computed per commit)
        return steps.unknown(n)
    index, in_index = steps.numbered(effects.engine_function("log_end_index"), distinct)
    # each key's number in the index (-1: none, the table's last entry)
    table = np.append(in_index, -1)
    log_end, lag, known = engine(
        index,
        table.take(numbers),
        np.ascontiguousarray(kc.bounds, np.int64),
        np.ascontiguousarray(kc.commit_timestamp, np.int64),
        np.ascontiguousarray(kc.offset, np.int64),
    )
    return (
        np.frombuffer(log_end, np.int64),
        np.frombuffer(lag, np.int64),
        np.frombuffer(known, np.bool_),
    )


def partition_lags(
    kc: KeyedCommits,
    ends: Sequence[LogEnd | None],
    now: int,
    window: int,
    min_commits: int,
    steps: LogEndIndex | None = None,
) -> list[PartitionLag]:
    """Each key's lag and status at ``now``: its commits get their log end offset and lag at
    their time from ``ends`` (its data partition's log end, per key), and the last ``window``
    are judged by :func:`window_judgements` (``min_commits`` at most ``window``). ``steps``
    holds the log ends given to the engine over a command's calls (a new one without)."""
    if not kc.keys:
        return []
    distinct, numbers = _numbered(ends)
    reports, _ = _partition_lags(
        kc, _key_columns(kc), distinct, numbers, now, window, min_commits, steps or LogEndIndex()
    )
    return reports


KeyColumns = tuple[Sequence[str], Sequence[str], Sequence[int]]
"""The keys' groups, topics and partitions (:func:`_key_columns`)."""


def _key_columns(kc: KeyedCommits) -> KeyColumns:
    groups, topics, partitions = zip(*kc.keys, strict=True)
    return groups, topics, partitions


def _partition_lags(
    kc: KeyedCommits,
    key_columns: KeyColumns,
    distinct: list[LogEnd],
    numbers: np.ndarray,
    now: int,
    window: int,
    min_commits: int,
    steps: LogEndIndex,
) -> tuple[list[PartitionLag], np.ndarray]:
    """:func:`partition_lags` of the keys (``kc``, some) with their log ends numbered
    (:func:`_numbered`), and their statuses' ranks (:func:`window_judgements`)."""
    log_end, lag, known = _numbered_lags(kc, distinct, numbers, steps)
    columns = CommitColumns(
        kc.record_offset,
        kc.commit_timestamp,
        kc.offset,
        kc.leader_epoch,
        log_end,
        lag,
        known,
        0,
        len(kc.offset),
    )
    stops = kc.bounds[1:]
    starts = np.maximum(kc.bounds[:-1], stops - window)
    # each distinct log end's end now and source once, then taken per key by its number
    # (none without one)
    at_now = [end_at(e, now) for e in distinct]
    none: list[Any] = [None] * len(numbers)
    ends_now: list[int | None] = _per_key(at_now, numbers) if distinct else none
    status_of, reasons, ranks = window_judgements(
        kc.commit_timestamp, kc.offset, lag, known, starts, stops, now, ends_now, min_commits
    )
    bounds = kc.bounds.tolist()
    # each list made at once, the objects by map: no Python loop per key
    sources: list[str | None] = (
        _per_key([f"{e.source}: {e.where}" for e in distinct], numbers) if distinct else none
    )
    lags_now = _lags_now(at_now, numbers, kc.offset[stops - 1]) if distinct else none
    if any(not e.history for e in distinct):  # some ends from a checkpoint only
        checkpoint_only = np.append([not e.history for e in distinct], False).take(numbers)
        for k in np.flatnonzero(checkpoint_only).tolist():
            reasons[k] = _CHECKPOINT_ONLY
    groups, topics, partitions = key_columns
    made = _partition_objects(
        (
            groups,
            topics,
            partitions,
            [columns] * len(groups),
            bounds[:-1],
            bounds[1:],
            kc.deleted_at,
            kc.live,
            ends_now,
            sources,
            lags_now,
            status_of,
            reasons,
        )
    )
    return made, ranks


_PARTITION_FIELDS: Final = PartitionLag._fields


def _partition_objects(values: tuple[Sequence[Any], ...]) -> list[PartitionLag]:
    """``list(map(PartitionLag, *values))`` (a column per field, in order): by the engine
    (``slot_objects``: each object's slots written, where the dataclass's ``__init__`` took some
    3 k instructions an object, 73 M of lag's at 1 M records, 24 k keys), else by the class."""
    make = effects.engine_function("slot_objects")
    if make is None:
        return list(map(PartitionLag, *values))
    made: list[PartitionLag] = make(PartitionLag, _PARTITION_FIELDS, values)
    return made


def _lags_now(at_now: list[int], numbers: np.ndarray, newest: np.ndarray) -> list[int | None]:
    """Each key's lag now: its log end now (``at_now`` of its log end, by its number
    (:func:`_numbered`); none without one) minus its newest committed offset, never below 0. In
    int64 where no difference can leave it (every value at least 0), else in exact Python
    integers: one expression."""
    values: np.ndarray = np.append(np.asarray(at_now, np.int64), 0).take(numbers)
    if len(values) and min(int(values.min()), int(newest.min())) < 0:
        values, newest = values.astype(object), newest.astype(object)
    lags: list[int | None] = np.maximum(values - newest, 0).tolist()
    for k in np.flatnonzero(numbers < 0).tolist():
        lags[k] = None
    return lags


_CHECKPOINT_ONLY: Final = (
    "log end only from a replication-offset-checkpoint (the segments are not here): lag now "
    "is known, its history and the status are not"
)


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
    errors: list[ReadError] | None = None,
    min_commits: int = DEFAULT_MIN_COMMITS,
) -> Iterator[list[GroupLag]]:
    """Offset history, lag and status of every group (or one) of a dump, one list of groups
    per ``__consumer_offsets`` partition, in partition order, each by group name; then the
    share groups without a committed offset, by name. A partition's groups are made when it
    has been read, so memory holds one partition's history. A group normally lives in one
    partition (its coordinator's); one found in several is listed once per partition.

    The input is checked before this returns; the partitions are read as the chunks are
    taken. Without ``as_of``, *now* is the newest time of the batch headers and of the data
    partitions' log ends: those of the other partitions than the first walked before this
    returns, the first's given by its read (the first chunk's).

    ``errors`` receives what could not be read, which the answer goes without: segment errors
    (of ``__consumer_offsets``, ``__share_group_state`` and the data partitions read for their
    log ends, :class:`~codegen.forensics.inputs.LogEnds`) and offset commits that do not
    decode (:class:`~codegen.dumps.model.RecordError`), in file order, a partition's as it is
    read (before its chunk); :func:`~codegen.dumps.model.error_line` gives ``dump``'s line of
    each."""
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
    ends = LogEnds(dirs, cut.others, errors)
    now = cut.now
    if now is None:
        # the newest time but the first partition's, which its read gives (_chunks): its
        # headers are not walked
        rest = [f for _, fs in partitions[1:] for f in fs]
        now = max(newest_segment_time(rest), newest_time(ends=ends.data_ends()))
    share_errors: list[SegmentError] = []
    states = list(share_states(dirs, share_errors, cut.others))
    if errors is not None:
        errors += share_errors
    read_gives_now = cut.now is None and bool(partitions)
    return _chunks(
        partitions,
        ends,
        states,
        group,
        cut.consumer_offsets,
        now,
        read_gives_now,
        window,
        min_commits,
        errors,
    )


def end_at(end: LogEnd, now: int) -> int:
    """A partition's log end at ``now``: from its history, or the one end a checkpoint gives."""
    return end.at(now) if end.history else end.last


_PARTITION_SPAN: Final = 1 << 32
"""Partitions are int32: a key's topic and partition are numbered as one int64, the topic's
number times this plus the partition plus 2**31."""


def _data_partitions(
    topics: Sequence[str], partitions: Sequence[int]
) -> tuple[list[tuple[str, int]], np.ndarray]:
    """The keys' distinct data partitions (topic, partition), in the order met, and each key's
    number among them: a topic numbered by the place of the first key with it (one dict step
    a key), then each key's topic number and partition as one integer encoded by Arrow (where a
    (topic, partition) tuple made and hashed twice a key took some 45 M instructions at 24 k
    keys); by a dict of the tuples where a partition is null or past int32. Not by ``pa.array``
    of the lists: it imports ``numpy.ma`` (40 M instructions)."""
    n = len(topics)
    try:
        values = np.fromiter(partitions, np.int64, n)
    except (TypeError, OverflowError):  # a null partition, or past int64
        return _data_partitions_by_dict(topics, partitions)
    half = _PARTITION_SPAN // 2
    if n and (values.min() < -half or values.max() >= half):
        return _data_partitions_by_dict(topics, partitions)
    first: dict[str, int] = {}
    topic_numbers = np.fromiter(map(first.setdefault, topics, itertools.count()), np.int64, n)
    codes = arrow_array(topic_numbers * _PARTITION_SPAN + values + half).dictionary_encode()
    found = np.asarray(codes.dictionary.to_numpy(), np.int64)
    distinct = list(
        zip(
            map(topics.__getitem__, (found // _PARTITION_SPAN).tolist()),
            (found % _PARTITION_SPAN - half).tolist(),
            strict=True,
        )
    )
    return distinct, np.asarray(codes.indices.to_numpy(), np.int64)


def _data_partitions_by_dict(
    topics: Sequence[str], partitions: Sequence[int]
) -> tuple[list[tuple[str, int]], np.ndarray]:
    data = list(zip(topics, partitions, strict=True))
    number = {k: at for at, k in enumerate(dict.fromkeys(data))}
    return list(number), np.fromiter(map(number.__getitem__, data), np.int64, len(data))


def _group_lags(
    reports: list[PartitionLag],
    ranks: np.ndarray,
    groups: Sequence[str],
    now: int,
    shares: dict[str, list[SharePartitionLag]],
) -> list[GroupLag]:
    """The reports (of keys sorted by group, ``groups`` their groups; ``ranks``: their
    statuses' ranks, :func:`window_judgements`) by group, each with its status (that
    :func:`worst_of_runs` gives, from the ranks: no lookup a report) and its share partitions
    taken from ``shares``."""
    if not reports:
        return []
    names = np.array(groups, object)
    # where each group's run of keys starts (str compared in bulk, not a step a key)
    starts = np.flatnonzero(np.append(True, names[1:] != names[:-1]))
    statuses = worst_of_runs(ranks, starts)
    firsts = starts.tolist()
    return [
        GroupLag(groups[a], status, reports[a:b], now, shares.pop(groups[a], []))
        for a, b, status in zip(firsts, [*firsts[1:], len(reports)], statuses, strict=True)
    ]


def _chunks(
    partitions: list[tuple[int, list[StoragePath]]],
    ends: LogEnds,
    states: list[SharePartitionState],
    group: str | None,
    as_of: AsOf | None,
    now: int,
    read_gives_now: bool,
    window: int,
    min_commits: int,
    errors: list[ReadError] | None,
) -> Iterator[list[GroupLag]]:
    """The chunks of :func:`lag_chunks`; ``read_gives_now``: ``now`` is still to take the
    newest batch time of the first partition, which its read gives."""
    shares = {} if read_gives_now else _share_lags(states, group, ends, now)
    found = False
    steps = LogEndIndex()  # the data partitions' log ends indexed once, for every partition
    for i, (_, files) in enumerate(partitions):
        with gc_paused():  # a partition's reports: many small objects, no cycles
            newest: list[int | None] = []
            kc = _selected(_read_commits(files, as_of, errors, newest), group)
            if i == len(partitions) - 1:  # no history follows: the columns kept for one freed
                effects.release_history()
            if read_gives_now:
                now = max(now, _newest_read(files, newest))
                shares = _share_lags(states, group, ends, now)
                read_gives_now = False
            chunk = _partition_groups(kc, ends, now, window, min_commits, steps, shares)
            del kc
        found = found or bool(chunk)
        yield chunk
        # dropped before the next partition is read (the caller drops its own): their memory
        # is then reused by the next one's, not fresh (lag at 16 M records: peak 271 -> 234
        # MB, page faults 68.8 k -> 66 k)
        del chunk
    rest = [GroupLag(g, None, [], now, shares[g]) for g in sorted(shares)]
    if group is not None and not found and not rest:
        label = '"" (empty group id)' if group == "" else repr(group)
        raise DumpInputError(
            f"group {label} has no committed offset in the dump; run without --group to list them"
        )
    if rest:
        yield rest


def _partition_groups(
    kc: KeyedCommits,
    ends: LogEnds,
    now: int,
    window: int,
    min_commits: int,
    steps: LogEndIndex,
    shares: dict[str, list[SharePartitionLag]],
) -> list[GroupLag]:
    """The groups of one ``__consumer_offsets`` partition's keys (``kc``) at ``now`` (a chunk
    of :func:`_chunks`)."""
    if not kc.keys:
        return []
    columns = _key_columns(kc)
    # each data partition's log end found once, then given to its keys by number
    data, numbers = _data_partitions(columns[1], columns[2])
    distinct, in_distinct = _numbered([ends.of(*k) for k in data])
    reports, ranks = _partition_lags(
        kc,
        columns,
        distinct,
        np.append(in_distinct, -1).take(numbers),
        now,
        window,
        min_commits,
        steps,
    )
    return _group_lags(reports, ranks, columns[0], now, shares)


def _newest_read(files: Sequence[StoragePath], newest: Sequence[int | None]) -> int:
    """:func:`newest_segment_time` of files :func:`_read_commits` read, given what the read gave
    of each (``newest``; None: walked here)."""
    walked = newest_segment_time([f for f, t in zip(files, newest, strict=True) if t is None])
    return max([walked, *(t for t in newest if t is not None)])


def _share_lags(
    states: list[SharePartitionState], group: str | None, ends: LogEnds, now: int
) -> dict[str, list[SharePartitionLag]]:
    """The share groups' partitions (only ``group``'s when given) at ``now``, by group."""
    shares: dict[str, list[SharePartitionLag]] = {}
    for state in states:
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
    return shares


def lag_reports(
    path: StoragePath | Sequence[StoragePath | str] | LogDirs,
    group: str | None = None,
    as_of: AsOf | None = None,
    window: int = DEFAULT_WINDOW,
    errors: list[ReadError] | None = None,
    min_commits: int = DEFAULT_MIN_COMMITS,
) -> list[GroupLag]:
    """:func:`lag_chunks` as one list by group name (a group found in several
    ``__consumer_offsets`` partitions merged, its partitions in partition order); ``errors``
    receives what could not be read, as there."""
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
