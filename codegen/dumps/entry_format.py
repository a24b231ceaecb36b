"""What both record formats of a log entry share: the sizes, the checksum of v2 batches
(CRC-32C), the cap on records a batch, the struct layouts of the log header and numbers, the
codec and timestamp type by attribute bits, and the error of an entry that cannot be read.
:mod:`codegen.dumps.batches` reads v2 batches and :mod:`codegen.dumps.legacy` v0/v1 messages
with them.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import struct
from typing import Final, Protocol

from codegen.dumps.compression import Codec
from codegen.dumps.model import ErrorKind, SegmentError, TimestampType
from codegen.dumps.varints import MalformedRecord
from codegen.extras import missing_extra

__all__ = [
    "CODECS",
    "CRC32C",
    "DEFAULT_MAX_BATCH_RECORDS",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "ENTRY_HEADER",
    "I32",
    "I64",
    "LOG_OVERHEAD",
    "MIN_LEGACY_SIZE",
    "MIN_V1_SIZE",
    "MIN_V2_RECORD_SIZE",
    "RECORD_BATCH_OVERHEAD",
    "TIMESTAMP_TYPES",
    "U32",
    "Crc32c",
    "TooManyRecords",
    "entry_error",
    "too_many_records",
]


class Crc32c(Protocol):
    """CRC-32C of ``data``, continuing from ``value`` (a checksum of the bytes before)."""

    def __call__(self, data: bytes | memoryview, value: int = 0, /) -> int: ...


def _load_crc32c() -> Crc32c:
    """The ``crc32c`` package's C function, loaded without running the package's
    ``__init__``: that calls ``importlib.metadata.version`` for its ``__version__``, whose
    import (``email`` and more) costs every dump command about 15 ms of CPU. A layout
    without the ``_crc32c`` extension falls back to the plain import."""
    package = importlib.util.find_spec("crc32c")
    if package is None:  # a runtime-only install: name the extra to add
        missing = ModuleNotFoundError("No module named 'crc32c'", name="crc32c")
        raise missing_extra("decoding Kafka log segments", "dumps", missing)
    extension = importlib.machinery.PathFinder.find_spec(
        "crc32c._crc32c", package.submodule_search_locations
    )
    if extension is None or extension.loader is None:
        import crc32c

        function: Crc32c = crc32c.crc32c
        return function
    module = importlib.util.module_from_spec(extension)
    extension.loader.exec_module(module)
    function = module.crc32c
    return function


CRC32C: Final = _load_crc32c()
"""The checksum of v2 batches, producer snapshots and more (the native loops call it too)."""
LOG_OVERHEAD: Final = 12
"""``int64 offset`` + ``int32 size`` in front of every entry."""
RECORD_BATCH_OVERHEAD: Final = 61
"""Size of a v2 batch header, log overhead included."""
MIN_LEGACY_SIZE: Final = 14
"""Smallest legacy v0 message (crc, magic, attributes, key and value lengths)."""
MIN_V1_SIZE: Final = 22
MIN_V2_RECORD_SIZE: Final = 7
"""Smallest v2 record: its length, attributes, timestampDelta, offsetDelta, keyLength,
valueLength and headerCount, one byte each."""
DEFAULT_MAX_BATCH_RECORDS: Final = 1_000_000
"""Default cap on the records of one batch. Kafka writes batches of at most max.message.bytes
(1 MiB by default; KRaft 8 MiB), whose records take 15 bytes or more, so real batches stay well
below it; a batch claiming more is read only when the caller raises the cap, which bounds the
memory one batch takes (each record becomes objects of about 100-200 bytes)."""
DEFAULT_MAX_MESSAGE_SIZE: Final = 5 * 1024 * 1024
"""kafka-dump-log's ``--max-message-size`` default: the bytes read at each ``.index`` entry."""
# The record loops do not check a record's length up front: every read either stays inside the
# (de)compressed records or raises IndexError, slices never allocate past the end of the data,
# and the position must land exactly on the record's end, so a wrong length is always caught.

ENTRY_HEADER: Final = struct.Struct(">qi")
"""An entry's log header: its offset (``int64``) and size (``int32``)."""
I32: Final = struct.Struct(">i")
U32: Final = struct.Struct(">I")
I64: Final = struct.Struct(">q")

CODECS: Final = tuple(Codec)
"""Codec by the id in an entry's attributes."""
TIMESTAMP_TYPES: Final = (TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME)
"""Timestamp type by the attributes' timestamp-type bit."""


class TooManyRecords(MalformedRecord):
    """A batch or legacy wrapper holds more records than the cap."""


def too_many_records(count: int | str, max_records: int) -> str:
    return (
        f"record count {count} is above the limit of {max_records} records per batch; "
        "raise max_batch_records (--max-batch-records) to read this batch"
    )


def entry_error(
    kind: ErrorKind, file: str, position: int, size: int, base_offset: int | None, reason: str
) -> SegmentError:
    return SegmentError(kind, file, position, size, base_offset, reason)
