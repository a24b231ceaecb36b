"""A partition's segments at a cut and its log end over time, from its batch rows (Arrow in,
Arrow out): the one definition the command line (:class:`codegen.forensics.inputs.LogEnds`,
``transactions``) and Spark (``spark_udfs.forensics.read_log_ends``, ``applyInArrow`` per
replica and per partition) run.

Inputs, per replica of a partition:

- its segments, in order: ``segment`` (their index) and ``baseOffset`` (from the file name;
  null where the name has none);
- its batches (:data:`codegen.dumps.batch_rows.BATCH_SCHEMA` rows with their ``segment``), in
  file order; rows with ``_error`` are left out.

The log end at time T is one past the last offset of the last batch whose newest timestamp is
at most T (running maxima of the batch header fields, so a compacted batch ends where its
header says); an active segment past the last batch adds its base offset (records removed),
and a replica with no batch has the active segment's base offset at any time (``empty
segments``). Of a partition's candidates (each replica's, each broker's checkpoint), the
highest end wins, segments before a checkpoint at the same end, then the first given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from codegen.dumps.views.cut import AsOf

__all__ = [
    "CANDIDATE_SCHEMA",
    "EARLIEST",
    "SEGMENT_SCHEMA",
    "STEPS_SCHEMA",
    "LogEndSteps",
    "SegmentsAt",
    "best_candidate",
    "best_log_end",
    "candidate_rows",
    "checkpoint_rows",
    "compared_where",
    "log_end_steps",
    "segments_at",
    "steps_of",
]

EARLIEST: Final = -(1 << 63)
"""The time of a log end known at any time (empty segments, a checkpoint)."""
EMPTY_SEGMENTS: Final = "empty segments"
SEGMENTS: Final = "segments"
REPLICATION_CHECKPOINT: Final = "replication-offset-checkpoint"

SEGMENT_SCHEMA: Final = pa.schema(
    [pa.field("segment", pa.int32()), pa.field("baseOffset", pa.int64())]
)
STEPS_SCHEMA: Final = pa.schema(
    [pa.field("endTime", pa.int64()), pa.field("endOffset", pa.int64())]
)
CANDIDATE_SCHEMA: Final = pa.schema(
    [
        pa.field("candidate", pa.int32()),
        pa.field("source", pa.string()),
        pa.field("where", pa.string()),
        pa.field("history", pa.bool_()),
        pa.field("endTime", pa.int64()),
        pa.field("endOffset", pa.int64()),
    ]
)
"""A partition's candidate log ends, step by step: ``candidate`` numbers them in the order
they are compared (replicas, then checkpoints); a checkpoint is one step at
:data:`EARLIEST` with ``history`` false."""

I64 = npt.NDArray[np.int64]


class SegmentsAt(NamedTuple):
    """A replica's segments and batches as they were at a cut (:func:`segments_at`)."""

    segments: pa.Table
    """The segments kept, in order (:data:`SEGMENT_SCHEMA`)."""
    batches: pa.Table
    """Their batches the cut keeps, readable ones only, in log order."""
    whole: bool
    """Whether the cut kept every segment and batch."""


def _int64(table: pa.Table, name: str) -> I64:
    return np.asarray(table.column(name).to_numpy(zero_copy_only=False), np.int64)


def segments_at(segments: pa.Table, batches: pa.Table, cut: AsOf | None) -> SegmentsAt:
    """A replica as it was at ``cut`` (without one: all of it, errors left out). A segment
    none of whose batches the cut keeps is left out, unless it is the first (the partition
    existed, empty: its log end is that segment's base offset) or holds no batch at all while
    every batch before it is kept (an empty active segment)."""
    index = _int64(segments, "segment")
    if not _ascending(index):
        segments = segments.sort_by("segment")
        index = _int64(segments, "segment")
    errors = batches.column("_error")
    readable = batches if errors.null_count == len(errors) else batches.filter(errors.is_null())
    of_segment = _int64(readable, "segment")
    if not _ascending(of_segment, _int64(readable, "batchPosition")):
        readable = readable.sort_by([("segment", "ascending"), ("batchPosition", "ascending")])
        of_segment = _int64(readable, "segment")
    n = segments.num_rows
    of_batch = np.searchsorted(index, of_segment)
    keep = np.ones(readable.num_rows, np.bool_)
    if cut is not None:
        keep = cut.keeps(_int64(readable, "baseOffset"), _int64(readable, "maxTimestamp"))
    total = np.bincount(of_batch, minlength=n)
    kept = np.bincount(of_batch[keep], minlength=n)
    whole_before = np.concatenate([[True], np.cumprod(total == kept)[:-1].astype(np.bool_)])
    file_kept = (kept > 0) | ((total == 0) & whole_before)
    if n:
        file_kept[0] = True
    whole = bool(keep.all() and file_kept.all())
    return SegmentsAt(
        segments if file_kept.all() else segments.filter(pa.array(file_kept)),
        readable if keep.all() else readable.filter(pa.array(keep)),
        whole,
    )


def _ascending(first: I64, second: I64 | None = None) -> bool:
    """Whether rows are in order of ``first``, then ``second`` (their sort would keep them:
    Arrow's sorts are stable), so the sort is left out."""
    if second is None:
        return bool((first[1:] >= first[:-1]).all())
    after, same = first[1:] > first[:-1], first[1:] == first[:-1]
    return bool((after | (same & (second[1:] >= second[:-1]))).all())


class LogEndSteps(NamedTuple):
    """A replica's log end over time: ``ends[i]`` from ``times[i]`` on (sorted: running
    maxima), and where it comes from (``segments`` or ``empty segments``)."""

    times: I64
    ends: I64
    source: str

    def table(self) -> pa.Table:
        return pa.table({"endTime": self.times, "endOffset": self.ends}, schema=STEPS_SCHEMA)


def log_end_steps(at: SegmentsAt) -> LogEndSteps | None:
    """The log end over time of a replica at a cut (:func:`segments_at`), None without a
    segment (or with only segments whose names hold no base offset and no batch)."""
    if not at.segments.num_rows:
        return None
    return steps_of(
        _int64(at.batches, "maxTimestamp"),
        _int64(at.batches, "lastOffset"),
        at.segments.column("baseOffset")[-1].as_py(),
    )


def steps_of(max_timestamp: I64, last_offset: I64, active_base: int | None) -> LogEndSteps | None:
    """The log end over time of a replica's batches (their ``maxTimestamp`` and ``lastOffset``,
    in log order) and the base offset of its active segment (None: its name holds none); None
    without either."""
    if not len(max_timestamp):
        if active_base is None:
            return None
        return LogEndSteps(
            np.array([EARLIEST], np.int64), np.array([active_base], np.int64), EMPTY_SEGMENTS
        )
    times = np.maximum.accumulate(max_timestamp)
    ends = np.maximum.accumulate(np.maximum(last_offset + 1, 0))
    if active_base is not None and active_base > ends[-1]:
        times = np.append(times, times[-1])
        ends = np.append(ends, active_base)
    return LogEndSteps(times, ends, SEGMENTS)


def candidate_rows(candidate: int, where: str, steps: LogEndSteps) -> pa.Table:
    """A replica's steps as candidate rows (:data:`CANDIDATE_SCHEMA`)."""
    n = len(steps.times)
    return pa.table(
        {
            "candidate": pa.repeat(pa.scalar(candidate, pa.int32()), n),
            "source": pa.repeat(pa.scalar(steps.source), n),
            "where": pa.repeat(pa.scalar(where), n),
            "history": pa.repeat(pa.scalar(True), n),
            "endTime": steps.times,
            "endOffset": steps.ends,
        },
        schema=CANDIDATE_SCHEMA,
    )


def checkpoint_rows(candidate: int, where: str, end: int) -> pa.Table:
    """A broker's checkpoint of the partition as a candidate: its high watermark, known at any
    time, without a history."""
    return pa.table(
        {
            "candidate": [candidate],
            "source": [REPLICATION_CHECKPOINT],
            "where": [where],
            "history": [False],
            "endTime": [EARLIEST],
            "endOffset": [end],
        },
        schema=CANDIDATE_SCHEMA,
    )


def best_log_end(candidates: pa.Table) -> tuple[pa.Table, str, str, bool, int] | None:
    """A partition's log end among its candidates (:data:`CANDIDATE_SCHEMA`): the highest last
    end, segments (``history``) before a checkpoint at the same end, then the first candidate.
    Returns its steps (:data:`STEPS_SCHEMA`), source, where (with how many were compared when
    there were several), whether it has a history, and the number compared; None without any."""
    if not candidates.num_rows:
        return None
    ordered = candidates
    numbers = _int64(ordered, "candidate")
    if not _ascending(numbers):
        ordered = candidates.sort_by("candidate")
        numbers = _int64(ordered, "candidate")
    firsts = np.flatnonzero(np.r_[True, numbers[1:] != numbers[:-1]])
    lasts = np.r_[firsts[1:], len(numbers)] - 1
    last_end = _int64(ordered, "endOffset")[lasts]
    history = np.asarray(ordered.column("history").to_numpy(zero_copy_only=False), np.bool_)
    chosen = best_candidate(last_end.tolist(), history[lasts].tolist())
    rows = ordered.slice(int(firsts[chosen]), int(lasts[chosen] - firsts[chosen] + 1))
    return (
        rows.select(["endTime", "endOffset"]),
        str(rows.column("source")[0].as_py()),
        compared_where(str(rows.column("where")[0].as_py()), len(lasts)),
        bool(history[firsts[chosen]]),
        len(lasts),
    )


def best_candidate(last_ends: Sequence[int], history: Sequence[bool]) -> int:
    """Which of a partition's candidate log ends (given in the order they are compared: their
    last ends, whether each has a history) is its log end: the highest last end, segments
    (``history``) before a checkpoint at the same end, then the first."""
    return min(range(len(last_ends)), key=lambda i: (-last_ends[i], not history[i], i))


def compared_where(where: str, compared: int) -> str:
    """Where the chosen log end was read, and of how many candidates when there were several."""
    if compared > 1:
        return f"{where}; the highest of {compared} replicas/checkpoints"
    return where
