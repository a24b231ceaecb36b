"""Log segments as Arrow record batches: one row per record, for Spark and bulk readers.

:func:`record_batches` reads a segment or snapshot (or a byte range of one, starting on an entry
boundary) and yields ``pyarrow.RecordBatch``es of :data:`RECORD_SCHEMA`: the records of many
log batches per Arrow batch, the batch-level fields repeated on every record, and one row per
stretch that could not be read (``_error`` = ``kind: reason``, its base offset when known).

Two loops give the same batches:

- the native columnar loop (``ColumnBuilder`` in ``codegen/native/records.c``) parses the
  records of v2 batches straight into Arrow buffers, with the reference's framing, header,
  CRC-32C and control-record checks; a compressed batch's records come from the reference's
  own decompress function, called from the loop. A batch that does not decompress or whose
  records do not parse, a control batch the checks refuse (or a compressed one) and a legacy
  entry are read by the reference (``decode_entry``), so errors are the reference's;
- the pure loop (the reference, and the fallback when the native modules are not built or
  ``SPECGEN_BACKEND=pure``) builds the columns from :class:`~codegen.dumps.SegmentReader`'s
  records.

pyarrow and numpy come with the ``dumps`` extra.
"""

from __future__ import annotations

import importlib
import mmap
import os
from collections.abc import Iterator
from contextlib import ExitStack
from types import ModuleType
from typing import Any, Final

from codegen.extras import missing_extra

try:
    import numpy as np
    import pyarrow as pa
except ModuleNotFoundError as exc:
    raise missing_extra("reading log segments as Arrow batches", "dumps", exc) from None

from codegen.dumps import storage
from codegen.dumps.batches import DEFAULT_MAX_BATCH_RECORDS, decode_entry, decode_entry_raw
from codegen.dumps.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, decompress
from codegen.dumps.model import RecordBatch, SegmentError, increment_sequence
from codegen.dumps.segments import SegmentReader, frame_at
from codegen.dumps.storage import RemotePath
from codegen.runtime import backends

__all__ = [
    "HEADER_TYPE",
    "RECORD_SCHEMA",
    "native_columns_enabled",
    "read_range",
    "record_batches",
]

HEADER_TYPE: Final = pa.list_(
    pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
)
RECORD_SCHEMA: Final = pa.schema(
    [
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("headers", HEADER_TYPE),
        pa.field("producerId", pa.int64()),
        pa.field("producerEpoch", pa.int16()),
        pa.field("sequence", pa.int32()),
        pa.field("isTransactional", pa.bool_()),
        pa.field("isControl", pa.bool_()),
        pa.field("batchPosition", pa.int64()),
        pa.field("_error", pa.string()),
    ]
)
"""The columns of :func:`record_batches` (the ``kafka-log`` data source adds ``topic``,
``partition`` and ``file``). ``headers`` is null when headers are not read; ``sequence`` is
null when the batch has no producer sequence; ``batchPosition`` is the byte position of the
record's log entry in the file."""

_FLUSH_BYTES: Final = 1 << 30
"""The native loop starts a new Arrow batch past this much key, value and header data, so the
int32 offsets of the binary columns cannot overflow."""


def _native_module() -> ModuleType | None:
    try:
        module = importlib.import_module("codegen.native._records")
    except ImportError:
        return None
    return module if hasattr(module, "ColumnBuilder") else None


def native_columns_enabled() -> bool:
    """Whether :func:`record_batches` runs the native columnar loop by default: it is built
    (``python -m codegen.native.build``) and the backend asked for is not ``pure``."""
    return backends.requested() != backends.PURE and _native_module() is not None


Source = str | os.PathLike[str] | RemotePath | bytes | mmap.mmap
"""What :func:`record_batches` reads: a file, or bytes, or a map of a file."""


def read_range(source: Source, start: int = 0, end: int | None = None) -> bytes:
    """The bytes ``[start, end)`` of a file (local or remote: one ranged read) or of bytes or
    a map (``end`` None: to the end)."""
    if isinstance(source, bytes | mmap.mmap):
        return source[start:end]
    return storage.read_range(storage.path(source), start, end)


def record_batches(
    source: Source,
    *,
    start: int = 0,
    end: int | None = None,
    name: str | None = None,
    headers: bool = True,
    verify_crc: bool = True,
    batch_rows: int = 10000,
    max_batch_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS,
    native: bool | None = None,
    segment_errors: list[SegmentError] | None = None,
    position: int | None = None,
    newest_times: list[int | None] | None = None,
) -> Iterator[pa.RecordBatch]:
    """The records of a segment or snapshot file (or bytes, or a read-only map of a file) as
    Arrow batches of :data:`RECORD_SCHEMA`. A map is read where it lies by the native loop (no
    copy of the file into memory: the file's pages are mapped, not copied by ``read``); it must
    stay open until the batches are taken.

    ``start``/``end`` read a byte range that starts on an entry boundary (the data source's
    slices); errors and ``batchPosition`` are positions in the whole file. An Arrow batch ends
    after the log batch that brings it to ``batch_rows`` rows or more. ``headers=False`` leaves
    the headers column null (faster). ``native`` None runs the native columnar loop when
    :func:`native_columns_enabled`; True requires it (ImportError when it is not built); False
    runs the pure loop. ``segment_errors`` receives each stretch that could not be read (its
    row in the batches says less: no size), before the batch holding its row is yielded.
    ``position``: where the bytes read start in their file, for bytes cut from one (default
    ``start``). ``newest_times`` receives, after the last batch, the newest ``maxTimestamp`` of
    the log batches with records read (-1: none) where the native loop read every entry itself
    with their CRCs checked, else None: with the default limits, what
    :func:`codegen.dumps.views.cut.newest_batch_time` gives of the bytes' batch rows.
    """
    if name is None:
        name = "<bytes>" if isinstance(source, bytes | mmap.mmap) else str(source)
    if native is None:
        native = native_columns_enabled()
    module = _native_module() if native else None
    if native and module is None:
        raise ImportError(
            "the native columnar loop is not built: run python -m codegen.native.build"
        )
    whole = start == 0 and end is None
    opened: ExitStack | None = None
    data: bytes | mmap.mmap
    if isinstance(source, mmap.mmap) and whole:
        data = source  # read where it lies: its pages mapped, not copied
    elif native and whole and (local := _local_file(source)) is not None:
        # a whole local file read from its read-only map: its pages mapped, not copied by
        # read() into fresh memory (at 16 M records some 0.5 s of system time); opened here, so
        # a missing file fails at the call as a read does
        opened = ExitStack()
        data = opened.enter_context(SegmentReader(local).opened())
    else:
        data = read_range(source, start, end)
    options = (
        name,
        start if position is None else position,
        headers,
        verify_crc,
        batch_rows,
        max_batch_size,
        max_batch_records,
        segment_errors,
        newest_times,
    )
    if module is not None:
        batches = _native_batches(module, data, *options)
        return batches if opened is None else _closed_after(opened, batches)
    return _pure_batches(data if isinstance(data, bytes) else data[:], *options)


def _local_file(source: Source) -> str | os.PathLike[str] | None:
    """``source`` where it names a local file, else None."""
    if isinstance(source, bytes | mmap.mmap) or isinstance(storage.path(source), RemotePath):
        return None
    return source if isinstance(source, str | os.PathLike) else None


def _closed_after(opened: ExitStack, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``batches``, then ``opened`` closed (once they are all taken, or the iterator closed)."""
    with opened:
        yield from batches


# ---------------------------------------------------------------------------------------------
# the native loop


def _batch_fields(batch: RecordBatch) -> tuple[int | None, int, int, bool, bool]:
    ts_type = int(batch.timestamp_type)
    return (
        ts_type if ts_type >= 0 else None,
        batch.producer_id,
        batch.producer_epoch,
        batch.is_transactional,
        batch.is_control,
    )


def _native_batches(
    module: ModuleType,
    data: bytes | mmap.mmap,
    name: str,
    start: int,
    headers: bool,
    verify_crc: bool,
    batch_rows: int,
    max_size: int,
    max_records: int,
    segment_errors: list[SegmentError] | None,
    newest_times: list[int | None] | None,
) -> Iterator[pa.RecordBatch]:
    builder = module.ColumnBuilder(headers)
    errors: list[tuple[int, str]] = []
    pos, end = 0, len(data)
    every_entry_native = verify_crc  # the builder's newest time counts checked batches only
    given_back = data if isinstance(data, mmap.mmap) and _gives_back(data) else None
    kept = 0  # given_back's pages are held from here on
    while pos < end:
        # The uncompressed v2 batches in C, up to an entry it leaves here or a full Arrow batch.
        pos = builder.add_entries(
            data,
            pos,
            start,
            verify_crc,
            max_size,
            max_records,
            batch_rows,
            _FLUSH_BYTES,
            decompress,
        )
        if given_back is not None and pos - kept >= _MAP_HELD:
            kept = _give_back(given_back, kept, pos)
        if builder.rows >= batch_rows or builder.nbytes > _FLUSH_BYTES:
            yield _native_record_batch(builder.finish(), errors)
            errors = []
        elif pos < end:
            frame, next_pos = frame_at(data, name, max_size, pos)
            every_entry_native = False
            error = _native_entry(
                builder,
                frame,
                data,
                name,
                start,
                headers,
                verify_crc,
                max_size,
                max_records,
            )
            if error is not None:
                if segment_errors is not None:
                    segment_errors.append(error)
                errors.append((builder.rows, f"{error.kind}: {error.reason}"))
                builder.add_error(error.base_offset, start + error.position)
            pos = next_pos
            if builder.rows >= batch_rows:
                yield _native_record_batch(builder.finish(), errors)
                errors = []
    if builder.rows:
        yield _native_record_batch(builder.finish(), errors)
    if newest_times is not None:
        newest_times.append(builder.newest_time if every_entry_native else None)


_MAP_HELD: Final = 1 << 20
"""Bytes of a read-only map read whole that the native loop holds behind where it reads: past
them the pages it has read are given back (``MADV_DONTNEED``: they stay in the page cache, and
the map reads the same), so the map's pages do not all count in the process's memory by the
end of the file, as the bytes of a ``read`` of it did."""


def _gives_back(data: mmap.mmap) -> bool:
    """Whether the pages of a map may be given back as it is read: a read-only map (a writable
    one's pages may hold the caller's writes), where the system gives pages back."""
    if not hasattr(mmap, "MADV_DONTNEED"):
        return False
    with memoryview(data) as view:
        return view.readonly


def _give_back(data: mmap.mmap, kept: int, pos: int) -> int:
    """The whole pages of ``data`` from ``kept`` (a page boundary) to ``pos`` given back; where
    its pages are kept from now."""
    to = pos - pos % mmap.PAGESIZE
    if to > kept:
        data.madvise(mmap.MADV_DONTNEED, kept, to - kept)
    return to


def _native_entry(
    builder: Any,
    frame: tuple[int, int] | SegmentError,
    data: bytes | mmap.mmap,
    name: str,
    start: int,
    headers: bool,
    verify_crc: bool,
    max_size: int,
    max_records: int,
) -> SegmentError | None:
    """One entry ``add_entries`` left, read by the reference: its rows added, or the error it
    makes."""
    if isinstance(frame, SegmentError):
        return frame
    pos, total = frame
    item = _reference_rows(
        builder,
        data[pos : pos + total],
        name,
        pos,
        start,
        headers,
        verify_crc,
        max_size,
        max_records,
    )
    return item if isinstance(item, SegmentError) else None


def _reference_rows(
    builder: Any,
    entry: bytes,
    name: str,
    pos: int,
    start: int,
    headers: bool,
    verify_crc: bool,
    max_size: int,
    max_records: int,
) -> RecordBatch | SegmentError:
    """Read one entry with the reference decoder, as the pure loop does, and add its rows."""
    options = {
        "file": name,
        "position": pos,
        "max_size": max_size,
        "verify_crc": verify_crc,
        "max_records": max_records,
    }
    if headers:
        decoded = decode_entry(entry, **options)  # type: ignore[arg-type]
        if isinstance(decoded, SegmentError):
            return decoded
        batch = decoded
        rows: list[tuple[Any, ...]] = [
            (
                r.offset,
                r.timestamp,
                r.key,
                r.value,
                [(h.name, h.value) for h in r.headers],
                r.sequence if r.sequence >= 0 else None,
            )
            for r in decoded.records
        ]
    else:
        raw = decode_entry_raw(entry, **options)  # type: ignore[arg-type]
        if isinstance(raw, SegmentError):
            return raw
        batch, plain = raw
        base_seq, base_offset = batch.base_sequence, batch.base_offset
        rows = [
            (
                offset,
                ts,
                key,
                value,
                None,
                increment_sequence(base_seq, offset - base_offset) if base_seq >= 0 else None,
            )
            for offset, ts, key, value in plain
        ]
    builder.add_rows(rows, start + pos, *_batch_fields(batch))
    return batch


def _buffer(data: bytes | None) -> pa.Buffer | None:
    return None if data is None else pa.py_buffer(data)


def _native_record_batch(
    finished: tuple[int, int, tuple[Any, ...]], errors: list[tuple[int, str]]
) -> pa.RecordBatch:
    rows, n_headers, cols = finished

    def fixed(typ: pa.DataType, col: tuple[Any, ...], length: int = rows) -> pa.Array:
        nulls, valid, data, _ = col
        return pa.Array.from_buffers(typ, length, [_buffer(valid), pa.py_buffer(data)], nulls)

    def var(typ: pa.DataType, col: tuple[Any, ...], length: int = rows) -> pa.Array:
        nulls, valid, data, offsets = col
        buffers = [_buffer(valid), pa.py_buffer(offsets), pa.py_buffer(data)]
        return pa.Array.from_buffers(typ, length, buffers, nulls)

    (offset, ts, ts_type, key, value, hdrs, pid, epoch, seq, txn, control, position, hkey, hval) = (
        cols
    )
    entries = pa.StructArray.from_arrays(
        [var(pa.string(), hkey, n_headers), var(pa.binary(), hval, n_headers)],
        fields=list(HEADER_TYPE.value_type),
    )
    header_list = pa.Array.from_buffers(
        HEADER_TYPE, rows, [_buffer(hdrs[1]), pa.py_buffer(hdrs[3])], hdrs[0], children=[entries]
    )
    if errors:
        text = np.full(rows, None, dtype=object)
        for row, reason in errors:
            text[row] = reason
        error_column = pa.array(text, pa.string())
    else:
        error_column = pa.nulls(rows, pa.string())
    arrays = [
        fixed(pa.int64(), offset),
        fixed(pa.timestamp("us", tz="UTC"), ts),
        fixed(pa.int32(), ts_type),
        var(pa.binary(), key),
        var(pa.binary(), value),
        header_list,
        fixed(pa.int64(), pid),
        fixed(pa.int16(), epoch),
        fixed(pa.int32(), seq),
        fixed(pa.bool_(), txn),
        fixed(pa.bool_(), control),
        fixed(pa.int64(), position),
        error_column,
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=RECORD_SCHEMA)


# ---------------------------------------------------------------------------------------------
# the pure loop (the reference)


class _Columns:
    """Per-batch column builders (batch-level fields are repeated with numpy)."""

    def __init__(self) -> None:
        self.offset: list[int] = []
        self.timestamp: list[int] = []
        self.key: list[bytes | None] = []
        self.value: list[bytes | None] = []
        self.headers: list[Any] = []
        self.sequence: list[int | None] = []
        self.counts: list[int] = []
        self.batch: list[tuple[Any, ...]] = []  # ts type, pid, epoch, txn, control, pos, error

    def __len__(self) -> int:
        return len(self.offset)


def _batch_rows(
    cols: _Columns, batch: RecordBatch, rows: list[Any], position: int, with_headers: bool
) -> None:
    if with_headers:
        for r in rows:
            cols.offset.append(r.offset)
            cols.timestamp.append(r.timestamp)
            cols.key.append(r.key)
            cols.value.append(r.value)
            cols.headers.append([(h.name, h.value) for h in r.headers] if r.headers else [])
            cols.sequence.append(r.sequence if r.sequence >= 0 else None)
    else:
        base_seq = batch.base_sequence
        for offset, ts, key, value in rows:
            cols.offset.append(offset)
            cols.timestamp.append(ts)
            cols.key.append(key)
            cols.value.append(value)
            cols.headers.append(None)
            cols.sequence.append(
                increment_sequence(base_seq, offset - batch.base_offset) if base_seq >= 0 else None
            )
    cols.counts.append(len(rows))
    cols.batch.append((*_batch_fields(batch), position, None))


def _error_row(cols: _Columns, err: SegmentError, position: int) -> None:
    cols.offset.append(err.base_offset if err.base_offset is not None else -1)
    cols.timestamp.append(-1)
    cols.key.append(None)
    cols.value.append(None)
    cols.headers.append(None)
    cols.sequence.append(None)
    cols.counts.append(1)
    cols.batch.append((None, None, None, None, None, position, f"{err.kind}: {err.reason}"))


def _record_batch(cols: _Columns, start: int) -> pa.RecordBatch:
    counts = np.asarray(cols.counts, np.int64)
    per_batch = list(zip(*cols.batch, strict=True)) if cols.batch else [()] * 7

    def repeat(values: tuple[Any, ...], typ: pa.DataType) -> pa.Array:
        arr = pa.array(list(values), typ)
        return arr.take(pa.array(np.repeat(np.arange(len(values)), counts)))

    errors = repeat(per_batch[6], pa.string())
    is_error = np.asarray(errors.is_valid().to_numpy(zero_copy_only=False), np.bool_)
    offsets = np.asarray(cols.offset, np.int64)
    ts = np.asarray(cols.timestamp, np.int64)
    arrays = [
        pa.array(offsets, mask=is_error & (offsets < 0)),
        pa.array(ts * 1000, pa.timestamp("us", tz="UTC"), mask=is_error),
        repeat(per_batch[0], pa.int32()),
        pa.array(cols.key, pa.binary()),
        pa.array(cols.value, pa.binary()),
        pa.array(cols.headers, HEADER_TYPE),
        repeat(per_batch[1], pa.int64()),
        repeat(per_batch[2], pa.int16()),
        pa.array(cols.sequence, pa.int32()),
        repeat(per_batch[3], pa.bool_()),
        repeat(per_batch[4], pa.bool_()),
        repeat(tuple(p + start for p in per_batch[5]), pa.int64()),
        errors,
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=RECORD_SCHEMA)


def _pure_batches(
    data: bytes,
    name: str,
    start: int,
    headers: bool,
    verify_crc: bool,
    batch_rows: int,
    max_size: int,
    max_records: int,
    segment_errors: list[SegmentError] | None,
    newest_times: list[int | None] | None,
) -> Iterator[pa.RecordBatch]:
    reader = SegmentReader(
        data,
        name=name,
        verify_crc=verify_crc,
        max_batch_size=max_size,
        max_batch_records=max_records,
    )
    cols = _Columns()
    items: Iterator[Any] = iter(reader) if headers else reader.raw_batches()
    for item in items:
        if isinstance(item, SegmentError):
            if segment_errors is not None:
                segment_errors.append(item)
            _error_row(cols, item, item.position)
        elif headers:
            _batch_rows(cols, item, item.records, item.position, True)
        else:
            batch, rows = item
            _batch_rows(cols, batch, rows, batch.position, False)
        if len(cols) >= batch_rows:
            yield _record_batch(cols, start)
            cols = _Columns()
    if len(cols):
        yield _record_batch(cols, start)
    if newest_times is not None:
        newest_times.append(None)  # the caller reads the headers
