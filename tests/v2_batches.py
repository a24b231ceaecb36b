"""v2 record batches for the tests that hold a fast path (the native record loop, the header
pass, the columnar builder, the one-pass coordinator decoder) against the pure one: a batch
given other record bytes under a valid CRC, every cut and byte change of those bytes, the
reference decode of a coordinator segment, and a batch whose header outlives its newest record
(compaction).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import crc32c
import pytest

from codegen.dumps import (
    Codec,
    ControlType,
    SegmentError,
    SegmentReader,
    compress,
    encode_control_batch,
    encode_record_batch,
)
from codegen.dumps.coordinator import CONSUMER_OFFSETS, CoordinatorDecoder
from codegen.dumps.decoded import DecodedBatch, control_record
from codegen.dumps.segments import frame_at


def with_records(plain: bytes, body: bytes, codec: Codec = Codec.NONE) -> bytes:
    """The v2 batch ``plain`` with other (uncompressed) record bytes, compressed with ``codec``
    and checksummed; its other attribute bits (transactional, control) are kept."""
    payload = compress(codec, body)
    header = bytearray(plain[:61])
    struct.pack_into(">i", header, 8, 49 + len(payload))
    struct.pack_into(">h", header, 21, int(codec) | (struct.unpack_from(">h", plain, 21)[0] & ~7))
    struct.pack_into(">I", header, 17, crc32c.crc32c(bytes(header[21:]) + payload))
    return bytes(header) + payload


def record_bytes_variants(body: bytes) -> list[bytes]:
    """Record bytes cut at every position, each byte changed three ways, one byte more and
    the bytes twice."""
    variants = [body[:n] for n in range(len(body))]
    for pos in range(len(body)):
        for new in {body[pos] ^ 0x01, body[pos] ^ 0x80, 0xFF}:
            variants.append(body[:pos] + bytes([new]) + body[pos + 1 :])
    variants += [body + b"\x00", body + body]
    return variants


def between_good_batches(plain: bytes, codec: Codec = Codec.NONE) -> Iterator[tuple[bytes, bytes]]:
    """Each of :func:`record_bytes_variants` of the batch ``plain``'s records, and a segment of
    ``plain`` with those records (:func:`with_records`) between two good batches: one before
    (base offset -5, key ``before``) and one after (base offset 1000, key ``after``)."""
    before = encode_record_batch([(b"before", b"1")], base_offset=-5)
    after = encode_record_batch([(b"after", b"2")], base_offset=1000)
    for variant in record_bytes_variants(plain[61:]):
        yield variant, before + with_records(plain, variant, codec) + after


def reference_batches(
    data: bytes, topic: str = CONSUMER_OFFSETS, verify_crc: bool = True
) -> list[DecodedBatch | SegmentError]:
    """The reference decode of a coordinator segment: the segment reader's raw mode, then
    ``CoordinatorDecoder.decode`` per record, control records through ``control_record``."""
    decoder = CoordinatorDecoder(topic, native=False)
    out: list[DecodedBatch | SegmentError] = []
    for item in SegmentReader(data, verify_crc=verify_crc).raw_batches():
        if isinstance(item, SegmentError):
            out.append(item)
            continue
        batch, rows = item
        if batch.is_control:
            records = [control_record(row) for row in rows]
        else:
            records = [decoder.decode(k, v, o, t) for o, t, k, v in rows]
        out.append(DecodedBatch(batch, records))
    return out


BAD_CONTROL_BATCHES = [
    pytest.param(encode_control_batch(ControlType.COMMIT, key_version=-1), id="key-version"),
    pytest.param(encode_control_batch(ControlType.ABORT, value=b"\x00"), id="short-marker"),
    pytest.param(encode_control_batch(ControlType.COMMIT, marker_version=-2), id="marker-version"),
    pytest.param(encode_control_batch(ControlType.LEADER_CHANGE, value=None), id="no-value"),
    pytest.param(encode_control_batch(99, value=b"x"), id="unknown-type"),
]
"""Control batches whose key or marker the decoder refuses."""


def entry_frames(data: bytes, max_size: int = 1 << 30) -> list[tuple[int, int] | SegmentError]:
    """``(position, size)`` of every complete entry of a segment, or its framing errors."""
    frames: list[tuple[int, int] | SegmentError] = []
    pos = 0
    while pos < len(data):
        frame, pos = frame_at(data, "<bytes>", max_size, pos)
        frames.append(frame)
    return frames


def with_newer_header(segment: Path, position: int, max_timestamp: int) -> None:
    """The batch at ``position`` given a newer ``maxTimestamp`` than its records', as a batch
    keeps it when compaction removed its newest record (its CRC-32C made again)."""
    data = bytearray(segment.read_bytes())
    end = position + 12 + struct.unpack_from(">i", data, position + 8)[0]
    struct.pack_into(">q", data, position + 35, max_timestamp)
    struct.pack_into(">I", data, position + 17, crc32c.crc32c(bytes(data[position + 21 : end])))
    segment.write_bytes(bytes(data))
