"""A ``__consumer_offsets`` file read for its compacted view from the engine's columnar batches.

Offset commits (about 99 % of a real dump) stay columns: they go to
:class:`~codegen.dumps.views.committed.CommittedOffsets`, the one definition of committed offsets
the command line and Spark share. The few other records (group metadata, members, assignments,
transaction markers) of a chunk are decoded in one call of :class:`~codegen.dumps.coordinator
.CoordinatorDecoder`'s pure loop, as it decodes a segment's batch, and go to the group view
(:class:`~codegen.dumps.views.compacted.CompactedView`) with their batch's producer id and flags.
Records that do not decode are decoded once more by the same decoder, so their errors read as
every other command's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final, TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from codegen.columnar.decode import Rows
from codegen.dumps.arrow import record_batches
from codegen.dumps.coordinator import CoordinatorDecoder
from codegen.dumps.decoded import ERROR, UNKNOWN, DecodedRecord, control_record
from codegen.dumps.model import SegmentError
from codegen.dumps.storage import StoragePath
from codegen.dumps.views import commits
from codegen.dumps.views.commit_rows import single_array
from codegen.dumps.views.commits import commit_keys
from codegen.dumps.views.committed import CommittedOffsets
from codegen.dumps.views.compacted import CompactedView
from codegen.dumps.views.compaction import arrow_array, bits_at, flags, flags_at
from codegen.dumps.views.cut import AsOf, batches_kept, kept_positions
from codegen.dumps.views.effects import (
    NO_PRODUCERS,
    PASS_NULLS,
    PLAIN_COMMIT,
    TRANSACTIONAL_TOMBSTONE,
    binary_buffers,
)
from codegen.slotted import Slotted, field

__all__ = ["FileChunk", "apply_chunk", "read_compacted"]


class FileChunk(Slotted):
    """What one columnar batch of a file held, for the command's counts and progress: counted
    when read (``groups`` reads none of them, and a count is a pass over the chunk's rows)."""

    positions: npt.NDArray[np.int64]
    """The batch position of each row, in file order."""
    readable: npt.NDArray[np.bool_] | None
    """Which rows were read without an error; None: every row."""
    segment_errors: list[SegmentError] = field(default_factory=list)
    errors: list[tuple[int, DecodedRecord]] = field(default_factory=list)
    """Records that did not decode, after their batch's position in the file."""
    unknown: int = 0
    newer_records: int = 0
    """Records that are not offset commits read newer than the specs."""
    newer_commits: tuple[pa.ChunkedArray, npt.NDArray[np.bool_]] | int | None = None
    """The rows' ``isNewerVersion`` column and which rows are not applied offset commits; or
    the count of applied offset commits newer than the specs, where the engine's pass counted
    them."""
    end: int = 0
    """The byte position reached by a chunk of no rows (of segment errors only)."""

    @property
    def batches(self) -> int:
        """Log batches (with records) read."""
        read = self.positions if self.readable is None else self.positions[self.readable]
        return _distinct_count(read)

    @property
    def records(self) -> int:
        if self.readable is None:
            return len(self.positions)
        return int(np.count_nonzero(self.readable))

    @property
    def newer(self) -> int:
        """Records read newer than the specs."""
        if self.newer_commits is None:
            return self.newer_records
        if isinstance(self.newer_commits, int):
            return self.newer_records + self.newer_commits
        column, left = self.newer_commits
        return self.newer_records + int(np.count_nonzero(flags(column) & ~left))

    @property
    def position(self) -> int:
        """Byte position in the file reached."""
        return int(self.positions.max()) if len(self.positions) else self.end


_NO_ROWS: Final = np.zeros(0, np.int64)


def read_compacted(
    path: StoragePath,
    view: CompactedView,
    offsets: CommittedOffsets,
    decoder: CoordinatorDecoder,
    *,
    max_batch_size: int,
    max_batch_records: int,
    batch_rows: int | None = None,
    up_to: AsOf | None = None,
) -> Iterator[FileChunk]:
    """Feed one ``__consumer_offsets`` file to ``view`` (all but offset commits) and ``offsets``
    (offset commits and transaction markers), a chunk at a time. Call
    ``offsets.end_partition()`` after the last file of a log partition. ``up_to`` leaves out
    the log batches past the cut, whole (:mod:`codegen.dumps.views.cut`)."""
    found: list[SegmentError] = []
    kept = None if up_to is None else kept_positions(path, up_to)
    for rb in record_batches(
        path,
        headers=False,
        batch_rows=commits.CHUNK_ROWS if batch_rows is None else batch_rows,
        max_batch_size=max_batch_size,
        max_batch_records=max_batch_records,
        segment_errors=found,
    ):
        if kept is not None:
            rb = rb.filter(pa.array(batches_kept(rb, kept)))
        chunk = apply_chunk(rb, view, offsets, decoder)
        chunk.segment_errors, found = found, []
        yield chunk
    if found:
        yield FileChunk(_NO_ROWS, None, found, end=found[-1].position + found[-1].size)


def apply_chunk(
    rb: pa.RecordBatch,
    view: CompactedView,
    offsets: CommittedOffsets,
    decoder: CoordinatorDecoder,
) -> FileChunk:
    """Feed one chunk of a log partition's rows, in offset order (``record_batches``'
    ``_error, isControl, batchPosition, offset, timestamp, key, value, producerId,
    isTransactional``), to ``view`` (all but offset commits) and ``offsets`` (offset commits
    and transaction markers): what :func:`read_compacted` does with each chunk it reads, and
    Spark with each chunk of a partition's rows (:mod:`spark_udfs.group_views`)."""
    n = rb.num_rows
    error = rb.column("_error")
    readable = None if error.null_count == n else flags(error.is_null())
    positions = rb.column("batchPosition").to_numpy(zero_copy_only=False)
    chunk = FileChunk(positions, readable)
    checked = offsets.add_checked(rb, decoder.package, _waiting(view))
    if checked is not None:  # each commit checked in the engine's pass
        chunk.newer_commits = checked.newer
        left = _left_by_the_pass(rb, checked.left)
    else:
        left = _decoded_and_added(rb, readable, offsets, decoder, chunk)
    # Everything else (few records), and the offset commits that did not decode (counted,
    # nothing to apply), in file order.
    if left is not None:
        _apply_others(rb, left, positions, view, decoder, chunk)
    return chunk


def _waiting(view: CompactedView) -> npt.NDArray[np.int64]:
    """The producers ``view`` holds records of (a null one is no number: the engine's pass reads
    a null producer id as -1, which the view's None is not), whose markers the pass leaves to
    it."""
    if not view.pending:
        return NO_PRODUCERS
    return np.fromiter((p for p in view.pending if p is not None), np.int64)


class _RowsLeft(Slotted):
    """The rows of a chunk left for the view (read, and not offset commits applied), with what
    is read of them."""

    rows: npt.NDArray[np.integer[Any]]
    controls: npt.NDArray[np.bool_]
    transactional: npt.NDArray[np.bool_]
    keys: _Slices
    values: _Slices
    failed: npt.NDArray[np.bool_] | None
    """Which are offset commits that did not decode (None: none)."""
    numbers: npt.NDArray[np.void] | None = None
    """The engine pass's records of them (:data:`~codegen.dumps.views.effects.LEFT_ROW`), whose
    producer ids, offsets and timestamps are read in place of the columns'."""

    def int64s(self, rb: pa.RecordBatch, name: str, null: int) -> npt.NDArray[np.int64]:
        """Their values of ``rb``'s int64 (or timestamp) column ``name``, ``null`` where null:
        the engine's where it read them with that null
        (:data:`~codegen.dumps.views.effects.PASS_NULLS`)."""
        column = rb.column(name)
        if self.numbers is not None and (PASS_NULLS[name] == null or not column.null_count):
            return self.numbers[_PASS_FIELDS[name]]
        return _int64_rows(column, self.rows, null)


_PASS_FIELDS: Final = {"producerId": "producer", "offset": "offset", "timestamp": "timestamp"}
"""The field of the engine's records (:data:`~codegen.dumps.views.effects.LEFT_ROW`) of each
int64 column."""


def _left_by_the_pass(rb: pa.RecordBatch, left: npt.NDArray[np.void]) -> _RowsLeft | None:
    """The rows the engine's pass left (``left``: its records of them, which it wrote as it read
    each row, so that the chunk's columns, out of the caches after the pass, are not read
    again); None: none."""
    if not len(left):
        return None
    rows = left["row"]
    key = rb.column("key")
    key_valid = np.ones(len(left), np.bool_)
    if key.null_count:
        key_array = single_array(key)
        key_valid = bits_at(key_array.buffers()[0], key_array.offset, rows).view(np.bool_)
    value_sizes = left["value_size"]
    return _RowsLeft(
        rows,
        left["control"],
        left["transactional"],
        (left["key_start"], left["key_size"], key_valid, _data(key)),
        (left["value_start"], value_sizes, value_sizes >= 0, _data(rb.column("value"))),
        left["refused"] if left["refused"].any() else None,
        left,
    )


def _data(column: pa.Array | pa.ChunkedArray) -> npt.NDArray[np.uint8]:
    """A binary column's data, as the engine's pass read it (its rows' starts are in it)."""
    data = binary_buffers(column)[1]
    return np.frombuffer(data, np.uint8) if len(data) else np.zeros(0, np.uint8)


def _decoded_and_added(
    rb: pa.RecordBatch,
    readable: npt.NDArray[np.bool_] | None,
    offsets: CommittedOffsets,
    decoder: CoordinatorDecoder,
    chunk: FileChunk,
) -> _RowsLeft | None:
    """``rb``'s commits decoded, then added to ``offsets`` (where the engine does not check them
    as it reads them): the rows left (read, and not offset commits that decoded), None: none."""
    table, errors = offsets.decode(rb, decoder.package)
    kinds = offsets.add(table)
    failed = None
    if kinds is None or errors:
        commit = commit_keys(rb.column("key"), flags(rb.column("isControl")))
        if readable is not None:
            commit &= readable
        failed = np.zeros(rb.num_rows, np.bool_)
        failed[list(errors)] = True
        failed &= commit
        left = ~commit | failed
    else:  # the engine's kinds: the offset commits that decoded
        left = (kinds < PLAIN_COMMIT) | (kinds > TRANSACTIONAL_TOMBSTONE)
    chunk.newer_commits = table.column("isNewerVersion"), left
    others = np.nonzero(left if readable is None else readable & left)[0]
    if not len(others):
        return None
    return _RowsLeft(
        others,
        flags_at(rb.column("isControl"), others),
        flags_at(rb.column("isTransactional"), others),
        _binary_rows(rb.column("key"), others),
        _binary_rows(rb.column("value"), others),
        None if failed is None else failed[others],
    )


def _apply_others(
    rb: pa.RecordBatch,
    left: _RowsLeft,
    positions: npt.NDArray[np.int64],
    view: CompactedView,
    decoder: CoordinatorDecoder,
    chunk: FileChunk,
) -> None:
    """Decode the rows ``left`` of ``rb`` (data records in one call of the decoder, control
    records as :func:`codegen.dumps.decoded.control_record` reads them), count their errors,
    unknown and newer records in ``chunk``, and feed ``view`` those not ``left.failed``, in runs of
    rows with the same producer id and flags: what the view does with a record depends on those
    alone (:meth:`CompactedView.add_records`)."""
    rows, keys, values = left.rows, left.keys, left.values
    controls, transactional, failed = left.controls, left.transactional, left.failed
    timestamps = left.int64s(rb, "timestamp", 0) // 1000  # microseconds
    offsets = left.int64s(rb, "offset", 0)
    any_control = bool(controls.any())
    if any_control:
        records: list[DecodedRecord] = []
        data = ~controls
        decoded = iter(
            _decoded_rows(
                _slices_at(keys, data),
                _slices_at(values, data),
                offsets[data],
                timestamps[data],
                decoder,
            )
        )
        key_column, value_column = rb.column("key"), rb.column("value")
        for i, row in enumerate(rows.tolist()):
            if data[i]:
                records.append(next(decoded))
            else:
                key, value = key_column[row].as_py(), value_column[row].as_py()
                raw = (int(offsets[i]), int(timestamps[i]), key, value)
                records.append(control_record(raw))
    else:
        records = _decoded_rows(keys, values, offsets, timestamps, decoder)
    for i, rec in enumerate(records):
        if rec.kind == ERROR:
            chunk.errors.append((int(positions[rows[i]]), rec))
        elif rec.kind == UNKNOWN:
            chunk.unknown += 1
        if rec.newer_than_spec:
            chunk.newer_records += 1
    producer_ids: list[Any] = [-1]
    starts = [0]
    if any_control or transactional.any():
        producers = rb.column("producerId").take(arrow_array(rows))
        producer_ids = producers.to_pylist()
        # Where the producer id (or whether it is null) or a flag changes: the runs' starts.
        ids = np.asarray(producers.fill_null(0).to_numpy(zero_copy_only=False), np.int64)
        nulls = flags(producers.is_null())
        change = np.zeros(len(rows), np.bool_)
        change[0] = True
        for column in (ids, nulls, transactional, controls):
            change[1:] |= column[1:] != column[:-1]
        starts = np.nonzero(change)[0].tolist()
    # else one run: the view reads no producer id of a plain batch's records
    kept = None if failed is None or not failed.any() else (~failed).tolist()
    for start, stop in zip(starts, [*starts[1:], len(rows)], strict=True):
        run = records[start:stop]
        if kept is not None:
            run = [rec for rec, keep in zip(run, kept[start:stop], strict=True) if keep]
        if run:
            view.add_records(
                run, producer_ids[start], bool(transactional[start]), bool(controls[start])
            )


def _decoded_rows(
    keys: _Slices,
    values: _Slices,
    offsets: npt.NDArray[np.int64],
    timestamps: npt.NDArray[np.int64],
    decoder: CoordinatorDecoder,
) -> list[DecodedRecord]:
    """The data records whose ``keys`` and ``values`` are these slices of the columns' data
    (with their ``offsets`` and ``timestamps`` in milliseconds), decoded where they lie."""
    key_starts, key_sizes, key_valid, key_data = keys
    value_starts, value_sizes, value_valid, value_data = values
    return decoder.decode_slices(
        key_data,
        np.ascontiguousarray(key_starts, np.int64),
        np.where(key_valid, key_sizes, -1).astype(np.int64, copy=False),
        value_data,
        np.ascontiguousarray(value_starts, np.int64),
        np.where(value_valid, value_sizes, -1).astype(np.int64, copy=False),
        np.ascontiguousarray(offsets),
        np.ascontiguousarray(timestamps, np.int64),
    )


def _int64_rows(
    column: pa.Array | pa.ChunkedArray, at: npt.NDArray[np.integer[Any]], null: int
) -> npt.NDArray[np.int64]:
    """Rows ``at`` of a column of 64-bit numbers (int64, timestamps as their int64), ``null``
    where null: read in place when it has no null (a conversion of the whole column, or an
    Arrow take, per chunk cost more than the rest of the chunk's few rows read here)."""
    timestamps = pa.types.is_timestamp(column.type)
    in_place = column.type == pa.int64() or timestamps
    if in_place and isinstance(column, pa.Array) and not column.null_count:
        numbers = np.frombuffer(column.buffers()[1], np.int64, len(column), column.offset * 8)
    else:
        if timestamps:
            column = column.cast(pa.int64())
        numbers = np.asarray(column.fill_null(null).to_numpy(), np.int64)
    rows: npt.NDArray[np.int64] = numbers[at]
    return rows


_Slices: TypeAlias = tuple[
    npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_], npt.NDArray[np.uint8]
]
"""Rows of a binary column: where they start in its data, their sizes, whether they are set,
and the data."""


def _slices_at(slices: _Slices, at: npt.NDArray[np.bool_]) -> _Slices:
    """The rows ``at`` of ``slices``."""
    starts, sizes, valid, data = slices
    return starts[at], sizes[at], valid[at], data


def _binary_rows(column: pa.Array | pa.ChunkedArray, at: npt.NDArray[np.intp]) -> _Slices:
    """Where rows ``at`` of a binary column start in its data, their sizes, whether they are
    set, and the data: read at those rows only (the engine's columns are one binary array)."""
    offsets = None
    if isinstance(column, pa.Array) and column.type == pa.binary():
        validity, offsets, data = column.buffers()
    if offsets is None:
        rows = Rows(column)
        return rows.starts[at], rows.ends[at] - rows.starts[at], rows.valid[at], rows.data
    ends = np.frombuffer(offsets, np.int32, len(column) + 1, column.offset * 4)
    starts = ends[at].astype(np.int64)
    if column.null_count:
        valid = bits_at(validity, column.offset, at).view(np.bool_)
    else:
        valid = np.ones(len(at), np.bool_)
    payload = np.zeros(0, np.uint8) if data is None else np.frombuffer(data, np.uint8)
    return starts, ends[at + 1] - starts, valid, payload


def _distinct_count(values: np.ndarray) -> int:
    """How many distinct values (a file's batch positions come in ascending order)."""
    steps = np.diff(values)
    if (steps >= 0).all():
        return int(len(values) > 0) + int(np.count_nonzero(steps))
    return len(np.unique(values))
