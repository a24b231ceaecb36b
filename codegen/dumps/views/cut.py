"""The cut of ``--as-of``: which log batches a moment in the past keeps.

One rule, on the fields of a batch's header (its base offset and its newest timestamp, the
``maxTimestamp`` Kafka's time index uses), for every reader: the command line's record
columns and batch headers, and Spark's rows. A batch is kept or left out whole. Stretches of a
file that could not be read are kept (reported): where they lie in time is unknown.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from codegen.dumps.model import BatchHeader, SegmentError
from codegen.dumps.segments import SegmentReader
from codegen.dumps.storage import StoragePath

__all__ = ["AsOf", "kept_batches", "kept_positions", "newest_batch_time"]


@dataclass(frozen=True, slots=True)
class AsOf:
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
    path: StoragePath, as_of: AsOf, items: Iterable[BatchHeader | SegmentError] | None = None
) -> npt.NDArray[np.int64]:
    """The byte positions of the batches of ``path`` the cut keeps, ascending (from its batch
    headers, read here unless ``items`` gives them)."""
    headers = [
        h
        for h in (SegmentReader(path).batch_headers() if items is None else items)
        if isinstance(h, BatchHeader)
    ]
    positions = np.fromiter((h.position for h in headers), np.int64, len(headers))
    base = np.fromiter((h.base_offset for h in headers), np.int64, len(headers))
    newest = np.fromiter((h.max_timestamp for h in headers), np.int64, len(headers))
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
