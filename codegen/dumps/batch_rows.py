"""Log batches as Arrow rows: one row per entry of a segment, its header's fields, read without
the records of data batches (:meth:`~codegen.dumps.segments.SegmentReader.batch_headers`, the
native header pass where it is built).

The rows the views of a partition's log are computed from (its log end over time, the cut of
``--as-of``, its transactions: :mod:`codegen.dumps.views.log_ends`,
:mod:`codegen.dumps.views.transactions`), by the command line from the files and by Spark from
the ``kafka-log`` source's ``rows=batches``. A stretch that could not be read is one row with
``_error`` set (``kind: reason``), its position and, when known, its base offset.

:func:`batch_rows` takes the runs of headers the native header pass reads as columns
(:class:`~codegen.dumps.model.HeaderColumns`) as they are, with no object per batch;
:func:`batch_table` makes the rows of header objects, the reference they are compared with.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Final

import numpy as np
import pyarrow as pa

from codegen.dumps.arrow import read_range
from codegen.dumps.model import BatchHeader, HeaderColumns, SegmentError
from codegen.dumps.segments import SegmentReader
from codegen.dumps.storage import RemotePath

__all__ = ["BATCH_SCHEMA", "CONTROL_TYPE", "batch_rows", "batch_table", "header_rows"]

CONTROL_TYPE: Final = pa.struct([pa.field("offset", pa.int64()), pa.field("type", pa.int16())])
BATCH_SCHEMA: Final = pa.schema(
    [
        pa.field("batchPosition", pa.int64()),
        pa.field("size", pa.int64()),
        pa.field("magic", pa.int8()),
        pa.field("baseOffset", pa.int64()),
        pa.field("lastOffset", pa.int64()),
        pa.field("maxTimestamp", pa.int64()),
        pa.field("producerId", pa.int64()),
        pa.field("producerEpoch", pa.int16()),
        pa.field("isTransactional", pa.bool_()),
        pa.field("isControl", pa.bool_()),
        pa.field("recordCount", pa.int32()),
        pa.field("controls", pa.list_(CONTROL_TYPE)),
        pa.field("_error", pa.string()),
    ]
)
"""One row per log entry: where it starts in its file and its size, its header's fields
(``maxTimestamp`` in epoch ms, as the header holds it), and for a control batch its control
records (offset, type: 0 ABORT, 1 COMMIT, ...). Header fields are null on an ``_error`` row,
but for ``baseOffset`` where the entry's offset could be read."""


def batch_table(items: Iterable[BatchHeader | SegmentError], position: int = 0) -> pa.Table:
    """The rows of :data:`BATCH_SCHEMA` of headers and errors (in file order); ``position`` is
    added to their positions (the start of the byte range they were read from)."""
    columns: dict[str, list[object]] = {name: [] for name in BATCH_SCHEMA.names}
    for item in items:
        if isinstance(item, SegmentError):
            row: tuple[object, ...] = (
                item.position + position,
                item.size,
                None,
                item.base_offset,
                *([None] * 8),
                f"{item.kind}: {item.reason}",
            )
        else:
            row = (
                item.position + position,
                item.size,
                item.magic,
                item.base_offset,
                item.last_offset,
                item.max_timestamp,
                item.producer_id,
                item.producer_epoch,
                item.is_transactional,
                item.is_control,
                item.record_count,
                [{"offset": o, "type": t} for o, t in item.controls] if item.is_control else None,
                None,
            )
        for values, value in zip(columns.values(), row, strict=True):
            values.append(value)
    return pa.table(columns, schema=BATCH_SCHEMA)


def header_rows(
    items: Iterable[HeaderColumns | BatchHeader | SegmentError], position: int = 0
) -> pa.Table:
    """The rows of :data:`BATCH_SCHEMA` of runs of header columns, headers and errors (in file
    order, as :meth:`~codegen.dumps.segments.SegmentReader.batch_header_columns` gives them);
    ``position`` is added to their positions."""
    tables: list[pa.Table] = []
    pending: list[BatchHeader | SegmentError] = []
    for item in items:
        if isinstance(item, HeaderColumns):
            if pending:
                tables.append(batch_table(pending, position))
                pending = []
            tables.append(pa.Table.from_batches([_columns_batch(item, position)]))
        else:
            pending.append(item)
    if pending or not tables:
        tables.append(batch_table(pending, position))
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def _columns_batch(run: HeaderColumns, position: int) -> pa.RecordBatch:
    """The rows of one run of header columns (v2 batches: none is an error)."""

    def column(data: bytes, dtype: type[np.generic]) -> np.ndarray:
        return np.frombuffer(data, dtype)

    attributes = column(run.attributes, np.int16)
    control = (attributes & 0x20) != 0
    n = len(attributes)
    entries = pa.StructArray.from_arrays(
        [
            pa.array(column(run.control_offset, np.int64)),
            pa.array(column(run.control_type, np.int16)),
        ],
        fields=list(CONTROL_TYPE),
    )
    controls = pa.ListArray.from_arrays(
        pa.array(column(run.control_bounds, np.int32)),
        entries,
        type=BATCH_SCHEMA.field("controls").type,
        mask=pa.array(~control),
    )
    positions = column(run.position, np.int64)
    return pa.RecordBatch.from_arrays(
        [
            pa.array(positions + position if position else positions),
            pa.array(column(run.size, np.int64)),
            pa.array(np.full(n, 2, np.int8)),
            pa.array(column(run.base_offset, np.int64)),
            pa.array(column(run.last_offset, np.int64)),
            pa.array(column(run.max_timestamp, np.int64)),
            pa.array(column(run.producer_id, np.int64)),
            pa.array(column(run.producer_epoch, np.int16)),
            pa.array((attributes & 0x10) != 0),
            pa.array(control),
            pa.array(column(run.record_count, np.int32)),
            controls,
            pa.nulls(n, pa.string()),
        ],
        schema=BATCH_SCHEMA,
    )


def batch_rows(
    source: str | os.PathLike[str] | RemotePath | bytes,
    *,
    start: int = 0,
    end: int | None = None,
    verify_crc: bool = True,
) -> pa.Table:
    """The batch rows of a segment file, or of its bytes ``[start, end)`` (from an entry
    boundary: positions are the file's)."""
    if start or end is not None:
        data = read_range(source, start, end)
        name = None if isinstance(source, bytes) else str(source)
        return header_rows(
            SegmentReader(data, name=name, verify_crc=verify_crc).batch_header_columns(), start
        )
    return header_rows(SegmentReader(source, verify_crc=verify_crc).batch_header_columns())
