"""Log compaction on Arrow columns: the primitives the views share.

A log partition's rows in log order (``recordOffset``), each a record or an end-transaction
marker (``marker``: -1 none, 0 ABORT, 1 COMMIT) with its producer id and transactional flag.
A record of a transactional batch takes effect at its producer's next marker if that is a
COMMIT (``applyOffset``) and never otherwise; the last record per key in that order wins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from codegen.columnar.decode import Rows

__all__ = [
    "NO_MARKER",
    "ReducedChunks",
    "apply_offsets",
    "arrow_array",
    "bits",
    "bits_at",
    "end_markers",
    "first_after",
    "flags",
    "flags_at",
    "in_log_order",
    "key_codes",
    "key_groups",
    "key_ids",
    "last_per_key",
    "last_rows",
    "millis",
    "stable_order",
]

NO_MARKER: Final = -1
"""``marker`` of a record (not an end-transaction marker)."""


def flags(column: pa.ChunkedArray | pa.Array) -> npt.NDArray[np.bool_]:
    """A boolean column as numpy, null as False, read from its bitmaps (a conversion of each
    value costs several times more)."""
    if isinstance(column, pa.ChunkedArray):
        if column.num_chunks == 1:
            return flags(column.chunk(0))
        return np.concatenate([flags(c) for c in column.chunks] or [np.zeros(0, np.bool_)])
    n = len(column)
    if column.null_count == n:  # none, or all null (of type null too)
        return np.zeros(n, np.bool_)
    if column.type != pa.bool_():
        return np.asarray(column.fill_null(False).to_numpy(zero_copy_only=False), np.bool_)
    validity, data = column.buffers()
    out = bits(data, column.offset, n)
    if column.null_count:
        out &= bits(validity, column.offset, n)
    return out.view(np.bool_)


def flags_at(column: pa.ChunkedArray | pa.Array, at: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
    """Rows ``at`` of a boolean column as :func:`flags` reads them, read at those rows only
    (a chunk's few rows that are not offset commits: unpacking the whole column cost more)."""
    if isinstance(column, pa.ChunkedArray):
        if column.num_chunks != 1:
            return flags(column)[at]
        column = column.chunk(0)
    if column.null_count == len(column):
        return np.zeros(len(at), np.bool_)
    if column.type != pa.bool_():
        return flags(column)[at]
    validity, data = column.buffers()
    out = bits_at(data, column.offset, at)
    if column.null_count:
        out &= bits_at(validity, column.offset, at)
    return out.view(np.bool_)


def arrow_array(values: npt.NDArray[Any]) -> pa.Array:
    """A numpy array of numbers or booleans as an Arrow array without nulls, made on its buffer:
    ``pa.array`` of a numpy array imports ``numpy.ma`` for its masked-array test (about 44 M
    instructions, which a command on a small dump would pay for nothing else)."""
    values = np.ascontiguousarray(values)
    if values.dtype == np.bool_:
        packed = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(packed)])
    arrow_type = pa.from_numpy_dtype(values.dtype)
    return pa.Array.from_buffers(arrow_type, len(values), [None, pa.py_buffer(values)])


def bits(buffer: pa.Buffer, offset: int, n: int) -> npt.NDArray[np.uint8]:
    """Bits ``offset:offset + n`` of an Arrow bitmap as bytes 0 or 1."""
    packed = np.frombuffer(buffer, np.uint8, (offset + n + 7) // 8)
    return np.unpackbits(packed, count=offset + n, bitorder="little")[offset:]


def bits_at(buffer: pa.Buffer, offset: int, at: npt.NDArray[np.intp]) -> npt.NDArray[np.uint8]:
    """Bits ``offset + at`` of an Arrow bitmap as bytes 0 or 1."""
    places = at + offset
    packed = np.frombuffer(buffer, np.uint8)[places >> 3]
    out: npt.NDArray[np.uint8] = (packed >> (places & 7).astype(np.uint8)) & np.uint8(1)
    return out


def end_markers(
    key: pa.ChunkedArray | pa.Array,
    control: npt.NDArray[np.bool_],
    transactional: npt.NDArray[np.bool_],
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int8]]:
    """Which rows are end-transaction markers (a transactional control record whose key is
    int16 version, int16 type 0 ABORT or 1 COMMIT), and each row's ``marker`` column."""
    keys = Rows(key)
    marker_type, typed = keys.int16_at(keys.starts + 2, keys.ends)
    is_marker = control & transactional & typed & ((marker_type == 0) | (marker_type == 1))
    return is_marker, np.where(is_marker, marker_type, NO_MARKER).astype(np.int8)


def millis(column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """Epoch milliseconds of a timestamp column (``kafka-log``'s are microseconds)."""
    if pa.types.is_timestamp(column.type):
        return pc.divide(column.cast(pa.int64()), _THOUSAND)
    return column.cast(pa.int64())


_THOUSAND: Final = pa.scalar(1000, pa.int64())
"""Typed: a Python int's type is inferred by a conversion that imports dateutil."""
_DENSE_MAX: Final = 1 << 16
"""A table of this many slots (or one per row, if more) indexes codes directly."""


def key_codes(rows: pa.Table, keys: list[str]) -> tuple[npt.NDArray[np.int64], int]:
    """A non-negative number per row, equal exactly for rows of equal ``keys`` (null a value
    of its own, as Arrow groups it), and a bound of them: each column's values numbered (by a
    dictionary; integers of 32 bits or fewer from their least), the numbers joined in mixed
    radix. An all-null column (a single log partition's ``logTopic``) adds nothing. Cheaper
    than Arrow's hash aggregation over the same columns, which hashes every column of every
    row together."""
    n = rows.num_rows
    code = np.zeros(n, np.int64)
    span = 1
    for name in keys:
        column = rows.column(name)
        if column.null_count == n:
            continue
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if pa.types.is_integer(column.type) and column.type.bit_width <= 32:
            low, high = pc.min(column).as_py(), pc.max(column).as_py()
            values = np.asarray(column.fill_null(0).to_numpy(), np.int64)
            if column.null_count:  # null numbered below the least value
                low -= 1
                values[~flags(column.is_valid())] = low
            ids = values - low
            size = high - low + 1
        else:
            encoded = pc.dictionary_encode(column, null_encoding="encode")
            ids = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), np.int64)
            size = len(encoded.dictionary)
        if span * size >= 1 << 62:  # too wide to join: number the keys so far densely
            _, dense = np.unique(code, return_inverse=True)
            code, span = dense.astype(np.int64), int(dense.max()) + 1
        code = code * size + ids
        span *= size
    return code, span


def _last_of_codes(codes: npt.NDArray[np.int64], span: int, rows: np.ndarray) -> np.ndarray:
    """Of ``rows`` (ascending) with these ``codes``, the last of each code, ascending."""
    if not len(rows):
        return rows
    if span <= max(_DENSE_MAX, 2 * len(rows)):
        last = np.full(span, -1, np.int64)
        np.maximum.at(last, codes, rows)
        return np.sort(last[last >= 0])
    order = stable_order(codes) if span < 1 << 32 else np.argsort(codes, kind="stable")
    ordered = codes[order]
    ends = np.empty(len(ordered), np.bool_)
    ends[:-1] = ordered[1:] != ordered[:-1]
    ends[-1] = True
    return np.sort(rows[order[ends]])


def last_rows(rows: pa.Table, keys: list[str], among: np.ndarray | None = None) -> np.ndarray:
    """The row numbers of the last row of each key (of the rows ``among``), ascending."""
    codes, span = key_codes(rows, keys)
    if among is None or among.all():
        return _last_of_codes(codes, span, np.arange(rows.num_rows))
    chosen = np.flatnonzero(among)
    return _last_of_codes(codes[chosen], span, chosen)


def last_per_key(rows: pa.Table, keys: list[str]) -> pa.Table:
    """The last row of each key, in the rows' order."""
    if rows.num_rows == 0:
        return rows
    return rows.take(pa.array(last_rows(rows, keys)))


def _dense(codes: npt.NDArray[np.int64], span: int) -> npt.NDArray[np.int64]:
    """The codes numbered 0, 1, ... in their order (equal codes, equal numbers)."""
    if not len(codes):
        return codes
    if span <= max(_DENSE_MAX, 2 * len(codes)):
        present = np.zeros(span, np.bool_)
        present[codes] = True
        number = np.cumsum(present, dtype=np.int64) - 1
        return number[codes]
    _, dense = np.unique(codes, return_inverse=True)
    return dense.astype(np.int64).reshape(-1)


def key_groups(
    rows: pa.Table, keys: list[str], among: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The row numbers grouped by ``keys`` (each key's rows in their order, the keys in the
    order of their :func:`key_codes`; only the rows ``among``), and where each key's rows start
    in it (with the end last)."""
    codes, span = key_codes(rows, keys)
    chosen = np.arange(rows.num_rows) if among is None else np.flatnonzero(among)
    ids = _dense(codes[chosen], span)
    order = chosen[stable_order(ids)]
    counts = np.bincount(ids, minlength=int(ids.max()) + 1 if len(ids) else 0)
    bounds = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=bounds[1:])
    return order, bounds


def stable_order(codes: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
    """``np.argsort(codes, kind="stable")`` of non-negative codes: below 2**32, by one or two
    passes of numpy's radix sort on 16 bits (a few times faster than its merge sort)."""
    top = int(codes.max()) if len(codes) else 0
    if top < 1 << 16:
        return np.argsort(codes.astype(np.uint16), kind="stable")
    if top < 1 << 32:
        order = np.argsort((codes & 0xFFFF).astype(np.uint16), kind="stable")
        high = (codes >> 16).astype(np.uint16)[order]
        return order[np.argsort(high, kind="stable")]
    return np.argsort(codes, kind="stable")


def key_ids(rows: pa.Table, keys: list[str]) -> np.ndarray:
    """A number per row, equal for rows of equal ``keys``: 0, 1, ... in the order of their
    :func:`key_codes`."""
    return _dense(*key_codes(rows, keys))


def in_log_order(rows: pa.Table, *partition: str) -> bool:
    """Whether the rows are of one log partition (equal ``partition`` columns), by offset."""
    for name in partition:
        column = rows.column(name)
        if column.null_count not in (0, len(column)) or len(column.unique()) > 1:
            return False
    offsets = rows.column("recordOffset").to_numpy()
    return bool((offsets[1:] >= offsets[:-1]).all())


def first_after(
    record_owner: np.ndarray, record_at: np.ndarray, end_owner: np.ndarray, end_at: np.ndarray
) -> npt.NDArray[np.int64]:
    """For each record, the index of the first end of the same owner (a producer) at a later
    position (a log offset or row), -1 where there is none: a transactional record's marker."""
    n = len(record_at)
    out = np.full(n, -1, np.int64)
    if not n or not len(end_at):
        return out
    # (owner, position) pairs as one sortable number: dense ranks of each, so it fits.
    _, owner = np.unique(np.concatenate([record_owner, end_owner]), return_inverse=True)
    places, at = np.unique(np.concatenate([record_at, end_at]), return_inverse=True)
    pair = owner.astype(np.int64) * (len(places) + 1) + at
    order = np.argsort(pair[n:], kind="stable")
    nxt = np.minimum(np.searchsorted(pair[n:][order], pair[:n], side="right"), len(end_at) - 1)
    found = (pair[n:][order[nxt]] > pair[:n]) & (owner[n:][order[nxt]] == owner[:n])
    out[found] = order[nxt[found]]
    return out


def apply_offsets(rows: pa.Table) -> pa.Table:
    """The records of one log partition (in log order) that take effect, with ``applyOffset``:
    their own offset, or a transactional record's COMMIT marker's; aborted and open ones and
    the markers dropped."""
    marker = rows.column("marker").to_numpy()
    txn = rows.column("isTransactional").to_numpy(zero_copy_only=False)
    offsets = rows.column("recordOffset").to_numpy()
    producers = rows.column("producerId").to_numpy()
    apply = np.where((marker == NO_MARKER) & ~txn, offsets, -1)
    pending = np.nonzero((marker == NO_MARKER) & txn)[0]
    ends = np.nonzero(marker != NO_MARKER)[0]
    end = first_after(producers[pending], offsets[pending], producers[ends], offsets[ends])
    marker_row = ends[end[end >= 0]]
    committed = marker[marker_row] == 1
    apply[pending[end >= 0][committed]] = offsets[marker_row[committed]]
    effective = apply >= 0
    out = rows.append_column("applyOffset", pa.array(apply))
    return out.filter(pa.array(effective))


class ReducedChunks:
    """Rows gathered a chunk at a time and reduced by ``reduce`` (a step that may run on its
    own output) whenever they pass ``every`` rows and twice what the last reduction left: a
    log of any size in bounded memory."""

    def __init__(self, reduce: Callable[[pa.Table], pa.Table], every: int) -> None:
        self._reduce = reduce
        self._every = every
        self._chunks: list[pa.Table] = []
        self._rows = 0
        self._reduced = 0

    def add(self, rows: pa.Table) -> None:
        if not rows.num_rows:
            return
        self._chunks.append(rows)
        self._rows += rows.num_rows
        if self._rows > max(self._every, 2 * self._reduced):
            self._chunks = [self._reduce(pa.concat_tables(self._chunks))]
            self._rows = self._reduced = self._chunks[0].num_rows

    def take(self) -> pa.Table | None:
        """The rows gathered (None if none), and a fresh start."""
        rows = pa.concat_tables(self._chunks) if self._chunks else None
        self._chunks, self._rows, self._reduced = [], 0, 0
        return rows
