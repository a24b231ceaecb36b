"""``groups``, ``lag``, ``downgrade-check`` and ``transactions`` in Spark ``local[2]``, and how
they scale.

For each size in ``--records`` (``1M``, ``4M``, ``16M``, or plain numbers), a
``__consumer_offsets`` dump of ``--groups`` groups (``spark_udfs.synth``: classic and consumer
groups, transactional commits, tombstones) is written once to ``--dumps`` (by default a folder
in the system temp folder, kept between runs, so a size is synthesized only the first time).
``transactions`` also reads the ``__transaction_state`` the dump's transactional offset
commits imply (``bench_views.write_transaction_state``: about 1 % more records, not counted),
written beside it (``<dump>-transaction-state``) the first time. Each answer of
``spark_udfs.forensics`` (``spark_udfs.transactions``: each transactional id's history, the
partitions' summaries and the open transactions judged) then runs from the segment files to a
``noop`` sink (distributed, nothing collected; each answer reads and decodes the files once and
keeps what it reads on the executors). The shuffle partitions scale with the input (one per
``--records-per-shuffle-partition`` records, at least 4; adaptive execution merges small ones).

An answer's time ends when the stages it started have ended: a stage still running once the
answer returned (which adaptive execution no longer needed) is waited for and named in a
``#`` line, so that its CPU is not counted in the next answer.

Prints each answer's wall time and its CPU time, in all and apart: the driver (this process),
the JVM (in ``local[2]`` the executors too) and the Python workers, read from ``/proc`` (the
machine is shared, so CPU time is the steadier figure); the times per record and how the time
per record at each size compares with the first size (the aim: within 20 % from 1 M to 16 M);
the driver's peak Python memory and JVM heap in use after each answer (flat across sizes:
nothing is collected to the driver); and the load average as the answer ended. A small size
(``100k``) shows what an answer costs whatever its input (the JVM's start of each query, its
JIT compilation). ``--python`` also times the Python API (``codegen.forensics``, one core) on
the same files.

    python bench/bench_forensics_spark.py --records 1M,4M
    python bench/bench_forensics_spark.py --records 16M --answers groups
    python bench/bench_forensics_spark.py --records 200k --python --dumps /tmp/fx
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import TreeCpu

from codegen.forensics.downgrade import check_downgrade
from codegen.forensics.groups import group_reports
from codegen.forensics.lag import lag_reports
from codegen.forensics.transactions import transaction_report
from spark_udfs import forensics
from spark_udfs import transactions as txns
from spark_udfs.session import get_session
from spark_udfs.synth import write_consumer_offsets

ANSWERS = ("groups", "lag", "downgrade-check", "transactions")


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


def transaction_state_of(folder: Path) -> Path:
    """The ``__transaction_state`` of the dump in ``folder``, written beside it the first time."""
    from bench_views import write_transaction_state

    state = folder.with_name(folder.name + "-transaction-state")
    done = state / "records.json"
    if not done.exists():
        shutil.rmtree(state, ignore_errors=True)
        records = write_transaction_state(folder, state)
        done.write_text(json.dumps({"records": records}))
    return state


def cpu_seconds(tree: TreeCpu) -> tuple[float, float, float]:
    """CPU seconds used so far by the driver (this process), the JVM (in ``local[2]`` the
    executors too) and the Python workers (the JVM's descendants, those that ended too), from
    ``/proc`` (Linux); the driver's without what reading ``/proc`` cost it."""
    jvm, workers = tree.seconds()
    return time.process_time() - tree.own, jvm, workers


def driver_rss_mb() -> float:
    """The driver's peak Python memory so far: flat across sizes when nothing is collected."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def jvm_heap_used_mb(spark: Any) -> float:
    """The driver JVM's heap in use after a GC."""
    runtime = spark._jvm.java.lang.Runtime.getRuntime()
    spark._jvm.java.lang.System.gc()
    return float(runtime.totalMemory() - runtime.freeMemory()) / 2**20


def timed(fn: Callable[[], object], tree: TreeCpu) -> tuple[float, tuple[float, ...]]:
    """Wall seconds of ``fn()`` and its CPU seconds in the driver, the JVM and the workers."""
    started, cpu = time.perf_counter(), cpu_seconds(tree)
    fn()
    after = cpu_seconds(tree)
    return time.perf_counter() - started, tuple(b - a for a, b in zip(cpu, after, strict=True))


def run(df: Any) -> None:
    df.write.format("noop").mode("overwrite").save()


def left_running(spark: Any) -> list[int]:
    """The stages still running once an answer returned (none expected: a stage adaptive
    execution no longer needs keeps running unwaited, takes the cores of what runs next, and
    stopping the session kills its Python workers), after waiting for them to end, so that
    their CPU time is the answer's and not the next one's."""
    tracker = spark.sparkContext.statusTracker()
    running = list(tracker.getActiveStageIds())
    while tracker.getActiveStageIds():
        time.sleep(0.2)
    return running


def answer_and_wait(answer: Callable[[], None], spark: Any, leftover: list[int]) -> None:
    """``answer()``, then wait for the stages it left running, listed in ``leftover``."""
    answer()
    leftover.extend(left_running(spark))


def spark_answers(spark: Any, folder: Path) -> dict[str, Callable[[], None]]:
    def answer(*builds: Callable[[Any], Any]) -> Callable[[], None]:
        def go() -> None:
            for build in builds:
                run(build(forensics.read_dump(spark, folder)))

        return go

    def transactions() -> None:
        inputs = txns.read_transactions(spark, [folder, transaction_state_of(folder)])
        assert inputs.coordinator is not None
        run(txns.transactional_ids(inputs.coordinator))
        run(txns.partition_summaries(inputs))
        run(txns.open_transactions(inputs, txns.newest_timestamp(inputs)))

    return {
        # group_reports gives the states, inventories and timelines together
        "groups": answer(forensics.group_states, forensics.group_timelines),
        # *now* from the batch headers (lag_now), as the command line finds it
        "lag": answer(lambda d: forensics.partition_lag(d, now=forensics.lag_now(spark, folder))),
        "downgrade-check": answer(lambda d: forensics.downgrade_findings(d, "3.4")),
        "transactions": transactions,
    }


def python_answers(folder: Path) -> dict[str, Callable[[], object]]:
    return {
        "groups": lambda: group_reports(folder),
        "lag": lambda: lag_reports(folder),
        "downgrade-check": lambda: check_downgrade(folder, "3.4"),
        "transactions": lambda: transaction_report([folder, transaction_state_of(folder)]),
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
    parser.add_argument("--records-per-shuffle-partition", type=int, default=500_000)
    args = parser.parse_args()
    answers = [a.strip() for a in args.answers.split(",")]
    unknown = set(answers) - set(ANSWERS)
    if unknown:
        parser.error(f"--answers: unknown {sorted(unknown)}; choose from {list(ANSWERS)}")
    sizes = [records_of(s) for s in args.records.split(",")]
    dumps = [dump_of(args.dumps, n, args.groups, args.partitions) for n in sizes]
    if "transactions" in answers:
        for folder, _ in dumps:
            transaction_state_of(folder)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = get_session("local[2]", app_name="bench-forensics")
    tree = TreeCpu(int(spark._jvm.java.lang.ProcessHandle.current().pid()))
    first: dict[str, tuple[float, float]] = {}
    print(
        f"{'answer':<16} {'records':>11} {'shuf':>4} {'wall s':>7} {'us/rec':>7} {'vs 1st':>7}"
        f" {'cpu s':>7} {'us/rec':>7} {'vs 1st':>7} {'driver':>7} {'jvm':>7} {'workers':>7}"
        f" {'drv MB':>7} {'heap MB':>7} {'load':>5}"
        + (f" {'python s':>9} {'sp/py':>6}" if args.python else ""),
        flush=True,
    )
    for folder, n in dumps:
        shuffle = max(4, -(-n // args.records_per_shuffle_partition))
        spark.conf.set("spark.sql.shuffle.partitions", str(shuffle))
        on_spark = spark_answers(spark, folder)
        on_python = python_answers(folder)
        for name in answers:
            leftover: list[int] = []
            wall, parts = timed(partial(answer_and_wait, on_spark[name], spark, leftover), tree)
            if leftover:
                print(f"# {name}: stages {leftover} still ran after the answer (waited for)")
            cpu = sum(parts)
            per_wall, per_cpu = wall / n * 1e6, cpu / n * 1e6
            first_wall, first_cpu = first.setdefault(name, (per_wall, per_cpu))
            line = (
                f"{name:<16} {n:>11,} {shuffle:>4} {wall:>7.1f} {per_wall:>7.2f} "
                f"{per_wall / first_wall:>6.2f}x {cpu:>7.1f} {per_cpu:>7.2f} "
                f"{per_cpu / first_cpu if first_cpu else 0:>6.2f}x "
                + "".join(f"{part:>7.1f} " for part in parts)
                + f"{driver_rss_mb():>7.0f} {jvm_heap_used_mb(spark):>7.0f} "
                f"{os.getloadavg()[0]:>5.1f}"
            )
            if args.python:
                py, _ = timed(on_python[name], tree)
                line += f" {py:>9.1f} {wall / py:>6.2f}"
            print(line, flush=True)
    tree.stop()
    spark.stop()


if __name__ == "__main__":
    main()
