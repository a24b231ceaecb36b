"""``kafka-log``: a Spark Python data source reading Kafka log segments and KRaft snapshots.

``spark.read.format("kafka-log").load(path_or_paths)`` reads every ``*.log`` and ``*.checkpoint``
file below the given files or folders. A path may be a glob pattern, as with Spark's file
sources (``*``, ``?``, ``[abc]``, ``{a,b}``: ``.load("/data/*/__consumer_offsets-*")``); a
pattern that matches nothing is an error at ``load()``. Several paths: ``.load([a, b])`` or
``.option("paths", "a,b")`` (or a JSON array). Topic and partition come from the folder name
(``<topic>-<partition>``, as brokers lay them out, or ``<topic>-<partition>-<topic id>`` in a
tiered topic's remote storage); a ``.checkpoint`` outside such a folder is a
``__cluster_metadata`` snapshot. Remote storage (Kafka's LocalTieredStorage layout) reads like
a log dir: one complete copy of each remote segment, and with the partition's local folder,
remote rows only below the next segment's base offset and the local log's start (each offset
once, as the broker serves them). Files are packed into input partitions as Spark's file sources
pack theirs: each at most ``maxBytesPerPartition``, a file counted ``openCostInBytes`` more than
its size, spread over at least ``minPartitions`` when there is enough to read; a file larger than
a partition is split at batch boundaries (the driver reads only the 12-byte entry headers to find
them). Rows come in file order.

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
  ``share_group_state``, ``cluster_metadata``, ``remote_log_metadata``) decodes every file as
  that family. Adds the
  topic decoder's columns (``recordType``, ``decodedKey``, ...). Example:
  ``.option("decode", "true")``.
- ``topics``: a topic map (docs/dumps.md, "Your own topics"): the path of a TOML file (or a
  ``pyproject.toml`` with ``[tool.kafka-specgen.topics]``), or the map's ``topics`` table as
  JSON (``{"sensors-*": {"value": {"message": "SensorReading", "version": "prefix"}}}``). The
  topics it names are decoded, with or without ``decode``, into the same columns, their
  messages added to ``decodedKey``/``decodedValue``. Its messages are those of the map's own
  ``package``, else of the ``package`` option.
- ``package``: the generated codec package ``decode`` uses, a dotted module name importable on
  the driver and the executors (default ``generated``, the shipped codecs). A package generated
  from a newer Kafka release's specs decodes that release's new record types and versions.
  ``.option("package", "mycodecs")``
- ``mode``: ``FAILFAST`` (default) or ``PERMISSIVE`` for ``decode``.
  ``.option("mode", "permissive")``
- ``includeHeaders``: ``true`` (default) parses record headers; ``false`` takes the faster path
  that leaves ``headers`` null. ``.option("includeHeaders", "false")``
- ``maxBytesPerPartition``: the most bytes an input partition reads, default 134217728
  (128 MiB, Spark's ``spark.sql.files.maxPartitionBytes``).
- ``openCostInBytes``: what opening a file costs, in bytes read, when files are packed into
  input partitions; default 4194304 (4 MiB, Spark's ``spark.sql.files.openCostInBytes``).
- ``minPartitions``: the input partitions a read is spread over at least (files are split for
  it down to ``openCostInBytes``); default: the cores of the machine that plans the read (the
  driver), which in local mode are the session's. On a cluster, give its cores:
  ``.option("minPartitions", spark.sparkContext.defaultParallelism)``.
- ``verifyCrc``: ``true`` (default); ``false`` decodes batches whose CRC is wrong.
- ``topic`` / ``partition``: override what the folder name says.
- ``batchRows``: rows per Arrow batch yielded, default 65536 (fewer, larger batches cost the
  Python worker less per record).
- ``recordTypes``: with ``decode``, the record names (``recordName`` values) to decode,
  separated by commas: ``decodedKey`` and ``decodedValue`` then hold only those specs, and the
  other records keep their raw columns, ``recordType`` and ``recordName`` with the rest of the
  decoded columns null, as for a record type the specs do not know. A narrower schema is less
  for Spark to take in. ``.option("recordTypes", "OffsetCommit")``
- ``columns``: the columns to return, separated by commas (the others are not built or sent to
  Spark, which cannot prune a Python source's columns itself); ``_error`` (and
  ``_decode_error`` in PERMISSIVE) always come along, so no damage goes unseen. Columns keep
  the source's order. ``.option("columns", "partition,offset,decodedValue")``
- ``pushFilters``: ``true`` takes the query's filters on ``topic``, ``partition``, ``offset``,
  ``timestamp``, ``isControl`` and, with ``decode``, ``recordName``, and skips the files,
  segments, batches and records they rule out (:mod:`spark_udfs.pushdown`); ``false`` leaves
  every filter to Spark; ``auto`` (default) is ``true`` where each scan of a loaded DataFrame
  plans its own read (Spark 5.0, SPARK-58551) and ``false`` on a classic Spark 4.3 session,
  which shares one read plan between every scan of a loaded DataFrame, within a query and
  across queries: there a DataFrame read with ``pushFilters=true`` must be scanned by one
  query, once (load it again for each other scan). A Spark Connect session set up by
  :func:`spark_udfs.session.register_data_source` resolves each query anew (its plan cache is
  off) and registers :class:`ScopedKafkaLogDataSource`, whose default is ``true``. Each input
  partition carries its scan's filters, which its read applies. Spark pushes filters only with
  ``spark.sql.python.filterPushdown.enabled`` on, which ``spark_udfs.session`` sets.
- ``where``: filters the source applies to every scan of the DataFrame, on any Spark: conjuncts
  joined by ``AND``, each a comparison (``=``, ``<``, ``<=``, ``>``, ``>=``) of ``topic``,
  ``partition``, ``offset``, ``timestamp`` (an ISO time with its zone) or, with ``decode``,
  ``recordName`` with a literal, ``column IN (...)``, or ``[NOT] isControl``; they skip what
  ``pushFilters`` skips. Anything else is an error at ``load()``.
  ``.option("where", "partition = 3 and offset >= 1000")``
- ``storage.<name>``: for paths in object storage or HDFS (``s3://``, ``gs://``, ``abfs://``,
  ``hdfs://``, :mod:`codegen.dumps.storage`), a setting of pyarrow's filesystem (its argument
  ``<name>``: ``storage.endpoint_override``, ``storage.access_key``, ``storage.secret_key``...);
  without them the store's standard credential chain on each node. Never printed.
- ``recordLoop``: ``auto`` (default) builds the raw columns with the native columnar loop when
  it is built and ``SPECGEN_BACKEND`` is not ``pure``, else with the pure loop; ``native``
  requires the native one, ``pure`` takes the pure one (the reference: same rows).
- ``rows``: ``records`` (default) or ``batches``: one row per log entry, its header's fields
  without its records (:data:`codegen.dumps.batch_rows.BATCH_SCHEMA`: ``topic, partition,
  file, batchPosition, size, magic, baseOffset, lastOffset, maxTimestamp`` (epoch ms),
  ``producerId, producerEpoch, isTransactional, isControl, recordCount, controls`` (a control
  batch's records: offset and type) and ``_error``), read by the header pass: what a log end, a
  cut or a transaction's state needs. Not with ``decode``, ``topics``, ``recordTypes``,
  ``columns`` or ``where``. ``.option("rows", "batches")``
"""

from __future__ import annotations

import itertools
import json
import os
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, Filter, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema

from codegen.columnar.package import SHIPPED
from codegen.columnar.topics import (
    TOPICS,
    Selection,
    decode_topic_arrays,
    family_of_topic,
    record_names,
    topics_arrow_type,
    widen_to,
)
from codegen.dumps import storage
from codegen.dumps.arrow import RECORD_SCHEMA, record_batches
from codegen.dumps.batch_rows import BATCH_SCHEMA, batch_rows
from codegen.dumps.log_dirs import readable_remote, tiered_order
from codegen.dumps.partition_folders import partition_of
from codegen.dumps.remote_storage import remote_partition
from codegen.dumps.segments import SEGMENT_SUFFIXES
from codegen.dumps.storage import RemotePath, StoragePath, expand_braces, split_outside_braces
from codegen.dumps.topic_map import TopicMap, load_topic_map, topic_map_option
from spark_udfs.connect import server_path
from spark_udfs.errors import MalformedKafkaRecordError
from spark_udfs.options import Mode
from spark_udfs.pushdown import (
    Pushed,
    given_filters,
    index_positions,
    keep_files,
    push,
    read_ranges,
    takes_filters,
)
from spark_udfs.user_topics import (
    RECORD_KEYS,
    decode_user_arrays,
    record_keys,
    user_topics_arrow_type,
)

__all__ = [
    "BATCH_ROWS_SCHEMA",
    "Decoding",
    "KafkaLogDataSource",
    "LogSlice",
    "LogSlices",
    "expand_braces",
    "list_log_files",
    "pack_slices",
    "plan_slices",
    "read_slice",
    "resolve_paths",
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


BATCH_ROWS_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("file", pa.string()),
        *list(BATCH_SCHEMA),
    ]
)
"""The columns of ``rows=batches``."""
_NOT_WITH_BATCHES = ("decode", "topics", "recordtypes", "columns", "where")


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


def resolve_paths(paths: list[str], options: Mapping[str, str] | None = None) -> list[StoragePath]:
    """The files and folders ``paths`` name: each an existing path or a glob pattern (``*``,
    ``?``, ``[abc]``, ``{a,b}``, as Spark's file sources take them), matches in name order; on
    disk or, for a URL, in object storage (``options``: :mod:`codegen.dumps.storage`)."""
    out: list[StoragePath] = []
    for given in paths:
        p = server_path(given)  # relative: to the server's folder, over Spark Connect too
        path = storage.path(p, options)
        if path.exists():
            out.append(path)
        elif storage.has_magic(p):
            ((_, matches),) = storage.expand([p], options)
            if not matches:
                raise FileNotFoundError(
                    f"kafka-log: the pattern {given} matches no file or folder; check it, or give "
                    "the folders themselves"
                )
            out.extend(matches)
        else:
            raise FileNotFoundError(f"kafka-log: no such file or folder: {given}")
    return out


def list_log_files(paths: list[str], options: Mapping[str, str] | None = None) -> list[StoragePath]:
    """Every segment and snapshot below ``paths`` (files, folders or glob patterns; on disk or
    in object storage, ``options``: :mod:`codegen.dumps.storage`); of a tiered topic's remote
    storage, one complete copy of each remote segment
    (:func:`codegen.dumps.log_dirs.readable_remote`)."""
    return tiered_files(paths, options)[0]


def tiered_files(
    paths: list[str], options: Mapping[str, str] | None = None
) -> tuple[list[StoragePath], dict[str, int]]:
    """:func:`list_log_files` with each tiered partition's remote and local segments in offset
    order, and the offset below which each remote segment is read, by the segment's path text
    (:func:`codegen.dumps.log_dirs.tiered_order`)."""
    out: list[StoragePath] = []
    for path in resolve_paths(paths, options):
        if path.is_dir():
            found = [f for f in path.rglob("*") if f.suffix in SEGMENT_SUFFIXES and f.is_file()]
            out.extend(sorted(found, key=lambda f: str(f).split("/")))  # as paths sort
        else:
            out.append(path)
    ordered, bounds = tiered_order(readable_remote(out))
    return ordered, {str(f): b for f, b in bounds.items()}


def topic_of(path: StoragePath, options: Mapping[str, str]) -> tuple[str | None, int | None]:
    topic: str | None = options.get("topic")
    part: int | None = int(options["partition"]) if "partition" in options else None
    remote = remote_partition(path.parent)
    owner = partition_of(path.parent.name)
    if remote is not None:  # a tiered topic's remote segment: <topic>-<partition>-<topic id>
        topic = topic or remote.topic
        part = remote.partition if part is None else part
    elif owner is not None:
        topic = topic or owner[0]
        part = owner[1] if part is None else part
    elif path.suffix == ".checkpoint":
        topic, part = topic or "__cluster_metadata", 0 if part is None else part
    return topic, part


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


def _cores() -> int:
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
        yield _with_slice_columns(rb, sl, schema)


def _slice_column(name: str, sl: LogSlice, n: int) -> pa.Array:
    """The column ``name`` (``topic``, ``partition`` or ``file``) of ``n`` rows of ``sl``."""
    if name == "partition":
        return pa.array(
            np.full(n, sl.partition if sl.partition is not None else 0, np.int32),
            mask=np.full(n, sl.partition is None),
        )
    return pa.repeat(pa.scalar(sl.topic if name == "topic" else sl.path, pa.string()), n)


def _with_slice_columns(rb: pa.RecordBatch, sl: LogSlice, schema: pa.Schema) -> pa.RecordBatch:
    n, have = rb.num_rows, set(rb.schema.names)
    arrays = [rb.column(f.name) if f.name in have else _slice_column(f.name, sl, n) for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _decode_batch(
    rb: pa.RecordBatch,
    sl: LogSlice,
    family: str | None,
    typ: pa.StructType,
    mode: Mode,
    package: str = SHIPPED,
    selection: Selection = None,
) -> pa.RecordBatch:
    """``rb`` with the decoded columns of ``typ`` added (only those: a narrower ``typ`` builds
    less); ``family`` None (a topic with no decoder) leaves them null; ``selection`` decodes
    only those records."""
    if family is None:
        return _with_decoded(rb, sl, {}, {}, typ, mode)
    key, value, control = rb.column("key"), rb.column("value"), rb.column("isControl")
    wanted = frozenset(f.name for f in typ)
    result = decode_topic_arrays(family, key, value, control, package, selection, wanted)
    return _with_decoded(rb, sl, result.columns, result.errors, typ, mode)


def _with_decoded(
    rb: pa.RecordBatch,
    sl: LogSlice,
    decoded: dict[str, pa.Array],
    errors: dict[int, str],
    typ: pa.StructType,
    mode: Mode,
) -> pa.RecordBatch:
    """``rb`` with the ``decoded`` columns of ``typ`` (the others null); in FAILFAST the first
    of ``errors`` is raised, in PERMISSIVE they fill ``_decode_error``."""
    if errors and mode != Mode.PERMISSIVE:
        i = min(errors)
        where = f"topic {sl.topic}, partition {sl.partition}, offset {rb['offset'][i].as_py()}"
        raise MalformedKafkaRecordError(where, errors[i])
    columns = dict(decoded)
    if mode == Mode.PERMISSIVE and decoded:
        errs = np.full(rb.num_rows, None, dtype=object)
        for i, reason in errors.items():
            errs[i] = reason
        columns["_decode_error"] = pa.array(errs, pa.string())
    arrays = [*rb.columns, *widen_to(columns, typ, rb.num_rows)]
    names = [*rb.schema.names, *(f.name for f in typ)]
    return pa.RecordBatch.from_arrays(arrays, names=names)


_STORAGE = "storage."


def storage_options(options: Mapping[str, str]) -> dict[str, str]:
    """The ``storage.*`` options, without the prefix: the settings of the filesystem of a URL
    (:mod:`codegen.dumps.storage`: ``storage.endpoint_override``, ``storage.access_key``...)."""
    return {k[len(_STORAGE) :]: v for k, v in options.items() if k.startswith(_STORAGE)}


def _paths(options: dict[str, str]) -> list[str]:
    """``load(path)``, ``load([paths])`` (Spark passes a JSON array as ``paths``), or the
    ``paths`` option: a JSON array or paths separated by commas (not those inside ``{a,b}``)."""
    if "paths" in options:
        raw = options["paths"]
        paths = json.loads(raw) if raw.startswith("[") else split_outside_braces(raw)
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
    names: Selection = None  # the record names to decode (``recordTypes``); None: all
    user: TopicMap | None = None  # the ``topics`` map
    user_topics: tuple[str, ...] = ()  # the topics of the read it names

    def decoded_type(self, permissive: bool, package: str) -> pa.StructType:
        """The decoded columns: the families', with the user topics' messages added."""
        base = None
        if self.families:
            base = topics_arrow_type(self.families, permissive, package, self.names)
        if self.user is None or not self.user_topics:
            assert base is not None
            return base
        return user_topics_arrow_type(base, self.user, self.user_topics, permissive)

    def family(self, topic: str | None) -> str | None:
        if self.forced is not None:
            return self.forced
        family = family_of_topic(topic)
        return family if family in self.families else None


def _decoding(
    topics: set[str | None],
    option: str,
    package: str = SHIPPED,
    record_types: str = "",
    user: TopicMap | None = None,
) -> Decoding:
    mapped = tuple(sorted(user.entries_for(sorted(t for t in topics if t)))) if user else ()
    if option.lower() == "false":
        if user is not None and not mapped:
            raise ValueError(
                f"kafka-log: the topic map ({user.source}) names none of the topics read "
                f"({sorted(map(str, topics))}); check its names and patterns"
            )
        return Decoding((), None, None, user, mapped)
    if option.lower() not in ("true", "auto"):
        if option not in TOPICS:
            raise ValueError(f"kafka-log: decode={option!r}: use true or one of {list(TOPICS)}")
        names = _selection(record_types, (option,), package)
        return Decoding((option,), option, names, user, mapped)
    present = {family_of_topic(t) for t in topics}
    families = tuple(f for f in TOPICS if f in present and TOPICS[f].has_specs(package))
    if not families and not mapped:
        raise ValueError(
            "kafka-log: decode=true found no internal topic to decode (topics: "
            f"{sorted(map(str, topics))}); give folders of __consumer_offsets, "
            "__transaction_state, __share_group_state, __cluster_metadata or "
            "__remote_log_metadata, name the family "
            f"(decode=consumer_offsets, one of {list(TOPICS)}), or leave decode out"
        )
    return Decoding(families, None, _selection(record_types, families, package), user, mapped)


def _selection(option: str, families: tuple[str, ...], package: str) -> Selection:
    """The ``recordTypes`` option as record names of ``families``; "" selects all."""
    wanted = [n.strip() for n in option.split(",") if n.strip()]
    if not wanted:
        return None
    known = record_names(families, package)
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise ValueError(
            f"kafka-log: recordTypes names {unknown}, which {list(families)} do not have; "
            f"use recordName values: {known}"
        )
    return frozenset(wanted)


def _output_schema(opts: dict[str, str], decoding: Decoding | None, mode: Mode) -> pa.Schema:
    """The columns a read returns: every raw column and the decoded ones, or those the
    ``columns`` option names (with the error columns, always)."""
    fields = list(RAW_SCHEMA)
    if decoding is not None:
        permissive = mode == Mode.PERMISSIVE
        package = opts.get("package", SHIPPED)
        fields += list(decoding.decoded_type(permissive, package))
    wanted = [c.strip() for c in opts.get("columns", "").split(",") if c.strip()]
    if not wanted:
        return pa.schema(fields)
    have = [f.name for f in fields]
    unknown = [c for c in wanted if c not in have]
    if unknown:
        raise ValueError(
            f"kafka-log: columns names {unknown}, which this read does not have: {have}"
        )
    return pa.schema([f for f in fields if f.name in wanted or f.name in _ERROR_COLUMNS])


# Always returned: the record's or the batch's damage must show.
_ERROR_COLUMNS = ("_error", "_decode_error")
# The raw columns decoding reads (the key and value, and which record fails).
_DECODE_INPUTS = ("offset", "key", "value", "isControl")


_RECORD_LOOPS: dict[str, bool | None] = {"auto": None, "native": True, "pure": False}


def _record_loop(options: dict[str, str]) -> bool | None:
    """``recordLoop``: None (auto), True (native) or False (pure)."""
    loop = options.get("recordloop", "auto").lower()
    if loop not in _RECORD_LOOPS:
        raise ValueError(f"kafka-log: recordLoop={loop!r}: use one of {list(_RECORD_LOOPS)}")
    return _RECORD_LOOPS[loop]


class KafkaLogReader(DataSourceReader):
    def __init__(
        self, options: dict[str, str], decoding: Decoding | None, mode: Mode, schema: pa.Schema
    ) -> None:
        self.options = options
        self.decoding = decoding
        self.mode = mode
        self.schema = schema
        # The ``where`` option's filters: part of the DataFrame, so of every scan of it.
        self.given = given_filters(options.get("where", ""), decoding is not None)
        self.pushed: Pushed = push(self.given, decoding is not None)[0]

    def _raw_schema(self, pushed: Pushed) -> pa.Schema:
        """The raw columns a read builds: those returned, decoded, or filtered on."""
        needed = set(self.schema.names) | pushed.row_columns()
        decoding = self.decoding
        if decoding is not None:
            needed |= set(_DECODE_INPUTS)
            if decoding.user is not None and decoding.user.reads_headers:
                needed.add("headers")  # a version is in a header
        return pa.schema([f for f in RAW_SCHEMA if f.name in needed])

    def partitions(self) -> list[LogSlices]:
        """The input partitions of this scan, each carrying the scan's filters."""
        files = []
        listed, bounds = tiered_files(_paths(self.options), storage_options(self.options))
        for path in listed:
            topic, part = topic_of(path, self.options)
            files.append((path, topic, part))
        slices = pack_slices(
            keep_files(files, self.pushed),
            max_bytes=int(self.options.get("maxbytesperpartition", DEFAULT_SPLIT)),
            open_cost=int(self.options.get("opencostinbytes", DEFAULT_OPEN_COST)),
            min_partitions=int(self.options.get("minpartitions", _cores())),
        )
        # No file left to read (the pushed filters keep none): one empty partition, since
        # Spark reads a source that has none as one partition of its own making.
        return [
            LogSlices(tuple(replace(sl, below=bounds.get(sl.path)) for sl in p.slices), self.pushed)
            for p in slices
        ] or [LogSlices((), self.pushed)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, LogSlices)
        raw_schema = self._raw_schema(partition.pushed)
        for sl in partition.slices:
            path = storage.path(sl.path, storage_options(self.options))
            for at, data in read_ranges(path, sl.start, sl.end, partition.pushed):
                yield from self._read_range(sl, at, data, partition.pushed, raw_schema)

    def _read_range(
        self, sl: LogSlice, at: int, data: bytes, pushed: Pushed, raw_schema: pa.Schema
    ) -> Iterator[pa.RecordBatch]:
        """The rows of ``data``, the bytes at ``at`` of the slice's file."""
        opts = self.options
        decoding = self.decoding
        package = opts.get("package", SHIPPED)
        if decoding is not None:
            permissive = self.mode == Mode.PERMISSIVE
            full = decoding.decoded_type(permissive, package)
            # The decoded columns the read returns: the others are not built.
            typ = pa.struct([f for f in full if f.name in self.schema.names])
            names = decoding.names
            if pushed.record_names is not None:
                names = pushed.record_names if names is None else names & pushed.record_names
        for rb in read_slice(
            sl,
            with_headers=opts.get("includeheaders", "true").lower() != "false"
            and "headers" in raw_schema.names,
            verify_crc=opts.get("verifycrc", "true").lower() != "false",
            batch_rows=int(opts.get("batchrows", DEFAULT_BATCH_ROWS)),
            native=_record_loop(opts),
            schema=raw_schema,
            data=data,
            at=at,
        ):
            if sl.below is not None:  # a remote segment's offsets the next one holds
                offset = rb.column("offset")
                keep = pc.or_kleene(pc.less(offset, sl.below), pc.is_null(offset))
                rb = rb.filter(keep)
            rb = _filtered(rb, pushed)  # before decoding: what fails is not decoded
            if rb.num_rows and decoding is not None:
                family = decoding.family(sl.topic)
                entry = None if decoding.user is None else decoding.user.entry_for(sl.topic)
                if entry is not None:
                    assert decoding.user is not None
                    decoded = decode_user_arrays(
                        entry,
                        decoding.user.package,
                        typ,
                        rb.column("key"),
                        rb.column("value"),
                        rb.column("headers") if "headers" in rb.schema.names else None,
                        rb.column("isControl"),
                    )
                    rb = _with_decoded(rb, sl, decoded.columns, decoded.errors, typ, self.mode)
                else:
                    rb = _decode_batch(rb, sl, family, typ, self.mode, package, names)
                if pushed.record_names is not None:
                    rb = _filtered(rb, pushed)
            if rb.num_rows:
                yield rb if rb.schema.equals(self.schema) else rb.select(self.schema.names)


def _filtered(rb: pa.RecordBatch, pushed: Pushed) -> pa.RecordBatch:
    mask = pushed.row_mask(rb)
    return rb if mask is None else rb.filter(mask)


class KafkaLogFilteringReader(KafkaLogReader):
    """The reader that takes the query's filters it can apply (``pushFilters``)."""

    def pushFilters(self, filters: list[Filter]) -> list[Filter]:
        """Take the filters the source applies itself (``spark_udfs.pushdown``)."""
        # The where option's filters are all taken, so only the query's can be left.
        self.pushed, rest = push([*self.given, *filters], self.decoding is not None)
        return rest


class KafkaLogBatchReader(DataSourceReader):
    """``rows=batches``: one row per log entry of each slice, its header's fields."""

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options

    def partitions(self) -> list[LogSlices]:
        listed = list_log_files(_paths(self.options), storage_options(self.options))
        files = [(path, *topic_of(path, self.options)) for path in listed]
        partitions = pack_slices(
            files,
            max_bytes=int(self.options.get("maxbytesperpartition", DEFAULT_SPLIT)),
            open_cost=int(self.options.get("opencostinbytes", DEFAULT_OPEN_COST)),
            min_partitions=int(self.options.get("minpartitions", _cores())),
        )
        return partitions or [LogSlices(())]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, LogSlices)
        verify = self.options.get("verifycrc", "true").lower() != "false"
        for sl in partition.slices:
            path = storage.path(sl.path, storage_options(self.options))
            rows = batch_rows(path, start=sl.start, end=sl.end, verify_crc=verify)
            for rb in rows.to_batches():
                yield _with_slice_columns(rb, sl, BATCH_ROWS_SCHEMA)


def _rows_option(opts: dict[str, str]) -> str:
    rows = opts.get("rows", "records").lower()
    if rows not in ("records", "batches"):
        raise ValueError(f"kafka-log: rows={rows!r}: use records or batches")
    if rows == "batches":
        given = [o for o in _NOT_WITH_BATCHES if opts.get(o)]
        if given:
            raise ValueError(
                f"kafka-log: rows=batches reads batch headers only; {', '.join(given)} "
                "apply to records (rows=records)"
            )
    return rows


def _topic_map(opts: dict[str, str], package: str) -> TopicMap:
    """The ``topics`` option's map: JSON, or a file read as the data paths are (a relative path
    from the server's folder over Spark Connect; a URL with the ``storage.*`` options)."""
    text = opts["topics"].strip()
    if text.startswith("{"):
        return topic_map_option(text, package)
    return load_topic_map(storage.path(server_path(text), storage_options(opts)), package)


class KafkaLogDataSource(DataSource):
    """``spark.read.format("kafka-log")``; see the module docstring for columns and options."""

    default_push_filters = "auto"
    """``pushFilters`` when the option is not given."""

    @classmethod
    def name(cls) -> str:
        return "kafka-log"

    def _opts(self) -> dict[str, str]:
        return {str(k).lower(): str(v) for k, v in dict(self.options).items()}

    def _decoding(self) -> Decoding | None:
        opts = self._opts()
        decode = opts.get("decode", "false")
        package = opts.get("package", SHIPPED)
        user = _topic_map(opts, package) if opts.get("topics") else None
        if decode.lower() == "false" and user is None:
            return None
        files = list_log_files(_paths(opts), storage_options(opts))
        topics = {topic_of(f, opts)[0] for f in files}
        return _decoding(topics, decode, package, opts.get("recordtypes", ""), user)

    def _decoding_and_schema(self) -> tuple[Decoding | None, Mode, pa.Schema]:
        opts = self._opts()
        resolve_paths(_paths(opts), storage_options(opts))  # a missing path fails at load()
        takes_filters(opts.get("pushfilters", self.default_push_filters))  # so do bad values
        _record_loop(opts)
        if opts.get("recordtypes") and opts.get("decode", "false").lower() == "false":
            raise ValueError("kafka-log: recordTypes selects records to decode; add decode")
        decoding = self._decoding()
        mode = Mode.parse(opts.get("mode", "FAILFAST"))
        schema = _output_schema(opts, decoding, mode)
        given = given_filters(opts.get("where", ""), decoding is not None)
        if "recordName" not in schema.names and push(given, True)[0].record_names is not None:
            raise ValueError("kafka-log: where filters on recordName; add it to columns")
        return decoding, mode, schema

    def schema(self) -> Any:
        opts = self._opts()
        if _rows_option(opts) == "batches":
            resolve_paths(_paths(opts), storage_options(opts))  # a missing path fails at load()
            return from_arrow_schema(BATCH_ROWS_SCHEMA)
        decoding, _, arrow = self._decoding_and_schema()
        schema = from_arrow_schema(arrow)
        if decoding is not None and decoding.user is not None and "decodedKey" in schema.names:
            keys = record_keys(decoding.user, decoding.user_topics)
            if keys:  # which key a user topic's record has: flat finds it here
                schema["decodedKey"].metadata = {RECORD_KEYS: keys}
        return schema

    def reader(self, schema: Any) -> DataSourceReader:
        opts = self._opts()
        if _rows_option(opts) == "batches":
            return KafkaLogBatchReader(opts)
        _record_loop(opts)  # a wrong value fails on the driver
        # Spark 4.3.0 refuses a reader that has pushFilters while its pushdown setting is off,
        # and shares one read plan between the scans of one loaded DataFrame (pushdown.py).
        takes = takes_filters(opts.get("pushfilters", self.default_push_filters))
        reader = KafkaLogFilteringReader if takes else KafkaLogReader
        return reader(opts, *self._decoding_and_schema())


class ScopedKafkaLogDataSource(KafkaLogDataSource):
    """``kafka-log`` as :func:`spark_udfs.session.register_data_source` registers it in a
    Spark Connect session, whose plan cache it turns off: each query then resolves the loaded
    DataFrame anew, one read plan per scan, so the source takes the query's filters by default
    (``pushFilters`` true)."""

    default_push_filters = "true"
