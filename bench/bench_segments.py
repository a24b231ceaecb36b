"""Segment reader throughput on OffsetCommit-shaped records.

Writes a segment of N records (key ~50 bytes, value ~30 bytes, 100-500 records per batch) per
codec with the segment writer, then times reading it back on one core, best of 3:

- ``objects``: ``SegmentReader`` iteration (``RecordBatch`` + ``Record`` objects),
- ``raw``: ``SegmentReader.raw_records()`` (``(offset, timestamp, key, value)`` tuples).

Usage: ``python bench/bench_segments.py [--records N] [--repeat R] [--dir DIR]``
"""

from __future__ import annotations

import argparse
import os
import random
import struct
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from codegen.dumps import Codec, SegmentReader, SegmentWriter

_KEY = struct.Struct(">hh")
_VALUE_HEAD = struct.Struct(">hqi")


def _key(group: bytes, topic: bytes, partition: int) -> bytes:
    """OffsetCommitKey v1: int16 type, group, topic, int32 partition."""
    return b"".join(
        (
            _KEY.pack(1, len(group)),
            group,
            struct.pack(">h", len(topic)),
            topic,
            struct.pack(">i", partition),
        )
    )


def _value(offset: int, commit_ts: int) -> bytes:
    """OffsetCommitValue v3: version, offset, leaderEpoch, metadata, commitTimestamp."""
    return _VALUE_HEAD.pack(3, offset, 7) + struct.pack(">h", 0) + struct.pack(">q", commit_ts)


def _batches(total: int, seed: int = 1) -> Iterator[list[tuple[bytes, bytes]]]:
    rng = random.Random(seed)
    keys = [
        _key(b"consumer-group-%03d" % g, b"orders.events.v%d" % t, p)
        for g in range(20)
        for t in range(5)
        for p in range(12)
    ]
    written = 0
    ts = 1_700_000_000_000
    while written < total:
        n = min(rng.randint(100, 500), total - written)
        batch = []
        for _ in range(n):
            written += 1
            batch.append((rng.choice(keys), _value(written * 3, ts + written)))
        yield batch


def write_segment(path: str, records: int, codec: Codec) -> float:
    start = time.perf_counter()
    with SegmentWriter(path) as w:
        ts = 1_700_000_000_000
        for batch in _batches(records):
            w.write_batch(batch, codec=codec, timestamp=ts, producer_id=-1)
            ts += 1
    return time.perf_counter() - start


def _best(fn: Callable[[str], int], path: str, repeat: int) -> tuple[float, int]:
    best = float("inf")
    count = 0
    for _ in range(repeat):
        start = time.perf_counter()
        count = fn(path)
        best = min(best, time.perf_counter() - start)
    return best, count


def _read_objects(path: str) -> int:
    n = 0
    for item in SegmentReader(path):
        records = getattr(item, "records", None)
        if records is None:
            raise SystemExit(f"unexpected error item: {item}")
        n += len(records)
    return n


def _read_raw(path: str) -> int:
    reader = SegmentReader(path)
    n = 0
    for _ in reader.raw_records():
        n += 1
    if reader.errors:
        raise SystemExit(f"unexpected errors: {reader.errors[:3]}")
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where to write the segments (default: tmp)")
    args = parser.parse_args()
    codecs = (Codec.NONE, Codec.LZ4, Codec.ZSTD)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        print(f"{args.records:,} OffsetCommit-shaped records, best of {args.repeat}, one core")
        print(f"{'codec':<6} {'MiB':>7} {'write s':>8} {'objects rec/s':>14} {'raw rec/s':>12}")
        for codec in codecs:
            path = os.path.join(tmp, f"{codec.name.lower()}.log")
            wtime = write_segment(path, args.records, codec)
            size = os.path.getsize(path) / (1 << 20)
            t_obj, n_obj = _best(_read_objects, path, args.repeat)
            t_raw, n_raw = _best(_read_raw, path, args.repeat)
            assert n_obj == n_raw == args.records, (n_obj, n_raw)
            print(
                f"{codec.name.lower():<6} {size:>7.1f} {wtime:>8.2f} "
                f"{n_obj / t_obj:>14,.0f} {n_raw / t_raw:>12,.0f}"
            )


if __name__ == "__main__":
    main()
