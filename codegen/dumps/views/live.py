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

import pyarrow as pa

from codegen.dumps.views.compaction import (
    NO_MARKER,
    ReducedChunks,
    apply_offsets,
    end_markers,
    flags,
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
    readable = flags(rb.column("_error").is_null())
    control = flags(rb.column("isControl"))
    transactional = flags(rb.column("isTransactional"))
    is_marker, marker = end_markers(rb.column("key"), control, transactional)
    keep = readable & ((~control & flags(rb.column("key").is_valid())) | is_marker)
    rows = pa.table(
        {
            "key": rb.column("key"),
            "value": rb.column("value"),
            "recordOffset": rb.column("offset"),
            "timestamp": rb.column("timestamp"),
            "producerId": rb.column("producerId"),
            "isTransactional": pa.array(transactional),
            "marker": pa.array(marker),
        },
        schema=LIVE_ROW_SCHEMA,
    )
    return rows if keep.all() else rows.filter(pa.array(keep))


def reduce_live(rows: pa.Table) -> pa.Table:
    """Per key, only the newest plain record; transactional records and markers are kept.
    The rows must be of one log partition, in log order."""
    if rows.num_rows == 0:
        return rows
    if not in_log_order(rows):
        rows = rows.sort_by("recordOffset")
    marker = rows.column("marker").to_numpy()
    plain = ~flags(rows.column("isTransactional")) & (marker == NO_MARKER)
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
