"""Records of a user's own topics, decoded as a topic map says (:mod:`codegen.dumps.topic_map`).

Each side (key, value) the map names is decoded with its message at the version the map gives,
or the one read from an int16 prefix or a header; a side the map leaves out keeps its raw bytes.
A null key stays null; a null value is a tombstone. A side that does not decode makes the record
an ``error`` record whose text says which side and why (the codec's message, version, field and
byte offset). A version read above the newest known one is read with the newest when that one is
flexible (flagged ``newer_than_spec``), as Kafka reads its own records (KIP-915).

:meth:`UserTopicDecoder.decode` is the reference, one record at a time. With the native backend
the batches of a topic whose versions are not in headers go through the native record loop
(``codegen/native/user_loop.h``), which reads each side with the engine's readers by the same
rule and hands :meth:`~UserTopicDecoder.decode` every record it does not read exactly.

The same rules and texts hold in Spark (``spark_udfs.user_topics``): both decode the same
segment to the same values and the same errors.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any, ClassVar

from codegen.dumps.batches import DEFAULT_MAX_BATCH_RECORDS, parse_v2_raw
from codegen.dumps.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from codegen.dumps.coordinator import native_records
from codegen.dumps.decoded import (
    ERROR,
    RECORD,
    TOMBSTONE,
    DecodedBatch,
    DecodedRecord,
    control_record,
    version_of,
)
from codegen.dumps.model import RawRecord, Record, RecordBatch, SegmentError
from codegen.dumps.packages import package_messages
from codegen.dumps.segments import SegmentReader, Source, segment_sources
from codegen.dumps.topic_map import (
    MessageSide,
    TopicEntry,
    TopicMap,
    TopicMapError,
    side_version,
)
from codegen.gc_pause import gc_paused
from codegen.runtime import KafkaMessage

__all__ = [
    "BatchBytes",
    "UserRecord",
    "UserTopicDecoder",
    "decode_user_batches",
    "decode_user_records",
    "user_decoders",
    "version_of",
]


@dataclass(slots=True)
class UserRecord(DecodedRecord):
    """A record of a user topic: ``key``/``value`` are the map's messages (None for a side the
    map leaves out, a null key or a tombstone's value), ``key_version``/``value_version`` the
    versions they were written at (None where there is none: a null key, a tombstone, a side
    the map leaves out, a prefix too short to read)."""

    value_version: int | None  # type: ignore[assignment]  # None, not the base's -1: no version
    key_version: int | None = None
    key_mapped: bool = False
    value_mapped: bool = False
    of_user_topic: ClassVar[bool] = True


class _SideReader:
    """Decodes one side (key or value) of the records of one entry, by the one version rule
    of :mod:`codegen.dumps.topic_map`."""

    def __init__(self, side: MessageSide, which: str, package: str) -> None:
        self.side = side
        self.which = which
        self.cls: type[KafkaMessage] = package_messages(package)[side.message]

    def read(
        self, data: bytes, headers: object
    ) -> tuple[KafkaMessage | None, int | None, bool, str | None]:
        """(message, version written, newer than the spec, error); the message is None on
        error."""
        cls = self.cls
        version: int | None = None
        try:
            version, start = side_version(self.side, cls, data, headers)
            effective, newer = cls.written_version(version)
            body = data[start:] if start else data
            return cls.decode(body, effective), version, newer, None
        except ValueError as exc:  # a DecodeError or UnsupportedVersionError, or the map's
            return None, version, False, f"{self.which}: {exc or type(exc).__name__}"


_LOOP_VERSIONS = 256
"""Versions the native loop reads (an int16 prefix of 0-255; others take the reference)."""


class UserTopicDecoder:
    """Decodes the records of the topics of one map entry; build it once and reuse it.

    ``native`` None runs the native record loop where it is built and the backend asked for
    is not ``pure`` (:func:`~codegen.dumps.coordinator.native_records`), and no side's version
    is in a header; False keeps the reference."""

    def __init__(self, entry: TopicEntry, package: str, *, native: bool | None = None) -> None:
        self.entry = entry
        self.package = package
        self.name = entry.name
        self._key = None if entry.key is None else _SideReader(entry.key, "key", package)
        self._value = None if entry.value is None else _SideReader(entry.value, "value", package)
        self.reads_headers = any(
            s is not None and s.header is not None for s in (entry.key, entry.value)
        )
        """Whether a side's version is in a header (the records are then read with theirs)."""
        self._loop: Any = None
        self._malformed: type[Exception] = _NotRaised
        self._records_parse: Any = None
        if native is None:
            native = native_records() is not None
        if native and not self.reads_headers:
            module = _records_module()
            self._loop, self._malformed = _native_loop(self, module)
            self._records_parse = module.records_parse

    @property
    def native(self) -> bool:
        """Whether v2 data batches go through the native record loop."""
        return self._loop is not None

    def _side(
        self, reader: _SideReader | None
    ) -> tuple[bool, int, tuple[Any, ...], tuple[Any, ...]] | None:
        """The native loop's form of a side: (prefix, version, readers, newer_readers)."""
        return self.loop_side(reader, lambda cls, effective: cls._READERS[effective])

    def loop_sides(self, pick: Callable[[Any, int], Any]) -> tuple[Any, Any]:
        """(key side, value side) in the native loop's form with ``pick(cls, version)`` as
        the reader of each version read (``codegen/native/json_wire.h`` takes its plans so)."""
        return self.loop_side(self._key, pick), self.loop_side(self._value, pick)

    @staticmethod
    def loop_side(
        reader: _SideReader | None, pick: Callable[[Any, int], Any]
    ) -> tuple[bool, int, tuple[Any, ...], tuple[Any, ...]] | None:
        """A side as (prefix, version, readers, newer_readers): ``pick(cls, effective)`` where
        the one version rule reads that version (``given_version`` for the map's version,
        ``written_version`` for a prefix), the newer ones' apart; None where it refuses it."""
        if reader is None:
            return None
        side, cls = reader.side, reader.cls
        readers: list[Any] = [None] * _LOOP_VERSIONS
        newer: list[Any] = [None] * _LOOP_VERSIONS
        versions = range(_LOOP_VERSIONS) if side.prefix else [side.version]
        for version in versions:
            if version is None or not 0 <= version < _LOOP_VERSIONS:
                continue
            try:
                if not side.prefix:
                    cls.given_version(version)
                effective, is_newer = cls.written_version(version)
            except ValueError:
                continue
            (newer if is_newer else readers)[version] = pick(cls, effective)
        return (
            side.prefix,
            0 if side.prefix else int(side.version or 0),
            tuple(readers),
            tuple(newer),
        )

    def decode(
        self,
        key: bytes | None,
        value: bytes | None,
        headers: object = None,
        offset: int = -1,
        timestamp: int = -1,
    ) -> UserRecord:
        """Decode one record. ``headers`` are the record's headers in any shape Kafka clients
        give them (:func:`~codegen.dumps.topic_map.header_values`: kafka-python's and
        confluent-kafka's ``(key, value)`` tuples, a mapping, ``Header`` objects, None)."""
        key_obj: Any = None
        key_version: int | None = None
        value_version: int | None = None
        newer = False
        errors: list[str] = []
        if self._key is not None and key is not None:
            key_obj, key_version, newer, error = self._key.read(key, headers)
            if error is not None:
                errors.append(error)
        value_obj: Any = None
        if self._value is not None and value is not None:
            value_obj, value_version, value_newer, error = self._value.read(value, headers)
            newer |= value_newer
            if error is not None:
                errors.append(error)
        kind = ERROR if errors else TOMBSTONE if value is None else RECORD
        return UserRecord(
            offset,
            timestamp,
            kind,
            -1,
            self.name,
            None if errors else key_obj,
            None if errors else value_obj,
            value_version,
            key,
            value,
            newer_than_spec=newer and not errors,
            error="; ".join(errors) if errors else None,
            key_version=key_version,
            key_mapped=self._key is not None,
            value_mapped=self._value is not None,
        )

    def decode_record(self, record: Record) -> UserRecord:
        """Decode one record of the segment layer."""
        return self.decode(
            record.key, record.value, record.headers, record.offset, record.timestamp
        )

    def batches(
        self,
        source: Source,
        *,
        verify_crc: bool = True,
        max_batch_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
        max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS,
    ) -> Iterator[DecodedBatch | SegmentError]:
        """The batches of a segment (or of a partition folder's segments) with their records
        decoded (control records as the other decoders give them), and segment errors. The
        batches' own ``records`` lists are emptied, as the other decoders leave them."""
        if self._loop is not None:
            yield from self._native_batches(
                source,
                verify_crc=verify_crc,
                max_batch_size=max_batch_size,
                max_batch_records=max_batch_records,
            )
            return
        for src in segment_sources(source):
            reader = SegmentReader(
                src,
                verify_crc=verify_crc,
                max_batch_size=max_batch_size,
                max_batch_records=max_batch_records,
            )
            if not self.reads_headers:  # the segment layer's raw rows: no header objects
                for raw in reader.raw_batches():
                    if isinstance(raw, SegmentError):
                        yield raw
                        continue
                    batch, rows = raw
                    if batch.is_control:
                        yield DecodedBatch(batch, [control_record(row) for row in rows])
                    else:
                        decode = self.decode
                        yield DecodedBatch(batch, [decode(k, v, (), o, t) for o, t, k, v in rows])
                continue
            for item in reader:
                if isinstance(item, SegmentError):
                    yield item
                    continue
                records: list[DecodedRecord]
                if item.is_control:
                    records = [
                        control_record((r.offset, r.timestamp, r.key, r.value))
                        for r in item.records
                    ]
                else:
                    records = [self.decode_record(r) for r in item.records]
                item.records = []
                yield DecodedBatch(item, records)

    def _native_batches(
        self, source: Source, **limits: Any
    ) -> Iterator[DecodedBatch | SegmentError]:
        """:meth:`batches` with the native record loop (the same batches, records and
        errors)."""
        for src in segment_sources(source):
            reader = SegmentReader(src, **limits)
            items = reader.decoded_batches(self._v2_records, self._other_records, self._loop)
            while True:
                # Decoding a batch allocates many objects and no cycles: the cyclic GC pauses
                # meanwhile (never while the caller runs between batches).
                with gc_paused():
                    item = next(items, None)
                if item is None:
                    break
                yield item if isinstance(item, SegmentError) else DecodedBatch(*item)

    def byte_batches(
        self,
        source: Source,
        *,
        max_batch_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
        max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS,
    ) -> Iterator[DecodedBatch | SegmentError]:
        """:meth:`batches` for a printer of record bytes: with the native loop, the records of
        each v2 data batch are its :class:`BatchBytes` (decoded when asked), the others'
        decoded as :meth:`batches` decodes them; without it, :meth:`batches`."""
        if self._loop is None:
            yield from self.batches(
                source, max_batch_size=max_batch_size, max_batch_records=max_batch_records
            )
            return
        for src in segment_sources(source):
            reader = SegmentReader(
                src, max_batch_size=max_batch_size, max_batch_records=max_batch_records
            )
            for item in reader.decoded_batches(self._batch_bytes, self._other_records):
                yield item if isinstance(item, SegmentError) else DecodedBatch(*item)

    def _batch_bytes(
        self, data: bytes, pos: int, end: int, batch: RecordBatch
    ) -> list[DecodedRecord]:
        """A batch whose records parse as its :class:`BatchBytes`; the others decoded, so
        that a batch whose records do not parse is the segment error it is here."""
        found = self.byte_batch(data, pos, end, batch)
        return self._v2_records(data, pos, end, batch) if found is None else found

    def byte_batch(self, data: bytes, pos: int, end: int, batch: RecordBatch) -> BatchBytes | None:
        """A v2 data batch as its :class:`BatchBytes` when the native loop is built and its
        records parse as the loop parses them; else None."""
        if self._records_parse is None or not self._records_parse(
            data, pos, end, batch.record_count
        ):
            return None
        return BatchBytes(self, data, pos, end, batch)

    def _v2_records(
        self, data: bytes, pos: int, end: int, batch: RecordBatch
    ) -> list[DecodedRecord]:
        """The records of a v2 data batch by the native loop; a batch whose records do not
        parse by the reference parser, which says what is wrong with them."""
        try:
            return self._run_loop(data, pos, end, batch)
        except self._malformed:
            return self._other_records(batch, parse_v2_raw(data, pos, end, batch))

    def _run_loop(self, data: bytes, pos: int, end: int, batch: RecordBatch) -> list[DecodedRecord]:
        records: list[DecodedRecord] = self._loop(
            data,
            pos,
            end,
            batch.record_count,
            batch.base_offset,
            batch.base_timestamp,
            batch.attributes & 0x08,
            batch.max_timestamp,
        )
        return records

    def native_v2_records(
        self, data: bytes, pos: int, end: int, batch: RecordBatch
    ) -> list[DecodedRecord] | None:
        """The records of a v2 data batch as the native loop reads them, when it does and none
        has headers (decoded records do not keep headers, and ``kafka-dump-log`` prints their
        keys); else None."""
        if self._loop is None:
            return None
        try:
            records = self._run_loop(data, pos, end, batch)
        except self._malformed:
            return None
        return None if self._loop.with_headers else records

    def _other_records(self, batch: RecordBatch, rows: list[RawRecord]) -> list[DecodedRecord]:
        if batch.is_control:
            return [control_record(row) for row in rows]
        decode = self.decode
        return [decode(k, v, (), o, t) for o, t, k, v in rows]


class BatchBytes(list[DecodedRecord]):
    """The records of one v2 data batch, not decoded yet (an empty list): its record bytes
    ``data[start:end]`` and header, for a printer of record bytes; :meth:`decoded` gives the
    records :meth:`UserTopicDecoder.batches` gives."""

    __slots__ = ("_records", "batch", "data", "decoder", "end", "start")

    def __init__(
        self, decoder: UserTopicDecoder, data: bytes, start: int, end: int, batch: RecordBatch
    ) -> None:
        super().__init__()
        self.decoder = decoder
        self.data = data
        self.start = start
        self.end = end
        self.batch = batch
        self._records: list[DecodedRecord] | None = None

    def decoded(self) -> list[DecodedRecord]:
        """The batch's records, decoded."""
        return self.decoder._v2_records(self.data, self.start, self.end, self.batch)

    def record(self, i: int) -> DecodedRecord | None:
        """The batch's record i, for a printer of record bytes that leaves it to the reference
        (the batch is decoded on the first call only), or None when the decoded records are
        not the batch's count (the reference prints the whole batch then)."""
        records = self._records
        if records is None:
            records = self._records = self.decoded()
        return records[i] if len(records) == self.batch.record_count else None

    def wire_arguments(self) -> tuple[bytes, int, int, int, int, int, int, int]:
        """The batch as the printers of record bytes (``codegen/native/user_wire.h``) take it
        first: data, start, end, count, base offset, base timestamp, log-append time, append
        timestamp."""
        b = self.batch
        return (
            self.data,
            self.start,
            self.end,
            b.record_count,
            b.base_offset,
            b.base_timestamp,
            b.attributes & 0x08,
            b.max_timestamp,
        )


class _NotRaised(Exception):
    """Caught where the native loop's MalformedRecords would be, without the native loop."""


def _records_module() -> ModuleType:
    """The native record loops' module; ImportError, saying how to build it, when it is not
    built."""
    try:
        return importlib.import_module("codegen.native._records")
    except ImportError as exc:
        raise ImportError(
            "the native record loop is not built: run python -m codegen.native.build"
        ) from exc


def _native_loop(decoder: UserTopicDecoder, module: ModuleType) -> tuple[Any, type[Exception]]:
    """The native record loop of a decoder's entry, and its MalformedRecords."""

    def slow(key: bytes | None, value: bytes | None, offset: int, timestamp: int) -> UserRecord:
        return decoder.decode(key, value, (), offset, timestamp)

    def no_key(key: bytes) -> Any:  # the user loop reads keys itself
        raise LookupError

    user = (decoder.name, decoder._side(decoder._key), decoder._side(decoder._value))
    loop = module.RecordLoop(UserRecord, no_key, slow, RECORD, TOMBSTONE, user)
    return loop, module.MalformedRecords


def user_decoders(topic_map: TopicMap, topics: Iterable[str | None]) -> dict[str, UserTopicDecoder]:
    """A decoder for each of ``topics`` the map has (raises TopicMapError as
    :meth:`TopicMap.entry_for`)."""
    return {
        topic: UserTopicDecoder(entry, topic_map.package)
        for topic, entry in topic_map.entries_for(list(topics)).items()
    }


def decode_user_batches(
    source: Source,
    topic_map: TopicMap,
    topic: str,
    *,
    verify_crc: bool = True,
    max_batch_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS,
) -> Iterator[DecodedBatch | SegmentError]:
    """Batches of a segment or partition folder of ``topic``, decoded as ``topic_map`` says."""
    entry = topic_map.entry_for(topic)
    if entry is None:
        raise TopicMapError(f"{topic_map.source}: no entry matches topic {topic!r}")
    return UserTopicDecoder(entry, topic_map.package).batches(
        source,
        verify_crc=verify_crc,
        max_batch_size=max_batch_size,
        max_batch_records=max_batch_records,
    )


def decode_user_records(
    source: Source,
    topic_map: TopicMap,
    topic: str,
    *,
    include_control: bool = False,
    errors: list[SegmentError] | None = None,
    max_batch_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS,
) -> Iterator[DecodedRecord]:
    """Every record of a segment or partition folder of ``topic``, in log order (user records,
    and control records when asked); segment errors are appended to ``errors`` when given."""
    for item in decode_user_batches(
        source,
        topic_map,
        topic,
        max_batch_size=max_batch_size,
        max_batch_records=max_batch_records,
    ):
        if isinstance(item, SegmentError):
            if errors is not None:
                errors.append(item)
        elif include_control or not item.batch.is_control:
            yield from item.records
