"""Reading whole log segments (``.log``) and KRaft snapshots (``.checkpoint``).

Both are back-to-back log entries (v2 batches, or legacy v0/v1 messages in old segments, possibly
mixed). :class:`SegmentReader` walks them in file order and yields a :class:`RecordBatch` or a
:class:`SegmentError` for every stretch of the file: nothing is skipped without being reported,
and the positions and sizes of the items cover the file exactly.

Framing rules:

- An entry whose size field fits in the file is decoded; if decoding fails (bad CRC, bad magic,
  decompression failure, records that do not parse) the error covers that entry and reading goes
  on right after it.
- An entry whose size is impossible (smaller than any message) ends the walk: the rest of the
  file is reported, as ``zero-padding`` when it is all zero bytes, as ``bad-length`` otherwise.
- An entry that runs past the end of the file is a ``truncated-tail`` (or ``zero-padding``).
- An entry larger than ``max_batch_size`` is reported as ``too-large`` and skipped; the same cap
  bounds the decompressed size of one batch. A batch whose record count is above
  ``max_batch_records`` is reported as ``too-many-records`` before it is decompressed. Together
  they bound the memory one batch takes, whatever its header claims.
"""

from __future__ import annotations

import importlib
import mmap
import os
import re
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Final, TypeGuard, TypeVar

from codegen.dumps import storage
from codegen.dumps.batches import (
    DEFAULT_MAX_BATCH_RECORDS,
    LOG_OVERHEAD,
    MIN_LEGACY_SIZE,
    V2RecordLoop,
    decode_entry,
    decode_entry_with,
    keep_rows,
    parse_v2_raw,
    read_batch_header,
)
from codegen.dumps.compression import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    Codec,
    decompress,
    decompressed_size_bound,
)
from codegen.dumps.model import (
    BatchHeader,
    ErrorKind,
    HeaderColumns,
    RawRecord,
    RecordBatch,
    SegmentError,
    SegmentSummary,
    TimestampType,
)
from codegen.runtime import backends

__all__ = [
    "SegmentFileInfo",
    "SegmentReader",
    "Source",
    "header_pass_for",
    "iter_raw_records",
    "native_headers_enabled",
    "read_segment",
    "segment_file_info",
    "segment_files",
    "segment_sources",
    "summarize",
]

Source = str | os.PathLike[str] | storage.RemotePath | bytes | bytearray | memoryview
"""A file path (local, or a URL of :mod:`codegen.dumps.storage`), or the bytes of a file."""

_HEADER_RUN: Final = 4096
"""Most headers one call of the native header pass returns (bounds the list it builds)."""
_COLUMN_RUN: Final = 1 << 16
"""Most headers one call of the native header pass into columns reads (bounds its arrays:
about 4 MB)."""
_EXPANSION: Final = tuple(decompressed_size_bound(codec, 1) or 0 for codec in range(5))
"""Per codec id, the most bytes one compressed byte can give (0: no bound), for the native
header pass's record count check."""
_LOOP_RUN: Final = 64
"""Records after which one call of a native record loop's ``batches`` returns. Longer runs
keep more records alive while the caller runs, so the cyclic collector moves them to older
generations: past a few hundred records that costs more than the calls saved."""
_TIMESTAMP_TYPES: Final = (TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME)
_CODECS: Final = tuple(Codec(codec) for codec in range(5))
"""The codecs by id, for the batches a native record loop reads."""


def _native_header_pass() -> ModuleType | None:
    try:
        module = importlib.import_module("codegen.native._records")
    except ImportError:
        return None
    return module if hasattr(module, "batch_header_columns") else None


def native_headers_enabled() -> bool:
    """Whether :meth:`SegmentReader.batch_headers` runs the native header pass by default: it
    is built (``python -m codegen.native.build``) and the backend asked for is not ``pure``."""
    return backends.requested() != backends.PURE and _native_header_pass() is not None


def header_pass_for(native: bool | None) -> ModuleType | None:
    """The native header pass a call asked for (``native`` as in
    :meth:`SegmentReader.batch_headers`), or None for the reference."""
    if native is None:
        native = native_headers_enabled()
    module = _native_header_pass() if native else None
    if native and module is None:
        raise ImportError("the native header pass is not built: run python -m codegen.native.build")
    return module


SEGMENT_SUFFIXES: Final = (".log", ".checkpoint")
"""The files of a partition folder that hold records: log segments and KRaft snapshots."""


def segment_files(folder: str | os.PathLike[str] | storage.RemotePath) -> list[storage.StoragePath]:
    """The segments and snapshots of a partition folder, in name (= base offset) order."""
    listed = storage.path(folder).iterdir()
    return sorted((f for f in listed if f.suffix in SEGMENT_SUFFIXES and f.is_file()), key=_name)


def _name(path: storage.StoragePath) -> str:
    return path.name


def _is_folder(
    source: Source,
) -> TypeGuard[str | os.PathLike[str] | storage.RemotePath]:
    if isinstance(source, bytes | bytearray | memoryview):
        return False
    if isinstance(source, storage.RemotePath) or storage.is_url(source):
        return storage.path(source).is_dir()
    return os.path.isdir(source)


def segment_sources(source: Source) -> list[Source]:
    """``source`` as the list of files to read: a folder's segments, else ``[source]``."""
    if _is_folder(source):
        return list(segment_files(source))
    return [source]


_ENTRY: Final = struct.Struct(">qi")
_ZERO_SCAN: Final = 1 << 20

_Buffer = bytes | mmap.mmap
_Item = TypeVar("_Item")
_Entry = TypeVar("_Entry")

_LOG_NAME: Final = re.compile(r"(\d{20})\.log")
_REMOTE_LOG_NAME: Final = re.compile(r"(\d+)-([A-Za-z0-9_-]{22})\.log")
"""A remote segment as Kafka's LocalTieredStorage names it: ``<base offset>-<segment id>.log``."""
_SNAPSHOT_NAME: Final = re.compile(r"(\d{20})-(\d{10})\.checkpoint")


@dataclass(slots=True, frozen=True)
class SegmentFileInfo:
    """What a data file's name says (``kafka-dump-log`` prints it before the batches)."""

    kind: str
    """``"log"`` for ``*.log``, ``"snapshot"`` for ``*.checkpoint``, else ``"other"``."""
    base_offset: int | None = None
    """First offset of a segment named ``<20 digits>.log``."""
    snapshot_end_offset: int | None = None
    """End offset of a KRaft snapshot named ``<20 digits>-<10 digits>.checkpoint``."""
    snapshot_epoch: int | None = None
    segment_id: str | None = None
    """The remote segment id of a segment named ``<base offset>-<segment id>.log`` (a copy in
    tiered storage, as Kafka's ``LocalTieredStorage`` names it)."""


def segment_file_info(path: str | os.PathLike[str] | storage.RemotePath) -> SegmentFileInfo:
    """Classify a segment or snapshot file by its name."""
    name = path.name if isinstance(path, storage.RemotePath) else os.path.basename(os.fspath(path))
    if m := _LOG_NAME.fullmatch(name):
        return SegmentFileInfo("log", base_offset=int(m.group(1)))
    if m := _REMOTE_LOG_NAME.fullmatch(name):
        return SegmentFileInfo("log", base_offset=int(m.group(1)), segment_id=m.group(2))
    if m := _SNAPSHOT_NAME.fullmatch(name):
        return SegmentFileInfo(
            "snapshot", snapshot_end_offset=int(m.group(1)), snapshot_epoch=int(m.group(2))
        )
    if name.endswith(".log"):
        return SegmentFileInfo("log")
    if name.endswith(".checkpoint"):
        return SegmentFileInfo("snapshot")
    return SegmentFileInfo("other")


def _all_zero(data: _Buffer, start: int, end: int) -> bool:
    pos = start
    while pos < end:
        stop = min(end, pos + _ZERO_SCAN)
        if data[pos:stop].count(0) != stop - pos:
            return False
        pos = stop
    return True


def frame_at(
    data: _Buffer, file: str, max_size: int, pos: int
) -> tuple[tuple[int, int] | SegmentError, int]:
    """The entry at ``pos`` as ``(position, size)``, or its framing error, and where the next
    entry starts: ``len(data)`` when the error ends the framing (all but TOO_LARGE do)."""
    n = len(data)
    rem = n - pos
    if rem < LOG_OVERHEAD:
        if _all_zero(data, pos, n):
            error = SegmentError(
                ErrorKind.ZERO_PADDING, file, pos, rem, None, f"{rem} zero bytes at the end"
            )
        else:
            error = SegmentError(
                ErrorKind.TRUNCATED_TAIL,
                file,
                pos,
                rem,
                None,
                f"{rem} bytes at the end are too few for an entry header",
            )
        return error, n
    offset, size = _ENTRY.unpack_from(data, pos)
    if size < MIN_LEGACY_SIZE or size > rem - LOG_OVERHEAD:
        if _all_zero(data, pos, n):
            error = SegmentError(
                ErrorKind.ZERO_PADDING, file, pos, rem, None, f"{rem} zero bytes at the end"
            )
        elif size >= MIN_LEGACY_SIZE:
            error = SegmentError(
                ErrorKind.TRUNCATED_TAIL,
                file,
                pos,
                rem,
                offset,
                f"entry of {size} bytes is cut short: only {rem - LOG_OVERHEAD} bytes remain",
            )
        else:
            error = SegmentError(
                ErrorKind.BAD_LENGTH,
                file,
                pos,
                rem,
                offset,
                f"invalid entry size {size}; the remaining {rem} bytes cannot be framed",
            )
        return error, n
    total = LOG_OVERHEAD + size
    if size > max_size:
        error = SegmentError(
            ErrorKind.TOO_LARGE,
            file,
            pos,
            total,
            offset,
            f"entry of {size} bytes is larger than the limit of {max_size} bytes",
        )
        return error, pos + total
    return (pos, total), pos + total


class SegmentReader:
    """Decode one segment or snapshot file, from a path or from bytes.

    Iterating yields :class:`RecordBatch` and :class:`SegmentError` items in file order.
    :meth:`raw_records` is the cheap mode: ``(offset, timestamp, key, value)`` tuples, with the
    errors collected in :attr:`errors` (and passed to ``on_error`` when given). :attr:`summary`
    counts what has been read so far. Each iteration reads the source again from the start.

    ``max_batch_size`` caps the stored and the decompressed size of one batch, and
    ``max_batch_records`` its record count; a batch over either is reported, not read.
    """

    def __init__(
        self,
        source: Source,
        *,
        name: str | None = None,
        max_batch_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
        verify_crc: bool = True,
        on_error: Callable[[SegmentError], None] | None = None,
        max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS,
    ) -> None:
        if _is_folder(source):
            raise IsADirectoryError(
                f"{source} is a folder: a SegmentReader reads one file; decode_records, "
                "decode_batches and the metadata decoders read whole partition folders, and "
                "segment_files(folder) lists a folder's segments"
            )
        if isinstance(source, str) and storage.is_url(source):
            source = storage.path(source)
        self._source = source
        if name is None:
            name = "<bytes>" if isinstance(source, bytes | bytearray | memoryview) else str(source)
        self.name = name
        self.max_batch_size = max_batch_size
        self.max_batch_records = max_batch_records
        self.verify_crc = verify_crc
        self.on_error = on_error
        self.errors: list[SegmentError] = []
        self.summary = SegmentSummary(name)

    # -- plumbing -------------------------------------------------------------------------------

    def _reset(self, size: int) -> None:
        self.errors = []
        self.summary = SegmentSummary(self.name, size=size)

    def _note_error(self, err: SegmentError) -> None:
        self.errors.append(err)
        s = self.summary
        s.errors += 1
        s.error_bytes += err.size
        if self.on_error is not None:
            self.on_error(err)

    def _note_batch(self, batch: RecordBatch, records: int) -> None:
        s = self.summary
        s.batches += 1
        s.records += records
        if batch.is_control:
            s.control_batches += 1
            s.control_records += records
        if s.first_offset is None:
            s.first_offset = batch.base_offset
        s.last_offset = batch.last_offset

    @contextmanager
    def opened(self) -> Iterator[_Buffer]:
        """Yield the source's bytes once (a read-only map for a file), closing it afterwards."""
        src = self._source
        if isinstance(src, bytes):
            yield src
            return
        if isinstance(src, bytearray | memoryview):
            yield bytes(src)
            return
        if isinstance(src, storage.RemotePath):
            yield src.read_bytes()  # a whole file read: one request
            return
        with open(src, "rb") as fh:
            try:
                mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            except ValueError:  # an empty file cannot be mapped
                yield fh.read()
                return
            storage.READS.add(len(mapped))
            try:
                yield mapped
            finally:
                mapped.close()

    # -- modes ----------------------------------------------------------------------------------

    def _entries(
        self,
        read: Callable[[bytes, int], _Entry | SegmentError],
        native_run: Callable[[_Buffer, int], tuple[list[_Entry], int]] | None = None,
    ) -> Iterator[_Entry | SegmentError]:
        """Every entry of the source, read by ``read(entry bytes, position)``, and the
        framing errors (errors noted in :attr:`summary`). ``native_run(data, pos)`` reads the
        entries it can from ``pos`` on in one call, up to one it leaves to ``read``: ``(what it
        read, where it stopped)``."""
        with self.opened() as data:
            self._reset(len(data))
            pos, n = 0, len(data)
            while pos < n:
                if native_run is not None:
                    run, pos = native_run(data, pos)
                    yield from run
                    if run:
                        continue
                frame, pos = frame_at(data, self.name, self.max_batch_size, pos)
                if isinstance(frame, SegmentError):
                    self._note_error(frame)
                    yield frame
                    continue
                at, total = frame
                item = read(data[at : at + total], at)
                if isinstance(item, SegmentError):
                    self._note_error(item)
                yield item

    def _limits(self) -> dict[str, Any]:
        """The reader's settings, as the entry readers take them."""
        return {
            "file": self.name,
            "max_size": self.max_batch_size,
            "verify_crc": self.verify_crc,
            "max_records": self.max_batch_records,
        }

    def header_pass_checks(self) -> tuple[bool, int, int, tuple[int, ...]]:
        """The reader's checks as the native header passes take them after ``data, pos``: CRC
        verification (the passes compute CRC-32C in C), the batch size and record count limits,
        and each codec's expansion bound."""
        return (self.verify_crc, self.max_batch_size, self.max_batch_records, _EXPANSION)

    def __iter__(self) -> Iterator[RecordBatch | SegmentError]:
        limits = self._limits()
        for item in self._entries(lambda buf, at: decode_entry(buf, position=at, **limits)):
            if not isinstance(item, SegmentError):
                self._note_batch(item, len(item.records))
            yield item

    def decoded_batches(
        self,
        v2_records: V2RecordLoop[_Item],
        other_records: Callable[[RecordBatch, list[RawRecord]], list[_Item]],
        native_loop: Any = None,
    ) -> Iterator[tuple[RecordBatch, list[_Item]] | SegmentError]:
        """Batches (with empty ``records``) and their records as items, or errors.

        ``v2_records`` turns the record bytes of v2 data batches into items, ``other_records``
        the records of every other entry (see :func:`~codegen.dumps.batches.decode_entry_with`).
        ``native_loop``, the native record loop ``v2_records`` runs (its ``RecordLoop``, see
        ``codegen/native/records.c``), reads the uncompressed v2 data batches a run at a time,
        in one call each, up to an entry it leaves to the steps here: the same batches, items
        and errors, without a Python step per batch.
        """
        limits = self._limits()

        def read(buf: bytes, at: int) -> tuple[RecordBatch, list[_Item]] | SegmentError:
            return decode_entry_with(buf, v2_records, other_records, position=at, **limits)

        def native_run(data: _Buffer, pos: int) -> tuple[list[Any], int]:
            run: list[Any]
            run, pos = native_loop.batches(
                data,
                pos,
                self.verify_crc,
                self.max_batch_size,
                self.max_batch_records,
                RecordBatch,
                self.name,
                _CODECS,
                _TIMESTAMP_TYPES,
                _LOOP_RUN,
                decompress,
            )
            return run, pos

        for item in self._entries(read, None if native_loop is None else native_run):
            if not isinstance(item, SegmentError):
                self._note_batch(item[0], len(item[1]))
            yield item

    def batch_headers(self, *, native: bool | None = None) -> Iterator[BatchHeader | SegmentError]:
        """The header of every entry, without reading data batches' records, or the errors.

        Each entry is checked as :func:`~codegen.dumps.batches.read_batch_header` checks it:
        data batches by their header and CRC only (their records are not decompressed, so
        damage inside them is not seen); control batches and legacy entries whole. The framing
        and its errors are the other modes'. :attr:`summary` counts the errors only.

        ``native`` None runs the native header pass (``codegen/native/records.c``) when
        :func:`native_headers_enabled`; True requires it (ImportError when it is not built);
        False reads every entry with the reference. Both give the same headers and errors.
        """
        module = header_pass_for(native)
        limits = self._limits()
        checks = self.header_pass_checks()

        def native_run(data: _Buffer, pos: int) -> tuple[list[Any], int]:
            # The plain v2 batches in C, up to an entry it leaves to the reference.
            assert module is not None
            headers: list[Any]
            headers, pos = module.batch_headers(data, pos, *checks, BatchHeader, _HEADER_RUN)
            return headers, pos

        yield from self._entries(
            lambda buf, at: read_batch_header(buf, position=at, **limits),
            None if module is None else native_run,
        )

    def batch_header_columns(
        self, *, native: bool | None = None
    ) -> Iterator[HeaderColumns | BatchHeader | SegmentError]:
        """:meth:`batch_headers`, in file order, the runs of headers the native header pass reads
        as :class:`HeaderColumns` (no object per batch), the entries it leaves to the reference
        as their headers or errors. Without the native pass (``native`` as in
        :meth:`batch_headers`), every entry is one of those."""
        module = header_pass_for(native)
        limits = self._limits()
        checks = self.header_pass_checks()

        def native_run(data: _Buffer, pos: int) -> tuple[list[Any], int]:
            assert module is not None
            columns, after = module.batch_header_columns(data, pos, *checks, _COLUMN_RUN)
            return ([HeaderColumns(*columns)] if after > pos else []), after

        yield from self._entries(
            lambda buf, at: read_batch_header(buf, position=at, **limits),
            None if module is None else native_run,
        )

    def raw_batches(self) -> Iterator[tuple[RecordBatch, list[RawRecord]] | SegmentError]:
        """Batches (with empty ``records``) and their records as tuples, or errors."""
        return self.decoded_batches(parse_v2_raw, keep_rows)

    def raw_records(self, *, include_control: bool = False) -> Iterator[RawRecord]:
        """``(offset, timestamp, key, value)`` per record; control records only if asked."""
        for item in self.raw_batches():
            if isinstance(item, SegmentError):
                continue  # recorded in self.errors and the summary
            batch, rows = item
            if include_control or not batch.is_control:
                yield from rows

    def read_all(self) -> SegmentSummary:
        """Read the whole source (records as tuples) and return the summary."""
        for _ in self.raw_batches():
            pass
        return self.summary


def read_segment(
    source: Source,
    *,
    name: str | None = None,
    max_batch_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    verify_crc: bool = True,
    max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS,
) -> Iterator[RecordBatch | SegmentError]:
    """Batches and errors of a segment or snapshot, in file order."""
    return iter(
        SegmentReader(
            source,
            name=name,
            max_batch_size=max_batch_size,
            verify_crc=verify_crc,
            max_batch_records=max_batch_records,
        )
    )


def iter_raw_records(
    source: Source,
    *,
    name: str | None = None,
    errors: list[SegmentError] | None = None,
    include_control: bool = False,
    max_batch_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    verify_crc: bool = True,
    max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS,
) -> Iterator[RawRecord]:
    """``(offset, timestamp, key, value)`` per record; errors are appended to ``errors``."""
    reader = SegmentReader(
        source,
        name=name,
        max_batch_size=max_batch_size,
        verify_crc=verify_crc,
        on_error=None if errors is None else errors.append,
        max_batch_records=max_batch_records,
    )
    return reader.raw_records(include_control=include_control)


def summarize(
    source: Source,
    *,
    name: str | None = None,
    max_batch_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    verify_crc: bool = True,
    max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS,
) -> SegmentSummary:
    """Read a whole segment and count batches, records and errors."""
    reader = SegmentReader(
        source,
        name=name,
        max_batch_size=max_batch_size,
        verify_crc=verify_crc,
        max_batch_records=max_batch_records,
    )
    return reader.read_all()
