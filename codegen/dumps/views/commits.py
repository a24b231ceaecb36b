"""The offset commits among ``__consumer_offsets`` rows: which rows they are (by the key's
record type) and their decoding into the topic decoder's columns. Shared by the file reader
(:mod:`codegen.dumps.views.consumer_offsets`) and the rows Spark gives
(:mod:`codegen.dumps.views.records`).
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from codegen.columnar.decode import Rows
from codegen.columnar.package import SHIPPED
from codegen.columnar.schema import DECODE_ERROR
from codegen.columnar.topics import decode_topic_arrays
from codegen.dumps.views.commit_rows import COMMIT_FIELDS, COMMIT_NAMES

__all__ = ["commit_keys", "decode_commits"]

_COMMIT_TYPES: Final = (0, 1)  # the record types of LegacyOffsetCommitKey and OffsetCommitKey


def commit_keys(
    key: pa.Array | pa.ChunkedArray, control: npt.NDArray[np.bool_]
) -> npt.NDArray[np.bool_]:
    """The rows (not control records) whose key has an offset commit's record type."""
    keys = Rows(key)
    record_type, has_type = keys.int16_at(keys.starts, keys.ends)
    return ~control & has_type & np.isin(record_type, _COMMIT_TYPES)


def decode_commits(
    rb: pa.RecordBatch | pa.Table, package: str = SHIPPED
) -> tuple[pa.Table, dict[int, str]]:
    """``__consumer_offsets`` rows with their offset commits decoded (the topic decoder's
    columns, and ``_decode_error``), and the decode errors by row."""
    decoded = decode_topic_arrays(
        "consumer_offsets",
        rb.column("key"),
        rb.column("value"),
        rb.column("isControl"),
        names=COMMIT_NAMES,
        package=package,
        fields=COMMIT_FIELDS,
    )
    table = rb if isinstance(rb, pa.Table) else pa.Table.from_batches([rb])
    for name, column in decoded.columns.items():
        table = table.append_column(name, column)
    n = rb.num_rows
    reasons = pa.nulls(n, pa.string())
    if decoded.errors:
        text: list[str | None] = [None] * n
        for row, reason in decoded.errors.items():
            text[row] = reason
        reasons = pa.array(text, pa.string())
    return table.append_column(DECODE_ERROR, reasons), decoded.errors
