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

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, Filter, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema

from codegen.columnar.package import SHIPPED
from codegen.dumps import storage
from codegen.dumps.batch_rows import BATCH_SCHEMA, batch_rows
from codegen.dumps.topic_map import TopicMap, load_topic_map, topic_map_option
from spark_udfs.connect import server_path
from spark_udfs.log_decoding import (
    DECODE_INPUTS,
    Decoding,
    decode_batch,
    decoding_of,
    output_schema,
    with_decoded,
)
from spark_udfs.log_paths import (
    given_paths,
    list_log_files,
    resolve_paths,
    storage_options,
    tiered_files,
    topic_of,
)
from spark_udfs.log_slices import (
    DEFAULT_BATCH_ROWS,
    DEFAULT_OPEN_COST,
    DEFAULT_SPLIT,
    RAW_SCHEMA,
    LogSlice,
    LogSlices,
    cores,
    pack_slices,
    read_slice,
    with_slice_columns,
)
from spark_udfs.options import Mode
from spark_udfs.pushdown import (
    Pushed,
    given_filters,
    keep_files,
    push,
    read_ranges,
    takes_filters,
)
from spark_udfs.user_topics import (
    RECORD_KEYS,
    decode_user_arrays,
    record_keys,
)

__all__ = [
    "BATCH_ROWS_SCHEMA",
    "KafkaLogDataSource",
    "ScopedKafkaLogDataSource",
]


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
            needed |= set(DECODE_INPUTS)
            if decoding.user is not None and decoding.user.reads_headers:
                needed.add("headers")  # a version is in a header
        return pa.schema([f for f in RAW_SCHEMA if f.name in needed])

    def partitions(self) -> list[LogSlices]:
        """The input partitions of this scan, each carrying the scan's filters."""
        files = []
        listed, bounds = tiered_files(given_paths(self.options), storage_options(self.options))
        for path in listed:
            topic, part = topic_of(path, self.options)
            files.append((path, topic, part))
        slices = pack_slices(
            keep_files(files, self.pushed),
            max_bytes=int(self.options.get("maxbytesperpartition", DEFAULT_SPLIT)),
            open_cost=int(self.options.get("opencostinbytes", DEFAULT_OPEN_COST)),
            min_partitions=int(self.options.get("minpartitions", cores())),
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
                    rb = with_decoded(rb, sl, decoded.columns, decoded.errors, typ, self.mode)
                else:
                    rb = decode_batch(rb, sl, family, typ, self.mode, package, names)
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
        listed = list_log_files(given_paths(self.options), storage_options(self.options))
        files = [(path, *topic_of(path, self.options)) for path in listed]
        partitions = pack_slices(
            files,
            max_bytes=int(self.options.get("maxbytesperpartition", DEFAULT_SPLIT)),
            open_cost=int(self.options.get("opencostinbytes", DEFAULT_OPEN_COST)),
            min_partitions=int(self.options.get("minpartitions", cores())),
        )
        return partitions or [LogSlices(())]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, LogSlices)
        verify = self.options.get("verifycrc", "true").lower() != "false"
        for sl in partition.slices:
            path = storage.path(sl.path, storage_options(self.options))
            rows = batch_rows(path, start=sl.start, end=sl.end, verify_crc=verify)
            for rb in rows.to_batches():
                yield with_slice_columns(rb, sl, BATCH_ROWS_SCHEMA)


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
        files = list_log_files(given_paths(opts), storage_options(opts))
        topics = {topic_of(f, opts)[0] for f in files}
        return decoding_of(topics, decode, package, opts.get("recordtypes", ""), user)

    def _decoding_and_schema(self) -> tuple[Decoding | None, Mode, pa.Schema]:
        opts = self._opts()
        resolve_paths(given_paths(opts), storage_options(opts))  # a missing path fails at load()
        takes_filters(opts.get("pushfilters", self.default_push_filters))  # so do bad values
        _record_loop(opts)
        if opts.get("recordtypes") and opts.get("decode", "false").lower() == "false":
            raise ValueError("kafka-log: recordTypes selects records to decode; add decode")
        decoding = self._decoding()
        mode = Mode.parse(opts.get("mode", "FAILFAST"))
        schema = output_schema(opts, decoding, mode)
        given = given_filters(opts.get("where", ""), decoding is not None)
        if "recordName" not in schema.names and push(given, True)[0].record_names is not None:
            raise ValueError("kafka-log: where filters on recordName; add it to columns")
        return decoding, mode, schema

    def schema(self) -> Any:
        opts = self._opts()
        if _rows_option(opts) == "batches":
            resolve_paths(
                given_paths(opts), storage_options(opts)
            )  # a missing path fails at load()
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
