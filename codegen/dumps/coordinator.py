"""Coordinator records: ``__consumer_offsets``, ``__transaction_state``, ``__share_group_state``.

A coordinator record has an ``int16`` record type in front of the key and an ``int16`` value
version in front of the value; a null value is a tombstone. Each topic's record types (their
ids, key and value classes) are :mod:`codegen.dumps.coordinator_types`'.

The classes come from a generated package: the shipped ``generated`` by default, or any other
(``package="mycodecs"``), for example one generated from a newer Kafka release's specs, whose new
record types and versions are then decoded instead of reported unknown or newer.

Decoding never raises on bad data (KIP-915):

- an unknown record type gives an ``unknown`` record keeping the type id and the raw bytes;
- a value version above the newest known one is read with the newest known version when the spec
  is flexible there (a newer version must then be flexible too); unknown tagged fields are kept in
  ``unknown_tags`` and the record is flagged ``newer_than_spec``;
- any other problem (an unknown non-flexible version, malformed bytes) gives an ``error`` record
  with the reason. Bytes left over after a key or value are ignored, as Kafka does, and noted.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cache
from itertools import chain
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

from codegen.dumps.batches import (
    DEFAULT_MAX_BATCH_RECORDS,
    parse_v2_raw,
)
from codegen.dumps.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from codegen.dumps.coordinator_types import (
    CONSUMER_OFFSETS,
    COORDINATOR_TOPICS,
    SHARE_GROUP_STATE,
    TRANSACTION_STATE,
    Reader,
    RecordType,
    record_types,
)
from codegen.dumps.decoded import (
    ERROR,
    RECORD,
    TOMBSTONE,
    UNKNOWN,
    DecodedBatch,
    DecodedRecord,
    control_record,
)
from codegen.dumps.model import RawRecord, RecordBatch, SegmentError
from codegen.dumps.packages import SHIPPED_PACKAGE, package_name
from codegen.dumps.segments import SegmentReader, Source, segment_sources
from codegen.gc_pause import gc_paused
from codegen.runtime import BytesLike, DecodeError, KafkaMessage, backends
from codegen.runtime.wire import buffer_bytes

if TYPE_CHECKING:
    from codegen.dumps.consumer_protocol import PayloadCache

__all__ = [
    "CONSUMER_OFFSETS",
    "COORDINATOR_TOPICS",
    "SHARE_GROUP_STATE",
    "TRANSACTION_STATE",
    "CoordinatorDecoder",
    "RecordPairError",
    "RecordType",
    "coordinator_decoder",
    "decode_batches",
    "decode_records",
    "native_records",
    "record_pair_reader",
    "record_types",
]

_KEY_CACHE_SIZE: Final = 1 << 16


class _Malformed(Exception):
    """A record the one-pass loop leaves to the reference parser (which reports why)."""


_KnownKey = tuple[bytes, int, str, Any, tuple[Reader | None, ...], tuple[Reader | None, ...]]
"""A key that decoded exactly: (its bytes, record type id, name, key object, inline readers by
version, and the readers of the versions newer than the specs: the newest flexible one's)."""


Int64s = Any
"""An int64 numpy array (this module does not import numpy)."""
Buffer = Any
"""Bytes, or any object with a buffer of them."""

_KeyType = tuple[Reader, int, str, tuple[Reader | None, ...], tuple[Reader | None, ...]]
"""What a record type's keys are read with: (key reader, record type id, name, inline readers
by version, and the readers of the versions newer than the specs: the newest flexible one's)."""


class RecordPairError(ValueError):
    """A coordinator record's key and value that cannot be read; the text is the one
    :class:`DecodedRecord` gives as ``error`` for the same bytes."""


PairReader = Callable[[BytesLike, BytesLike | None], tuple[Any, Any]]
_PairTypes = Mapping[int, tuple[Reader, Mapping[int, Reader], RecordType]]


def record_pair_reader(
    topic: str = CONSUMER_OFFSETS,
    package: str | ModuleType = SHIPPED_PACKAGE,
    *,
    rows: bool = False,
) -> PairReader:
    """``read_pair(key, value) -> (key, value)`` for one record of a coordinator topic, as a
    Kafka client hands them over: the type-prefixed key and the version-prefixed value (None
    for a tombstone, which gives a None value).

    The int16 prefixes pick the classes and versions; a value version above the newest known
    is read at the newest when that one is flexible (KIP-915). ``rows=True`` gives row tuples
    instead of objects. Bytes after the key or the value are ignored, as Kafka's coordinators
    do. Anything unreadable raises :class:`RecordPairError`. With the native backend the
    whole pair is read in one native call.
    """
    types = record_types(topic, package)
    table: dict[int, tuple[Reader, Mapping[int, Reader], RecordType]] = {}
    for rt in types.values():
        kcls, vcls = rt.key_class, rt.value_class
        if rows:
            key_reader: Reader = kcls._ROW_READERS[kcls.LOWEST_VERSION]
            value_readers: Mapping[int, Reader] = vcls._ROW_READERS
        else:
            key_reader, value_readers = kcls._READERS[kcls.LOWEST_VERSION], vcls._READERS
        table[rt.id] = (key_reader, value_readers, rt)
    pure = _pure_pair_reader(table)
    engine = backends.native_engine() if backends.backend() == backends.NATIVE else None
    if engine is None:
        return pure
    native_types: dict[int, tuple[Any, tuple[Any, ...], int]] = {}
    for type_id, (key_reader, value_readers, rt) in table.items():
        readers = [key_reader, *value_readers.values()]
        if not all(isinstance(r, engine.Reader) for r in readers):
            return pure  # a class the engine does not serve
        by_version = tuple(value_readers.get(v) for v in range(max(value_readers, default=-1) + 1))
        newest = rt.newest_flexible if rt.newest_flexible is not None else -1
        native_types[type_id] = (key_reader, by_version, newest)
    read_pair: PairReader = engine.pair_reader(native_types, pure)
    return read_pair


def _pure_pair_reader(types: _PairTypes) -> PairReader:
    def read_pair(key: BytesLike, value: BytesLike | None) -> tuple[Any, Any]:
        if key is None:
            raise RecordPairError("record has no key")
        # Any buffer, as the native reader takes; bytes for the prefixes read below.
        if type(key) is not bytes:
            key = buffer_bytes(key)
        if value is not None and type(value) is not bytes:
            value = buffer_bytes(value)
        if len(key) < 2:
            raise RecordPairError("Could not read version from key's buffer.")
        type_id = _int16(key)
        entry = types.get(type_id)
        if entry is None:
            raise RecordPairError(f"Found an unknown record type {type_id}")
        key_reader, value_readers, rt = entry
        try:
            key_obj, _ = key_reader(key, 2)
        except DecodeError as exc:
            raise RecordPairError(_located(exc, "key", type_id, rt.key_class)) from exc
        if value is None:
            return key_obj, None
        if len(value) < 2:
            raise RecordPairError("Could not read version from value's buffer.")
        version = _int16(value)
        reader = value_readers.get(version)
        if reader is None and rt.newest_flexible is not None and version > rt.newest_flexible:
            reader = value_readers[rt.newest_flexible]
        if reader is None:
            raise RecordPairError(rt.unreadable_version(version))
        try:
            value_obj, _ = reader(value, 2)
        except DecodeError as exc:
            raise RecordPairError(_located(exc, "value", version, rt.value_class)) from exc
        return key_obj, value_obj

    return read_pair


@cache
def _native_records() -> ModuleType | None:
    try:
        return importlib.import_module("codegen.native._records")
    except ImportError:
        return None


def native_record_loop_enabled() -> bool:
    """Whether new decoders parse v2 batches with the native record loop: it is built
    (``python -m codegen.native.build``) and the backend asked for (``SPECGEN_BACKEND`` or
    ``codegen.runtime.use_backend``) is not ``pure``."""
    if backends.requested() == backends.PURE:
        return False
    return _native_records() is not None


def native_records() -> ModuleType | None:
    """The native record loops' module (``codegen.native._records``) where new decoders run
    them (:func:`native_record_loop_enabled`), else None."""
    return _native_records() if native_record_loop_enabled() else None


def _int16(data: bytes) -> int:
    v = (data[0] << 8) | data[1]
    return v - 0x10000 if v & 0x8000 else v


def _located(exc: Exception, what: str, version: int, cls: type[KafkaMessage]) -> str:
    text = str(exc) or type(exc).__name__
    if hasattr(exc, "located"):
        text = str(exc.located(cls.SPEC_NAME, version))
    return f"Could not read record with version {version} from {what}'s buffer due to: {text}."


class _NotRaised(Exception):
    """Caught where the native loop's MalformedRecords would be, without the native loop."""


class CoordinatorDecoder:
    """Decodes the records of one coordinator topic; build it once and reuse it.

    v2 data batches go through the native record loop (``codegen/native/records.c``) when
    ``native`` is True, else through the pure one; both give the same records and errors.
    ``native=None`` takes the native loop when :func:`native_record_loop_enabled`.
    """

    def __init__(
        self,
        topic: str,
        package: str | ModuleType = SHIPPED_PACKAGE,
        *,
        native: bool | None = None,
    ) -> None:
        self.topic = topic
        self.package = package_name(package)
        self.types = record_types(topic, self.package)  # classes imported on first use
        self._key_cache: dict[bytes, _KnownKey] = {}
        self._payloads: PayloadCache | None = None
        """Group members' decoded payloads (made on the first group metadata value)."""
        # Group metadata (__consumer_offsets' record type 2) gets its members attached.
        self._group_metadata = 2 if topic == CONSUMER_OFFSETS and 2 in self.types else None
        self._members_readers: tuple[Reader | None, ...] = ()
        """Group metadata's value readers by version < 256 (None: take decode()), which the
        pure loop reads and attaches the members of; made on its first key."""
        # By record type: its key reader, id, name and the value readers the inline paths may
        # use, by version < 256 (None: take decode()), made on a type's first key. Group
        # metadata values have none.
        self._key_types: dict[int, _KeyType] = {}
        if native is None:
            native = native_record_loop_enabled()
        self._native_loop: Callable[..., list[DecodedRecord]] | None = None
        self._rows_loop: Any = None
        """A second record loop, for :meth:`decode_slices`: its keys of group metadata carry
        their value readers, the members attached after the call."""
        self._malformed: type[Exception] = _NotRaised
        """The native loop's MalformedRecords: what hands a batch to the reference (and only
        that: any other exception from the loop is a bug, and propagates)."""
        if native:
            module = _native_records()
            if module is None:
                raise ImportError(
                    "the native record loop is not built: run python -m codegen.native.build"
                )
            self._native_loop = module.RecordLoop(
                DecodedRecord, self._key_entry, self.decode, RECORD, TOMBSTONE
            )
            self._malformed = module.MalformedRecords
            self._rows_loop = module.RecordLoop(
                DecodedRecord, self._rows_key_entry, self.decode, RECORD, TOMBSTONE
            )

    @property
    def native_loop(self) -> Any:
        """The native record loop :meth:`decode_v2_records` runs (a ``RecordLoop``), or None:
        :meth:`~codegen.dumps.segments.SegmentReader.decoded_batches` runs it over runs of
        batches."""
        return self._native_loop

    @property
    def native(self) -> bool:
        """Whether v2 data batches go through the native record loop."""
        return self._native_loop is not None

    # -- one record ------------------------------------------------------------------------

    def decode_key(self, key: bytes) -> tuple[int, str, KafkaMessage | None]:
        """A type-prefixed key alone, as :meth:`decode` reads it: its record type (-1 where it
        has none), the type's name ("" for a type the specs lack) and the key (None where it
        does not decode)."""
        if len(key) < 2:
            return -1, "", None
        rtype = _int16(key)
        rt = self.types.get(rtype)
        if rt is None:
            return rtype, "", None
        try:
            key_obj, _ = rt.key_reader(key, 2)
        except DecodeError:
            return rtype, rt.name, None
        return rtype, rt.name, key_obj

    def decode(
        self, key: bytes | None, value: bytes | None, offset: int = -1, timestamp: int = -1
    ) -> DecodedRecord:
        """Decode one record (type-prefixed key, version-prefixed value or None)."""
        if key is None or len(key) < 2:
            reason = (
                "record has no key" if key is None else "Could not read version from key's buffer."
            )
            return DecodedRecord(
                offset, timestamp, ERROR, -1, "", None, None, -1, key, value, error=reason
            )
        rtype = _int16(key)
        rt = self.types.get(rtype)
        if rt is None:
            return DecodedRecord(
                offset,
                timestamp,
                UNKNOWN,
                rtype,
                "",
                None,
                None,
                -1,
                key,
                value,
                error=f"Found an unknown record type {rtype}",
            )
        try:
            key_obj, end = rt.key_reader(key, 2)
        except DecodeError as exc:
            return DecodedRecord(
                offset,
                timestamp,
                ERROR,
                rtype,
                rt.name,
                None,
                None,
                -1,
                key,
                value,
                error=_located(exc, "key", rtype, rt.key_class),
            )
        note = None
        if end != len(key):
            note = f"{len(key) - end} byte(s) left over after the key"
        if value is None:
            return DecodedRecord(
                offset,
                timestamp,
                TOMBSTONE,
                rtype,
                rt.name,
                key_obj,
                None,
                -1,
                key,
                None,
                note=note,
            )
        if len(value) < 2:
            return DecodedRecord(
                offset,
                timestamp,
                ERROR,
                rtype,
                rt.name,
                key_obj,
                None,
                -1,
                key,
                value,
                error="Could not read version from value's buffer.",
            )
        version = _int16(value)
        reader, newer = rt.value_reader(version)
        if reader is None:
            return DecodedRecord(
                offset,
                timestamp,
                ERROR,
                rtype,
                rt.name,
                key_obj,
                None,
                version,
                key,
                value,
                error=rt.unreadable_version(version),
            )
        try:
            value_obj, end = reader(value, 2)
        except DecodeError as exc:
            return DecodedRecord(
                offset,
                timestamp,
                ERROR,
                rtype,
                rt.name,
                key_obj,
                None,
                version,
                key,
                value,
                newer_than_spec=newer,
                error=_located(exc, "value", version, rt.value_class),
            )
        if end != len(value):
            extra = f"{len(value) - end} byte(s) left over after the value"
            note = extra if note is None else f"{note}; {extra}"
        rec = DecodedRecord(
            offset,
            timestamp,
            RECORD,
            rtype,
            rt.name,
            key_obj,
            value_obj,
            version,
            key,
            value,
            newer_than_spec=newer,
            note=note,
        )
        if rtype == self._group_metadata:
            self._attach_members(rec)
        return rec

    def _attach_members(self, rec: DecodedRecord) -> None:
        payloads = self._payloads
        if payloads is None:
            payloads = self._payload_cache()
        rec.members = payloads.members(rec.value)

    def _payload_cache(self) -> PayloadCache:
        """The cache of members' payloads, made on the first group metadata value."""
        # imported for the groups that have members: it loads three generated modules,
        # which every dump would pay for at start-up
        from codegen.dumps.consumer_protocol import PayloadCache

        self._payloads = PayloadCache()
        return self._payloads

    # -- many records ----------------------------------------------------------------------

    def decode_raw(self, rows: Iterable[RawRecord]) -> list[DecodedRecord]:
        """Decode ``(offset, timestamp, key, value)`` rows (the segment layer's raw mode).

        The common case (known type, known value version, bytes that decode exactly) is inlined;
        everything else goes through :meth:`decode`.
        """
        # A batch allocates several objects per record and no cycles: the cyclic GC would
        # only rescan them (it cost about half the time), so it pauses for the batch.
        with gc_paused():
            return self._decode_raw(rows)

    def _key_entry(self, key: bytes | None) -> _KnownKey:
        """Decode a key; LookupError or the codec's DecodeError unless it decodes exactly."""
        if key is None or len(key) < 2:
            raise LookupError
        # Inline int16: record types are small non-negative numbers.
        type_id = (key[0] << 8) | key[1]
        entry = self._key_types.get(type_id)
        if entry is None:
            entry = self._key_type(type_id)
        key_reader, type_id, name, readers, newer = entry
        key_obj, end = key_reader(key, 2)
        if end != len(key):
            raise LookupError
        return (key, type_id, name, key_obj, readers, newer)

    def _rows_key_entry(self, key: bytes | None) -> _KnownKey:
        """:meth:`_key_entry`, with the value readers of group metadata (the rows loop's
        caller attaches their members)."""
        known = self._key_entry(key)
        if known[1] != self._group_metadata:
            return known
        key, type_id, name, key_obj, _, newer = known
        return (key, type_id, name, key_obj, self._members_readers, newer)

    def _key_type(self, type_id: int) -> _KeyType:
        """What :meth:`_key_entry` reads a key of a record type with (LookupError for a type
        the specs lack), made on the type's first key."""
        rt = self.types.get(type_id)
        if rt is None:
            raise LookupError
        by_version = [rt.value_reader(v) for v in range(256)]
        readers = tuple(None if newer else reader for reader, newer in by_version)
        newer = tuple(reader if newer else None for reader, newer in by_version)
        if rt.id == self._group_metadata:  # the native loop leaves them to decode()
            self._members_readers = readers
            readers = newer = (None,) * 256
        entry = self._key_types[type_id] = (rt.key_reader, rt.id, rt.name, readers, newer)
        return entry

    def _known_key(self, key: bytes) -> _KnownKey:
        """Decode a key not seen before and cache it; as :meth:`_key_entry`."""
        known = self._key_entry(key)
        self._key_cache[key] = known
        return known

    def _trim_key_cache(self) -> None:
        if len(self._key_cache) > _KEY_CACHE_SIZE:
            self._key_cache.clear()

    def _decode_raw(self, rows: Iterable[RawRecord]) -> list[DecodedRecord]:
        out: list[DecodedRecord] = []
        add = out.append
        slow = self.decode
        rec_cls = DecodedRecord
        self._trim_key_cache()
        known_keys = self._key_cache.get
        new_key = self._known_key
        members = self._group_metadata  # read here, its members attached
        for offset, ts, key, value in rows:
            try:
                # Internal topics repeat keys (one per group/partition): decode each key once.
                known = known_keys(key) or new_key(key)  # type: ignore[arg-type]
                key, type_id, name, key_obj, readers, _newer = known
                if value is None:
                    add(rec_cls(offset, ts, TOMBSTONE, type_id, name, key_obj, None, -1, key, None))
                    continue
                if value[0]:
                    raise LookupError  # a version of 256 or more, or negative
                version = value[1]
                reader = readers[version]
                if reader is None:
                    if type_id != members:
                        raise LookupError  # a version newer than the specs
                    reader = self._members_readers[version]
                    if reader is None:
                        raise LookupError
                value_obj, end = reader(value, 2)
                if end != len(value):
                    raise LookupError
                rec = rec_cls(
                    offset, ts, RECORD, type_id, name, key_obj, value_obj, version, key, value
                )
                if type_id == members:
                    self._attach_members(rec)
                add(rec)
            except (LookupError, DecodeError):  # not the common case: decode() tells what it is
                add(slow(key, value, offset, ts))
        return out

    def decode_slices(
        self,
        keys: Buffer,
        key_starts: Int64s,
        key_sizes: Int64s,
        values: Buffer,
        value_starts: Int64s,
        value_sizes: Int64s,
        offsets: Int64s,
        timestamps: Int64s,
    ) -> list[DecodedRecord]:
        """The records of rows whose keys and values are slices of ``keys`` and ``values``
        (``starts``, ``sizes``: int64 arrays, a size of -1 for a null), with their offsets and
        timestamps: what :meth:`decode_raw` gives of the same ``(offset, timestamp, key,
        value)`` rows, in one call of the native loop when :attr:`native`."""
        if self._rows_loop is None:
            key_data, value_data = memoryview(keys).cast("B"), memoryview(values).cast("B")
            return self.decode_raw(
                zip(
                    offsets.tolist(),
                    timestamps.tolist(),
                    _slices(key_data, key_starts.tolist(), key_sizes.tolist()),
                    _slices(value_data, value_starts.tolist(), value_sizes.tolist()),
                    strict=True,
                )
            )
        with gc_paused():
            records: list[DecodedRecord] = self._rows_loop.rows(
                keys, key_starts, key_sizes, values, value_starts, value_sizes, offsets, timestamps
            )
            members = self._group_metadata
            if members is not None:
                for rec in records:
                    if rec.record_type == members and rec.kind == RECORD:
                        self._attach_members(rec)
        return records

    def decode_v2_records(
        self, data: bytes, pos: int, end: int, batch: RecordBatch
    ) -> list[DecodedRecord]:
        """Parse and decode the records of a v2 data batch (a ``V2RecordLoop``).

        Gives what :func:`~codegen.dumps.batches.parse_v2_raw` followed by :meth:`decode_raw`
        (the pure reference) gives, records or error alike. With the native loop
        (:attr:`native`) well-formed records take one pass in C; a batch whose records do not
        parse is handed to the reference, so its error is the reference's.
        """
        if self._native_loop is None:
            return self._decode_raw(parse_v2_raw(data, pos, end, batch))
        try:
            return self._run_native(data, pos, end, batch)
        except self._malformed:  # the reference parser tells what is wrong with them
            return self._decode_raw(parse_v2_raw(data, pos, end, batch))

    def _run_native(
        self, data: bytes, pos: int, end: int, batch: RecordBatch
    ) -> list[DecodedRecord]:
        """The native loop over a v2 data batch, the cyclic GC paused (its records make no
        cycles)."""
        assert self._native_loop is not None
        with gc_paused():
            return self._native_loop(
                data,
                pos,
                end,
                batch.record_count,
                batch.base_offset,
                batch.base_timestamp,
                batch.attributes & 0x08,
                batch.max_timestamp,
            )

    def native_v2_records(
        self, data: bytes, pos: int, end: int, batch: RecordBatch
    ) -> list[DecodedRecord] | None:
        """The records of a v2 data batch as :meth:`decode_v2_records` gives them, when the
        native loop reads them and none has headers (decoded records do not keep headers, and
        ``kafka-dump-log`` prints their keys); else None."""
        if self._native_loop is None:
            return None
        try:
            records = self._run_native(data, pos, end, batch)
        except self._malformed:
            return None
        return None if self._native_loop.with_headers else records  # type: ignore[attr-defined]

    def decode_rows(self, batch: RecordBatch, rows: list[RawRecord]) -> list[DecodedRecord]:
        """Records of a control batch or legacy entry, as ``(offset, ts, key, value)`` rows."""
        if batch.is_control:
            return self.decode_control(batch, rows)
        return self.decode_raw(rows)

    def decode_control(self, batch: RecordBatch, rows: list[RawRecord]) -> list[DecodedRecord]:
        """Control records of a coordinator topic (transaction markers)."""
        return [control_record(row) for row in rows]


def _slices(data: memoryview, starts: list[int], sizes: list[int]) -> Iterator[bytes | None]:
    for start, size in zip(starts, sizes, strict=True):
        yield None if size < 0 else bytes(data[start : start + size])


def coordinator_decoder(
    topic: str, package: str | ModuleType = SHIPPED_PACKAGE
) -> CoordinatorDecoder:
    """The shared decoder of a coordinator topic, with the classes of ``package``; its record
    loop is the native one when :func:`native_record_loop_enabled` (checked on every call)."""
    return _shared_decoder(topic, package_name(package), native_record_loop_enabled())


@cache
def _shared_decoder(topic: str, package: str, native: bool) -> CoordinatorDecoder:
    return CoordinatorDecoder(topic, package, native=native)


def decode_batches(
    source: Source,
    topic: str = CONSUMER_OFFSETS,
    *,
    name: str | None = None,
    package: str | ModuleType = SHIPPED_PACKAGE,
    verify_crc: bool = True,
    errors: list[SegmentError] | None = None,
    max_batch_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS,
) -> Iterator[DecodedBatch | SegmentError]:
    """Batches of a coordinator-topic segment with their records decoded, and segment errors.

    ``source`` is a segment (path or bytes) or a partition folder, whose segments are read in
    order (``name`` then applies to none of them: each is named by its path).
    ``max_batch_size`` and ``max_batch_records`` are :class:`SegmentReader`'s caps. ``package``
    is the generated package whose classes decode the records.
    """
    for src in segment_sources(source):
        reader = SegmentReader(
            src,
            name=name if src is source else None,
            verify_crc=verify_crc,
            max_batch_size=max_batch_size,
            max_batch_records=max_batch_records,
        )
        yield from _segment_batches(reader, topic, errors, package)


def _segment_batches(
    reader: SegmentReader,
    topic: str,
    errors: list[SegmentError] | None,
    package: str | ModuleType = SHIPPED_PACKAGE,
) -> Iterator[DecodedBatch | SegmentError]:
    decoder = coordinator_decoder(topic, package)
    items = reader.decoded_batches(
        decoder.decode_v2_records, decoder.decode_rows, decoder.native_loop
    )
    while True:
        # Parsing and decoding a batch allocate many objects and no cycles: the cyclic GC
        # pauses meanwhile (never while the caller runs between batches).
        with gc_paused():
            item = next(items, None)
            if item is None:
                return
            result: DecodedBatch | SegmentError
            if isinstance(item, SegmentError):
                if errors is not None:
                    errors.append(item)
                result = item
            else:
                result = DecodedBatch(*item)
        yield result


def decode_records(
    source: Source,
    topic: str = CONSUMER_OFFSETS,
    *,
    name: str | None = None,
    package: str | ModuleType = SHIPPED_PACKAGE,
    include_control: bool = False,
    verify_crc: bool = True,
    errors: list[SegmentError] | None = None,
    max_batch_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS,
) -> Iterator[DecodedRecord]:
    """Every decoded record of a coordinator-topic segment or partition folder, in log order.

    Segment-level problems (bad CRC, torn tail, a batch over a cap) are appended to ``errors``
    when given.
    """
    batches = decode_batches(
        source,
        topic,
        name=name,
        package=package,
        verify_crc=verify_crc,
        errors=errors,
        max_batch_size=max_batch_size,
        max_batch_records=max_batch_records,
    )
    # chain walks each batch's list in C: no generator step per record.
    return chain.from_iterable(
        item.records
        for item in batches
        if not isinstance(item, SegmentError) and (include_control or not item.batch.is_control)
    )
