"""How the views from columns scale: ``dump --compacted``, ``groups``, ``lag`` and
``downgrade-check`` on a 1 M-record and a 16 M-record ``__consumer_offsets`` dump, per record
and in peak memory (``transactions`` refuses a folder of ``__consumer_offsets`` alone).

Each dump is written as ``make demo`` writes its dump (``spark_udfs.synth``: classic and
consumer groups, transactional commits, tombstones), one partition per million records (a
broker rolls segments long before 16 M records, so no one file holds them all). Every command
runs whole, stdout to /dev/null, timed in CPU (user + system) with its peak resident memory;
the best of ``--repeat`` runs. The targets: the 16 M dump within 20 % of the 1 M figure per
record, and peak memory within 2x (``lag`` keeps every commit: its history is the answer).

    python bench/bench_views.py                     # 1 M and 16 M records
    python bench/bench_views.py --sizes 200000 800000 --repeat 1
    python bench/bench_views.py --startup --sizes 1000000   # and each command on 1,000 records
    python bench/bench_views.py --only lag --keep /tmp/views   # dumps written once, reused

``--startup`` also runs ``--help`` and every command on a 1,000-record dump: what a command costs
before it reads much (interpreter start-up and imports), next to its cost on the first size.

The ``floor`` row is what every view does before it computes anything: the command line's
start-up (``codegen.cli`` imported; pandas kept out, as a command keeps it out), every record
read by the engine's columnar loop and the offset commits decoded to columns
(:func:`codegen.dumps.views.commits.decode_commits`), nothing kept. ``of floor`` is each command's CPU over the floor's on the same dump.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_dumps import python_env

from spark_udfs.synth import write_consumer_offsets

COMMANDS = {
    "dump --compacted": ["dump", "--compacted", "-q"],
    "groups": ["groups", "--format", "jsonl"],
    "lag": ["lag", "--format", "jsonl"],
    "downgrade-check": ["downgrade-check", "--to", "3.9", "--format", "json"],
}


FLOOR = "floor"
_FLOOR_SCRIPT = """
import sys
from pathlib import Path
import codegen.cli
codegen.cli._native_library_settings()  # as a command starts, and without pandas as it runs
sys.meta_path.insert(0, codegen.cli.WithoutPandas())
from codegen.dumps.arrow import record_batches
from codegen.dumps.views.commits import decode_commits
for path in sorted(Path(sys.argv[1]).rglob("*.log")):
    for rb in record_batches(path, headers=False, batch_rows=32768):
        decode_commits(rb)
"""
"""The floor: start-up, every record read, the offset commits decoded (see the module doc)."""


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, int]:
    """(CPU seconds, peak RSS in MB) of one command."""
    with open(os.devnull, "wb") as null:
        proc = subprocess.Popen(cmd, stdout=null, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        err = proc.stderr.read() if proc.stderr else b""
    if os.waitstatus_to_exitcode(status) not in (0, 1, 3):  # 1: downgrade blocked
        sys.exit(f"{cmd[:5]}... failed: {err.decode()[-2000:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024


def _dump(where: Path, n: int, groups: int) -> tuple[Path, int]:
    """The ``n``-record dump under ``where`` (written unless a complete one is there) and its
    record count."""
    folder = where / f"dump-{n}-{groups}"
    done = where / f"dump-{n}-{groups}.records"
    if done.exists():
        records = int(done.read_text())
        print(f"{records:,} records in {folder} (kept)", flush=True)
        return folder, records
    shutil.rmtree(folder, ignore_errors=True)  # an unfinished one
    stats = write_consumer_offsets(
        folder, records=n, partitions=max(1, n // 1_000_000), groups=groups
    )
    done.write_text(str(stats.records))  # written last: the dump is complete
    print(f"{stats.records:,} records in {len(stats.files)} partition(s)", flush=True)
    return folder, stats.records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 16_000_000])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--startup", action="store_true", help="also time a 1,000-record dump")
    parser.add_argument(
        "--only", choices=sorted(COMMANDS), nargs="+", help="Only these commands (default: all)."
    )
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="Write the dumps into DIR and keep them; a dump already there (same size and "
        "groups) is reused.",
    )
    args = parser.parse_args()
    commands = {k: v for k, v in COMMANDS.items() if args.only is None or k in args.only}
    with tempfile.TemporaryDirectory() as tmp:
        env = python_env(Path(tmp) / "pycache")
        dumps = {}
        for n in args.sizes:
            dumps[n] = _dump(args.keep or Path(tmp), n, args.groups)
        results: dict[tuple[str, int], tuple[float, int]] = {}
        argvs = {FLOOR: ["-c", _FLOOR_SCRIPT]} | {
            name: ["-m", "codegen", argv[0], "{}", *argv[1:]] for name, argv in commands.items()
        }
        for name, argv in argvs.items():
            for n, (folder, _) in dumps.items():
                cmd = [sys.executable, *(a.replace("{}", str(folder)) for a in argv)]
                if name == FLOOR:
                    cmd.append(str(folder))
                runs = [measure(cmd, env) for _ in range(args.repeat)]
                results[name, n] = (min(r[0] for r in runs), max(r[1] for r in runs))
        first = args.sizes[0]
        print(f"\n{'command':18} {'records':>12} {'cpu s':>8} {'records/s':>11} "
              f"{'per record':>11} {'peak MB':>8} {'memory':>7} {'of floor':>9}")  # fmt: skip
        for name in argvs:
            base_cpu, base_mem = results[name, first]
            base_rate = dumps[first][1] / base_cpu
            for n, (_, records) in dumps.items():
                cpu, mem = results[name, n]
                rate = records / cpu
                print(
                    f"{name:18} {records:>12,} {cpu:8.2f} {rate:>11,.0f} "
                    f"{base_rate / rate:10.2f}x {mem:8} {mem / base_mem:6.2f}x "
                    f"{cpu / results[FLOOR, n][0]:8.2f}x"
                )
        if args.startup:
            startup(Path(tmp), env, args.repeat, {n: results[n, first][0] for n in commands})


def startup(tmp: Path, env: dict[str, str], repeat: int, big: dict[str, float]) -> None:
    """CPU seconds of ``--help`` and of each command on 1,000 records, and their share of the
    command's CPU on the first size."""
    folder = tmp / "dump-startup"
    write_consumer_offsets(folder, records=1000, partitions=1, groups=10)
    codegen = [sys.executable, "-m", "codegen"]
    cpu = min(measure([*codegen, "--help"], env)[0] for _ in range(repeat))
    print(f"\n{'start-up':18} {'cpu s':>8} {'of big':>7}\n{'--help':18} {cpu:8.3f}")
    for name, argv in COMMANDS.items():
        if name not in big:
            continue
        cmd = [*codegen, argv[0], str(folder), *argv[1:]]
        cpu = min(measure(cmd, env)[0] for _ in range(repeat))
        print(f"{name:18} {cpu:8.3f} {cpu / big[name]:6.0%}")


if __name__ == "__main__":
    main()
