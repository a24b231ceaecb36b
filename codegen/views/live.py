"""The live records of a coordinator topic, from Arrow columns: what log compaction would keep.

A coordinator loads its topic by replaying it: per key (the record's key bytes) the last record
wins and a tombstone deletes the key; a record of a transactional batch takes effect at its
producer's next COMMIT marker and never after an ABORT or without a marker. The records left
are the ones a release must be able to load (``downgrade-check``). Only those few are decoded.

Input: the ``kafka-log`` columns (:data:`codegen.dumps.arrow.RECORD_SCHEMA`) of one log
partition, in log order.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from codegen.columnar.decode import Rows
from codegen.views.compaction import (
    NO_MARKER,
    ReducedChunks,
    apply_offsets,
    in_log_order,
    last_per_key,
    last_rows,
)

__all__ = ["LIVE_ROW_SCHEMA", "LiveKeys", "live", "live_rows", "reduce_live"]

LIVE_ROW_SCHEMA: Final = pa.schema(
    [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("recordOffset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("producerId", pa.int64()),
        pa.field("isTransactional", pa.bool_()),
        pa.field("marker", pa.int8()),
    ]
)
"""A record with a key (``marker`` -1), or an end-transaction marker (0 ABORT, 1 COMMIT)."""


def live_rows(rb: pa.RecordBatch) -> pa.Table:
    """The keyed records and end-transaction markers of ``kafka-log`` rows, narrowed."""
    readable = _flags(rb.column("_error").is_null())
    control = _flags(rb.column("isControl"))
    transactional = _flags(rb.column("isTransactional"))
    # An end-transaction marker's key: int16 version, int16 type (0 ABORT, 1 COMMIT).
    keys = Rows(rb.column("key"))
    marker_type, typed = keys.int16_at(keys.starts + 2, keys.ends)
    is_marker = control & transactional & typed & ((marker_type == 0) | (marker_type == 1))
    keep = readable & ((~control & keys.valid) | is_marker)
    rows = pa.table(
        {
            "key": rb.column("key"),
            "value": rb.column("value"),
            "recordOffset": rb.column("offset"),
            "timestamp": rb.column("timestamp"),
            "producerId": rb.column("producerId"),
            "isTransactional": pa.array(transactional),
            "marker": pa.array(np.where(is_marker, marker_type, NO_MARKER).astype(np.int8)),
        },
        schema=LIVE_ROW_SCHEMA,
    )
    return rows if keep.all() else rows.filter(pa.array(keep))


def _flags(column: pa.Array | pa.ChunkedArray) -> npt.NDArray[np.bool_]:
    """A boolean column as numpy, null as False."""
    return np.asarray(column.fill_null(False).to_numpy(zero_copy_only=False), np.bool_)


def reduce_live(rows: pa.Table) -> pa.Table:
    """Per key, only the newest plain record; transactional records and markers are kept.
    The rows must be of one log partition, in log order."""
    if rows.num_rows == 0:
        return rows
    if not in_log_order(rows):
        rows = rows.sort_by("recordOffset")
    marker = rows.column("marker").to_numpy()
    plain = ~_flags(rows.column("isTransactional")) & (marker == NO_MARKER)
    keep = ~plain
    keep[last_rows(rows, ["key"], plain)] = True
    return rows if keep.all() else rows.filter(pa.array(keep))


def live(rows: pa.Table) -> pa.Table:
    """The live records (:data:`LIVE_ROW_SCHEMA` rows) of one log partition, by offset."""
    if rows.num_rows == 0:
        return rows
    effective = apply_offsets(rows.sort_by("recordOffset"))
    ordered = effective.sort_by([("applyOffset", "ascending"), ("recordOffset", "ascending")])
    last = last_per_key(ordered, ["key"])
    kept = last.filter(last.column("value").is_valid())
    return kept.select(LIVE_ROW_SCHEMA.names).sort_by("recordOffset")


class LiveKeys:
    """:func:`live_rows`, :func:`reduce_live` and :func:`live` over the batches of one log
    partition in log order, in bounded memory."""

    def __init__(self, reduce_every: int = 1 << 18) -> None:
        self._rows = ReducedChunks(reduce_live, reduce_every)

    def add(self, rb: pa.RecordBatch) -> None:
        self._rows.add(live_rows(rb))

    def table(self) -> pa.Table:
        """The live records of what was added (then a fresh start)."""
        rows = self._rows.take()
        return LIVE_ROW_SCHEMA.empty_table() if rows is None else live(rows)
