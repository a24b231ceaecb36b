"""Log dirs in object storage against the same files on disk, in one run: a synthesized
``__consumer_offsets`` dump (1 M records by default) written as a broker writes it (offset and
time indexes) uploaded to a real S3-compatible server on 127.0.0.1 (s3proxy, ``tests/s3server.py``;
``make s3-setup``), then read both ways.

Jobs (each the best of ``--repeat`` runs, in this process): ``dump --format jsonl`` and
``groups`` of the whole dump, and ``kafka-log``'s reader (no Spark: its partitions read in
turn, as executors read them) for every record and for a pushed offset range of one partition.
For each: this process's CPU seconds, the server's (read from /proc), the wall time, and the
bytes read from storage (on disk the files' sizes; over S3 what the ranged reads fetched).
Prints the S3/disk ratios; results go to ``<work>/object_storage.json``.

    .venv/bin/python bench/bench_object_storage.py --records 1000000
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def _stdout_discarded() -> Iterator[None]:
    """fd 1 to /dev/null (the native printer writes to it directly)."""
    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(null)
        os.close(saved)


def measure(fn: Callable[[], object], server_pid: int, repeat: int) -> dict[str, float]:
    from codegen.dumps import storage

    best: dict[str, float] | None = None
    for _ in range(repeat):
        storage.READS.reset()
        wall, cpu, server = time.perf_counter(), time.process_time(), _cpu(server_pid)
        fn()
        run = {
            "wall_s": time.perf_counter() - wall,
            "cpu_s": time.process_time() - cpu,
            "server_cpu_s": _cpu(server_pid) - server,
            "bytes_read": float(storage.READS.bytes),
            "requests": float(storage.READS.requests),
        }
        if best is None or run["cpu_s"] < best["cpu_s"]:
            best = run
    assert best is not None
    return best


def _cli(args: list[str]) -> Callable[[], object]:
    def run() -> None:
        from codegen.cli import cli

        with _stdout_discarded():
            try:
                cli.main(args, prog_name="kafka-specgen", standalone_mode=False)
            except SystemExit as exc:
                if exc.code not in (0, None):
                    raise

    return run


def _kafka_log(path: str, options: dict[str, str], where: str) -> Callable[[], object]:
    def run() -> int:
        from spark_udfs.datasource import KafkaLogDataSource

        given = {"path": path, **options, **({"where": where} if where else {})}
        reader = KafkaLogDataSource(given).reader(None)
        return sum(rb.num_rows for p in reader.partitions() for rb in reader.read(p))

    return run


def as_a_broker_writes_it(synthesized: Path, out: Path) -> None:
    """The synthesized segments appended batch by batch to partition folders as a broker
    writes them (``codegen.dumps.log_dir_writer``: offset and time indexes, producer
    snapshots, checkpoints), so that a pushed range can use the indexes."""
    import struct
    import uuid

    from codegen.dumps.log_dir_writer import LogDir

    log_dir = LogDir(out, node_id=1, cluster_id=uuid.uuid4(), directory_id=uuid.uuid4())
    for folder in sorted(p for p in synthesized.iterdir() if p.is_dir()):
        topic, _, number = folder.name.rpartition("-")
        log = log_dir.partition(topic, int(number), uuid.uuid4())
        for segment in sorted(folder.glob("*.log")):
            data = segment.read_bytes()
            pos = 0
            while pos + 12 <= len(data):
                length = struct.unpack_from(">i", data, pos + 8)[0]
                log.append(data[pos : pos + 12 + length])
                pos += 12 + length
    log_dir.close(broker_epoch=1, now_ms=int(time.time() * 1000))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--work", type=Path, default=ROOT / ".cache" / "bench-object-storage")
    args = parser.parse_args()
    import s3server

    from spark_udfs.synth import write_consumer_offsets

    dump = args.work / f"log-dir-{args.records}"
    if not dump.exists():
        synthesized = args.work / f"synthesized-{args.records}"
        say(f"writing {args.records:,} records to {synthesized}, then as a broker writes them")
        write_consumer_offsets(synthesized, records=args.records)
        as_a_broker_writes_it(synthesized, dump)
    files = [f for f in dump.rglob("*") if f.is_file()]
    size = sum(f.stat().st_size for f in files)
    logs = sum(f.stat().st_size for f in files if f.suffix == ".log")
    say(f"the dump: {len(files)} files, {size / 1e6:.1f} MB ({logs / 1e6:.1f} MB of segments)")
    server = s3server.start(args.work / "s3")
    try:
        say("uploading it to s3proxy")
        url = s3server.upload(server, dump, "bench/dump")
        os.environ.update(server.environment())  # the CLI's standard credential chain
        storage_options = {f"storage.{k}": v for k, v in server.options().items()}
        partition = sorted(p.name for p in dump.iterdir() if p.is_dir())[0]
        where = "offset >= 100000 and offset < 101000"
        jobs: dict[str, tuple[Callable[[], object], Callable[[], object], float]] = {
            "dump --format jsonl": (
                _cli(["dump", str(dump), "--format", "jsonl", "-q"]),
                _cli(["dump", url, "--format", "jsonl", "-q"]),
                logs,
            ),
            "groups": (_cli(["groups", str(dump)]), _cli(["groups", url]), logs),
            "kafka-log reader, every record": (
                _kafka_log(str(dump), {}, ""),
                _kafka_log(url, storage_options, ""),
                logs,
            ),
            f"kafka-log reader, {partition} {where}": (
                _kafka_log(f"{dump}/{partition}", {}, where),
                _kafka_log(f"{url}/{partition}", storage_options, where),
                sum(f.stat().st_size for f in (dump / partition).glob("*.log")),
            ),
        }
        results: dict[str, Any] = {"records": args.records, "bytes": size}
        for name, (on_disk, on_s3, disk_bytes) in jobs.items():
            say(f"{name}:")
            disk = measure(on_disk, server.pid, args.repeat)
            disk["bytes_read"] = disk_bytes if not disk["bytes_read"] else disk["bytes_read"]
            s3 = measure(on_s3, server.pid, args.repeat)
            ratio = s3["cpu_s"] / disk["cpu_s"] if disk["cpu_s"] else float("nan")
            results[name] = {"disk": disk, "s3": s3, "cpu_ratio": ratio}
            for kind, r in (("disk", disk), ("s3", s3)):
                say(
                    f"  {kind:>4}: {r['wall_s']:6.2f} s wall, {r['cpu_s']:6.2f} s CPU here, "
                    f"{r['server_cpu_s']:5.2f} s CPU in the server, "
                    f"{r['bytes_read'] / 1e6:8.2f} MB read in {int(r['requests'])} requests"
                )
            say(f"  S3/disk CPU here: {ratio:.2f}x")
        out = args.work / "object_storage.json"
        out.write_text(json.dumps(results, indent=2))
        say(f"results: {out}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
