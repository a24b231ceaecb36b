"""Time of ``groups``, ``lag`` and ``downgrade-check`` against ``dump --compacted``, one core.

Synthesizes an __consumer_offsets dump (``spark_udfs.synth``: classic and consumer groups,
transactional commits, tombstones) and times, on the same files, the compacted view
(``codegen.dumps.views``, what ``dump --compacted`` computes) and each forensics answer
(``codegen.forensics``), printing each one's wall and CPU time and their ratios to the
compacted view (the CPU time is the steadier figure on a shared machine). The target is at most
2x for ``groups`` and ``lag``. Each figure is the best of ``--repeat`` runs.

    python bench/bench_forensics.py               # 1,000,000 records
    python bench/bench_forensics.py -n 200000 --repeat 3
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import best

from codegen.dumps.batches import DEFAULT_MAX_BATCH_RECORDS
from codegen.dumps.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from codegen.dumps.coordinator import CONSUMER_OFFSETS, coordinator_decoder
from codegen.dumps.views.committed import CommittedOffsets
from codegen.dumps.views.compacted import CompactedView
from codegen.dumps.views.consumer_offsets import read_compacted
from codegen.forensics.coordinator_logs import dump_partitions
from codegen.forensics.downgrade import check_downgrade
from codegen.forensics.groups import group_reports
from codegen.forensics.lag import lag_reports
from spark_udfs.synth import write_consumer_offsets


def compacted(folder: Path) -> None:
    """What ``dump --compacted`` computes: the columnar committed offsets and the group view."""
    decoder = coordinator_decoder(CONSUMER_OFFSETS)
    for _, files in dump_partitions(folder):
        view, offsets = CompactedView(), CommittedOffsets()
        for f in files:
            for _ in read_compacted(
                f,
                view,
                offsets,
                decoder,
                max_batch_size=DEFAULT_MAX_DECOMPRESSED_SIZE,
                max_batch_records=DEFAULT_MAX_BATCH_RECORDS,
            ):
                pass
        view.group_rows(offsets.table().column("group").unique().to_pylist())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--records", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        stats = write_consumer_offsets(folder, records=args.records, groups=args.groups)
        print(f"{stats.records:,} records, {args.groups} groups")
        base, base_cpu = best(lambda: compacted(folder), args.repeat)
        print(f"{'':<18} {'wall s':>7} {'ratio':>6} {'cpu s':>7} {'ratio':>6}")
        print(f"{'dump --compacted':<18} {base:7.2f} {1:5.2f}x {base_cpu:7.2f} {1:5.2f}x")
        for name, fn in (
            ("groups", lambda: group_reports(folder)),
            ("lag", lambda: lag_reports(folder)),
            ("downgrade-check", lambda: check_downgrade(folder, "3.4")),
        ):
            took, cpu = best(fn, args.repeat)
            print(f"{name:<18} {took:7.2f} {took / base:5.2f}x {cpu:7.2f} {cpu / base_cpu:5.2f}x")


if __name__ == "__main__":
    main()
