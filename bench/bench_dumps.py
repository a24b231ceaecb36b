"""Records per second of the dump decoders, and of ``python -m codegen dump`` next to Kafka's
DumpLogSegments.

Default mode: writes a segment of N OffsetCommit records (key type 1, value version 3, as the
broker writes them) with the project's segment writer, uncompressed and with lz4 and zstd, then
times ``codegen.dumps.coordinator.decode_records`` over each file (end to end) and, for the
breakdown, the segment layer alone (``SegmentReader.raw_batches``: framing, CRC, decompression
and the reference record loop). Runs alternate between codecs and modes; each figure is the
best run.

``--cli`` mode: writes one ``__consumer_offsets`` segment as ``make demo`` writes its dump
(``spark_udfs.synth.write_consumer_offsets``: classic and consumer groups, transactional
commits, tombstones, some lz4 batches), all in one partition, then runs, as whole commands in
alternating rounds, each writing to /dev/null:

- ``DumpLogSegments --files F --deep-iteration --print-data-log --offsets-decoder`` (the
  Kafka tool, from the class path in ``.cache/kafka-4.4.0/dumplog-jars``);
- ``python -m codegen dump F --format dump-log`` (the same text), ``--format jsonl``,
  ``--format table`` and ``--compacted``;
- the views of the same segment: ``groups``, ``lag`` (jsonl), ``downgrade-check --to 3.9``
  and ``transactions``, which also reads the ``__transaction_state`` the segment's
  transactional commits imply (``bench_views.write_transaction_state``: about 1 % more
  records; it refuses ``__consumer_offsets`` alone).

Each figure is the least CPU time (user + system, of the command and its children) of
``--repeat`` runs, printed with the records per second and the ratio to DumpLogSegments. The
``start-up`` row is ``dump --format jsonl`` of an empty segment (imports, argument parsing,
exit); each Python command's ``less start-up`` column is its records per second over the CPU
time past that. With ``--check`` the dump-log text is first compared with the tool's byte for
byte.

    python bench/bench_dumps.py            # 1,000,000 records per codec
    python bench/bench_dumps.py -n 200000 --repeat 5
    python bench/bench_dumps.py --clock cpu  # process time: steadier on a busy machine
    python bench/bench_dumps.py --cli --check --repeat 2          # against DumpLogSegments
    python bench/bench_dumps.py --cli --only dump-log jsonl -n 200000
    python bench/bench_dumps.py --cli --only groups lag transactions --repeat 3
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from codegen.dumps import Codec, SegmentReader, SegmentWriter  # noqa: E402
from codegen.dumps.coordinator import decode_records  # noqa: E402
from generated.offset_commit_key import OffsetCommitKey  # noqa: E402
from generated.offset_commit_value import OffsetCommitValue  # noqa: E402

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


JARS = ROOT / ".cache" / "kafka-4.4.0" / "dumplog-jars"
TOOL = "org.apache.kafka.tools.DumpLogSegments"
COMMANDS = (
    "DumpLogSegments",
    "dump-log",
    "jsonl",
    "table",
    "compacted",
    "groups",
    "lag",
    "downgrade-check",
    "transactions",
)
VIEWS: dict[str, list[str]] = {
    "groups": ["groups", "--format", "jsonl"],
    "lag": ["lag", "--format", "jsonl"],
    "downgrade-check": ["downgrade-check", "--to", "3.9", "--format", "json"],
    "transactions": ["transactions", "--format", "jsonl"],
}
"""The views on the same segment, as ``bench_views.py`` runs them; ``transactions`` also reads
the ``__transaction_state`` the segment's transactional commits imply (it needs one)."""
EXITS: dict[str, tuple[int, ...]] = {"downgrade-check": (0, 1), "transactions": (0, 1)}
"""Exit statuses that are answers, not failures (a blocked downgrade, a hanging transaction)."""
START_UP = "start-up"
"""The row of ``dump`` on an empty segment: what every Python command pays before reading."""


def command(name: str, segment: Path, beside: Path | None = None) -> list[str]:
    """The command line of ``name`` on ``segment`` (``beside``: the ``__transaction_state``
    folder ``transactions`` reads too)."""
    if name in VIEWS:
        view, *rest = VIEWS[name]
        extra = [str(beside)] if name == "transactions" and beside is not None else []
        return [sys.executable, "-m", "codegen", view, str(segment), *extra, *rest]
    if name == "DumpLogSegments":
        java = os.environ.get("JAVA_HOME")
        exe = str(Path(java) / "bin" / "java") if java else "java"
        files = ["--files", str(segment), "--deep-iteration", "--print-data-log"]
        return [exe, "-cp", f"{JARS}/*", TOOL, *files, "--offsets-decoder"]
    dump = [sys.executable, "-m", "codegen", "dump", str(segment), "-q"]
    if name == START_UP:
        return [*dump, "--format", "jsonl"]
    if name == "compacted":
        return [*dump, "--compacted"]
    return [*dump, "--format", name]


def python_env(pycache: Path) -> dict[str, str]:
    """The environment of the Python commands: compiled modules cached (in ``pycache``), as
    in an installed tool, so a run does not compile the project's modules first."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def run(
    cmd: list[str], out: int, env: dict[str, str], ok: tuple[int, ...] = (0,)
) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one command with stdout to ``out`` (``ok``: the exit
    statuses it may end with)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, env=env, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in ok:
        sys.exit(f"{cmd[:5]}... exited with {done.returncode}: {done.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def digest(cmd: list[str], env: dict[str, str]) -> str:
    sha = hashlib.sha256()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env) as proc:
        assert proc.stdout is not None
        for chunk in iter(lambda: proc.stdout.read(1 << 20), b""):  # type: ignore[union-attr]
            sha.update(chunk)
    return sha.hexdigest()


def cli_main(args: argparse.Namespace) -> None:
    from spark_udfs.synth import write_consumer_offsets

    names = [n for n in COMMANDS if args.only is None or n in args.only or n == COMMANDS[0]]
    if not any(JARS.glob("kafka-tools-*.jar")):
        sys.exit(f"no DumpLogSegments jars in {JARS}: run make setup")
    with tempfile.TemporaryDirectory() as tmp:
        stats = write_consumer_offsets(Path(tmp), records=args.n, partitions=1, groups=args.groups)
        (segment,) = stats.files
        size = segment.stat().st_size
        print(f"{stats.records:,} records, {size / 1e6:.1f} MB, {segment.name}")
        state = None
        if "transactions" in names:
            from bench_views import write_transaction_state

            state = Path(tmp) / "transaction-state"
            more = write_transaction_state(segment.parent.parent, state)
            print(f"transactions also reads {more:,} __transaction_state records")
        env = python_env(Path(tmp) / "pycache")
        subprocess.run(
            [*command("dump-log", segment)[:4], "--help"],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )  # fills the module cache
        if args.check:
            theirs = digest(command("DumpLogSegments", segment), env)
            ours = digest(command("dump-log", segment), env)
            print(f"dump-log text {'identical' if theirs == ours else 'DIFFERS'} ({theirs[:12]})")
            if theirs != ours:
                sys.exit(1)
        empty = Path(tmp) / "empty" / segment.parent.name / segment.name
        empty.parent.mkdir(parents=True)
        empty.touch()
        best = dict.fromkeys([*names, START_UP], (float("inf"), float("inf")))
        with open(os.devnull, "wb") as null:
            for _ in range(args.repeat):
                for name in [*names, START_UP]:
                    target = empty if name == START_UP else segment
                    cmd = command(name, target, state)
                    cpu, wall = run(cmd, null.fileno(), env, EXITS.get(name, (0,)))
                    best[name] = (min(best[name][0], cpu), min(best[name][1], wall))
        base = best["DumpLogSegments"][0]
        start_up = best[START_UP][0]
        print(
            f"{'command':<16} {'cpu s':>7} {'wall s':>7} {'records/s (cpu)':>16} {'vs DLS':>7}"
            f" {'less start-up':>14}"
        )
        for name in [*names, START_UP]:
            cpu, wall = best[name]
            rate = "" if name == START_UP else f"{stats.records / cpu:>16,.0f}"
            past = cpu - start_up
            less = (
                f"{stats.records / past:>14,.0f}"
                if name not in (COMMANDS[0], START_UP) and past > 0
                else ""
            )
            print(f"{name:<16} {cpu:7.2f} {wall:7.2f} {rate:>16} {cpu / base:6.2f}x {less}")


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
    cli = parser.add_argument_group("--cli: the commands against DumpLogSegments")
    cli.add_argument("--cli", action="store_true", help="time the commands (CPU time)")
    cli.add_argument("--groups", type=int, default=300, help="consumer groups of the segment")
    cli.add_argument("--only", nargs="+", choices=COMMANDS, help="run these commands only")
    cli.add_argument("--check", action="store_true", help="compare the dump-log text first")
    args = parser.parse_args()
    if args.cli:
        cli_main(args)
        return
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
                f"parse only (reference loop) {parse_rate:>10,.0f} records/s"
            )


if __name__ == "__main__":
    main()
