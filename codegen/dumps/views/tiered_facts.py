"""The ``event`` facts of the tiered-storage view: ``__remote_log_metadata`` records read with
the topic decoder's columns (:func:`read_metadata_rows`) and made facts
(:func:`metadata_facts`: a segment's or a partition deletion's state, when, who wrote it and
where it is in the metadata topic)."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from codegen.columnar.topics import decode_topic_arrays
from codegen.dumps.arrow import record_batches
from codegen.dumps.storage import StoragePath
from codegen.dumps.views.tiered_schemas import FACT_SCHEMA, LEADER_EPOCHS

__all__ = [
    "metadata_facts",
    "read_metadata_rows",
]


def read_metadata_rows(
    path: StoragePath, partition: int, as_of_ms: int | None = None
) -> pa.Table | None:
    """A ``__remote_log_metadata`` segment's records (of metadata partition ``partition``)
    with the topic decoder's columns, as ``decode_remote_log_metadata`` gives them for
    ``kafka-log`` rows (``_decode_error`` for a record that did not decode), up to
    ``as_of_ms``; None when it holds none."""
    tables: list[pa.Table] = []
    for rb in record_batches(path, headers=False):
        if rb.num_rows == 0:
            continue
        decoded = decode_topic_arrays(
            "remote_log_metadata",
            rb.column("key"),
            rb.column("value"),
            rb.column("isControl"),
            wanted=frozenset({"recordType", "decodedValue"}),
        )
        table = pa.Table.from_batches([rb]).select(
            ["offset", "timestamp", "isControl", "batchPosition", "_error"]
        )
        table = table.append_column("partition", pa.array([partition] * rb.num_rows, pa.int32()))
        for name, column in decoded.columns.items():
            table = table.append_column(name, column)
        errors: list[str | None] = [None] * rb.num_rows
        for row, reason in decoded.errors.items():
            errors[row] = reason
        tables.append(table.append_column("_decode_error", pa.array(errors, pa.string())))
    if not tables:
        return None
    rows = pa.concat_tables(tables)
    keep = pc.invert(pc.fill_null(rows.column("isControl"), False))
    if as_of_ms is not None:
        micros = pa.scalar(as_of_ms * 1000, pa.timestamp("us", tz="UTC"))
        keep = pc.and_(keep, pc.fill_null(pc.less_equal(rows.column("timestamp"), micros), False))
    return rows.filter(keep)


def _members(decoded: pa.Array, name: str) -> pa.StructArray | None:
    if not isinstance(decoded.type, pa.StructType) or decoded.type.get_field_index(name) < 0:
        return None
    member = pc.struct_field(decoded, name)
    assert isinstance(member, pa.StructArray)
    return member


def _field(struct: pa.StructArray | None, *path: str, n: int, typ: pa.DataType) -> pa.Array:
    """A field of a (nested) struct column, null where the struct is; all null without it."""
    if struct is None:
        return pa.nulls(n, typ)
    arr: pa.Array = struct
    for name in path:
        if not isinstance(arr.type, pa.StructType) or arr.type.get_field_index(name) < 0:
            return pa.nulls(n, typ)
        arr = pc.struct_field(arr, name)
    return arr.cast(typ)


def _coalesce(arrays: list[pa.Array]) -> pa.Array:
    return arrays[0] if len(arrays) == 1 else pc.coalesce(*arrays)


def _epochs(struct: pa.StructArray | None, n: int) -> pa.Array:
    if struct is None or struct.type.get_field_index("segmentLeaderEpochs") < 0:
        return pa.nulls(n, LEADER_EPOCHS)
    lists = pc.struct_field(struct, "segmentLeaderEpochs").to_pylist()
    return pa.array(
        [
            None
            if entries is None
            else [{"epoch": e["leaderEpoch"], "offset": e["offset"]} for e in entries]
            for entries in lists
        ],
        LEADER_EPOCHS,
    )


def metadata_facts(rows: pa.Table | pa.RecordBatch) -> pa.Table:
    """``event`` facts of ``__remote_log_metadata`` rows with the topic decoder's columns
    (``kafka-log`` rows through ``decode_remote_log_metadata``: ``partition``, ``offset``,
    ``timestamp``, ``recordType``, ``decodedValue``, and ``_error`` / ``_decode_error`` when
    there). A row that did not decode is an event with its ``error`` and no partition."""
    table = rows if isinstance(rows, pa.Table) else pa.Table.from_batches([rows])
    table = table.combine_chunks()
    n = table.num_rows
    if n == 0:
        return FACT_SCHEMA.empty_table()
    decoded = table.column("decodedValue").chunk(0)
    seg = _members(decoded, "RemoteLogSegmentMetadataRecord")
    upd = _members(decoded, "RemoteLogSegmentMetadataUpdateRecord")
    dele = _members(decoded, "RemotePartitionDeleteMetadataRecord")
    snap = _members(decoded, "RemoteLogSegmentMetadataSnapshotRecord")
    s, i8, i16, i32, i64 = pa.string(), pa.int8(), pa.int16(), pa.int32(), pa.int64()

    def of_segment(*path: str, typ: pa.DataType) -> pa.Array:
        return _coalesce([_field(seg, *path, n=n, typ=typ), _field(upd, *path, n=n, typ=typ)])

    topic = _coalesce(
        [
            of_segment("remoteLogSegmentId", "topicIdPartition", "name", typ=s),
            _field(dele, "topicIdPartition", "name", n=n, typ=s),
        ]
    )
    topic_id = _coalesce(
        [
            of_segment("remoteLogSegmentId", "topicIdPartition", "id", typ=s),
            _field(dele, "topicIdPartition", "id", n=n, typ=s),
        ]
    )
    partition = _coalesce(
        [
            of_segment("remoteLogSegmentId", "topicIdPartition", "partition", typ=i32),
            _field(dele, "topicIdPartition", "partition", n=n, typ=i32),
        ]
    )
    segment_id = _coalesce(
        [of_segment("remoteLogSegmentId", "id", typ=s), _field(snap, "segmentId", n=n, typ=s)]
    )

    def numbers(name: str, typ: pa.DataType, sources: Sequence[pa.StructArray | None]) -> pa.Array:
        return _coalesce([_field(x, name, n=n, typ=typ) for x in sources])

    state = _coalesce(
        [
            numbers("remoteLogSegmentState", i8, (seg, upd, snap)),
            _field(dele, "remotePartitionDeleteState", n=n, typ=i8),
        ]
    )
    errors = [
        table.column(c).chunk(0) for c in ("_error", "_decode_error") if c in table.column_names
    ]
    error = _coalesce(errors) if errors else pa.nulls(n, s)
    timestamps = table.column("timestamp").chunk(0)
    if pa.types.is_timestamp(timestamps.type):  # kafka-log's microseconds
        record_ms = pc.divide(timestamps.cast(pa.timestamp("us", tz="UTC")).cast(i64), 1000)
    else:
        record_ms = timestamps.cast(i64)
    epochs = (
        _epochs(seg, n)
        if snap is None
        else pc.if_else(pc.is_valid(snap), _epochs(snap, n), _epochs(seg, n))
    )
    columns = {
        "fact": pa.array(["event"] * n, s),
        "topic": topic,
        "topicId": topic_id,
        "partition": partition,
        "segmentId": segment_id,
        "startOffset": numbers("startOffset", i64, (seg, snap)),
        "endOffset": numbers("endOffset", i64, (seg, snap)),
        "recordType": table.column("recordType").chunk(0).cast(i16),
        "state": state,
        "timeMs": numbers("eventTimestampMs", i64, (seg, upd, dele, snap)),
        "brokerId": numbers("brokerId", i32, (seg, upd, dele, snap)),
        "metadataPartition": table.column("partition").chunk(0).cast(i32),
        "metadataOffset": table.column("offset").chunk(0).cast(i64),
        "recordTimeMs": record_ms,
        "sizeBytes": numbers("segmentSizeInBytes", i64, (seg, snap)),
        "records": pa.nulls(n, i64),
        "maxTimestampMs": numbers("maxTimestampMs", i64, (seg, snap)),
        "leaderEpochs": epochs,
        "epoch": pa.nulls(n, i32),
        "fileType": pa.nulls(n, s),
        "file": pa.nulls(n, s),
        "error": error,
    }
    return pa.table(columns, schema=FACT_SCHEMA)
