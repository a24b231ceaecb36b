"""The live records of a coordinator topic, from Arrow columns: what log compaction would keep.

A coordinator loads its topic by replaying it: per key (the record's key bytes) the last record
wins and a tombstone deletes the key; a record of a transactional batch takes effect at its
producer's next COMMIT marker and never after an ABORT or without a marker. The records left
are the ones a release must be able to load (``downgrade-check``). Only those few are decoded.

:class:`LiveKeys` reads a log partition's batches: with the native engine in one pass
(``live_keys.h``: a key table, each producer's transactional rows waiting for its marker), else
(the pure backend, and rows out of log order) by :func:`live_rows`, :func:`reduce_live` and
:func:`live`, the reference the tests hold the engine to.

Input: the ``kafka-log`` columns (:data:`codegen.dumps.arrow.RECORD_SCHEMA`) of one log
partition, in log order.
"""

from __future__ import annotations

from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from codegen.dumps.views.compaction import (
    NO_MARKER,
    ReducedChunks,
    apply_offsets,
    arrow_array,
    end_markers,
    flags,
    in_log_order,
    last_per_key,
    last_rows,
)
from codegen.dumps.views.effects import binary_buffers, engine_function, int64_numbers, kinds_of

__all__ = ["LIVE_ROW_SCHEMA", "LiveColumns", "LiveKeys", "live", "live_rows", "reduce_live"]

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


class LiveColumns(NamedTuple):
    """The live records of a log partition, by offset, a column each of what is judged."""

    offsets: npt.NDArray[np.int64]
    versions: npt.NDArray[np.int32]
    """Each value's version: its first two bytes, big-endian; -1 when it has fewer."""
    keys: pa.Array
    """The keys (binary)."""


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


def _kinds(rb: pa.RecordBatch) -> np.ndarray:
    """Each row's kind for the engine (``live_keys.h``), numbered as
    :func:`codegen.dumps.views.effects.kinds_of` numbers them: 0 passed over, 1 a plain record,
    2 a plain tombstone, 3 and 4 the same of a transactional batch, 5 ABORT, 6 COMMIT; the rows
    :func:`live_rows` keeps, as it reads them."""
    readable = flags(rb.column("_error").is_null())
    control = flags(rb.column("isControl"))
    transactional = flags(rb.column("isTransactional"))
    record = readable & ~control & flags(rb.column("key").is_valid())
    tombstone = ~flags(rb.column("value").is_valid())
    marker = np.full(rb.num_rows, NO_MARKER, np.int8)
    ends = np.flatnonzero(readable & control & transactional)  # the few that may be markers
    if len(ends):
        keys = rb.column("key").take(arrow_array(ends))
        every = np.ones(len(ends), np.bool_)
        marker[ends] = end_markers(keys, every, every)[1]
    return kinds_of(record, transactional, tombstone, marker)


class LiveKeys:
    """The live records of one log partition from its batches in log order, in bounded memory:
    by the engine's ``LiveKeys`` when it is built and asked for, else (and when the engine
    meets rows out of log order) by :func:`live_rows`, :func:`reduce_live` and :func:`live`."""

    def __init__(self, reduce_every: int = 1 << 18, native: bool = True) -> None:
        self._rows = ReducedChunks(reduce_live, reduce_every)
        engine = engine_function("LiveKeys") if native else None
        self._engine = None if engine is None else engine()
        self.complete = True
        """False once the engine met rows out of log order: it keeps nothing then, and the
        caller reads the batches again into ``LiveKeys(native=False)``."""

    @property
    def native(self) -> bool:
        """Whether the engine reads the batches."""
        return self._engine is not None

    def add(self, rb: pa.RecordBatch) -> None:
        if self._engine is None:
            self._rows.add(live_rows(rb))
            return
        if not self.complete:
            return
        key, value = binary_buffers(rb.column("key")), binary_buffers(rb.column("value"))
        producers = int64_numbers(rb.column("producerId"), -1)
        offsets = int64_numbers(rb.column("offset"), -1)
        self.complete = self._engine.add(*key, *value, _kinds(rb), producers, offsets)

    def records(self) -> LiveColumns:
        """The live records of what was added, by offset (then a fresh start)."""
        if self._engine is not None:
            if not self.complete:
                raise ValueError("rows out of log order: read them into LiveKeys(native=False)")
            offsets, versions, key_offsets, key_data = self._engine.live()
            self._engine, self.complete = type(self._engine)(), True
            keys = pa.Array.from_buffers(
                pa.binary(),
                len(versions) // 4,
                [None, pa.py_buffer(key_offsets), pa.py_buffer(key_data)],
            )
            offset_column = np.frombuffer(offsets, np.int64)
            return LiveColumns(offset_column, np.frombuffer(versions, np.int32), keys)
        rows = self.table()
        values = rows.column("value").to_pylist()
        versions = [int.from_bytes(v[:2], "big", signed=True) if len(v) > 1 else -1 for v in values]
        return LiveColumns(
            np.asarray(rows.column("recordOffset").to_numpy(), np.int64),
            np.array(versions, np.int32),
            rows.column("key").combine_chunks(),
        )

    def table(self) -> pa.Table:
        """The live records of what was added, as :data:`LIVE_ROW_SCHEMA` rows (then a fresh
        start); by the reference only."""
        rows = self._rows.take()
        return LIVE_ROW_SCHEMA.empty_table() if rows is None else live(rows)
