"""``kafka-log``: a Spark Python data source reading Kafka log segments and KRaft snapshots.

``spark.read.format("kafka-log").load(path_or_paths)`` reads every ``*.log`` and ``*.checkpoint``
file below the given files or folders. A path may be a glob pattern, as with Spark's file
sources (``*``, ``?``, ``[abc]``, ``{a,b}``: ``.load("/data/*/__consumer_offsets-*")``); a
pattern that matches nothing is an error at ``load()``. Several paths: ``.load([a, b])`` or
``.option("paths", "a,b")`` (or a JSON array). Topic and partition come from the folder name
(``<topic>-<partition>``, as brokers lay them out); a ``.checkpoint`` outside such a folder is a
``__cluster_metadata`` snapshot. One input partition per file; a file larger than
``maxBytesPerPartition`` is split at batch boundaries (the driver reads only the 12-byte entry
headers to find them).

Columns (Spark's Kafka source names where they exist): ``topic, partition, offset, timestamp,
timestampType, key, value, headers, producerId, producerEpoch, sequence, isTransactional,
isControl, file, batchPosition, _error``. A batch that cannot be decoded (bad CRC, torn tail,
bad compression...) becomes one row with ``_error`` set (``kind: reason``), its base offset when
known, and null record fields: nothing is dropped silently.

Options (case-insensitive):

- ``decode``: ``true`` decodes the files of each internal topic with its own decoder and
  reads the other topics plain (their decoded columns are null), as ``dump --topic auto``
  does; on a broker folder ``decodedKey``/``decodedValue`` then hold one field per spec of
  every internal topic found. A family name (``consumer_offsets``, ``transaction_state``,
  ``share_group_state``, ``cluster_metadata``) decodes every file as that family. Adds the
  topic decoder's columns (``recordType``, ``decodedKey``, ...). Example:
  ``.option("decode", "true")``.
- ``package``: the generated codec package ``decode`` uses, a dotted module name importable on
  the driver and the executors (default ``generated``, the shipped codecs). A package generated
  from a newer Kafka release's specs decodes that release's new record types and versions.
  ``.option("package", "mycodecs")``
- ``mode``: ``FAILFAST`` (default) or ``PERMISSIVE`` for ``decode``.
  ``.option("mode", "permissive")``
- ``includeHeaders``: ``true`` (default) parses record headers; ``false`` takes the faster path
  that leaves ``headers`` null. ``.option("includeHeaders", "false")``
- ``maxBytesPerPartition``: split size in bytes, default 134217728 (128 MiB).
- ``verifyCrc``: ``true`` (default); ``false`` decodes batches whose CRC is wrong.
- ``topic`` / ``partition``: override what the folder name says.
- ``batchRows``: rows per Arrow batch yielded, default 10000.
"""

from __future__ import annotations

import glob
import json
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema

from codegen.dumps import RecordBatch, SegmentError, SegmentReader
from codegen.dumps.model import increment_sequence
from codegen.dumps.segments import SEGMENT_SUFFIXES
from spark_udfs.errors import MalformedKafkaRecordError
from spark_udfs.options import Mode
from spark_udfs.package import SHIPPED
from spark_udfs.topics import (
    TOPICS,
    decode_topic_arrays,
    family_of_topic,
    topics_arrow_type,
    widen_to,
)

__all__ = [
    "Decoding",
    "KafkaLogDataSource",
    "LogSlice",
    "expand_braces",
    "list_log_files",
    "plan_slices",
    "read_slice",
    "resolve_paths",
]

_TOPIC_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
_ENTRY = struct.Struct(">qi")
DEFAULT_SPLIT = 128 * 1024 * 1024

HEADER_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
RAW_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
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
        pa.field("file", pa.string()),
        pa.field("batchPosition", pa.int64()),
        pa.field("_error", pa.string()),
    ]
)


@dataclass(frozen=True, slots=True)
class LogSlice(InputPartition):
    """One input partition: ``[start, end)`` of a file, starting on an entry boundary."""

    path: str
    start: int
    end: int
    topic: str | None
    partition: int | None


_GLOB_CHARS = re.compile(r"[*?\[{]")


def expand_braces(pattern: str) -> list[str]:
    """Hadoop's ``{a,b}`` alternatives, which Python's ``glob`` lacks: ``x{1,2}`` -> x1, x2."""
    depth, start = 0, -1
    for i, ch in enumerate(pattern):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                head, tail = pattern[:start], pattern[i + 1 :]
                return [
                    expanded
                    for choice in _split_outside_braces(pattern[start + 1 : i])
                    for expanded in expand_braces(head + choice + tail)
                ]
    return [pattern]


def _split_outside_braces(text: str) -> list[str]:
    """``text`` cut at the commas that are not inside ``{...}``."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "{":
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def resolve_paths(paths: list[str]) -> list[Path]:
    """The files and folders ``paths`` name: each an existing path or a glob pattern (``*``,
    ``?``, ``[abc]``, ``{a,b}``, as Spark's file sources take them), matches in name order."""
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.exists():
            out.append(path)
        elif _GLOB_CHARS.search(p):
            matches = sorted({m for q in expand_braces(p) for m in glob.glob(q)})
            if not matches:
                raise FileNotFoundError(
                    f"kafka-log: the pattern {p} matches no file or folder; check it, or give "
                    "the folders themselves"
                )
            out.extend(Path(m) for m in matches)
        else:
            raise FileNotFoundError(f"kafka-log: no such file or folder: {p}")
    return out


def list_log_files(paths: list[str]) -> list[Path]:
    """Every segment and snapshot below ``paths`` (files, folders or glob patterns)."""
    out: list[Path] = []
    for path in resolve_paths(paths):
        if path.is_dir():
            found = [f for f in path.rglob("*") if f.suffix in SEGMENT_SUFFIXES]
            out.extend(sorted(f for f in found if f.is_file()))
        else:
            out.append(path)
    return out


def topic_of(path: Path, options: dict[str, str]) -> tuple[str | None, int | None]:
    topic: str | None = options.get("topic")
    part: int | None = int(options["partition"]) if "partition" in options else None
    m = _TOPIC_DIR.match(path.parent.name)
    if m:
        topic = topic or m.group("topic")
        part = int(m.group("partition")) if part is None else part
    elif path.suffix == ".checkpoint":
        topic, part = topic or "__cluster_metadata", 0 if part is None else part
    return topic, part


def plan_slices(path: Path, max_bytes: int, topic: str | None, part: int | None) -> list[LogSlice]:
    """Split a file at entry boundaries into slices of about ``max_bytes``."""
    size = path.stat().st_size
    if size <= max_bytes:
        return [LogSlice(str(path), 0, size, topic, part)]
    slices: list[LogSlice] = []
    start = pos = 0
    with open(path, "rb") as fh:
        while pos + 12 <= size:
            fh.seek(pos)
            head = fh.read(12)
            _, length = _ENTRY.unpack(head)
            if length < 14 or pos + 12 + length > size:
                break  # the rest is read (and reported) by the last slice
            pos += 12 + length
            if pos - start >= max_bytes:
                slices.append(LogSlice(str(path), start, pos, topic, part))
                start = pos
    if start < size:
        slices.append(LogSlice(str(path), start, size, topic, part))
    return slices


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
    ts_type = int(batch.timestamp_type) if int(batch.timestamp_type) >= 0 else None
    cols.batch.append(
        (
            ts_type,
            batch.producer_id,
            batch.producer_epoch,
            batch.is_transactional,
            batch.is_control,
            position,
            None,
        )
    )


def _error_row(cols: _Columns, err: SegmentError, position: int) -> None:
    cols.offset.append(err.base_offset if err.base_offset is not None else -1)
    cols.timestamp.append(-1)
    cols.key.append(None)
    cols.value.append(None)
    cols.headers.append(None)
    cols.sequence.append(None)
    cols.counts.append(1)
    cols.batch.append((None, None, None, None, None, position, f"{err.kind}: {err.reason}"))


def _record_batch(cols: _Columns, sl: LogSlice) -> pa.RecordBatch:
    n = len(cols)
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
        pa.repeat(pa.scalar(sl.topic, pa.string()), n),
        pa.array(
            np.full(n, sl.partition if sl.partition is not None else 0, np.int32),
            mask=np.full(n, sl.partition is None),
        ),
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
        pa.repeat(pa.scalar(sl.path, pa.string()), n),
        repeat(tuple(p + sl.start for p in per_batch[5]), pa.int64()),
        errors,
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=RAW_SCHEMA)


def read_slice(
    sl: LogSlice, *, with_headers: bool = True, verify_crc: bool = True, batch_rows: int = 10000
) -> Iterator[pa.RecordBatch]:
    """Raw rows of one slice as Arrow record batches (``RAW_SCHEMA``)."""
    with open(sl.path, "rb") as fh:
        fh.seek(sl.start)
        data = fh.read(sl.end - sl.start)
    reader = SegmentReader(data, name=sl.path, verify_crc=verify_crc)
    cols = _Columns()
    items: Iterator[Any] = iter(reader) if with_headers else reader.raw_batches()
    for item in items:
        if isinstance(item, SegmentError):
            _error_row(cols, item, item.position)
        elif with_headers:
            _batch_rows(cols, item, item.records, item.position, True)
        else:
            batch, rows = item
            _batch_rows(cols, batch, rows, batch.position, False)
        if len(cols) >= batch_rows:
            yield _record_batch(cols, sl)
            cols = _Columns()
    if len(cols):
        yield _record_batch(cols, sl)


def _decode_batch(
    rb: pa.RecordBatch,
    family: str | None,
    typ: pa.StructType,
    mode: Mode,
    package: str = SHIPPED,
) -> pa.RecordBatch:
    """``rb`` with the decoded columns of ``typ`` added; ``family`` None (a topic with no
    decoder) leaves them null."""
    permissive = mode == Mode.PERMISSIVE
    columns: dict[str, pa.Array] = {}
    if family is not None:
        key, value, control = rb.column("key"), rb.column("value"), rb.column("isControl")
        result = decode_topic_arrays(family, key, value, control, package)
        if result.errors and not permissive:
            i = min(result.errors)
            where = (
                f"topic {rb.column('topic')[i].as_py()}, "
                f"partition {rb.column('partition')[i].as_py()}, "
                f"offset {rb.column('offset')[i].as_py()}"
            )
            raise MalformedKafkaRecordError(where, result.errors[i])
        columns = dict(result.columns)
        if permissive:
            errs = np.full(rb.num_rows, None, dtype=object)
            for i, reason in result.errors.items():
                errs[i] = reason
            columns["_decode_error"] = pa.array(errs, pa.string())
    arrays = [*rb.columns, *widen_to(columns, typ, rb.num_rows)]
    names = [*rb.schema.names, *(f.name for f in typ)]
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _paths(options: dict[str, str]) -> list[str]:
    """``load(path)``, ``load([paths])`` (Spark passes a JSON array as ``paths``), or the
    ``paths`` option: a JSON array or paths separated by commas (not those inside ``{a,b}``)."""
    if "paths" in options:
        raw = options["paths"]
        paths = json.loads(raw) if raw.startswith("[") else _split_outside_braces(raw)
        return [str(p).strip() for p in paths if str(p).strip()]
    if "path" in options:
        return [options["path"]]
    raise ValueError("kafka-log: give a path: spark.read.format('kafka-log').load(path)")


@dataclass(frozen=True, slots=True)
class Decoding:
    """What ``decode`` asks for: one family for every file (``forced``), or each internal
    topic's own family (``decode=true``), other topics read plain."""

    families: tuple[str, ...]
    forced: str | None

    def family(self, topic: str | None) -> str | None:
        if self.forced is not None:
            return self.forced
        family = family_of_topic(topic)
        return family if family in self.families else None


def _decoding(topics: set[str | None], option: str, package: str = SHIPPED) -> Decoding:
    if option.lower() not in ("true", "auto"):
        if option not in TOPICS:
            raise ValueError(f"kafka-log: decode={option!r}: use true or one of {list(TOPICS)}")
        return Decoding((option,), option)
    present = {family_of_topic(t) for t in topics}
    families = tuple(f for f in TOPICS if f in present and TOPICS[f].has_specs(package))
    if not families:
        raise ValueError(
            "kafka-log: decode=true found no internal topic to decode (topics: "
            f"{sorted(map(str, topics))}); give folders of __consumer_offsets, "
            "__transaction_state, __share_group_state or __cluster_metadata, name the family "
            f"(decode=consumer_offsets, one of {list(TOPICS)}), or leave decode out"
        )
    return Decoding(families, None)


class KafkaLogReader(DataSourceReader):
    def __init__(self, options: dict[str, str], decoding: Decoding | None, mode: Mode) -> None:
        self.options = options
        self.decoding = decoding
        self.mode = mode

    def partitions(self) -> list[LogSlice]:
        max_bytes = int(self.options.get("maxbytesperpartition", DEFAULT_SPLIT))
        slices: list[LogSlice] = []
        for path in list_log_files(_paths(self.options)):
            topic, part = topic_of(path, self.options)
            slices.extend(plan_slices(path, max_bytes, topic, part))
        return slices

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, LogSlice)
        opts = self.options
        for rb in read_slice(
            partition,
            with_headers=opts.get("includeheaders", "true").lower() != "false",
            verify_crc=opts.get("verifycrc", "true").lower() != "false",
            batch_rows=int(opts.get("batchrows", 10000)),
        ):
            if self.decoding is None:
                yield rb
            else:
                package = opts.get("package", SHIPPED)
                permissive = self.mode == Mode.PERMISSIVE
                typ = topics_arrow_type(self.decoding.families, permissive, package)
                family = self.decoding.family(partition.topic)
                yield _decode_batch(rb, family, typ, self.mode, package)


class KafkaLogDataSource(DataSource):
    """``spark.read.format("kafka-log")``; see the module docstring for columns and options."""

    @classmethod
    def name(cls) -> str:
        return "kafka-log"

    def _opts(self) -> dict[str, str]:
        return {str(k).lower(): str(v) for k, v in dict(self.options).items()}

    def _decoding(self) -> Decoding | None:
        opts = self._opts()
        decode = opts.get("decode", "false")
        if decode.lower() == "false":
            return None
        files = list_log_files(_paths(opts))
        package = opts.get("package", SHIPPED)
        return _decoding({topic_of(f, opts)[0] for f in files}, decode, package)

    def schema(self) -> Any:
        resolve_paths(_paths(self._opts()))  # a missing path or empty pattern fails at load()
        fields = list(RAW_SCHEMA)
        decoding = self._decoding()
        if decoding is not None:
            mode = Mode.parse(self._opts().get("mode", "FAILFAST"))
            package = self._opts().get("package", SHIPPED)
            fields += list(topics_arrow_type(decoding.families, mode == Mode.PERMISSIVE, package))
        return from_arrow_schema(pa.schema(fields))

    def reader(self, schema: Any) -> KafkaLogReader:
        opts = self._opts()
        return KafkaLogReader(opts, self._decoding(), Mode.parse(opts.get("mode", "FAILFAST")))
