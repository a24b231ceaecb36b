"""A user's own topic beside ``__consumer_offsets``: records per second of CPU, one run.

Generates the payments package (``tests/cases/payments``: ``PaymentKey``, ``PaymentValue`` of
versions 0-3, flexible from 2, with a nested array and a tagged field), as the build hook would,
into a temporary folder, and writes a mixed-version ``payments`` topic of N records with the
project's segment writer: a ``PaymentKey`` key (version 0) and an int16-prefixed
``PaymentValue`` at versions 0-3 and 4 (newer than the spec, read as 3), 1-3 lines of 0-2
tags each, 2 % tombstones, 500 records a batch, every tenth batch lz4. Beside it,
``__consumer_offsets`` of the same number of records as ``make demo`` writes it
(``spark_udfs.synth``). Then, in alternating rounds, times:

- whole commands, stdout to /dev/null (CPU of the process): ``dump --format jsonl``,
  ``table`` and ``dump-log`` of each topic, and ``dump --compacted`` of the user topic;
- the Python API in this process (CPU): ``decode_user_records`` against ``decode_records``,
  and ``kafka-log``'s path (``record_batches`` + ``decode_user_arrays``).

Each figure is the least CPU time of ``--repeat`` runs; the user topic's ratio to
``__consumer_offsets`` is printed beside it. A command's start-up (``dump`` of an empty
``payments`` partition with the same map: the interpreter, the imports, the map) is timed too,
and each command's rate is also given without it.

    python bench/bench_user_topics.py                        # 200,000 records
    python bench/bench_user_topics.py -n 1000000 --repeat 3
    python bench/bench_user_topics.py --only jsonl
"""

from __future__ import annotations

import argparse
import importlib
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from codegen.dumps import Codec, SegmentWriter  # noqa: E402
from codegen.dumps.arrow import record_batches  # noqa: E402
from codegen.dumps.coordinator import decode_records  # noqa: E402
from codegen.dumps.topic_map import load_topic_map  # noqa: E402
from codegen.dumps.user_topics import decode_user_records  # noqa: E402
from codegen.emit import write_package  # noqa: E402

PACKAGE = "bench_payment_codecs"
TOPIC = "payments"
BATCH = 500
FORMATS = ("jsonl", "table", "dump-log", "compacted")
VERSIONS = (0, 1, 2, 2, 3, 3, 3, 3, 3, 4)  # a mix, most records at the newest, some newer


def payment_records(module: ModuleType, n: int, seed: int = 7) -> list[tuple[bytes, bytes | None]]:
    """N (key, value) pairs of the mixed-version payments topic."""
    rng = random.Random(seed)
    key_cls = module.MESSAGES["PaymentKey"]
    value_cls = module.MESSAGES["PaymentValue"]
    line_cls = value_cls._STRUCTS["PaymentLine"]
    items = ["tea", "coffee", "cake", "water", "bread"]
    tags = ["hot", "cold", "vegan", "large"]
    out: list[tuple[bytes, bytes | None]] = []
    for i in range(n):
        key = key_cls(account=f"account-{i % 5000}", sequence=i).encode(0)
        if rng.random() < 0.02:
            out.append((key, None))
            continue
        written = rng.choice(VERSIONS)
        version = min(written, 3)
        lines = [
            line_cls(
                item=rng.choice(items),
                cents=rng.randrange(100, 2000),
                tags=rng.sample(tags, rng.randrange(0, 3)),
            )
            for _ in range(rng.randrange(1, 4))
        ]
        value = value_cls(
            amount=sum(line.cents for line in lines),
            currency="EUR" if version < 1 else rng.choice(["EUR", "USD"]),
            lines=lines,
            reference=f"inv-{i}" if version >= 3 else None,
            unknown_tags={5: b"hi"} if written > 3 else {},  # a newer writer's tagged field
        )
        out.append((key, written.to_bytes(2, "big") + value.encode(version)))
    return out


def write_payments(folder: Path, module: ModuleType, n: int) -> Path:
    """The ``payments-0`` partition folder of N records."""
    partition = folder / f"{TOPIC}-0"
    partition.mkdir(parents=True)
    records = payment_records(module, n)
    with SegmentWriter(partition / "00000000000000000000.log") as w:
        for b, start in enumerate(range(0, n, BATCH)):
            codec = Codec.LZ4 if b % 10 == 9 else Codec.NONE
            w.write_batch(records[start : start + BATCH], timestamp=1_700_000_000_000, codec=codec)
    return partition


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_command(cmd: list[str], env: dict[str, str]) -> float:
    """CPU seconds of one command, stdout to /dev/null."""
    before = _children_cpu()
    with open(os.devnull, "wb") as null:
        done = subprocess.run(cmd, stdout=null, stderr=subprocess.PIPE, env=env, check=False)
    if done.returncode not in (0, 1):
        sys.exit(f"{cmd[:6]} exited with {done.returncode}: {done.stderr.decode()[-2000:]}")
    return _children_cpu() - before


def dump_command(fmt: str, folder: Path, topics: Path | None) -> list[str]:
    cmd = [sys.executable, "-m", "codegen", "dump", str(folder), "-q"]
    if topics is not None:
        cmd += ["--topics", str(topics)]
    return cmd + (["--compacted"] if fmt == "compacted" else ["--format", fmt])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=200_000, help="records of each topic")
    parser.add_argument("--repeat", type=int, default=3, help="least CPU time of this many runs")
    parser.add_argument("--only", nargs="+", choices=[*FORMATS, "api"], help="run only these")
    args = parser.parse_args()
    wanted = set(args.only or [*FORMATS, "api"])
    from spark_udfs.synth import write_consumer_offsets

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        write_package([ROOT / "tests" / "cases" / "payments"], tmp / "site" / PACKAGE)
        sys.path.insert(0, str(tmp / "site"))
        module = importlib.import_module(PACKAGE)
        user = write_payments(tmp / "logs", module, args.n)
        topics = tmp / "topics.toml"
        topics.write_text(
            f'package = "{PACKAGE}"\n[topics.{TOPIC}]\n'
            'key = { message = "PaymentKey", version = 0 }\n'
            'value = { message = "PaymentValue", version = "prefix" }\n'
        )
        stats = write_consumer_offsets(tmp / "co", records=args.n, partitions=1, groups=300)
        (internal,) = {f.parent for f in stats.files}
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(tmp / "site"), str(ROOT)]),
            "PYTHONPYCACHEPREFIX": str(tmp / "pycache"),
        }
        empty = tmp / "empty" / f"{TOPIC}-0"
        empty.mkdir(parents=True)
        (empty / "00000000000000000000.log").touch()
        jobs: dict[str, Callable[[], float]] = {
            "start-up": lambda: run_command(dump_command("jsonl", empty, topics), env)
        }
        for fmt in FORMATS:
            if fmt not in wanted:
                continue
            jobs[f"{fmt} {TOPIC}"] = lambda f=fmt: run_command(dump_command(f, user, topics), env)
            if fmt != "compacted":
                jobs[f"{fmt} __consumer_offsets"] = lambda f=fmt: run_command(
                    dump_command(f, internal, None), env
                )
        topic_map = load_topic_map(topics)
        if "api" in wanted:
            jobs[f"decode_user_records {TOPIC}"] = lambda: _cpu(
                lambda: sum(1 for _ in decode_user_records(user, topic_map, TOPIC))
            )
            jobs["decode_records __consumer_offsets"] = lambda: _cpu(
                lambda: sum(1 for _ in decode_records(internal))
            )
            jobs[f"kafka-log path {TOPIC}"] = lambda: _cpu(lambda: _arrow_path(user, topic_map))
        run_command([*dump_command("jsonl", user, topics)[:5], "--help"], env)  # module cache
        best = dict.fromkeys(jobs, float("inf"))
        for _ in range(args.repeat):
            for name, job in jobs.items():
                best[name] = min(best[name], job())
        print(
            f"{args.n:,} records each: {TOPIC} (PaymentValue v0-4, int16 prefix, PaymentKey keys) "
            f"and __consumer_offsets; least CPU of {args.repeat}"
        )
        start = best.pop("start-up")
        print(f"start-up (dump of an empty partition): {start:.2f} s CPU")
        print(
            f"{'job':<40} {'cpu s':>7} {'records/s':>12} {'after start-up':>15} "
            f"{'vs __consumer_offsets':>22}"
        )
        for name, seconds in best.items():
            peer = name.replace(TOPIC, "__consumer_offsets").replace(
                "decode_user_records", "decode_records"
            )
            ratio = f"{seconds / best[peer]:21.2f}x" if peer != name and peer in best else ""
            net = (
                f"{args.n / (seconds - start):>15,.0f}"
                if name.split()[0] in FORMATS and seconds > start
                else " " * 15
            )
            print(f"{name:<40} {seconds:7.2f} {args.n / seconds:>12,.0f} {net} {ratio}")


def _cpu(job: Callable[[], Any]) -> float:
    start = time.process_time()
    job()
    return time.process_time() - start


def _arrow_path(folder: Path, topic_map: Any) -> int:
    from spark_udfs.user_topics import decode_user_arrays, user_topics_arrow_type

    entry = topic_map.entry_for(TOPIC)
    typ = user_topics_arrow_type(None, topic_map, (TOPIC,), False)
    rows = 0
    for segment in sorted(folder.glob("*.log")):
        for rb in record_batches(str(segment), headers=False):
            decode_user_arrays(
                entry,
                topic_map.package,
                typ,
                rb.column("key"),
                rb.column("value"),
                None,
                rb.column("isControl"),
            )
            rows += rb.num_rows
    return rows


if __name__ == "__main__":
    main()
