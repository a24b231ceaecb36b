"""The replay of the demo's dump through a release's own loaders, beside the model's answer.

Synthesizes the 1 M-record __consumer_offsets dump of ``make demo`` (``spark_udfs.synth``: 4
partitions, 300 groups; a few of its commits are OffsetCommitValue v5, newer than any release
reads), then per release and group coordinator: ``downgrade-check``'s model (CPU seconds of
this process), and the replay (a JVM: its start-up, the loaders' time, the records they read
and per second). The old group coordinator and 4.4's new one stop at the first v5 record of
each partition, 3.9's new one (which reads v5 as v4) at a consumer group's record after
the group's offset commits ("is not a consumer group", refused before 4.0), as the model says. The JVM's CPU
seconds (user and system, its compiler and GC threads included) make the records per second
comparable on a shared machine. Then the same for a
dump every release from 2.3 loads whole (1 M offset commits and group records of classic
groups at OffsetCommitValue and GroupMetadataValue v3): the loaders' records per second. The
ratio is the replay's wall time over the model's. ``--fetch`` also times fetching one release's jars from Maven Central into an empty
cache (network; once).

    KAFKA_SPECGEN_CACHE=.cache/kafka-specgen KAFKA_SPECGEN_MAVEN_REPOS=.cache/m2 \\
      .venv/bin/python bench/bench_replay.py [--records N] [--release 4.4.0 ...] [--fetch 4.3.0]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import best

from codegen.forensics.downgrade import check_downgrade
from codegen.forensics.replay import replay
from codegen.forensics.replay.harness import PartSpec, harness_classes, run_harness
from codegen.forensics.replay.jars import jar_set
from spark_udfs.synth import write_consumer_offsets


def _fetch_once(release: str) -> None:
    with tempfile.TemporaryDirectory() as empty:
        saved = {
            k: os.environ.get(k)
            for k in ("KAFKA_SPECGEN_CACHE", "KAFKA_SPECGEN_MAVEN_REPOS", "HOME")
        }
        os.environ.update(
            {"KAFKA_SPECGEN_CACHE": empty, "KAFKA_SPECGEN_MAVEN_REPOS": "", "HOME": empty}
        )
        try:
            started = time.perf_counter()
            jars = jar_set(release)
            wall = time.perf_counter() - started
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        size = sum(j.stat().st_size for j in jars.jars)
        print(
            f"fetch Kafka {release}'s jars once: {len(jars.jars)} jars, {size / 1e6:.1f} MB in "
            f"{wall:.1f} s from Maven Central"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--release", action="append", default=None)
    parser.add_argument("--fetch", default=None, help="time fetching this release's jars")
    args = parser.parse_args()
    cases = (
        [tuple(r.split("/")) for r in args.release]
        if args.release
        else [("3.9.0", "new"), ("3.9.0", "old"), ("4.4.0", "new")]
    )
    with tempfile.TemporaryDirectory() as tmp:
        demo = Path(tmp) / "demo"
        stats = write_consumer_offsets(demo, records=args.records, partitions=4, groups=300)
        print(f"demo dump: {stats.records:,} records, {stats.batches:,} batches, 4 partitions")
        _table(demo, cases)
        clean = Path(tmp) / "classic"
        written = _classic_dump(clean, args.records)
        print(f"classic dump: {written:,} records, 4 partitions")
        _table(clean, [("2.8.0", "old"), ("3.9.0", "old"), ("4.4.0", "new")])
    if args.fetch:
        _fetch_once(args.fetch)


def _classic_dump(out: Path, records: int) -> int:
    """Classic groups only: a GroupMetadataValue v3 per group, then OffsetCommitValue v3
    commits, 50 to a batch, over 4 partitions."""
    import struct

    from codegen.dumps import SegmentWriter
    from generated import MESSAGES

    commit_key, commit_value = MESSAGES["OffsetCommitKey"], MESSAGES["OffsetCommitValue"]
    group_key, group_value = MESSAGES["GroupMetadataKey"], MESSAGES["GroupMetadataValue"]
    written = 0
    per_partition = records // 4
    for p in range(4):
        folder = out / f"__consumer_offsets-{p}"
        folder.mkdir(parents=True)
        with SegmentWriter(folder / "00000000000000000000.log") as w:
            groups = [f"classic-{p}-{g}" for g in range(75)]
            w.write_batch(
                [
                    (
                        struct.pack(">h", 2) + group_key(group=g).encode(0),
                        struct.pack(">h", 3)
                        + group_value(protocol_type="consumer", generation=1).encode(3),
                    )
                    for g in groups
                ]
            )
            written += len(groups)
            n = 0
            while n < per_partition - len(groups):
                batch = []
                for _ in range(50):
                    g = groups[n % len(groups)]
                    key = struct.pack(">h", 1) + commit_key(
                        group=g, topic="orders", partition=n % 16
                    ).encode(0)
                    value = struct.pack(">h", 3) + commit_value(
                        offset=n, commit_timestamp=1_700_000_000_000 + n
                    ).encode(3)
                    batch.append((key, value))
                    n += 1
                w.write_batch(batch)
            written += n
    return written


def _table(dump: Path, cases: list[tuple[str, ...]]) -> None:
    if dump.exists():
        print(
            f"{'release':<12} {'model s':>8} {'model cpu':>9} {'replay s':>9} {'jvm start ms':>12}"
            f" {'load s':>7} {'jvm cpu s':>9} {'records':>9} {'rec/cpu-s':>10} {'ratio':>6}"
        )
        for release, coordinator in cases:
            model_wall, model_cpu = best(
                lambda r=release, c=coordinator: check_downgrade(dump, r, c), 1
            )
            jars = jar_set(release)
            parts = [
                PartSpec(
                    "group",
                    harness_classes(release)[f"group-{coordinator}"],
                    [
                        {
                            "topic": "__consumer_offsets",
                            "partition": p,
                            "files": [str(f) for f in fs],
                        }
                        for p, fs in _partitions(dump)
                    ],
                )
            ]
            run_harness(release, jars, parts)  # compiled and warm in the page cache
            started = time.perf_counter()
            answer = run_harness(release, jars, parts)
            wall = time.perf_counter() - started
            load_s = answer["replayMs"] / 1000
            read = sum(_records_read(p) for p in answer["parts"][0]["partitions"])
            load_s -= answer["parts"][0].get("readMillis", 0) / 1000  # the files into memory
            cpu_s = answer["cpuMs"] / 1000
            rate = read / cpu_s if cpu_s else float("nan")
            print(
                f"{release + '/' + coordinator:<12} {model_wall:8.2f} {model_cpu:9.2f} "
                f"{wall:9.2f} {answer['jvmStartupMs']:12d} {load_s:7.2f} {cpu_s:9.2f} {read:9,} "
                f"{rate:10,.0f} {wall / model_wall:5.2f}x"
            )
        release, coordinator = cases[-1]
        report_started = time.perf_counter()
        report = replay(dump, release, group_coordinator=coordinator)
        print(
            f"replay() of {release}/{coordinator} with what the cluster has (this project's "
            f"views) beside: {time.perf_counter() - report_started:.2f} s; "
            f"{len(report.survives.groups)} groups, {len(report.survives.offsets):,} offsets "
            f"kept; lost: {len(report.lost())}"
        )


def _records_read(partition: dict[str, object]) -> int:
    """Records a partition's loader read: all of them, or up to the record it failed on."""
    failure = partition.get("failure")
    if isinstance(failure, dict):
        return int(failure["offset"]) - int(partition["logStartOffset"])  # type: ignore[call-overload]
    end, start = partition["logEndOffset"], partition["logStartOffset"]
    return int(end) - int(start)  # type: ignore[call-overload]


def _partitions(dump: Path) -> list[tuple[int, list[Path]]]:
    from codegen.forensics.coordinator_logs import dump_partitions

    return [(p, list(fs)) for p, fs in dump_partitions(dump)]  # type: ignore[misc]


if __name__ == "__main__":
    main()
