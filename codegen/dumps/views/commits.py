"""The offset commits among ``__consumer_offsets`` rows: which rows they are (by the key's
record type) and their decoding into the topic decoder's columns: by the native engine in one
pass (:mod:`codegen.dumps.views.commit_columns`) where it can, else by the topic decoder (the
reference). Shared by the file reader (:mod:`codegen.dumps.views.consumer_offsets`) and the rows
Spark gives (:func:`spark_udfs.group_views.replay_rows`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from codegen.columnar.decode import Rows
from codegen.columnar.package import SHIPPED
from codegen.columnar.schema import DECODE_ERROR
from codegen.columnar.topics import TopicDecoded, decode_topic_arrays
from codegen.dumps.views.commit_columns import (
    native_commit_columns,
    native_commit_flags,
)
from codegen.dumps.views.commit_rows import COMMIT_FIELDS, COMMIT_NAMES

__all__ = [
    "CHUNK_ROWS",
    "commit_keys",
    "decode_commit_flags",
    "decode_commits",
    "decode_commits_reference",
]

CHUNK_ROWS = 32768
"""Rows of a ``__consumer_offsets`` file read at a time (one Arrow batch of the engine's
columnar loop) by the views and ``lag``: the answers do not depend on it (the fuzz tests read
with a few). Read as ``commits.CHUNK_ROWS`` where it is used, so that a test may set it."""

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
    key, value, control = rb.column("key"), rb.column("value"), rb.column("isControl")
    decoded = native_commit_columns(key, value, control, package)
    if decoded is None:
        decoded = decode_commits_reference(key, value, control, package)
    return _with_columns(rb, decoded)


def decode_commit_flags(
    rb: pa.RecordBatch | pa.Table, package: str = SHIPPED
) -> tuple[pa.Table, dict[int, str]]:
    """:func:`decode_commits` with, of the decoded columns, ``isTombstone`` and
    ``isNewerVersion`` alone (and ``_decode_error``): every commit checked, nothing else written
    (the bench's ``floor (commit flags)``; the views' engine pass checks the commits itself,
    ``CommitEffects.add_checked``); :func:`decode_commits` where the engine does not decode
    them."""
    return _decoded_in_part(rb, package, native_commit_flags)


def _decoded_in_part(
    rb: pa.RecordBatch | pa.Table,
    package: str,
    native: Callable[..., TopicDecoded | None],
) -> tuple[pa.Table, dict[int, str]]:
    """``rb`` with the columns ``native`` (one of the engine's reduced decodes) gives of its
    commits; :func:`decode_commits` where the engine does not decode them."""
    decoded = native(rb.column("key"), rb.column("value"), rb.column("isControl"), package)
    if decoded is None:
        return decode_commits(rb, package)
    return _with_columns(rb, decoded)


def _with_columns(
    rb: pa.RecordBatch | pa.Table, decoded: TopicDecoded
) -> tuple[pa.Table, dict[int, str]]:
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


def decode_commits_reference(
    key: pa.Array | pa.ChunkedArray,
    value: pa.Array | pa.ChunkedArray,
    control: pa.Array | pa.ChunkedArray,
    package: str = SHIPPED,
) -> TopicDecoded:
    """The commit columns of ``decode_commits`` as the topic decoder gives them: the reference
    the native pass is held to."""
    return decode_topic_arrays(
        "consumer_offsets",
        key,
        value,
        control,
        names=COMMIT_NAMES,
        package=package,
        fields=COMMIT_FIELDS,
    )
