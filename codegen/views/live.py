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
import pyarrow.compute as pc

from codegen.views.compaction import (
    NO_MARKER,
    ReducedChunks,
    apply_offsets,
    in_log_order,
    last_per_key,
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
    table = pa.Table.from_batches([rb])
    readable = rb.column("_error").is_null()
    control = rb.column("isControl").fill_null(False)
    control_type = pc.binary_slice(rb.column("key"), 2, 4)
    commit = pc.equal(control_type, pa.scalar(b"\x00\x01", pa.binary())).fill_null(False)
    abort = pc.equal(control_type, pa.scalar(b"\x00\x00", pa.binary())).fill_null(False)
    is_marker = pc.and_(
        pc.and_(control, rb.column("isTransactional").fill_null(False)), pc.or_(commit, abort)
    )
    keyed = pc.and_(pc.invert(control), rb.column("key").is_valid())
    keep = pc.and_(readable, pc.or_(keyed, is_marker))
    marker = pc.if_else(
        is_marker,
        pc.if_else(commit, pa.scalar(1, pa.int8()), pa.scalar(0, pa.int8())),
        pa.scalar(NO_MARKER, pa.int8()),
    )
    rows = pa.table(
        {
            "key": table.column("key"),
            "value": table.column("value"),
            "recordOffset": table.column("offset"),
            "timestamp": table.column("timestamp"),
            "producerId": table.column("producerId"),
            "isTransactional": table.column("isTransactional").fill_null(False),
            "marker": marker,
        },
        schema=LIVE_ROW_SCHEMA,
    )
    return rows.filter(keep)


def reduce_live(rows: pa.Table) -> pa.Table:
    """Per key, only the newest plain record; transactional records and markers are kept.
    The rows must be of one log partition, in log order."""
    if rows.num_rows == 0:
        return rows
    if not in_log_order(rows):
        rows = rows.sort_by("recordOffset")
    plain = pc.and_(
        pc.invert(rows.column("isTransactional")), pc.equal(rows.column("marker"), NO_MARKER)
    )
    newest = last_per_key(rows.filter(plain), ["key"])
    others = rows.filter(pc.invert(plain))
    if not others.num_rows:
        return newest
    return pa.concat_tables([newest, others]).sort_by("recordOffset")


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
