"""Filters pushed into ``kafka-log`` (not a test): the same query with and without pushdown.

    .venv/bin/python bench/bench_pushdown.py [--rows 2000000] [--millions 16] [--runs 1]
        [--work DIR]

On the bench's log dump (``bench_spark.py``'s 2 M OffsetCommit records in four segments,
repeated into one partition folder per copy up to ``--millions`` million records: the 16 M dump
of its scale section), ``local[2]`` runs, in turn, each query with the source taking the
filters (``pushFilters=true``), with them given at load instead (the ``where`` option) and
without (``false``: Spark filters what the source reads), to the ``noop`` sink. It reports the
median wall time, the CPU seconds of the driver JVM and of the Python workers, the rows each
query returns and the records the source read: all of them without pushdown; with it (or the
option), those in the byte ranges left after the files, segments and batches that cannot match
were skipped, and the bytes it reads for them (the offset and time indexes, then the byte ranges
they leave: the scan's size). Results go to ``<work>/pushdown.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_spark import ROOT, noop, say, write_segments
from timing import timed

QUERIES = {
    "one partition, offsets from 1000 (the issue's query)": (
        {"decode": "consumer_offsets"},
        "recordName = 'OffsetCommit' and partition = 3 and offset >= 1000",
    ),
    "every partition, 10 k offsets, raw": (
        {},
        "offset >= 100000 and offset < 110000",
    ),
}


def dump(work: Path, rows: int, millions: int) -> Path:
    """``bench_spark.py``'s scale dump of ``millions`` M records (the segments repeated)."""
    segments = work / f"segments-{rows}"
    if not segments.exists():
        say(f"writing {rows:,} records as log segments")
        write_segments(segments, rows)
    pieces = sorted(segments.glob("*/*.log"))
    folder = work / f"scale-kafka-log-{millions}M"
    if not folder.exists():
        per = max(1, (millions * 1_000_000) // (rows // len(pieces)))
        for k in range(per):
            seg = folder / f"__consumer_offsets-{k}" / pieces[k % len(pieces)].name
            seg.parent.mkdir(parents=True)
            shutil.copyfile(pieces[k % len(pieces)], seg)
    return folder


def records_read(folder: Path, options: dict[str, str], where: str, spark: Any) -> tuple[int, int]:
    """The records in the byte ranges the source reads for ``where`` (pushed filters), and the
    bytes it reads for them (indexes included)."""
    from codegen.dumps import storage
    from codegen.dumps.arrow import record_batches
    from spark_udfs.datasource import KafkaLogDataSource
    from spark_udfs.pushdown import read_ranges

    source = KafkaLogDataSource({"path": str(folder), "pushFilters": "true", **options})
    reader = source.reader(None)
    from pyspark.sql.datasource import Filter

    filters = _filters(where)
    rest: list[Filter] = reader.pushFilters(filters)
    say(f"  pushed {len(filters) - len(rest)} of {len(filters)} filters")
    total = 0
    storage.READS.reset()
    for part in reader.partitions():
        for sl in part.slices:
            for at, data in read_ranges(storage.path(sl.path), sl.start, sl.end, part.pushed):
                for rb in record_batches(data, position=at, headers=False):
                    total += rb.num_rows
    return total, storage.READS.bytes


def _filters(where: str) -> list[Any]:
    """The filters Spark pushes for ``where`` (a conjunction of simple comparisons)."""
    from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual, LessThan

    kinds = {"=": EqualTo, ">=": GreaterThanOrEqual, "<": LessThan}
    out = []
    for part in where.split(" and "):
        name, op, value = part.split(" ", 2)
        literal: Any = value.strip("'") if value.startswith("'") else int(value)
        out.append(kinds[op]((name,), literal))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--millions", type=int, default=16)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--work", type=Path, default=ROOT / "bench" / "jvm" / "build" / "data")
    args = ap.parse_args()
    folder = dump(args.work, args.rows, args.millions)

    from spark_udfs.session import get_session

    spark = get_session("local[2]", app_name="bench-pushdown", driver_memory="4g")
    jvm_pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    total = spark.read.format("kafka-log").option("columns", "offset").load(str(folder)).count()
    size = sum(f.stat().st_size for f in folder.glob("*/*.log"))
    say(f"the dump: {total:,} records in {len(list(folder.glob('*/*.log')))} segments")
    results: dict[str, Any] = {"records": total, "bytes": size}
    for name, (options, where) in QUERIES.items():
        say(f"{name}: .where({where!r}) with {options}")
        pushed = (
            spark.read.format("kafka-log")
            .options(**options, pushFilters="true")
            .load(str(folder))
            .where(where)
        )
        plain = (
            spark.read.format("kafka-log")
            .options(**options, pushFilters="false")
            .load(str(folder))
            .where(where)
        )
        given = (
            spark.read.format("kafka-log")
            .options(**options, pushFilters="false", where=where)
            .load(str(folder))
        )
        rows = pushed.count()
        jobs = {"pushed": noop(pushed), "where option": noop(given), "not pushed": noop(plain)}
        # No warm-up run: the count has warmed the session, and a read of the dump takes minutes.
        res = timed(jobs, args.runs, jvm_pid, warm_up=False)
        read, read_bytes = records_read(folder, options, where, spark)
        res["pushed"]["records_read"], res["pushed"]["bytes_read"] = read, read_bytes
        res["where option"]["records_read"] = read  # the same ranges
        res["where option"]["bytes_read"] = read_bytes
        res["not pushed"]["records_read"] = total
        res["not pushed"]["bytes_read"] = size
        res["rows"] = rows  # the same without pushdown: tests/spark/test_pushdown.py
        res["speedup"] = res["not pushed"]["median_s"] / res["pushed"]["median_s"]
        results[name] = res
        for kind in jobs:
            r = res[kind]
            say(
                f"  {kind:>12}: {r['median_s']:7.2f} s (JVM CPU {r['jvm_cpu_s']:.1f} s, Python "
                f"CPU {r['python_cpu_s']:.1f} s), {r['records_read']:,} records and "
                f"{r['bytes_read'] / 1e6:,.1f} MB read, {rows:,} rows"
            )
        say(f"  pushdown: {res['speedup']:.1f}x faster")
    out = args.work / "pushdown.json"
    out.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    spark.stop()


if __name__ == "__main__":
    main()
