"""``groups``, ``lag`` and ``downgrade-check`` in Spark ``local[2]``, and how they scale.

For each size in ``--records`` (``1M``, ``4M``, ``16M``, or plain numbers), a
``__consumer_offsets`` dump of ``--groups`` groups (``spark_udfs.synth``: classic and consumer
groups, transactional commits, tombstones) is written once to ``--dumps`` (by default a folder
in the system temp folder, kept between runs, so a size is synthesized only the first time).
Each answer of ``spark_udfs.forensics`` then runs from the segment files to a ``noop`` sink
(the decoded records persisted for the run of that one answer: distributed, nothing
collected). Prints each time, the time per record, and how the time per record at each size
compares with the first size (the aim: within 20 % from 1 M to 16 M). ``--python`` also
times the Python API (``codegen.forensics``, one core) on the same files.

    python bench/bench_forensics_spark.py --records 1M,4M
    python bench/bench_forensics_spark.py --records 16M --answers groups
    python bench/bench_forensics_spark.py --records 200k --python --dumps /tmp/fx
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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

ANSWERS = ("groups", "lag", "downgrade-check")


def records_of(text: str) -> int:
    """``1M``, ``250k`` or ``1000000``."""
    text = text.strip().lower()
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("km")) * scale)


def dump_of(root: Path, records: int, groups: int, partitions: int) -> tuple[Path, int]:
    """The dump of that shape under ``root``, written the first time it is asked for."""
    folder = root / f"{records}-records-{groups}-groups-{partitions}-partitions"
    done = folder / "stats.json"
    if not done.exists():
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        started = time.perf_counter()
        stats = write_consumer_offsets(
            partial, records=records, partitions=partitions, groups=groups
        )
        (partial / "stats.json").write_text(json.dumps({"records": stats.records}))
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
        took = time.perf_counter() - started
        print(f"# wrote {stats.records:,} records to {folder} in {took:.0f} s", flush=True)
    return folder, int(json.loads(done.read_text())["records"])


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def run(df: Any) -> None:
    df.write.format("noop").mode("overwrite").save()


def spark_answers(spark: Any, folder: Path) -> dict[str, Callable[[], None]]:
    def answer(*builds: Callable[[Any], Any]) -> Callable[[], None]:
        # Each answer joins several views of the records: decode the files once per answer.
        def go() -> None:
            decoded = forensics.read_dump(spark, folder).persist()
            for build in builds:
                run(build(decoded))
            decoded.unpersist()

        return go

    return {
        # group_reports gives the states, inventories and timelines together
        "groups": answer(forensics.group_states, forensics.group_timelines),
        "lag": answer(forensics.partition_lag),
        "downgrade-check": answer(lambda d: forensics.downgrade_findings(d, "3.4")),
    }


def python_answers(folder: Path) -> dict[str, Callable[[], object]]:
    return {
        "groups": lambda: group_reports(folder),
        "lag": lambda: lag_reports(folder),
        "downgrade-check": lambda: check_downgrade(folder, "3.4"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", default="1M,4M", help="sizes, e.g. 1M,4M,16M")
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--answers", default=",".join(ANSWERS))
    parser.add_argument("--python", action="store_true", help="also time the Python API")
    parser.add_argument(
        "--dumps",
        type=Path,
        default=Path(tempfile.gettempdir()) / "kafka-specgen-forensics-bench",
        help="where the synthesized dumps are kept",
    )
    parser.add_argument("--shuffle-partitions", type=int, default=4)
    args = parser.parse_args()
    answers = [a.strip() for a in args.answers.split(",")]
    unknown = set(answers) - set(ANSWERS)
    if unknown:
        parser.error(f"--answers: unknown {sorted(unknown)}; choose from {list(ANSWERS)}")
    sizes = [records_of(s) for s in args.records.split(",")]
    dumps = [dump_of(args.dumps, n, args.groups, args.partitions) for n in sizes]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = get_session(
        "local[2]", app_name="bench-forensics", shuffle_partitions=args.shuffle_partitions
    )
    first: dict[str, float] = {}
    print(
        f"{'answer':<16} {'records':>11} {'spark s':>8} {'us/rec':>7} {'vs 1st':>7}"
        + (f" {'python s':>9} {'sp/py':>6}" if args.python else ""),
        flush=True,
    )
    for folder, n in dumps:
        on_spark = spark_answers(spark, folder)
        on_python = python_answers(folder)
        for name in answers:
            took = timed(on_spark[name])
            per_record = took / n * 1e6
            first.setdefault(name, per_record)
            line = (
                f"{name:<16} {n:>11,} {took:>8.1f} {per_record:>7.2f} "
                f"{per_record / first[name]:>6.2f}x"
            )
            if args.python:
                py = timed(on_python[name])
                line += f" {py:>9.1f} {took / py:>6.2f}"
            print(line, flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
