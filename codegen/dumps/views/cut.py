"""The cut of ``--as-of``: which log batches a moment in the past keeps.

One rule, on the fields of a batch's header (its base offset and its newest timestamp, the
``maxTimestamp`` Kafka's time index uses), for every reader: the command line's record
columns and batch headers, and Spark's rows. A batch is kept or left out whole. Stretches of a
file that could not be read are kept (reported): where they lie in time is unknown.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from codegen.dumps.batch_rows import batch_rows
from codegen.dumps.storage import StoragePath
from codegen.slotted import FrozenSlotted

__all__ = ["AsOf", "batches_kept", "kept_batches", "kept_positions", "newest_batch_time"]


class AsOf(FrozenSlotted):
    """Up to and including a log offset (a batch whose base offset is at most it), and/or a
    time (a batch whose newest timestamp, in epoch ms, is at most it)."""

    offset: int | None = None
    timestamp_ms: int | None = None

    def excludes(self, base_offset: int, max_timestamp: int) -> bool:
        """Whether the batch with this header is past the cut."""
        if self.offset is not None and base_offset > self.offset:
            return True
        return self.timestamp_ms is not None and max_timestamp > self.timestamp_ms

    def keeps(
        self, base_offsets: npt.NDArray[np.int64], max_timestamps: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.bool_]:
        """:meth:`excludes` negated, for arrays of headers at once."""
        keep = np.ones(len(base_offsets), np.bool_)
        if self.offset is not None:
            keep &= base_offsets <= self.offset
        if self.timestamp_ms is not None:
            keep &= max_timestamps <= self.timestamp_ms
        return keep


def kept_positions(
    path: StoragePath, as_of: AsOf, rows: pa.Table | None = None
) -> npt.NDArray[np.int64]:
    """The byte positions of the batches of ``path`` the cut keeps, ascending (from its batch
    rows, :func:`codegen.dumps.batch_rows.batch_rows`, read here unless ``rows`` gives them)."""
    rows = batch_rows(path) if rows is None else rows
    rows = rows.filter(rows.column("_error").is_null())
    positions = np.asarray(rows.column("batchPosition").to_numpy(), np.int64)
    base = np.asarray(rows.column("baseOffset").to_numpy(), np.int64)
    newest = np.asarray(rows.column("maxTimestamp").to_numpy(), np.int64)
    return positions[as_of.keeps(base, newest)]


def kept_batches(batches: pa.RecordBatch, as_of: AsOf) -> pa.RecordBatch:
    """The batch rows (:data:`codegen.dumps.batch_rows.BATCH_SCHEMA` columns) the cut keeps,
    and those that could not be read."""
    base = np.asarray(batches.column("baseOffset").fill_null(0).to_numpy(), np.int64)
    newest = np.asarray(batches.column("maxTimestamp").fill_null(0).to_numpy(), np.int64)
    broken = np.asarray(batches.column("_error").is_valid().to_numpy(zero_copy_only=False))
    return batches.filter(pa.array(as_of.keeps(base, newest) | broken))


def newest_batch_time(batches: pa.Table | pa.RecordBatch) -> int:
    """The newest timestamp of the readable batches with records among batch rows
    (:data:`codegen.dumps.batch_rows.BATCH_SCHEMA`'s ``maxTimestamp, recordCount, _error``: their
    headers, not their records), -1 without one: the moment of an offset cut (of the batches it
    keeps), and of ``__consumer_offsets`` in the lag's *now*. Of parts of the rows, the newest
    of their times is the whole's."""
    if not batches.num_rows:
        return -1
    counted = np.asarray(batches.column("recordCount").fill_null(0).to_numpy(), np.int64) > 0
    readable = np.asarray(batches.column("_error").is_null().to_numpy(zero_copy_only=False))
    times = np.asarray(batches.column("maxTimestamp").fill_null(-1).to_numpy(), np.int64)
    kept = times[counted & readable]
    return int(kept.max()) if len(kept) else -1


def batches_kept(rb: pa.RecordBatch, positions: np.ndarray) -> np.ndarray:
    """The rows of the log batches at ``positions`` (ascending; :func:`kept_positions`), and
    the rows that could not be read (reported, never cut)."""
    at = rb.column("batchPosition").to_numpy(zero_copy_only=False)
    keep = np.isin(at, positions, assume_unique=False)
    keep |= ~np.asarray(rb.column("_error").is_null().to_numpy(zero_copy_only=False), np.bool_)
    return keep
