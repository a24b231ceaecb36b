"""The text ``kafka-dump-log`` (``DumpLogSegments``) prints, from decoded records.

:func:`parse_record` gives the ``key:``/``payload:`` strings of one record as the
``--offsets-decoder``, ``--transaction-log-decoder``, ``--share-group-state-decoder`` and
``--cluster-metadata-decoder`` print them (the JSON of :mod:`codegen.dumps.record_json`, as
Jackson writes it), and ``--remote-log-metadata-decoder`` (the text of Kafka's objects,
:func:`codegen.dumps.remote_log_metadata.kafka_object_text`); :func:`dump_log_lines` renders a
whole file like the tool (batch lines, record lines, control records, trailing bytes).

This is an emulation of Kafka's tool, so it follows Kafka where our decoders are more lenient: a
value version above the newest known one is an error for coordinator topics (Kafka checks the
range there), and consumer-protocol payloads that do not decode strictly stay base64.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from itertools import repeat
from operator import attrgetter
from typing import Any, Final, cast

from codegen.dumps import storage
from codegen.dumps.batches import (
    DEFAULT_MAX_BATCH_RECORDS,
    LOG_OVERHEAD,
    MIN_LEGACY_SIZE,
    parse_v2,
)
from codegen.dumps.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, Codec
from codegen.dumps.coordinator import (
    CONSUMER_OFFSETS,
    SHARE_GROUP_STATE,
    TRANSACTION_STATE,
    coordinator_decoder,
)
from codegen.dumps.decoded import ERROR, KIND_CONTROL, RECORD, TOMBSTONE, UNKNOWN, DecodedRecord
from codegen.dumps.json_text import native_printer, wire_sides
from codegen.dumps.legacy import legacy_record_checksums
from codegen.dumps.metadata import (
    CLUSTER_METADATA,
    METADATA_TOPICS,
    REMOTE_LOG_METADATA,
    decode_control,
    metadata_decoder,
)
from codegen.dumps.model import (
    ControlType,
    ErrorKind,
    RawRecord,
    Record,
    RecordBatch,
    SegmentError,
    TimestampType,
    increment_sequence,
)
from codegen.dumps.packages import SHIPPED_PACKAGE
from codegen.dumps.record_json import jackson_json, jackson_json_each, record_json, value_json
from codegen.dumps.remote_log_metadata import (
    RemoteLogMetadataError,
    kafka_object_text,
    kafka_refuses_newer,
)
from codegen.dumps.segments import SegmentReader, segment_file_info
from codegen.dumps.storage import StoragePath
from codegen.dumps.user_topics import BatchBytes, UserRecord, UserTopicDecoder, version_of

__all__ = [
    "DECODER_OPTIONS",
    "DumpLogAborted",
    "NonConsecutive",
    "dump_log_line_groups",
    "dump_log_lines",
    "non_consecutive_lines",
    "parse_record",
    "user_dump_log_texts",
]

DECODER_OPTIONS: Final = {
    CONSUMER_OFFSETS: "--offsets-decoder",
    TRANSACTION_STATE: "--transaction-log-decoder",
    SHARE_GROUP_STATE: "--share-group-state-decoder",
    CLUSTER_METADATA: "--cluster-metadata-decoder",
    REMOTE_LOG_METADATA: "--remote-log-metadata-decoder",
}
"""Topic -> the ``kafka-dump-log`` option that decodes it."""

CUT_SHORT: Final = ErrorKind.TRUNCATED_TAIL
_HEADER_UP_TO_MAGIC: Final = 17
"""Offset, size, partition leader epoch and magic: Kafka reads no entry from fewer bytes."""
_BODY_ERROR: Final = "Failed to deserialize record with type "
_TS_NAMES: Final = {
    TimestampType.NO_TIMESTAMP_TYPE: "NoTimestampType",
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
}
_OFFSET: Final = attrgetter("offset")
_KEY_BYTES: Final = attrgetter("key_bytes")
_CODEC_NAMES: Final = {codec: codec.name.lower() for codec in Codec}
_BOOL_TEXT: Final = {False: "false", True: "true"}
_CONTROL_LABELS: Final[dict[int, str]] = {
    ControlType.LEADER_CHANGE: " LeaderChange: ",
    ControlType.SNAPSHOT_HEADER: " SnapshotHeader ",
    ControlType.SNAPSHOT_FOOTER: " SnapshotFooter ",
    ControlType.KRAFT_VERSION: " KRaftVersion ",
    ControlType.KRAFT_VOTERS: " KRaftVoters ",
}


_LINE_BREAKS: Final = re.compile("[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]")
_SHORT_ESCAPES: Final = {"\n": "\\n", "\r": "\\r"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    return _SHORT_ESCAPES.get(char) or f"\\u{ord(char):04x}"


def one_line(text: str) -> str:
    """``text`` with what would break or garble its line escaped (``\\n``, ``\\r``, other
    control characters and Unicode line separators as ``\\uXXXX``); tabs stay."""
    return _LINE_BREAKS.sub(_escaped, text)


def user_dump_log_texts(rec: UserRecord) -> tuple[str | None, str | None]:
    """The ``key:`` and ``payload:`` texts of a user topic's record: a side the map names as its
    message's JSON, the others as UTF-8 text (Kafka's StringDecoder); a record that did not
    decode as ``Error at offset O, skipping. <reason>`` in place of the payload. Text that would
    break the record's line is escaped (:func:`one_line`): one record, one line."""

    def text(mapped: bool, message: Any, version: int | None, data: bytes | None) -> str | None:
        if data is None:
            return None
        if mapped and message is not None:
            return jackson_json(message.to_json(version_of(message, version)))
        return one_line(data.decode("utf-8", "replace"))

    if rec.kind == ERROR:
        key = None if rec.key_bytes is None else one_line(rec.key_bytes.decode("utf-8", "replace"))
        return key, one_line(f"Error at offset {rec.offset}, skipping. {rec.error}")
    return (
        text(rec.key_mapped, rec.key, rec.key_version, rec.key_bytes),
        text(rec.value_mapped, rec.value, rec.value_version, rec.value_bytes),
    )


def parse_record(rec: DecodedRecord, topic: str) -> tuple[str | None, str | None]:
    """The ``key:`` and ``payload:`` texts ``kafka-dump-log`` prints for a data record."""
    if isinstance(rec, UserRecord):
        return user_dump_log_texts(rec)
    if topic == REMOTE_LOG_METADATA:
        return None, _remote_log_metadata_text(rec)
    if topic == CLUSTER_METADATA:
        if rec.kind == RECORD:
            return None, jackson_json(record_json(rec, topic)[1])
        reason = rec.error or ""
        if reason.startswith(_BODY_ERROR):  # Kafka's message stops before our detail
            reason = reason.split(": ", 1)[0]
        return None, f"Error at {rec.offset}, skipping. {reason}"
    if rec.key_bytes is None:
        return (
            f"Failed to decode message at offset {rec.offset} using the specified decoder "
            "(message had a missing key)",
            None,
        )
    if rec.kind == UNKNOWN:
        return f"Unknown record type {rec.record_type} at offset {rec.offset}, skipping.", None
    if rec.newer_than_spec:
        reason = f"Found an unknown record version {rec.value_version} for {rec.record_type} type"
        return f"Error at offset {rec.offset}, skipping. {reason}", None
    if rec.kind == ERROR:
        reason = rec.error or ""
        if rec.value_version >= 0 and rec.key is not None and "cannot be read" in reason:
            reason = (
                f"Found an unknown record version {rec.value_version} for {rec.record_type} type"
            )
        return f"Error at offset {rec.offset}, skipping. {reason}", None
    key, value = record_json(rec, topic)
    return jackson_json(key), "<DELETE>" if value is None else jackson_json(value)


def _remote_log_metadata_text(rec: DecodedRecord) -> str:
    """``--remote-log-metadata-decoder``'s payload: the text of Kafka's object, or of the error
    that stopped its serde (the frame's, or its transform's)."""
    if rec.kind == RECORD and rec.newer_than_spec and kafka_refuses_newer(rec.value):
        reason = f"{_BODY_ERROR}{rec.record_type}"
    elif rec.kind == RECORD:
        try:
            return kafka_object_text(rec.record_type, rec.value)
        except RemoteLogMetadataError as exc:
            reason = str(exc)
    elif rec.value_bytes is None:  # Kafka's parser calls remaining() on the null value
        reason = (
            'Cannot invoke "java.nio.ByteBuffer.remaining()" because the return value of '
            '"org.apache.kafka.common.record.internal.Record.value()" is null'
        )
    else:
        reason = rec.error or ""
        if reason.startswith(_BODY_ERROR):  # Kafka's message stops before our detail
            reason = reason.split(": ", 1)[0]
    return f"Error at offset {rec.offset}, skipping. {reason}"


# ---------------------------------------------------------------------------------------------
# whole files


def _file_intro(path: str | StoragePath) -> list[str]:
    name = storage.path(path).name
    lines = [f"Dumping {path}"]
    if name.endswith(".log"):
        stem = name[: -len(".log")]
        remote = segment_file_info(name).base_offset if not stem.isdigit() else None
        # A remote segment's name (<offset>-<segment id>.log) gives its base offset here;
        # Kafka's tool stops on such a name with a NumberFormatException.
        lines.append(f"Log starting offset: {int(stem) if stem.isdigit() else remote or 0}")
    elif name == "bootstrap.checkpoint":
        lines.append("KRaft bootstrap snapshot")
    elif name.endswith(".checkpoint"):
        stem = name[: -len(".checkpoint")]
        offset, _, epoch = stem.partition("-")
        if offset.isdigit() and epoch.isdigit():
            lines.append(f"Snapshot end offset: {int(offset)}, epoch: {int(epoch)}")
    return lines


def _batch_line(b: RecordBatch) -> str:
    ts = _TS_NAMES.get(b.timestamp_type, "NoTimestampType")
    codec = _CODEC_NAMES[b.codec]
    if b.magic >= 2:
        horizon = (
            "OptionalLong.empty"
            if b.delete_horizon_ms is None
            else f"OptionalLong[{b.delete_horizon_ms}]"
        )
        head = (
            f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {b.record_count} "
            f"baseSequence: {b.base_sequence} lastSequence: {b.last_sequence} "
            f"producerId: {b.producer_id} producerEpoch: {b.producer_epoch} "
            f"partitionLeaderEpoch: {b.partition_leader_epoch} "
            f"isTransactional: {_BOOL_TEXT[b.is_transactional]} "
            f"isControl: {_BOOL_TEXT[b.is_control]} deleteHorizonMs: {horizon}"
        )
    else:
        head = f"offset: {b.last_offset}"
    return (
        f"{head} position: {b.position} {ts}: {b.max_timestamp} size: {b.size} "
        f"magic: {b.magic} compresscodec: {codec} crc: {b.crc} "
        f"isvalid: {_BOOL_TEXT[b.crc_valid]}"
    )


def _control_text(batch: RecordBatch, r: Record, package: str = SHIPPED_PACKAGE) -> str:
    row = (r.offset, r.timestamp, r.key, r.value)
    ctype = getattr(r, "control_type", -1)
    if ctype in (ControlType.ABORT, ControlType.COMMIT):
        return (
            f" endTxnMarker: {ControlType(ctype).name} "
            f"coordinatorEpoch: {getattr(r, 'coordinator_epoch', 0)}"
        )
    label = _CONTROL_LABELS.get(ctype)
    if label is not None:
        dec = decode_control(row, package)
        if dec.kind == KIND_CONTROL and dec.value is not None:
            version = getattr(dec.value, "version", 0)
            return f"{label}{jackson_json(dec.value.to_json(version))}"
    try:
        name = ControlType(ctype).name
    except ValueError:
        name = "UNKNOWN"
    return f" controlType: {name}({ctype})"


class DumpLogAborted(Exception):
    """Kafka's tool stops the whole run here (``str()`` is the message it prints on stderr).

    ``unfinished`` says that the last line yielded was cut where Kafka stopped printing it (no
    line break follows it).
    """

    def __init__(self, message: str, *, unfinished: bool) -> None:
        super().__init__(message)
        self.unfinished = unfinished


NonConsecutive = dict[str, dict[int, int]]
"""Absolute file path -> {offset: the offset that followed it}, for offsets that are not
consecutive (Kafka keeps the last pair per preceding offset)."""


def non_consecutive_lines(pairs: NonConsecutive) -> Iterator[str]:
    """The block ``kafka-dump-log`` prints on stderr at the end of a run."""
    for file, follows in pairs.items():
        yield f"Non-consecutive offsets in {file}"
        for before in sorted(follows):
            yield f"  {before} is followed by {follows[before]}"


def _plain(data: bytes) -> str:
    """Kafka's default StringDecoder: the bytes as UTF-8, malformed sequences replaced."""
    return data.decode("utf-8", "replace")


def _source(path: StoragePath, max_bytes: int | None) -> StoragePath | bytes:
    """The file, or its first ``max_bytes`` bytes (Kafka reads the batches that fit in them)."""
    if max_bytes is None:
        return path
    return storage.read_range(path, 0, max_bytes)


def _impossible_size(source: StoragePath | bytes, err: SegmentError) -> int | None:
    """The size field at ``err`` when Kafka's reader throws on it: smaller than any message,
    with more than an entry header up to the magic byte left (zero padding, for one); else
    None (Kafka stops reading there and counts the rest as invalid bytes)."""
    if err.size <= _HEADER_UP_TO_MAGIC:
        return None
    if isinstance(source, bytes):
        header = source[err.position : err.position + LOG_OVERHEAD]
    else:
        header = storage.read_range(source, err.position, err.position + LOG_OVERHEAD)
    size = int.from_bytes(header[8:12], "big", signed=True)
    return size if size < MIN_LEGACY_SIZE else None


def dump_log_lines(
    path: str | StoragePath,
    topic: str | None,
    *,
    print_data: bool = True,
    skip_record_metadata: bool = False,
    max_bytes: int | None = None,
    max_batch_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS,
    observe: Callable[[RecordBatch | SegmentError | DecodedRecord], None] | None = None,
    non_consecutive: NonConsecutive | None = None,
    package: str = SHIPPED_PACKAGE,
    user: UserTopicDecoder | None = None,
) -> Iterator[str]:
    """Lines like ``kafka-dump-log --files PATH --deep-iteration --print-data-log <decoder>``
    prints for one segment or snapshot; ``topic`` None prints keys and values as text.

    As in Kafka's tool, a batch with a wrong checksum is printed (``isvalid: false``) with its
    records, and the first entry that cannot be framed ends the batches, the rest of the file
    being counted as invalid bytes (not with ``max_bytes``, as in Kafka). A record Kafka's
    decoder cannot take (a coordinator record without a key) ends the run: its line is yielded
    without the decoded part, then :class:`DumpLogAborted` is raised; so does an entry size
    smaller than any message (zero padding), where Kafka's reader throws. ``observe`` is
    called, in output order, with every batch, every data record decoded for printing that is
    worth counting (an error, an unknown type, newer than our specs) and the segment error that
    ended the dump, if any. Offsets that do not follow each other are added to
    ``non_consecutive`` (see :func:`non_consecutive_lines`). ``package`` is the generated package
    whose classes decode the records; ``user`` decodes them instead (a user topic's,
    :mod:`codegen.dumps.user_topics`).
    """
    for group in dump_log_line_groups(
        path,
        topic,
        print_data=print_data,
        skip_record_metadata=skip_record_metadata,
        max_bytes=max_bytes,
        max_batch_size=max_batch_size,
        max_batch_records=max_batch_records,
        observe=observe,
        non_consecutive=non_consecutive,
        package=package,
        user=user,
    ):
        yield from group


_KEY_TEXTS_SIZE: Final = 1 << 16
"""Key texts kept per file (internal topics repeat a key per group and partition)."""


_Row = tuple[int, int, bytes | None, bytes | None, int, str]
"""What a record line shows of a record: offset, timestamp, key, value, sequence and the
header keys (comma-separated)."""


class _RecordTexts:
    """The ``key:``/``payload:`` texts of the data records of one batch (:func:`parse_record`),
    decoded a batch at a time; a coordinator key's text is made once per distinct key."""

    def __init__(
        self,
        topic: str,
        package: str,
        user: UserTopicDecoder | None = None,
    ) -> None:
        self.topic = topic
        self.package = package
        self.user = user
        self.key_texts: dict[bytes | None, str] = {}
        self.coordinator = (
            None
            if topic in METADATA_TOPICS or user is not None
            else coordinator_decoder(topic, package)
        )
        self._user_lines = None if user is None else _user_lines(user)

    def entries(
        self, data: bytes, start: int, end: int, batch: RecordBatch
    ) -> list[Record] | list[DecodedRecord]:
        """:meth:`v2_items`, or a user topic's batch as its :class:`BatchBytes` when its
        records parse and its lines may be printed from their bytes (:meth:`lines`)."""
        if self._user_lines is not None:
            assert self.user is not None
            entry = self.user.byte_batch(data, start, end, batch)
            if entry is not None:
                return entry
        return self.v2_items(data, start, end, batch)

    def lines(
        self,
        batch: BatchBytes,
        ts_name: str,
        observe: Callable[[RecordBatch | SegmentError | DecodedRecord], None] | None = None,
    ) -> tuple[str, int] | None:
        """The record lines of a batch printed from its bytes and how many of its records are
        newer than the specs, or None where :meth:`v2_items` and the reference print them. A
        record the printer does not print gets the reference's ``key:``/``payload:`` texts
        (:meth:`data_texts`), and ``observe`` sees it as :func:`_observe_records` would (it is
        not counted in the newer ones)."""
        assert self._user_lines is not None

        def data(i: int) -> str | None:
            rec = batch.record(i)
            if rec is None:
                return None
            if observe is not None:
                _observe_records([rec], observe)
            return self.data_texts([rec])[0]

        return self._user_lines(batch, ts_name, data)

    def v2_items(
        self, data: bytes, start: int, end: int, batch: RecordBatch
    ) -> list[Record] | list[DecodedRecord]:
        """A v2 data batch's records: decoded by the native loop when it can (records without
        headers of a coordinator or user topic), else parsed by the reference loop."""
        native = self.coordinator or self.user
        if native is not None:
            decoded = native.native_v2_records(data, start, end, batch)
            if decoded is not None:
                return decoded
        return parse_v2(data, start, end, batch)

    def decode(self, records: list[Record]) -> list[DecodedRecord]:
        if self.user is not None:  # a user topic's (codegen.dumps.user_topics)
            return [self.user.decode_record(r) for r in records]
        if self.coordinator is None:
            mdec = metadata_decoder(self.package, self.topic)
            return [mdec.decode(r.value, r.offset, r.timestamp, r.key) for r in records]
        return self.coordinator.decode_raw(
            [(r.offset, r.timestamp, r.key, r.value) for r in records]
        )

    def key_text(self, rec: DecodedRecord) -> str:
        """The ``key:`` text of a decoded coordinator record, made once per distinct key."""
        key = self.key_texts.get(rec.key_bytes)
        if key is None:
            if len(self.key_texts) >= _KEY_TEXTS_SIZE:
                self.key_texts.clear()
            key = jackson_json(record_json(rec, self.topic)[0])
            self.key_texts[rec.key_bytes] = key
        return key

    def data_texts(self, records: list[DecodedRecord], lead: str = " ") -> list[str]:
        """The ``key: .. payload: ..`` part of each record's line (the texts of
        :func:`parse_record`), after ``lead``. The values of a coordinator topic's records
        are written as JSON in one pass, and a key's text is made once."""
        if self.coordinator is None:
            return [_data_text(*parse_record(rec, self.topic), lead) for rec in records]
        datas = [
            rec.value.to_json(rec.value_version) if rec.members is None else value_json(rec)
            for rec in records
            if rec.kind == RECORD and not rec.newer_than_spec
        ]
        try:
            values = iter(jackson_json_each(datas))
        except TypeError:
            values = iter([jackson_json(data) for data in datas])
        cached, key_text = self.key_texts.get, self.key_text
        # what parse_record prints as key and value JSON (these kinds have keys); the rest by it
        return [
            f'{lead}key: {cached(rec.key_bytes) or key_text(rec)} payload: {{"version":"'
            f'{rec.value_version}","data":{next(values)}}}'
            if rec.kind == RECORD and not rec.newer_than_spec
            else f"{lead}key: {cached(rec.key_bytes) or key_text(rec)} payload: <DELETE>"
            if rec.kind == TOMBSTONE and not rec.newer_than_spec
            else _data_text(*parse_record(rec, self.topic), lead)
            for rec in records
        ]


def _user_lines(
    user: UserTopicDecoder,
) -> Callable[[BatchBytes, str, Callable[[int], str | None]], tuple[str, int] | None] | None:
    """``lines(batch, ts_name, data)``: a user topic's record lines of a batch printed from its
    record bytes (``codegen/native/user_wire.h``'s ``user_dump_log``), ``data(i)`` giving the
    ``key:``/``payload:`` texts of a record it does not print, or None where they cannot be;
    None without the native loop and printer."""
    module = native_printer()
    if module is None or not user.native:
        return None
    key_side, value_side = wire_sides(user)
    print_lines = module.user_dump_log

    def lines(
        records: BatchBytes, ts_name: str, data: Callable[[int], str | None]
    ) -> tuple[str, int] | None:
        printed: tuple[str, int] | None = print_lines(
            *records.wire_arguments(),
            records.batch.base_sequence,
            ts_name.encode(),
            key_side,
            value_side,
            data,
        )
        return printed

    return lines


def _data_text(key: str | None, payload: str | None, lead: str) -> str:
    """``key: K payload: P`` after ``lead``, without the parts that are None."""
    if key is None:
        return "" if payload is None else f"{lead}payload: {payload}"
    return f"{lead}key: {key}" if payload is None else f"{lead}key: {key} payload: {payload}"


def _all_records(batch: RecordBatch, rows: list[RawRecord]) -> list[Record]:
    return batch.records


def _rows(
    batch: RecordBatch, items: list[Record] | list[DecodedRecord]
) -> tuple[list[_Row], list[Record]]:
    """The rows of a batch's record lines, and its records (none when the native loop decoded
    them: they had no headers)."""
    if items and isinstance(items[0], DecodedRecord):
        base_offset, base_seq = batch.base_offset, batch.base_sequence
        return [
            (
                d.offset,
                d.timestamp,
                d.key_bytes,
                d.value_bytes,
                -1 if base_seq < 0 else increment_sequence(base_seq, d.offset - base_offset),
                "",
            )
            for d in items
        ], []
    records: list[Record] = items  # type: ignore[assignment]
    return [
        (
            r.offset,
            r.timestamp,
            r.key,
            r.value,
            r.sequence,
            ",".join([h.name for h in r.headers]) if r.headers else "",
        )
        for r in records
    ], records


def _observe_records(
    records: list[DecodedRecord],
    observe: Callable[[RecordBatch | SegmentError | DecodedRecord], None],
) -> None:
    """Report the records worth counting: errors, unknown types, versions newer than ours."""
    for rec in [r for r in records if r.kind == ERROR or r.kind == UNKNOWN or r.newer_than_spec]:
        observe(rec)


def _follow(offsets: list[int], last: int, gaps: dict[int, int]) -> int:
    """Note in ``gaps`` each offset that does not follow the one before it (``last`` before
    the first); returns the last offset."""
    if offsets == list(range(last + 1, last + 1 + len(offsets))):
        return offsets[-1] if offsets else last
    for offset in offsets:
        if offset != last + 1:
            gaps[last] = offset
        last = offset
    return last


def _decoded_lines(
    batch: RecordBatch, ts_name: str, records: list[DecodedRecord], data: list[str]
) -> list[str]:
    """The record lines of a v2 data batch the native loop decoded (its records have keys and
    no headers), ``data`` being their ``key:``/``payload:`` parts: the lines the reference
    loop of :func:`dump_log_line_groups` makes of such records, a batch at a time."""
    return _v2_heads(_rows(batch, records)[0], ts_name, data)


def _v2_heads(rows: list[_Row], ts_name: str, tails: Iterable[str] = repeat("")) -> list[str]:
    """The ``| offset: ...`` part of the lines of a v2 batch's rows (:func:`_rows`), each
    followed by its ``tails`` text (none by default)."""
    return [
        f"| offset: {offset} {ts_name}: {timestamp} keySize: {-1 if key is None else len(key)} "
        f"valueSize: {-1 if value is None else len(value)} sequence: {sequence} "
        f"headerKeys: [{header_keys}]{tail}"
        # tails: one per row, or the endless default
        for (offset, timestamp, key, value, sequence, header_keys), tail in zip(
            rows, tails, strict=False
        )
    ]


def dump_log_line_groups(
    path: str | StoragePath,
    topic: str | None,
    *,
    print_data: bool = True,
    skip_record_metadata: bool = False,
    max_bytes: int | None = None,
    max_batch_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS,
    observe: Callable[[RecordBatch | SegmentError | DecodedRecord], None] | None = None,
    non_consecutive: NonConsecutive | None = None,
    package: str = SHIPPED_PACKAGE,
    user: UserTopicDecoder | None = None,
    count_newer: Callable[[int], None] | None = None,
) -> Iterator[list[str]]:
    """The lines of :func:`dump_log_lines`, a list per log batch (the lines of a file's start
    and end in lists of their own). When the run ends with :class:`DumpLogAborted`, the last
    list yielded ends with the line the exception is about.

    ``count_newer(n)`` (with ``observe``) takes the number of records newer than the specs of
    a user topic's batch printed from its bytes, whose records ``observe`` does not see; without
    it, with ``observe``, every batch's records are decoded for it."""
    file = storage.path(path)
    name = str(path)
    yield _file_intro(path)
    texts = None if topic is None else _RecordTexts(topic, package, user)
    key_text = DECODER_OPTIONS.get(topic or "") is not None and topic not in METADATA_TOPICS
    valid_end = 0
    size = file.stat().st_size if max_bytes is None else -1
    last_offset = -1
    gaps: dict[int, int] = {}
    source = _source(file, max_bytes)
    reader = SegmentReader(
        source,
        name=name,
        max_batch_size=max_batch_size,
        max_batch_records=max_batch_records,
        verify_crc=False,
    )
    legacy: Any = None  # a local or a remote file, opened at the first legacy entry
    v2_items = parse_v2 if texts is None else texts.v2_items
    if texts is not None and (observe is None or count_newer is not None):
        v2_items = texts.entries
    try:
        # items: Records, or the native loop's decoded records (see _rows)
        entries: Iterator[tuple[RecordBatch, Any] | SegmentError]
        entries = reader.decoded_batches(cast(Any, v2_items), _all_records)
        for entry in entries:
            if isinstance(entry, SegmentError):
                impossible = _impossible_size(source, entry)
                # with max_bytes, a batch cut by the limit is where the reading stops, not damage
                cut_by_limit = max_bytes is not None and entry.kind == CUT_SHORT
                if observe is not None and impossible is None and not cut_by_limit:
                    observe(entry)
                if impossible is not None:
                    raise DumpLogAborted(
                        f"Found record size {impossible} smaller than minimum record overhead "
                        f"({MIN_LEGACY_SIZE}) in file {name}.",
                        unfinished=False,
                    )
                break
            item, items = entry
            if observe is not None:
                observe(item)
            valid_end = item.position + item.size
            ts_name = _TS_NAMES.get(item.timestamp_type, "NoTimestampType")
            with_data = print_data and not item.is_control
            if isinstance(items, BatchBytes):  # a user topic's records, not decoded yet
                assert texts is not None
                printed = (
                    texts.lines(items, ts_name, observe)
                    if with_data and not skip_record_metadata
                    else None
                )
                if printed is not None:
                    text, newer = printed
                    if newer and count_newer is not None:
                        count_newer(newer)
                    offsets = list(range(item.base_offset, item.base_offset + item.record_count))
                    last_offset = _follow(offsets, last_offset, gaps)
                    yield [_batch_line(item), text] if text else [_batch_line(item)]
                    continue
                # its records as the other batches' (Records, or the loop's decoded records)
                items = cast(Any, texts.v2_items(items.data, items.start, items.end, items.batch))
            if items and isinstance(items[0], DecodedRecord):  # the native loop's, decoded
                decoded: list[DecodedRecord] = items
                if (
                    with_data
                    and not skip_record_metadata
                    and texts is not None
                    and None not in map(_KEY_BYTES, decoded)
                ):
                    data = texts.data_texts(decoded)
                    if observe is not None:
                        _observe_records(decoded, observe)
                    last_offset = _follow(list(map(_OFFSET, decoded)), last_offset, gaps)
                    yield [_batch_line(item), *_decoded_lines(item, ts_name, decoded, data)]
                    continue
            rows, records = _rows(item, items)
            lines = [_batch_line(item)]
            checksums: list[tuple[int, bool]] = []
            if item.magic < 2:
                if legacy is None:
                    legacy = file.open("rb")
                legacy.seek(item.position)
                checksums = legacy_record_checksums(legacy.read(item.size), max_batch_size)
            keyed = len(rows)
            lead = "| " if skip_record_metadata else " "
            heads = _v2_heads(rows, ts_name) if item.magic >= 2 and not skip_record_metadata else []
            data = []
            if with_data and texts is not None:
                if key_text:  # Kafka's decoder stops at a coordinator record without a key
                    keys = [row[2] for row in rows]
                    if None in keys:
                        keyed = keys.index(None)
                # records: the reference read them; else items are the native loop's, decoded
                decoded = texts.decode(records[:keyed]) if records else items[:keyed]
                if observe is not None:
                    _observe_records(decoded, observe)
                data = texts.data_texts(decoded, lead)
            last_offset = _follow([row[0] for row in rows[: keyed + 1]], last_offset, gaps)
            for i, (offset, timestamp, key_bytes, value_bytes, *_) in enumerate(rows):
                line = ""
                if not skip_record_metadata:
                    if heads:
                        line = heads[i]
                    else:
                        key_size = -1 if key_bytes is None else len(key_bytes)
                        value_size = -1 if value_bytes is None else len(value_bytes)
                        line = (
                            f"| offset: {offset} {ts_name}: {timestamp} "
                            f"keySize: {key_size} valueSize: {value_size}"
                        )
                        if i < len(checksums):
                            crc, valid = checksums[i]
                            line += f" isValid: {str(valid).lower()} crc: {crc}"
                    if item.is_control:
                        line += _control_text(item, records[i], package)
                if with_data:
                    if texts is None:
                        key = None if key_bytes is None else _plain(key_bytes)
                        payload = None if value_bytes is None else _plain(value_bytes)
                        line += _data_text(key, payload, lead)
                    elif i < keyed:
                        line += data[i]
                    else:  # the keyless record Kafka's decoder stops at
                        lines.append(line)
                        yield lines
                        raise DumpLogAborted(
                            f"Failed to decode message at offset {offset} using the "
                            "specified decoder (message had a missing key)",
                            unfinished=True,
                        )
                lines.append(line)
            yield lines
    finally:
        if legacy is not None:
            legacy.close()
        if gaps and non_consecutive is not None:
            non_consecutive.setdefault(storage.absolute(file), {}).update(gaps)
    if size > valid_end:
        yield [f"Found {size - valid_end} invalid bytes at the end of {file.name}"]
