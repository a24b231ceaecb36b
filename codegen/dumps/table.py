"""``dump --format table``: records, errors and the ``--compacted`` views as text tables.

The cells are the JSON of :mod:`codegen.dumps.record_json` (a coordinator record's key and
value data, a user topic's messages, any other topic's text); :func:`codegen.dumps.text_table.
table_text` draws them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from itertools import repeat
from typing import TYPE_CHECKING, Any, Final, TextIO, TypeAlias, cast

from codegen.dumps.decoded import (
    ERROR,
    RECORD,
    TOMBSTONE,
    UNKNOWN,
    DecodedRecord,
    version_of,
)
from codegen.dumps.json_text import native_printer, value_plans, wire_sides
from codegen.dumps.jsonl import value_data_text
from codegen.dumps.log_dirs import RowSource
from codegen.dumps.metadata import METADATA_TOPICS
from codegen.dumps.model import SegmentError
from codegen.dumps.record_json import (
    SEGMENT_ERROR,
    Damage,
    compact_json,
    plainly_keyed,
    record_to_json,
    value_json,
)
from codegen.dumps.text_table import columns_text, table_text
from codegen.runtime import KafkaMessage
from codegen.text import utc_text

if TYPE_CHECKING:
    from codegen.dumps.log_files import AbortedTxnEntry, TxnIndexError
    from codegen.dumps.user_topics import BatchBytes, UserRecord, UserTopicDecoder
    from codegen.dumps.views.compacted import GroupMember, GroupState

__all__ = [
    "TABLE_ROWS",
    "TableRow",
    "UserCells",
    "compacted_tables",
    "latest_tables",
    "records_table",
    "user_cells_printer",
]

_Row: TypeAlias = "DecodedRecord | SegmentError | AbortedTxnEntry | TxnIndexError"
TableRow = tuple[
    "DecodedRecord | SegmentError | AbortedTxnEntry | TxnIndexError | UserCells"
    " | list[DecodedRecord]",
    str | None,
    RowSource | None,
]
"""Rows of the records table: a record or error (a row), a user topic's batch made from its
record bytes or a batch's decoded records (a row each), with their decoder's topic (None:
plain) and where they come from."""

TABLE_ROWS: Final = 10_000
"""``--format table`` prints a table when it has this many rows (and one at the end)."""

_RECORD_COLUMNS: Final = (
    "partition",
    "file",
    "offset",
    "timestamp",
    "time (UTC)",
    "recordName",
    "key",
    "value",
)
_OFFSET_COLUMNS: Final = (
    "group",
    "topic",
    "partition",
    "offset",
    "leaderEpoch",
    "metadata",
    "commitTimestamp",
    "commit time (UTC)",
)
_GROUP_COLUMNS: Final = (
    "group",
    "type",
    "state",
    "protocol",
    "generation/epoch",
    "memberId",
    "clientId",
    "clientHost",
    "assignors",
    "assignment",
)


def records_table(out: TextIO, rows: list[TableRow], title: str | None = None) -> None:
    """A table of records and errors, a row each."""
    out.write(columns_text(_RECORD_COLUMNS, _record_columns(rows), title=title))


def _json_text(obj: Any) -> str:
    return compact_json(obj).decode("utf-8", "surrogateescape")


class _MessageTexts:
    """The compact JSON of a user topic's messages, at the versions they were read with: by
    the native printer's plans where they print the message (orjson's text of ``to_json``,
    checked by tests/test_jsonl_native.py), else ``to_json`` and :func:`compact_json`."""

    def __init__(self) -> None:
        self.native = native_printer() is not None
        self.plans: dict[type, tuple[Any, ...]] = {}

    def text(self, message: KafkaMessage, version: int | None) -> str:
        at = version_of(message, version)
        cls = type(message)
        plans = self.plans.get(cls)
        if plans is None:
            plans = self.plans[cls] = value_plans(cls) if self.native else ()
        plan = plans[at] if at < len(plans) else None
        if plan is not None:
            text: bytes | None = plan.dumps(message)
            if text is not None:
                return text.decode("utf-8", "surrogateescape")
        return _json_text(message.to_json(at))


class UserCells:
    """The rows of a user topic's batch made from its record bytes (``user_table_cells`` of
    ``codegen/native/user_wire.h``): (offset, timestamp, key, value) texts per record, the
    cells :func:`_user_cells` makes of its decoded records, or the decoded record where the
    printer does not make them (``holes``, in order: the reference makes its row)."""

    __slots__ = ("holes", "name", "rows")

    def __init__(
        self,
        name: str,
        rows: list[tuple[str, str, str, str] | DecodedRecord],
        holes: list[DecodedRecord],
    ) -> None:
        self.name = name
        self.rows = rows
        self.holes = holes


def user_cells_printer(
    decoder: UserTopicDecoder,
) -> Callable[[BatchBytes], tuple[UserCells, int] | None] | None:
    """``cells(batch)``: a user topic's table rows of a batch made from its record bytes and
    how many of its records are newer than the specs (not counting its ``holes``, the records
    the printer left to the reference), or None where its decoded records must make them all;
    None without the native loop and printer."""
    module = native_printer()
    if module is None or not decoder.native:
        return None
    key_side, value_side = wire_sides(decoder)
    make = module.user_table_cells
    name = decoder.name

    def cells(records: BatchBytes) -> tuple[UserCells, int] | None:
        holes: list[DecodedRecord] = []

        def hole(i: int) -> DecodedRecord | None:
            rec = records.record(i)
            if rec is not None:
                holes.append(rec)
            return rec

        made: tuple[list[tuple[str, str, str, str] | DecodedRecord], int] | None = make(
            *records.wire_arguments(), key_side, value_side, hole
        )
        return None if made is None else (UserCells(name, made[0], holes), made[1])

    return cells


def _user_cells(rec: UserRecord, messages: _MessageTexts) -> tuple[str, str]:
    """The key and value cells of a user topic's record or tombstone: a mapped side's message
    JSON (the key's empty when the message has no field to show), a raw side's text (as a
    plain topic's: UTF-8, undecodable bytes replaced); a null value ``<tombstone>``."""
    key = ""
    if rec.key_mapped and isinstance(rec.key, KafkaMessage):
        key = messages.text(rec.key, rec.key_version)
        key = "" if key == "{}" else key
    elif not rec.key_mapped and rec.key_bytes is not None:
        key = rec.key_bytes.decode("utf-8", "replace")
    if rec.value_bytes is None:
        return key, "<tombstone>"
    if rec.value_mapped and rec.value is not None:
        return key, messages.text(rec.value, rec.value_version)
    return key, rec.value_bytes.decode("utf-8", "replace")


class _RecordCells:
    """The cells of the records table's rows, and the cells of a table that repeat."""

    def __init__(self) -> None:
        self.messages = _MessageTexts()
        self.keys: dict[bytes, str] = {}  # a coordinator record's key cell by its key bytes
        self.times: dict[int, str] = {}
        self.times_text: dict[str, str] = {}  # by the timestamp's text
        self.places: dict[RowSource | None, tuple[str, str]] = {None: ("", "")}

    def where(self, source: RowSource | None) -> tuple[str, str]:
        """The partition and file cells of a row from ``source``."""
        where = self.places.get(source)
        if where is None:
            assert source is not None
            where = self.places[source] = (source.label, os.path.basename(source.file))
        return where

    def user_rows(
        self, cells: UserCells, topic: str | None, where: tuple[str, str]
    ) -> Iterator[tuple[str, ...]]:
        """The rows of a user topic's batch made from its record bytes."""
        for made in cells.rows:
            if isinstance(made, DecodedRecord):  # a record the printer left
                yield self.row(made, topic, where)
                continue
            offset, timestamp, user_key, user_value = made
            yield (
                *where,
                offset,
                timestamp,
                self.user_time(timestamp),
                cells.name,
                user_key,
                user_value,
            )

    def user_time(self, timestamp: str) -> str:
        """The UTC time cell of a user topic's row, by its timestamp's text."""
        time = self.times_text.get(timestamp)
        if time is None:
            time = self.times_text[timestamp] = utc_text(int(timestamp))
        return time

    def row(self, rec: _Row, topic: str | None, where: tuple[str, str]) -> tuple[str, ...]:
        """The cells of one record or error."""
        if isinstance(rec, ValueError):  # a TxnIndexError
            return (*where, "", "", "", ERROR, "", f"at position {rec.position}: {rec}")
        if not isinstance(rec, DecodedRecord | SegmentError):  # an AbortedTxnEntry
            txn = rec.txn.to_json(0)
            return (
                *where,
                str(rec.txn.first_offset),
                "",
                "",
                rec.txn.SPEC_NAME,
                "",
                _json_text(txn),
            )
        if isinstance(rec, SegmentError):
            return (
                *where,
                "" if rec.base_offset is None else str(rec.base_offset),
                "",
                "",
                SEGMENT_ERROR,
                "",
                f"{rec.kind} at {rec.file}@{rec.position} ({rec.size} bytes): {rec.reason}",
            )
        time = self.times.get(rec.timestamp)
        if time is None:
            time = self.times[rec.timestamp] = utc_text(rec.timestamp)
        when = (str(rec.offset), str(rec.timestamp), time)
        if rec.of_user_topic and rec.kind in (RECORD, TOMBSTONE):
            return (
                *where,
                *when,
                rec.name or str(rec.record_type),
                *_user_cells(cast("UserRecord", rec), self.messages),
            )
        if (
            topic is not None and topic not in METADATA_TOPICS and plainly_keyed(rec)
        ):  # a coordinator topic's record, as its jsonl line has it (keys repeat: kept)
            key_bytes = rec.key_bytes or b""  # never None here (plainly_keyed)
            key_cell = self.keys.get(key_bytes)
            if key_cell is None:
                data = rec.key.to_json(0)  # type: ignore[union-attr]
                key_cell = self.keys[key_bytes] = _json_text(data) if data else ""
            value_cell = "<tombstone>" if rec.kind == TOMBSTONE else _json_text(value_json(rec))
            return (*where, *when, rec.name or str(rec.record_type), key_cell, value_cell)
        if topic is None and rec.kind == RECORD:
            return (
                *where,
                *when,
                RECORD,
                "" if rec.key_bytes is None else rec.key_bytes.decode("utf-8", "replace"),
                "<null>" if rec.value_bytes is None else rec.value_bytes.decode("utf-8", "replace"),
            )
        obj = record_to_json(rec, topic or "")
        key = obj.get("key", {}).get("data") if isinstance(obj.get("key"), dict) else ""
        value = obj.get("value")
        if rec.of_user_topic:  # an error: the text of its key
            key = obj.get("keyText")
        if rec.kind in (ERROR, UNKNOWN):
            value = f"{rec.kind}: {rec.error}"
        elif isinstance(value, dict) and "data" in value:
            value = value["data"]
        return (
            *where,
            *when,
            rec.name or str(rec.record_type),
            key if isinstance(key, str) else _json_text(key) if key else "",
            "<tombstone>"
            if value is None
            else value
            if isinstance(value, str)
            else _json_text(value),
        )


def _record_cells(rows: list[TableRow]) -> Iterator[tuple[str, ...]]:
    """The cells of :data:`_RECORD_COLUMNS` of each row (of each record of a batch's): the
    reference."""
    cells = _RecordCells()
    for rec, topic, source in rows:
        where = cells.where(source)
        if isinstance(rec, UserCells):  # a user topic's batch, from its record bytes
            yield from cells.user_rows(rec, topic, where)
        elif isinstance(rec, list):  # a batch's decoded records
            for one in rec:
                yield cells.row(one, topic, where)
        else:
            yield cells.row(rec, topic, where)


def _record_columns(rows: list[TableRow]) -> list[list[str]]:
    """The columns of :data:`_RECORD_COLUMNS`: :func:`_record_cells` by columns, a coordinator
    topic's batches made by the native printer (``record_cells`` of
    ``codegen/native/table_cells.h``) where it is built and asked for."""
    module = native_printer()
    if module is None:
        return [list(column) for column in zip(*_record_cells(rows), strict=True)] or [
            [] for _ in _RECORD_COLUMNS
        ]
    cells = _RecordCells()
    writer = module.Writer(
        DecodedRecord, RECORD, TOMBSTONE, (), None, value_plans, value_data_text, None
    )
    columns: list[list[str]] = [[] for _ in _RECORD_COLUMNS]
    appends = [column.append for column in columns]
    for rec, topic, source in rows:
        where = cells.where(source)
        if isinstance(rec, list) and topic is not None and topic not in METADATA_TOPICS:

            def row(
                one: DecodedRecord, topic: str = topic, where: tuple[str, str] = where
            ) -> tuple[str, ...]:
                return cells.row(one, topic, where)

            module.record_cells(
                writer, rec, *where, columns, cells.keys, cells.times, utc_text, row, "<tombstone>"
            )
            continue
        if isinstance(rec, UserCells) and not rec.holes:  # a column at a time
            _extend_user_columns(columns, rec, where, cells.user_time)
            continue
        made = (
            cells.user_rows(rec, topic, where)
            if isinstance(rec, UserCells)
            else (cells.row(one, topic, where) for one in rec)
            if isinstance(rec, list)
            else (cells.row(rec, topic, where),)
        )
        for cell_row in made:
            for append, cell in zip(appends, cell_row, strict=True):
                append(cell)
    return columns


def _extend_user_columns(
    columns: list[list[str]],
    cells: UserCells,
    where: tuple[str, str],
    user_time: Callable[[str], str],
) -> None:
    """:meth:`_RecordCells.user_rows` of a batch none of whose records was left, appended a
    column at a time."""
    rows = cast("list[tuple[str, str, str, str]]", cells.rows)
    n = len(rows)
    if not n:
        return
    offsets, timestamps, keys, values = zip(*rows, strict=True)
    columns[0].extend(repeat(where[0], n))
    columns[1].extend(repeat(where[1], n))
    columns[2].extend(offsets)
    columns[3].extend(timestamps)
    columns[4].extend(map(user_time, timestamps))
    columns[5].extend(repeat(cells.name, n))
    columns[6].extend(keys)
    columns[7].extend(values)


def _group_cells(groups: list[GroupState]) -> Iterator[tuple[str, ...]]:
    """The cells of :data:`_GROUP_COLUMNS`: a row per member, the group's own in the first."""
    for g in groups:
        gen = g.generation if g.generation is not None else g.epoch
        protocol = "/".join(p for p in (g.protocol_type, g.protocol) if p)
        members: list[GroupMember | None] = [*g.members.values()] or [None]
        for i, m in enumerate(members):
            head = (g.group, g.type, g.state, protocol, str(gen)) if i == 0 else ("",) * 5
            if m is None:
                yield (*head, "", "", "", "", "")
            else:
                assignment = ", ".join(
                    f"{tp}:{','.join(map(str, ps))}" for tp, ps in sorted(m.assignment.items())
                )
                yield (
                    *head,
                    m.member_id,
                    m.client_id,
                    m.client_host,
                    ",".join(m.assignors),
                    assignment,
                )


def compacted_tables(
    out: TextIO, offsets: list[dict[str, Any]], groups: list[GroupState], damage: Damage, topic: str
) -> None:
    """``--compacted`` of ``__consumer_offsets``: the committed offsets, the groups (a row per
    member), then the errors."""
    out.write(
        table_text(
            _OFFSET_COLUMNS,
            (
                (
                    o["group"],
                    o["topic"],
                    str(o["partition"]),
                    str(o["offset"]),
                    str(o["leaderEpoch"]),
                    o["metadata"],
                    str(o["commitTimestamp"]),
                    utc_text(o["commitTimestamp"]),
                )
                for o in offsets
            ),
            title="committed offsets",
        )
    )
    out.write(table_text(_GROUP_COLUMNS, _group_cells(groups), title="groups"))
    if damage:
        rows: list[TableRow] = [
            (i, topic, None) if isinstance(i, SegmentError) else (i[0], topic, None) for i in damage
        ]
        records_table(out, rows, title="errors")


def latest_tables(out: TextIO, rows: list[tuple[DecodedRecord, RowSource]], damage: Damage) -> None:
    """``--compacted`` of user topics: the last record of each live key, then the errors."""
    records_table(out, [(rec, source.topic, source) for rec, source in rows], "latest per key")
    if damage:
        errors: list[TableRow] = [
            (i, None, None) if isinstance(i, SegmentError) else (i[0], "", None) for i in damage
        ]
        records_table(out, errors, title="errors")
