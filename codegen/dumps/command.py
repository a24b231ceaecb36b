"""``python -m codegen dump``: decode internal-topic segments and snapshots."""

from __future__ import annotations

import base64
import importlib
import json
import os
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

import click
import orjson

from codegen.dumps.batches import DEFAULT_MAX_BATCH_RECORDS, RECORD_BATCH_OVERHEAD
from codegen.dumps.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from codegen.dumps.coordinator import (
    CONSUMER_OFFSETS,
    SHARE_GROUP_STATE,
    TRANSACTION_STATE,
    coordinator_decoder,
    decode_batches,
)
from codegen.dumps.decoded import (
    ERROR,
    KIND_CONTROL,
    RECORD,
    TOMBSTONE,
    UNKNOWN,
    DecodedBatch,
    DecodedRecord,
    EndTxnMarker,
    control_record,
)
from codegen.dumps.latest import LatestByKey
from codegen.dumps.metadata import CLUSTER_METADATA, decode_metadata_batches
from codegen.dumps.model import ErrorKind, RecordBatch, SegmentError
from codegen.dumps.packages import SHIPPED_PACKAGE, PackageError, package_messages
from codegen.dumps.segments import SegmentReader, segment_files
from codegen.dumps.text_table import table_text
from codegen.dumps.topic_map import TopicMap, TopicMapError, find_topic_map, load_topic_map
from codegen.dumps.user_topics import UserRecord, UserTopicDecoder, user_decoders
from codegen.extras import MissingExtraError
from codegen.text import plural

if TYPE_CHECKING:
    import pyarrow as pa

    from codegen.dumps.compacted import CompactedView, GroupMember, GroupState
    from codegen.dumps.dumplog_json import NonConsecutive
    from codegen.dumps.log_files import AbortedTxnEntry, TxnIndexError
    from codegen.views.offsets import CommittedOffsets

__all__ = [
    "EXIT_CLEAN",
    "EXIT_DAMAGE",
    "EXIT_USAGE",
    "PLAIN",
    "TOPIC_CHOICES",
    "RowSource",
    "batch_json_fields",
    "dump_command",
    "dump_log_run",
    "guess_topic",
    "plain_record_json",
    "record_to_json",
    "segment_error_to_json",
    "utc_text",
]

EXIT_CLEAN: Final = 0
"""Every entry read and every record decoded (unknown record types, skipped by design, too)."""
EXIT_DAMAGE: Final = 1
"""Something was reported as an error: a segment error or a record that did not decode."""
EXIT_USAGE: Final = 2
"""Bad options or paths (click's usage errors)."""

TOPIC_CHOICES: Final = {
    "offsets": CONSUMER_OFFSETS,
    "transactions": TRANSACTION_STATE,
    "share-state": SHARE_GROUP_STATE,
    "cluster-metadata": CLUSTER_METADATA,
}
PROGRESS_MIN_BYTES: Final = 32 << 20
"""Inputs at least this large get a progress bar (when stderr is a terminal)."""
STDERR_ERROR_LINES: Final = 100
"""Errors echoed one per line on stderr before the rest are only counted (all are in the
output)."""
PLAIN: Final = "plain"
"""``--topic`` of any topic but the internal ones: keys and values are printed as they are."""
DEFAULT_MAX_MESSAGE_SIZE: Final = 5 * 1024 * 1024
"""kafka-dump-log's ``--max-message-size`` default."""
TXN_INDEX: Final = ".txnindex"
"""Aborted-transaction indexes: read in every format, an entry a line or row."""
ABORTED_TXN: Final = "aborted-txn"
"""``kind`` of the output line of a ``.txnindex`` entry."""
SEGMENT_ERROR: Final = "segment-error"
"""``kind`` of the output line of a stretch of a file that could not be read."""


def guess_topic(path: Path) -> str | None:
    """The internal topic a segment path belongs to, from its folder or file name."""
    if path.name.endswith(".checkpoint"):
        return CLUSTER_METADATA
    for part in reversed(path.resolve().parts):
        for topic in TOPIC_CHOICES.values():
            if part == topic or part.startswith(topic + "-"):
                return topic
    return None


LOG_FOLDER_SUFFIXES: Final = (
    ".log",
    ".checkpoint",
    ".index",
    ".timeindex",
    ".txnindex",
    ".snapshot",
)
"""The files of a partition folder ``--format dump-log`` reads (Kafka's tool reads these kinds)."""


def _partition_folders(log_dir: Path) -> list[tuple[str, int, Path]]:
    """(topic, partition, folder) of the partition folders (``<topic>-<n>``) of a broker's log
    folder, by topic and partition number."""
    found: list[tuple[str, int, Path]] = []
    for sub in log_dir.iterdir():
        name, _, number = sub.name.rpartition("-")
        if sub.is_dir() and name and number.isdigit():
            found.append((name, int(number), sub))
    return sorted(found)


def _folder_files(folder: Path, every_kind: bool, txn_index: bool = False) -> list[Path]:
    if not every_kind:
        found = segment_files(folder)
        if txn_index:  # each after the segment it indexes (same base offset)
            found = sorted([*found, *folder.glob(f"*{TXN_INDEX}")], key=lambda f: f.name)
        return found
    return sorted(f for f in folder.iterdir() if f.is_file() and f.suffix in LOG_FOLDER_SUFFIXES)


def _files(
    paths: tuple[Path, ...], topic: str | None, every_kind: bool = False, txn_index: bool = False
) -> list[Path]:
    """The files to read: files as given; a partition folder's segments and snapshots (with
    ``txn_index``, its aborted-transaction indexes; with ``every_kind``, its index and
    producer-state files too); for a broker's log folder, also those of its partition folders
    (of ``topic`` only, when given)."""
    out: list[Path] = []
    for p in paths:
        if not p.is_dir():
            out.append(p)
            continue
        found = _folder_files(p, every_kind, txn_index)
        partitions = _partition_folders(p)
        if topic is not None and partitions:
            # a log folder's own files (bootstrap.checkpoint): only those of the topic asked for
            found = [f for f in found if guess_topic(f) == topic]
        for name, _, sub in partitions:
            if topic is None or name == topic:
                found.extend(_folder_files(sub, every_kind, txn_index))
        if not found:
            what = ", ".join(sorted(f.name for f in p.iterdir())[:5]) or "nothing"
            where = (
                f"and its partition folders ({', '.join(sub.name for _, _, sub in partitions[:3])}"
                f"{', ...' if len(partitions) > 3 else ''}) hold none"
                if partitions
                else "and no partition folders (such as __consumer_offsets-0 or orders-0)"
            )
            raise click.UsageError(
                f"{p} holds no .log or .checkpoint files {where}"
                + (f" of topic {topic}" if topic else "")
                + f"; it holds {what}. Pass a partition folder, a broker's log folder or "
                "segment files."
            )
        out.extend(found)
    return out


@dataclass(frozen=True, slots=True)
class BatchPlace:
    """Where a log batch is: what an error record's output line says of its batch."""

    file: str
    position: int


def record_to_json(
    rec: DecodedRecord, topic: str, batch: RecordBatch | BatchPlace | None = None
) -> dict[str, Any]:
    """One output line: the record's position, kind, type and Kafka's JSON key/value objects.

    An ``error`` record also says where its batch is (``file``, ``batchPosition``) when
    ``batch`` is given.
    """
    obj: dict[str, Any] = {
        "offset": rec.offset,
        "timestamp": rec.timestamp,
        "kind": rec.kind,
        "recordType": None if isinstance(rec, UserRecord) else rec.record_type,
        "recordName": rec.name,
    }
    if rec.kind == KIND_CONTROL:
        if isinstance(rec.value, EndTxnMarker):
            obj["value"] = {"coordinatorEpoch": rec.value.coordinator_epoch}
        elif rec.value is not None:
            obj["value"] = rec.value.to_json(getattr(rec.value, "version", 0))
        return obj
    if rec.kind != UNKNOWN:
        obj["valueVersion"] = rec.value_version if rec.value_version >= 0 else None
    if rec.kind in (ERROR, UNKNOWN):
        obj["error"] = rec.error
        obj["keyHex"] = None if rec.key_bytes is None else rec.key_bytes.hex()
        obj["valueHex"] = None if rec.value_bytes is None else rec.value_bytes.hex()
        if batch is not None and rec.kind == ERROR:
            obj["file"] = batch.file
            obj["batchPosition"] = batch.position
        return obj
    if isinstance(rec, UserRecord):
        from codegen.dumps.user_output import user_record_json

        return {**obj, **user_record_json(rec, plain_side_json)}
    from codegen.dumps.dumplog_json import record_json

    key, value = record_json(rec, topic)
    if key is not None:
        obj["key"] = key
    else:
        obj["frameVersion"] = getattr(rec.key, "frame_version", 1)
    obj["value"] = value
    if rec.newer_than_spec:
        obj["isNewerVersion"] = True
    if rec.note:
        obj["note"] = rec.note
    return obj


def segment_error_to_json(err: SegmentError) -> dict[str, Any]:
    """The output line of a segment error: where (file, byte position and size, the entry's
    base offset when it could be read), what kind of error and why."""
    return {
        "kind": SEGMENT_ERROR,
        "file": err.file,
        "position": err.position,
        "size": err.size,
        "baseOffset": err.base_offset,
        "errorKind": str(err.kind),
        "error": err.reason,
    }


@dataclass(slots=True)
class _Counts:
    """What was read, and the errors echoed on stderr as they are found."""

    quiet: bool
    files: int = 0
    batches: int = 0
    records: int = 0
    errors: int = 0
    unknown: int = 0
    newer: int = 0
    segment_errors: int = 0
    batch: RecordBatch | BatchPlace | None = None
    """The batch the records being counted belong to (for their error lines)."""

    @property
    def damaged(self) -> bool:
        return bool(self.errors or self.segment_errors)

    def echo(self, line: str) -> None:
        shown = self.errors + self.segment_errors
        if self.quiet or shown > STDERR_ERROR_LINES:
            return
        if shown == STDERR_ERROR_LINES:
            line += " (further errors are in the output only, not on stderr)"
        click.echo(line, err=True)

    def add(self, item: RecordBatch | SegmentError | DecodedRecord) -> None:
        if isinstance(item, DecodedRecord):
            if item.kind == ERROR:
                self.errors += 1
                where = "" if self.batch is None else f"{self.batch.file}@{self.batch.position}: "
                self.echo(f"record error: {where}offset {item.offset}: {item.error}")
            elif item.kind == UNKNOWN:
                self.unknown += 1
            if item.newer_than_spec:
                self.newer += 1
        elif isinstance(item, SegmentError):
            self.segment_errors += 1
            self.echo(f"segment error: {item}")
        else:
            self.batches += 1
            self.records += item.record_count  # the records read (the list may be emptied)
            self.batch = item
            if not item.crc_valid:  # only --format dump-log reads such batches
                self.segment_errors += 1
                self.echo(
                    f"segment error: {item.file}@{item.position}: {ErrorKind.CRC_MISMATCH} "
                    f"(base offset {item.base_offset}): batch printed with isvalid: false"
                )

    def add_records(self, records: list[DecodedRecord]) -> None:
        """:meth:`add` for the records that count (errors, unknown, newer than our specs)."""
        for rec in records:
            if rec.kind in _NOTED_KINDS or rec.newer_than_spec:
                self.add(rec)

    def summary(self) -> str:
        return (
            f"{plural(self.files, 'file')}, {plural(self.batches, 'batch')}, "
            f"{plural(self.records, 'record')}, {plural(self.errors, 'error')}, "
            f"{plural(self.unknown, 'unknown record')}, {self.newer} newer than our specs, "
            f"{plural(self.segment_errors, 'segment error')}"
        )


_NOTED_KINDS: Final = (ERROR, UNKNOWN)
"""The record kinds the summary counts (with the records newer than our specs)."""


def _batches(
    path: Path,
    topic: str,
    max_batch_size: int,
    max_batch_records: int,
    package: str,
    user: dict[str, UserTopicDecoder] | None = None,
) -> Iterator[DecodedBatch | SegmentError]:
    if user and topic in user:
        return user[topic].batches(
            path, max_batch_size=max_batch_size, max_batch_records=max_batch_records
        )
    if topic == CLUSTER_METADATA:
        return decode_metadata_batches(
            str(path),
            package=package,
            max_batch_size=max_batch_size,
            max_batch_records=max_batch_records,
        )
    return decode_batches(
        str(path),
        topic,
        package=package,
        max_batch_size=max_batch_size,
        max_batch_records=max_batch_records,
    )


def _progress(total: int) -> tuple[AbstractContextManager[Any], Callable[[int], None]]:
    if total < PROGRESS_MIN_BYTES or not sys.stderr.isatty():
        return nullcontext(), lambda n: None
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    progress = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=Console(file=sys.stderr),
        transient=True,
    )
    task = progress.add_task("decoding", total=total)
    # The bar moves by a 500th of the work at least: a call per log batch (tens of thousands
    # a second) cost a fifth of a command's time in a terminal.
    step = max(total // 500, 1)
    pending = 0

    def advance(n: int) -> None:
        nonlocal pending
        pending += n
        if pending >= step:
            progress.advance(task, pending)
            pending = 0

    return progress, advance


@dataclass(frozen=True, slots=True)
class RowSource:
    """Where the rows of one file come from: its topic, partition and path."""

    topic: str | None
    partition: int | None
    file: str

    @classmethod
    def of(cls, path: Path, topic: str | None) -> RowSource:
        """The topic (the decoder's, else the partition folder's) and partition of a file, from
        its folder name (``orders-3``); None where the name does not tell."""
        name, _, number = path.parent.name.rpartition("-")
        partition = int(number) if name and number.isdigit() else None
        return cls(topic or (name if partition is not None else None), partition, str(path))

    @property
    def label(self) -> str:
        if self.topic is None:
            return ""
        return self.topic if self.partition is None else f"{self.topic}-{self.partition}"

    def json_fields(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "file": self.file}


def batch_json_fields(batch: RecordBatch) -> dict[str, Any]:
    """The batch fields every jsonl record line carries (-1 and false for legacy entries)."""
    return {
        "producerId": batch.producer_id,
        "producerEpoch": batch.producer_epoch,
        "baseSequence": batch.base_sequence,
        "isTransactional": batch.is_transactional,
        "isControl": batch.is_control,
    }


def _json_bytes(obj: Any) -> bytes:
    """Compact JSON (UTF-8): orjson, or the standard encoder for what orjson refuses (strings
    with lone surrogates, integers past 64 bits)."""
    try:
        return orjson.dumps(obj)
    except TypeError:
        return _STDLIB_JSON(obj).encode("utf-8", "surrogatepass")


_STDLIB_JSON: Final = json.JSONEncoder(separators=(",", ":")).encode
_MIDDLES_SIZE: Final = 1 << 16
"""Line parts kept per file (internal topics repeat a key per group and partition)."""


def _plain_keyed(rec: DecodedRecord) -> bool:
    """A coordinator record (or tombstone) whose line is its key's part and its value's JSON:
    decoded at a version the specs know, nothing left over."""
    return (
        rec.kind in (RECORD, TOMBSTONE)
        and rec.key_bytes is not None
        and not rec.newer_than_spec
        and not rec.note
    )


class JsonlLines:
    """The jsonl lines of decoded records, a batch at a time (one ``bytes`` per batch).

    A record line is :func:`record_to_json` (:func:`plain_record_json` for an ordinary topic)
    followed by the fields of its file and batch. For the records of a coordinator topic that
    decoded plainly, the part of the line between the timestamp and the value's data (kind,
    type, name, version, key object) is serialised once per distinct key and version.

    :meth:`line` is the reference, one record at a time. With the native backend the records
    of a coordinator topic are printed by the native printer (``codegen/native/jsontext.c``,
    the plans of :mod:`codegen.dumps.json_text`), which prints what :meth:`line` prints and
    hands it every record it does not print itself.
    """

    def __init__(
        self, topic: str | None, file_fields: dict[str, Any], *, user_topic: bool = False
    ) -> None:
        self.topic = topic
        self.file_fields = file_fields
        self.user_topic = user_topic  # records decoded by a topic map (record_to_json each)
        self.middles: dict[tuple[bytes, str, int], bytes] = {}
        self.coordinator = topic is not None and topic != CLUSTER_METADATA and not user_topic
        self._batch: RecordBatch | None = None
        self._close = b""
        self._closes: dict[tuple[Any, ...], bytes] = {}
        self._writer = _native_writer(self) if self.coordinator else None

    def batch(
        self,
        batch: RecordBatch,
        records: list[DecodedRecord],
        noted: list[DecodedRecord] | None = None,
    ) -> bytes:
        """The lines of a batch's records. ``noted`` (when given) receives the records the
        summary counts (:meth:`_Counts.add_records`), found on the way."""
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
            close = b"," + _json_bytes({**self.file_fields, **fields})[1:] + b"\n"
            if len(self._closes) >= _MIDDLES_SIZE:
                self._closes.clear()
            self._closes[known] = close
        self._close = close
        if self._writer is not None:
            text: bytes = self._writer.batch(records, close, [] if noted is None else noted)
            return text
        if noted is not None:
            noted += [r for r in records if r.kind in _NOTED_KINDS or r.newer_than_spec]
        return b"".join([self.line(rec) for rec in records])

    def line(self, rec: DecodedRecord) -> bytes:
        """One record's line in the batch :meth:`batch` was last given (the reference)."""
        from codegen.dumps.dumplog_json import value_json

        kind = rec.kind
        close = self._close
        if self.coordinator and _plain_keyed(rec):
            start = f'{{"offset":{rec.offset},"timestamp":{rec.timestamp},'.encode()
            middle = self.middle(rec)
            if kind == RECORD:
                return start + middle + _json_bytes(value_json(rec)) + b"}" + close
            return start + middle + close
        if self.topic is None and kind == RECORD:
            obj = plain_record_json(rec.offset, rec.timestamp, rec.key_bytes, rec.value_bytes)
        else:
            assert self._batch is not None
            obj = record_to_json(rec, self.topic or "", self._batch)
        return _json_bytes(obj)[:-1] + close

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
        text = _json_bytes(fields)[1:-1]
        if rec.kind == TOMBSTONE:
            return text + b',"value":null'
        return text + b',"value":{"version":' + _json_bytes(str(rec.value_version)) + b',"data":'


def _native_writer(lines: JsonlLines) -> Any:
    """The native printer of a coordinator topic's lines, or None: not built, or the pure
    backend asked for (which keeps :meth:`JsonlLines.line`, the reference)."""
    from codegen.dumps.json_text import native_printer, value_plans

    module = native_printer()
    if module is None:
        return None
    return module.Writer(
        DecodedRecord,
        RECORD,
        TOMBSTONE,
        _NOTED_KINDS,
        lines.middle,
        value_plans,
        _value_text,
        lines.line,
    )


def _value_text(rec: DecodedRecord) -> bytes | None:
    """The JSON of a record's value data as the line prints it, or None where only the whole
    line's encoder says how (orjson refuses it)."""
    from codegen.dumps.dumplog_json import value_json

    try:
        return orjson.dumps(value_json(rec))
    except TypeError:
        return None


def utc_text(ms: int) -> str:
    """Epoch milliseconds as UTC ISO 8601 (``2023-05-14T01:25:34.529Z``); "" when negative (no
    timestamp) or out of range."""
    if ms < 0:
        return ""
    try:
        moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return ""
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


TableRow = tuple[
    "DecodedRecord | SegmentError | AbortedTxnEntry | TxnIndexError", str | None, RowSource | None
]
"""A row of the records table: the record or error, its decoder's topic (None: plain) and
where it comes from."""


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


def _table_records(out: TextIO, rows: list[TableRow], title: str | None = None) -> None:
    out.write(table_text(_RECORD_COLUMNS, _record_cells(rows), title=title))


def _record_cells(rows: list[TableRow]) -> Iterator[tuple[str, ...]]:
    """The cells of :data:`_RECORD_COLUMNS` of each row."""
    from codegen.dumps.dumplog_json import value_json

    keys: dict[bytes, str] = {}  # a table's cells that repeat
    times: dict[int, str] = {}
    places: dict[RowSource | None, tuple[str, str]] = {None: ("", "")}
    for rec, topic, source in rows:
        where = places.get(source)
        if where is None:
            assert source is not None
            where = places[source] = (source.label, os.path.basename(source.file))
        if isinstance(rec, ValueError):  # a TxnIndexError
            yield (*where, "", "", "", ERROR, "", f"at position {rec.position}: {rec}")
            continue
        if not isinstance(rec, DecodedRecord | SegmentError):  # an AbortedTxnEntry
            txn = rec.txn.to_json(0)
            yield (
                *where,
                str(rec.txn.first_offset),
                "",
                "",
                rec.txn.SPEC_NAME,
                "",
                _json_text(txn),
            )
            continue
        if isinstance(rec, SegmentError):
            yield (
                *where,
                "" if rec.base_offset is None else str(rec.base_offset),
                "",
                "",
                SEGMENT_ERROR,
                "",
                f"{rec.kind} at {rec.file}@{rec.position} ({rec.size} bytes): {rec.reason}",
            )
            continue
        time = times.get(rec.timestamp)
        if time is None:
            time = times[rec.timestamp] = utc_text(rec.timestamp)
        when = (str(rec.offset), str(rec.timestamp), time)
        if (
            topic not in (None, CLUSTER_METADATA)
            and not isinstance(rec, UserRecord)
            and _plain_keyed(rec)
        ):  # a coordinator topic's record, as its jsonl line has it (keys repeat: kept)
            key_bytes = rec.key_bytes or b""  # never None here (_plain_keyed)
            key_cell = keys.get(key_bytes)
            if key_cell is None:
                data = rec.key.to_json(0)  # type: ignore[union-attr]
                key_cell = keys[key_bytes] = _json_text(data) if data else ""
            value_cell = "<tombstone>" if rec.kind == TOMBSTONE else _json_text(value_json(rec))
            yield (*where, *when, rec.name or str(rec.record_type), key_cell, value_cell)
            continue
        if topic is None and rec.kind == RECORD:
            yield (
                *where,
                *when,
                RECORD,
                "" if rec.key_bytes is None else rec.key_bytes.decode("utf-8", "replace"),
                "<null>" if rec.value_bytes is None else rec.value_bytes.decode("utf-8", "replace"),
            )
            continue
        obj = record_to_json(rec, topic or "")
        key = obj.get("key", {}).get("data") if isinstance(obj.get("key"), dict) else ""
        value = obj.get("value")
        if isinstance(rec, UserRecord):  # the message JSON itself, or the text of a raw side
            key, value = obj.get("key", obj.get("keyText")), obj.get("value", obj.get("valueText"))
        if rec.kind in (ERROR, UNKNOWN):
            value = f"{rec.kind}: {rec.error}"
        elif isinstance(value, dict) and "data" in value:
            value = value["data"]
        yield (
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


def _json_text(obj: Any) -> str:
    return _json_bytes(obj).decode("utf-8", "surrogateescape")


_Damage = list[tuple[DecodedRecord, RecordBatch | BatchPlace] | SegmentError]
"""Segment errors and error records (with their batch), in file order."""


def _damage_json(
    item: tuple[DecodedRecord, RecordBatch | BatchPlace] | SegmentError,
    topic: str,
    file_fields: dict[str, Any] | None = None,
) -> str:
    if isinstance(item, SegmentError):
        obj = segment_error_to_json(item)
    else:
        obj = record_to_json(item[0], topic, item[1])
    if file_fields is not None:
        obj = {**obj, **{k: v for k, v in file_fields.items() if k not in obj}}
    return json.dumps(obj, separators=(",", ":")) + "\n"


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


def _print_compacted(
    out: TextIO, view: CompactedView, offset_table: pa.Table, fmt: str, damage: _Damage, topic: str
) -> None:
    """The committed offsets (``codegen.views.offsets.OFFSET_SCHEMA`` rows) and the groups."""
    offsets = offset_table.to_pylist()
    groups = view.group_rows(offset_table.column("group").unique().to_pylist())
    if fmt == "jsonl":
        for item in damage:
            out.write(_damage_json(item, topic))
        lines = [_json_bytes({"view": "offset", **o}) for o in offsets]
        for g in groups:
            row = _asdict(g)
            row["members"] = [_asdict(m) for m in g.members.values()]
            lines.append(_json_bytes({"view": "group", **row}))
        if lines:
            out.write(b"\n".join(lines).decode() + "\n")
        return
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
        _table_records(out, rows, title="errors")


def _print_latest(out: TextIO, view: LatestByKey, fmt: str, damage: _Damage) -> None:
    """``--compacted`` of user topics: the errors, then the last record of each live key."""
    rows = view.rows()
    if fmt == "jsonl":
        for item in damage:
            out.write(_damage_json(item, ""))
        for rec, source in rows:
            obj = {**record_to_json(rec, source.topic or ""), **source.json_fields()}
            out.write(json.dumps(obj, separators=(",", ":")) + "\n")
        return
    _table_records(out, [(rec, source.topic, source) for rec, source in rows], "latest per key")
    if damage:
        errors: list[TableRow] = [
            (i, None, None) if isinstance(i, SegmentError) else (i[0], "", None) for i in damage
        ]
        _table_records(out, errors, title="errors")


def json_key(attribute: str) -> str:
    """The output name of a Python attribute: ``leader_epoch`` -> ``leaderEpoch`` (Kafka's JSON
    style, the names the Spark columns have; docs/naming.md)."""
    head, *rest = attribute.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _asdict(obj: Any) -> dict[str, Any]:
    return {json_key(name): getattr(obj, name) for name in obj.__slots__ if name != "members"}


@click.command(name="dump")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--topic",
    type=click.Choice([*TOPIC_CHOICES, PLAIN, "auto"]),
    default="auto",
    show_default=True,
    help="Internal topic the files belong to, or plain for any other topic (keys and values "
    "as they are); auto tells internal topics by their folder or file name, decodes the "
    "topics the topic map (--topics) names and reads the others plain.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "table", "dump-log"]),
    default="jsonl",
    show_default=True,
    help="One JSON object per line, a table, or kafka-dump-log's own text.",
)
@click.option(
    "--compacted",
    is_flag=True,
    help="Print the latest state instead of every record: committed offsets and groups "
    "(__consumer_offsets only).",
)
@click.option(
    "--max-batch-bytes",
    type=click.IntRange(min=RECORD_BATCH_OVERHEAD),
    default=DEFAULT_MAX_DECOMPRESSED_SIZE,
    show_default=True,
    help="Largest batch read, as stored and decompressed; a larger one is a too-large error.",
)
@click.option(
    "--max-batch-records",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_BATCH_RECORDS,
    show_default=True,
    help="Most records a batch may hold; a batch claiming more is a too-many-records error "
    "(found before it is decompressed).",
)
@click.option(
    "--max-bytes",
    type=click.IntRange(min=0),
    default=None,
    help="--format dump-log: read only the batches within the first N bytes of each file "
    "(kafka-dump-log's --max-bytes).",
)
@click.option(
    "--skip-record-metadata",
    is_flag=True,
    help="--format dump-log: print only the keys and values of records, not their offsets, "
    "sizes and control records (kafka-dump-log's option).",
)
@click.option(
    "--verify-index-only",
    is_flag=True,
    help="--format dump-log: check .index and .timeindex files against their segment "
    "without printing their entries (kafka-dump-log's option).",
)
@click.option(
    "--index-sanity-check",
    is_flag=True,
    help="--format dump-log: only run the broker's start-up sanity check of .index and "
    ".timeindex files (kafka-dump-log's option).",
)
@click.option(
    "--max-message-size",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_MESSAGE_SIZE,
    show_default=True,
    help="--format dump-log: bytes read at each .index entry (kafka-dump-log's option).",
)
@click.option(
    "--package",
    "package",
    metavar="NAME",
    help="Decode with this importable generated package (dotted name) instead of the shipped "
    "codecs, e.g. one generated from the specs of the Kafka release that wrote the files.",
)
@click.option(
    "--specs",
    "specs",
    type=click.Path(exists=True, path_type=Path),
    multiple=True,
    help="Spec file or folder (repeatable): generate codecs from these specs into a temporary "
    "folder, removed at the end, and decode with them (needs the generator extra). Keep the "
    "specs in folders named as Kafka's (consumer_offsets, transaction_state, "
    "share_group_state, cluster_metadata): the folder says which topic a record type is of.",
)
@click.option(
    "--topics",
    "topics_file",
    metavar="FILE",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Topic map: which message the keys and values of your own topics hold and how their "
    "version is known (a TOML file, or a pyproject.toml with [tool.kafka-specgen.topics]; "
    "docs/dumps.md). Default: the current folder's pyproject.toml when it has that table. "
    "Records of the topics it names are decoded in every format.",
)
@click.option(
    "--quiet", "-q", is_flag=True, help="Print neither the errors nor the summary on stderr."
)
def dump_command(
    paths: tuple[Path, ...],
    topic: str,
    fmt: str,
    compacted: bool,
    max_batch_bytes: int,
    max_batch_records: int,
    max_bytes: int | None,
    skip_record_metadata: bool,
    verify_index_only: bool,
    index_sanity_check: bool,
    max_message_size: int,
    package: str | None,
    specs: tuple[Path, ...],
    topics_file: Path | None,
    quiet: bool,
) -> None:
    """Decode __consumer_offsets, __transaction_state, __share_group_state and
    __cluster_metadata segments (.log) and KRaft snapshots (.checkpoint); read any other
    topic's segments plain, or as the topic map (--topics) says.

    PATH is a segment file, a snapshot, a partition folder (its .log and .checkpoint files
    are read in name order), or a broker's log folder (its partition folders, of --topic only
    when given). Each record of an internal topic becomes one JSON line holding the same key and
    value JSON kafka-dump-log prints with its --offsets-decoder, --transaction-log-decoder,
    --share-group-state-decoder and --cluster-metadata-decoder; a record of any other topic
    has its key and value as base64 and, when valid UTF-8, as text. --format dump-log prints
    what kafka-dump-log --deep-iteration --print-data-log prints, for the index and
    producer-state files of a folder too. A .txnindex file given by name is read in every
    format, an entry per line or row (Kafka 4.4.0's AbortedTxn). Each error is in the output
    too: a segment-error line (file, position, size, errorKind, error) for a stretch of a file
    that could not be read, an error line for a record that did not decode (a row of the
    table; kafka-dump-log's own lines with --format dump-log). The errors and a summary
    (records, errors, unknown records) go to stderr.

    \b
    Exit codes:
      0  clean: every entry read and every record decoded (records of unknown types, which
         KIP-915 readers skip by design, are counted but are not errors)
      1  damage: a segment error (corrupt or cut-short batch, zero padding, a batch over
         --max-batch-bytes or --max-batch-records) or a record that did not decode; with
         --format dump-log also where kafka-dump-log stops or reports an index mismatch
      2  usage error: bad options, a path that does not exist or cannot be read, a folder
         with nothing to read, an index or producer-state file other than .txnindex
         without --format dump-log

    \b
    Examples:
      python -m codegen dump /var/kafka/__consumer_offsets-0
      python -m codegen dump /var/kafka --topic transactions
      python -m codegen dump 00000000000000000000.log --topic offsets --format table
      python -m codegen dump /var/kafka/__consumer_offsets-* --compacted
      python -m codegen dump __cluster_metadata-0/00000000000000007259-0000000001.checkpoint
      python -m codegen dump /var/kafka/__consumer_offsets-0 --format dump-log
      python -m codegen dump /var/kafka/orders-0 --format dump-log --verify-index-only
      python -m codegen dump /var/kafka/__consumer_offsets-0 --package mycodecs
      python -m codegen dump /var/kafka/__consumer_offsets-0 --specs kafka-4.2/specs
      python -m codegen dump /var/kafka/sensors-0 --topics topics.toml --package myproject.kafka
      python -m codegen dump /var/kafka/sensors-0 --topics pyproject.toml --compacted
    """
    if package and specs:
        raise click.UsageError("give --package or --specs, not both")
    if compacted and fmt == "dump-log":
        raise click.UsageError(
            "--compacted prints the latest state as jsonl or a table; kafka-dump-log's text "
            "(--format dump-log) has every record: drop one of the two"
        )
    dump_log_only = {
        "--max-bytes": max_bytes is not None,
        "--skip-record-metadata": skip_record_metadata,
        "--verify-index-only": verify_index_only,
        "--index-sanity-check": index_sanity_check,
    }
    misplaced = [name for name, given in dump_log_only.items() if given]
    if misplaced and fmt != "dump-log":
        raise click.UsageError(f"{', '.join(misplaced)} only apply to --format dump-log")
    chosen = None if topic in ("auto", PLAIN) else TOPIC_CHOICES[topic]
    # --compacted on a broker's log folder: its __consumer_offsets partitions
    listed = CONSUMER_OFFSETS if compacted and topic == "auto" else chosen
    files = _files(paths, listed, every_kind=fmt == "dump-log", txn_index=not compacted)
    if fmt != "dump-log":
        index_files = [
            f for f in files if f.suffix in LOG_FOLDER_SUFFIXES[2:] and f.suffix != TXN_INDEX
        ]
        if index_files:
            raise click.UsageError(
                f"{index_files[0]} is an index or producer-state file, not a segment: pass "
                "--format dump-log to print it as kafka-dump-log does (.txnindex files are read "
                "in every format)"
            )
    topics: list[tuple[Path, str | None]] = []
    for f in files:
        topics.append((f, None if topic == PLAIN else chosen or guess_topic(f)))
    counts = _Counts(quiet)
    try:
        with _codecs(package, specs) as codecs:
            user, topics = _user_topics(topics_file, codecs, topics, topic == "auto")
            if (
                compacted
                and any(t != CONSUMER_OFFSETS for _, t in topics)
                and not (user and all(t in user for _, t in topics))
            ):
                raise click.UsageError(
                    "--compacted works on __consumer_offsets files, or on files of topics the "
                    "topic map names (not both at once); pass __consumer_offsets partition "
                    "folders or segments, a broker's log folder, or your topics' folders"
                )
            if fmt == "dump-log":
                aborted = dump_log_run(
                    [f for f, _ in topics],
                    [t for _, t in topics],
                    skip_record_metadata=skip_record_metadata,
                    max_bytes=max_bytes,
                    verify_index_only=verify_index_only,
                    index_sanity_check=index_sanity_check,
                    max_message_size=max_message_size,
                    max_batch_size=max_batch_bytes,
                    max_batch_records=max_batch_records,
                    counts=counts,
                    package=codecs,
                    user=user,
                )
                if aborted:
                    counts.errors += 1
            else:
                _decode(
                    topics, counts, fmt, compacted, max_batch_bytes, max_batch_records, codecs, user
                )
    except OSError as exc:
        raise click.UsageError(f"cannot read {exc.filename or 'the input'}: {exc}") from None
    if not quiet:
        click.echo(counts.summary(), err=True)
    if counts.damaged:
        raise SystemExit(EXIT_DAMAGE)


def _user_topics(
    path: Path | None,
    package: str,
    topics: list[tuple[Path, str | None]],
    auto: bool,
) -> tuple[dict[str, UserTopicDecoder], list[tuple[Path, str | None]]]:
    """The decoders of the user topics among ``topics`` (the map of ``--topics``, else of the
    current folder's pyproject.toml, its messages in ``package`` unless the map names its own),
    and ``topics`` with theirs named (with ``--topic auto``: files of other topics stay plain)."""
    try:
        topic_map: TopicMap | None = (
            load_topic_map(path, package) if path is not None else find_topic_map(".", package)
        )
        if topic_map is None or not auto:
            return {}, topics
        named = [(f, RowSource.of(f, None).topic if t is None else None) for f, t in topics]
        user = user_decoders(topic_map, [t for _, t in named])
    except TopicMapError as exc:
        raise click.BadParameter(str(exc), param_hint="--topics") from None
    return user, [(f, n if n in user else t) for (f, t), (_, n) in zip(topics, named, strict=True)]


@contextmanager
def _codecs(package: str | None, specs: tuple[Path, ...]) -> Iterator[str]:
    """The name of the package to decode with: ``--package``, the shipped one, or a package
    generated from ``--specs`` into a temporary folder (importable while the command runs)."""
    if not specs:
        name = package or SHIPPED_PACKAGE
        try:
            package_messages(name)
        except PackageError as exc:
            raise click.BadParameter(str(exc), param_hint="--package") from None
        yield name
        return
    try:
        from codegen.emit import write_package
        from codegen.errors import NoSpecsError, SpecErrors
    except MissingExtraError as exc:
        raise click.UsageError(exc.text("dump --specs")) from None
    name = f"kafka_specgen_dump_{uuid.uuid4().hex[:12]}"
    with tempfile.TemporaryDirectory(prefix="kafka-specgen-dump-") as tmp:
        try:
            write_package(list(specs), Path(tmp) / name)
        except SpecErrors as exc:
            problems = "\n".join(str(p) for p in exc.problems)
            raise click.UsageError(
                f"--specs: {plural(len(exc.problems), 'problem')}:\n{problems}"
            ) from None
        except NoSpecsError as exc:
            raise click.BadParameter(str(exc), param_hint="--specs") from None
        sys.path.insert(0, tmp)
        try:
            importlib.import_module(name)
            yield name
        finally:
            sys.path.remove(tmp)
            for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
                del sys.modules[mod]


def dump_log_run(
    files: Sequence[Path],
    topics: Sequence[str | None],
    *,
    skip_record_metadata: bool = False,
    max_bytes: int | None = None,
    verify_index_only: bool = False,
    index_sanity_check: bool = False,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    max_batch_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS,
    counts: _Counts | None = None,
    package: str = SHIPPED_PACKAGE,
    user: dict[str, UserTopicDecoder] | None = None,
) -> bool:
    """Print what ``kafka-dump-log --files F1,F2,.. --deep-iteration --print-data-log`` (with
    the decoder of each file's topic, None for none) prints: stdout to stdout, its notes and
    the closing blocks (non-consecutive offsets, index mismatches) to stderr.

    ``package`` is the generated package whose classes decode the records; ``user`` the
    decoders of the user topics among ``topics`` (their payloads are the decoded JSON). Returns
    True when Kafka's tool would have stopped with an error (a record its decoder cannot take);
    the message is then on stderr and the rest is not printed, as in Kafka.
    """
    from codegen.dumps.dumplog_json import (
        DumpLogAborted,
        dump_log_line_groups,
        non_consecutive_lines,
    )
    from codegen.dumps.log_files import IndexReport, LogFileError, dump_index_file

    out, err = sys.stdout.write, sys.stderr.write
    gaps: NonConsecutive = {}
    report = IndexReport()
    observe = None if counts is None else counts.add
    for f, t in zip(files, topics, strict=True):
        if counts is not None:
            counts.files += 1
        if f.suffix not in (".log", ".checkpoint"):
            out(f"Dumping {f}\n")
            if f.suffix in LOG_FOLDER_SUFFIXES:
                try:
                    for line in dump_index_file(
                        f,
                        report,
                        verify_only=verify_index_only,
                        sanity_only=index_sanity_check,
                        max_message_size=max_message_size,
                    ):
                        out(line + "\n")
                except LogFileError as exc:
                    err(f"{exc}\n")
                    if counts is not None:
                        counts.errors += 1
                    if exc.fatal:
                        return True
            else:
                err(f"Ignoring unknown file {f}\n")
            continue
        groups = dump_log_line_groups(
            str(f),
            t,
            skip_record_metadata=skip_record_metadata,
            max_bytes=max_bytes,
            max_batch_size=max_batch_size,
            max_batch_records=max_batch_records,
            observe=observe,
            non_consecutive=gaps,
            package=package,
            record_decoder=None if not user or t not in user else user[t].decode_record,
        )
        # One write per log batch; the last lines wait, as Kafka may stop in the middle of one.
        pending: list[str] = []
        try:
            for group in groups:
                if pending:
                    out("\n".join(pending) + "\n")
                pending = group
        except DumpLogAborted as exc:
            if pending:
                out("\n".join(pending) + ("" if exc.unfinished else "\n"))
            sys.stdout.flush()
            err(f"{exc}\n")
            return True
        if pending:
            out("\n".join(pending) + "\n")
    if counts is not None:
        counts.errors += report.problems
    for line in report.lines():
        err(line + "\n")
    for line in non_consecutive_lines(gaps):
        err(line + "\n")
    return False


def plain_record_json(
    offset: int, timestamp: int, key: bytes | None, value: bytes | None
) -> dict[str, Any]:
    """One output line of a record of an ordinary topic: key and value as base64, and as text
    when they are valid UTF-8 (``keyText``/``valueText`` are absent otherwise)."""
    obj: dict[str, Any] = {"offset": offset, "timestamp": timestamp, "kind": RECORD}
    for name, data in (("key", key), ("value", value)):
        obj.update(plain_side_json(name, data))
    return obj


def plain_side_json(name: str, data: bytes | None) -> dict[str, Any]:
    """``<name>Base64`` (null for null bytes) and, for valid UTF-8, ``<name>Text``."""
    if data is None:
        return {f"{name}Base64": None}
    obj = {f"{name}Base64": base64.b64encode(data).decode("ascii")}
    with suppress(UnicodeDecodeError):
        obj[f"{name}Text"] = data.decode("utf-8")
    return obj


_PlainItem = tuple[DecodedBatch | SegmentError, str | None]


def _plain_batches(
    path: Path, max_batch_size: int, max_batch_records: int
) -> Iterator[DecodedBatch | SegmentError]:
    """The batches of an ordinary topic's segment: data records kept as raw rows (in a
    DecodedRecord's byte fields), control records decoded."""
    reader = SegmentReader(
        str(path), max_batch_size=max_batch_size, max_batch_records=max_batch_records
    )
    for item in reader.raw_batches():
        if isinstance(item, SegmentError):
            yield item
            continue
        batch, rows = item
        if batch.is_control:
            records = [control_record(row) for row in rows]
        else:
            records = [
                DecodedRecord(o, ts, RECORD, -1, "", None, None, -1, k, v) for o, ts, k, v in rows
            ]
        yield DecodedBatch(batch, records)


_WRITE_SIZE: Final = 1 << 20
"""Bytes :class:`_ByteOutput` gathers before it writes."""


class _ByteOutput:
    """UTF-8 bytes to ``out``: to its binary buffer when it has one (a file, a pipe), else as
    text. Gathered into writes of about :data:`_WRITE_SIZE` (a batch's lines, some 10 kB,
    pass the buffer's 8 kB and would each be a system call), except to a terminal, where
    lines show as they come. A ``with`` block writes what is gathered as it ends, error or
    not."""

    def __init__(self, out: TextIO) -> None:
        buffer = getattr(out, "buffer", None)
        if buffer is None:
            self._write: Callable[[bytes], Any] = lambda data: out.write(data.decode())
        else:
            out.flush()
            self._write = buffer.write
        self._gather = buffer is not None and not out.isatty()
        self._parts: list[bytes] = []
        self._size = 0

    def write(self, data: bytes) -> None:
        if not self._gather:
            self._write(data)
            return
        self._parts.append(data)
        self._size += len(data)
        if self._size >= _WRITE_SIZE:
            self.flush()

    def flush(self) -> None:
        if self._parts:
            data = b"".join(self._parts)
            self._parts, self._size = [], 0
            self._write(data)

    def __enter__(self) -> _ByteOutput:
        return self

    def __exit__(self, *exc: object) -> None:
        self.flush()


def _transaction_index(
    path: Path,
    source: RowSource,
    fmt: str,
    counts: _Counts,
    table_rows: list[TableRow],
    write: Callable[[bytes], Any],
) -> None:
    """The entries of a ``.txnindex``: a jsonl line or table row each, decoded by the generated
    ``AbortedTxn``; an entry of an unknown version or a torn tail is an error line (exit 1)."""
    from codegen.dumps.log_files import TxnIndexError, read_transaction_index

    fields = source.json_fields()
    try:
        for entry in read_transaction_index(path):
            counts.records += 1
            if fmt == "table":
                table_rows.append((entry, None, source))
            else:
                obj = {"kind": ABORTED_TXN, "recordName": "AbortedTxn", **entry.to_json()}
                write(_json_bytes({**obj, **fields}) + b"\n")
    except TxnIndexError as exc:
        counts.errors += 1
        counts.echo(f"transaction index error: {path}@{exc.position}: {exc}")
        error = {"kind": ERROR, "position": exc.position, "error": str(exc), **fields}
        if fmt == "table":
            table_rows.append((exc, None, source))
        else:
            write(_json_bytes(error) + b"\n")


def _compacted_columns(
    path: Path,
    view: CompactedView,
    offsets: CommittedOffsets,
    package: str,
    counts: _Counts,
    damage: _Damage,
    advance: Callable[[int], None],
    limits: tuple[int, int],
) -> None:
    """One ``__consumer_offsets`` file into the compacted view, from the engine's columns."""
    from codegen.views.consumer_offsets import read_compacted

    decoder = coordinator_decoder(CONSUMER_OFFSETS, package)
    name = str(path)
    done = 0
    for chunk in read_compacted(
        path,
        view,
        offsets,
        decoder,
        max_batch_size=limits[0],
        max_batch_records=limits[1],
    ):
        counts.batches += chunk.batches
        counts.records += chunk.records
        counts.unknown += chunk.unknown
        counts.newer += chunk.newer
        found: list[tuple[int, SegmentError | DecodedRecord]] = [
            (err.position, err) for err in chunk.segment_errors
        ]
        found += chunk.errors
        for position, item in sorted(found, key=lambda x: x[0]):  # in file order
            if isinstance(item, SegmentError):
                counts.add(item)
                damage.append(item)
            else:
                counts.batch = BatchPlace(name, position)
                counts.add(item)
                damage.append((item, counts.batch))
        advance(max(chunk.position - done, 0))
        done = max(done, chunk.position)
    advance(max(os.path.getsize(path) - done, 0))


def _decode(
    topics: list[tuple[Path, str | None]],
    counts: _Counts,
    fmt: str,
    compacted: bool,
    max_batch_size: int,
    max_batch_records: int,
    package: str = SHIPPED_PACKAGE,
    user: dict[str, UserTopicDecoder] | None = None,
) -> None:
    from codegen.dumps.compacted import CompactedView

    out: TextIO = sys.stdout
    view = None
    offsets: CommittedOffsets | None = None
    if compacted:
        view = LatestByKey() if user and topics[0][1] in user else CompactedView()
        if not isinstance(view, LatestByKey):
            from codegen.views.offsets import CommittedOffsets

            offsets = CommittedOffsets()
    partition_folder: Path | None = None
    limits = (max_batch_size, max_batch_records)
    table_rows: list[TableRow] = []
    damage: _Damage = []  # the errors, for the compacted views
    total = sum(os.path.getsize(f) for f, _ in topics)
    bar, advance = _progress(total)
    output = _ByteOutput(out)
    write = output.write
    add = counts.add
    with output, bar:
        for f, t in topics:
            counts.files += 1
            source = RowSource.of(f, t)
            file_fields = source.json_fields()
            if f.suffix == TXN_INDEX:
                _transaction_index(f, source, fmt, counts, table_rows, write)
                advance(os.path.getsize(f))
                continue
            if isinstance(view, LatestByKey):
                view.where = source
            if offsets is not None and t == CONSUMER_OFFSETS:
                assert isinstance(view, CompactedView)
                if f.parent != partition_folder:
                    offsets.end_partition()
                    partition_folder = f.parent
                _compacted_columns(f, view, offsets, package, counts, damage, advance, limits)
                continue
            jsonl = JsonlLines(t, file_fields, user_topic=bool(user and t in user))
            batches = (
                _plain_batches(f, max_batch_size, max_batch_records)
                if t is None
                else _batches(f, t, max_batch_size, max_batch_records, package, user)
            )
            for item in batches:
                if isinstance(item, SegmentError):
                    add(item)
                    advance(item.size)
                    if view is not None:
                        damage.append(item)
                    elif fmt == "table":
                        table_rows.append((item, t, source))
                    else:
                        write(_damage_json(item, t or "", file_fields).encode())
                    continue
                advance(item.batch.size)
                add(item.batch)
                if view is None and fmt == "jsonl":
                    noted: list[DecodedRecord] = []
                    text = jsonl.batch(item.batch, item.records, noted)
                    if noted:
                        counts.add_records(noted)
                    write(text)
                    continue
                counts.add_records(item.records)
                if view is not None:
                    view.add_batch(item)
                    damage.extend((rec, item.batch) for rec in item.records if rec.kind == ERROR)
                elif fmt == "table":
                    table_rows.extend((rec, t, source) for rec in item.records)
                    if len(table_rows) >= TABLE_ROWS:  # a table at a time: memory stays flat
                        _table_records(out, table_rows)
                        table_rows = []
                else:
                    write(jsonl.batch(item.batch, item.records))
    if isinstance(view, LatestByKey):
        _print_latest(out, view, fmt, damage)
    elif view is not None:
        assert offsets is not None
        _print_compacted(out, view, offsets.table(), fmt, damage, topics[0][1] or CONSUMER_OFFSETS)
    elif fmt == "table":
        _table_records(out, table_rows)
