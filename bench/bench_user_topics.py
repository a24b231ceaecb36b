"""Records per second of a user topic decoded as a topic map says, on one core.

Generates the TaggedDemo package (tests/cases/tagged_demo, as the build hook would) into a
temporary folder, writes N records of it with an int16 version prefix (value version 2, key as
text, 500 per batch) with the project's segment writer, then times, side by side:

- ``dump``'s path: ``codegen.dumps.user_topics.decode_user_records`` (the generated codec, one
  record at a time, into ``UserRecord`` objects);
- ``kafka-log``'s path: ``codegen.dumps.arrow.record_batches`` and
  ``spark_udfs.user_topics.decode_user_arrays`` (the engine's columnar decoder into Arrow);
- the raw Arrow columns alone (``record_batches``), the floor of the second.

Runs alternate; each figure is the best run; ratios are to ``dump``'s path.

    python bench/bench_user_topics.py                  # 200,000 records
    python bench/bench_user_topics.py -n 1000000 --clock cpu
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from codegen.dumps import SegmentWriter
from codegen.dumps.arrow import record_batches
from codegen.dumps.topic_map import parse_topic_map
from codegen.dumps.user_topics import decode_user_records
from codegen.emit import write_package

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "bench_user_codecs"


def write_segment(path: Path, n: int, module: object) -> None:
    cls = module.MESSAGES["TaggedDemo"]  # type: ignore[attr-defined]
    with SegmentWriter(path) as w:
        for start in range(0, n, 500):
            batch = []
            for i in range(start, min(n, start + 500)):
                value = cls(id=i, name=f"sensor-{i % 100}", weights=[1, 2, 3], members=[], blob=b"")
                value.note = "ok"
                batch.append((f"s{i % 1000}".encode(), b"\x00\x02" + value.encode(2)))
            w.write_batch(batch, timestamp=1_700_000_000_000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=200_000, help="records")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--clock", choices=["wall", "cpu"], default="cpu")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    with tempfile.TemporaryDirectory() as tmp:
        write_package([ROOT / "tests" / "cases" / "tagged_demo"], Path(tmp) / PACKAGE)
        sys.path.insert(0, tmp)
        import importlib

        module = importlib.import_module(PACKAGE)
        from spark_udfs.user_topics import decode_user_arrays, user_topics_arrow_type

        topic_map = parse_topic_map(
            {"sensors": {"value": {"message": "TaggedDemo", "version": "prefix"}}}, PACKAGE
        )
        entry = topic_map.entry_for("sensors")
        assert entry is not None
        typ = user_topics_arrow_type(None, topic_map, ("sensors",), False)
        segment = Path(tmp) / "sensors-0.log"
        write_segment(segment, args.n, module)

        def dump_path() -> int:
            return sum(1 for _ in decode_user_records(segment, topic_map, "sensors"))

        def arrow_path() -> int:
            rows = 0
            for rb in record_batches(str(segment), headers=False):
                out = decode_user_arrays(
                    entry,
                    PACKAGE,
                    typ,
                    rb.column("key"),
                    rb.column("value"),
                    None,
                    rb.column("isControl"),
                )
                assert not out.errors
                rows += rb.num_rows
            return rows

        def raw_only() -> int:
            return sum(rb.num_rows for rb in record_batches(str(segment), headers=False))

        jobs: dict[str, Callable[[], int]] = {
            "dump path (decode_user_records)": dump_path,
            "kafka-log path (record_batches + decode_user_arrays)": arrow_path,
            "raw Arrow columns only (record_batches)": raw_only,
        }
        best = {name: float("inf") for name in jobs}
        for _ in range(args.repeat):
            for name, job in jobs.items():
                start = clock()
                assert job() == args.n
                best[name] = min(best[name], clock() - start)
        base = best["dump path (decode_user_records)"]
        print(
            f"{args.n:,} TaggedDemo v2 records (int16 prefix), best of {args.repeat}, {args.clock} clock"
        )
        for name, seconds in best.items():
            print(
                f"{name:<56} {seconds:7.2f} s  {args.n / seconds:>12,.0f} records/s  "
                f"{seconds / base:5.2f}x the dump path's time"
            )


if __name__ == "__main__":
    main()
