"""``python -m codegen dump`` against Kafka's DumpLogSegments on the same segment: CPU time.

Writes one ``__consumer_offsets`` segment as ``make demo`` writes its dump
(``spark_udfs.synth.write_consumer_offsets``: classic and consumer groups, transactional
commits, tombstones, some lz4 batches), all in one partition, then runs, as whole commands in
alternating rounds, each writing to /dev/null:

- ``DumpLogSegments --files F --deep-iteration --print-data-log --offsets-decoder`` (the
  Kafka tool, from the class path in ``.cache/kafka-4.4.0/dumplog-jars``);
- ``python -m codegen dump F --format dump-log`` (the same text), ``--format jsonl``,
  ``--format table`` and ``--compacted``.

Each figure is the least CPU time (user + system, of the command and its children) of
``--repeat`` runs, printed with the records per second and the ratio to DumpLogSegments. With
``--check`` the dump-log text is first compared with the tool's byte for byte.

    python bench/bench_dump_cli.py                      # 1,000,000 records
    python bench/bench_dump_cli.py -n 200000 --repeat 3
    python bench/bench_dump_cli.py --only jsonl dump-log --check
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spark_udfs.synth import write_consumer_offsets  # noqa: E402

JARS = ROOT / ".cache" / "kafka-4.4.0" / "dumplog-jars"
TOOL = "org.apache.kafka.tools.DumpLogSegments"
COMMANDS = ("DumpLogSegments", "dump-log", "jsonl", "table", "compacted")


def command(name: str, segment: Path) -> list[str]:
    if name == "DumpLogSegments":
        java = os.environ.get("JAVA_HOME")
        exe = str(Path(java) / "bin" / "java") if java else "java"
        files = ["--files", str(segment), "--deep-iteration", "--print-data-log"]
        return [exe, "-cp", f"{JARS}/*", TOOL, *files, "--offsets-decoder"]
    dump = [sys.executable, "-m", "codegen", "dump", str(segment), "-q"]
    if name == "compacted":
        return [*dump, "--compacted"]
    return [*dump, "--format", name]


def python_env(pycache: Path) -> dict[str, str]:
    """The environment of the Python commands: compiled modules cached (in ``pycache``), as
    in an installed tool, so a run does not compile the project's modules first."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def run(cmd: list[str], out: int, env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one command with stdout to ``out``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, env=env, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--records", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3, help="least CPU time of this many runs")
    parser.add_argument("--only", nargs="+", choices=COMMANDS, help="run these commands only")
    parser.add_argument("--check", action="store_true", help="compare the dump-log text first")
    args = parser.parse_args()
    names = [n for n in COMMANDS if args.only is None or n in args.only or n == COMMANDS[0]]
    if not any(JARS.glob("kafka-tools-*.jar")):
        sys.exit(f"no DumpLogSegments jars in {JARS}: run make setup")
    with tempfile.TemporaryDirectory() as tmp:
        stats = write_consumer_offsets(
            Path(tmp), records=args.records, partitions=1, groups=args.groups
        )
        (segment,) = stats.files
        size = segment.stat().st_size
        print(f"{stats.records:,} records, {size / 1e6:.1f} MB, {segment.name}")
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
        best = dict.fromkeys(names, (float("inf"), float("inf")))
        with open(os.devnull, "wb") as null:
            for _ in range(args.repeat):
                for name in names:
                    cpu, wall = run(command(name, segment), null.fileno(), env)
                    best[name] = (min(best[name][0], cpu), min(best[name][1], wall))
        base = best["DumpLogSegments"][0]
        print(f"{'command':<16} {'cpu s':>7} {'wall s':>7} {'records/s (cpu)':>16} {'vs DLS':>7}")
        for name in names:
            cpu, wall = best[name]
            rate = stats.records / cpu
            print(f"{name:<16} {cpu:7.2f} {wall:7.2f} {rate:>16,.0f} {cpu / base:6.2f}x")


if __name__ == "__main__":
    main()
