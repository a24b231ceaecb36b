"""Time of ``transactions`` against a plain read of the same segments, one core.

Synthesizes a broker log dir with a mixed data topic (plain batches, and transactional ones
that commit, abort, or stay open, one of them hanging: no coordinator record), its
``__transaction_state`` and ``.txnindex`` files, and times on the same files the plain read
(``SegmentReader.read_all``: every batch and record, what ``dump --topic plain`` decodes) and
the ``transactions`` answer (:func:`codegen.forensics.transactions.transaction_report`) with
the pure backend (the reference header pass) and the default one (the native header pass),
printing each one's wall and CPU time, their ratio to the plain read and the records per CPU
second (the CPU time is the steadier figure on a shared machine; the target is 2 M). Each
figure is the best of ``--repeat`` runs.

    python bench/bench_transactions.py               # 1,000,000 records
    python bench/bench_transactions.py -n 200000 --repeat 3
"""

from __future__ import annotations

import argparse
import random
import struct
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import best

from codegen.dumps import SegmentWriter
from codegen.dumps.model import ControlType
from codegen.dumps.segments import SegmentReader, segment_files
from codegen.forensics.transactions import transaction_report
from codegen.runtime import backends
from generated.transaction_log_key import TransactionLogKey
from generated.transaction_log_value import PartitionsSchema, TransactionLogValue

T0 = 1_700_000_000_000
RECORDS_PER_BATCH = 10
TARGET_PER_CPU_S = 2_000_000
"""The command line's speed target: records per CPU second on one core."""


def _state(
    tid: str, status: int, pid: int, at: int, topic: str, partition: int
) -> tuple[bytes, bytes]:
    key = struct.pack(">h", 0) + TransactionLogKey(transactional_id=tid).encode(0)
    value = TransactionLogValue(
        producer_id=pid,
        producer_epoch=0,
        transaction_timeout_ms=60_000,
        transaction_status=status,
        transaction_partitions=[PartitionsSchema(topic=topic, partition_ids=[partition])],
        transaction_last_update_timestamp_ms=at,
        transaction_start_timestamp_ms=at,
    )
    return key, struct.pack(">h", 1) + value.encode(1)


def write_mixed(root: Path, records: int, partitions: int, seed: int) -> int:
    """A log dir under ``root``: ``mixed-0..`` with ``records`` records in all, a third of the
    batches in transactions (1 in 5 aborted, the last of each partition left open), and the
    coordinator's records; returns the transactions written."""
    rng = random.Random(seed)
    coord_records: list[tuple[bytes, bytes]] = []
    per_partition = records // partitions
    txns = 0
    for p in range(partitions):
        folder = root / f"mixed-{p}"
        folder.mkdir()
        index: list[bytes] = []
        with SegmentWriter(folder / "00000000000000000000.log") as w:
            written, at = 0, T0
            pid = 1_000_000 * (p + 1)
            while written < per_partition:
                at += 10
                batch = [(None, b"value-%d" % written)] * RECORDS_PER_BATCH
                if rng.random() < 0.66:
                    w.write_batch(batch, timestamp=at)
                    written += RECORDS_PER_BATCH
                    continue
                pid += 1
                txns += 1
                tid = f"tx-{pid}"
                first = w.next_offset
                txn = {"producer_id": pid, "producer_epoch": 0, "transactional": True}
                coord_records.append(_state(tid, 1, pid, at, "mixed", p))
                for _ in range(2):
                    w.write_batch(batch, timestamp=at, **txn)  # type: ignore[arg-type]
                    written += RECORDS_PER_BATCH
                if written >= per_partition:
                    break  # left open: Ongoing in the coordinator
                aborted = rng.random() < 0.2
                marker = ControlType.ABORT if aborted else ControlType.COMMIT
                end = w.next_offset
                w.write_control(marker, timestamp=at + 5, producer_id=pid, producer_epoch=0)
                coord_records.append(_state(tid, 5 if aborted else 4, pid, at + 5, "mixed", p))
                if aborted:
                    index.append(struct.pack(">hqqqq", 0, pid, first, end, end + 1))
            # a hanging transaction: no coordinator record knows producer 9
            w.write_batch(
                [(None, b"hanging")],
                timestamp=at,
                producer_id=9,
                producer_epoch=0,
                transactional=True,
            )
        (folder / "00000000000000000000.txnindex").write_bytes(b"".join(index))
    coord = root / "__transaction_state-0"
    coord.mkdir()
    with SegmentWriter(coord / "00000000000000000000.log") as w:
        for i in range(0, len(coord_records), 100):
            w.write_batch(coord_records[i : i + 100], timestamp=T0)
    return txns


def plain_read(root: Path) -> None:
    for folder in sorted(root.iterdir()):
        for f in segment_files(folder):
            SegmentReader(f).read_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        txns = write_mixed(root, args.records, args.partitions, seed=7)
        report = transaction_report(root)
        print(
            f"{args.records:,} records, {args.partitions} partitions, {txns:,} transactions, "
            f"{len(report.hanging)} hanging; target {TARGET_PER_CPU_S / 1e6:.0f} M records per "
            "CPU second"
        )
        base, base_cpu = best(lambda: plain_read(root), args.repeat)
        print(f"{'':<26} {'wall s':>7} {'ratio':>6} {'cpu s':>7} {'ratio':>6} {'M rec/cpu s':>11}")

        def row(name: str, wall: float, cpu: float) -> None:
            rate = args.records / cpu / 1e6 if cpu else float("inf")
            print(
                f"{name:<26} {wall:7.2f} {wall / base:5.2f}x {cpu:7.2f} {cpu / base_cpu:5.2f}x "
                f"{rate:11.2f}"
            )

        row("plain segment read", base, base_cpu)
        backends.use_backend("pure")
        try:
            pure, pure_cpu = best(lambda: transaction_report(root), args.repeat)
        finally:
            backends.use_backend(None)
        row("transactions (pure)", pure, pure_cpu)
        took, cpu = best(lambda: transaction_report(root), args.repeat)
        row(f"transactions ({backends.backend()})", took, cpu)


if __name__ == "__main__":
    main()
