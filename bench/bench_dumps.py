"""Records per second from an __consumer_offsets segment to decoded records, on one core.

Writes a segment of N OffsetCommit records (key type 1, value version 3, as the broker writes
them) with the project's segment writer, uncompressed and with lz4 and zstd, then times
``codegen.dumps.coordinator.decode_records`` over each file.

    python bench/bench_dumps.py            # 1,000,000 records per codec
    python bench/bench_dumps.py -n 200000
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from codegen.dumps import Codec, SegmentWriter
from codegen.dumps.coordinator import decode_records
from generated.offset_commit_key import OffsetCommitKey
from generated.offset_commit_value import OffsetCommitValue

TARGET = 500_000
BATCH = 500


def write_segment(path: str, n: int, codec: Codec) -> None:
    records = []
    for i in range(n):
        key = b"\x00\x01" + OffsetCommitKey(
            group=f"group-{i % 50}", topic=f"topic-{i % 20}", partition=i % 64
        ).encode(0)
        value = b"\x00\x03" + OffsetCommitValue(
            offset=i, leader_epoch=5, metadata="", commit_timestamp=1_700_000_000_000 + i
        ).encode(3)
        records.append((key, value))
    with SegmentWriter(path) as w:
        for start in range(0, n, BATCH):
            w.write_batch(records[start : start + BATCH], timestamp=1_700_000_000_000, codec=codec)


def run(path: str) -> tuple[int, float]:
    start = time.perf_counter()
    count = 0
    for _ in decode_records(path):
        count += 1
    return count, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1_000_000, help="records per segment")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for codec in (Codec.NONE, Codec.LZ4, Codec.ZSTD):
            path = os.path.join(tmp, f"{codec.name.lower()}.log")
            write_segment(path, args.n, codec)
            best = min((run(path) for _ in range(args.repeat)), key=lambda r: r[1])
            count, seconds = best
            assert count == args.n, (count, args.n)
            rate = count / seconds
            size = os.path.getsize(path) / 1e6
            print(
                f"{codec.name.lower():5} {count:>9,} records  {size:7.1f} MB  {seconds:6.2f} s  "
                f"{rate:>10,.0f} records/s  {rate / TARGET:4.2f}x target ({TARGET:,}/s)"
            )


if __name__ == "__main__":
    main()
