"""Kafka record compression codecs, with a hard cap on the decompressed size.

Every codec goes through a maintained library (``zlib``, ``cramjam`` for snappy, ``lz4`` for the
LZ4 frame format, ``zstandard``). What is Kafka-specific lives here:

- snappy: Kafka's Java client writes the *xerial* framing (a 16-byte header followed by
  ``int32 length`` + raw snappy chunks); other clients write raw snappy. Both are detected.
- lz4: Kafka writes the standard LZ4 frame, but Kafka 0.8/0.9 computed the frame-descriptor
  checksum over the magic number too (KAFKA-3160). Such frames are accepted by recomputing that
  one checksum byte.

Decompression never produces more than ``max_size`` bytes: a codec that would is stopped and
:class:`CompressionError` is raised with ``too_large`` set.
"""

from __future__ import annotations

import zlib
from enum import IntEnum
from typing import Final

from codegen.extras import missing_extra

try:
    import cramjam
    import lz4.frame
    import zstandard
except ModuleNotFoundError as exc:  # a runtime-only install: name the extra to add
    raise missing_extra("decoding Kafka log segments", "dumps", exc) from None

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "Codec",
    "CompressionError",
    "compress",
    "decompress",
    "decompressed_size_bound",
]

DEFAULT_MAX_DECOMPRESSED_SIZE: Final = 64 * 1024 * 1024
"""Default cap on the decompressed size of one batch (64 MiB)."""


class Codec(IntEnum):
    """Compression codec ids (attribute bits 0-2)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class CompressionError(Exception):
    """Compressed data could not be decompressed within the size cap."""

    def __init__(self, message: str, *, too_large: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.too_large = too_large


XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE: Final = 16
_XERIAL_CHUNK: Final = 32 * 1024
_LZ4_MAGIC: Final = b"\x04\x22\x4d\x18"


def _library_error(codec: str, exc: Exception) -> CompressionError:
    text = str(exc)
    prefix = f"{codec}: "
    return CompressionError(text if text.startswith(prefix) else prefix + text)


def _too_large(codec: str, max_size: int) -> CompressionError:
    return CompressionError(
        f"{codec}: decompressed size exceeds the limit of {max_size} bytes", too_large=True
    )


# ---------------------------------------------------------------------------------------------
# gzip


def _gunzip(data: bytes | memoryview, max_size: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    rest: bytes | memoryview = data
    try:
        while True:
            d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            chunk = d.decompress(rest, max_size + 1 - total)
            total += len(chunk)
            parts.append(chunk)
            if total > max_size:
                raise _too_large("gzip", max_size)
            while not d.eof and d.unconsumed_tail:
                chunk = d.decompress(d.unconsumed_tail, max_size + 1 - total)
                total += len(chunk)
                parts.append(chunk)
                if total > max_size:
                    raise _too_large("gzip", max_size)
                if not chunk:
                    break
            if not d.eof:
                raise CompressionError("gzip: truncated stream")
            rest = d.unused_data
            # Concatenated gzip members are one stream, as in java.util.zip.GZIPInputStream.
            if len(rest) < 2 or bytes(rest[:2]) != b"\x1f\x8b":
                break
    except zlib.error as exc:
        raise CompressionError(f"gzip: {exc}") from None
    return b"".join(parts)


# ---------------------------------------------------------------------------------------------
# snappy


def _snappy_raw(data: bytes | memoryview, max_size: int, limit: int | None = None) -> bytes:
    """Raw snappy of at most ``max_size`` bytes; ``limit`` is the cap the error names (the
    whole stream's, when this is one xerial chunk and ``max_size`` what is left of it)."""
    try:
        size = cramjam.snappy.decompress_raw_len(data)
    except cramjam.DecompressionError as exc:
        raise _library_error("snappy", exc) from None
    if size > max_size:
        raise _too_large("snappy", max_size if limit is None else limit)
    try:
        return bytes(cramjam.snappy.decompress_raw(data))
    except cramjam.DecompressionError as exc:
        raise _library_error("snappy", exc) from None


def _snappy_xerial(data: bytes | memoryview, max_size: int) -> bytes:
    view = memoryview(data)
    n = len(view)
    pos = _XERIAL_HEADER_SIZE
    parts: list[bytes] = []
    total = 0
    while pos < n:
        if pos + 4 > n:
            raise CompressionError("snappy: truncated xerial chunk header")
        size = int.from_bytes(view[pos : pos + 4], "big", signed=True)
        pos += 4
        if size < 0 or pos + size > n:
            raise CompressionError(f"snappy: xerial chunk of {size} bytes runs past the end")
        chunk = _snappy_raw(view[pos : pos + size], max_size - total, max_size)
        total += len(chunk)
        parts.append(chunk)
        pos += size
    return b"".join(parts)


def _unsnappy(data: bytes | memoryview, max_size: int) -> bytes:
    head = bytes(data[:16])
    if head.startswith(XERIAL_MAGIC) and len(head) == _XERIAL_HEADER_SIZE:
        return _snappy_xerial(data, max_size)
    return _snappy_raw(data, max_size)


def _snappy_compress(data: bytes) -> bytes:
    parts = [XERIAL_MAGIC, b"\x00\x00\x00\x01\x00\x00\x00\x01"]
    view = memoryview(data)
    for start in range(0, len(data), _XERIAL_CHUNK):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_CHUNK]))
        parts.append(len(block).to_bytes(4, "big"))
        parts.append(block)
    return b"".join(parts)


# ---------------------------------------------------------------------------------------------
# lz4

_P1: Final = 2654435761
_P2: Final = 2246822519
_P3: Final = 3266489917
_P4: Final = 668265263
_P5: Final = 374761393
_M32: Final = 0xFFFFFFFF


def _xxh32_short(data: bytes) -> int:
    """XXH32 with seed 0 of fewer than 16 bytes (an LZ4 frame descriptor is at most 14)."""
    n = len(data)
    h = (_P5 + n) & _M32
    i = 0
    while i + 4 <= n:
        h = (h + int.from_bytes(data[i : i + 4], "little") * _P3) & _M32
        h = (((h << 17) | (h >> 15)) & _M32) * _P4 & _M32
        i += 4
    while i < n:
        h = (h + data[i] * _P5) & _M32
        h = (((h << 11) | (h >> 21)) & _M32) * _P1 & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


def _lz4_descriptor_end(data: bytes) -> int:
    """Index of the header-checksum byte of an LZ4 frame, or -1 if the header is too short."""
    if len(data) < 7:
        return -1
    flg = data[4]
    end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    return end if end < len(data) else -1


def _fix_lz4_header_checksum(data: bytes) -> bytes | None:
    """Return ``data`` with a correct frame-descriptor checksum, or None if it was not wrong."""
    end = _lz4_descriptor_end(data)
    if end < 0 or not data.startswith(_LZ4_MAGIC):
        return None
    good = (_xxh32_short(data[4:end]) >> 8) & 0xFF
    if data[end] == good:
        return None
    return data[:end] + bytes((good,)) + data[end + 1 :]


_LZ4_STEP: Final = 1 << 20
"""The most output asked of the lz4 decompressor per call: it allocates ``max_length`` up front,
so asking for the whole cap (64 MiB by default) at once cost about 25 us per small batch."""


def _lz4_once(data: bytes, max_size: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    rest = data
    while True:
        d = lz4.frame.LZ4FrameDecompressor()
        pending = rest
        while True:  # a step at a time, until the frame ends or its input runs out
            chunk = d.decompress(pending, max_length=min(_LZ4_STEP, max_size + 1 - total))
            pending = b""
            total += len(chunk)
            parts.append(chunk)
            if total > max_size:
                raise _too_large("lz4", max_size)
            if d.eof or d.needs_input:
                break
        if not d.eof:
            raise CompressionError("lz4: truncated frame")
        rest = d.unused_data
        if not rest:
            break
        if not rest.startswith(_LZ4_MAGIC):
            raise CompressionError(f"lz4: {len(rest)} bytes of garbage after the frame")
    return b"".join(parts)


def _unlz4(data: bytes | memoryview, max_size: int) -> bytes:
    raw = bytes(data)
    try:
        return _lz4_once(raw, max_size)
    except RuntimeError as exc:
        fixed = _fix_lz4_header_checksum(raw) if "headerChecksum" in str(exc) else None
        if fixed is None:
            raise CompressionError(f"lz4: {exc}") from None
    try:
        return _lz4_once(fixed, max_size)
    except RuntimeError as exc:
        raise CompressionError(f"lz4: {exc}") from None


def _lz4_compress(data: bytes, *, level: int | None, legacy_header_checksum: bool) -> bytes:
    frame: bytes = lz4.frame.compress(
        data,
        compression_level=level or 0,
        block_size=lz4.frame.BLOCKSIZE_MAX64KB,
        block_linked=False,
        store_size=False,
    )
    if not legacy_header_checksum:
        return frame
    end = _lz4_descriptor_end(frame)
    bad = (_xxh32_short(frame[:end]) >> 8) & 0xFF
    return frame[:end] + bytes((bad,)) + frame[end + 1 :]


# ---------------------------------------------------------------------------------------------
# zstd

_ZSTD_DCTX = zstandard.ZstdDecompressor()


def _unzstd(data: bytes | memoryview, max_size: int) -> bytes:
    try:
        size = zstandard.frame_content_size(data)
    except zstandard.ZstdError as exc:
        raise _library_error("zstd", exc) from None
    if size > max_size:
        raise _too_large("zstd", max_size)
    if size >= 0:
        try:
            return _ZSTD_DCTX.decompress(data, allow_extra_data=False)
        except zstandard.ZstdError:
            pass  # several frames or a header that lies: take the bounded path below
    # Unknown content size (what Kafka's streaming compressor writes). Input is fed in slices
    # small enough that one call cannot produce much more than what is left under the cap
    # (a zstd block expands at most ~32768 times).
    view = memoryview(data)
    n = len(view)
    parts: list[bytes] = []
    total = 0
    pos = 0
    try:
        while pos < n:
            dobj = _ZSTD_DCTX.decompressobj()
            while pos < n and not dobj.eof:
                step = max(64, (max_size - total) >> 15)
                chunk = dobj.decompress(view[pos : pos + step])
                pos += step
                total += len(chunk)
                if total > max_size:
                    raise _too_large("zstd", max_size)
                parts.append(chunk)
            if not dobj.eof:
                raise CompressionError("zstd: truncated frame")
            pos -= len(dobj.unused_data)
    except zstandard.ZstdError as exc:
        raise _library_error("zstd", exc) from None
    return b"".join(parts)


# ---------------------------------------------------------------------------------------------
# public

_MAX_EXPANSION: Final[dict[int, int]] = {Codec.GZIP: 1032, Codec.SNAPPY: 22, Codec.LZ4: 255}
"""Most output bytes one input byte can give: deflate 1032 (zlib's documented limit), snappy
64/3 (a 3-byte copy of 64 bytes), LZ4 255 (each match-length byte adds at most 255). A zstd
block can expand far more (RLE), so zstd has no such bound."""


def decompressed_size_bound(codec: int, compressed_size: int) -> int | None:
    """An upper bound on what ``compressed_size`` bytes of ``codec`` can decompress to, known
    without decompressing (None when the codec has no useful one: zstd, unknown ids)."""
    if codec == Codec.NONE:
        return compressed_size
    ratio = _MAX_EXPANSION.get(codec)
    return None if ratio is None else ratio * compressed_size


def decompress(
    codec: int, data: bytes | memoryview, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
) -> bytes:
    """Decompress ``data`` written with ``codec``; at most ``max_size`` bytes come out.

    Raises :class:`CompressionError` for corrupt input, an unknown codec or a result larger than
    ``max_size`` (``too_large`` set).
    """
    if codec == Codec.GZIP:
        return _gunzip(data, max_size)
    if codec == Codec.SNAPPY:
        return _unsnappy(data, max_size)
    if codec == Codec.LZ4:
        return _unlz4(data, max_size)
    if codec == Codec.ZSTD:
        return _unzstd(data, max_size)
    if codec == Codec.NONE:
        if len(data) > max_size:
            raise _too_large("none", max_size)
        return bytes(data)
    raise CompressionError(f"unknown compression codec id {codec}")


def compress(
    codec: int,
    data: bytes,
    *,
    level: int | None = None,
    snappy_framing: bool = True,
    lz4_legacy_header_checksum: bool = False,
) -> bytes:
    """Compress ``data`` the way Kafka's producer does for ``codec``.

    ``snappy_framing=False`` writes raw snappy instead of the xerial framing.
    ``lz4_legacy_header_checksum=True`` writes the wrong frame-descriptor checksum of Kafka 0.8/0.9
    (for tests of legacy v0 messages).
    """
    if codec == Codec.NONE:
        return data
    if codec == Codec.GZIP:
        obj = zlib.compressobj(6 if level is None else level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return obj.compress(data) + obj.flush()
    if codec == Codec.SNAPPY:
        if snappy_framing:
            return _snappy_compress(data)
        return bytes(cramjam.snappy.compress_raw(data))
    if codec == Codec.LZ4:
        return _lz4_compress(data, level=level, legacy_header_checksum=lz4_legacy_header_checksum)
    if codec == Codec.ZSTD:
        return zstandard.ZstdCompressor(level=3 if level is None else level).compress(data)
    raise ValueError(f"unknown compression codec id {codec}")
