"""How the views from columns scale: ``dump --compacted``, ``groups``, ``lag``,
``downgrade-check`` and ``transactions`` on a 1 M-record and a 16 M-record
``__consumer_offsets`` dump, per record and in peak memory.

Each dump is written as ``make demo`` writes its dump (``spark_udfs.synth``: classic and
consumer groups, transactional commits, tombstones), one partition per million records (a
broker rolls segments long before 16 M records, so no one file holds them all).
``transactions`` reads the dump and, in a folder of its own, the ``__transaction_state`` its
transactional offset commits imply (:func:`write_transaction_state`: an id per producer, its
transactions committed or aborted as their markers say, some ids expired, a few still open).
``lag`` runs twice: on the dump alone (no log end is known: no lag, no status), and as ``lag
(data partitions)`` with, in a folder of its own, the data partitions its commits name
(:func:`write_data_partitions`: 96 partitions of one-record batches, their offsets growing
over the dump's time to twice the mean committed one), so the log ends are read from
their batch headers and every commit's lag and each partition's status are computed; its
records and its floor are the dump's. Every command runs whole, stdout to /dev/null, timed in CPU (user + system) with its peak
resident memory; the best of ``--repeat`` rounds, each round running every row. The targets:
each view within 1.5x its floor at 1 M and at 16 M records, and 2 M records per CPU second at
16 M; peak memory at 16 M within 2x of 1 M's (``lag`` keeps every commit: its history is the
answer).

    python bench/bench_views.py                     # 1 M and 16 M records
    python bench/bench_views.py --sizes 200000 800000 --repeat 1
    python bench/bench_views.py --startup --sizes 1000000   # and each command on 1,000 records
    python bench/bench_views.py --only lag --keep /tmp/views   # dumps written once, reused

``--startup`` also runs ``--help`` and every command on a 1,000-record dump: what a command costs
before it reads much (interpreter start-up and imports), next to its cost on the first size.

The ``floor`` row is what every view does before it computes anything: the command line's
start-up (``codegen.cli`` imported; pandas kept out, as a command keeps it out), every record
read by the engine's columnar loop (from each segment's map, as every command reads a local
segment) and the offset commits decoded to columns
(:func:`codegen.dumps.views.commits.decode_commits`), nothing kept. ``floor (commit flags)``
is the same with the commits only read and checked for what the engine's pass of ``groups``
and ``dump --compacted`` takes of them (:func:`~codegen.dumps.views.commits
.decode_commit_flags`: every commit checked, only its tombstone and newer-version flags
written); ``of flags`` is each view's CPU over it (not a floor's, nor ``transactions``'), the
stricter ratio for views that no longer decode every column of a commit (``lag`` decodes its
values' numbers too, so its floor lies between the two). The ``floor
(transactions)`` row is what ``transactions`` needs of its input: start-up, every record of the
dump and of its ``__transaction_state`` read, and the coordinator's records decoded to columns
(the offset commits are not: ``transactions`` reads the batch headers of ``__consumer_offsets``
and the commits of its open transactions only, so it may run under this floor). ``of floor``
is each command's CPU over its floor's on the same input.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_dumps import python_env

from codegen.dumps import ControlType, SegmentReader, SegmentWriter
from codegen.dumps.coordinator import CONSUMER_OFFSETS, TRANSACTION_STATE
from codegen.dumps.model import SegmentError
from generated.transaction_log_key import TransactionLogKey
from generated.transaction_log_value import PartitionsSchema, TransactionLogValue
from spark_udfs.synth import write_consumer_offsets

COMMANDS = {
    "dump --compacted": ["dump", "--compacted", "-q"],
    "groups": ["groups", "--format", "jsonl"],
    "lag": ["lag", "--format", "jsonl"],
    "downgrade-check": ["downgrade-check", "--to", "3.9", "--format", "json"],
    "transactions": ["transactions", "--format", "jsonl"],
}
TRANSACTIONS = "transactions"
TRANSACTIONS_FLOOR = "floor (transactions)"
LAG = "lag"
LAG_DATA = "lag (data partitions)"


FLOOR = "floor"
FLAGS_FLOOR = "floor (commit flags)"
_FLOOR_SCRIPT = """
import sys
from pathlib import Path
import codegen.cli
codegen.cli._native_library_settings("dump")  # as a command starts, and without pandas as it runs
sys.meta_path.insert(0, codegen.cli.WithoutPandas())
from codegen.columnar.topics import decode_topic_arrays
from codegen.dumps.arrow import record_batches
from codegen.dumps.views.commits import decode_commit_flags, decode_commits
decode = {"commits": decode_commits, "flags": decode_commit_flags}.get(sys.argv[1])
for folder in sys.argv[2:]:
    for path in sorted(Path(folder).rglob("*.log")):
        coordinator = path.parent.name.startswith("__transaction_state-")
        for rb in record_batches(path, headers=False, batch_rows=32768):
            if coordinator:
                decode_topic_arrays(
                    "transaction_state", rb["key"], rb["value"], rb["isControl"]
                )
            elif decode is not None:
                decode(rb)
"""
"""The floors: start-up, every record read, and the offset commits decoded (``commits``),
only checked for their flags (``flags``) or the records of a ``__transaction_state`` folder
(``transactions``); see the module doc."""


TRANSACTION_STATE_PARTITIONS = 4
"""``__transaction_state`` partitions the ``transactions`` dump adds (a broker has 50; these
hold every transactional id of the dump)."""
_STATUS = {"Empty": 0, "Ongoing": 1, "PrepareCommit": 2, "PrepareAbort": 3,
           "CompleteCommit": 4, "CompleteAbort": 5}  # fmt: skip


def write_transaction_state(dump: Path, out: Path, seed: int = 7) -> int:
    """``__transaction_state`` (in ``out``) of the ``__consumer_offsets`` of ``dump``, as the coordinator
    writes it for the transactional offset commits there (``sendOffsetsToTransaction``): per
    producer a transactional id ``txn-<producer id>`` with its InitProducerId (Empty), the
    Ongoing record of AddOffsetsToTxn naming the commits' partition, then PrepareCommit and
    CompleteCommit (or PrepareAbort and CompleteAbort) as the partition's COMMIT or ABORT marker
    says; a tenth of the ids expired later (a tombstone), and ids still open at the end (an
    Ongoing transaction with nothing written yet, one waiting in PrepareCommit). Returns the
    records written."""
    rnd = random.Random(seed)
    started: dict[int, tuple[int, int, int]] = {}  # producer id -> (partition, first time, epoch)
    events: list[tuple[int, int, str, int, int]] = []  # (time, producer, state, partition, start)
    for folder in sorted(dump.glob(f"{CONSUMER_OFFSETS}-*")):
        partition = int(folder.name.rpartition("-")[2])
        for f in sorted(folder.glob("*.log")):
            for h in SegmentReader(f).batch_headers():
                if isinstance(h, SegmentError) or not h.is_transactional:
                    continue
                if not h.is_control:
                    started.setdefault(
                        h.producer_id, (partition, h.max_timestamp, h.producer_epoch)
                    )
                    continue
                _, first, _ = started.pop(h.producer_id)
                commit = any(t == ControlType.COMMIT for _, t in h.controls)
                events.append((first - 2, h.producer_id, "Empty", partition, -1))
                events.append((first - 1, h.producer_id, "Ongoing", partition, first - 1))
                ending = "Commit" if commit else "Abort"
                events.append((h.max_timestamp - 1, h.producer_id, f"Prepare{ending}", partition,
                               first - 1))  # fmt: skip
                events.append((h.max_timestamp, h.producer_id, f"Complete{ending}", partition,
                               first - 1))  # fmt: skip
                if rnd.random() < 0.1:  # expired (a short transactional.id.expiration.ms)
                    events.append((h.max_timestamp + rnd.randrange(60_000, 600_000),
                                   h.producer_id, "", partition, 0))  # fmt: skip
    last = max((e[0] for e in events if e[2].startswith("Complete")), default=1_700_000_000_000)
    events = [e for e in events if e[0] <= last]
    for i, (state, tail) in enumerate([("Ongoing", 60_000), ("PrepareCommit", 1_000)] * 4):
        pid = 10_000_000 + i
        events.append((last - tail - 1, pid, "Empty", i % 4, -1))
        events.append((last - tail, pid, state, i % 4, last - tail))
    events.sort()
    writers = [
        SegmentWriter(_mkdir(out / f"{TRANSACTION_STATE}-{p}") / "00000000000000000000.log")
        for p in range(TRANSACTION_STATE_PARTITIONS)
    ]
    written = 0
    for at, pid, state, partition, start in events:
        tid = f"txn-{pid}"
        p = zlib.crc32(tid.encode()) % len(writers)
        key = struct.pack(">h", 0) + TransactionLogKey(transactional_id=tid).encode(0)
        value = None
        if state:
            holds = state in ("Ongoing", "PrepareCommit", "PrepareAbort")
            value = struct.pack(">h", 1) + TransactionLogValue(
                producer_id=pid,
                producer_epoch=0,
                transaction_timeout_ms=60_000,
                transaction_status=_STATUS[state],
                transaction_partitions=[
                    PartitionsSchema(topic=CONSUMER_OFFSETS, partition_ids=[partition])
                ]
                if holds
                else [],
                transaction_last_update_timestamp_ms=at,
                transaction_start_timestamp_ms=start,
            ).encode(1)
        writers[p].write_batch([(key, value)], timestamp=at)
        written += 1
    for w in writers:
        w.close()
    return written


DATA_TOPICS = tuple(f"orders-{t}" for t in range(8))
DATA_PARTITIONS = 12
"""The data partitions ``spark_udfs.synth`` commits offsets of: topics ``orders-0..7``, 12
partitions each."""


def write_data_partitions(dump: Path, out: Path, records: int, groups: int) -> int:
    """The data partitions (in ``out``, one folder each) the offset commits of ``dump`` are
    taken against: per partition ``max(100, records // 2000)`` batches of one record, their
    timestamps spread evenly over the dump's time and their offsets growing evenly (with gaps,
    as a compacted topic's) to twice a key's mean committed offset at the end (each
    commit moves its key's offset 250 on average; a group commits 2 of the 8 topics on
    average, 12 partitions each), so each group's lag and status vary. Returns the batches
    written."""
    times: list[int] = []
    for f in sorted(dump.glob(f"{CONSUMER_OFFSETS}-*/*.log")):
        for h in SegmentReader(f).batch_headers():
            if not isinstance(h, SegmentError) and h.record_count:
                times.append(h.max_timestamp)
    first, last = min(times), max(times)
    batches = max(100, records // 2000)
    final = max(batches, int(2 * 250 * records / (groups * 2 * DATA_PARTITIONS)))
    written = 0
    for topic in DATA_TOPICS:
        for p in range(DATA_PARTITIONS):
            path = _mkdir(out / f"{topic}-{p}") / "00000000000000000000.log"
            with SegmentWriter(path) as w:
                for b in range(1, batches + 1):
                    at = first + (last - first) * b // batches
                    w.write_batch([(None, b"x")], base_offset=final * b // batches, timestamp=at)
                    written += 1
    return written


def _mkdir(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder


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


def _data_partitions(where: Path, dump: Path, n: int, groups: int) -> Path:
    """The data partitions of the ``n``-record dump (:func:`write_data_partitions`), in a
    folder of their own under ``where`` (the other views read the dump alone)."""
    folder = where / f"dump-{n}-{groups}-data"
    done = where / f"dump-{n}-{groups}-data.batches"
    if done.exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    batches = write_data_partitions(dump, folder, n, groups)
    done.write_text(str(batches))
    print(f"{batches:,} data partition batches beside it", flush=True)
    return folder


def _transaction_state(where: Path, dump: Path, n: int, groups: int) -> tuple[Path, int]:
    """The ``__transaction_state`` of the ``n``-record dump (:func:`write_transaction_state`),
    in a folder of its own under ``where`` (the other views read the dump alone)."""
    folder = where / f"dump-{n}-{groups}-transaction-state"
    done = where / f"dump-{n}-{groups}-transaction-state.records"
    if done.exists():
        return folder, int(done.read_text())
    shutil.rmtree(folder, ignore_errors=True)
    records = write_transaction_state(dump, folder)
    done.write_text(str(records))
    print(f"{records:,} __transaction_state records beside it", flush=True)
    return folder, records


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
        where = args.keep or Path(tmp)
        # per size: the folders each row reads and their records
        inputs: dict[tuple[str, int], tuple[list[Path], int]] = {}
        for n in args.sizes:
            folder, records = _dump(where, n, args.groups)
            for name in [FLOOR, FLAGS_FLOOR, *commands]:
                inputs[name, n] = ([folder], records)
            if TRANSACTIONS in commands:
                state, more = _transaction_state(where, folder, n, args.groups)
                for name in (TRANSACTIONS_FLOOR, TRANSACTIONS):
                    inputs[name, n] = ([folder, state], records + more)
            if LAG in commands:  # the records counted are the dump's, as the floor's
                data = _data_partitions(where, folder, n, args.groups)
                inputs[LAG_DATA, n] = ([folder, data], records)
        argvs = {
            FLOOR: ["-c", _FLOOR_SCRIPT, "commits"],
            FLAGS_FLOOR: ["-c", _FLOOR_SCRIPT, "flags"],
        }
        if TRANSACTIONS in commands:
            argvs[TRANSACTIONS_FLOOR] = ["-c", _FLOOR_SCRIPT, "transactions"]
        argvs |= {
            name: ["-m", "codegen", argv[0], "{}", *argv[1:]] for name, argv in commands.items()
        }
        if LAG in commands:
            argvs[LAG_DATA] = argvs[LAG]
        small = _small_dump(Path(tmp))
        for name, argv in argvs.items():  # once on 1,000 records: the module cache filled
            measure(_command(name, argv, small[name in (TRANSACTIONS_FLOOR, TRANSACTIONS)]), env)
        results: dict[tuple[str, int], tuple[float, int]] = {}
        # rounds of every row, so a change of the machine's load falls on all rows alike
        for _ in range(args.repeat):
            for name, argv in argvs.items():
                for n in args.sizes:
                    cmd = _command(name, argv, inputs[name, n][0])
                    cpu, mem = measure(cmd, env)
                    was = results.get((name, n), (cpu, mem))
                    results[name, n] = (min(cpu, was[0]), max(mem, was[1]))
        first = args.sizes[0]
        print(f"\n{'command':22} {'records':>12} {'cpu s':>8} {'records/s':>11} "
              f"{'per record':>11} {'peak MB':>8} {'memory':>7} {'of floor':>9} "
              f"{'of flags':>9}")  # fmt: skip
        for name in argvs:
            floor = TRANSACTIONS_FLOOR if name == TRANSACTIONS else FLOOR
            base_cpu, base_mem = results[name, first]
            base_rate = inputs[name, first][1] / base_cpu
            for n in args.sizes:
                records = inputs[name, n][1]
                cpu, mem = results[name, n]
                rate = records / cpu
                floor_row = name in (FLOOR, FLAGS_FLOOR, TRANSACTIONS_FLOOR)
                flags_ratio = (
                    ""
                    if floor != FLOOR or floor_row
                    else f" {cpu / results[FLAGS_FLOOR, n][0]:8.2f}x"
                )
                print(
                    f"{name:22} {records:>12,} {cpu:8.2f} {rate:>11,.0f} "
                    f"{base_rate / rate:10.2f}x {mem:8} {mem / base_mem:6.2f}x "
                    f"{cpu / results[floor, n][0]:8.2f}x{flags_ratio}"
                )
        if args.startup:
            big = {n: results[n, first][0] for n in commands}
            startup(small[True], env, args.repeat, big)


def _command(name: str, argv: list[str], folders: list[Path]) -> list[str]:
    """The command line of a row reading ``folders``."""
    cmd = [sys.executable]
    for a in argv:
        cmd.extend(map(str, folders) if a == "{}" else [a])
    if name in (FLOOR, FLAGS_FLOOR, TRANSACTIONS_FLOOR):
        cmd.extend(map(str, folders))
    return cmd


def _small_dump(tmp: Path) -> dict[bool, list[Path]]:
    """A 1,000-record dump: its folder, and with its ``__transaction_state`` (True)."""
    folder = tmp / "dump-startup"
    write_consumer_offsets(folder, records=1000, partitions=1, groups=10)
    state = tmp / "dump-startup-transaction-state"
    write_transaction_state(folder, state)
    return {False: [folder], True: [folder, state]}


def startup(small: list[Path], env: dict[str, str], repeat: int, big: dict[str, float]) -> None:
    """CPU seconds of ``--help`` and of each command on 1,000 records, and their share of the
    command's CPU on the first size."""
    folder, state = small
    codegen = [sys.executable, "-m", "codegen"]
    cpu = min(measure([*codegen, "--help"], env)[0] for _ in range(repeat))
    print(f"\n{'start-up':18} {'cpu s':>8} {'of big':>7}\n{'--help':18} {cpu:8.3f}")
    for name, argv in COMMANDS.items():
        if name not in big:
            continue
        read = [str(folder), str(state)] if name == TRANSACTIONS else [str(folder)]
        cmd = [*codegen, argv[0], *read, *argv[1:]]
        cpu = min(measure(cmd, env)[0] for _ in range(repeat))
        print(f"{name:18} {cpu:8.3f} {cpu / big[name]:6.0%}")


if __name__ == "__main__":
    main()
