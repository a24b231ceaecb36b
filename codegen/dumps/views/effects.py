"""The committed offsets of one log partition in one pass of the native engine
(``commit_effects.h``'s ``CommitEffects``): the rows in log order, each commit taking effect at
once or, in a transaction, at its producer's COMMIT marker; per key the last one that took
effect, and the tombstones that deleted a committed offset.

Two inputs, one definition:

* :class:`RecordEffects`: the engine's columns of a log partition's records (key and value
  bytes, decoded for which rows are offset commits), a chunk at a time, as the command line
  reads a file; each row's kind is read from its key bytes and flags by the engine as it
  reads the row (``commit_kinds.h``; :meth:`RecordEffects.add` returns them). The engine
  keeps each key's committed offset as its key, value bytes, offset and timestamp, so memory
  is bounded by the keys, not the rows; the few rows of the answer are decoded again at the
  end, into the answer's columns alone (:meth:`RecordEffects.offsets`,
  :meth:`RecordEffects.deletions`).
* :class:`RecordHistory`: the same rows and pass, noting every row as it takes effect with its
  decoded numbers (committed offset, commit timestamp, leader epoch), then grouped by key in
  the engine (the history ``lag`` reads): each key's strings are decoded once, at the row it
  is first seen, so no string column is built per row.
* :func:`commit_row_effects`: commit rows (:data:`codegen.dumps.views.offsets
  .COMMIT_ROW_SCHEMA`) of one log partition in log order, as Spark's ``applyInArrow`` step
  gives them: the rows of the answer by number.

The pure backend's reference is :func:`codegen.dumps.compaction.apply_offsets` with the sorts of
:mod:`codegen.dumps.views.offsets` (:func:`~codegen.dumps.views.offsets.history` for
:class:`RecordHistory`); all are held to it by the tests.
"""

from __future__ import annotations

import importlib
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from codegen.columnar.package import SHIPPED
from codegen.dumps.views.commit_columns import engine_checks, native_commit_columns
from codegen.dumps.views.commit_rows import (
    COMMIT_ROW_SCHEMA,
    DELETION_SCHEMA,
    OFFSET_SCHEMA,
    commit_keys,
    commit_rows,
    deletion_columns,
    offset_columns,
    single_array,
)
from codegen.dumps.views.commits import decode_commits
from codegen.dumps.views.compaction import NO_MARKER, arrow_array, bits, flags
from codegen.runtime import backends
from codegen.slotted import FrozenSlotted

__all__ = [
    "ABORT_MARKER",
    "COMMIT_MARKER",
    "FLAG_COLUMNS",
    "LEFT_ROW",
    "NOTHING",
    "NO_PRODUCERS",
    "PASS_NULLS",
    "PLAIN_COMMIT",
    "PLAIN_TOMBSTONE",
    "TRANSACTIONAL_COMMIT",
    "TRANSACTIONAL_TOMBSTONE",
    "CheckedRows",
    "KeyedHistory",
    "RecordEffects",
    "RecordHistory",
    "binary_buffers",
    "commit_row_effects",
    "commit_row_history",
    "engine_function",
    "engine_history",
    "int64_numbers",
    "kinds_of",
    "native_enabled",
    "release_history",
    "row_flags",
]

NO_PRODUCERS: Final = np.zeros(0, np.int64)
"""No producer ids (``add_checked``'s ``waiting``: a view holds no record)."""

DELETED_HELD: Final = 1 << 16
"""Deleting tombstones the engine holds before they are taken out as bytes (a few MB), to be
decoded at the partition's end."""
NOTHING: Final = 0
"""A row with nothing to apply: another record, or one that did not decode."""
PLAIN_COMMIT: Final = 1
PLAIN_TOMBSTONE: Final = 2
TRANSACTIONAL_COMMIT: Final = 3
TRANSACTIONAL_TOMBSTONE: Final = 4
ABORT_MARKER: Final = 5
COMMIT_MARKER: Final = 6


def _engine_module() -> Any:
    try:
        return importlib.import_module("codegen.native._records")
    except ImportError:
        return None


def _engine_type() -> Any:
    return getattr(_engine_module(), "CommitEffects", None)


def engine_function(name: str) -> Any:
    """The engine's function ``name`` (``codegen.native._records``), None where the engine is
    not asked (:func:`native_enabled`) or has no such function."""
    return getattr(_engine_module(), name, None) if native_enabled() else None


def native_enabled() -> bool:
    """Whether the engine is built and the backend asked for is not ``pure``."""
    return backends.requested() != backends.PURE and _engine_type() is not None


def release_history() -> None:
    """Free the columns the engine keeps of the last :class:`RecordHistory` freed for the next
    one (``effect_history.h`` history_spare), and keep none until a history is made, so that a
    history alive now is freed when it is: no history follows (lag, after its last log
    partition's)."""
    release = engine_function("history_release")
    if release is not None:
        release()


def engine_history(package: str = SHIPPED) -> bool:
    """Whether :class:`RecordHistory` reads ``package``'s rows: the engine asked for
    (:func:`native_enabled`) checks its offset commits in its pass
    (:func:`~codegen.dumps.views.commit_columns.engine_checks`)."""
    return native_enabled() and engine_checks(package)


def kinds_of(
    commit: npt.NDArray[np.bool_],
    transactional: npt.NDArray[np.bool_],
    tombstone: npt.NDArray[np.bool_],
    marker: npt.NDArray[np.int8],
) -> npt.NDArray[np.uint8]:
    """Each row's kind (:data:`PLAIN_COMMIT`, ...) from where it is a commit (or a record),
    of a transactional batch, a tombstone, and its ``marker`` column. In bytes throughout (the
    flags' sums in int64 and a second where over every row took some 72 us a 32 k-row chunk,
    now some 25; a shift of bytes is not vectorized, a multiply is), the few markers written
    over."""
    both = tombstone.view(np.uint8) | transactional.view(np.uint8) * np.uint8(2)
    one = both + np.uint8(PLAIN_COMMIT)
    kinds: npt.NDArray[np.uint8] = np.where(commit, one, np.uint8(NOTHING))
    markers = marker != NO_MARKER
    if markers.any():
        kinds[markers] = ABORT_MARKER + marker[markers]
    return kinds


CONTROL: Final = 1
TRANSACTIONAL: Final = 2
TOMBSTONE: Final = 4
DECODED: Final = 8
"""A row's flags for the engine's ``add_records`` (``commit_kinds.h``): a control record, of a
transactional batch, without a value, read and (an offset commit) decoded without an error."""


def _true(column: pa.ChunkedArray | pa.Array) -> npt.NDArray[np.uint8]:
    """Where a boolean column is true (null as false), as bytes 0 or 1 (:func:`flags`)."""
    return flags(column).view(np.uint8)


def _set(rows: pa.Table | pa.RecordBatch, name: str) -> npt.NDArray[np.uint8] | int:
    """Where column ``name`` is not null (bytes 0 or 1); 0 when it is absent or all null."""
    if name not in rows.column_names or rows.column(name).null_count == rows.num_rows:
        return 0
    array = single_array(rows.column(name))
    if not array.null_count:
        return 1
    return bits(array.buffers()[0], array.offset, len(array))


def _row_flags(decoded: pa.Table | pa.RecordBatch, checked: bool = False) -> npt.NDArray[np.uint8]:
    """Each decoded ``__consumer_offsets`` row's flags (:data:`CONTROL`, ...), from which and
    its key's record type the engine reads its kind (``commit_kinds.h``), as
    :func:`~codegen.dumps.views.commit_rows.commit_rows` reads the rows: read from the flag
    columns' bitmaps. ``checked``: the flags ``add_checked`` takes of rows not decoded
    (:data:`TOMBSTONE` where the value is null, :data:`DECODED` where the row was read: the
    engine's pass checks each commit itself)."""
    failed = _set(decoded, "_error") | (0 if checked else _set(decoded, "_decode_error"))
    if checked:
        tombstone = _true(single_array(decoded.column("value")).is_null())
    else:
        tombstone = _true(decoded.column("isTombstone"))
    row_flags: npt.NDArray[np.uint8] = (
        _true(decoded.column("isControl")) * np.uint8(CONTROL)
        | _true(decoded.column("isTransactional")) * np.uint8(TRANSACTIONAL)
        | tombstone * np.uint8(TOMBSTONE)
        | (np.uint8(1) - failed) * np.uint8(DECODED)
    )
    return row_flags


FLAG_COLUMNS: Final = ("isControl", "isTransactional", "isTombstone")
"""The boolean columns of a decoded row's flags (:data:`CONTROL`, :data:`TRANSACTIONAL`,
:data:`TOMBSTONE`)."""

FlagBits = int | tuple[Any, ...]
"""One flag of the engine's ``row_flags``: 0 or 1 (every row's), or (bitmap, bit offset[,
bitmap, bit offset]) whose bits are and-ed."""


def _true_bits(column: pa.ChunkedArray | pa.Array) -> FlagBits | None:
    """Where a boolean column is true (null as false, as :func:`_true`), as ``row_flags``
    takes it; None for a column of another type."""
    array = single_array(column)
    if array.null_count == len(array):
        return 0
    if array.type != pa.bool_():
        return None
    validity, data = array.buffers()
    if array.null_count:
        return (data, array.offset, validity, array.offset)
    return (data, array.offset)


def _set_bits(rows: pa.Table | pa.RecordBatch, name: str) -> FlagBits:
    """Where column ``name`` is not null (as :func:`_set`), as ``row_flags`` takes it (looked
    up in the schema: ``column_names`` makes a list of every name, some 7 us)."""
    at = rows.schema.get_field_index(name)
    if at < 0:
        return 0
    array = single_array(rows.column(at))
    if array.null_count == len(array):
        return 0
    if not array.null_count:
        return 1
    return (array.buffers()[0], array.offset)


def _null_bits(rows: pa.Table | pa.RecordBatch, name: str) -> FlagBits:
    """Where column ``name`` is null, as ``row_flags`` takes it: its validity bitmap inverted (a
    copy of a few KB a chunk, where the engine's pass tested each row's bit)."""
    array = single_array(rows.column(name))
    if not array.null_count:
        return 0
    if array.null_count == len(array):
        return 1
    return (np.invert(np.frombuffer(array.buffers()[0], np.uint8)), array.offset)


def row_flags(decoded: pa.Table | pa.RecordBatch, checked: bool = False) -> npt.NDArray[np.uint8]:
    """:func:`_row_flags` read by the engine (``row_flags.h``) from the flag columns' bitmaps in
    one loop (:func:`_row_flags`' numpy temporaries took some 93 us a 32 k-row chunk); the
    numpy form where a flag column is not boolean."""
    read = getattr(_engine_module(), "row_flags", None)
    names = ("isControl", "isTransactional") if checked else FLAG_COLUMNS
    true: list[FlagBits | None] = [_true_bits(decoded.column(c)) for c in names]
    if read is None or any(t is None for t in true):
        return _row_flags(decoded, checked)
    if checked:  # a tombstone where the value is null; no decode error
        true.append(_null_bits(decoded, "value"))
    decode_error = 0 if checked else _set_bits(decoded, "_decode_error")
    out = read(decoded.num_rows, *true, _set_bits(decoded, "_error"), decode_error)
    return np.frombuffer(out, np.uint8)


def int64_numbers(column: pa.ChunkedArray | pa.Array, null: int) -> npt.NDArray[np.int64]:
    """An int64 (or 64-bit timestamp) column as int64 numbers, ``null`` where null: its buffer
    as it is when it has no null."""
    array = single_array(column)
    if not len(array):
        return np.zeros(0, np.int64)
    if not array.null_count and (array.type == pa.int64() or pa.types.is_timestamp(array.type)):
        return np.frombuffer(array.buffers()[1], np.int64, len(array), array.offset * 8)
    return np.ascontiguousarray(array.cast(pa.int64()).fill_null(null).to_numpy(), np.int64)


def binary_buffers(column: pa.ChunkedArray | pa.Array) -> tuple[npt.NDArray[np.int32], Any]:
    """The int32 offsets (from the first row) and data of a binary column, as the engine reads
    them."""
    column = single_array(column)
    if column.type != pa.binary():
        raise TypeError(f"a key or value column of type {column.type}, not binary")
    offsets = np.frombuffer(column.buffers()[1], np.int32, len(column) + 1, column.offset * 4)
    return offsets, column.buffers()[2] or b""


class RecordEffects:
    """The committed offsets of one log partition from its ``__consumer_offsets`` rows (the
    engine's columns: as they are, each commit checked in the engine's pass, ``add_checked``;
    or decoded, with :func:`~codegen.dumps.views.commits.decode_commit_flags`' columns or
    more), added in log order; ``package`` decodes the answer's rows again as they were
    decoded."""

    def __init__(self, package: str = SHIPPED) -> None:
        self._effects = _engine_type()()
        self._package = package
        self._timestamp_type: pa.DataType = pa.int64()
        self._deleted: list[tuple[bytes, ...]] = []  # the engine's, decoded when read

    def add(self, decoded: pa.Table) -> npt.NDArray[np.uint8]:
        """Add the rows; their kinds (:data:`PLAIN_COMMIT`, ...)."""
        if not decoded.num_rows:
            return np.zeros(0, np.uint8)
        self._timestamp_type = decoded.column("timestamp").type
        kinds = _add_records(self._effects, decoded)
        self._take_held()
        return kinds

    def add_checked(
        self, rows: pa.Table, waiting: npt.NDArray[np.int64] = NO_PRODUCERS
    ) -> CheckedRows:
        """Add the rows as the engine's columns give them, not decoded: each offset commit is
        checked by the engine's pass as it reads it (:func:`_add_checked`; ``waiting``: the
        producers the view holds records of); what it found."""
        if not rows.num_rows:
            return CheckedRows(np.zeros(0, np.uint8), 0, [], np.zeros(0, LEFT_ROW))
        self._timestamp_type = rows.column("timestamp").type
        checked = _add_checked(self._effects, rows, waiting)
        self._take_held()
        return checked

    def _take_held(self) -> None:
        """The deleting tombstones out of the engine as bytes, when it holds many."""
        if self._effects.deleted_count >= DELETED_HELD:
            self._deleted.append(self._effects.take_deleted())

    def _engine_rows(self, out: tuple[bytes, ...], tombstones: bool) -> pa.Table:
        """The engine's rows (live() or take_deleted()) as the ``__consumer_offsets`` rows
        they were."""
        rows, times, key_offsets, key_data, value_offsets, value_data = out
        n = len(rows) // 8
        key = pa.Array.from_buffers(
            pa.binary(), n, [None, pa.py_buffer(key_offsets), pa.py_buffer(key_data)]
        )
        if tombstones:
            value = pa.nulls(n, pa.binary())
        else:
            value = pa.Array.from_buffers(
                pa.binary(), n, [None, pa.py_buffer(value_offsets), pa.py_buffer(value_data)]
            )
        return pa.table(
            {
                "offset": arrow_array(np.frombuffer(rows, np.int64)),
                "timestamp": arrow_array(np.frombuffer(times, np.int64)).cast(self._timestamp_type),
                "key": key,
                "value": value,
                "producerId": arrow_array(np.full(n, -1, np.int64)),
                "isTransactional": arrow_array(np.zeros(n, np.bool_)),
                "isControl": arrow_array(np.zeros(n, np.bool_)),
            }
        )

    def _commit_rows(self, out: tuple[bytes, ...], tombstones: bool) -> pa.Table:
        """The engine's rows decoded again, as commit rows: the reference of :meth:`offsets`
        and :meth:`deletions`."""
        if not len(out[0]):
            return COMMIT_ROW_SCHEMA.empty_table()
        decoded, _ = decode_commits(self._engine_rows(out, tombstones), self._package)
        return commit_rows(decoded)

    def _decoded(self, out: tuple[bytes, ...], tombstones: bool) -> tuple[pa.Table, Any]:
        """The engine's rows and their decoded key and value, where the engine decodes them
        all (else None: read them as :meth:`_commit_rows`)."""
        rows = self._engine_rows(out, tombstones)
        if not rows.num_rows:
            return rows, None
        decoded = native_commit_columns(
            rows.column("key"), rows.column("value"), rows.column("isControl"), self._package
        )
        if decoded is None or decoded.errors:
            return rows, None
        return rows, decoded.columns

    def deleted(self) -> pa.Table:
        """The commit rows of the tombstones that deleted a committed offset, in the order
        they took effect: the reference :meth:`deletions` is held to by the tests (the views
        read :meth:`deletions`)."""
        tables = [self._commit_rows(out, True) for out in self._taken_deleted()]
        tables = [t for t in tables if t.num_rows]
        return pa.concat_tables(tables) if tables else COMMIT_ROW_SCHEMA.empty_table()

    def deletions(self) -> pa.Table:
        """``deleted().select(DELETION_SCHEMA.names)``, read from the tombstones' keys alone."""
        tables = []
        for out in self._taken_deleted():
            rows, columns = self._decoded(out, tombstones=True)
            if columns is None:
                table = self._commit_rows(out, True).select(DELETION_SCHEMA.names)
            else:
                table = deletion_columns(
                    columns["decodedKey"], rows.column("offset"), rows.column("timestamp")
                )
            if table.num_rows:
                tables.append(table)
        return pa.concat_tables(tables) if tables else DELETION_SCHEMA.empty_table()

    def _taken_deleted(self) -> list[tuple[bytes, ...]]:
        """The tombstones the engine has taken out so far and those it holds, taken now: kept
        only where there are any, so each read takes once and a second read gives the same
        rows without growing the list."""
        out = self._effects.take_deleted()
        if len(out[0]):
            self._deleted.append(out)
        return self._deleted

    def live(self) -> pa.Table:
        """The commit rows of the keys' committed offsets, by record offset: the reference
        :meth:`offsets` is held to by the tests (the views read :meth:`offsets`)."""
        return self._commit_rows(self._effects.live(), tombstones=False)

    def offsets(self) -> pa.Table:
        """``live().select(OFFSET_SCHEMA.names)``, read from the decoded keys and values alone
        (no commit rows made)."""
        out = self._effects.live()
        rows, columns = self._decoded(out, tombstones=False)
        if columns is None:
            return self._commit_rows(out, False).select(OFFSET_SCHEMA.names)
        return offset_columns(columns["decodedKey"], columns["decodedValue"], rows.column("offset"))


def _add_records(
    effects: Any, decoded: pa.Table, *values: npt.NDArray[Any]
) -> npt.NDArray[np.uint8]:
    """Decoded rows to the engine (``CommitEffects.add_records``; ``values``: in history mode,
    each row's committed offset, commit timestamp, leader epoch and whether it is valid, as the
    engine takes them); their kinds (:data:`PLAIN_COMMIT`, ...), read by the engine from each
    key's record type and the row's flags as it reads the row."""
    key_offsets, key_data = binary_buffers(decoded.column("key"))
    value_offsets, value_data = binary_buffers(decoded.column("value"))
    kinds = effects.add_records(
        key_offsets,
        key_data,
        value_offsets,
        value_data,
        row_flags(decoded),
        int64_numbers(decoded.column("producerId"), -1),
        int64_numbers(decoded.column("offset"), -1),
        int64_numbers(decoded.column("timestamp"), 0),
        *values,
    )
    return np.frombuffer(kinds, np.uint8)


class CheckedRows(FrozenSlotted):
    """What the engine's pass found of rows it checked as it read them (:func:`_add_checked`)."""

    kinds: npt.NDArray[np.uint8]
    """Each row's kind (:data:`PLAIN_COMMIT`, ...; :data:`NOTHING` for a commit refused)."""
    newer: int
    """How many commits of kinds :data:`PLAIN_COMMIT` to :data:`TRANSACTIONAL_TOMBSTONE` have a
    value version newer than the specs."""
    refused: list[int]
    """The rows (ascending) of the commits refused: offset commits, read, that do not decode
    (what :func:`~codegen.dumps.views.commits.decode_commits` lists as errors among them)."""
    left: npt.NDArray[np.void]
    """The rows read that the pass did not apply (kinds :data:`NOTHING`, :data:`ABORT_MARKER`,
    :data:`COMMIT_MARKER`; the refused among them), ascending, as it wrote them while it read
    them (:data:`LEFT_ROW`), but the end-transaction markers a view does nothing with
    (``rows_left.h``: of no producer it holds records of, nor of a transactional data row left,
    read without an error)."""


LEFT_ROW: Final = np.dtype(
    [
        ("producer", "<i8"),
        ("offset", "<i8"),
        ("timestamp", "<i8"),
        ("row", "<i4"),
        ("key_start", "<i4"),
        ("key_size", "<i4"),
        ("value_start", "<i4"),
        ("value_size", "<i4"),
        ("kind", "u1"),
        ("control", "?"),
        ("transactional", "?"),
        ("refused", "?"),
    ]
)
"""A row :func:`_add_checked`'s pass left (``rows_left.h``): its producer id (-1 where null),
offset (-1 where null) and timestamp (0 where null) as the pass is given them; its row in the
chunk; its key's and value's start and size in their column's data (a value size of -1: null);
its kind; whether it is a control record, of a transactional batch, a commit refused."""


PASS_NULLS: Final = {"producerId": -1, "offset": -1, "timestamp": 0}
"""What the engine's checked pass reads a null of each int64 column as (:func:`int64_numbers`
given it by :func:`_add_checked`), and so what its records of the rows left
(:data:`LEFT_ROW`) hold for one."""


def _add_checked(
    effects: Any, rows: pa.Table | pa.RecordBatch, waiting: npt.NDArray[np.int64] = NO_PRODUCERS
) -> CheckedRows:
    """Rows of the engine's columns (not decoded) to the engine, which checks each offset commit
    as it reads it (``CommitEffects.add_checked``, ``commit_check.h``: the check
    ``commit_columns`` decodes with) and, in history mode, reads its numbers from its value;
    ``waiting``: the producers a view holds records of, whose markers are left to it."""
    key_offsets, key_data = binary_buffers(rows.column("key"))
    value_offsets, value_data = binary_buffers(rows.column("value"))
    kinds, newer, refused, left = effects.add_checked(
        key_offsets,
        key_data,
        value_offsets,
        value_data,
        row_flags(rows, checked=True),
        int64_numbers(rows.column("producerId"), PASS_NULLS["producerId"]),
        int64_numbers(rows.column("offset"), PASS_NULLS["offset"]),
        int64_numbers(rows.column("timestamp"), PASS_NULLS["timestamp"]),
        waiting,
    )
    return CheckedRows(
        np.frombuffer(kinds, np.uint8), newer, refused, np.frombuffer(left, LEFT_ROW)
    )


class KeyedHistory(FrozenSlotted):
    """Every commit of one log partition that took effect, by key (:meth:`RecordHistory.keyed`):
    the commits of ``keys[k]`` (a key number) are rows ``bounds[k]:bounds[k + 1]`` of the
    columns, in the order they took effect."""

    keys: npt.NDArray[np.int64]
    """The numbers of the keys with a commit, in the order asked."""
    bounds: npt.NDArray[np.int64]
    record_offset: npt.NDArray[np.int64]
    commit_timestamp: npt.NDArray[np.int64]
    offset: npt.NDArray[np.int64]
    leader_epoch: npt.NDArray[np.int64]
    deleted_bounds: npt.NDArray[np.int64]
    deleted: list[list[int]]
    """The record offsets of the tombstones of ``keys[k]`` after its first commit
    (``deleted_bounds[k]:deleted_bounds[k + 1]`` of them all)."""
    live: npt.NDArray[np.bool_]
    """Whether the key's last row is a commit."""
    last: npt.NDArray[np.int64]
    """The place of the key's last row among all rows that took effect, in that order."""


class RecordHistory:
    """The commits and tombstones of one log partition that took effect, from its
    ``__consumer_offsets`` rows (the engine's columns, decoded or not) added in log order, each
    commit checked and its numbers read from its value in the engine's pass
    (:func:`_add_checked`): the history of :func:`codegen.dumps.views.offsets.history`, by key
    (:meth:`keyed`). Made only where the engine checks ``package``'s commits
    (:func:`engine_history`; else the pure backend's
    :class:`~codegen.dumps.views.offsets.CommitHistory`); a key's first rows are decoded again
    with ``package``."""

    def __init__(self, segment_bytes: int = 0, package: str = SHIPPED) -> None:
        """``segment_bytes``: the bytes of the partition's segments where known (0 if not),
        which with the first rows' sizes tell how many rows to make room for
        (:meth:`_reserve`)."""
        if not engine_history(package):
            raise RuntimeError(
                f"RecordHistory: the engine does not check {package}'s offset commits in its "
                "pass (read them with CommitHistory)"
            )
        self._effects = _engine_type()(history=True)
        self._rows = 0
        self._segment_bytes = segment_bytes
        self._package = package
        self.keys: list[tuple[str | None, str | None, int | None]] = []
        """(group, topic, partition) by key number, decoded once per key."""

    def add(self, rows: pa.Table | pa.RecordBatch) -> list[int]:
        """Add rows of the engine's columns (decoded or not: the engine reads their key and
        value bytes); the rows of the commits refused (:attr:`CheckedRows.refused`)."""
        n = rows.num_rows
        if not n:
            return []
        if not self._rows and self._segment_bytes:
            self._reserve(rows)
        refused = _add_checked(self._effects, rows).refused
        first = np.frombuffer(self._effects.key_rows(len(self.keys)), np.int64) - self._rows
        if len(first):
            self.keys += commit_keys(_decoded_keys(rows, arrow_array(first), self._package))
        self._rows += n
        return refused

    def _reserve(self, first: pa.Table | pa.RecordBatch) -> None:
        """Room for the partition's rows made before the first are added: as many as its
        segments hold at the ``first`` rows' key and value bytes a row (a record holds at least
        its key and value; compressed or larger later rows only grow it as before), where the
        first partition's history grew by doubling and copying (the engine makes room for a
        command's first history only: ``effect_history.h`` history_reserve)."""
        key_offsets, _ = binary_buffers(first.column("key"))
        value_offsets, _ = binary_buffers(first.column("value"))
        first_bytes = int(key_offsets[-1] - key_offsets[0] + value_offsets[-1] - value_offsets[0])
        if first_bytes:
            self._effects.reserve(self._segment_bytes * first.num_rows // first_bytes)

    def keyed(self, order: npt.NDArray[np.int64]) -> KeyedHistory:
        """The rows by key, the keys in ``order`` (every key number once)."""
        out = self._effects.keyed(np.ascontiguousarray(order, np.int64))
        keys, bounds, rows, times, offsets, epochs, deleted_bounds = (
            np.frombuffer(b, np.int64) for b in out[:7]
        )
        deleted: list[list[int]] = out[7]
        live = np.frombuffer(out[8], np.uint8).astype(np.bool_)
        last = np.frombuffer(out[9], np.int64)
        return KeyedHistory(
            keys, bounds, rows, times, offsets, epochs, deleted_bounds, deleted, live, last
        )


def _decoded_keys(decoded: pa.Table | pa.RecordBatch, rows: pa.Array, package: str) -> pa.Array:
    """``decodedKey`` of ``rows``, decoded again by ``package`` from their key bytes where the
    rows came without it (not decoded): a key's first rows, few."""
    if decoded.schema.get_field_index("decodedKey") >= 0:
        return single_array(decoded.column("decodedKey")).take(rows)
    again, _ = decode_commits(decoded.select(["key", "value", "isControl"]).take(rows), package)
    return single_array(again.column("decodedKey"))


def _commit_rows_effects(rows: pa.Table, history: bool) -> Any:
    """The engine fed commit rows of one log partition in log order (rows numbered from 0);
    None when the engine is not asked (:func:`native_enabled`) or a commit's key has a null."""
    if not native_enabled():
        return None
    marker = np.asarray(rows.column("marker").to_numpy(), np.int8)
    group = single_array(rows.column("group"))
    topic = single_array(rows.column("topic"))
    partition = single_array(rows.column("partition"))
    commit = marker == NO_MARKER
    for column in (group, topic, partition):
        if column.null_count and not flags(column.is_valid())[commit].all():
            return None
    if group.type != pa.string() or topic.type != pa.string():
        return None
    kinds = kinds_of(
        commit,
        flags(rows.column("isTransactional")),
        flags(rows.column("isTombstone")),
        marker,
    )
    effects = _engine_type()(history=history)
    effects.add_commit_rows(
        *_string_buffers(group),
        *_string_buffers(topic),
        np.ascontiguousarray(partition.fill_null(0).to_numpy(), np.int32),
        kinds,
        int64_numbers(rows.column("producerId"), -1),
    )
    return effects


def commit_row_effects(
    rows: pa.Table,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """Of commit rows of one log partition in log order, the rows of the committed offsets
    (ascending) and of the tombstones that deleted one (in the order they took effect); None
    when the engine is not asked (:func:`native_enabled`) or a commit's key has a null."""
    effects = _commit_rows_effects(rows, history=False)
    if effects is None:
        return None
    live = np.frombuffer(effects.live()[0], np.int64)
    deleted = np.frombuffer(effects.take_deleted()[0], np.int64)
    return live, deleted


def commit_row_history(rows: pa.Table) -> npt.NDArray[np.int64] | None:
    """Of commit rows of one log partition in log order, the rows of the commits and
    tombstones that took effect, in the order they did (what
    :func:`codegen.dumps.views.offsets.history` takes); None as :func:`commit_row_effects`."""
    effects = _commit_rows_effects(rows, history=True)
    return None if effects is None else np.frombuffer(effects.effect_rows(), np.int64)


def _string_buffers(column: pa.Array) -> tuple[npt.NDArray[np.int32], Any]:
    offsets = np.frombuffer(column.buffers()[1], np.int32, len(column) + 1, column.offset * 4)
    return offsets, column.buffers()[2] or b""
