"""Records per second from an __consumer_offsets segment to decoded records, on one core.

Writes a segment of N OffsetCommit records (key type 1, value version 3, as the broker writes
them) with the project's segment writer, uncompressed and with lz4 and zstd, then times
``codegen.dumps.coordinator.decode_records`` over each file (end to end) and, for the
breakdown, the segment layer alone (``SegmentReader.raw_batches``: framing, CRC, decompression,
record parsing). Runs alternate between codecs and modes; each figure is the best run.

    python bench/bench_dumps.py            # 1,000,000 records per codec
    python bench/bench_dumps.py -n 200000 --repeat 5
    python bench/bench_dumps.py --clock cpu  # process time: steadier on a busy machine
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from codegen.dumps import Codec, SegmentReader, SegmentWriter
from codegen.dumps.coordinator import decode_records
from generated.offset_commit_key import OffsetCommitKey
from generated.offset_commit_value import OffsetCommitValue

TARGET = 500_000
BATCH = 500
CODECS = (Codec.NONE, Codec.LZ4, Codec.ZSTD)


def write_segment(path: str, n: int, codec: Codec, per_batch: int = BATCH) -> None:
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
        for start in range(0, n, per_batch):
            batch = records[start : start + per_batch]
            w.write_batch(batch, timestamp=1_700_000_000_000, codec=codec)


def end_to_end(path: str) -> int:
    count = 0
    for _ in decode_records(path):
        count += 1
    return count


def parse_only(path: str) -> int:
    count = 0
    for item in SegmentReader(path).raw_batches():
        if isinstance(item, tuple):
            count += len(item[1])
    return count


def timed(run: Callable[[str], int], path: str, clock: Callable[[], float]) -> tuple[int, float]:
    start = clock()
    count = run(path)
    return count, clock() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1_000_000, help="records per segment")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall time (default) or this process's CPU time",
    )
    args = parser.parse_args()
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    modes = {"end to end": end_to_end, "parse only": parse_only}
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for codec in CODECS:
            paths[codec] = os.path.join(tmp, f"{codec.name.lower()}.log")
            write_segment(paths[codec], args.n, codec)
        best = {(codec, mode): float("inf") for codec in CODECS for mode in modes}
        for _ in range(args.repeat):
            for codec in CODECS:
                for mode, run in modes.items():
                    count, seconds = timed(run, paths[codec], clock)
                    assert count == args.n, (codec, mode, count, args.n)
                    best[codec, mode] = min(best[codec, mode], seconds)
        print(
            f"{args.n:,} OffsetCommit records per codec, best of {args.repeat}, {args.clock} clock"
        )
        for codec in CODECS:
            seconds = best[codec, "end to end"]
            rate = args.n / seconds
            parse_rate = args.n / best[codec, "parse only"]
            size = os.path.getsize(paths[codec]) / 1e6
            print(
                f"{codec.name.lower():5} {args.n:>9,} records  {size:7.1f} MB  {seconds:6.2f} s  "
                f"{rate:>10,.0f} records/s  {rate / TARGET:4.2f}x target ({TARGET:,}/s)  "
                f"parse only {parse_rate:>10,.0f} records/s"
            )


if __name__ == "__main__":
    main()
