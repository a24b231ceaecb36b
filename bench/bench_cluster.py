"""The same Spark job in local mode and on a standalone cluster, in one run.

A synthesized ``__consumer_offsets`` dump (1 M records by default, ``spark_udfs.synth``) is read
by ``kafka-log`` with ``decode`` (records per record name) and by the forensics
(``forensics.group_states`` of ``forensics.read_dump``), once in ``local[2]`` and once on a
standalone cluster of a master and two one-core workers started from PySpark's scripts
(``tests/spark_cluster.py``: two cores in all, as ``local[2]``). Each mode runs in a driver
process of its own (one SparkContext per process); each job runs once to warm up, then is
timed. For each job and mode: wall seconds, and CPU seconds of every process that worked for it
(the driver's JVM and Python workers; on the cluster the executors' JVMs and Python workers,
children of the workers), read from /proc before and after; the rows it gave, which must be
equal. Prints the cluster/local ratios; results go to ``<work>/cluster.json``. The files are on
this machine's disk, read by both (on a real cluster they would be in object storage:
``bench_object_storage.py`` measures that part).

    .venv/bin/python bench/bench_cluster.py --records 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

JOB = r"""
import json, sys, time
from spark_udfs import forensics
from spark_udfs.session import get_session, kafka_log_reader

master, path, conf = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
spark = get_session(master, app_name="bench-cluster", driver_memory="1g", shuffle_partitions=2,
                    extra_conf=conf)

def records():
    df = kafka_log_reader(spark).option("decode", "true").load(path)
    counts = [(r.recordName or "", r["count"]) for r in df.groupBy("recordName").count().collect()]
    return sorted(counts)

def groups():
    states = forensics.group_states(forensics.read_dump(spark, path))
    return states.count()

for name, job in (("records", records), ("group_states", groups)):
    job()  # warm up
    print("BEGIN", name, flush=True)
    sys.stdin.readline()
    started = time.perf_counter()
    rows = job()
    wall = time.perf_counter() - started
    print("END", name, json.dumps({"wall_s": wall, "rows": rows}), flush=True)
    sys.stdin.readline()
spark.stop()
"""


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _processes() -> dict[int, tuple[int, float]]:
    """Every process: (parent, CPU seconds of it and its reaped children)."""
    tick = os.sysconf("SC_CLK_TCK")
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            found[int(entry)] = (int(fields[1]), sum(int(x) for x in fields[11:15]) / tick)
    return found


def tree_cpu(roots: list[int], skip_roots: bool) -> float:
    """CPU seconds of the descendants of ``roots`` (and of the roots unless ``skip_roots``)."""
    procs = _processes()
    total, todo = 0.0, list(roots)
    if not skip_roots:
        total += sum(procs[r][1] for r in roots if r in procs)
    while todo:
        pid = todo.pop()
        for child, (parent, cpu) in procs.items():
            if parent == pid:
                total += cpu
                todo.append(child)
    return total


def run_mode(master: str, conf: dict[str, str], path: Path, workers: list[int]) -> dict[str, Any]:
    """The job in a driver process of its own; CPU of it and of ``workers``' children."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SPARK_LOCAL_IP": "127.0.0.1"}
    driver = subprocess.Popen(
        [sys.executable, "-c", JOB, master, str(path), json.dumps(conf)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert driver.stdin is not None and driver.stdout is not None

    def cpu() -> float:
        return tree_cpu([driver.pid], False) + tree_cpu(workers, True)

    results: dict[str, Any] = {}
    before = 0.0
    for line in driver.stdout:
        if line.startswith("BEGIN"):
            before = cpu()
            driver.stdin.write("\n")
            driver.stdin.flush()
        elif line.startswith("END"):
            spent = cpu() - before
            _, name, payload = line.split(" ", 2)
            results[name] = {**json.loads(payload), "cpu_s": spent}
            driver.stdin.write("\n")
            driver.stdin.flush()
    if driver.wait() != 0:
        raise SystemExit(f"the {master} driver failed")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--work", type=Path, help="folder for the dump and the cluster")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import spark_cluster

    from spark_udfs.synth import write_consumer_offsets

    work = args.work or Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    dump = work / "dump"
    if not dump.exists():
        say(f"writing {args.records:,} records to {dump}")
        write_consumer_offsets(dump, records=args.records, partitions=4, groups=200)
    say("starting a standalone cluster (a master, two one-core workers)")
    cluster = spark_cluster.start(work / "standalone")
    try:
        workers = cluster.pids()[1:]  # the master's children are none of the job's
        say("local[2]")
        local = run_mode("local[2]", {}, dump, [])
        say(f"standalone cluster {cluster.url}")
        remote = run_mode(cluster.url, cluster.conf(), dump, workers)
    finally:
        cluster.stop()
    result = {"records": args.records, "local": local, "cluster": remote}
    (work / "cluster.json").write_text(json.dumps(result, indent=2))
    print(f"{'job':<14}{'mode':<10}{'wall s':>9}{'CPU s':>9}  rows")
    for name in local:
        assert local[name]["rows"] == remote[name]["rows"], name
        for mode, res in (("local", local), ("cluster", remote)):
            r = res[name]
            print(f"{name:<14}{mode:<10}{r['wall_s']:>9.1f}{r['cpu_s']:>9.1f}  {r['rows']}")
        ratio_wall = remote[name]["wall_s"] / local[name]["wall_s"]
        ratio_cpu = remote[name]["cpu_s"] / local[name]["cpu_s"]
        print(f"{name:<14}{'ratio':<10}{ratio_wall:>8.2f}x{ratio_cpu:>8.2f}x  cluster/local")
    print(f"results: {work / 'cluster.json'}")


if __name__ == "__main__":
    main()
