"""Log batches as Arrow rows: one row per entry of a segment, its header's fields, read without
the records of data batches (:meth:`~codegen.dumps.segments.SegmentReader.batch_headers`, the
native header pass where it is built).

The rows the views of a partition's log are computed from (its log end over time, the cut of
``--as-of``, its transactions: :mod:`codegen.dumps.views.log_ends`,
:mod:`codegen.dumps.views.transactions`), by the command line from the files and by Spark from
the ``kafka-log`` source's ``rows=batches``. A stretch that could not be read is one row with
``_error`` set (``kind: reason``), its position and, when known, its base offset.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Final

import pyarrow as pa

from codegen.dumps.arrow import read_range
from codegen.dumps.model import BatchHeader, SegmentError
from codegen.dumps.segments import SegmentReader
from codegen.dumps.storage import RemotePath

__all__ = ["BATCH_SCHEMA", "CONTROL_TYPE", "batch_rows", "batch_table"]

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
        return batch_table(
            SegmentReader(data, name=name, verify_crc=verify_crc).batch_headers(), start
        )
    return batch_table(SegmentReader(source, verify_crc=verify_crc).batch_headers())
