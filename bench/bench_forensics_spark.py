"""``groups``, ``lag`` and ``downgrade-check``: the Python API against Spark ``local[2]``.

For each size, synthesizes a ``__consumer_offsets`` dump (``spark_udfs.synth``: classic and
consumer groups, transactional commits, tombstones) and times on the same files the Python
API (``codegen.forensics``, one core) and the DataFrame functions of ``spark_udfs.forensics``
(each run from the segment files to a ``noop`` sink, the decoded records persisted for
the run of one answer: distributed, nothing collected). Prints
each time, the time per record, the Spark/Python ratio, and how Spark's time per record at
each size compares with the first size (the aim: within 20 %).

    python bench/bench_forensics_spark.py                     # 1 M and 4 M records
    python bench/bench_forensics_spark.py --sizes 200000,800000 --repeat 1
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from codegen.forensics.downgrade import check_downgrade
from codegen.forensics.groups import group_reports
from codegen.forensics.lag import lag_reports
from spark_udfs import forensics
from spark_udfs.session import get_session
from spark_udfs.synth import write_consumer_offsets


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def run(df: Any) -> None:
    df.write.format("noop").mode("overwrite").save()


def measure(spark: Any, folder: Path, n: int, repeat: int, first: dict[str, float]) -> None:
    def spark_answer(answer: Callable[[Any], Any]) -> Callable[[], None]:
        # Each answer joins several views of the records: decode the files once per answer.
        def go() -> None:
            decoded = forensics.read_dump(spark, folder).persist()
            run(answer(decoded))
            decoded.unpersist()

        return go

    peers: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
        ("groups", lambda: group_reports(folder), spark_answer(forensics.group_states)),
        ("lag", lambda: lag_reports(folder), spark_answer(forensics.partition_lag)),
        (
            "downgrade-check",
            lambda: check_downgrade(folder, "3.4"),
            spark_answer(lambda d: forensics.downgrade_findings(d, "3.4")),
        ),
    ]
    for name, python_fn, spark_fn in peers:
        py = best(python_fn, repeat)
        sp = best(spark_fn, repeat)
        per_record = sp / n * 1e6
        first.setdefault(name, per_record)
        print(
            f"{name:<16} {n:>10,} {py:>9.2f} {sp:>8.2f} {py / n * 1e6:>9.2f} "
            f"{per_record:>9.2f} {sp / py:>6.2f} {per_record / first[name]:>8.2f}x",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,4000000", help="records per dump")
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = get_session("local[2]", app_name="bench-forensics", shuffle_partitions=4)
    first: dict[str, float] = {}
    print(
        f"{'answer':<16} {'records':>10} {'python s':>9} {'spark s':>8} "
        f"{'py us/rec':>9} {'sp us/rec':>9} {'sp/py':>6} {'sp vs 1st':>9}"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            stats = write_consumer_offsets(
                folder, records=size, partitions=args.partitions, groups=args.groups
            )
            measure(spark, folder, stats.records, args.repeat, first)
    spark.stop()


if __name__ == "__main__":
    main()
