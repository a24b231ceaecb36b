"""``kafka-log``'s input partitions: files cut at entry boundaries into slices (on disk by the
entries' headers, in object storage at the offset index's batch positions), packed as Spark packs
its file sources' files, and each slice read into raw Arrow rows with its topic, partition and
file."""

from __future__ import annotations

import itertools
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from codegen.dumps import storage
from codegen.dumps.arrow import RECORD_SCHEMA, record_batches
from codegen.dumps.storage import RemotePath, StoragePath
from spark_udfs.pushdown import (
    Pushed,
    index_positions,
)

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "DEFAULT_OPEN_COST",
    "DEFAULT_SPLIT",
    "RAW_SCHEMA",
    "LogSlice",
    "LogSlices",
    "cores",
    "pack_slices",
    "plan_slices",
    "read_slice",
    "with_slice_columns",
]

_ENTRY = struct.Struct(">qi")
DEFAULT_SPLIT = 128 * 1024 * 1024
DEFAULT_OPEN_COST = 4 * 1024 * 1024
DEFAULT_BATCH_ROWS = 65536

# The record columns of codegen.dumps.arrow, with where each record came from.
_BEFORE_POSITION = RECORD_SCHEMA.get_field_index("batchPosition")
RAW_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        *list(RECORD_SCHEMA)[:_BEFORE_POSITION],
        pa.field("file", pa.string()),
        *list(RECORD_SCHEMA)[_BEFORE_POSITION:],
    ]
)


@dataclass(frozen=True, slots=True)
class LogSlice:
    """``[start, end)`` of a file, starting on an entry boundary."""

    path: str
    start: int
    end: int
    topic: str | None
    partition: int | None
    below: int | None = None
    """A remote segment's rows are read below this offset: the next segment (or the local
    log) holds the offsets from it."""


@dataclass(frozen=True, slots=True)
class LogSlices(InputPartition):
    """One input partition: slices of one or more files, read in turn, and the filters of the
    scan it was planned for (what the reader applies to it: never another scan's)."""

    slices: tuple[LogSlice, ...]
    pushed: Pushed = field(default_factory=Pushed)


def plan_slices(
    path: StoragePath, max_bytes: int, topic: str | None, part: int | None, size: int | None = None
) -> list[LogSlice]:
    """Split a file (of ``size`` bytes, when known) at entry boundaries into slices of about
    ``max_bytes``: on disk by walking the entries' 12-byte headers; in object storage at the
    batch positions of the segment's offset index (a request for the index, not one per
    entry), each cut checked to start a batch (one ranged read of its header)."""
    if size is None:
        size = path.stat().st_size
    if size <= max_bytes:
        return [LogSlice(str(path), 0, size, topic, part)]
    cuts = _index_cuts(path, max_bytes, size) if isinstance(path, RemotePath) else None
    if cuts is None and isinstance(path, RemotePath):
        cuts = []  # no index to cut at: the file is one slice
    if cuts is None:
        cuts = _entry_cuts(path, max_bytes, size)
    bounds = [0, *cuts, size]
    return [LogSlice(str(path), a, b, topic, part) for a, b in itertools.pairwise(bounds) if b > a]


def _entry_cuts(path: StoragePath, max_bytes: int, size: int) -> list[int]:
    """Entry boundaries about ``max_bytes`` apart, from the headers of a local file."""
    cuts: list[int] = []
    start = pos = 0
    with path.open("rb") as fh:
        while pos + 12 <= size:
            fh.seek(pos)
            head = fh.read(12)
            _, length = _ENTRY.unpack(head)
            if length < 14 or pos + 12 + length > size:
                break  # the rest is read (and reported) by the last slice
            pos += 12 + length
            if pos - start >= max_bytes:
                cuts.append(pos)
                start = pos
    return [c for c in cuts if c < size]


def _index_cuts(path: RemotePath, max_bytes: int, size: int) -> list[int] | None:
    """Batch positions about ``max_bytes`` apart from the offset index beside a segment,
    each checked to hold a v2 batch header; None when there is no usable index."""
    positions = index_positions(path)
    if positions is None:
        return None
    cuts: list[int] = []
    start = 0
    for pos in positions:
        if pos - start >= max_bytes and pos < size:
            head = storage.read_range(path, pos, pos + 17)
            if len(head) < 17 or head[16] != 2 or _ENTRY.unpack_from(head)[1] < 49:
                return None  # the index does not point at batches: not ours to cut by
            cuts.append(pos)
            start = pos
    return cuts


def cores() -> int:
    """The cores this process may run on (the default ``minPartitions``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def pack_slices(
    files: list[tuple[StoragePath, str | None, int | None]],
    *,
    max_bytes: int = DEFAULT_SPLIT,
    open_cost: int = DEFAULT_OPEN_COST,
    min_partitions: int = 1,
) -> list[LogSlices]:
    """Input partitions for ``files`` ((path, topic, partition) in reading order), as Spark packs
    the files of its file sources: a partition holds at most ``split`` bytes, where ``split`` is
    ``max_bytes``, or less to spread the read over ``min_partitions`` (but not below
    ``open_cost``); larger files are cut at entry boundaries; each file or cut counts
    ``open_cost`` bytes more than its size. Partitions take the slices in order, so rows keep
    the files' order."""
    if max_bytes <= 0 or open_cost < 0 or min_partitions <= 0:
        raise ValueError(
            "kafka-log: maxBytesPerPartition and minPartitions must be positive and "
            f"openCostInBytes not negative (got {max_bytes}, {min_partitions}, {open_cost})"
        )
    sizes = [path.stat().st_size for path, _, _ in files]
    total = sum(size + open_cost for size in sizes)
    split = min(max_bytes, max(open_cost, total // min_partitions, 1))
    partitions: list[LogSlices] = []
    current: list[LogSlice] = []
    used = 0
    for (path, topic, part), size in zip(files, sizes, strict=True):
        for sl in plan_slices(path, split, topic, part, size):
            length = sl.end - sl.start
            if current and used + length > split:
                partitions.append(LogSlices(tuple(current)))
                current, used = [], 0
            current.append(sl)
            used += length + open_cost
    if current:
        partitions.append(LogSlices(tuple(current)))
    return partitions


def read_slice(
    sl: LogSlice,
    *,
    with_headers: bool = True,
    verify_crc: bool = True,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    native: bool | None = None,
    schema: pa.Schema = RAW_SCHEMA,
    data: bytes | None = None,
    at: int = 0,
) -> Iterator[pa.RecordBatch]:
    """Raw rows of one slice as Arrow record batches (``schema``: ``RAW_SCHEMA`` or some of its
    columns), from :func:`codegen.dumps.arrow.record_batches` (the native columnar loop when it
    is built and the backend is not ``pure``; ``native`` forces one loop) with the slice's
    topic, partition and file added. ``data``: the slice's bytes at ``at`` of its file, read
    already (else the slice's range is read from a local path)."""
    for rb in record_batches(
        sl.path if data is None else data,
        start=sl.start if data is None else 0,
        end=sl.end if data is None else None,
        position=None if data is None else at,
        name=sl.path,
        headers=with_headers,
        verify_crc=verify_crc,
        batch_rows=batch_rows,
        native=native,
    ):
        yield with_slice_columns(rb, sl, schema)


def _slice_column(name: str, sl: LogSlice, n: int) -> pa.Array:
    """The column ``name`` (``topic``, ``partition`` or ``file``) of ``n`` rows of ``sl``."""
    if name == "partition":
        return pa.array(
            np.full(n, sl.partition if sl.partition is not None else 0, np.int32),
            mask=np.full(n, sl.partition is None),
        )
    return pa.repeat(pa.scalar(sl.topic if name == "topic" else sl.path, pa.string()), n)


def with_slice_columns(rb: pa.RecordBatch, sl: LogSlice, schema: pa.Schema) -> pa.RecordBatch:
    n, have = rb.num_rows, set(rb.schema.names)
    arrays = [rb.column(f.name) if f.name in have else _slice_column(f.name, sl, n) for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
