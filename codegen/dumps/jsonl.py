"""``dump --format jsonl``: a JSON object per line, those of :mod:`codegen.dumps.record_json`.

:class:`JsonlLines` writes a batch's record lines at a time; the other functions write the
lines of errors, ``.txnindex`` entries and the ``--compacted`` views.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from itertools import groupby
from typing import TYPE_CHECKING, Any, Final, TextIO, TypeGuard

import orjson

from codegen.dumps.decoded import ERROR, RECORD, TOMBSTONE, UNKNOWN, DecodedRecord
from codegen.dumps.json_text import native_printer, value_plans, wire_sides
from codegen.dumps.log_dirs import RowSource
from codegen.dumps.metadata import METADATA_TOPICS
from codegen.dumps.model import RecordBatch, SegmentError
from codegen.dumps.record_json import (
    ABORTED_TXN,
    BatchPlace,
    Damage,
    batch_json_fields,
    compact_json,
    plain_record_json,
    plainly_keyed,
    record_to_json,
    segment_error_to_json,
    value_json,
)
from codegen.naming import camel_case

if TYPE_CHECKING:
    import pyarrow as pa

    from codegen.dumps.log_files import AbortedTxnEntry, TxnIndexError
    from codegen.dumps.user_topics import BatchBytes, UserTopicDecoder
    from codegen.dumps.views.compacted import GroupState

__all__ = [
    "NOTED_KINDS",
    "JsonlLines",
    "aborted_txn_line",
    "batch_bytes",
    "compacted_lines",
    "damage_line",
    "latest_lines",
    "transaction_index_error_line",
    "value_data_text",
]

NOTED_KINDS: Final = (ERROR, UNKNOWN)
"""The record kinds the summary counts (with the records newer than our specs)."""
_MIDDLES_SIZE: Final = 1 << 16
"""Line parts kept per file (internal topics repeat a key per group and partition)."""


class JsonlLines:
    """The jsonl lines of decoded records, a batch at a time (one ``bytes`` per batch).

    A record line is :func:`record_to_json` (:func:`plain_record_json` for an ordinary topic)
    followed by the fields of its file and batch. For the records of a coordinator topic that
    decoded plainly, the part of the line between the timestamp and the value's data (kind,
    type, name, version, key object) is serialised once per distinct key and version.

    :meth:`line` is the reference, one record at a time. With the native backend the records
    of a coordinator topic, and a user topic's (``UserRecord``, each line whole), are printed
    by the native printer (``codegen/native/jsontext.c``, the plans of
    :mod:`codegen.dumps.json_text`), which prints what :meth:`line` prints and hands it every
    record it does not print itself.
    """

    def __init__(
        self,
        topic: str | None,
        file_fields: dict[str, Any],
        *,
        user_topic: bool = False,
        decoder: UserTopicDecoder | None = None,
    ) -> None:
        self.topic = topic
        self.file_fields = file_fields
        self.user_topic = user_topic  # records decoded by a topic map (record_to_json each)
        self.middles: dict[tuple[bytes, str, int], bytes] = {}
        self.coordinator = topic is not None and topic not in METADATA_TOPICS and not user_topic
        self._batch: RecordBatch | None = None  # None: lines apart from their batches
        self._close = b""
        self._closes: dict[tuple[Any, ...], bytes] = {}
        self._writer = _native_writer(self) if self.coordinator or user_topic else None
        self._bytes_printer = None if decoder is None else _bytes_printer(decoder)
        self.newer_printed = 0
        """Records newer than the specs in the batches printed from their bytes (the summary
        counts them: those batches give no records to note)."""

    def batch(
        self,
        batch: RecordBatch,
        records: list[DecodedRecord],
        noted: list[DecodedRecord] | None = None,
    ) -> bytes:
        """The lines of a batch's records. ``noted`` (when given) receives the records the
        summary counts (``Counts.add_records`` of :mod:`codegen.dumps.run`), found on the
        way."""
        self._batch = batch
        known = (
            batch.producer_id,
            batch.producer_epoch,
            batch.base_sequence,
            batch.magic,
            batch.attributes,
        )
        close = self._closes.get(known)
        if close is None:  # the file's and batch's fields, the same for most batches
            fields = batch_json_fields(batch)
            close = b"," + compact_json({**self.file_fields, **fields})[1:] + b"\n"
            if len(self._closes) >= _MIDDLES_SIZE:
                self._closes.clear()
            self._closes[known] = close
        self._close = close
        if batch_bytes(records):
            printed: tuple[bytes, int] | None = (
                None
                if self._bytes_printer is None
                else self._bytes_printer(records, close, self._record_line(records, noted))
            )
            if printed is not None:
                self.newer_printed += printed[1]
                return printed[0]
            records = records.decoded()
        if self._writer is not None:
            text: bytes = self._writer.batch(records, close, [] if noted is None else noted)
            return text
        if noted is not None:
            noted += [r for r in records if r.kind in NOTED_KINDS or r.newer_than_spec]
        return b"".join([self.line(rec) for rec in records])

    def _record_line(
        self, records: BatchBytes, noted: list[DecodedRecord] | None
    ) -> Callable[[int], bytes | None]:
        """``line(i)``: the reference's line of record i of a batch printed from its bytes (one
        the printer does not print), noted as :meth:`batch` notes; None when the batch's
        records are not its count (the reference prints the whole batch then)."""

        def line(i: int) -> bytes | None:
            rec = records.record(i)
            if rec is None:
                return None
            if noted is not None and (rec.kind in NOTED_KINDS or rec.newer_than_spec):
                noted.append(rec)
            return self.line(rec)

        return line

    def view_lines(self, records: list[DecodedRecord]) -> bytes:
        """The lines of records shown apart from their batches (``--compacted`` of user
        topics): each record's fields and the file's, no batch fields."""
        self._batch = None
        self._close = b"," + compact_json(self.file_fields)[1:] + b"\n"
        if self._writer is not None:
            text: bytes = self._writer.batch(records, self._close, [])
            return text
        return b"".join([self.line(rec) for rec in records])

    def line(self, rec: DecodedRecord) -> bytes:
        """One record's line in the batch :meth:`batch` was last given (the reference)."""
        kind = rec.kind
        close = self._close
        if self.coordinator and plainly_keyed(rec):
            start = f'{{"offset":{rec.offset},"timestamp":{rec.timestamp},'.encode()
            middle = self.middle(rec)
            if kind == RECORD:
                return start + middle + compact_json(value_json(rec)) + b"}" + close
            return start + middle + close
        if self.topic is None and kind == RECORD:
            obj = plain_record_json(rec.offset, rec.timestamp, rec.key_bytes, rec.value_bytes)
        else:
            obj = record_to_json(rec, self.topic or "", self._batch)
        return compact_json(obj)[:-1] + close

    def middle(self, rec: DecodedRecord) -> bytes:
        """:meth:`_middle` of a record, kept per key, kind and value version."""
        known = (rec.key_bytes, rec.kind, rec.value_version)
        middle = self.middles.get(known)  # type: ignore[arg-type]
        if middle is None:
            middle = self._middle(rec)
            if len(self.middles) >= _MIDDLES_SIZE:
                self.middles.clear()
            self.middles[known] = middle  # type: ignore[index]
        return middle

    def _middle(self, rec: DecodedRecord) -> bytes:
        """``"kind":..,"key":{..},"value":`` and the value's opening up to its data (``null``
        for a tombstone): :func:`record_to_json`'s fields, in its order."""
        key = {"type": str(rec.record_type), "data": rec.key.to_json(0)}  # type: ignore[union-attr]
        fields = {
            "kind": rec.kind,
            "recordType": rec.record_type,
            "recordName": rec.name,
            "valueVersion": rec.value_version if rec.value_version >= 0 else None,
            "key": key,
        }
        text = compact_json(fields)[1:-1]
        if rec.kind == TOMBSTONE:
            return text + b',"value":null'
        return text + b',"value":{"version":' + compact_json(str(rec.value_version)) + b',"data":'


def _native_writer(lines: JsonlLines) -> Any:
    """The native printer of a coordinator or user topic's lines, or None: not built, or the
    pure backend asked for (which keeps :meth:`JsonlLines.line`, the reference)."""
    module = native_printer()
    if module is None:
        return None
    return module.Writer(
        DecodedRecord,
        RECORD,
        TOMBSTONE,
        NOTED_KINDS,
        lines.middle,
        value_plans,
        value_data_text,
        lines.line,
        _user_record() if lines.user_topic else None,
    )


def batch_bytes(records: list[DecodedRecord]) -> TypeGuard[BatchBytes]:
    """Whether a batch's records are a user topic's :class:`~codegen.dumps.user_topics
    .BatchBytes` (its record bytes): that module is imported for those only, so a dump of no
    user topic does not load it."""
    if type(records) is list:
        return False
    from codegen.dumps.user_topics import BatchBytes

    return isinstance(records, BatchBytes)


def _user_record() -> type[DecodedRecord]:
    """The class of a user topic's records, for the native writer of their lines."""
    from codegen.dumps.user_topics import UserRecord

    return UserRecord


def _bytes_printer(decoder: UserTopicDecoder) -> Any:
    """``printer(records, close, fallback) -> (text, newer) | None``: a user topic's lines of a
    :class:`BatchBytes` printed from the record bytes (``codegen/native/user_wire.h``), a
    record it does not print by ``fallback(i)`` (its newer records not counted in ``newer``),
    or None where the decoded records must be printed; None when the native printer is not
    built or the pure backend asked for."""
    module = native_printer()
    if module is None:
        return None
    key_side, value_side = wire_sides(decoder)
    heads = tuple(
        b","
        + compact_json({"kind": kind, "recordType": None, "recordName": decoder.name})[1:-1]
        + b',"valueVersion":'
        for kind in (RECORD, TOMBSTONE)
    )
    lines = module.user_lines

    def printer(
        records: BatchBytes, close: bytes, fallback: Callable[[int], bytes | None]
    ) -> tuple[bytes, int] | None:
        printed: tuple[bytes, int] | None = lines(
            *records.wire_arguments(), close, heads, key_side, value_side, fallback
        )
        return printed

    return printer


def value_data_text(rec: DecodedRecord) -> bytes | None:
    """The JSON of a record's value data as the line prints it, or None where only the whole
    line's encoder says how (orjson refuses it)."""
    try:
        return orjson.dumps(value_json(rec))
    except TypeError:
        return None


def damage_line(
    item: tuple[DecodedRecord, RecordBatch | BatchPlace] | SegmentError,
    topic: str,
    file_fields: dict[str, Any] | None = None,
) -> str:
    """The line of a segment error or of an error record (with its batch)."""
    if isinstance(item, SegmentError):
        obj = segment_error_to_json(item)
    else:
        obj = record_to_json(item[0], topic, item[1])
    if file_fields is not None:
        obj = {**obj, **{k: v for k, v in file_fields.items() if k not in obj}}
    return json.dumps(obj, separators=(",", ":")) + "\n"


def aborted_txn_line(entry: AbortedTxnEntry, file_fields: dict[str, Any]) -> bytes:
    """The line of a ``.txnindex`` entry (the generated ``AbortedTxn``'s JSON)."""
    obj = {"kind": ABORTED_TXN, "recordName": "AbortedTxn", **entry.to_json()}
    return compact_json({**obj, **file_fields}) + b"\n"


def transaction_index_error_line(exc: TxnIndexError, file_fields: dict[str, Any]) -> bytes:
    """The line of a ``.txnindex`` entry that cannot be read (an unknown version, a torn tail)."""
    error = {"kind": ERROR, "position": exc.position, "error": str(exc), **file_fields}
    return compact_json(error) + b"\n"


def _as_json(obj: Any) -> dict[str, Any]:
    """A view row's slots under their JSON names (``leader_epoch`` -> ``leaderEpoch``)."""
    return {key: getattr(obj, name) for name, key in _json_names(obj.__class__)}


@functools.cache
def _json_names(cls: Any) -> tuple[tuple[str, str], ...]:
    """A view row class's slots but ``members``, each with its JSON name: camel-cased once per
    class, not once per row."""
    return tuple((name, camel_case(name)) for name in cls.__slots__ if name != "members")


def offset_lines(offsets: pa.Table) -> bytes:
    """A ``"view": "offset"`` line per row of a table of committed offsets (``codegen.dumps
    .views.commit_rows.OFFSET_SCHEMA``), as :func:`compact_json` writes ``{"view": "offset",
    **row}``: made a column at a time (one join of Arrow's string kernels, the quotes of the
    strings in its constant parts), a row with a null or a control character (which JSON
    escapes otherwise) by :func:`compact_json` itself. The string columns are escaped and
    searched for control characters only where their bytes hold a quote, a backslash or a byte
    outside printable ASCII (committed offsets' groups, topics and metadata seldom do)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not offsets.num_rows:
        return b""
    parts: list[Any] = []
    odd: Any = None  # the rows compact_json writes
    constant = '{"view":"offset",'
    for i, name in enumerate(offsets.column_names):
        column = offsets.column(name)
        constant += ("" if i == 0 else ",") + orjson.dumps(name).decode() + ":"
        if pa.types.is_string(column.type):
            quoted, unprintable = _string_bytes(column)
            if quoted:
                column = pc.replace_substring(
                    pc.replace_substring(column, "\\", "\\\\"), '"', '\\"'
                )
            if unprintable:
                original = offsets.column(name)
                control = pc.match_substring_regex(original, "[[:cntrl:]]").fill_null(True)
                odd = control if odd is None else pc.or_(odd, control)
            parts.extend((pa.scalar(constant + '"', pa.string()), column))
            constant = '"'
        elif pa.types.is_integer(column.type):
            parts.extend((pa.scalar(constant, pa.string()), pc.cast(column, pa.string())))
            constant = ""
        else:
            raise TypeError(f"offset_lines: a column {name!r} of {column.type}")
    # typed scalars: a str's type is inferred by a conversion that imports dateutil
    end, separator = pa.scalar(constant + "}\n", pa.string()), pa.scalar("", pa.string())
    lines = pc.binary_join_element_wise(*parts, end, separator)
    odd = lines.is_null() if odd is None else pc.or_(odd, lines.is_null())
    if not pc.any(odd).as_py():
        return b"".join(_string_data(chunk) for chunk in lines.chunks)
    texts = lines.to_pylist()
    flagged = odd.to_pylist()
    rows = offsets.to_pylist()
    return "".join(
        compact_json({"view": "offset", **rows[i]}).decode() + "\n" if flagged[i] else text
        for i, text in enumerate(texts)
    ).encode()


def _string_bytes(column: pa.ChunkedArray) -> tuple[bool, bool]:
    """Whether a string column's bytes hold a quote or a backslash (JSON escapes them), and a
    byte outside printable ASCII (a control character, or a character that may be one)."""
    import numpy as np

    quoted = unprintable = False
    for chunk in column.chunks:
        if not len(chunk):
            continue
        ends = np.frombuffer(chunk.buffers()[1], np.int32, len(chunk) + 1, chunk.offset * 4)
        data = chunk.buffers()[2]
        if data is None or ends[-1] == ends[0]:
            continue
        values = np.frombuffer(data, np.uint8, ends[-1] - ends[0], ends[0])
        quoted = quoted or bool(((values == 0x22) | (values == 0x5C)).any())
        unprintable = unprintable or bool(((values < 0x20) | (values >= 0x7F)).any())
    return quoted, unprintable


def _string_data(chunk: pa.Array) -> bytes:
    """The bytes of a string array's values, one after the other."""
    import numpy as np

    offsets = np.frombuffer(chunk.buffers()[1], np.int32, len(chunk) + 1, chunk.offset * 4)
    data = chunk.buffers()[2]
    return b"" if data is None else data.to_pybytes()[offsets[0] : offsets[-1]]


def compacted_lines(
    out: TextIO, offsets: pa.Table, groups: list[GroupState], damage: Damage, topic: str
) -> None:
    """``--compacted`` of ``__consumer_offsets``: the errors, then a line per committed offset
    (``"view": "offset"``, :func:`offset_lines`) and per group (``"view": "group"``, its
    members in it)."""
    for item in damage:
        out.write(damage_line(item, topic))
    lines = [offset_lines(offsets)]
    for g in groups:
        row = _as_json(g)
        row["members"] = [_as_json(m) for m in g.members.values()]
        lines.append(compact_json({"view": "group", **row}) + b"\n")
    text = b"".join(lines)
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        out.write(text.decode())
    else:  # the bytes as they are, not decoded and encoded again
        out.flush()
        buffer.write(text)


def latest_lines(out: TextIO, rows: list[tuple[DecodedRecord, RowSource]], damage: Damage) -> None:
    """``--compacted`` of user topics: the errors, then the last record of each live key (the
    lines of :meth:`JsonlLines.view_lines`, a file's rows at a time)."""
    for item in damage:
        out.write(damage_line(item, ""))
    for source, group in groupby(rows, key=lambda row: row[1]):
        lines = JsonlLines(source.topic, source.json_fields(), user_topic=True)
        out.write(lines.view_lines([rec for rec, _ in group]).decode())
